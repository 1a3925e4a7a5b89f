/*
 * Building a dataset: dlfs_pack turns directories, tar archives, HDF5
 * files (split into samples) and LMDB environments (one file per key)
 * into NAME.dlfs/ (see dlfs-format(5) and dlfs-pack(1)).
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
 * they are joined. With HDF5 or LMDB sources and procs other than 1 it
 * also forks worker processes (HDF5 serialises threads) and waits for
 * them; call it from a single-threaded process then. The progress and
 * warning callbacks are called from the calling thread only.
 */
#ifndef DLFS_PACK_H
#define DLFS_PACK_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "dlfs/err.h"
#include "dlfs/format.h" /* dlfs_parse_size */

/* What an HDF5 source's samples become (see dlfs-pack(1), INGEST). */
enum dlfs_sample_format {
	DLFS_SAMPLE_NPY, /* one .npy file per sample per dataset */
	DLFS_SAMPLE_H5,  /* one HDF5 file per sample, every dataset in it */
};

/* What chunks are compressed with (dlfs-pack --compress). */
enum dlfs_compress {
	DLFS_COMPRESS_NONE, /* stored as they are: format 1.1 without the
			     * compressed feature */
	DLFS_COMPRESS_ZSTD, /* each chunk a zstd frame, or raw if it does
			     * not shrink by a 32nd and a 4 KiB page */
	DLFS_COMPRESS_AUTO, /* the default: ZSTD with split_hdf5, else NONE
			     * (dlfs_pack_compress) */
};
/* The level --compress zstd uses without one: zstd's default. */
#define DLFS_ZSTD_LEVEL_DEFAULT 3
#define DLFS_ZSTD_LEVEL_MAX 22

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
	enum dlfs_compress compress;
	int compress_level; /* zstd: 1 to DLFS_ZSTD_LEVEL_MAX */
	/*
	 * Index the sources in place (dlfs-pack --in-place): every source
	 * is an uncompressed tar or a zip archive, and OUT holds only the
	 * index and its seal; the archives are the containers, where they
	 * are, and must stay as they are (format.h, IN_PLACE). Files keep
	 * their archives' order: order must be DLFS_ORDER_SORTED (the
	 * default, ignored) or DLFS_ORDER_INPUT; no compress, no split_*.
	 */
	int in_place;

	/*
	 * Ingest (dlfs-pack(1), INGEST). With split_hdf5, a SOURCE that is
	 * an HDF5 file becomes one directory of per-sample files; with
	 * split_lmdb, a SOURCE that is an LMDB environment becomes one
	 * directory with one file per key.
	 */
	int split_hdf5;
	/* Comma-separated dataset paths to split; NULL: the default choice. */
	const char *hdf5_datasets;
	/*
	 * The default choice, npy form: a dataset whose sample is smaller
	 * than this many bytes stays one array of all samples
	 * (TOP/NAME.npy) instead of a file per sample; 0 splits every one.
	 * Default 1024.
	 */
	uint64_t hdf5_split_min;
	enum dlfs_sample_format sample_format;
	int split_lmdb;
	/*
	 * Processes that read ingest sources at once: HDF5's library lock
	 * serialises threads, so dlfs_pack forks this many workers (call it
	 * from a single-threaded process then). 0: one per CPU, at most one
	 * per ingest source; 1: in the calling process, no fork. With
	 * in_place: threads that index archives at once, each reading
	 * whole archives (0: one per CPU, at most one per archive), on
	 * each rank with a comm.
	 */
	unsigned procs;
	/* Several processes packing one dataset together; NULL: alone. */
	const struct dlfs_pack_comm *comm;
	/* What each ingest source became, a line each ("PATH: 60000
	 * samples; split: ..."); may be NULL. */
	dlfs_warn_cb note;
};

/*
 * A group of processes that pack one dataset together (an MPI job; the
 * tool provides it, so libdlfs never links MPI). Ranks split the ingest
 * sources and the containers (with in_place, the archives to index, by
 * bytes); rank 0 scans the other sources, lays out the dataset, writes
 * the index and publishes it. Every rank calls
 * dlfs_pack with the same arguments, and the result is byte-identical to
 * a single process's. Each operation is collective over the ranks named,
 * called in the same order by all of them, from the thread that called
 * dlfs_pack. @return 0 or a negative errno (the pack then fails).
 */
struct dlfs_pack_comm {
	int rank, size;
	void *arg;
	/* buf's len bytes at root go to every rank's buf. */
	int (*bcast)(void *arg, void *buf, size_t len, int root);
	/* len bytes from every rank land in root's out, size * len bytes. */
	int (*gather)(void *arg, const void *in, size_t len, void *out,
		      int root);
	/* One message of len bytes, which the receiver knows in advance. */
	int (*send)(void *arg, const void *buf, size_t len, int dest);
	int (*recv)(void *arg, void *buf, size_t len, int src);
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
 * in any format libarchive reads (tar, compressed or not). With
 * split_hdf5, an HDF5 file becomes a directory of per-sample files; with
 * split_lmdb, an LMDB environment (a directory holding data.mdb, or the
 * file) a directory with a file per key. Directories given by several
 * sources merge; any other path given twice is an error. With a comm,
 * every rank calls it with the same arguments.
 *
 * @return 0, or a negative errno with err naming the path: -ENOENT/-EACCES
 * (source), -EEXIST (out exists without force), -EINVAL (hostile archive
 * member: absolute or with ".."; a duplicate path; a bad HDF5 or LMDB
 * source), -ENOTSUP (an HDF5 type or filter, or an LMDB layout, that
 * cannot be split), -EUCLEAN (a damaged LMDB environment), -EIO,
 * -ENAMETOOLONG, -ENOSPC, -ECANCELED (cancelled).
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
 * What the ingest of sources would produce, without writing anything:
 * for each SOURCE a note (its kind; for an HDF5 file the sample count and
 * the datasets split or kept), then, for HDF5 and LMDB sources, every
 * file with its exact size. Directories and archives get a note only.
 * HDF5 sources are opened and their metadata read, not their samples.
 * @return 0, or a negative errno with err set, as dlfs_pack would fail
 * on the same input (a corrupt file, an unsupported dataset, ...).
 */
int dlfs_pack_dry_run(const char *const *sources, unsigned n_sources,
		      const struct dlfs_pack_opts *opts, dlfs_plan_cb cb,
		      void *arg, struct dlfs_err *err);

/* Parse "npy" or "h5". @return 0 or -EINVAL. */
int dlfs_parse_sample_format(const char *s, enum dlfs_sample_format *f);

/* Parse "zstd" or "zstd:LEVEL" (LEVEL 1 to DLFS_ZSTD_LEVEL_MAX; without
 * it, DLFS_ZSTD_LEVEL_DEFAULT), or "none". @return 0 or -EINVAL. */
int dlfs_parse_compress(const char *s, enum dlfs_compress *c, int *level);

/* The codec o packs with: o->compress, or for DLFS_COMPRESS_AUTO (the
 * default) ZSTD with split_hdf5 and NONE without. */
enum dlfs_compress dlfs_pack_compress(const struct dlfs_pack_opts *o);

/* Parse "sorted|input|size|shuffle[:SEED]". @return 0 or -EINVAL. */
int dlfs_parse_order(const char *s, enum dlfs_order *order, uint64_t *seed);

#endif
