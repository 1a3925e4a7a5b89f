/*
 * The index's node-local copy. A node that maps the index from the PFS
 * faults it in a page (or a read-around window) at a time, and a
 * thousand nodes do it a thousand times: the small random reads dlfs
 * exists to remove. Instead the index is read once, in large sequential
 * pieces (from the PFS, or received from a peer), written to node-local
 * storage, checked in full against the dataset's seal (index.sum), and
 * mapped from there.
 *
 * Layout under the cache directory DIR (beside the NVMe tier's files, a
 * public contract in dlfs(1)):
 *   DIR/<dataset id hex>/index     0600, the copy
 *   DIR/<dataset id hex>/index.ok  0600, its stamp: the seal it matched
 *                                  when it was checked in full, then the
 *                                  copy's inode, size, mtime and ctime
 * A later mount trusts a copy whose stamp matches both the dataset's seal
 * and the copy's inode and times (any write to it changes its ctime):
 * O(1), no read of the copy. Any mismatch checks the copy in full again;
 * a copy that fails is removed and made again. Both files are replaced by
 * rename, never written in place, so a mount that maps the old copy keeps
 * it intact.
 *
 * Without a cache directory the copy lives in memory (a memfd), for the
 * life of the mount.
 *
 * The directory must be this user's and private (mode 0700, not a
 * symlink), as the NVMe tier requires; one that is not is not used here
 * (the tier decides what to do with it).
 *
 * A module of the read core (src/core), like reader.h: the daemon, which
 * makes the copy while mounting, includes it from the core's folder; it
 * is not part of the installed libdlfs.
 *
 * Ownership: a struct dlfs_ixcopy owns its file until dlfs_ixcopy_end or
 * dlfs_ixcopy_abort. Paths handed out are malloc'd, the caller's.
 * Thread-safety: none needed; used while mounting, from one thread.
 */
#ifndef DLFS_IXCOPY_H
#define DLFS_IXCOPY_H

#include <stddef.h>
#include <stdint.h>

#include "dlfs/dataset.h"
#include "dlfs/err.h"

struct dlfs_ixcopy;

/*
 * Look for a trusted copy of the index sealed by s in cache_dir. @return
 * 0 with *path, -ENOENT (none), -EUCLEAN (there, but it failed its check:
 * removed, err says why), -EPERM (the directory is not private to this
 * user: not used, err says why), or another -errno.
 */
int dlfs_ixcopy_find(const char *cache_dir, const struct dlfs_seal *s,
		     char **path, struct dlfs_err *err);

/*
 * Start a copy of the index sealed by s: in cache_dir, or in memory when
 * cache_dir is NULL. @return 0 or -errno (as dlfs_ixcopy_find for the
 * directory).
 */
int dlfs_ixcopy_begin(const char *cache_dir, const struct dlfs_seal *s,
		      struct dlfs_ixcopy **out, struct dlfs_err *err);

/* Append the next len bytes of the index. @return 0 or -errno. */
int dlfs_ixcopy_write(struct dlfs_ixcopy *c, const void *buf, size_t len,
		      struct dlfs_err *err);

/*
 * Check what was written against the seal and publish it. Frees c,
 * whatever the result. @return 0 with *path to map and *hold_fd (an fd
 * to close once the index is opened from *path, or -1), -EUCLEAN (the
 * bytes do not match the seal: nothing kept), or -errno.
 */
int dlfs_ixcopy_end(struct dlfs_ixcopy *c, char **path, int *hold_fd,
		    struct dlfs_err *err);

/* Drop an unfinished copy. NULL is ok. */
void dlfs_ixcopy_abort(struct dlfs_ixcopy *c);

/*
 * Copy dataset's index from the PFS, in large sequential reads, into
 * cache_dir (or memory): begin, write, end. *pfs_bytes counts the bytes
 * read. @return as dlfs_ixcopy_end, or -errno of the read with err naming
 * the file and offset.
 */
int dlfs_ixcopy_fetch(const char *dataset, const char *cache_dir,
		      const struct dlfs_seal *s, char **path, int *hold_fd,
		      uint64_t *pfs_bytes, struct dlfs_err *err);

/* The size of the pieces the index is read and sent in. */
#define DLFS_IXCOPY_PIECE (8u << 20)

#endif
