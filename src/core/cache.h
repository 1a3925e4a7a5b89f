/*
 * The RAM tier: a bounded cache of whole chunks, keyed by (container,
 * chunk).
 *
 * A reader pins a chunk with dlfs_cache_get and releases it with
 * dlfs_cache_put; a pinned chunk is never evicted or changed. A miss calls
 * the load callback (outside the lock) once per chunk however many readers
 * miss on it at the same time: the others wait for that one load. A load
 * that fails is not cached; every waiter gets its error. Eviction is
 * CLOCK over unpinned chunks. When every slot is pinned or loading, a
 * reader gets a private, uncached buffer rather than wait, so no set of
 * readers can deadlock however small the cache.
 *
 * Prefetch: dlfs_cache_prefetch loads a chunk nobody asked for yet into a
 * slot marked prefetched. The first demand get of it counts as a used
 * prefetch; its eviction unread counts as wasted. At most pf_limit slots
 * hold unread prefetches, so prefetch memory is bounded.
 *
 * Memory: at most capacity bytes of chunk buffers, allocated on first use.
 *
 * Thread-safety: all calls are safe from any thread. Lock order: the
 * cache's one mutex; the load callback runs without it.
 */
#ifndef DLFS_CACHE_H
#define DLFS_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "dlfs/err.h"

struct dlfs_cache;

/*
 * Load chunk k of container c into buf (cap bytes). arg is the cache's,
 * ctx the caller's of dlfs_cache_get (its index transaction). @return 0
 * or -errno.
 */
typedef int (*dlfs_cache_load_fn)(void *arg, void *ctx, uint32_t c,
				  uint64_t k, void *buf, size_t cap,
				  size_t *len, struct dlfs_err *err);

struct dlfs_chunk_ref {
	const uint8_t *data;
	size_t len;
	int prefetched; /* this get was the first use of a prefetch */
	int slot; /* private */
	void *own; /* private: an uncached buffer */
};

struct dlfs_cache_stats {
	uint64_t hits, misses, bypass;
	uint64_t capacity_bytes, used_bytes, chunks;
	uint64_t pf_issued, pf_used, pf_wasted, pf_pending;
};

/*
 * capacity is rounded down to whole chunks (at least one slot).
 * @return 0 or -ENOMEM / -EINVAL.
 */
int dlfs_cache_new(size_t chunk_size, uint64_t capacity,
		   dlfs_cache_load_fn load, void *arg, struct dlfs_cache **out,
		   struct dlfs_err *err);
void dlfs_cache_free(struct dlfs_cache *c);

/* Pin chunk (c, k), loading it on a miss with ctx passed to the loader.
 * @return 0 or the load's error. */
int dlfs_cache_get(struct dlfs_cache *cache, uint32_t c, uint64_t k,
		   void *ctx, struct dlfs_chunk_ref *ref, struct dlfs_err *err);

/* Bound the slots holding unread prefetches (default: none allowed). */
void dlfs_cache_set_prefetch_limit(struct dlfs_cache *cache, unsigned slots);

/*
 * Load chunk (c, k) ahead of demand, unless it is cached or loading.
 * Never waits for a slot and never uses an uncached buffer. @return 0
 * (loaded, or already there), -EAGAIN (prefetch limit reached or no free
 * slot), or the load's error.
 */
int dlfs_cache_prefetch(struct dlfs_cache *cache, uint32_t c, uint64_t k,
			void *ctx, struct dlfs_err *err);

/* Demand loads in progress now (prefetch yields to them). */
unsigned dlfs_cache_demand_loading(struct dlfs_cache *cache);
void dlfs_cache_put(struct dlfs_cache *cache, struct dlfs_chunk_ref *ref);

/* Is chunk (c, k) present and loaded? Does not pin or count. */
int dlfs_cache_contains(struct dlfs_cache *cache, uint32_t c, uint64_t k);

void dlfs_cache_get_stats(struct dlfs_cache *cache,
			  struct dlfs_cache_stats *s);

#endif
