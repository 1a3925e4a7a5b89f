/*
 * Splitting one HDF5 source into per-sample files (see h5src.h for what
 * is split and h5image.h for the files of the h5 form). Not installed.
 *
 * Names, under the source's directory TOP: sample i is the zero-padded
 * decimal i, as wide as the largest index (N = 1000 gives 000 to 999),
 * so that name order is sample order. The npy form writes
 * TOP/i/DATASET.npy for each split dataset (a dataset in a group keeps
 * its group path: TOP/i/group/name.npy); the h5 form writes TOP/i.h5.
 * A dataset kept whole for its tiny samples (pk_h5_src_keep_small) is
 * one array of all N samples, TOP/DATASET.npy. TOP/.meta.h5 comes first,
 * then those arrays, then the samples in order.
 *
 * Reading: each split dataset is read in blocks of whole rows (about
 * block_bytes over all datasets, rounded to whole chunks along axis 0
 * when the chunks allow it), one hyperslab per dataset per block, with
 * the file type as the memory type: contiguous data arrives in one large
 * read, chunked data is decompressed once per chunk. In plan mode no
 * sample data is read.
 *
 * Thread-safety: as h5lib.h; the caller has called pk_h5_begin.
 */
#ifndef DLFS_INGEST_H5SPLIT_H
#define DLFS_INGEST_H5SPLIT_H

#include <stdint.h>

#include "dlfs/pack.h"
#include "sink.h"

struct pk_h5_split_opts {
	const char *datasets; /* comma-separated, or NULL for the default */
	enum dlfs_sample_format format;
	uint64_t block_bytes; /* 0: 64 MiB */
	uint64_t whole_below; /* npy form: pk_h5_src_keep_small's below */
};

/*
 * Split the HDF5 file at path into files under top, into sink (whose
 * source the caller has begun). @return 0 or a negative errno with err
 * naming the file, the dataset and, for reads, the rows.
 */
int pk_h5_split(const char *path, const char *top,
		const struct pk_h5_split_opts *o, struct pk_sink *sink,
		struct dlfs_err *err);

#endif
