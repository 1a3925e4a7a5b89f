/*
 * Sequential read-ahead: a reader that walks consecutive chunks of a
 * container gets the next ones loaded into the RAM tier by background
 * threads before it asks.
 *
 * One stream per container: dlfs_prefetch_note is told every chunk a
 * demand read touches. A step to the next chunk continues the stream and
 * queues chunks up to the window ahead; the window starts at two chunks,
 * doubles each time a demand read finds a chunk the prefetcher loaded, is
 * capped by window_max, and halves when prefetched chunks are evicted
 * unread. A jump anywhere else ends the stream.
 *
 * Demand reads go first: prefetch threads hold back (up to a few ms)
 * while demand loads are in flight, never take a slot the cache would
 * need to give a private buffer for, and the cache bounds the slots that
 * hold unread prefetches (dlfs_cache_set_prefetch_limit, set here from
 * window_max). A full queue drops requests; nothing here blocks a reader.
 *
 * Thread-safety: dlfs_prefetch_note may be called from any thread. Lock
 * order: a stripe lock, then the queue lock; both are leaves with respect
 * to the cache (which prefetch threads call holding neither).
 */
#ifndef DLFS_PREFETCH_H
#define DLFS_PREFETCH_H

#include <stdint.h>

#include "cache.h"
#include "dlfs/dataset.h"

struct dlfs_prefetch;

struct dlfs_prefetch_conf {
	struct dlfs_cache *cache;
	struct dlfs_ds *ds; /* its container table; prefetch threads open
			     their own txn on it */
	unsigned threads;
	uint64_t window_max; /* bytes; rounded down to chunks, at least 1 */
};

/* Start the prefetch threads. @return 0 or -errno. */
int dlfs_prefetch_new(const struct dlfs_prefetch_conf *conf,
		      struct dlfs_prefetch **out, struct dlfs_err *err);
/* Stop the threads (dropping queued work) and free. NULL is ok. */
void dlfs_prefetch_free(struct dlfs_prefetch *pf);

/*
 * A demand read touched chunk k of container c; was_prefetched says the
 * cache found it there thanks to a prefetch (dlfs_chunk_ref.prefetched).
 */
void dlfs_prefetch_note(struct dlfs_prefetch *pf, uint32_t c, uint64_t k,
			int was_prefetched);

/*
 * Queue chunks a reader will need (the epoch views' plan), in the order
 * given. Counted in dlfs_prefetch_planned.
 */
void dlfs_prefetch_plan(struct dlfs_prefetch *pf, const uint32_t *c,
			const uint64_t *k, unsigned n);
uint64_t dlfs_prefetch_planned(struct dlfs_prefetch *pf);

/* Is (c, k) the chunk a stream in c last read, or the one after it? */
int dlfs_prefetch_in_stream(struct dlfs_prefetch *pf, uint32_t c,
			    uint64_t k);

/* Requests dropped because the queue was full or the cache had no room. */
uint64_t dlfs_prefetch_dropped(struct dlfs_prefetch *pf);

#endif
