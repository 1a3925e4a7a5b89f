/*
 * Sequential read-ahead: a reader that walks consecutive chunks of a
 * container gets the next ones loaded into the RAM tier by the background
 * reads (fill.h) before it asks. The streams are followed even with
 * read-ahead off (window_max 0, or no background reads yet): the read
 * core reads whole chunks for a stream (dlfs_prefetch_in_stream).
 *
 * One stream per container: dlfs_prefetch_note is told every chunk a
 * demand read touches. Two steps to the next chunk in a row make a
 * stream (k, k+1, k+2); each further step queues chunks up to the window
 * ahead; the window starts at two chunks,
 * doubles each time a demand read finds a chunk the read-ahead loaded, is
 * capped by window_max, and halves when read-ahead chunks are evicted
 * unread. Touching the stream's last chunk again, or, once a step was
 * seen, the one before it (a second reader just behind), changes
 * nothing; a jump anywhere else ends the stream. A stream that reached
 * the last chunk of container c - 1 (or the one before it) goes on at
 * chunk 0 of container c, with its window: shards read one after another
 * make one stream, not one per container.
 *
 * Thread-safety: every call is safe from any thread. Lock order: a stripe
 * lock, a leaf (the background reads are told after it is released).
 */
#ifndef DLFS_PREFETCH_H
#define DLFS_PREFETCH_H

#include <stdint.h>

#include "cache.h"
#include "dlfs/dataset.h"
#include "fill.h"

struct dlfs_prefetch;

struct dlfs_prefetch_conf {
	struct dlfs_cache *cache; /* for its wasted-prefetch count */
	struct dlfs_fill *fill;   /* does the reads; NULL: none (yet) */
	struct dlfs_ds *ds;       /* its container table */
	uint64_t window_max;      /* bytes; rounded down to chunks; 0: off */
};

int dlfs_prefetch_new(const struct dlfs_prefetch_conf *conf,
		      struct dlfs_prefetch **out, struct dlfs_err *err);
/* NULL is ok. */
void dlfs_prefetch_free(struct dlfs_prefetch *pf);
/* The background reads that do the read-ahead, once they run. */
void dlfs_prefetch_set_fill(struct dlfs_prefetch *pf, struct dlfs_fill *f);

/*
 * A demand read touched chunk k of container c; was_prefetched says the
 * cache found it there thanks to a read-ahead (dlfs_chunk_ref.prefetched).
 */
void dlfs_prefetch_note(struct dlfs_prefetch *pf, uint32_t c, uint64_t k,
			int was_prefetched);

/* Is (c, k) the chunk a stream in c last read, or the one after it, or
 * chunk 0 after a stream that reached the end of container c - 1? A
 * stream is there once a reader stepped twice from a chunk to the next. */
int dlfs_prefetch_in_stream(struct dlfs_prefetch *pf, uint32_t c,
			    uint64_t k);

#endif
