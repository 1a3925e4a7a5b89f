/*
 * The tree view of an epoch (/.dlfs/epochs/E/tree/): the dataset's
 * directories, each holding the files of this rank's share of epoch E
 * that it lists, renamed by their share position as samples/ names them.
 * A file keeps its directory, so a loader that labels a sample by its
 * directory (torchvision's ImageFolder) reads the epoch with its labels,
 * and sorted names in a directory follow the order. Every directory of
 * the dataset is there, also one with no file of the share, so that
 * classes number the same on every node. A file with several names is
 * under its first (the path table's) directory only.
 *
 * A directory's listing (its subdirectories, then its samples in share
 * order) is built when first asked for: one pass over its index entries,
 * a sort of its files' positions. The last DLFS_TREE_KEEP listings are
 * kept, so a listing read in many pieces is built once.
 *
 * Thread-safety: every call is safe from any thread; one mutex guards
 * the listings (a listing is built under it).
 */
#ifndef DLFS_TREE_H
#define DLFS_TREE_H

#include <stdint.h>

#include "dlfs/dataset.h"
#include "dlfs/format.h"
#include "views.h"

#define DLFS_TREE_KEEP 8

struct dlfs_tree;

struct dlfs_tree_ent {
	int dir;      /* a subdirectory: ino and name; else a sample: j */
	uint64_t ino; /* the dataset directory */
	uint64_t j;   /* the sample's share position */
	char name[DLFS_NAME_MAX + 1];
};

/* A tree view over views (borrowed: it must outlive the tree).
 * @return 0 or -ENOMEM. */
int dlfs_tree_new(struct dlfs_views *views, struct dlfs_tree **out);
void dlfs_tree_free(struct dlfs_tree *t);

/*
 * Entry i of directory d's view in epoch e: its subdirectories in index
 * order, then its samples in share order. @return 0 with *out, 1 past
 * the last entry, -ENOTDIR (d is no directory), or an index error (err).
 */
int dlfs_tree_entry(struct dlfs_tree *t, struct dlfs_txn *txn, uint64_t e,
		    uint64_t d, uint64_t i, struct dlfs_tree_ent *out,
		    struct dlfs_err *err);

/* Sample j of epoch e is in directory d's view: 0, or -ENOENT. */
int dlfs_tree_holds(struct dlfs_tree *t, struct dlfs_txn *txn, uint64_t e,
		    uint64_t d, uint64_t j, struct dlfs_err *err);

/* The directory above directory d (d > the root), into *parent.
 * @return 0 or -ENOENT. */
int dlfs_tree_parent(struct dlfs_tree *t, struct dlfs_txn *txn, uint64_t d,
		     uint64_t *parent, struct dlfs_err *err);

#endif
