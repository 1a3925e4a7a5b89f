/*
 * fdtab: the dataset fds. A dataset fd is a real kernel fd, an unconnected
 * AF_UNIX socket (a unique inode, on which a read or mmap this library
 * did not intercept fails with ENOTCONN or ENODEV instead of returning
 * wrong bytes), so close and dup by other code, O_CLOEXEC and fork behave
 * as they do for any fd. The table maps the fd number to its open file
 * description (struct dlfs_file: node, offset, flags), which dup'd fds
 * share as the kernel's do.
 *
 * Each entry remembers its socket's (st_dev, st_ino); dlfs_fd_get checks
 * them with a real fstat before it serves the fd, so an fd that was
 * closed behind the library's back (by a raw syscall, or by glibc
 * internally) and reused by the kernel for another file is dropped from
 * the table and never served.
 *
 * Thread safety: the table is two levels of pages that are never freed; looking
 * up an fd that is not ours is two loads and no lock. An entry that is ours is
 * read under its own spin lock (a few instructions); a signal handler that
 * interrupts its own thread inside that lock reads the entry without it. No
 * malloc on the lookup path. A vfork child, which runs in its parent's memory,
 * never drops an entry (see dlfs_fd_init); it must not add one either (the
 * callers check). After fork the child has a copy of the table and of every
 * description (offsets are then per-process: unlike the kernel's, a description
 * is not shared across fork).
 */
#ifndef DLFS_FDTAB_H
#define DLFS_FDTAB_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/stat.h>

struct dlfs_file {
	atomic_int refs;
	uint64_t ino;
	struct stat st; /* at open; GETATTR again if vol */
	int flags;      /* open flags, as F_GETFL answers */
	int vol;        /* the server said volatile: attributes change */
	pthread_mutex_t pos_lock;
	uint64_t pos;
	char *vpath; /* its canonical virtual path */
};

/* A new description with one reference. @return it, or NULL (ENOMEM). */
struct dlfs_file *dlfs_file_new(uint64_t ino, const struct stat *st,
				int flags, const char *vpath, int vol);
void dlfs_file_get(struct dlfs_file *f);
void dlfs_file_put(struct dlfs_file *f);

/* A new fd for f (the lowest free one, as open gives), with O_CLOEXEC if
 * cloexec; the table takes the caller's reference on success.
 * @return the fd or -errno (EMFILE, ENFILE, ENOMEM). */
int dlfs_fd_install(struct dlfs_file *f, int cloexec);

/* fd, a copy of one of ours that the kernel just made (dup, dup2, dup3,
 * F_DUPFD), shares f. @return 0 or -EMFILE (fd too large for the table:
 * the caller closes it). */
int dlfs_fd_add(int fd, struct dlfs_file *f);

/* The description of fd with a reference, or NULL when fd is not ours
 * (also when it was ours but the kernel's fd is no longer our socket). */
struct dlfs_file *dlfs_fd_get(int fd);

/* Is fd in the table? No check, no reference: for callers that only
 * decide whether to look further. */
int dlfs_fd_maybe(int fd);

/* fd is being closed (or replaced by dup2): forget it. */
void dlfs_fd_forget(int fd);

/* fds lo to hi (both included) are being closed (close_range,
 * closefrom): forget those that are ours. */
void dlfs_fd_forget_range(unsigned lo, unsigned hi);

/* own_memory tells whether the caller runs in the memory the table
 * belongs to (not in a vfork child): dlfs_fd_get drops a stale entry only
 * then. NULL (the unit tests): always. Constructor only. */
void dlfs_fd_init(int (*own_memory)(void));

/* In a forked child: every slot's spin lock and every description's
 * pos_lock made new (the threads that held them are not in the child). */
void dlfs_fd_fork_child(void);

#endif
