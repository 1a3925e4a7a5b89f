/*
 * A mount's parts, assembled around the read core: the dataset, the
 * reader (RAM and NVMe tiers, background reads), the MPI peers, the epoch
 * views and the /.dlfs namespace, and the log. The FUSE ops (fuse_ll.c)
 * only borrow it.
 *
 * Order of life: dlfs_fs_init (before mounting: a bad cache_dir stops the
 * mount), dlfs_fs_join (after mounting, before any thread: MPI), then the
 * fork into the background, dlfs_fs_start (threads), the session loop,
 * dlfs_fs_destroy. Under MPI with a sealed dataset the dataset is opened
 * only once joined: dlfs_fs_join_index (after mounting), dlfs_fs_init,
 * dlfs_fs_attach_peer, then as above.
 *
 * Thread-safety: after dlfs_fs_start every call is safe from any thread;
 * each FUSE worker has its own read context (dlfs_fs_ctx).
 */
#ifndef DLFS_FS_H
#define DLFS_FS_H

#include <pthread.h>
#include <stdatomic.h>
#include <sys/types.h>

#include "ctl.h"
#include "ixsrc.h"
#include "metrics.h"    /* the core's renderings of the counters, */
#include "opts.h"
#include "peer.h"
#include "read.h"
#include "stats_json.h" /* which the control files show */
#include "views.h"

struct dlfs_fs {
	struct dlfs_ds *ds;
	struct dlfs_reader *reader;
	struct dlfs_peer *peer;   /* NULL alone */
	struct dlfs_fetch_peer peer_ops; /* the reader's view of them */
	struct dlfs_views *views;
	struct dlfs_ctl ctl;      /* /.dlfs */
	int ctl_ready;
	const struct dlfs_opts *opts;
	uint64_t seed;            /* the options', or the dataset's default */
	pthread_key_t ctx_key;    /* each worker's dlfs_reader_ctx */
	double timeout;           /* entry and attribute timeout, seconds */
	uid_t uid;
	gid_t gid;
	int foreground;           /* log to stderr; else syslog */
	const char *mountpoint;
	const char *socket;       /* --serve: its socket; NULL for a mount */
	_Atomic int kernel_ra_set; /* the mount's read-ahead was set */
	struct dlfs_ixsrc ix;     /* where the index came from */
};

/* mountpoint is NULL when the daemon serves a socket (serve.h) instead.
 * @return 0 or -errno with err set. */
int dlfs_fs_init(struct dlfs_fs *fs, struct dlfs_ds *ds,
		 const struct dlfs_opts *opts, const char *mountpoint,
		 int foreground, struct dlfs_err *err);
/*
 * Join the MPI job when launched by one (or -o mpi): check every rank
 * mounts the same dataset with the same seed. Call after mounting and
 * before any thread; the daemon must not fork afterwards. Alone, does
 * nothing. @return 0 or -errno.
 */
int dlfs_fs_join(struct dlfs_fs *fs, struct dlfs_err *err);
/*
 * Under MPI, a sealed dataset: join the job and share the index while
 * joining (ixsrc.h), then open the dataset from this node's copy. Needs
 * only fs->opts and fs->foreground (the log) set: fs is initialised
 * later, with *ds; then dlfs_fs_attach_peer. Call after mounting and
 * before any thread. @return 0 with *peer, *ix and *ds, or -errno.
 */
int dlfs_fs_join_index(struct dlfs_fs *fs, const struct dlfs_seal *seal,
		       struct dlfs_peer **peer, struct dlfs_ixsrc *ix,
		       struct dlfs_ds **ds, struct dlfs_err *err);
/* Give an initialised fs the peers it joined (NULL: alone). */
void dlfs_fs_attach_peer(struct dlfs_fs *fs, struct dlfs_peer *peer);
/* Start the threads (after the fork, if any). @return 0 or -errno. */
int dlfs_fs_start(struct dlfs_fs *fs, struct dlfs_err *err);
void dlfs_fs_destroy(struct dlfs_fs *fs);

/* The calling worker's read context, made on its first request.
 * @return 0 or -errno. */
int dlfs_fs_ctx(struct dlfs_fs *fs, struct dlfs_reader_ctx **out);

/* The log: a dlfs_log_fn (arg is the fs): stderr in the foreground,
 * syslog otherwise. */
void dlfs_fs_log(void *arg, int prio, const char *msg);

#endif
