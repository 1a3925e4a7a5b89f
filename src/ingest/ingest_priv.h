/*
 * Inside the ingest (not the packer's view, which is shared/ingest.h):
 * what its files share. classify.c decides the sources' kinds,
 * workers.c runs the workers that turn ingest sources into spools and
 * lists, put.c (the coordinator) gives their entries to the packer, and
 * plan.c is the dry run. Not installed. Called from dlfs_pack's thread
 * only (a worker is its own process).
 */
#ifndef DLFS_INGEST_PRIV_H
#define DLFS_INGEST_PRIV_H

#include <stdio.h>

#include "ingest.h"
#include "sink.h"

/* What the coordinator keeps of a run (workers.c makes it, put.c reads
 * and frees it): which worker's list holds each source, and the lists
 * as they are read. */
struct pk_ingest {
	const char *dir;
	unsigned nw;
	int32_t *owner;    /* per source index; -1 for the others */
	FILE **lists;      /* per worker, opened when first needed */
	uint32_t *spool;   /* per worker: its data index in the tree, or 0 */
	char *buf;
	size_t cap;
};

/* Whether source s is one the workers ingest (HDF5, LMDB). */
static inline int pk_src_ingested(const struct pk_source *s)
{
	return s->kind == PK_SRC_HDF5 || s->kind == PK_SRC_LMDB ||
	       s->kind == PK_SRC_LMDB_FILE;
}

/*
 * Ingest source s (number i) into sink: its record, then its entries
 * (an HDF5 file split, or an LMDB environment's keys), then the sink's
 * end. A worker's sink writes them; the dry run's lists them.
 * @return 0 or a negative errno with err naming the source.
 */
int pk_ingest_one(const struct pk_source *s, unsigned i,
		  const struct dlfs_pack_opts *o, struct pk_sink *sink,
		  struct dlfs_err *err);

#endif
