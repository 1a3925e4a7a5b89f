/*
 * Paths of inodes, for the epoch views: the index maps names to inodes,
 * and this table maps directories and files back to their paths, built by
 * one walk of every directory the first time it is needed.
 *
 * Memory: the table keeps its own copy of every name, so that rendering a
 * path never touches the index again (an epoch list of a 10M-file tree
 * would otherwise fault in most of it). Names are kept in directory order,
 * front-coded in blocks of DLFS_PATHS_BLOCK: each name stores only what
 * differs from the one before it, in the middle between their common
 * prefix and common suffix. A file costs 4 bytes of table plus its coded
 * name (a few bytes for names like f00001234.jpg), a directory 12 bytes
 * plus its name and its whole path (kept while all of them take at most
 * 64 MiB: then a file's path is its directory's and its name; else it is
 * walked up name by name).
 * Thread-safety: immutable once built; share it freely.
 */
#ifndef DLFS_PATHS_H
#define DLFS_PATHS_H

#include <stddef.h>
#include <stdint.h>

#include "dlfs/dataset.h"

#define DLFS_PATHS_BLOCK 8

struct dlfs_paths;

/* Walk every directory of the dataset. Each entry's inode record is
 * checked against it (dlfs_stat_entry): an entry that leads to a sound
 * record bound to another name (a damaged entry, format 1.1) is skipped,
 * never taken as that inode's name (dlfs_paths_unbound counts them).
 * @return 0, -ENOMEM, -EOVERFLOW (more than 2^32 - 2 entries), or an
 * index error (err says which). */
int dlfs_paths_build(struct dlfs_txn *txn, const struct dlfs_info *info,
		     struct dlfs_paths **out, struct dlfs_err *err);
/* The same, keeping directories' paths only while they take at most
 * dpath_max bytes in all (dlfs_paths_build: 64 MiB); 0 keeps none. */
int dlfs_paths_build_max(struct dlfs_txn *txn, const struct dlfs_info *info,
			 uint64_t dpath_max, struct dlfs_paths **out,
			 struct dlfs_err *err);
void dlfs_paths_free(struct dlfs_paths *p);

/* The entries the walk skipped because their inode's record is bound to
 * another name, and the error of the first one in *msg (empty if none). */
uint64_t dlfs_paths_unbound(const struct dlfs_paths *p, const char **msg);

/*
 * Write the path of directory or file ino, relative to the root and
 * without a leading '/', into buf (len bytes, NUL-terminated).
 * @return its length, or -ENOENT (not a directory or file, or not reached
 * by the walk), -ENAMETOOLONG (buf too small; the length is then given by
 * dlfs_paths_len).
 */
int dlfs_paths_get(const struct dlfs_paths *p, uint64_t ino, char *buf,
		   size_t len);

/*
 * The paths of files ino[0 .. n - 1], a line each, into buf (cap bytes;
 * *len of them used; not NUL-terminated). Faster than one
 * dlfs_paths_get after another: see paths.c. @return 0, -ENOENT, or
 * -ENAMETOOLONG (buf too small for them all).
 */
int dlfs_paths_lines(const struct dlfs_paths *p, const uint64_t *ino,
		     size_t n, char *buf, size_t cap, size_t *len);

/* The length of that path, or -ENOENT. */
int64_t dlfs_paths_len(const struct dlfs_paths *p, uint64_t ino);

/*
 * The bytes of a list of every file's path, a line each (the sum of
 * their lengths plus one each), or -ENOENT if the walk missed a file.
 */
int64_t dlfs_paths_all_len(const struct dlfs_paths *p);

/*
 * Who may reach ino by its path: the S_IXUSR, S_IXGRP and S_IXOTH bits
 * set in every directory from the root to ino's parent (dlfs has one
 * owner and group for every inode, so a class is who the kernel would
 * check). ino 0 asks for every file at once: the classes that may reach
 * all of them. A file that is not found, or whose parent chain is
 * damaged, gives 0 (root only).
 */
unsigned dlfs_paths_search(const struct dlfs_paths *p, uint64_t ino);

/* The name of ino into buf (DLFS_NAME_MAX + 1 bytes, NUL-terminated).
 * @return its length, or -ENOENT. */
int dlfs_paths_name(const struct dlfs_paths *p, uint64_t ino, char *buf);

/* The directory that lists ino (a file's first name, if it has several),
 * or 0 for the root, a symlink or an inode the walk did not reach. */
uint64_t dlfs_paths_parent(const struct dlfs_paths *p, uint64_t ino);

/* Bytes of memory the table holds. */
size_t dlfs_paths_bytes(const struct dlfs_paths *p);

#endif
