/*
 * The lock of a dataset being packed: dlfs-pack holds it from its start
 * to its publishing, so that a second pack into the same OUT fails at
 * once, and a mount of an OUT that does not exist yet can say it is being
 * packed. Both sides use this header: it owns the contract.
 *
 * The lock is the file .BASE.lock beside OUT (BASE: OUT's last name),
 * held with flock(2) LOCK_EX for the packer's life and removed when it is
 * done; it holds one line, "pid PID host HOST since EPOCH_SECONDS". A
 * lock file whose holder is gone (a packer killed) is not held, and is
 * taken over. Where the file system has no flock (a Lustre client
 * mounted without -o flock), no lock is held and nothing is refused.
 *
 * Thread-safety: a lock is its owner's; the functions keep no state.
 */
#ifndef DLFS_OUTLOCK_H
#define DLFS_OUTLOCK_H

#include <stddef.h>

#include "dlfs/err.h"

struct dlfs_outlock {
	int fd;     /* -1: none held */
	char *path; /* the lock file's */
};

/*
 * Take OUT's lock into l. @return 0 (held, or the file system has no
 * locks), -EBUSY with err naming the packer that holds it ("OUT: being
 * packed by pid N on HOST since TIME"), or another -errno with err.
 */
int dlfs_outlock_take(const char *out, struct dlfs_outlock *l,
		      struct dlfs_err *err);

/* Remove and release a lock taken (nothing when none, or for a lock
 * zeroed and never taken). */
void dlfs_outlock_release(struct dlfs_outlock *l);

/* Is OUT being packed now? @return 1 with who ("pid N on HOST since
 * TIME") when a live packer holds its lock, else 0. */
int dlfs_outlock_who(const char *out, char *who, size_t len);

#endif
