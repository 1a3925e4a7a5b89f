/*
 * Whole-dataset operations for dlfs-inspect: verify and extract.
 *
 * Both read every container front to back in large sequential reads, and
 * walk the files in inode order, which is layout order.
 *
 * Thread-safety: each call uses its own transaction and buffers; several
 * may run at once on one dlfs_ds.
 */
#ifndef DLFS_CHECK_H
#define DLFS_CHECK_H

#include <stdint.h>

#include "dlfs/dataset.h"

struct dlfs_verify_report {
	uint64_t containers, chunks, files;
	uint64_t bytes; /* file content checked */
	uint64_t bad_containers; /* missing, truncated, bad header/trailer */
	uint64_t bad_chunks;
	uint64_t bad_files;
	uint64_t bad_names; /* directory entries that lead to an inode whose
			     * record is another name's (format 1.1) */
	int sealed;         /* the dataset has an index seal (index.sum) */
	int bad_index;      /* the index does not match its seal, or the
			     * seal is damaged */
};

/*
 * Called once for each problem found. path is the damaged file's path (or
 * the container's file name for damage outside any file); msg explains.
 */
typedef void (*dlfs_verify_cb)(void *arg, const char *path, const char *msg);

/*
 * Check the index against its seal (index.sum) when it has one, then
 * every container (header, footer, trailer, size), every chunk checksum
 * and every file checksum, and (format 1.1) that every directory entry
 * leads to an inode record bound to it. Damage is reported through cb, not as
 * an error. @return 0 when the walk completed (look at the report), or a
 * negative errno if it could not run (index unreadable, out of memory).
 */
int dlfs_verify(struct dlfs_ds *ds, dlfs_verify_cb cb, void *arg,
		struct dlfs_verify_report *rep, struct dlfs_err *err);

/*
 * Recreate the tree under dir, which must not exist or be an empty
 * directory: directories, files, symlinks, with modes and mtimes. The
 * tree is listed first (directories and symlinks are made then), then
 * the files are written in the order they lie in the containers, each
 * chunk read and decompressed once, as dlfs_verify reads them; file
 * contents are checked against their checksums as they are written.
 * Memory: a chunk or two, and 24 bytes per file and directory.
 * @return 0, -EEXIST (dir not empty), -EIO (a file's checksum fails,
 * or its bytes lie in a chunk past the cut of a container cut short;
 * err names it), -EUCLEAN (a damaged index), -errno.
 */
int dlfs_extract(struct dlfs_ds *ds, const char *dir, struct dlfs_err *err);

/* How far an extract is. While listing, the totals are what was listed
 * so far and nothing is written yet. */
struct dlfs_extract_progress {
	uint64_t files, files_total; /* regular files written, to write */
	uint64_t bytes, bytes_total; /* their content bytes */
	int listing;                 /* 1 while the tree is being listed */
};
/* Called from the extracting thread: every few thousand files while
 * listing, after each chunk's files, and once at the end (all written).
 * It may be called often: rate-limit what it draws. */
typedef void (*dlfs_extract_progress_cb)(
	void *arg, const struct dlfs_extract_progress *p);

/* dlfs_extract, telling cb (NULL: no one) how far it is. */
int dlfs_extract_watch(struct dlfs_ds *ds, const char *dir,
		       dlfs_extract_progress_cb cb, void *arg,
		       struct dlfs_err *err);

#endif
