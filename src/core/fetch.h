/*
 * Where a chunk comes from when the RAM tier misses: the NVMe tier, then
 * its home node over MPI, then the PFS (the dataset's containers). Every
 * chunk is checked against the index before it is used; one that came
 * from a peer or the PFS is handed to the NVMe tier to keep. Also the NVMe tier's file path: a small file whose
 * chunks are all on NVMe is read alone, not as whole chunks, so random
 * reads of a dataset larger than RAM cost what the file costs.
 *
 * Ownership: the daemon owns the struct and what it points to; this module
 * only borrows them. Thread-safety: the calls keep no state of their own
 * and are safe from any thread.
 */
#ifndef DLFS_FETCH_H
#define DLFS_FETCH_H

#include <stddef.h>
#include <stdint.h>

#include "dlfs/dataset.h"
#include "nvme.h"
#include "peer.h"
#include "stats.h"

/* Files up to this size are checked alone against their own checksum
 * when read from chunks not yet verified since the tier opened. */
#define DLFS_FETCH_FILE_CHECK_MAX (UINT64_C(1) << 20)
/* The caller's buffer for dlfs_fetch_file: this many bytes, 4 KiB aligned. */
#define DLFS_FETCH_BUF_SIZE ((size_t)DLFS_FETCH_FILE_CHECK_MAX + 8192)

struct dlfs_fetch {
	struct dlfs_ds *ds;
	struct dlfs_nvme *nvme; /* NULL without a cache_dir */
	struct dlfs_peer *peer; /* NULL alone */
	struct dlfs_stats *stats;
	/* One bit per inode: the file's bytes in the NVMe tier passed its
	 * checksum, so later pieces of it need no check (a file is often
	 * read in several requests, some at once). */
	_Atomic uint64_t *file_ok;
	uint64_t n_inodes;
};

/* Allocate the file bitmap for n_inodes inodes. @return 0 or -ENOMEM. */
int dlfs_fetch_init(struct dlfs_fetch *f, uint64_t n_inodes);
void dlfs_fetch_destroy(struct dlfs_fetch *f);

/*
 * The RAM tier's loader (a dlfs_cache_load_fn; arg is a struct
 * dlfs_fetch, ctx the caller's struct dlfs_txn): chunk k of container c
 * from NVMe, else its home peer, else the PFS. @return as dlfs_chunk_read.
 */
int dlfs_fetch_chunk(void *arg, void *ctx, uint32_t c, uint64_t k, void *buf,
		     size_t cap, size_t *len, struct dlfs_err *err);

/*
 * Bytes [off, off + len) of regular file in, read from the NVMe tier
 * alone into buf (DLFS_FETCH_BUF_SIZE bytes, aligned). Served only when
 * the chunks under the range are there and the bytes can be trusted:
 * their chunks were verified, or the file passed its own checksum before,
 * or it is at most DLFS_FETCH_FILE_CHECK_MAX and passes it now (read
 * whole; a failure drops its chunks from the tier).
 * @return 0 with *data set, or -ENOENT: take the chunk path instead.
 */
int dlfs_fetch_file(struct dlfs_fetch *f, const struct dlfs_inode *in,
		    uint64_t off, size_t len, void *buf, const uint8_t **data);

#endif
