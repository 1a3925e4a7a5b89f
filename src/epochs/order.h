/*
 * Epoch orders: which file each rank reads at each position of an epoch.
 *
 * Files are numbered 0..n-1 in data (inode) order. An epoch's order is a
 * sequence of all n files; rank r of w takes positions [r*n/w, (r+1)*n/w)
 * of it, its share. Modes:
 *   GLOBAL   the order is P(seed, epoch) over all files: uniform.
 *   CHUNKED  chunks in random order, cut into windows of `window` chunks;
 *            the files of a window are shuffled among themselves. Readers
 *            of a window touch only its chunks, so storage sees whole-chunk
 *            reads even with no cache.
 *   LOCAL    rank r's share is always the files at positions
 *            [r*n/w, (r+1)*n/w) of data order (its own contiguous shard,
 *            and so its own chunks), shuffled anew every epoch.
 * A file belongs to the chunk that holds its first byte; chunk_first[g]
 * (g < n_chunks, and chunk_first[n_chunks] = n) is the first file of
 * global chunk g, counting chunks of all containers in order. An empty
 * file has no byte: it goes with the run it lies in, and those before
 * the first file with bytes go with chunk 0 (chunk_first[0] is 0). A
 * dataset of no chunks at all is shuffled as GLOBAL.
 *
 * Positions map to files in O(1) (GLOBAL, LOCAL) or O(log chunks + window)
 * (CHUNKED) time, and back again: dlfs_epoch_position tells a reader's
 * progress from the file it reads.
 *
 * Ownership: a struct dlfs_epoch copies what it needs from the conf;
 * immutable once built and safe to share between threads.
 */
#ifndef DLFS_ORDER_H
#define DLFS_ORDER_H

#include <stddef.h>
#include <stdint.h>

#include "perm.h"

enum dlfs_shuffle { DLFS_SHUFFLE_GLOBAL, DLFS_SHUFFLE_CHUNKED, DLFS_SHUFFLE_LOCAL };

struct dlfs_epoch_conf {
	uint64_t n_files;
	enum dlfs_shuffle mode;
	uint64_t seed;
	uint32_t rank, size; /* this rank of size; size >= 1 */
	uint32_t window;     /* CHUNKED: chunks per window (>= 1) */
	uint64_t n_chunks;
	const uint64_t *chunk_first; /* CHUNKED: n_chunks + 1 entries */
};

struct dlfs_epoch;

/* The order of one epoch. @return 0, -EINVAL (bad conf), -ENOMEM. */
int dlfs_epoch_new(const struct dlfs_epoch_conf *conf, uint64_t epoch,
		   struct dlfs_epoch **out);
void dlfs_epoch_free(struct dlfs_epoch *o);

uint64_t dlfs_epoch_epoch(const struct dlfs_epoch *o);
/* The share of this rank: its first global position and its length. */
uint64_t dlfs_epoch_share_start(const struct dlfs_epoch *o);
uint64_t dlfs_epoch_share_len(const struct dlfs_epoch *o);
/* The file at global position pos (< n_files). */
uint64_t dlfs_epoch_at(const struct dlfs_epoch *o, uint64_t pos);
/* The files at global positions pos .. pos + n - 1 (< n_files) into out:
 * as dlfs_epoch_at, faster a position for a run of them. */
void dlfs_epoch_at_many(const struct dlfs_epoch *o, uint64_t pos, size_t n,
			uint64_t *out);
/* The global position of file f (< n_files). */
uint64_t dlfs_epoch_position(const struct dlfs_epoch *o, uint64_t f);

/* The last i < n with a[i] <= x, for a ascending with a[0] <= x (0 when
 * n is 0). */
static inline uint64_t dlfs_last_le(const uint64_t *a, uint64_t n, uint64_t x)
{
	uint64_t lo = 0, hi = n;
	while (hi - lo > 1) {
		uint64_t mid = lo + (hi - lo) / 2;
		if (a[mid] <= x)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/*
 * The seed a dataset's orders get by default: a hash of its id (16
 * bytes), so that every mount of the same dataset, a restarted job's
 * included, computes the same orders. Fixed for good: changing it would
 * change every default order.
 */
uint64_t dlfs_epoch_default_seed(const uint8_t *dataset_id, size_t len);

/* "global", "chunked", "local"; parse returns 0 or -EINVAL. */
const char *dlfs_shuffle_name(enum dlfs_shuffle m);
int dlfs_shuffle_parse(const char *s, enum dlfs_shuffle *m);

#endif
