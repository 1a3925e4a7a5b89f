/*
 * state: the library's process-wide state (defined in state.c, a leaf
 * that every module may include; preload.c, the constructor and the fork
 * handlers, fills it and calls the modules): what DLFS_PRELOAD configured, and
 * what the server said in its first HELLO. Written once (the constructor,
 * then the first HELLO under conn.c's lock) and read-only after that, so
 * readers take no lock; dlfs_pl.ready is the release/acquire flag of the
 * HELLO part.
 *
 * Lock order, outermost first. No code holds two of the global locks at
 * once; a per-object lock is held across server requests, which take the
 * others:
 *   1. a DIR stream's lock (dirs.c) or a description's pos_lock (fdtab.h)
 *   2. vcwd_lock, rcwd_lock (cwd.c)
 *   3. pool_lock (dirs.c)
 *   4. the LOOKUP cache's shard locks in index order (nscache.c)
 *   5. list_lock, hello_lock (conn.c)
 *   6. an fd slot's spin lock (fdtab.c), a leaf held for a few stores
 * The fork handlers (preload.c) take 2 to 5 in this order before fork and
 * release them after; the child makes every lock of 1 and 6 new.
 *
 * Everything the library does itself goes through real.h's functions,
 * through calls it does not interpose (socket, connect, send, recv,
 * mprotect) or through syscall(), never through its own wrappers: inside
 * the library a call to mmap or readdir binds to the wrapper, not to
 * libc's.
 */
#ifndef DLFS_STATE_H
#define DLFS_STATE_H

#include <limits.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "vpath.h"

struct dlfs_pl {
	int on; /* DLFS_PRELOAD was set and valid: anything to do at all */
	char prefix[PATH_MAX];
	char sock[sizeof(((struct sockaddr_un *)0)->sun_path)];
	/* This process's pid, set at load and in a forked child: a vfork
	 * child (posix_spawn, subprocess) runs in its parent's memory and
	 * must not change the parent's tables. */
	atomic_int pid;
	/* From the first HELLO; valid once ready is 1. */
	atomic_int ready;
	uint32_t max_io;
	char ctl_name[256];
	uint64_t root_ino;
	struct stat root_st;
	int shm; /* the server shares its tiers (MAP): direct.h */
	struct dlfs_vp_root root; /* the prefix and its length */
};

extern struct dlfs_pl dlfs_pl;

/* Print "dlfs-preload: MSG" on stderr (real write, no stdio, no malloc),
 * MSG then ARG (may be NULL). Async-signal-safe. */
void dlfs_pl_say(const char *msg, const char *arg);

/* The same line made of n parts (NULL parts are skipped), cut at 512
 * bytes. */
void dlfs_pl_say_parts(const char *const *parts, size_t n);

#endif
