/*
 * Why a mount failed (src/daemon/mounthint.c, compiled into this test),
 * against stand-ins in a temporary directory: a missing device; a
 * fusermount3 missing, not setuid root, or fine, found where libfuse
 * looks (its own path, then PATH); /etc/fuse.conf missing, without
 * user_allow_other, or with it as fusermount3 reads it; a sticky
 * mountpoint of another user. Each hint is one line with the path, and
 * nothing is said of what is fine. A device or mountpoint this user may
 * not open is tested by tests/mount/nonroot.sh, as a user who is not
 * root (root may open anything here).
 */
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "mounthint.h"
#include "tutil.h"

static char said[8192]; /* what the last dlfs_mount_hints printed */

/* Run the hints into said; @return how many lines they counted. */
static int hints(const struct dlfs_mount_env *env, const char *mnt,
		 const char *allow)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		abort();
	int n = dlfs_mount_hints(env, mnt, allow, f);
	fclose(f);
	snprintf(said, sizeof(said), "%s", buf);
	free(buf);
	/* As many lines as it says, each "dlfs: ...\n". */
	int lines = 0;
	for (const char *p = said; *p; p = strchr(p, '\n') + 1) {
		CHECK(!strncmp(p, "dlfs: ", 6));
		if (!strchr(p, '\n')) {
			CHECK(!"a hint without its newline");
			break;
		}
		lines++;
	}
	CHECK_EQ(lines, n);
	return n;
}

/* said holds every one of the NULL-ended strings. */
static int has(const char *first, ...)
{
	int all = 1;
	va_list ap;
	va_start(ap, first);
	for (const char *s = first; s; s = va_arg(ap, const char *))
		if (!strstr(said, s)) {
			fprintf(stderr, "hints '%s' lack '%s'\n", said, s);
			all = 0;
		}
	va_end(ap);
	return all;
}

static void put(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text) ||
	    close(fd) || chmod(path, mode))
		abort();
}

int main(void)
{
	char *dir = t_tmpdir();
	char *dev = t_path(dir, "fuse"), *nodev = t_path(dir, "nodev");
	char *bin1 = t_path(dir, "bin1"), *bin2 = t_path(dir, "bin2");
	char *fm = t_path(dir, "bin2/fusermount3");
	char *conf = t_path(dir, "fuse.conf"), *mnt = t_path(dir, "mnt");
	char *sticky = t_path(dir, "sticky"), path[4096];
	put(dev, "", 0666);
	CHECK(!mkdir(bin1, 0755) && !mkdir(bin2, 0755));
	CHECK(!mkdir(mnt, 0755) && !mkdir(sticky, 0755));
	CHECK(!chmod(sticky, 01777));
	snprintf(path, sizeof(path), "%s::%s", bin1, bin2);

	struct dlfs_mount_env env;
	dlfs_mount_env_default(&env);
	CHECK(!strcmp(env.dev, "/dev/fuse"));
	CHECK(!strcmp(env.conf, "/etc/fuse.conf"));
	CHECK(env.uid == geteuid());

	/* root: only the device counts, and a missing one names dlfs-run. */
	env = (struct dlfs_mount_env){.dev = nodev,
				      .fusermount = fm,
				      .path = path,
				      .conf = conf,
				      .uid = 0};
	CHECK_EQ(hints(&env, mnt, "allow_other"), 1);
	CHECK(has(nodev, ": No such file or directory", "modprobe fuse",
		  "dlfs-run", NULL));
	env.dev = dev;
	CHECK_EQ(hints(&env, sticky, "allow_other"), 0);

	/* A user: no fusermount3 anywhere libfuse looks. */
	env.uid = 12345;
	put(conf, "user_allow_other\n", 0644);
	CHECK_EQ(hints(&env, mnt, NULL), 1);
	CHECK(has("fusermount3: No such file or directory", fm,
		  "not on PATH", "fuse3", NULL));

	/* Found on PATH (after an empty entry), not setuid. */
	put(fm, "#!/bin/sh\n", 0755);
	env.fusermount = nodev;
	CHECK_EQ(hints(&env, mnt, NULL), 1);
	CHECK(has(fm, "not setuid root (mode 0755", "4755", NULL));
	/* The same at libfuse's own path, with PATH unset. */
	env.fusermount = fm;
	env.path = NULL;
	CHECK_EQ(hints(&env, mnt, NULL), 1);
	CHECK(has(fm, "not setuid root (mode 0755", NULL));
	/* Not executable: libfuse cannot run it, so it is not found. */
	CHECK(!chmod(fm, 0644));
	CHECK_EQ(hints(&env, mnt, NULL), 1);
	CHECK(has("fusermount3: No such file or directory", NULL));

	/* Setuid root: nothing to say (unless this file system is nosuid,
	 * which is then said). Only root can make a file setuid root. */
	struct statvfs sv;
	CHECK(!statvfs(dir, &sv));
	if (geteuid() == 0 && !chmod(fm, 04755)) {
		if (sv.f_flag & ST_NOSUID) {
			CHECK_EQ(hints(&env, mnt, NULL), 1);
			CHECK(has(fm, "mounted nosuid", NULL));
		} else {
			CHECK_EQ(hints(&env, mnt, NULL), 0);
			CHECK_EQ(said[0], '\0');

			/* allow_other, as fusermount3 reads fuse.conf. */
			const char *yes[] = {"user_allow_other\n",
					     "# c\n  user_allow_other \t# on\n",
					     "mount_max = 9\nuser_allow_other\n"};
			for (size_t i = 0; i < 3; i++) {
				put(conf, yes[i], 0644);
				CHECK_EQ(hints(&env, mnt, "allow_other"), 0);
			}
			const char *no[] = {"#user_allow_other\n",
					    "user_allow_other",
					    "user_allow_other = 1\n", ""};
			for (size_t i = 0; i < 4; i++) {
				put(conf, no[i], 0644);
				CHECK_EQ(hints(&env, mnt, "allow_root"), 1);
				CHECK(has("-o allow_root: ", conf,
					  "has no line user_allow_other",
					  "without allow_root", NULL));
			}
			CHECK(!unlink(conf));
			CHECK_EQ(hints(&env, mnt, "allow_other"), 1);
			CHECK(has("-o allow_other: ", conf,
				  ": No such file or directory",
				  "user_allow_other", NULL));
			CHECK_EQ(hints(&env, mnt, NULL), 0);

			/* A sticky mountpoint of another user. */
			CHECK_EQ(hints(&env, sticky, NULL), 1);
			CHECK(has("mountpoint ", sticky, "sticky (mode 1777)",
				  "not you", NULL));
			/* Its owner may mount there. */
			CHECK(!chown(sticky, 12345, 0));
			CHECK_EQ(hints(&env, sticky, NULL), 0);
		}
	}

	t_rmrf(dir);
	free(dir);
	free(dev);
	free(nodev);
	free(bin1);
	free(bin2);
	free(fm);
	free(conf);
	free(mnt);
	free(sticky);
	return t_done("test_mounthint");
}
