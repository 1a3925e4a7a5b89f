/*
 * icept: what the exported wrappers (intercept_*.c, stdio.c) share: the
 * question "is this path ours?", and the calls on a dataset fd, each the
 * library's own version of one libc call. They set errno as the kernel
 * would for the same call on a read-only filesystem, and return what
 * libc's call would; a call that succeeds leaves errno alone.
 *
 * Ownership: a struct dlfs_file comes with a reference (dlfs_fd_get);
 * the caller puts it. dlfs_vp_res is the caller's (4 KiB: a wrapper has
 * one on its stack, a helper that nests mallocs it).
 *
 * Thread safety: all of them may be called from any thread at once. The
 * locks they take are the description's pos_lock (read, readv, lseek,
 * across the server round trip) and, through ns.c and conn.c, the cache's
 * and the connections' (state.h has the order). In a vfork child
 * (dlfs_own_memory says no) the wrappers change none of the parent's
 * tables: no fd is added or forgotten, no cwd set.
 */
#ifndef DLFS_ICEPT_H
#define DLFS_ICEPT_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "fdtab.h"
#include "vpath.h"

/* An interposed function: exported (everything else is hidden). */
#define DLFS_EXPORT __attribute__((visibility("default")))

/* A second name for an interposed function whose type is the same (open64
 * for open: on x86-64 the 64-bit forms are the same calls). */
#define DLFS_ALIAS(name) __attribute__((alias(#name), visibility("default")))

/* How a wrapper fails: errno, and -1. */
static inline int dlfs_fail(int err)
{
	errno = err;
	return -1;
}

/* Is the library on at all (DLFS_PRELOAD set and valid)? */
int dlfs_on(void);

/*
 * Resolve (dirfd, path) for a call: relative paths against our directory
 * fds and the virtual cwd. nofollow: the last component's symlink is the
 * answer. @return 0 and res->kind (PASS: call libc with the caller's
 * arguments; REAL: call libc with res->path, absolute; OURS), or -errno.
 */
int dlfs_classify(int dirfd, const char *path, int nofollow,
		  struct dlfs_vp_res *res);

/* dlfs_classify of the directory that would hold path's last component
 * (for calls that create it). @return as dlfs_classify. */
int dlfs_parent_classify(int dirfd, const char *path,
			 struct dlfs_vp_res *res);

/* Is that directory ours? @return 1 if it is, 0 if not or on any error. */
int dlfs_parent_ours(int dirfd, const char *path);

/* A new fd on the node res names (OURS), opened with flags (read-only;
 * the caller has refused the others). @return the fd, or -1 and errno. */
int dlfs_open_node(const struct dlfs_vp_res *res, int flags);

/* The library's calls on one of our descriptions. @return as libc's;
 * errno set on failure. */
ssize_t dlfs_file_pread(struct dlfs_file *f, void *buf, size_t n, off_t off);
ssize_t dlfs_file_read(struct dlfs_file *f, void *buf, size_t n);
off_t dlfs_file_lseek(struct dlfs_file *f, off_t off, int whence);
int dlfs_file_stat(struct dlfs_file *f, struct stat *st);

/* Is this the process the tables belong to, not a vfork child sharing
 * its parent's memory? One getpid syscall: asked only before a change to
 * the fd table. */
int dlfs_own_memory(void);

/* close(fd) for any fd: forget it if ours, then the real close. */
int dlfs_close(int fd);

#endif
