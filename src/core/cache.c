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
	unsigned holds;      /* of refs, those held by prefetch holds */
	unsigned referenced; /* CLOCK's second chance */
	unsigned prefetched; /* loaded ahead, not read yet */
	unsigned quiet;      /* ... by a fill: not counted as read-ahead */
	unsigned kept;       /* its loader stored it elsewhere too */
	size_t off, len;     /* the entry is buf[off, off + len) */
	uint64_t served;     /* bytes served from it */
	uint64_t load;       /* which load claimed it last */
	int fail;            /* free after that load failed: its error */
	char *fail_msg;      /* and its message (NULL: none) */
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
	uint64_t loads; /* loads claimed so far: names each one */
	dlfs_cache_load_fn load;
	void *arg;
	uint64_t hits, misses, bypass, ready;
	unsigned pf_limit, pf_pending, demand_loading, held;
	uint64_t pf_issued, pf_used, pf_wasted;
	uint64_t evicted_bytes, evicted_unused;
	/* Placed (dlfs_cache_new_placed): the table, the buffers and the
	 * slots' published records are others' memory; NULL pub: not. */
	int placed;
	struct dlfs_shm_slot *pub;
	struct dlfs_shm_use *use;
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

static unsigned hash(uint64_t key)
{
	return dlfs_shm_hash(key);
}

uint64_t dlfs_cache_n_slots(size_t chunk_size, uint64_t capacity)
{
	uint64_t n = capacity / chunk_size;
	return n < 1 ? 1 : n;
}

uint32_t dlfs_cache_table_size(uint64_t n_slots)
{
	uint32_t tsize = 4;
	while (tsize < 2 * n_slots && tsize < (1u << 30))
		tsize *= 2;
	return tsize;
}

uint64_t dlfs_cache_slot_bytes(size_t chunk_size)
{
	const size_t huge = (size_t)2 << 20;
	size_t align = chunk_size >= huge ? huge : 4096;
	return (chunk_size + align - 1) / align * align;
}

/* Table entry i is v: readers in other processes may be probing. */
static void tset(struct dlfs_cache *c, unsigned i, unsigned v)
{
	__atomic_store_n(&c->table[i], v, __ATOMIC_RELEASE);
}

int dlfs_cache_new(size_t chunk_size, uint64_t capacity,
		   dlfs_cache_load_fn load, void *arg, struct dlfs_cache **out,
		   struct dlfs_err *err)
{
	return dlfs_cache_new_placed(chunk_size, capacity, load, arg, NULL,
				     out, err);
}

int dlfs_cache_new_placed(size_t chunk_size, uint64_t capacity,
			  dlfs_cache_load_fn load, void *arg,
			  const struct dlfs_cache_place *place,
			  struct dlfs_cache **out, struct dlfs_err *err)
{
	uint64_t n = dlfs_cache_n_slots(chunk_size, capacity);
	if (n > (1u << 24))
		return dlfs_err_set(err, -EINVAL,
				    "ram cache of %llu chunks is too many",
				    (unsigned long long)n);
	struct dlfs_cache *c = calloc(1, sizeof(*c));
	unsigned tsize = dlfs_cache_table_size(n);
	if (c) {
		c->slots = calloc(n, sizeof(*c->slots));
		c->table = place ? place->table
				 : calloc(tsize, sizeof(*c->table));
	}
	if (!c || !c->slots || !c->table) {
		if (c) {
			free(c->slots);
			if (!place)
				free(c->table);
		}
		free(c);
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	}
	if (place) {
		uint64_t stride = dlfs_cache_slot_bytes(chunk_size);
		c->placed = 1;
		c->pub = place->pub;
		c->use = place->use;
		for (uint64_t i = 0; i < n; i++) {
			c->slots[i].buf = place->bufs + i * stride;
			/* Odd: nothing to read yet. */
			dlfs_shm_slot_begin(&c->pub[i]);
		}
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

unsigned dlfs_cache_slots(const struct dlfs_cache *c)
{
	return c->n_slots;
}

void dlfs_cache_free(struct dlfs_cache *c)
{
	if (!c)
		return;
	for (unsigned i = 0; i < c->n_slots; i++) {
		if (!c->placed)
			free(c->slots[i].buf);
		free(c->slots[i].fail_msg);
	}
	free(c->slots);
	if (!c->placed)
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
		tset(c, i, 0);
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
		tset(c, i, c->table[j]);
		i = j;
	}
}

/* Did readers in other processes use slot i since the hand passed?
 * (Clears their mark.) */
static unsigned outside_ref(struct dlfs_cache *c, unsigned i)
{
	if (!c->use || !__atomic_load_n(&c->use[i].ref, __ATOMIC_RELAXED))
		return 0;
	__atomic_store_n(&c->use[i].ref, 0, __ATOMIC_RELAXED);
	return 1;
}

/* Bytes readers in other processes served from slot i (and zero it). */
static uint64_t outside_served(struct dlfs_cache *c, unsigned i)
{
	return c->use ? __atomic_exchange_n(&c->use[i].served, 0,
					    __ATOMIC_RELAXED)
		      : 0;
}

/* Slot s changes hands: readers in other processes stop trusting it
 * before its buffer is written (seq odd). */
static void unpublish(struct dlfs_cache *c, struct slot *s)
{
	if (!c->pub)
		return;
	dlfs_shm_slot_begin(&c->pub[s - c->slots]);
}

/* Slot s holds its key's bytes now (seq even). */
static void publish(struct dlfs_cache *c, struct slot *s)
{
	if (!c->pub)
		return;
	dlfs_shm_slot_end(&c->pub[s - c->slots], s->key, (uint64_t)s->off,
			  (uint64_t)s->len);
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
		if (s->referenced | outside_ref(c, i)) {
			s->referenced = 0;
			continue;
		}
		table_remove(c, s->key);
		s->state = SLOT_FREE;
		c->ready--;
		s->served += outside_served(c, i);
		if (!dlfs_cache_key_is_file(s->key) &&
		    !dlfs_cache_key_is_bag(s->key)) {
			c->evicted_bytes += s->len;
			if (!s->kept && s->served < s->len)
				c->evicted_unused += s->len - s->served;
		}
		if (s->prefetched) {
			s->prefetched = 0;
			c->pf_pending--;
			if (!s->kept && !s->quiet)
				c->pf_wasted++;
		}
		return (int)i;
	}
	return -1;
}

/* Make free slot s the loading slot of key, pinned by its loader (caller
 * holds mu). @return 0 or -ENOMEM (the slot stays free). */
static int claim(struct dlfs_cache *c, struct slot *s, uint64_t key,
		 int prefetched, int quiet)
{
	int found;
	if (!s->buf && chunk_alloc(c->chunk_size, &s->buf)) {
		s->buf = NULL;
		return -ENOMEM;
	}
	unpublish(c, s);
	if (c->use) {
		outside_served(c, (unsigned)(s - c->slots));
		outside_ref(c, (unsigned)(s - c->slots));
	}
	s->key = key;
	s->state = SLOT_LOADING;
	s->refs = 1;
	s->holds = 0;
	s->referenced = 1;
	s->prefetched = (unsigned)prefetched;
	s->quiet = (unsigned)quiet;
	s->kept = 0;
	s->served = 0;
	s->load = ++c->loads;
	s->fail = 0;
	free(s->fail_msg);
	s->fail_msg = NULL;
	unsigned pos = probe(c, key, &found);
	tset(c, pos, (unsigned)(s - c->slots) + 1);
	return 0;
}

/* Unread prefetch s is kept by the tier below (caller holds mu): nothing
 * is lost when it goes, so it goes first and does not count against the
 * prefetch bound. */
static void kept_goes_first(struct dlfs_cache *c, struct slot *s)
{
	s->prefetched = 0;
	s->referenced = 0;
	c->pf_pending--;
}

/* The load of claimed slot s ended with ret (caller holds mu): ready, or
 * free again. pinned: the loader keeps its pin (a demand reader). */
static void loaded(struct dlfs_cache *c, struct slot *s, int ret,
		   const struct dlfs_load *l, int pinned)
{
	if (!pinned)
		s->refs = 0;
	if (ret) {
		table_remove(c, s->key);
		s->state = SLOT_FREE;
		s->refs = 0;
		/* For the readers waiting on this load (a failure is rare:
		 * the copy is cheap then, and none is fine). */
		s->fail = ret;
		s->fail_msg = l->err && l->err->code ? strdup(l->err->msg)
						     : NULL;
		if (s->prefetched) { /* nobody took it */
			s->prefetched = 0;
			c->pf_pending--;
		}
	} else {
		s->state = SLOT_READY;
		s->off = l->off;
		s->len = l->len;
		s->kept = (unsigned)l->kept;
		c->ready++;
		publish(c, s);
		if (s->kept && s->prefetched && !pinned)
			kept_goes_first(c, s);
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
	if (s->quiet)
		return 0;
	c->pf_used++;
	return 1;
}

/* Pin ready slot s (caller holds mu). use: for a reader, which counts a
 * hit, takes its prefetch and marks it referenced; else a quiet pin that
 * changes nothing else. */
static void pin(struct dlfs_cache *c, struct slot *s,
		struct dlfs_chunk_ref *ref, int use)
{
	s->refs++;
	ref->data = s->buf + s->off;
	ref->len = s->len;
	ref->slot = (int)(s - c->slots);
	if (!use)
		return;
	s->referenced = 1;
	c->hits++;
	ref->prefetched = take_prefetch(c, s);
}

/* Find key, waiting out a load in progress (caller holds mu).
 * @return its ready slot, or NULL when absent; then *failed is the error
 * of the load it waited for, or 0 (none, or it was evicted since). */
static struct slot *find_ready(struct dlfs_cache *c, uint64_t key,
			       int *failed, struct dlfs_err *err)
{
	int found;
	*failed = 0;
	for (;;) {
		unsigned pos = probe(c, key, &found);
		if (!found)
			return NULL;
		struct slot *s = &c->slots[c->table[pos] - 1];
		if (s->state == SLOT_READY)
			return s;
		/* Someone is loading it: wait, then look again. */
		uint64_t load = s->load;
		while (s->state == SLOT_LOADING && s->load == load)
			pthread_cond_wait(&c->loaded, &c->mu);
		if (s->load == load && s->state == SLOT_FREE && s->fail) {
			/* Failed: not cached, and not loaded again by each
			 * waiter; they all get its error. */
			*failed = s->fail;
			dlfs_err_set(err, s->fail, "%s",
				     s->fail_msg ? s->fail_msg
						 : "loading it failed");
			return NULL;
		}
	}
}

int dlfs_cache_get(struct dlfs_cache *c, uint64_t key, const void *what,
		   void *ctx, struct dlfs_chunk_ref *ref, struct dlfs_err *err)
{
	struct dlfs_load l = {.cap = c->chunk_size, .err = err};
	int ret;
	memset(ref, 0, sizeof(*ref));
	pthread_mutex_lock(&c->mu);
	struct slot *s = find_ready(c, key, &ret, err);
	if (s) {
		pin(c, s, ref, 1);
		pthread_mutex_unlock(&c->mu);
		return 0;
	}
	if (ret) {
		pthread_mutex_unlock(&c->mu);
		return ret;
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
		l.buf = b;
		ret = c->load(c->arg, ctx, key, what, &l);
		if (ret) {
			free(b);
			return ret;
		}
		ref->data = b + l.off;
		ref->len = l.len;
		ref->own = b;
		ref->slot = -1;
		return 0;
	}
	s = &c->slots[i];
	if (claim(c, s, key, 0, 0)) {
		pthread_mutex_unlock(&c->mu);
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	}
	c->demand_loading++;
	pthread_mutex_unlock(&c->mu);

	l.buf = s->buf;
	ret = c->load(c->arg, ctx, key, what, &l);

	pthread_mutex_lock(&c->mu);
	c->demand_loading--;
	loaded(c, s, ret, &l, 1);
	pthread_mutex_unlock(&c->mu);
	if (ret)
		return ret;
	ref->data = s->buf + l.off;
	ref->len = l.len;
	ref->slot = i;
	return 0;
}

/* Pin the entry of key if it is there, waiting out its load. */
static int pin_cached(struct dlfs_cache *c, uint64_t key,
		      struct dlfs_chunk_ref *ref, int use)
{
	int failed;
	memset(ref, 0, sizeof(*ref));
	pthread_mutex_lock(&c->mu);
	struct slot *s = find_ready(c, key, &failed, NULL);
	if (s)
		pin(c, s, ref, use);
	pthread_mutex_unlock(&c->mu);
	return s ? 0 : -ENOENT;
}

int dlfs_cache_get_cached(struct dlfs_cache *c, uint64_t key,
			  struct dlfs_chunk_ref *ref)
{
	return pin_cached(c, key, ref, 1);
}

int dlfs_cache_peek(struct dlfs_cache *c, uint64_t key,
		    struct dlfs_chunk_ref *ref)
{
	return pin_cached(c, key, ref, 0);
}

void dlfs_cache_set_kept(struct dlfs_cache *c, const struct dlfs_chunk_ref *ref)
{
	if (ref->own || ref->slot < 0 || !ref->data)
		return;
	pthread_mutex_lock(&c->mu);
	struct slot *s = &c->slots[ref->slot];
	s->kept = 1;
	if (s->prefetched)
		kept_goes_first(c, s);
	pthread_mutex_unlock(&c->mu);
}

void dlfs_cache_put(struct dlfs_cache *c, struct dlfs_chunk_ref *ref,
		    size_t served)
{
	if (ref->own) {
		free(ref->own);
	} else if (ref->slot >= 0 && ref->data) {
		struct slot *s = &c->slots[ref->slot];
		pthread_mutex_lock(&c->mu);
		s->refs--;
		s->served += served;
		if (ref->hold) {
			s->holds--;
			c->held--;
		}
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

/* Make ref a hold on slot s (caller holds mu and has pinned it). */
static void make_hold(struct dlfs_cache *c, struct slot *s,
		      struct dlfs_chunk_ref *ref)
{
	s->holds++;
	c->held++;
	ref->data = s->buf + s->off;
	ref->len = s->len;
	ref->slot = (int)(s - c->slots);
	ref->hold = 1;
}

int dlfs_cache_prefetch(struct dlfs_cache *c, uint64_t key, const void *what,
			void *ctx, unsigned flags, struct dlfs_chunk_ref *hold,
			struct dlfs_err *err)
{
	struct dlfs_load l = {.cap = c->chunk_size, .err = err};
	int found;
	if (hold)
		memset(hold, 0, sizeof(*hold));
	pthread_mutex_lock(&c->mu);
	unsigned pos = probe(c, key, &found);
	if (found) {
		struct slot *s = &c->slots[c->table[pos] - 1];
		int ret = 0;
		if (hold) {
			/* Hold what is there (once its load ends). */
			s = find_ready(c, key, &ret, err);
			if (s) {
				s->refs++;
				make_hold(c, s, hold);
			} else if (!ret) {
				/* Evicted while this waited for its load (or
				 * its failed slot was reused): nothing to
				 * hold, so not done. The caller tries again. */
				ret = -EAGAIN;
			}
		}
		pthread_mutex_unlock(&c->mu);
		return ret;
	}
	int i = c->pf_pending < c->pf_limit ? evict(c) : -1;
	if (i < 0) {
		pthread_mutex_unlock(&c->mu);
		return -EAGAIN;
	}
	struct slot *s = &c->slots[i];
	if (claim(c, s, key, 1, (flags & DLFS_CACHE_PF_QUIET) != 0)) {
		pthread_mutex_unlock(&c->mu);
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	}
	c->pf_pending++;
	if (!(flags & DLFS_CACHE_PF_QUIET))
		c->pf_issued++;
	pthread_mutex_unlock(&c->mu);

	l.buf = s->buf;
	int ret = c->load(c->arg, ctx, key, what, &l);

	pthread_mutex_lock(&c->mu);
	loaded(c, s, ret, &l, hold != NULL);
	if (!ret && hold)
		make_hold(c, s, hold);
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

/* The loaded slot of key, or NULL (caller holds mu). */
static const struct slot *ready_slot(struct dlfs_cache *c, uint64_t key)
{
	int found;
	unsigned pos = probe(c, key, &found);
	const struct slot *sl = found ? &c->slots[c->table[pos] - 1] : NULL;
	return sl && sl->state == SLOT_READY ? sl : NULL;
}

int dlfs_cache_contains(struct dlfs_cache *c, uint64_t key)
{
	pthread_mutex_lock(&c->mu);
	int yes = ready_slot(c, key) != NULL;
	pthread_mutex_unlock(&c->mu);
	return yes;
}

int dlfs_cache_held(struct dlfs_cache *c, uint64_t key)
{
	pthread_mutex_lock(&c->mu);
	const struct slot *sl = ready_slot(c, key);
	int yes = sl && sl->holds;
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
	s->evicted_bytes = c->evicted_bytes;
	s->evicted_unused_bytes = c->evicted_unused;
	s->held = c->held;
	pthread_mutex_unlock(&c->mu);
}
