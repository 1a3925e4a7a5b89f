/* The mountpoint before mounting: see mountpoint.h. */
#include "mountpoint.h"

#include <dirent.h>
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

#include "mountinfo.h"
#include "util.h"

extern char **environ;

/*
 * What is mounted at canon (an absolute path), per /proc/self/mountinfo:
 * the type of the topmost mount into type. @return 1, 0 (nothing), or a
 * negative errno.
 */
static int mounted_at(const char *canon, char *type, size_t len)
{
	struct dlfs_mountinfo mi;
	struct dlfs_mount_entry e;
	int ret = dlfs_mountinfo_open(&mi), found = 0;
	if (ret)
		return ret;
	while ((ret = dlfs_mountinfo_next(&mi, &e)) > 0)
		if (!strcmp(e.mountpoint, canon)) {
			found = 1; /* the last wins: the topmost */
			snprintf(type, len, "%s", e.fstype);
		}
	dlfs_mountinfo_close(&mi);
	return ret < 0 ? ret : found;
}

static int fuse_mounted_at(const char *canon)
{
	char type[64];
	int ret = mounted_at(canon, type, sizeof(type));
	return ret == 1 ? !strncmp(type, "fuse", 4) : ret;
}

/* A live dlfs mount's pid from its .dlfs/info, or -1. */
static long dlfs_pid_at(const char *canon)
{
	char p[PATH_MAX], buf[4096];
	long pid = -1;
	snprintf(p, sizeof(p), "%s/.dlfs/info", canon);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n > 0) {
		buf[n] = '\0';
		const char *at = strstr(buf, "\"pid\": ");
		if (at)
			pid = strtol(at + 7, NULL, 10);
	}
	return pid;
}

/*
 * Would a mount at path (canon: absolute) hide something? Another mount,
 * or entries of the directory. @return 0, or -EBUSY (mounted) or
 * -ENOTEMPTY with err saying what and how to go on.
 */
static int check_free(const char *path, const char *canon,
		      struct dlfs_err *err)
{
	char type[64];
	if (canon && mounted_at(canon, type, sizeof(type)) == 1) {
		long pid = strcmp(type, "fuse.dlfs") ? -1 : dlfs_pid_at(canon);
		if (pid > 0)
			return dlfs_err_set(err, -EBUSY,
					    "mountpoint %s: already mounted by "
					    "dlfs (pid %ld): unmount it first "
					    "(fusermount3 -u %s), or mount over "
					    "it with -o nonempty",
					    path, pid, path);
		return dlfs_err_set(err, -EBUSY,
				    "mountpoint %s: a %s file system is "
				    "mounted there: unmount it first, or "
				    "mount over it with -o nonempty",
				    path, type);
	}
	DIR *d = opendir(path);
	if (!d)
		return 0; /* stat passed: libfuse will say what is wrong */
	struct dirent *de;
	unsigned long n = 0;
	char first[NAME_MAX + 1] = "";
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") &&
		    !n++)
			snprintf(first, sizeof(first), "%s", de->d_name);
	closedir(d);
	if (!n)
		return 0;
	char q[4 * NAME_MAX + 1];
	dlfs_quote(first, strlen(first), q, sizeof(q));
	return dlfs_err_set(err, -ENOTEMPTY,
			    "mountpoint %s is not empty (%lu entr%s, such as "
			    "'%s'): the mount would hide %s; use an empty "
			    "directory, or -o nonempty to mount over %s",
			    path, n, n == 1 ? "y" : "ies", q,
			    n == 1 ? "it" : "them", n == 1 ? "it" : "them");
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

int dlfs_mountpoint_prepare(const char *path, int nonempty, FILE *note,
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
	else if (!nonempty)
		ret = check_free(path, canon, err);
out:
	free(canon);
	return ret;
}

int dlfs_mountpoint_readahead(const char *path, unsigned long kib,
			      struct dlfs_err *err)
{
	struct dlfs_mountinfo mi;
	struct dlfs_mount_entry me;
	char dev[32] = "";
	int ret = dlfs_mountinfo_open(&mi);
	if (ret)
		return dlfs_err_sys(err, ret, "/proc/self/mountinfo");
	while ((ret = dlfs_mountinfo_next(&mi, &me)) > 0)
		if (!strcmp(me.mountpoint, path))
			snprintf(dev, sizeof(dev), "%s", me.dev); /* the last wins */
	dlfs_mountinfo_close(&mi);
	if (ret < 0)
		return dlfs_err_sys(err, ret, "/proc/self/mountinfo");
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
