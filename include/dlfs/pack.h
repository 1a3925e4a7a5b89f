/*
 * Building a dataset: dlfs_pack turns directories and tar archives into
 * NAME.dlfs/ (see dlfs-format(5)).
 *
 * The output is published atomically: everything is written under a
 * temporary name in the same parent directory, fsynced, then renamed. On
 * any failure, or when *opts->cancel becomes non-zero, the temporary
 * directory is removed and OUT does not appear.
 *
 * The output is a pure function of the inputs' paths, modes, mtimes,
 * contents and the layout options: identical inputs give byte-identical
 * datasets. The dataset id is an XXH3-128 over that content.
 *
 * Thread-safety: dlfs_pack runs its own reader threads and returns when
 * they are joined. The progress callback is called from the calling
 * thread only.
 */
#ifndef DLFS_PACK_H
#define DLFS_PACK_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "dlfs/err.h"

/* What an HDF5 source's samples become (see dlfs-pack(1), INGEST). */
enum dlfs_sample_format {
	DLFS_SAMPLE_NPY, /* one .npy file per sample per dataset */
	DLFS_SAMPLE_H5,  /* one HDF5 file per sample, every dataset in it */
};

enum dlfs_order {
	DLFS_ORDER_SORTED,  /* by path, component by component */
	DLFS_ORDER_INPUT,   /* sources in order; tar members in archive order */
	DLFS_ORDER_SIZE,    /* by size ascending, then by path */
	DLFS_ORDER_SHUFFLE, /* a seeded, reproducible shuffle */
};

struct dlfs_pack_progress {
	uint64_t files_done, files_total;
	uint64_t bytes_done, bytes_total;
	const char *phase; /* "scan", "pack", "index", "sync" */
};

/*
 * Called for warnings (skipped special files, unreadable files under
 * skip_errors). msg has no newline.
 */
typedef void (*dlfs_warn_cb)(void *arg, const char *msg);
typedef void (*dlfs_progress_cb)(void *arg,
				 const struct dlfs_pack_progress *p);

struct dlfs_pack_opts {
	uint64_t chunk_size;     /* multiple of 4096; default 4 MiB */
	uint64_t container_size; /* >= chunk_size; default 4 GiB */
	uint64_t align;          /* power of two <= chunk_size; default 1 */
	enum dlfs_order order;
	uint64_t seed;           /* for DLFS_ORDER_SHUFFLE */
	unsigned threads;        /* reader pool size; default 8 */
	int force;               /* replace an existing OUT */
	int skip_errors;         /* unreadable files: warn and leave out */
	volatile sig_atomic_t *cancel; /* may be NULL */
	dlfs_warn_cb warn;
	dlfs_progress_cb progress;
	void *cb_arg;
	const char *creator; /* recorded in the index; may be NULL */

};

/* Fill opts with the defaults above. */
void dlfs_pack_opts_init(struct dlfs_pack_opts *opts);

/*
 * Check opts for consistency. @return 0 or -EINVAL with a message naming
 * the bad option.
 */
int dlfs_pack_opts_check(const struct dlfs_pack_opts *opts,
			 struct dlfs_err *err);

/*
 * Pack sources[0..n_sources) into out. A source that is a directory has
 * its contents placed at the root; a regular file is read as an archive
 * in any format libarchive reads (tar, compressed or not). Directories
 * given by several sources merge; any other path given twice is an error.
 *
 * @return 0, or a negative errno with err naming the path: -ENOENT/-EACCES
 * (source), -EEXIST (out exists without force), -EINVAL (hostile archive
 * member: absolute or with ".."; a duplicate path), -ENAMETOOLONG,
 * -ENOSPC, -ECANCELED (cancelled).
 */
int dlfs_pack(const char *const *sources, unsigned n_sources, const char *out,
	      const struct dlfs_pack_opts *opts, struct dlfs_err *err);

/* One line of dlfs_pack_dry_run's listing. */
struct dlfs_plan_item {
	const char *source; /* the SOURCE it comes from */
	const char *path;   /* a file the pack would write; NULL for a note */
	uint64_t size;      /* its size in bytes */
	const char *note;   /* when path is NULL: what SOURCE is or holds */
};
/* @return 0 to go on, or a negative errno to stop the listing with. */
typedef int (*dlfs_plan_cb)(void *arg, const struct dlfs_plan_item *it);

/*
 * Parse a size such as "4096", "64K", "4M", "1G", "2T" (binary units, an
 * optional trailing "iB" or "B"). @return 0 or -EINVAL.
 */
int dlfs_parse_size(const char *s, uint64_t *out);

/* Parse "sorted|input|size|shuffle[:SEED]". @return 0 or -EINVAL. */
int dlfs_parse_order(const char *s, enum dlfs_order *order, uint64_t *seed);

#endif
