/*
 * Paths of inodes, for the epoch views: the index maps names to inodes,
 * and this table maps directories and files back to (parent, name), built
 * by one walk of every directory the first time it is needed.
 *
 * Memory: 16 bytes per directory and file; names stay in the index map
 * (valid until the dataset is closed), nothing is copied.
 * Thread-safety: immutable once built; share it freely.
 */
#ifndef DLFS_PATHS_H
#define DLFS_PATHS_H

#include <stddef.h>
#include <stdint.h>

#include "dlfs/dataset.h"

struct dlfs_paths;

/* Walk every directory of the dataset. @return 0, -ENOMEM, or an index
 * error (err says which). */
int dlfs_paths_build(struct dlfs_txn *txn, const struct dlfs_info *info,
		     struct dlfs_paths **out, struct dlfs_err *err);
void dlfs_paths_free(struct dlfs_paths *p);

/*
 * Write the path of directory or file ino, relative to the root and
 * without a leading '/', into buf (len bytes, NUL-terminated).
 * @return its length, or -ENOENT (not a directory or file), -ENAMETOOLONG.
 */
int dlfs_paths_get(const struct dlfs_paths *p, uint64_t ino, char *buf,
		   size_t len);

/*
 * Who may reach ino by its path: the S_IXUSR, S_IXGRP and S_IXOTH bits
 * set in every directory from the root to ino's parent (dlfs has one
 * owner and group for every inode, so a class is who the kernel would
 * check). ino 0 asks for every file at once: the classes that may reach
 * all of them. A file that is not found, or whose parent chain is
 * damaged, gives 0 (root only).
 */
unsigned dlfs_paths_search(const struct dlfs_paths *p, uint64_t ino);

/* The name (not NUL-terminated) of ino, or NULL. */
const char *dlfs_paths_name(const struct dlfs_paths *p, uint64_t ino,
			    size_t *len);

#endif
