/* The mountpoint before mounting: see mountpoint.h. */
#include "mountpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* Undo mountinfo's octal escapes (\040 for a space) in place. */
static void unescape(char *s)
{
	char *o = s;
	for (; *s; s++, o++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' &&
		    s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			*o = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 +
				    (s[3] - '0'));
			s += 3;
		} else {
			*o = *s;
		}
	}
	*o = '\0';
}

/*
 * Is canon (an absolute path) the mount point of a FUSE mount, per
 * /proc/self/mountinfo? @return 1, 0, or a negative errno.
 */
static int fuse_mounted_at(const char *canon)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return -errno;
	char *line = NULL;
	size_t cap = 0;
	int found = 0;
	while (getline(&line, &cap, f) > 0) {
		/* id parent major:minor root MOUNTPOINT opts... - TYPE ... */
		char *save = NULL, *mnt = NULL, *tok;
		int i = 0;
		for (tok = strtok_r(line, " ", &save); tok && i < 4;
		     tok = strtok_r(NULL, " ", &save))
			i++;
		mnt = tok;
		while (tok && strcmp(tok, "-"))
			tok = strtok_r(NULL, " ", &save);
		char *type = tok ? strtok_r(NULL, " ", &save) : NULL;
		if (!mnt || !type)
			continue;
		unescape(mnt);
		if (!strcmp(mnt, canon))
			found = !strncmp(type, "fuse", 4); /* the last wins */
	}
	free(line);
	fclose(f);
	return found;
}

/* The absolute path of path without touching path itself (a dead mount
 * cannot be resolved): its parent resolved, then its name. */
static char *canon_of(const char *path)
{
	char *a = strdup(path), *b = strdup(path), *out = NULL;
	char parent[PATH_MAX];
	if (a && b && realpath(dirname(a), parent)) {
		const char *base = basename(b);
		if (asprintf(&out, "%s/%s", strcmp(parent, "/") ? parent : "",
			     base) < 0)
			out = NULL;
	}
	free(a);
	free(b);
	return out;
}

/* fusermount3 -uz path, for a user who may not umount2. @return 0 or
 * -EPERM. */
static int fusermount_detach(const char *path)
{
	char *argv[] = {"fusermount3", "-u", "-z", "--", (char *)path, NULL};
	pid_t pid;
	int st;
	if (posix_spawnp(&pid, "fusermount3", NULL, NULL, argv, environ))
		return -EPERM;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -EPERM;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -EPERM;
}

int dlfs_mountpoint_prepare(const char *path, FILE *note,
			    struct dlfs_err *err)
{
	struct stat st;
	struct statfs sf;
	char *canon = canon_of(path);
	int ret = 0;
	/*
	 * A dead FUSE mount is found by asking its daemon: stat may still
	 * succeed from attributes the kernel cached (ours are cached for
	 * long), statfs always goes to the daemon, and fails with ENOTCONN
	 * once the daemon is gone.
	 */
	if (canon && fuse_mounted_at(canon) == 1 && statfs(canon, &sf) < 0 &&
	    errno == ENOTCONN) {
		/* Nothing is served there, so detaching it loses nothing,
		 * and a job can remount after a crash. */
		if (umount2(canon, MNT_DETACH) < 0 &&
		    fusermount_detach(canon) < 0) {
			ret = dlfs_err_set(err, -ENOTCONN,
					   "mountpoint %s: a dead FUSE mount "
					   "is there (its daemon is gone) and "
					   "it cannot be removed from here: "
					   "run 'fusermount3 -u %s'",
					   path, path);
			goto out;
		}
		if (note)
			fprintf(note,
				"dlfs: mountpoint %s: a dead FUSE mount was "
				"there (its daemon is gone): unmounted it\n",
				path);
	}
	if (stat(path, &st) < 0)
		ret = dlfs_err_sys(err, -errno, "mountpoint %s", path);
	else if (!S_ISDIR(st.st_mode))
		ret = dlfs_err_set(err, -ENOTDIR,
				   "mountpoint %s: not a directory", path);
out:
	free(canon);
	return ret;
}

int dlfs_mountpoint_readahead(const char *path, unsigned long kib,
			      struct dlfs_err *err)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return dlfs_err_sys(err, -errno, "/proc/self/mountinfo");
	char *line = NULL, dev[32] = "";
	size_t cap = 0;
	while (getline(&line, &cap, f) > 0) {
		/* ID PARENT MAJ:MIN ROOT MOUNTPOINT ... */
		char mm[32], root[8], *mp = NULL;
		int n = 0;
		if (sscanf(line, "%*u %*u %31s %7s %n", mm, root, &n) < 2 ||
		    !n)
			continue;
		mp = line + n;
		mp[strcspn(mp, " ")] = '\0';
		unescape(mp);
		if (!strcmp(mp, path))
			snprintf(dev, sizeof(dev), "%s", mm); /* the last wins */
	}
	free(line);
	fclose(f);
	if (!*dev)
		return dlfs_err_set(err, -ENOENT,
				    "%s: not in /proc/self/mountinfo", path);
	char sys[96], val[32];
	snprintf(sys, sizeof(sys), "/sys/class/bdi/%s/read_ahead_kb", dev);
	int len = snprintf(val, sizeof(val), "%lu\n", kib);
	int fd = open(sys, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return dlfs_err_sys(err, -errno, "%s", sys);
	ssize_t w = write(fd, val, (size_t)len);
	int e = w == len ? 0 : w < 0 ? -errno : -EIO;
	close(fd);
	if (e)
		return dlfs_err_set(err, e, "%s: cannot write %lu: %s", sys,
				    kib, strerror(-e));
	return 0;
}
