/*
 * The unit of a PFS read on a miss: the whole chunk, or the file alone.
 *
 * A whole-chunk read pays when the chunk's other files are read while it
 * is still held somewhere: in RAM, or kept by the NVMe tier. It is waste
 * when the tiers cannot hold the data being read (no cache_dir, or a full
 * one, and a dataset larger than the RAM tier) and the order is random:
 * each chunk is evicted before its neighbours are asked for, and the PFS
 * reads tens of times the bytes served. Then a file is read alone, in the
 * 4 KiB pages around it, and checked against its own checksum.
 *
 * The choice (AUTO), for files up to half a chunk (bigger ones always
 * read their chunks):
 *   - the prior: whole chunks when the dataset fits in the RAM tier plus
 *     the NVMe tier's capacity, else files;
 *   - corrected by measurement: in chunk mode, the bytes of chunks
 *     evicted unused and not kept (dlfs_cache_stats); in file mode, a
 *     ghost of a RAM tier of chunks (keys and served bytes, no data) fed
 *     by the files read alone says what chunk mode would have wasted.
 *     Above a third wasted (1.5x the bytes served), files; below a fifth,
 *     chunks.
 * Sequential streams and planned chunks are read whole whatever the mode
 * (the caller decides that).
 *
 * Thread-safety: dlfs_grain_file_mode is lock-free; the rest takes the
 * module's one mutex (a leaf).
 */
#ifndef DLFS_GRAIN_H
#define DLFS_GRAIN_H

#include <stdint.h>

#include "cache.h"
#include "reader.h"
#include "nvme.h"

struct dlfs_grain;

struct dlfs_grain_conf {
	enum dlfs_read_unit unit;
	uint64_t chunk_size;
	uint64_t data_bytes;     /* the dataset's container data */
	struct dlfs_cache *cache;
	struct dlfs_nvme *nvme;  /* NULL without a cache_dir */
};

struct dlfs_grain_stats {
	int file_mode;         /* now */
	uint64_t switches;     /* mode changes */
	uint64_t file_reads;   /* misses read as files */
	uint64_t ghost_loaded, ghost_unused; /* what chunk mode would do */
};

int dlfs_grain_new(const struct dlfs_grain_conf *conf,
		   struct dlfs_grain **out);
void dlfs_grain_free(struct dlfs_grain *g);

/* Should a miss on file in (size <= chunk/2), whose chunk is not held
 * anywhere, read the file alone? */
int dlfs_grain_file_mode(struct dlfs_grain *g, const struct dlfs_inode *in);

/* File in was read alone; its chunk k is chunk_len bytes: feed the
 * ghost. */
void dlfs_grain_note_file(struct dlfs_grain *g, const struct dlfs_inode *in,
			  uint64_t k, uint64_t chunk_len);

void dlfs_grain_get_stats(struct dlfs_grain *g, struct dlfs_grain_stats *s);

#endif
