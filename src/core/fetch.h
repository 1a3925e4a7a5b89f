/*
 * Where bytes come from when the RAM tier misses: the loader of the RAM
 * tier (dlfs_fetch_load), for both kinds of entry.
 *   - A chunk: the NVMe tier, then its home node over MPI, then the PFS
 *     (one aligned read of the chunk). Checked against the index's XXH3
 *     before it is used; one that came from a peer or the PFS is handed
 *     to the NVMe tier to keep. A compressed dataset's zstd chunk from
 *     the PFS is decompressed by a decode thread for a demand load
 *     (decode.h), by the background read's own thread for its loads;
 *     the NVMe tier and the peers hold chunks decompressed already.
 *   - A file alone (what = its struct dlfs_inode): from the NVMe tier
 *     when all its chunks are there, else from the PFS in one aligned
 *     read of its pages; checked against the file's own XXH3.
 *   - A bag (what = its struct dlfs_fetch_bag, bags.h): its own fill
 *     puts its files' bytes there, read from the PFS with
 *     dlfs_fetch_pfs_range; its planner checks them.
 * Also the NVMe tier's small-file path (dlfs_fetch_file_nvme), the file
 * salvage path, and the "file verified" bits of this mount.
 *
 * PFS reads in flight are counted (pfs_inflight), for the background
 * reads to keep their number at the PFS's queue depth.
 *
 * Ownership: the reader owns the struct and what it points to. The calls
 * keep no other state and are safe from any thread.
 */
#ifndef DLFS_FETCH_H
#define DLFS_FETCH_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "cache.h"
#include "decode.h"
#include "dlfs/dataset.h"
#include "nvme.h"
#include "stats.h"

/* Files up to this size are read whole from the NVMe tier to check them
 * the first time (a bigger one is read by its chunks). */
#define DLFS_FETCH_FILE_CHECK_MAX (UINT64_C(1) << 20)
/* The caller's buffer for dlfs_fetch_file_nvme: this many bytes, 4 KiB
 * aligned. */
#define DLFS_FETCH_BUF_SIZE ((size_t)DLFS_FETCH_FILE_CHECK_MAX + 8192)

/* How a chunk load treats the NVMe tier. A load hands the chunk it read
 * (from a peer or the PFS) to the tier without waiting for room in its
 * write queue; with defer_nvme it does not hand it at all: the caller
 * (a background load) queues it itself once the chunk is in RAM, so that
 * readers waiting on the load never wait for the tier's disk. */
struct dlfs_fetch_chunk_opts {
	int defer_nvme;
	/* A background read's own decoder: it decompresses the chunk in its
	 * thread. NULL (or no opts): a demand load, which hands a zstd chunk
	 * to the decode threads (decode field) and waits. */
	struct dlfs_decoder *dec;
	/* The load serves a peer's request (this node is the chunk's home,
	 * or its gone home's substitute): never ask a peer for it. */
	int serve;
};

/* A bag's load (bags.h): fill writes the entry's bytes into buf (cap
 * bytes, 4 KiB aligned). @return 0 with *len, or -errno with err. */
struct dlfs_fetch_bag {
	int (*fill)(void *arg, uint8_t *buf, size_t cap, size_t *len,
		    struct dlfs_err *err);
	void *arg;
};

/* The chunks' homes over MPI, as the daemon provides them. */
struct dlfs_fetch_peer {
	unsigned rank;                              /* this node's */
	unsigned (*home)(void *arg, uint64_t g);    /* global chunk g's */
	/* Global chunk g from its home (or its gone home's substitute)
	 * into buf. @return 0 with *len, or -errno, and then read it from
	 * the PFS: -EXDEV when this node is the substitute, -EHOSTDOWN when
	 * no peer can answer (the job is ending), another code for a
	 * peer's error. */
	int (*get)(void *arg, uint64_t g, void *buf, size_t cap, size_t *len);
	void *arg;
};

struct dlfs_fetch {
	struct dlfs_ds *ds;
	struct dlfs_nvme *nvme; /* NULL without a cache_dir */
	const struct dlfs_fetch_peer *peer; /* NULL alone */
	struct dlfs_stats *stats;
	int compressed;         /* the dataset's chunks are stored compressed */
	/* The decode threads of a compressed dataset, once started; NULL
	 * before: demand loads then decompress in their own thread. */
	struct dlfs_decode *decode;
	_Atomic unsigned pfs_inflight;
	/* One bit per inode: the file's bytes passed its own checksum during
	 * this mount, so its index record is right and later pieces of it
	 * need no check of their own. */
	_Atomic uint64_t *file_ok;
	uint64_t n_inodes;
	int file_ok_placed; /* file_ok is shared memory, not ours */
};

/* Set up for ds (the bitmap of its inodes). @return 0 or -ENOMEM. */
int dlfs_fetch_init(struct dlfs_fetch *f, struct dlfs_ds *ds,
		    struct dlfs_stats *stats);
void dlfs_fetch_destroy(struct dlfs_fetch *f);

/* Keep the bitmap of checked files in bits (n_inodes bits, zeroed:
 * src/node/shared/shm.h's file_ok), borrowed for f's life, instead of f's own;
 * before any read. */
void dlfs_fetch_place_files(struct dlfs_fetch *f, uint64_t *bits);

/*
 * The RAM tier's loader (a dlfs_cache_load_fn; arg is a struct
 * dlfs_fetch, ctx the caller's struct dlfs_txn). For a chunk key, what is
 * NULL or a struct dlfs_fetch_chunk_opts; for a file key, the file's
 * struct dlfs_inode; for a bag key, its struct dlfs_fetch_bag. @return 0, -EBADMSG (a chunk failed its checksum:
 * salvage it file by file; or a file failed its own: its bytes or its
 * index record are wrong, err says where), -ENOENT/-EUCLEAN (unusable
 * container), -errno.
 */
int dlfs_fetch_load(void *arg, void *ctx, uint64_t key, const void *what,
		    struct dlfs_load *l);

/*
 * Bytes [off, off + len) of container c from the PFS, in the whole pages
 * around them, into buf (cap bytes, 4 KiB aligned): one PFS read,
 * counted as one. @return 0 with *head (where byte off is in buf), or
 * -errno with err.
 */
int dlfs_fetch_pfs_range(struct dlfs_fetch *f, uint32_t c, uint64_t off,
			 size_t len, void *buf, size_t cap, size_t *head,
			 struct dlfs_err *err);

/*
 * Bytes [off, off + len) of regular file in, read from the NVMe tier
 * alone into buf (DLFS_FETCH_BUF_SIZE bytes, aligned). Served only when
 * the chunks under the range are there and the bytes can be trusted: the
 * file passed its own checksum before in this mount (and the chunks were
 * not evicted meanwhile), or it is at most DLFS_FETCH_FILE_CHECK_MAX and
 * passes it now (read whole; a failure drops its chunks from the tier).
 * @return 0 with *data set, or -ENOENT: take the chunk path instead.
 */
int dlfs_fetch_file_nvme(struct dlfs_fetch *f, const struct dlfs_inode *in,
			 uint64_t off, size_t len, void *buf,
			 const uint8_t **data);

/*
 * Read file in alone from its container into *buf (grown as needed, owned
 * by the caller) and check it against its own checksum: the salvage of a
 * file whose chunk failed its checksum. @return 0, -EIO (it fails too:
 * err says so), -errno.
 */
int dlfs_fetch_salvage(struct dlfs_fetch *f, const struct dlfs_inode *in,
		       uint8_t **buf, size_t *cap, struct dlfs_err *err);

/* The verified bit of file ino. */
int dlfs_fetch_file_known(const struct dlfs_fetch *f, uint64_t ino);
void dlfs_fetch_file_set(struct dlfs_fetch *f, uint64_t ino, int ok);

#endif
