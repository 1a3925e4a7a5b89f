/* Why a FUSE mount failed: see mounthint.h. */
#include "mounthint.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

/* Where no FUSE is needed: said with each hint about the device. */
#define NO_FUSE "dlfs-run reads the dataset without FUSE (see dlfs-run(1))"

void dlfs_mount_env_default(struct dlfs_mount_env *env)
{
	env->dev = "/dev/fuse";
	env->fusermount = "/usr/bin/fusermount3";
	env->path = getenv("PATH");
	env->conf = "/etc/fuse.conf";
	env->uid = geteuid();
}

static const char *errtext(int code, char *buf, size_t len)
{
	/* GNU strerror_r may return a static string instead of filling buf. */
	return strerror_r(code, buf, len);
}

static void user_name(uid_t uid, char *buf, size_t len)
{
	struct passwd pw, *r = NULL;
	char tmp[1024];
	if (getpwuid_r(uid, &pw, tmp, sizeof(tmp), &r) == 0 && r)
		snprintf(buf, len, "%s", pw.pw_name);
	else
		snprintf(buf, len, "%u", (unsigned)uid);
}

static void group_name(gid_t gid, char *buf, size_t len)
{
	struct group gr, *r = NULL;
	char tmp[1024];
	if (getgrgid_r(gid, &gr, tmp, sizeof(tmp), &r) == 0 && r)
		snprintf(buf, len, "%s", gr.gr_name);
	else
		snprintf(buf, len, "%u", (unsigned)gid);
}

/* Is this process in group gid? */
static int in_group(gid_t gid)
{
	if (getegid() == gid)
		return 1;
	int n = getgroups(0, NULL), found = 0;
	gid_t *groups = n > 0 ? calloc((size_t)n, sizeof(*groups)) : NULL;
	if (groups)
		n = getgroups(n, groups);
	for (int i = 0; groups && i < n; i++)
		found |= groups[i] == gid;
	free(groups);
	return found;
}

/* Do st's permission bits let uid (this process's groups) read and
 * write it? */
static int mode_lets_rw(const struct stat *st, uid_t uid)
{
	if (uid == 0)
		return 1;
	mode_t m = st->st_mode;
	if (st->st_uid == uid)
		return (m & 0600) == 0600;
	if (in_group(st->st_gid))
		return (m & 0060) == 0060;
	return (m & 0006) == 0006;
}

/* The FUSE device: there, and open for reading and writing. */
static int dev_hint(const struct dlfs_mount_env *env, FILE *out)
{
	char buf[128], owner[64], group[64];
	int fd = open(env->dev, O_RDWR | O_CLOEXEC | O_NOCTTY);
	if (fd >= 0) {
		close(fd);
		return 0;
	}
	int e = errno;
	const char *why = errtext(e, buf, sizeof(buf));
	struct stat st;
	if (e == ENOENT || e == ENODEV || e == ENXIO) {
		fprintf(out,
			"dlfs: %s: %s: no FUSE device here: ask an admin to "
			"load the fuse module (modprobe fuse) or to give the "
			"container %s; " NO_FUSE "\n",
			env->dev, why, env->dev);
		return 1;
	}
	if ((e != EACCES && e != EPERM) || stat(env->dev, &st) < 0) {
		fprintf(out, "dlfs: %s: %s: cannot open it to read and write\n",
			env->dev, why);
		return 1;
	}
	user_name(st.st_uid, owner, sizeof(owner));
	group_name(st.st_gid, group, sizeof(group));
	if (mode_lets_rw(&st, env->uid)) {
		/* The mode is not what refuses: the container's device
		 * rules or a security module are. */
		fprintf(out,
			"dlfs: %s: %s: its mode %04o lets you, so something "
			"else refuses it (a container's device rules, a "
			"security module): ask an admin; " NO_FUSE "\n",
			env->dev, why, (unsigned)(st.st_mode & 07777));
		return 1;
	}
	char member[128] = "";
	if (st.st_gid != 0 && (st.st_mode & 0060) == 0060)
		snprintf(member, sizeof(member), " or membership of group %s",
			 group);
	fprintf(out,
		"dlfs: %s: %s: mode %04o, owner %s, group %s, and you need to "
		"read and write it: ask an admin for mode 0666 (as Debian "
		"ships it)%s; " NO_FUSE "\n",
		env->dev, why, (unsigned)(st.st_mode & 07777), owner, group,
		member);
	return 1;
}

/* An executable regular file at path? */
static int is_program(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
	       access(path, X_OK) == 0;
}

/* fusermount3 where libfuse looks: env->fusermount, then PATH.
 * @return 0 with its path in found, or -ENOENT. */
static int find_fusermount(const struct dlfs_mount_env *env, char *found,
			   size_t len)
{
	if (is_program(env->fusermount)) {
		snprintf(found, len, "%s", env->fusermount);
		return 0;
	}
	for (const char *p = env->path; p && *p;) {
		size_t n = strcspn(p, ":");
		/* An empty entry is the current directory, as for execvp. */
		int w = snprintf(found, len, "%.*s%sfusermount3", (int)n, p,
				 n ? "/" : "");
		if (w > 0 && (size_t)w < len && is_program(found))
			return 0;
		p += n + (p[n] == ':');
	}
	return -ENOENT;
}

/* A user who is not root mounts through fusermount3, setuid root. */
static int fusermount_hint(const struct dlfs_mount_env *env, FILE *out)
{
	char path[PATH_MAX], buf[128], owner[64];
	struct stat st;
	struct statvfs sv;
	if (find_fusermount(env, path, sizeof(path))) {
		fprintf(out,
			"dlfs: fusermount3: %s (not %s, not on PATH): a user "
			"who is not root mounts through it: ask an admin to "
			"install Debian's fuse3\n",
			errtext(ENOENT, buf, sizeof(buf)), env->fusermount);
		return 1;
	}
	if (stat(path, &st) < 0)
		return 0; /* it was there a moment ago */
	if (st.st_uid != 0 || !(st.st_mode & S_ISUID)) {
		user_name(st.st_uid, owner, sizeof(owner));
		fprintf(out,
			"dlfs: %s: not setuid root (mode %04o, owner %s): a "
			"user who is not root mounts through it: ask an admin "
			"to make it owner root, mode 4755, as Debian's fuse3 "
			"installs it\n",
			path, (unsigned)(st.st_mode & 07777), owner);
		return 1;
	}
	if (statvfs(path, &sv) == 0 && (sv.f_flag & ST_NOSUID)) {
		fprintf(out,
			"dlfs: %s: on a file system mounted nosuid, so it does "
			"not run as root: ask an admin\n",
			path);
		return 1;
	}
	return 0;
}

/*
 * Has conf the line user_allow_other, read as fusermount3 reads it (from
 * '#' on is a comment, blanks at either end do not count, a last line
 * without a newline is not read)? @return 1, 0, or a negative errno.
 */
static int conf_allows_other(const char *conf)
{
	FILE *f = fopen(conf, "re");
	if (!f)
		return -errno;
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int found = 0;
	while (!found && (n = getline(&line, &cap, f)) > 0) {
		if (line[n - 1] != '\n')
			break;
		line[strcspn(line, "#")] = '\0';
		char *s = line, *e = line + strlen(line);
		while (*s == ' ' || *s == '\t')
			s++;
		while (e > s && strchr(" \t\r\n\v\f", e[-1]))
			e--;
		*e = '\0';
		found = !strcmp(s, "user_allow_other");
	}
	free(line);
	fclose(f);
	return found;
}

static int allow_hint(const struct dlfs_mount_env *env, const char *allow,
		      FILE *out)
{
	char buf[128];
	int ok = conf_allows_other(env->conf);
	if (ok == 1)
		return 0;
	if (ok < 0)
		fprintf(out,
			"dlfs: -o %s: %s: %s: a user who is not root needs a "
			"line user_allow_other there: ask an admin, or mount "
			"without %s\n",
			allow, env->conf, errtext(-ok, buf, sizeof(buf)), allow);
	else
		fprintf(out,
			"dlfs: -o %s: %s has no line user_allow_other, which a "
			"user who is not root needs: ask an admin, or mount "
			"without %s\n",
			allow, env->conf, allow);
	return 1;
}

/* fusermount3's rules for the mountpoint: the user may write to it, and
 * owns it if it is sticky. */
static int mountpoint_hint(const struct dlfs_mount_env *env,
			   const char *mountpoint, FILE *out)
{
	char buf[128], owner[64];
	struct stat st;
	if (stat(mountpoint, &st) < 0 || !S_ISDIR(st.st_mode))
		return 0; /* said before mounting */
	user_name(st.st_uid, owner, sizeof(owner));
	if (access(mountpoint, W_OK) < 0) {
		fprintf(out,
			"dlfs: mountpoint %s: %s (mode %04o, owner %s): "
			"fusermount3 mounts only on a directory you may write "
			"to: mount on one of your own\n",
			mountpoint, errtext(errno, buf, sizeof(buf)),
			(unsigned)(st.st_mode & 07777), owner);
		return 1;
	}
	if ((st.st_mode & S_ISVTX) && st.st_uid != env->uid) {
		fprintf(out,
			"dlfs: mountpoint %s: sticky (mode %04o) and owned by "
			"%s, not you: fusermount3 refuses it: mount on a "
			"directory of your own\n",
			mountpoint, (unsigned)(st.st_mode & 07777), owner);
		return 1;
	}
	return 0;
}

int dlfs_mount_hints(const struct dlfs_mount_env *env, const char *mountpoint,
		     const char *allow, FILE *out)
{
	int n = dev_hint(env, out);
	if (env->uid != 0) {
		n += fusermount_hint(env, out);
		if (allow)
			n += allow_hint(env, allow, out);
		n += mountpoint_hint(env, mountpoint, out);
	}
	return n;
}
