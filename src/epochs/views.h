/*
 * Epoch views: this node's share of epoch E, as a list of paths
 * (/.dlfs/epochs/E/files) and as a directory of samples whose sorted names
 * follow it (/.dlfs/epochs/E/samples/). Reading either makes E the current
 * epoch: the views then give the read core's background reads the
 * chunks its readers need next, in order of first use
 * (dlfs_views_plan_next), following the reader (dlfs_views_note_read).
 *
 * The module keeps what the views need, built on first use: the orders
 * of the most recent epochs, the inode-to-path table, the sizes of the
 * last epochs' lists and the last rendered pieces of them, and (for the
 * chunked mode) the first file of every chunk. Nothing of it exists until
 * a view is first used.
 *
 * Thread-safety: every call is safe from any thread; one mutex guards the
 * caches. A piece of a list is rendered under it, in parts, by the
 * calling thread and up to 3 helper threads (one less than the CPUs the
 * process may use), started at the first list.
 */
#ifndef DLFS_VIEWS_H
#define DLFS_VIEWS_H

#include <stddef.h>
#include <stdint.h>

#include "dlfs/dataset.h"
#include "reader.h"
#include "order.h"
#include "paths.h"

/* Epochs 0 .. DLFS_VIEWS_MAX_EPOCH are addressable. */
#define DLFS_VIEWS_MAX_EPOCH 65535u

struct dlfs_views;

struct dlfs_views_conf {
	struct dlfs_ds *ds;
	enum dlfs_shuffle mode;
	uint64_t seed;
	const char *seed_from;       /* for .dlfs/info (static); may be NULL */
	uint32_t rank, size;
	uint32_t window;             /* chunked: chunks per window */
	struct dlfs_reader *reader;  /* told when the plan changes; may be NULL */
	uint32_t piece;              /* paths a piece of a list renders at
				      * once; 0: 65,536 (tests use fewer) */
};

int dlfs_views_new(const struct dlfs_views_conf *conf, struct dlfs_views **out,
		   struct dlfs_err *err);
void dlfs_views_free(struct dlfs_views *v);

/* This rank's share of epoch e: its length (built on first use). */
int dlfs_views_share_len(struct dlfs_views *v, struct dlfs_txn *txn,
			 uint64_t e, uint64_t *len, struct dlfs_err *err);

/*
 * The inode of the file at position j of this rank's share of epoch e.
 * Also tells the planner that the reader is at j of e when mark is set.
 */
int dlfs_views_sample(struct dlfs_views *v, struct dlfs_txn *txn, uint64_t e,
		      uint64_t j, int mark, uint64_t *ino,
		      struct dlfs_err *err);

/*
 * Name of sample j of epoch e: the position zero-padded to the width of
 * the share's last position, then the file's extension (its name from the
 * last '.', if it has one that is not its first byte). @return its length
 * or a negative errno.
 */
int dlfs_views_sample_name(struct dlfs_views *v, struct dlfs_txn *txn,
			   uint64_t e, uint64_t j, char *buf, size_t len,
			   struct dlfs_err *err);

/*
 * The read bits a view may show for file ino (its index mode), so that a
 * view never lets a caller read what its plain path would refuse: a
 * class keeps its read bit only if it may search every directory above
 * the file. ino 0 gives the bits for a list of every file's path. The
 * kernel checks them (the mount uses default_permissions), also for
 * pages it has cached. @return 0, or an index error.
 */
int dlfs_views_read_mode(struct dlfs_views *v, struct dlfs_txn *txn,
			uint64_t ino, uint32_t mode, uint32_t *out,
			struct dlfs_err *err);

/* Parse a sample name back to its position (checking the extension). */
int dlfs_views_parse_name(struct dlfs_views *v, struct dlfs_txn *txn,
			  uint64_t e, const char *name, uint64_t *j,
			  struct dlfs_err *err);

/*
 * The list of epoch e, one path a line: its size in bytes, and bytes
 * [off, off + size) of it into buf (*got of them; fewer only at its end).
 * Both make e the current epoch. The list is never whole in memory: it is
 * rendered 8,192 paths at a time as it is read, and the last few pieces
 * are kept. Its size takes one pass over the share, unless the share is
 * every file (the walk's sum); a read far ahead renders the pieces before
 * it, to find where it lies.
 */
int dlfs_views_files_size(struct dlfs_views *v, struct dlfs_txn *txn,
			  uint64_t e, uint64_t *size, struct dlfs_err *err);
int dlfs_views_files_read(struct dlfs_views *v, struct dlfs_txn *txn,
			  uint64_t e, uint64_t off, char *buf, size_t size,
			  size_t *got, struct dlfs_err *err);

/*
 * A read of file ino at offset 0 is starting (any path): if it is in the
 * current epoch's share, the reader is there. A dlfs_read_observer_fn
 * (arg is the views).
 */
void dlfs_views_note_read(void *arg, struct dlfs_txn *txn, uint64_t ino);

/*
 * The planner of the read core's background reads (a dlfs_plan_next_fn;
 * arg is the views): the chunks of the current epoch's share in order of
 * first use, from the reader's position on, each once per epoch; with
 * uses, the number of share files in it (one pass over the share per
 * epoch, outside the lock). @return 1 with *g, 0 when nothing is left.
 */
int dlfs_views_plan_next(void *arg, struct dlfs_txn *txn, uint64_t *g,
			 uint32_t *uses);

/*
 * The planner's files (a dlfs_plan_files_fn; arg is the views): the
 * current epoch's share from position from on, and where the reader is.
 */
size_t dlfs_views_plan_files(void *arg, struct dlfs_txn *txn, uint64_t from,
			     uint64_t *ino, size_t max, uint64_t *epoch,
			     uint64_t *reader);

/*
 * The share positions of files ino[0 .. n-1] in epoch e, into j (the
 * same length): UINT64_MAX for one that is not in this rank's share or
 * not a file. One lock for all of them.
 */
int dlfs_views_positions(struct dlfs_views *v, struct dlfs_txn *txn,
			 uint64_t e, const uint64_t *ino, size_t n,
			 uint64_t *j, struct dlfs_err *err);

/* The table of every path (built on first use; immutable, and owned by v
 * until dlfs_views_free). */
int dlfs_views_paths(struct dlfs_views *v, struct dlfs_txn *txn,
		     const struct dlfs_paths **out, struct dlfs_err *err);

/* JSON members (no braces) describing the shuffle: mode, seed, where
 * the seed came from, window, rank and ranks. @return the length, as
 * snprintf. */
int dlfs_views_describe(const struct dlfs_views *v, char *buf, size_t len);

/* The current epoch, or UINT64_MAX before any view was read. */
uint64_t dlfs_views_current(struct dlfs_views *v);

#endif
