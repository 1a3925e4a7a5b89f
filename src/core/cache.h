/*
 * The RAM tier: a bounded cache of loaded byte ranges ("extents") keyed by
 * a 64-bit key: a whole chunk (dlfs_cache_chunk_key), or one file's bytes
 * (dlfs_cache_file_key) when whole-chunk reads would be wasted.
 *
 * A reader pins an entry with dlfs_cache_get and releases it with
 * dlfs_cache_put, saying how many of its bytes it served; a pinned entry
 * is never evicted or changed. A miss calls the load callback (outside the
 * lock) once per key however many readers miss on it at the same time:
 * the others wait for that one load. A load that fails is not cached;
 * every waiter gets its error. Eviction is CLOCK over unpinned entries.
 * When every slot is pinned or loading, a reader gets a private, uncached
 * buffer rather than wait, so no set of readers can deadlock however small
 * the cache.
 *
 * Waste: each entry counts the bytes served from it. When a chunk entry
 * (not a file's, nor a bag's) is evicted, the bytes never served count as
 * evicted-unused, unless its loader kept it elsewhere (the NVMe tier):
 * then nothing was wasted. The read core compares evicted-unused with
 * loaded bytes to choose between chunk and file reads.
 *
 * Prefetch: dlfs_cache_prefetch loads an entry nobody asked for yet. The
 * first demand get of it counts as a used prefetch; its eviction unread
 * counts as wasted (unless kept elsewhere). At most pf_limit slots hold
 * unread prefetches, so prefetch memory is bounded. A prefetch may keep
 * its pin (a hold, released by dlfs_cache_put) so that a planned chunk
 * stays until its last reader has been served.
 *
 * Memory: at most capacity bytes of slot buffers, allocated on first use.
 *
 * Thread-safety: all calls are safe from any thread. Lock order: the
 * cache's one mutex; the load callback runs without it.
 */
#ifndef DLFS_CACHE_H
#define DLFS_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "dlfs/err.h"
#include "shm.h"

struct dlfs_cache;

/* Keys: a chunk (container c < 2^16, chunk k < 2^32), a file's bytes, or
 * a bag of files read ahead (bags.h; its id < 2^62). */
static inline uint64_t dlfs_cache_chunk_key(uint32_t c, uint64_t k)
{
	return ((uint64_t)c << 40) | k;
}
static inline uint64_t dlfs_cache_file_key(uint64_t ino)
{
	return (UINT64_C(1) << 63) | ino;
}
static inline int dlfs_cache_key_is_file(uint64_t key)
{
	return (int)(key >> 63);
}
static inline uint64_t dlfs_cache_bag_key(uint64_t id)
{
	return (UINT64_C(1) << 62) | id;
}
static inline int dlfs_cache_key_is_bag(uint64_t key)
{
	return (int)((key >> 62) == 1);
}

/* What a load fills in. */
struct dlfs_load {
	void *buf;      /* the slot's buffer: cap bytes, 4 KiB aligned */
	size_t cap;
	size_t len;     /* out: bytes of the entry */
	size_t off;     /* out: they start at buf + off */
	int kept;       /* out: the loader also stored them elsewhere */
	struct dlfs_err *err;
};

/*
 * Load the entry of key. what is the caller's description of it (passed
 * through from dlfs_cache_get), ctx the caller's context (its index
 * transaction), arg the cache's. @return 0 or -errno.
 */
typedef int (*dlfs_cache_load_fn)(void *arg, void *ctx, uint64_t key,
				  const void *what, struct dlfs_load *l);

struct dlfs_chunk_ref {
	const uint8_t *data;
	size_t len;
	int prefetched; /* this get was the first use of a prefetch */
	int slot; /* private */
	int hold; /* private: a prefetch hold */
	void *own; /* private: an uncached buffer */
};

struct dlfs_cache_stats {
	uint64_t hits, misses, bypass;
	uint64_t capacity_bytes, used_bytes, chunks;
	uint64_t pf_issued, pf_used, pf_wasted, pf_pending;
	/* Chunk entries evicted: their bytes, and those never served nor
	 * kept elsewhere. */
	uint64_t evicted_bytes, evicted_unused_bytes;
	uint64_t held; /* entries pinned by holds right now */
};

/*
 * slot_size is the largest entry (a chunk). capacity is rounded down to
 * whole slots (at least one). @return 0 or -ENOMEM / -EINVAL.
 */
int dlfs_cache_new(size_t slot_size, uint64_t capacity,
		   dlfs_cache_load_fn load, void *arg, struct dlfs_cache **out,
		   struct dlfs_err *err);
void dlfs_cache_free(struct dlfs_cache *c);

/*
 * A cache whose table, slot buffers and published slot records live in
 * memory that readers in other processes map (src/node/shared/shm.h says how they
 * read it): bufs holds the slots at dlfs_cache_slot_bytes(slot_size)
 * apart, table dlfs_cache_table_size(n) zeroed entries, pub and use one
 * record per slot, n = dlfs_cache_n_slots(slot_size, capacity). The
 * memory is borrowed for the cache's life. Eviction counts the outside
 * readers' use (use[]) as its own readers'.
 */
struct dlfs_cache_place {
	uint8_t *bufs;
	uint32_t *table;
	struct dlfs_shm_slot *pub;
	struct dlfs_shm_use *use;
};
int dlfs_cache_new_placed(size_t slot_size, uint64_t capacity,
			  dlfs_cache_load_fn load, void *arg,
			  const struct dlfs_cache_place *place,
			  struct dlfs_cache **out, struct dlfs_err *err);
uint64_t dlfs_cache_n_slots(size_t slot_size, uint64_t capacity);
uint32_t dlfs_cache_table_size(uint64_t n_slots);
uint64_t dlfs_cache_slot_bytes(size_t slot_size);

/* Number of slots (capacity / slot size). */
unsigned dlfs_cache_slots(const struct dlfs_cache *c);

/* Pin the entry of key, loading it on a miss (what and ctx go to the
 * loader). @return 0 or the load's error. */
int dlfs_cache_get(struct dlfs_cache *cache, uint64_t key, const void *what,
		   void *ctx, struct dlfs_chunk_ref *ref, struct dlfs_err *err);

/* Pin the entry of key if it is cached or being loaded (waiting for the
 * load); never loads. @return 0, or -ENOENT when absent (or its load
 * failed). */
int dlfs_cache_get_cached(struct dlfs_cache *cache, uint64_t key,
			  struct dlfs_chunk_ref *ref);

/* Pin the entry of key to copy it elsewhere, waiting out a load in
 * progress; never loads. Not a use: no hit is counted, a prefetch stays
 * unused, and eviction order does not change. @return 0, or -ENOENT when
 * absent (or its load failed). */
int dlfs_cache_peek(struct dlfs_cache *cache, uint64_t key,
		    struct dlfs_chunk_ref *ref);

/* The pinned entry of ref is now also stored elsewhere (the NVMe tier):
 * its eviction wastes nothing. An unread prefetch leaves the prefetch
 * bound and is the first to go, as one kept at load is. */
void dlfs_cache_set_kept(struct dlfs_cache *cache,
			 const struct dlfs_chunk_ref *ref);

/* Release a pin; served is how many of its bytes the holder served to a
 * reader (for the waste count). */
void dlfs_cache_put(struct dlfs_cache *cache, struct dlfs_chunk_ref *ref,
		    size_t served);

/* Bound the slots holding unread prefetches (default: none allowed). */
void dlfs_cache_set_prefetch_limit(struct dlfs_cache *cache, unsigned slots);

/*
 * Load key ahead of demand, unless it is cached or loading. Never waits
 * for a slot and never uses an uncached buffer. With hold set, keeps the
 * entry pinned (also when it was cached already) until
 * dlfs_cache_put(hold): holds count against the prefetch limit while
 * unread. @return 0 (loaded, or already there; with hold set, hold then
 * pins it), -EAGAIN (prefetch limit reached, no free slot, or with hold
 * set the entry was evicted while this waited for its load), or the
 * load's error.
 */
/* A background fill, not read-ahead: not counted as issued, used or
 * wasted read-ahead (still bounded like it). */
#define DLFS_CACHE_PF_QUIET 1
int dlfs_cache_prefetch(struct dlfs_cache *cache, uint64_t key,
			const void *what, void *ctx, unsigned flags,
			struct dlfs_chunk_ref *hold, struct dlfs_err *err);

/* Demand loads in progress now (prefetch yields to them). */
unsigned dlfs_cache_demand_loading(struct dlfs_cache *cache);

/* Is key present and loaded? Does not pin or count. */
int dlfs_cache_contains(struct dlfs_cache *cache, uint64_t key);
/* Is key present, loaded and held by a prefetch hold (so that it stays
 * until the hold is put)? Does not pin or count. */
int dlfs_cache_held(struct dlfs_cache *cache, uint64_t key);

void dlfs_cache_get_stats(struct dlfs_cache *cache,
			  struct dlfs_cache_stats *s);

#endif
