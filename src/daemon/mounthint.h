/*
 * Why a FUSE mount failed: after fuse_session_mount fails (libfuse then
 * says only "failed to open /dev/fuse" or fusermount3's own line), check
 * what a mount needs and say which of it is missing, one line each, with
 * the path, its errno text or mode, and what to ask an admin for:
 *
 *  - the FUSE device, present and open for reading and writing by this
 *    user (and dlfs-run, which needs no FUSE at all);
 *  - for a user who is not root: fusermount3, found where libfuse runs it
 *    from and setuid root; a line user_allow_other in /etc/fuse.conf when
 *    allow_other (or allow_root) is asked; a mountpoint this user may
 *    write to, and owns if it is sticky (fusermount3's own rules).
 *
 * Only what is found missing is printed; nothing is changed. Call from
 * main only (it reads PATH through env and opens the device).
 */
#ifndef DLFS_MOUNTHINT_H
#define DLFS_MOUNTHINT_H

#include <stdio.h>
#include <sys/types.h>

/* Where the checks look; dlfs_mount_env_default gives the real ones. */
struct dlfs_mount_env {
	const char *dev;        /* the FUSE device: /dev/fuse */
	const char *fusermount; /* where libfuse runs fusermount3 first */
	const char *path;       /* then the directories of PATH (or NULL) */
	const char *conf;       /* fusermount3's configuration file */
	uid_t uid;              /* who mounts: the checks of a user who is
				 * not root apply when this is not 0 */
};

/* The real places: /dev/fuse, /usr/bin/fusermount3 (Debian's libfuse
 * runs that one, then fusermount3 on PATH), getenv("PATH"),
 * /etc/fuse.conf, and geteuid(). */
void dlfs_mount_env_default(struct dlfs_mount_env *env);

/*
 * Print to out one line "dlfs: ..." for each thing env says a mount on
 * mountpoint needs and does not have. allow is the option that needs
 * user_allow_other ("allow_other" or "allow_root") when it was asked,
 * else NULL. @return the number of lines printed.
 */
int dlfs_mount_hints(const struct dlfs_mount_env *env, const char *mountpoint,
		     const char *allow, FILE *out);

#endif
