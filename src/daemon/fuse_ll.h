/*
 * The FUSE low-level adapter: the only module that speaks FUSE. It maps
 * kernel requests onto libdlfs (index lookups, the RAM chunk cache) and
 * serves the /.dlfs control directory.
 *
 * Ownership: main.c fills a struct dlfs_fs, passes it as the session's
 * userdata, and tears it down after the session loop returns; the ops
 * only borrow it.
 *
 * Thread-safety: ops run on many FUSE worker threads at once. Each worker
 * has its own index transaction (created on first use, ended when the
 * thread exits). Lock order: log_lock is a leaf; the cache
 * has its own internal lock, never held across these.
 */
#ifndef DLFS_FUSE_LL_H
#define DLFS_FUSE_LL_H

#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>
#include <pthread.h>

#include "cache.h"
#include "ctl.h"
#include "dlfs/dataset.h"
#include "fetch.h"
#include "nvme.h"
#include "peer.h"
#include "prefetch.h"
#include "stage.h"
#include "stats.h"


/* What the daemon's -o options set up (see dlfs(1)). */
struct dlfs_fs_conf {
	uint64_t ram_cache;
	const char *cache_dir;  /* NULL: no NVMe tier */
	uint64_t cache_size;    /* 0: the default */
	enum dlfs_nvme_policy cache_policy;
	uint64_t readahead;     /* max window, bytes; 0 = off */
	unsigned prefetch_threads;
	int pfs_direct;         /* O_DIRECT container reads */
	enum dlfs_shuffle shuffle; /* epoch views */
	uint64_t seed;
	uint32_t shuffle_window; /* chunks, for shuffle=chunked */
	int seed_given;
	int mpi;                 /* -o mpi: join an MPI job even unlaunched */
	enum dlfs_stage_mode stage;
	unsigned peer_timeout_ms;
};

struct dlfs_fs {
	struct dlfs_ds *ds;
	struct dlfs_cache *cache;
	struct dlfs_nvme *nvme;         /* NULL without cache_dir */
	struct dlfs_prefetch *prefetch; /* NULL with readahead=0 */
	struct dlfs_peer *peer;         /* NULL alone */
	struct dlfs_stage *stage;       /* NULL without stage= */
	struct dlfs_fetch fetch;
	struct dlfs_fs_conf conf;
	struct dlfs_stats stats;
	pthread_key_t txn_key;
	pthread_key_t buf_key; /* per-worker buffer for NVMe file reads */
	double timeout;  /* entry and attribute timeout, seconds */
	uid_t uid;
	gid_t gid;
	int foreground;  /* log to stderr; else syslog */
	const char *mountpoint;
	struct dlfs_views *views; /* the epoch views */
	struct dlfs_ctl ctl;      /* /.dlfs */
	int ctl_ready;
	pthread_mutex_t log_lock; /* guards logged[] */
	uint64_t logged[64];      /* inodes already named in the log */
	unsigned n_logged;
};

extern const struct fuse_lowlevel_ops dlfs_ll_ops;

/*
 * Prepare fs for serving ds: the RAM chunk cache, the NVMe tier's
 * directory (a bad cache_dir is an error here, before anything is
 * mounted; one in use by another mount is a warning and no tier), the
 * per-thread keys, the info JSON. Starts no thread. @return 0 or -errno.
 */
int dlfs_fs_init(struct dlfs_fs *fs, struct dlfs_ds *ds,
		 const struct dlfs_fs_conf *conf, const char *mountpoint,
		 int foreground, struct dlfs_err *err);
/*
 * Join the MPI job when launched by one (or -o mpi): initialise MPI on its
 * own thread and check every rank mounts the same dataset with the same
 * seed. Call after mounting and before any FUSE thread; the daemon must
 * not fork afterwards. Alone, does nothing. @return 0 or -errno.
 */
int dlfs_fs_join(struct dlfs_fs *fs, struct dlfs_err *err);

/* Start the background threads (NVMe writer, prefetchers, peer servers,
 * staging): after the daemon has forked, if it does. @return 0 or -errno. */
int dlfs_fs_start(struct dlfs_fs *fs, struct dlfs_err *err);
void dlfs_fs_destroy(struct dlfs_fs *fs);

/* Log one line (to stderr in the foreground, else to syslog). */
void dlfs_log(struct dlfs_fs *fs, int prio, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
