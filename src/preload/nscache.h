/*
 * nscache: the per-process LOOKUP cache, (parent ino, name) -> (ino,
 * attributes) or "no such name". A pure module (no I/O, no server): ns.c
 * fills it with the server's answers, the unit test with its own.
 *
 * A dataset never changes, so nothing is ever invalidated; what must not
 * be cached (the control directory's names) is never put. An entry keeps
 * only what varies between a dataset's files (ino, and struct
 * dlfs_shm_attr of src/node/shared/shm.h: about 64 bytes and the name); the rest
 * of struct stat is the usual attributes of shm.h, from a template, the
 * dataset root's attributes, as the dlfs server fills them.
 * An answer that differs from that (another server: fakeserve serves a
 * real directory) keeps the other fields too, so a get always gives back
 * the struct stat that was put.
 *
 * The cache holds at most max_bytes (the entries, their names, and the
 * tables of pointers), split evenly between its shards: a shard that
 * would grow past its share is emptied and starts again.
 *
 * Thread safety: NSCACHE_SHARDS shards, each behind its own mutex, held
 * only for the table operation (no call, no I/O; malloc and free). The
 * fork handlers take all of them in index order. After fork the child
 * keeps its copy (it is still true).
 */
#ifndef DLFS_NSCACHE_H
#define DLFS_NSCACHE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#define NSCACHE_SHARDS 64

/* Make the locks and set the budget. Once, before any other call. */
void dlfs_nscache_init(size_t max_bytes);

/* (parent, name) (len <= 255 bytes, not NUL-ended). usual: the template
 * (the root's attributes). @return 0 (*ino, *st filled), -ENOENT (cached
 * as missing), or 1 (not cached). */
int dlfs_nscache_get(uint64_t parent, const char *name, size_t len,
		     const struct stat *usual, uint64_t *ino,
		     struct stat *st);

/* Remember an answer: ino and st, or (st NULL) "no such name". A cache
 * that cannot grow forgets instead. */
void dlfs_nscache_put(uint64_t parent, const char *name, size_t len,
		      const struct stat *usual, uint64_t ino,
		      const struct stat *st);

/* Bytes held now (the entries and the tables), and entries. */
size_t dlfs_nscache_bytes(void);
size_t dlfs_nscache_entries(void);

/* The fork handlers: prepare takes every shard's lock in index order,
 * parent (and child) releases them. */
void dlfs_nscache_fork_prepare(void);
void dlfs_nscache_fork_parent(void);

#endif
