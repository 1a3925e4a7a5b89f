/*
 * The /.dlfs control namespace, without FUSE: its inode numbers, names,
 * attributes, directory listings and contents.
 *
 *   /.dlfs/info                 the dataset's metadata, JSON
 *   /.dlfs/stats                live counters, JSON (rendered by a callback)
 *   /.dlfs/metrics              the same, Prometheus text (the same callback)
 *   /.dlfs/epochs/E/files       this node's share of epoch E, a path a line
 *   /.dlfs/epochs/E/samples/N.ext  the same order as files named by position
 *   /.dlfs/epochs/E/tree/DIR/N.ext the same samples, each in its directory
 *
 * Inode numbers live above DLFS_CTL_BASE, far from any dataset's; an
 * epoch view's number encodes its kind, epoch and position, so nothing is
 * allocated per view. A sample is a read-only file whose attributes and
 * bytes are its sample's: reads of it are reads of that file
 * (dlfs_ctl_read says which).
 *
 * Thread-safety: all calls are safe from any thread. Lock order: the
 * stats lock is a leaf; the views have their own.
 */
#ifndef DLFS_CTL_H
#define DLFS_CTL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

#include "dlfs/dataset.h"
#include "tree.h"
#include "views.h"

#define DLFS_CTL_BASE (UINT64_C(1) << 62)
#define DLFS_CTL_DIR (DLFS_CTL_BASE + 1)
#define DLFS_CTL_INFO (DLFS_CTL_BASE + 2)
#define DLFS_CTL_STATS (DLFS_CTL_BASE + 3)
#define DLFS_CTL_EPOCHS (DLFS_CTL_BASE + 4)
#define DLFS_CTL_METRICS (DLFS_CTL_BASE + 5)
#define DLFS_CTL_NAME ".dlfs"

static inline int dlfs_ctl_is(uint64_t ino)
{
	return ino > DLFS_CTL_BASE;
}

/* A control file that changes all the time (its attributes must not be
 * cached). */
static inline int dlfs_ctl_live(uint64_t ino)
{
	return ino == DLFS_CTL_STATS || ino == DLFS_CTL_METRICS;
}

/* The renderings of the live counters: the files stats and metrics. */
enum dlfs_ctl_fmt { DLFS_CTL_JSON, DLFS_CTL_METRICS_TEXT, DLFS_CTL_FMTS };

/* Render the counters as fmt into a malloc'd buffer of *len bytes (the
 * text ends in a newline). @return 0 or -ENOMEM. */
typedef int (*dlfs_ctl_stats_fn)(void *arg, enum dlfs_ctl_fmt fmt,
				 char **out, size_t *len);

/* One rendering as last served: getattr renders it, reads read it. */
struct dlfs_ctl_snap {
	char *buf;
	size_t len;
	struct timespec time;
};

struct dlfs_ctl {
	const char *name; /* of the control directory at the root (borrowed) */
	struct dlfs_ds *ds;
	struct dlfs_views *views; /* NULL: no epochs directory */
	struct dlfs_tree *tree;   /* the tree views (with views) */
	uid_t uid;
	gid_t gid;
	double timeout; /* for everything that never changes */
	dlfs_ctl_stats_fn stats;
	void *stats_arg;
	dlfs_log_fn log; /* views that fail on damaged data say why; may be NULL */
	void *log_arg;
	char *info_json; /* rendered once */
	size_t info_len;
	pthread_mutex_t lock; /* guards the snapshots */
	struct dlfs_ctl_snap snap[DLFS_CTL_FMTS];
};

int dlfs_ctl_init(struct dlfs_ctl *c, struct dlfs_ds *ds,
		  struct dlfs_views *views, const char *mountpoint, uid_t uid,
		  gid_t gid, double timeout, dlfs_ctl_stats_fn stats,
		  void *stats_arg);
void dlfs_ctl_destroy(struct dlfs_ctl *c);

/* Where a view's failure on damaged data (-EIO) is logged, with what
 * failed: an epoch list the index cannot render. */
void dlfs_ctl_set_log(struct dlfs_ctl *c, dlfs_log_fn log, void *arg);

/* Give the control directory another name than DLFS_CTL_NAME (borrowed:
 * it must outlive c). NULL keeps the default. */
void dlfs_ctl_set_name(struct dlfs_ctl *c, const char *name);

/*
 * Before mounting: name (NULL: DLFS_CTL_NAME) must not be the name of an
 * entry at the dataset's root, which the control directory would hide
 * (and which a readdirplus of the root would then shadow it with).
 * @return 0, or -EEXIST with err saying to use -o ctl_dir, or an index
 * error.
 */
int dlfs_ctl_name_check(struct dlfs_ds *ds, const char *name,
			struct dlfs_err *err);

/* The attributes of a dataset inode as the mount shows them. */
void dlfs_ctl_fill_attr(uid_t uid, gid_t gid, const struct dlfs_inode *in,
			struct stat *st);

/*
 * Look name up in parent, a control directory or the root (where only
 * the control directory's name is ours). @return 0 with *ino, *st and *attr_timeout; -ENOENT;
 * or -ENOTDIR when parent is not a control directory.
 */
int dlfs_ctl_lookup(struct dlfs_ctl *c, struct dlfs_txn *txn, uint64_t parent,
		    const char *name, uint64_t *ino, struct stat *st,
		    double *attr_timeout);

int dlfs_ctl_getattr(struct dlfs_ctl *c, struct dlfs_txn *txn, uint64_t ino,
		     struct stat *st, double *attr_timeout);

/* Called per entry with the offset that resumes after it; returns 1 when
 * it has no room (the entry is not consumed). */
typedef int (*dlfs_ctl_dir_cb)(void *arg, const char *name,
			       const struct stat *st, uint64_t next);
/* List control directory ino from offset off ("." and ".." included).
 * @return 0 or a negative errno (-ENOTDIR for a file). */
int dlfs_ctl_readdir(struct dlfs_ctl *c, struct dlfs_txn *txn, uint64_t ino,
		     uint64_t off, dlfs_ctl_dir_cb cb, void *arg);

/*
 * Read a control file: up to size bytes at off into buf, *got set; or, for
 * a sample, *file_ino set to the dataset file to read instead (and *got
 * untouched). @return 0 or a negative errno (-EISDIR for a directory).
 */
int dlfs_ctl_read(struct dlfs_ctl *c, struct dlfs_txn *txn, uint64_t ino,
		  uint64_t off, size_t size, char *buf, size_t *got,
		  uint64_t *file_ino);

#endif
