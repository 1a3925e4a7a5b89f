/*
 * The mountpoint before mounting: a dead FUSE mount left there (its
 * daemon was killed: every access fails with ENOTCONN) is unmounted, with
 * a line that says so, so that a job can remount after a crash; anything
 * else wrong with the path is said in one line.
 *
 * dlfs_mountpoint_prepare is called from main only, before any thread
 * exists (it may run fusermount3, so it forks). dlfs_mountpoint_readahead
 * is safe from any thread (fs.c calls it on the first request).
 */
#ifndef DLFS_MOUNTPOINT_H
#define DLFS_MOUNTPOINT_H

#include <stdio.h>

#include "dlfs/err.h"

/*
 * Make path usable as a mountpoint. A dead FUSE mount on it is detached
 * (umount2 MNT_DETACH as root, else fusermount3 -uz), and a line saying
 * so goes to note. Unless nonempty, a mount must hide nothing: a live
 * mount there (another dlfs, named with its pid) or entries in the
 * directory are refused. @return 0 when path is then a directory, or a
 * negative errno with err saying what is wrong (-ENOTCONN: a dead mount
 * that could not be removed, with the command that would; -EBUSY: a live
 * mount; -ENOTEMPTY: entries; each with the override).
 */
int dlfs_mountpoint_prepare(const char *path, int nonempty, FILE *note,
			    struct dlfs_err *err);

/*
 * After mounting on path (absolute, as libfuse resolved it): set the
 * kernel's read-ahead for the mount to kib KiB
 * (/sys/class/bdi/MAJ:MIN/read_ahead_kb), so that a read of a file up to
 * that size is one FUSE request, not one per 128 KiB. The mount's device
 * is found in /proc/self/mountinfo: stat of the mount itself would ask
 * this daemon, which may not answer yet. Call it once INIT has been
 * answered: the kernel sets the value from INIT's reply, undoing an
 * earlier one. @return 0, or a negative errno
 * with err saying what failed (not root, no sysfs: the kernel's default
 * stays).
 */
int dlfs_mountpoint_readahead(const char *path, unsigned long kib,
			      struct dlfs_err *err);

#endif
