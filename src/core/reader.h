/*
 * The read core: one read of (inode, offset, length) decided end to end,
 * without FUSE. The dlfs daemon serves every FUSE read through it, and
 * any other program can (dlfs-inspect cat does). Built into the dlfs
 * daemon and tools (src/core); not part of the installed libdlfs, and
 * so not in include/dlfs, which holds exactly what is installed.
 *
 * Where the bytes come from, in order:
 *   1. the RAM tier (bounded, whole chunks or whole files);
 *   2. the NVMe tier (-o cache_dir): a small file alone, else its chunks;
 *   3. the chunk's home node over MPI, when the daemon joined a job;
 *   4. the PFS: the chunk in one large aligned read, or, when whole-chunk
 *      reads would be evicted before their other files are read (a RAM
 *      tier smaller than the data and no room below it), the file alone.
 * Concurrent misses on one chunk or file are one load.
 *
 * What is verified, when:
 *   - a chunk from the PFS, a peer or the NVMe tier (first read after the
 *     tier opened): its XXH3 against the index, before any use;
 *   - a file read alone from the PFS: its own XXH3, every time;
 *   - every file, the first time its bytes are all in hand during a mount
 *     (it fits in one chunk, or it is read alone): its own XXH3, so a
 *     damaged index record cannot serve another file's bytes;
 *   - files larger than a chunk: by their chunks only, on the read path
 *     (dlfs-inspect verify checks them whole).
 * A checksum failure of a chunk is salvaged file by file: the file is read
 * alone and served if it passes its own checksum. Damaged data, a damaged
 * index record or an unusable container fail that read with -EIO, are
 * counted, and are logged once per file (naming its path); nothing else is
 * affected.
 *
 * Background reads (struct dlfs_reader_conf.fill, .pfs_depth): the PFS is
 * kept busy with up to pfs_depth reads in flight, demand reads first, then
 * the planned order of an epoch (dlfs_reader_set_planner), then
 * sequential read-ahead, then a sweep that fills the tiers when they can
 * hold the whole dataset.
 *
 * Ownership: the reader borrows ds, which must outlive it. A context
 * (dlfs_reader_ctx) belongs to one thread at a time and holds that
 * thread's index transaction, its buffers and the pins of its last read.
 *
 * Thread-safety: a reader is shared by any number of threads, each with
 * its own context. Callbacks (log, observer, planner) may be called from
 * any of those threads and from the reader's own.
 */
#ifndef DLFS_READER_H
#define DLFS_READER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "dlfs/dataset.h"
#include "dlfs/err.h"

struct dlfs_reader;
struct dlfs_reader_ctx;

/* The NVMe tier once full: keep what it has, or evict by CLOCK. */
enum dlfs_cache_policy { DLFS_POLICY_KEEP, DLFS_POLICY_LRU };

/* Background filling of the tiers (-o stage=). */
enum dlfs_fill_mode {
	DLFS_FILL_NONE,
	/* From the first read on, when the tiers can hold the dataset. */
	DLFS_FILL_AUTO,
	DLFS_FILL_HOME, /* at start: this rank's home chunks (all, alone) */
	DLFS_FILL_ALL,  /* at start: every chunk (others' from their homes) */
};

/* Unit of PFS reads on a miss (-o read_unit=). */
enum dlfs_read_unit {
	DLFS_UNIT_AUTO,  /* whole chunks while they pay, else files */
	DLFS_UNIT_CHUNK, /* always whole chunks */
	DLFS_UNIT_FILE,  /* files alone when not read ahead or planned */
};

struct dlfs_reader_conf {
	uint64_t ram_cache;     /* RAM tier bytes (at least two chunks) */
	const char *cache_dir;  /* NVMe tier directory, or NULL */
	uint64_t cache_size;    /* its bound; 0: the dataset, within 90% of
				   the free space */
	enum dlfs_cache_policy cache_policy;
	uint64_t readahead;     /* largest sequential window; 0: none */
	unsigned pfs_depth;     /* background PFS reads in flight; 0: none */
	int pfs_direct;         /* O_DIRECT container reads */
	enum dlfs_fill_mode fill;
	enum dlfs_read_unit read_unit;
	dlfs_log_fn log;        /* may be NULL */
	void *log_arg;
	/* Keep the RAM tier, the NVMe tier's chunk states and the checked
	 * files in shared memory that readers in other processes may read
	 * without this one (src/node/shared/shm.h; dlfs_reader_share_fds). */
	int share;
};

/*
 * Prepare a reader of ds: the RAM tier and, with cache_dir, the NVMe tier
 * (a cache_dir that is unusable is an error here; one in use by another
 * mount of the dataset is logged and the reader runs without it). Starts
 * no thread. @return 0 or -errno with err set.
 */
int dlfs_reader_open(struct dlfs_ds *ds, const struct dlfs_reader_conf *conf,
		     struct dlfs_reader **out, struct dlfs_err *err);

/* Start the background threads (NVMe writer, background reads); a daemon
 * that forks does this after forking. @return 0 or -errno. */
int dlfs_reader_start(struct dlfs_reader *r, struct dlfs_err *err);

/* Stop the threads, finish NVMe writes, free. NULL is ok. */
void dlfs_reader_close(struct dlfs_reader *r);

/*
 * A read of file ino at offset 0 is starting (any path): the epoch views
 * use it to follow the reader. Called before the read is served.
 */
typedef void (*dlfs_read_observer_fn)(void *arg, struct dlfs_txn *txn,
				      uint64_t ino);
void dlfs_reader_set_observer(struct dlfs_reader *r, dlfs_read_observer_fn fn,
			      void *arg);

/*
 * The planned order (the epoch views): the next chunk, by global number,
 * that the readers will need first, from where they are now on; *uses is
 * the number of this reader's files in it still to be read (0 if
 * unknown). @return 1 with *g set, 0 when nothing is planned now.
 * Called from the reader's background threads, with their own txn.
 */
typedef int (*dlfs_plan_next_fn)(void *arg, struct dlfs_txn *txn,
				 uint64_t *g, uint32_t *uses);
void dlfs_reader_set_planner(struct dlfs_reader *r, dlfs_plan_next_fn fn,
			     void *arg);
/*
 * The planned order, file by file (the epoch views): up to max inode
 * numbers of the current epoch's share from share position from on, into
 * ino; *epoch is that epoch and *reader the furthest share position the
 * readers reached. @return the number given: 0 at the share's end, or
 * with no current epoch (*epoch is then UINT64_MAX). Called from the
 * reader's background threads, with their own txn.
 */
typedef size_t (*dlfs_plan_files_fn)(void *arg, struct dlfs_txn *txn,
				     uint64_t from, uint64_t *ino, size_t max,
				     uint64_t *epoch, uint64_t *reader);
void dlfs_reader_set_file_planner(struct dlfs_reader *r,
				  dlfs_plan_files_fn fn, void *arg);
/* The plan changed (a new epoch, the reader moved): ask again. */
void dlfs_reader_replan(struct dlfs_reader *r);

/*
 * The shared memory of a reader opened with conf.share: the meta, data
 * and rw files of src/node/shared/shm.h (the reader's; dup them to keep them);
 * meta and data are read-only and sealed against writes.
 * @return 0, -ENOENT without conf.share, or -EPERM where the kernel
 * cannot seal them (then nothing is to be passed on; logged at start).
 */
int dlfs_reader_share_fds(struct dlfs_reader *r, int fds[3]);

/* The server starts (on) or stops (off) serving the shared memory's
 * readers: the liveness of src/node/shared/shm.h, held by the calling thread, so
 * that readers see its end also when the process dies. Off from the same
 * thread, before dlfs_reader_close. No-op without conf.share.
 * @return 0 or -errno. */
int dlfs_reader_share_alive(struct dlfs_reader *r, int on);

/* File in was looked up: readers in other processes may now find its
 * bytes (the locations table of src/node/shared/shm.h). No-op without conf.share
 * or for anything but a regular file. */
void dlfs_reader_share_file(struct dlfs_reader *r, const struct dlfs_inode *in);

/* (parent, name) was looked up: ino, with attributes st that are the
 * usual ones (src/node/shared/shm.h, the names table). No-op without
 * conf.share. */
struct stat;
void dlfs_reader_share_name(struct dlfs_reader *r, uint64_t parent,
			    const char *name, size_t len, uint64_t ino,
			    const struct stat *st);

/* A new read-only descriptor of container c's NVMe cache file, for a
 * reader in another process (src/node/shared/shm.h). @return it, -ENOENT (no NVMe
 * tier, or nothing of c kept yet), or -errno. */
int dlfs_reader_nvme_fd(struct dlfs_reader *r, uint32_t c);

/* A context for one thread at a time. @return 0 or -errno. */
int dlfs_reader_ctx_new(struct dlfs_reader *r, struct dlfs_reader_ctx **out,
			struct dlfs_err *err);
void dlfs_reader_ctx_free(struct dlfs_reader_ctx *ctx);
/* The context's index transaction, for the caller's own lookups. */
struct dlfs_txn *dlfs_reader_ctx_txn(struct dlfs_reader_ctx *ctx);

/*
 * What was behind the last EIO that dlfs_read gave on ctx, or that the
 * caller noted (dlfs_reader_ctx_note: the index damage it met outside
 * dlfs_read), and forget it: -EUCLEAN (a damaged index record or
 * container), -EBADMSG (bytes that fail their checksum), another -errno
 * (a failed read), or 0. For a front end that can tell its client more
 * than EIO (the preload's server).
 */
int dlfs_reader_ctx_cause(struct dlfs_reader_ctx *ctx);
void dlfs_reader_ctx_note(struct dlfs_reader_ctx *ctx, int code);

/* Where a read's bytes are: iovcnt pieces, len bytes in all. */
struct dlfs_read_out {
	const struct iovec *iov;
	int iovcnt;
	size_t len;
};

/*
 * Read up to size bytes of regular file ino at offset off. The bytes stay
 * valid (pinned) until dlfs_read_done on the same context, which must be
 * called after every dlfs_read, also a failed one. A read at or past the
 * end gives len 0.
 * @return 0; -ENOENT (no such inode); -EISDIR or -EINVAL (not a regular
 * file); -EIO (damaged data, a damaged index record, an unusable
 * container, or a failed read: counted and logged); -ENOMEM.
 */
int dlfs_read(struct dlfs_reader_ctx *ctx, uint64_t ino, uint64_t off,
	      size_t size, struct dlfs_read_out *out);
void dlfs_read_done(struct dlfs_reader_ctx *ctx);

/*
 * Turn an error of the index met outside dlfs_read (a lookup, a getattr)
 * into what a reader is told: -EUCLEAN (a damaged record) becomes -EIO,
 * counted and logged with msg; any other code passes unchanged.
 */
int dlfs_reader_index_error(struct dlfs_reader *r, int code, const char *msg);

/*
 * The same, logged only the first time for key (the last 64 keys are
 * remembered) and counted every time: for damage that the same request
 * meets again and again, such as a directory entry (key: its
 * dlfs_path_hash) that every lookup of the name reaches.
 */
int dlfs_reader_index_error_once(struct dlfs_reader *r, int code,
				 const char *msg, uint64_t key);

#endif
