/*
 * Ingest: the sources that become many files. An HDF5 file (with
 * split_hdf5) becomes one directory of per-sample files (h5split.h); an
 * LMDB environment (with split_lmdb) one directory with a file per key
 * (lmdbsrc.h). The directory is named after the source: its file name
 * without the extension (.h5 .hdf5 .hdf .he5 .nc .nc4; .lmdb .mdb; a
 * file named data.mdb takes its directory's name). Not installed.
 *
 * The work happens before the scan, in workers: one process per rank of
 * a dlfs_pack_comm (sources shared out by size, largest first, each to
 * the least loaded rank), or `procs` forked processes taking sources in
 * order from a shared counter (one: the calling process itself). HDF5's
 * library lock makes threads useless for this; processes each have their
 * own library. Worker w writes DIR/ingest-W.spool and DIR/ingest-W.list
 * (sink.h). Each worker takes its sources in increasing order, so the
 * coordinator reads every list front to back as the scan reaches each
 * source (pk_ingest_put, called by pk_scan in source order), and the tree
 * is the same whoever did the work: the dataset depends on neither procs
 * nor the number of ranks.
 *
 * Entries get the source file's mtime and permission bits without the
 * execute bits; their directories the same with x wherever r is set.
 *
 * Ownership: struct pk_ingest owns its list handles; pk_ingest_free
 * releases them (the files go with the temporary directory). pk_classify
 * gives each ingest source a malloc'd top, freed by pk_sources_free.
 * Thread-safety: called from dlfs_pack's thread only.
 */
#ifndef DLFS_PACK_INGEST_H
#define DLFS_PACK_INGEST_H

#include "pack_priv.h"

/*
 * Decide every source's kind (src[i].path set, the rest zero). With
 * split_hdf5, a file with the HDF5 signature is an HDF5 source; with
 * split_lmdb, a directory holding data.mdb, or a file with LMDB's magic,
 * is an LMDB source. @return 0, or a negative errno with err naming the
 * source: -ENOENT/-EACCES, -EINVAL (an HDF5 or LMDB file given without
 * its option; a file named like one that is not; two sources that would
 * become the same directory; a name that cannot be one).
 */
int pk_classify(struct pk_source *src, unsigned n,
		const struct dlfs_pack_opts *o, struct dlfs_err *err);
void pk_sources_free(struct pk_source *src, unsigned n);

/* Does fd (size bytes) hold HDF5's signature, at 0 or after a user block
 * of 512, 1024, ... bytes? */
int pk_hdf5_signature(int fd, uint64_t size);

/* Does name end in an extension HDF5 files are given (.h5, .hdf5, .nc4,
 * ...)? */
int pk_hdf5_name(const char *name);

/* The number of ingest sources among src. */
unsigned pk_ingest_count(const struct pk_source *src, unsigned n);

/*
 * Run this process's share of the ingest into dir. With o->comm, every
 * rank calls it; *out is set on rank 0 only. Sets src[i].ing on ingest
 * sources. @return 0 or a negative errno (this rank's failure; the first
 * failing source's, in source order, among forked workers).
 */
int pk_ingest_run(struct pk_source *src, unsigned n, const char *dir,
		  const struct dlfs_pack_opts *o, struct pk_ingest **out,
		  struct dlfs_err *err);

/* Put the files of ingest source i into t. @return 0 or -errno. */
int pk_ingest_put(struct pk_tree *t, const struct pk_source *s, unsigned i,
		  const struct dlfs_pack_opts *o, struct dlfs_err *err);

/* Remove the workers' files from dir; free ing. NULL is a no-op. */
void pk_ingest_free(struct pk_ingest *ing, int unlink_files);

#endif
