/* The RAM chunk cache: see cache.h. */
#include "cache.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

enum slot_state { SLOT_FREE, SLOT_LOADING, SLOT_READY };

struct slot {
	uint64_t key;
	enum slot_state state;
	unsigned refs;
	unsigned referenced; /* CLOCK's second chance */
	unsigned prefetched; /* loaded ahead, not read yet */
	size_t len;
	uint8_t *buf;
};

struct dlfs_cache {
	pthread_mutex_t mu;
	pthread_cond_t loaded;
	size_t chunk_size;
	unsigned n_slots;
	struct slot *slots;
	/* Linear probing, slot index + 1, 0 = empty. */
	unsigned *table;
	unsigned table_mask;
	unsigned hand;
	dlfs_cache_load_fn load;
	void *arg;
	uint64_t hits, misses, bypass, ready;
	unsigned pf_limit, pf_pending, demand_loading;
	uint64_t pf_issued, pf_used, pf_wasted;
};

/*
 * A chunk buffer. Chunks of 2 MiB and more go in transparent huge pages:
 * an O_DIRECT read into 4 KiB pages is cut into 512 KiB requests (one bio
 * holds at most 256 pages, a request 128 segments), into huge pages into
 * requests as large as the device takes, and a PFS that counts requests
 * (IOPS) sees a third as many. @return 0 or -ENOMEM.
 */
static int chunk_alloc(size_t chunk_size, uint8_t **out)
{
	const size_t huge = (size_t)2 << 20;
	size_t align = chunk_size >= huge ? huge : 4096;
	size_t size = (chunk_size + align - 1) / align * align;
	void *b = NULL;
	if (posix_memalign(&b, align, size))
		return -ENOMEM;
	if (align == huge)
		madvise(b, size, MADV_HUGEPAGE); /* a hint: fine if refused */
	*out = b;
	return 0;
}

static uint64_t key_of(uint32_t c, uint64_t k)
{
	return ((uint64_t)c << 40) | k;
}

static unsigned hash(uint64_t key)
{
	key ^= key >> 33;
	key *= 0xff51afd7ed558ccdULL;
	key ^= key >> 33;
	return (unsigned)key;
}

int dlfs_cache_new(size_t chunk_size, uint64_t capacity,
		   dlfs_cache_load_fn load, void *arg, struct dlfs_cache **out,
		   struct dlfs_err *err)
{
	uint64_t n = capacity / chunk_size;
	if (n < 1)
		n = 1;
	if (n > (1u << 24))
		return dlfs_err_set(err, -EINVAL,
				    "ram cache of %llu chunks is too many",
				    (unsigned long long)n);
	struct dlfs_cache *c = calloc(1, sizeof(*c));
	unsigned tsize = 4;
	while (tsize < 2 * n)
		tsize *= 2;
	if (c) {
		c->slots = calloc(n, sizeof(*c->slots));
		c->table = calloc(tsize, sizeof(*c->table));
	}
	if (!c || !c->slots || !c->table) {
		if (c) {
			free(c->slots);
			free(c->table);
		}
		free(c);
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	}
	pthread_mutex_init(&c->mu, NULL);
	pthread_cond_init(&c->loaded, NULL);
	c->chunk_size = chunk_size;
	c->n_slots = (unsigned)n;
	c->table_mask = tsize - 1;
	c->load = load;
	c->arg = arg;
	*out = c;
	return 0;
}

void dlfs_cache_free(struct dlfs_cache *c)
{
	if (!c)
		return;
	for (unsigned i = 0; i < c->n_slots; i++)
		free(c->slots[i].buf);
	free(c->slots);
	free(c->table);
	pthread_mutex_destroy(&c->mu);
	pthread_cond_destroy(&c->loaded);
	free(c);
}

/* @return the table position holding key, or the empty one ending it. */
static unsigned probe(const struct dlfs_cache *c, uint64_t key, int *found)
{
	unsigned i = hash(key) & c->table_mask;
	for (;; i = (i + 1) & c->table_mask) {
		unsigned v = c->table[i];
		if (!v) {
			*found = 0;
			return i;
		}
		if (c->slots[v - 1].key == key) {
			*found = 1;
			return i;
		}
	}
}

/* Backward-shift deletion keeps probe chains intact without tombstones. */
static void table_remove(struct dlfs_cache *c, uint64_t key)
{
	int found;
	unsigned i = probe(c, key, &found);
	if (!found)
		return;
	unsigned j = i;
	for (;;) {
		c->table[i] = 0;
		for (;;) {
			j = (j + 1) & c->table_mask;
			unsigned v = c->table[j];
			if (!v)
				return;
			unsigned home = hash(c->slots[v - 1].key) & c->table_mask;
			/* Can the entry at j move back to i? */
			if (i <= j ? (home <= i || home > j)
				   : (home <= i && home > j))
				break;
		}
		c->table[i] = c->table[j];
		i = j;
	}
}

/* Find an unpinned slot to reuse, CLOCK order. @return index or -1. */
static int evict(struct dlfs_cache *c)
{
	for (unsigned n = 0; n < 2 * c->n_slots; n++) {
		unsigned i = c->hand;
		c->hand = (c->hand + 1) % c->n_slots;
		struct slot *s = &c->slots[i];
		if (s->state == SLOT_FREE)
			return (int)i;
		if (s->state != SLOT_READY || s->refs)
			continue;
		if (s->referenced) {
			s->referenced = 0;
			continue;
		}
		table_remove(c, s->key);
		s->state = SLOT_FREE;
		c->ready--;
		if (s->prefetched) {
			s->prefetched = 0;
			c->pf_pending--;
			c->pf_wasted++;
		}
		return (int)i;
	}
	return -1;
}

/* Make free slot s the loading slot of key, pinned by its loader (caller
 * holds mu). @return 0 or -ENOMEM (the slot stays free). */
static int claim(struct dlfs_cache *c, struct slot *s, uint64_t key,
		 int prefetched)
{
	int found;
	if (!s->buf && chunk_alloc(c->chunk_size, &s->buf)) {
		s->buf = NULL;
		return -ENOMEM;
	}
	s->key = key;
	s->state = SLOT_LOADING;
	s->refs = 1;
	s->referenced = 1;
	s->prefetched = (unsigned)prefetched;
	unsigned pos = probe(c, key, &found);
	c->table[pos] = (unsigned)(s - c->slots) + 1;
	return 0;
}

/* The load of claimed slot s ended with ret (caller holds mu): ready, or
 * free again. pinned: the loader keeps its pin (a demand reader). */
static void loaded(struct dlfs_cache *c, struct slot *s, int ret, size_t len,
		   int pinned)
{
	if (!pinned)
		s->refs = 0;
	if (ret) {
		table_remove(c, s->key);
		s->state = SLOT_FREE;
		s->refs = 0;
		if (s->prefetched) { /* nobody took it */
			s->prefetched = 0;
			c->pf_pending--;
		}
	} else {
		s->state = SLOT_READY;
		s->len = len;
		c->ready++;
	}
	pthread_cond_broadcast(&c->loaded);
}

/* A demand reader found slot s: the first one uses its prefetch. */
static int take_prefetch(struct dlfs_cache *c, struct slot *s)
{
	if (!s->prefetched)
		return 0;
	s->prefetched = 0;
	c->pf_pending--;
	c->pf_used++;
	return 1;
}

int dlfs_cache_get(struct dlfs_cache *c, uint32_t cont, uint64_t k,
		   void *ctx, struct dlfs_chunk_ref *ref, struct dlfs_err *err)
{
	uint64_t key = key_of(cont, k);
	int found, ret;
	memset(ref, 0, sizeof(*ref));
	pthread_mutex_lock(&c->mu);
	for (;;) {
		unsigned pos = probe(c, key, &found);
		if (!found)
			break;
		struct slot *s = &c->slots[c->table[pos] - 1];
		if (s->state == SLOT_READY) {
			s->refs++;
			s->referenced = 1;
			c->hits++;
			ref->prefetched = take_prefetch(c, s);
			pthread_mutex_unlock(&c->mu);
			ref->data = s->buf;
			ref->len = s->len;
			ref->slot = (int)(s - c->slots);
			return 0;
		}
		/* Someone is loading it: wait, then look again. */
		pthread_cond_wait(&c->loaded, &c->mu);
	}
	c->misses++;
	int i = evict(c);
	if (i < 0) {
		/* Everything is pinned: serve from a private buffer. */
		c->bypass++;
		pthread_mutex_unlock(&c->mu);
		uint8_t *b = NULL;
		if (chunk_alloc(c->chunk_size, &b))
			return dlfs_err_set(err, -ENOMEM, "out of memory");
		ret = c->load(c->arg, ctx, cont, k, b, c->chunk_size,
			      &ref->len, err);
		if (ret) {
			free(b);
			return ret;
		}
		ref->data = b;
		ref->own = b;
		ref->slot = -1;
		return 0;
	}
	struct slot *s = &c->slots[i];
	if (claim(c, s, key, 0)) {
		pthread_mutex_unlock(&c->mu);
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	}
	c->demand_loading++;
	pthread_mutex_unlock(&c->mu);

	size_t len = 0;
	ret = c->load(c->arg, ctx, cont, k, s->buf, c->chunk_size, &len, err);

	pthread_mutex_lock(&c->mu);
	c->demand_loading--;
	loaded(c, s, ret, len, 1);
	pthread_mutex_unlock(&c->mu);
	if (ret)
		return ret;
	ref->data = s->buf;
	ref->len = len;
	ref->slot = i;
	return 0;
}

void dlfs_cache_put(struct dlfs_cache *c, struct dlfs_chunk_ref *ref)
{
	if (ref->own) {
		free(ref->own);
	} else if (ref->slot >= 0 && ref->data) {
		pthread_mutex_lock(&c->mu);
		c->slots[ref->slot].refs--;
		pthread_mutex_unlock(&c->mu);
	}
	memset(ref, 0, sizeof(*ref));
}

void dlfs_cache_set_prefetch_limit(struct dlfs_cache *c, unsigned slots)
{
	pthread_mutex_lock(&c->mu);
	/* Leave at least half the slots to demand reads. */
	c->pf_limit = slots < c->n_slots / 2 ? slots : c->n_slots / 2;
	pthread_mutex_unlock(&c->mu);
}

int dlfs_cache_prefetch(struct dlfs_cache *c, uint32_t cont, uint64_t k,
			void *ctx, struct dlfs_err *err)
{
	uint64_t key = key_of(cont, k);
	int found;
	pthread_mutex_lock(&c->mu);
	probe(c, key, &found);
	if (found) {
		pthread_mutex_unlock(&c->mu);
		return 0;
	}
	int i = c->pf_pending < c->pf_limit ? evict(c) : -1;
	if (i < 0) {
		pthread_mutex_unlock(&c->mu);
		return -EAGAIN;
	}
	struct slot *s = &c->slots[i];
	if (claim(c, s, key, 1)) {
		pthread_mutex_unlock(&c->mu);
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	}
	c->pf_pending++;
	c->pf_issued++;
	pthread_mutex_unlock(&c->mu);

	size_t len = 0;
	int ret = c->load(c->arg, ctx, cont, k, s->buf, c->chunk_size, &len,
			  err);

	pthread_mutex_lock(&c->mu);
	loaded(c, s, ret, len, 0);
	pthread_mutex_unlock(&c->mu);
	return ret;
}

unsigned dlfs_cache_demand_loading(struct dlfs_cache *c)
{
	pthread_mutex_lock(&c->mu);
	unsigned n = c->demand_loading;
	pthread_mutex_unlock(&c->mu);
	return n;
}

int dlfs_cache_contains(struct dlfs_cache *c, uint32_t cont, uint64_t k)
{
	int found;
	pthread_mutex_lock(&c->mu);
	unsigned pos = probe(c, key_of(cont, k), &found);
	int yes = found && c->slots[c->table[pos] - 1].state == SLOT_READY;
	pthread_mutex_unlock(&c->mu);
	return yes;
}

void dlfs_cache_get_stats(struct dlfs_cache *c, struct dlfs_cache_stats *s)
{
	pthread_mutex_lock(&c->mu);
	s->hits = c->hits;
	s->misses = c->misses;
	s->bypass = c->bypass;
	s->chunks = c->ready;
	s->capacity_bytes = (uint64_t)c->n_slots * c->chunk_size;
	s->used_bytes = c->ready * c->chunk_size;
	s->pf_issued = c->pf_issued;
	s->pf_used = c->pf_used;
	s->pf_wasted = c->pf_wasted;
	s->pf_pending = c->pf_pending;
	pthread_mutex_unlock(&c->mu);
}
