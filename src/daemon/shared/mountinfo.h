/*
 * /proc/self/mountinfo, one entry at a time: the daemon looks up its
 * mountpoint there (mountpoint.c), and dlfs-detach, run as root by the
 * Slurm epilog, finds the mounts it may detach. An entry's strings point
 * into the reader's line buffer: they are valid until the next call.
 * Mount points are unescaped (mountinfo writes a space as \040).
 *
 * Thread-safety: a reader is its owner's.
 */
#ifndef DLFS_MOUNTINFO_H
#define DLFS_MOUNTINFO_H

#include <stdio.h>

struct dlfs_mountinfo {
	FILE *f;
	char *line;
	size_t cap;
};

struct dlfs_mount_entry {
	unsigned id;            /* the mount's ID (mnt_id in fdinfo) */
	unsigned parent;
	const char *dev;        /* "MAJ:MIN" */
	const char *root;       /* the root of the mount in its file system */
	const char *mountpoint; /* unescaped */
	const char *fstype;     /* "fuse.dlfs", "ext4", ... */
	const char *source;
};

/* Open this process's table. @return 0 or a negative errno. */
int dlfs_mountinfo_open(struct dlfs_mountinfo *mi);

/* The next entry into *e. @return 1, 0 at the end, or a negative errno
 * (a line that does not parse is skipped). */
int dlfs_mountinfo_next(struct dlfs_mountinfo *mi, struct dlfs_mount_entry *e);

void dlfs_mountinfo_close(struct dlfs_mountinfo *mi);

/* Undo mountinfo's octal escapes (\040 for a space) in s, in place. */
void dlfs_mountinfo_unescape(char *s);

#endif
