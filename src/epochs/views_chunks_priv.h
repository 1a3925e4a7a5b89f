/*
 * The chunk map of the epoch views (views_chunks.c), used by the views'
 * orders (views.c: the chunked mode's runs) and by the planner
 * (views_plan.c: a file's chunks without a lookup).
 *
 * Ownership and threads: a map is built by one thread and immutable
 * after; it may then be read from any thread. It holds no lock and uses
 * nothing of the views.
 */
#ifndef DLFS_VIEWS_CHUNKS_PRIV_H
#define DLFS_VIEWS_CHUNKS_PRIV_H

#include <stdint.h>

#include "dlfs/dataset.h"

/*
 * Where every file's bytes lie, in global chunks, without the index:
 * files are in data order, so a file's first and last chunks grow with
 * it, and two arrays over the chunks give them for every file. Built by
 * one pass over the inodes, once a mount; immutable after.
 */
struct dlfs_chunkmap {
	uint64_t n_chunks;
	uint64_t *first; /* n_chunks + 1: first file whose first chunk >= g */
	uint64_t *last;  /* n_chunks + 1: first file whose last chunk >= g */
	uint8_t *empty;  /* a bit a file: no bytes, so in no chunk */
	int ordered;     /* 0: the index breaks data order (use dlfs_stat) */
};

/* The map of the n_files files from inode first_file of ds (chunk size
 * cs), in one pass over their inodes through txn. @return 0 with *out,
 * -ENOMEM, or the index's error. */
int dlfs_chunkmap_build(struct dlfs_ds *ds, struct dlfs_txn *txn, uint64_t cs,
			uint64_t first_file, uint64_t n_files,
			struct dlfs_chunkmap **out, struct dlfs_err *err);

/* Global chunks [*g0, *g1) of file f (0 .. n_files - 1) from the map:
 * @return 0 when they are known (empty for an empty file), -1 when the
 * map cannot tell (the index breaks data order). */
int dlfs_chunkmap_file(const struct dlfs_chunkmap *m, uint64_t f, uint64_t *g0,
		       uint64_t *g1);

void dlfs_chunkmap_free(struct dlfs_chunkmap *m);

#endif
