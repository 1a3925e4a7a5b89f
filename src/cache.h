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

/* Load chunk k of container c into buf (cap bytes). @return 0 or -errno. */
typedef int (*dlfs_cache_load_fn)(void *arg, uint32_t c, uint64_t k,
				  void *buf, size_t cap, size_t *len,
				  struct dlfs_err *err);

struct dlfs_chunk_ref {
	const uint8_t *data;
	size_t len;
	int slot; /* private */
	void *own; /* private: an uncached buffer */
};

struct dlfs_cache_stats {
	uint64_t hits, misses, bypass;
	uint64_t capacity_bytes, used_bytes, chunks;
};

/*
 * capacity is rounded down to whole chunks (at least one slot).
 * @return 0 or -ENOMEM / -EINVAL.
 */
int dlfs_cache_new(size_t chunk_size, uint64_t capacity,
		   dlfs_cache_load_fn load, void *arg, struct dlfs_cache **out,
		   struct dlfs_err *err);
void dlfs_cache_free(struct dlfs_cache *c);

/* Pin chunk (c, k), loading it on a miss. @return 0 or the load's error. */
int dlfs_cache_get(struct dlfs_cache *cache, uint32_t c, uint64_t k,
		   struct dlfs_chunk_ref *ref, struct dlfs_err *err);
void dlfs_cache_put(struct dlfs_cache *cache, struct dlfs_chunk_ref *ref);

/* Is chunk (c, k) present and loaded? Does not pin or count. */
int dlfs_cache_contains(struct dlfs_cache *cache, uint32_t c, uint64_t k);

void dlfs_cache_get_stats(struct dlfs_cache *cache,
			  struct dlfs_cache_stats *s);

#endif
