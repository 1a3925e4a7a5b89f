/*
 * The sources into the tree (scan.c): directories and archives read
 * here (each kind in its file: scan_kind.h), HDF5 and LMDB sources from
 * the ingest's entries (ingest.h). Not
 * installed. Called from dlfs_pack's thread only.
 */
#ifndef DLFS_PACK_SCAN_H
#define DLFS_PACK_SCAN_H

#include "ingest.h"
#include "tree.h"

/*
 * Read the sources into t. Archive members' bytes are copied to a spool
 * file at spool_path (created only if an archive is met). @return 0 or a
 * negative errno with err naming the path.
 */
int pk_scan(struct pk_tree *t, const struct pk_source *src, unsigned n_src,
	    const char *spool_path, const struct dlfs_pack_opts *opts,
	    struct dlfs_err *err);

#endif
