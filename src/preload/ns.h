/*
 * ns: the dataset's namespace as the library sees it: LOOKUP, GETATTR,
 * READLINK, READDIR and READ over conn.c, with a per-process cache of
 * LOOKUP answers, (parent ino, name) -> (ino, stat) or "no such name".
 * A dataset never changes, so the cache is never invalidated; the control
 * directory's files do (/.dlfs/stats grows), so nothing the server flags
 * volatile (DLFS_WIRE_VOLATILE: the control directory and what is in it)
 * is cached, nor any answer about a name in a volatile directory, and
 * the attributes of what a path walk resolved to are asked again each
 * time when it is volatile. The flag is the server's alone: the library
 * carries it (struct dlfs_vp_res, dlfs_vp_base, struct dlfs_file's vol)
 * and never decides it by name.
 *
 * The cache (nscache.h) is sharded, one mutex per shard, taken only by
 * path calls; reads take no lock here. It holds at most NS_MAX_BYTES
 * (64 MiB) per process: a full shard is emptied and starts again.
 * Thread-safe; after fork the child keeps its copy (it is still true).
 *
 * Every function returns 0 (or a length) or a negative errno; -EIO when
 * the server is gone.
 */
#ifndef DLFS_NS_H
#define DLFS_NS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>

#include "vpath.h"

/* Make the cache. Constructor only. */
void dlfs_ns_init(void);

/* The fork handlers (preload.c calls them in the lock order): prepare
 * takes the cache's shard locks; parent releases them, and so does the
 * child (the cache stays true in it). */
void dlfs_ns_fork_prepare(void);
void dlfs_ns_fork_parent(void);

/* The walk's callbacks (ctx unused). */
extern const struct dlfs_vp_ops dlfs_ns_ops;

/* Resolve path as vpath does. base may be NULL. The server is asked (and
 * connected to) only when the walk reaches the prefix: a path that does
 * not is answered whether or not there is a server. */
int dlfs_ns_resolve(const struct dlfs_vp_base *base, const char *path,
		    int flags, struct dlfs_vp_res *res);

/* LOOKUP name in parent. vol: the server said parent is volatile (then
 * neither the cache nor the shared names table is asked, and the answer
 * is not cached). *ent_vol: the server's flag on the answer (0 for an
 * error). */
int dlfs_ns_lookup(uint64_t parent, int vol, const char *name, size_t len,
		   uint64_t *ino, struct stat *st, int *ent_vol);
int dlfs_ns_getattr(uint64_t ino, struct stat *st);
/* @return the target's length (not NUL-ended, at most size) or -errno. */
long dlfs_ns_readlink(uint64_t ino, char *buf, size_t size);

/* Up to size bytes of ino at off, asking again after a short reply
 * until size or the end. @return bytes read or -errno. */
ssize_t dlfs_ns_read(uint64_t ino, void *buf, size_t size, uint64_t off);

/* STATFS: the dataset's statvfs, as the mount's. */
int dlfs_ns_statfs(struct statvfs *sv);

/* GETXATTR, LISTXATTR: the value (the NUL-ended names) into buf, or with
 * size 0 only its length. @return the length, or -ENODATA, -ERANGE, ... */
long dlfs_ns_getxattr(uint64_t ino, const char *name, void *buf, size_t size);
long dlfs_ns_listxattr(uint64_t ino, char *buf, size_t size);

/* One READDIR: entries after cookie into buf (cap bytes).
 * @return 0 and *count entries (0: the end), *len bytes; or -errno. */
int dlfs_ns_readdir(uint64_t ino, uint64_t cookie, void *buf, size_t cap,
		    uint32_t *count, uint64_t *len);

#endif
