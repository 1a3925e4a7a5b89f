/*
 * Staging: a background thread that fills the NVMe tier ahead of any
 * reader. HOME streams this rank's home chunks (a contiguous range) in
 * order, so the PFS sees large sequential reads; ALL then pulls every
 * other chunk, from its home over MPI when there is one. Chunks already in
 * the tier are skipped, so a restarted job stages only what is missing.
 *
 * Chunks are loaded through the RAM tier, so a reader or a peer asking for
 * the same chunk meanwhile shares the load. Demand goes first: the thread
 * waits while demand loads are running, and
 * lets the tier's writer catch up rather than drop chunks.
 *
 * Thread-safety: start and stop from one thread; the stats from any.
 */
#ifndef DLFS_STAGE_H
#define DLFS_STAGE_H

#include <stdint.h>

#include "cache.h"
#include "fetch.h"

enum dlfs_stage_mode { DLFS_STAGE_NONE, DLFS_STAGE_HOME, DLFS_STAGE_ALL };

struct dlfs_stage_conf {
	enum dlfs_stage_mode mode;
	struct dlfs_fetch *fetch; /* with its NVMe tier */
	struct dlfs_cache *cache; /* to yield to its demand loads */
	uint64_t home_lo, home_hi;  /* this rank's chunks [lo, hi) */
};

struct dlfs_stage;

/* @return 0 (nothing started for NONE) or -errno. */
int dlfs_stage_start(const struct dlfs_stage_conf *conf,
		     struct dlfs_stage **out, struct dlfs_err *err);
/* Stop the thread and free. NULL is ok. */
void dlfs_stage_stop(struct dlfs_stage *s);

/* Chunks and bytes staged so far, and whether the pass is over. */
void dlfs_stage_get(struct dlfs_stage *s, uint64_t *chunks, uint64_t *bytes,
		    int *done);

const char *dlfs_stage_name(enum dlfs_stage_mode m);
int dlfs_stage_parse(const char *s, enum dlfs_stage_mode *m);

#endif
