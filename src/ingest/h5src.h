/*
 * An HDF5 source opened for splitting: its datasets found, the ones to
 * split chosen and checked, the sample count N. Not installed.
 *
 * Which datasets are split: those named (--split-hdf5=LIST), which must
 * all exist, have at least one dimension, and agree on their first
 * dimension N; by default, N is the first dimension of the file's
 * largest dataset (by element count times element size) and every
 * dataset whose first dimension is N is split. Each split dataset must
 * have a type numpy can hold (h5type.h) and filters this libhdf5 can
 * decode. Everything else is kept whole in the source's .meta.h5
 * (h5image.h). pk_h5_src_keep_small may then keep tiny ones whole.
 *
 * Datasets are found through hard links, in name order, depth first
 * (H5Lvisit); a dataset reachable by several names is split once, under
 * the first.
 *
 * Ownership: pk_h5_src owns its HDF5 ids and strings; pk_h5_src_close
 * releases them. Thread-safety: as h5lib.h.
 */
#ifndef DLFS_INGEST_H5SRC_H
#define DLFS_INGEST_H5SRC_H

#include <hdf5.h>
#include <stdint.h>

#include "dlfs/err.h"
#include "h5type.h"

struct pk_h5_dset {
	char *name;         /* its path in the file, without the leading '/' */
	hid_t id, ftype;    /* the open dataset; a transient copy of its type */
	int rank;
	hsize_t dims[H5S_MAX_RANK];
	struct pk_npy_type np;
	uint64_t row_bytes; /* one sample */
	hsize_t chunk0;     /* rows per chunk; 0 when not chunked */
	char layout[160];   /* "contiguous", "chunked (8, 64), gzip", ... */
	uint64_t addr;      /* object address, to recognise it by */
	int split;
	int whole;          /* one sample each, kept as one array (below) */
};

struct pk_h5_src {
	const char *path;
	hid_t fid;
	uint64_t n;      /* samples */
	unsigned width;  /* digits of a sample index: those of n - 1 */
	struct pk_h5_dset *d; /* every dataset found, in visit order */
	unsigned nd, nsplit, nwhole;
	int big;         /* the default choice's largest dataset; -1: named */
};

/*
 * Open path and choose what to split. names is NULL (the default) or a
 * comma-separated list. @return 0, or a negative errno with err naming
 * the file and the dataset: -EINVAL (not HDF5, damaged, no dataset to
 * split, a named one missing or a group, ragged first dimensions),
 * -ENOTSUP (a type or filter that cannot be split), -ENOMEM, -EIO.
 * Call pk_h5_src_close afterwards in every case.
 */
int pk_h5_src_open(struct pk_h5_src *s, const char *path, const char *names,
		   struct dlfs_err *err);
void pk_h5_src_close(struct pk_h5_src *s);

/*
 * The default choice, npy form: a split dataset whose sample is smaller
 * than below bytes (an 8-byte label would become a 136-byte file) is
 * kept whole instead, as one array of all N samples (whole = 1, split =
 * 0), unless it is the largest, which defines the samples, or its first
 * name component could be a sample's directory (all digits, width long).
 * Does nothing for a named choice or below = 0.
 */
void pk_h5_src_keep_small(struct pk_h5_src *s, uint64_t below);

/* A one-line description for notes: "N samples; split: ...". */
int pk_h5_src_describe(const struct pk_h5_src *s, char **out,
		       struct dlfs_err *err);

#endif
