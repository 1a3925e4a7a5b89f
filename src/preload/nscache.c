/*
 * nscache: the LOOKUP cache (see nscache.h).
 *
 * Each shard is an open-addressed table of pointers to entries (load at
 * most 1/2), behind its own mutex. An entry is one malloc: the fixed part,
 * the name, then, only when the attributes are not the usual ones, a
 * struct extra with the rest of them.
 */
#include "nscache.h"

#include "shm.h"

#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* What struct stat has beyond an entry's fields: kept only when it is
 * not what the template and the entry's fields give. */
struct extra {
	dev_t dev, rdev;
	blksize_t blksize;
	blkcnt_t blocks;
	nlink_t nlink;
	struct timespec atim, ctim;
};

struct entry {
	uint64_t parent, ino;
	uint64_t hash;
	struct dlfs_shm_attr a; /* the rest: the usual ones (shm.h) */
	uint8_t neg;   /* no such name */
	uint8_t extra; /* a struct extra follows the name */
	uint8_t len;
	char name[];
};

struct shard {
	pthread_mutex_t lock;
	struct entry **slots;
	size_t cap, used; /* cap a power of two, or 0 */
	size_t bytes;     /* the entries' sizes and the table's */
};

static struct shard shards[NSCACHE_SHARDS];
static size_t budget; /* bytes per shard */

void dlfs_nscache_init(size_t max_bytes)
{
	budget = max_bytes / NSCACHE_SHARDS;
	for (int i = 0; i < NSCACHE_SHARDS; i++)
		pthread_mutex_init(&shards[i].lock, NULL);
}

void dlfs_nscache_fork_prepare(void)
{
	for (int i = 0; i < NSCACHE_SHARDS; i++)
		pthread_mutex_lock(&shards[i].lock);
}

void dlfs_nscache_fork_parent(void)
{
	for (int i = NSCACHE_SHARDS - 1; i >= 0; i--)
		pthread_mutex_unlock(&shards[i].lock);
}

static uint64_t hash_of(uint64_t parent, const char *name, size_t len)
{
	uint64_t h = 1469598103934665603ull ^ parent;
	h *= 1099511628211ull;
	for (size_t i = 0; i < len; i++) {
		h ^= (unsigned char)name[i];
		h *= 1099511628211ull;
	}
	return h ^ (h >> 29);
}

static size_t extra_at(size_t len)
{
	return (offsetof(struct entry, name) + len + 7) & ~(size_t)7;
}

static size_t entry_size(size_t len, int extra)
{
	return extra_at(len) + (extra ? sizeof(struct extra) : 0);
}

static struct extra *extra_of(struct entry *e)
{
	return (struct extra *)((char *)e + extra_at(e->len));
}

static void pack(struct entry *e, const struct stat *st)
{
	dlfs_shm_attr_pack(st, &e->a);
	if (e->extra)
		*extra_of(e) = (struct extra){
			.dev = st->st_dev, .rdev = st->st_rdev,
			.blksize = st->st_blksize, .blocks = st->st_blocks,
			.nlink = st->st_nlink, .atim = st->st_atim,
			.ctim = st->st_ctim};
}

static void unpack(struct entry *e, const struct stat *usual,
		   struct stat *st)
{
	dlfs_shm_attr_unpack(&e->a, e->ino, usual, st);
	if (e->extra) {
		const struct extra *x = extra_of(e);
		st->st_dev = x->dev;
		st->st_rdev = x->rdev;
		st->st_blksize = x->blksize;
		st->st_blocks = x->blocks;
		st->st_nlink = x->nlink;
		st->st_atim = x->atim;
		st->st_ctim = x->ctim;
	}
}

/* The shard's slot for (parent, name): its entry or an empty slot. */
static struct entry **slot_of(struct shard *s, uint64_t h, uint64_t parent,
			      const char *name, size_t len)
{
	size_t mask = s->cap - 1;
	for (size_t i = (h >> 6) & mask;; i = (i + 1) & mask) {
		struct entry *e = s->slots[i];
		if (!e || (e->hash == h && e->parent == parent &&
			   e->len == len && !memcmp(e->name, name, len)))
			return &s->slots[i];
	}
}

int dlfs_nscache_get(uint64_t parent, const char *name, size_t len,
		     const struct stat *usual, uint64_t *ino,
		     struct stat *st)
{
	uint64_t h = hash_of(parent, name, len);
	struct shard *s = &shards[h % NSCACHE_SHARDS];
	int ret = 1; /* not cached */
	pthread_mutex_lock(&s->lock);
	if (s->cap) {
		struct entry *e = *slot_of(s, h, parent, name, len);
		if (e) {
			ret = e->neg ? -ENOENT : 0;
			if (!e->neg) {
				*ino = e->ino;
				unpack(e, usual, st);
			}
		}
	}
	pthread_mutex_unlock(&s->lock);
	return ret;
}

static void shard_clear(struct shard *s)
{
	for (size_t i = 0; i < s->cap; i++)
		free(s->slots[i]);
	free(s->slots);
	s->slots = NULL;
	s->cap = s->used = s->bytes = 0;
}

static int shard_grow(struct shard *s)
{
	size_t ncap = s->cap ? s->cap * 2 : 64;
	struct entry **ns = calloc(ncap, sizeof(*ns));
	if (!ns)
		return -ENOMEM;
	struct entry **old = s->slots;
	size_t ocap = s->cap;
	s->slots = ns;
	s->cap = ncap;
	s->bytes += (ncap - ocap) * sizeof(*ns);
	for (size_t i = 0; i < ocap; i++)
		if (old[i])
			*slot_of(s, old[i]->hash, old[i]->parent, old[i]->name,
				 old[i]->len) = old[i];
	free(old);
	return 0;
}

/* Room for an entry of size bytes in s: emptied if it would go past its
 * budget, grown if its table is half full. @return 0 or -ENOMEM. */
static int make_room(struct shard *s, size_t size)
{
	int grow = (s->used + 1) * 2 > s->cap;
	size_t table = grow ? (s->cap ? s->cap : 64) * sizeof(*s->slots) : 0;
	if (s->bytes + size + table > budget) {
		shard_clear(s);
		grow = 1;
	}
	return grow ? shard_grow(s) : 0;
}

void dlfs_nscache_put(uint64_t parent, const char *name, size_t len,
		      const struct stat *usual, uint64_t ino,
		      const struct stat *st)
{
	if (len > UINT8_MAX)
		return;
	uint64_t h = hash_of(parent, name, len);
	struct shard *s = &shards[h % NSCACHE_SHARDS];
	int extra = st && !dlfs_shm_attr_usual(st, usual);
	size_t size = entry_size(len, extra);
	struct entry *e = malloc(size);
	if (!e)
		return;
	*e = (struct entry){.parent = parent, .ino = ino, .hash = h,
			    .neg = !st, .extra = (uint8_t)extra,
			    .len = (uint8_t)len};
	memcpy(e->name, name, len);
	if (st)
		pack(e, st);
	pthread_mutex_lock(&s->lock);
	if (make_room(s, size)) {
		free(e);
		goto out;
	}
	struct entry **slot = slot_of(s, h, parent, name, len);
	if (*slot) {
		free(e); /* another thread was first */
	} else {
		*slot = e;
		s->used++;
		s->bytes += size;
	}
out:
	pthread_mutex_unlock(&s->lock);
}

/* The totals, for the unit test and the curious. */
static size_t total(int bytes)
{
	size_t n = 0;
	for (int i = 0; i < NSCACHE_SHARDS; i++) {
		pthread_mutex_lock(&shards[i].lock);
		n += bytes ? shards[i].bytes : shards[i].used;
		pthread_mutex_unlock(&shards[i].lock);
	}
	return n;
}

size_t dlfs_nscache_bytes(void)
{
	return total(1);
}

size_t dlfs_nscache_entries(void)
{
	return total(0);
}
