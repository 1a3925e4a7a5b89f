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
#ifndef DLFS_INGEST_INGEST_H
#define DLFS_INGEST_INGEST_H

#include <stddef.h>
#include <stdint.h>

#include "dlfs/err.h"
#include "dlfs/pack.h"

/* A source as dlfs_pack is given it, and what pk_classify makes of it. */
enum pk_src_kind {
	PK_SRC_DIR,
	PK_SRC_ARCHIVE,
	PK_SRC_HDF5,      /* split into samples (ingest.h) */
	PK_SRC_LMDB,      /* an environment directory: one file per key */
	PK_SRC_LMDB_FILE, /* the same, as a single file (MDB_NOSUBDIR) */
};

struct pk_ingest;

struct pk_source {
	const char *path;
	enum pk_src_kind kind;
	uint64_t size;          /* ingest sources: bytes, to share the work */
	char *top;              /* ingest sources: the directory they become */
	struct pk_ingest *ing;  /* ingest sources: where their files are */
};

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

/* An entry of an ingest source, as pk_ingest_put gives it. */
struct pk_ingest_entry {
	const char *path;  /* path[0..len), not NUL-terminated */
	size_t len;
	uint32_t mode;     /* S_IFDIR or S_IFREG, and permission bits */
	int64_t sec;       /* mtime */
	uint32_t nsec;
	uint64_t size, off; /* a file: its bytes, at off in data file data */
	uint32_t data;
	unsigned src;      /* the source's index */
	const char *where; /* the source (and file), for messages */
};

/*
 * How the packer takes the entries: the one interface from ingest to the
 * packer. data names a file the bytes lie in (a worker's spool, or the
 * source itself) and gives its number, the same for the same path; put
 * takes an entry, directories before what they hold. Both return 0 or a
 * negative errno with err set.
 */
struct pk_ingest_to {
	void *arg;
	int (*data)(void *arg, const char *path, uint32_t *idx,
		    struct dlfs_err *err);
	int (*put)(void *arg, const struct pk_ingest_entry *e,
		   struct dlfs_err *err);
};

/* Give the entries of ingest source i to to, in their order.
 * @return 0 or -errno. */
int pk_ingest_put(const struct pk_ingest_to *to, const struct pk_source *s,
		  unsigned i, const struct dlfs_pack_opts *o,
		  struct dlfs_err *err);

/* What the ingest would make of the classified sources (dlfs_pack_dry_run):
 * a note for each source, and each ingest source's files, to cb. Nothing
 * is written. @return 0 or -errno. */
int pk_ingest_plan(const struct pk_source *src, unsigned n,
		   const struct dlfs_pack_opts *o, dlfs_plan_cb cb, void *arg,
		   struct dlfs_err *err);

/* Remove the workers' files from dir; free ing. NULL is a no-op. */
void pk_ingest_free(struct pk_ingest *ing, int unlink_files);

#endif
