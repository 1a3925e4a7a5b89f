/*
 * dlfs-inspect's commands on a live mount, through its control files:
 * the opener that `stats` and `top` share, and `top`, which reads
 * MNT/.dlfs/metrics once an interval and prints a row of rates.
 * Single-threaded; no state outside the calls.
 */
#ifndef DLFS_INSPECT_LIVE_H
#define DLFS_INSPECT_LIVE_H

#include <stddef.h>
#include <stdio.h>

/*
 * Open control file name of the mount at mnt: mnt/.dlfs/name, or
 * mnt/name when mnt is the control directory itself (a mount with
 * -o ctl_dir). @return the stream, or NULL with errno set and path (len
 * bytes) naming mnt/.dlfs/name.
 */
FILE *dlfs_live_open(const char *mnt, const char *name, char *path,
		     size_t len);

/*
 * dlfs-inspect top MNT [-i SECONDS] [-n COUNT], argv[0] being "top".
 * Prints a row every interval until COUNT rows or SIGINT/SIGTERM.
 * @return the exit status: 0, 1 (not a mount, the mount went away), 2
 * (bad arguments).
 */
int dlfs_live_top(int argc, char **argv);

#endif
