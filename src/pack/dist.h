/*
 * Packing with several processes (struct dlfs_pack_comm, an MPI job in
 * dlfs-pack): the messages rank 0 and the others exchange. This file
 * never sees MPI; the tool's comm carries the bytes. Not installed.
 *
 * The plan: rank 0 classifies the sources and sends the result; every
 * rank ingests its share (ingest.h); rank 0 scans and lays out the whole
 * dataset, then gives each rank a contiguous range of containers,
 * balanced by bytes (rank 0 always has container 0, whose trailer lists
 * the directories and symlinks), with what it needs to write them: the
 * container table, the files in its range (where to read each, where it
 * goes) and the data files to read from. Each rank writes its containers'
 * data, sends back file and chunk checksums, gets the dataset id, writes
 * its containers' trailers and headers, and sends back their sizes and
 * footer checksums. Rank 0 writes the index and publishes. The layout is
 * rank 0's, so the result is byte-identical to a single process's.
 *
 * Every failure goes through pk_agree at the end of each phase, so all
 * ranks leave together, with the first failing rank's message, and rank
 * 0 removes the temporary directory only once the others are done.
 *
 * Ownership: what the receiving side builds (tree entries, layout arrays)
 * belongs to the tree and layout passed in; their usual free functions
 * release it. Thread-safety: the calling thread only.
 */
#ifndef DLFS_PACK_DIST_H
#define DLFS_PACK_DIST_H

#include "index_write.h"
#include "ingest.h"

/*
 * Every rank passes its own result; all get back the first failure (by
 * rank, an interruption counting last) in ret and err. With c NULL,
 * returns ret. @return 0 or that negative errno.
 */
int pk_agree(const struct dlfs_pack_comm *c, int ret, struct dlfs_err *err);

/* Rank 0's kinds, sizes and directory names of the sources, to all. */
int pk_dist_sources(const struct dlfs_pack_comm *c, struct pk_source *src,
		    unsigned n, struct dlfs_err *err);

/* A string (at root: *s; elsewhere *s becomes a malloc'd copy). */
int pk_dist_string(const struct dlfs_pack_comm *c, char **s,
		   struct dlfs_err *err);

/* Containers [share[r], share[r+1]) go to rank r: share has size+1. */
void pk_dist_share(const struct pk_layout *l, int size, uint32_t *share);

/*
 * Rank 0: send every other rank its containers' part of l and t.
 * Others: receive theirs into t and l (empty before). Collective.
 */
int pk_dist_layout(const struct dlfs_pack_comm *c, struct pk_tree *t,
		   struct pk_layout *l, const uint32_t *share,
		   struct dlfs_err *err);

/* Each rank's file checksums and chunk checksums, to rank 0. */
int pk_dist_sums(const struct dlfs_pack_comm *c, struct pk_layout *l,
		 struct pk_chunks *ch, const uint32_t *share,
		 struct dlfs_err *err);

/* Each rank's container sizes and footer checksums, to rank 0. */
int pk_dist_containers(const struct dlfs_pack_comm *c,
		       struct pk_containers *ct, const uint32_t *share,
		       struct dlfs_err *err);

#endif
