/*
 * direct: reads served from the server's tiers without a request, by the
 * rules of src/node/shared/shm.h. The first read of a process maps the
 * three memory files the server offers (MAP, once; a forked child keeps
 * the mappings); the NVMe tier's cache files are asked for once per
 * container (NVFD) and kept, each checked with fstat before a read (an
 * fd closed behind the library's back is dropped, never read).
 *
 * A read is served here when the file's location is in the locations
 * table and its bytes are in a RAM slot, or in NVMe chunks that stay put
 * while they are read by a server that still serves, and the file is
 * known good (its bit in file_ok), or the read is of the whole file and
 * its bytes pass its own checksum (then its bit is set). Anything else,
 * and any doubt, goes to the server: a read here never gives bytes the
 * server would not. Once the server is gone, the same rules serve what
 * the memory holds (the RAM tier's chunks, and whole files that pass
 * their checksum), and the rest fails as any request does (EIO).
 *
 * DLFS_PRELOAD_DIRECT=0 in the environment turns this off (every read a
 * request), for comparison.
 *
 * Thread safety: any thread. A signal handler that interrupts this
 * thread's direct read goes to the server; one that interrupts anything
 * else may read here (no lock, no malloc: the bounce buffer is mmap'd).
 */
#ifndef DLFS_DIRECT_H
#define DLFS_DIRECT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Read the environment. Constructor only. */
void dlfs_direct_init(void);

/* In a forked child: the mappings and the cache fds are the child's too;
 * a mapping another thread was making when the parent forked is made
 * again when needed. */
void dlfs_direct_fork_child(void);

/* (parent, name) from the server's names table (shm.h): no request.
 * @return 0 with *ino and *st, or -1: ask the server. */
struct stat;
int dlfs_direct_lookup(uint64_t parent, const char *name, size_t len,
		       uint64_t *ino, struct stat *st);

/*
 * Up to size bytes of file ino at off into buf. @return the bytes (0 at
 * or past the end), or -1: not here, ask the server (buf may have been
 * written).
 */
ssize_t dlfs_direct_read(uint64_t ino, void *buf, size_t size, uint64_t off);

#endif
