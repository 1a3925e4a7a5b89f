/*
 * The epoch views' insides (views.h), shared by their files: views.c
 * (the views, the orders kept, samples and positions), views_list.c
 * (the files lists, rendered in pieces) and views_plan.c (the planner
 * that follows the reader). Under them all, views_chunks.c (the chunk
 * map), which knows nothing of the views.
 *
 * Lock order: v->mu is the views' one lock and guards every cache below
 * it; a caller of a function here holds it unless it says otherwise.
 * The read core is told of a new plan (dlfs_reader_replan) only after mu
 * is dropped.
 */
#ifndef DLFS_VIEWS_PRIV_H
#define DLFS_VIEWS_PRIV_H

#include <pthread.h>
#include <stdatomic.h>

#include "split.h"
#include "views.h"
#include "views_chunks_priv.h"

#define ORDERS 4 /* epochs whose orders are kept */
/* Epochs whose list sizes and piece offsets are kept (a few KiB each):
 * a list whose slot was taken starts again from its first piece, so
 * readers of more epochs at once than this would render pieces again
 * and again. */
#define LISTS 16
#define PIECES 4 /* rendered pieces kept */

/* A list is rendered v->piece_n paths at a time, when read: its pieces'
 * offsets are known up to known (off[0 .. known] are set). */
struct list {
	uint64_t epoch; /* UINT64_MAX: empty */
	uint64_t size, n, pieces, known;
	uint64_t *off; /* pieces + 1 */
};

struct piece {
	struct list *list; /* NULL: empty */
	uint64_t k, tick;
	char *data;
	size_t len, cap;
};

/* Part of a piece as one thread renders it. */
struct part {
	uint64_t *ino; /* its files: room for a piece */
	char *data;
	size_t len, cap;
	int ret; /* 0, -ENOENT (a file has no path), -ENAMETOOLONG (past the
		  * limit), -ENOMEM */
};

struct dlfs_views {
	struct dlfs_views_conf conf;
	const struct dlfs_info *info;
	uint64_t n_files, first_file, cs;

	pthread_mutex_t mu; /* guards everything below */
	struct dlfs_epoch *orders[ORDERS];
	unsigned order_hand;
	struct dlfs_paths *paths;
	struct dlfs_chunkmap *cmap; /* built once: by the planner, or chunked */
	int cmap_failed;            /* the planner could not build it */
	struct list lists[LISTS];
	unsigned list_hand;
	struct piece piece[PIECES];
	uint64_t piece_tick;
	/* Rendering a piece: split between the caller and helper threads,
	 * part i of it into part[i] (split.h). */
	struct dlfs_split *split;
	struct part *part; /* dlfs_split_max_parts of them */
	uint64_t piece_n;  /* paths a piece */
	/* The planner (plan_next), which follows the reader. */
	uint64_t plan_epoch;         /* UINT64_MAX: nothing planned */
	uint64_t plan_pos;           /* next share position to look at */
	uint64_t plan_g, plan_g_end; /* chunks of the last file still to give */
	uint64_t reader_pos;         /* share position the reader reached */
	uint8_t *emitted;            /* n_chunks bits: given this epoch */
	uint32_t *uses;              /* n_chunks: share files per chunk */
	uint64_t uses_epoch;

	_Atomic uint64_t current;
};

/* The conf of this rank's orders (caller holds mu). */
void dlfs_views_order_conf(const struct dlfs_views *v,
			   struct dlfs_epoch_conf *oc);

/* The order of epoch e, built or kept (caller holds mu). @return 0 with
 * *out, or -errno with err saying why. */
int dlfs_views_order_of(struct dlfs_views *v, struct dlfs_txn *txn, uint64_t e,
			struct dlfs_epoch **out, struct dlfs_err *err);

/* The inode-to-path table, built on first use (caller holds mu). */
int dlfs_views_paths_of(struct dlfs_views *v, struct dlfs_txn *txn,
			struct dlfs_err *err);

/* Make e the current epoch (caller holds mu). @return 1 if it changed. */
int dlfs_views_set_current(struct dlfs_views *v, uint64_t e);

#endif
