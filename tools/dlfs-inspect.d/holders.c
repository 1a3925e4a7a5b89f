/*
 * dlfs-inspect holders MOUNTPOINT: which processes keep a mount busy (the
 * reason fusermount3 -u says "Device or resource busy"), and how to
 * detach it. A process holds a mount when its working directory, its
 * root, its program, an open file or a mapped file lies in it. Read from
 * /proc: no request reaches the mount, so a dead or hung one is looked
 * at as safely as a live one. Processes of other users are seen only by
 * root.
 */
#include "holders.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mountinfo.h"

#define PROG "dlfs-inspect"
#define SHOW_MAX 4 /* holds named per process */

/* Is path mnt itself or inside it? */
static int inside(const char *path, const char *mnt, size_t len)
{
	return !strncmp(path, mnt, len) && (path[len] == '/' || !path[len]);
}

/* The absolute path of mnt without touching it (a dead mount cannot be
 * resolved): its parent resolved, then its name. */
static int canon(const char *mnt, char *out, size_t len)
{
	char a[PATH_MAX], b[PATH_MAX], parent[PATH_MAX];
	snprintf(a, sizeof(a), "%s", mnt);
	snprintf(b, sizeof(b), "%s", mnt);
	if (!realpath(dirname(a), parent))
		return -errno;
	const char *base = basename(b);
	int n = snprintf(out, len, "%s/%s", strcmp(parent, "/") ? parent : "",
			 base);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* The type of what is mounted at path, into type. @return 1 or 0. */
static int mounted(const char *path, char *type, size_t len)
{
	struct dlfs_mountinfo mi;
	struct dlfs_mount_entry e;
	int found = 0;
	if (dlfs_mountinfo_open(&mi))
		return 0;
	while (dlfs_mountinfo_next(&mi, &e) > 0)
		if (!strcmp(e.mountpoint, path)) {
			found = 1;
			snprintf(type, len, "%s", e.fstype);
		}
	dlfs_mountinfo_close(&mi);
	return found;
}

struct holds {
	char what[SHOW_MAX][PATH_MAX + 32];
	unsigned n;
};

static void hold(struct holds *h, const char *kind, const char *path)
{
	if (h->n < SHOW_MAX)
		snprintf(h->what[h->n], sizeof(h->what[0]), "%s %s", kind, path);
	h->n++;
}

/* /proc/PID/NAME, a link, inside mnt? */
static void link_in(const char *pid, const char *name, const char *kind,
		    const char *mnt, size_t len, struct holds *h)
{
	char p[PATH_MAX], t[PATH_MAX];
	snprintf(p, sizeof(p), "/proc/%s/%s", pid, name);
	ssize_t n = readlink(p, t, sizeof(t) - 1);
	if (n <= 0)
		return;
	t[n] = '\0';
	if (inside(t, mnt, len))
		hold(h, kind, t);
}

static void fds_in(const char *pid, const char *mnt, size_t len,
		   struct holds *h)
{
	char p[300];
	snprintf(p, sizeof(p), "/proc/%s/fd", pid);
	DIR *d = opendir(p);
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d))) {
		char name[300], kind[300];
		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		snprintf(name, sizeof(name), "fd/%s", de->d_name);
		snprintf(kind, sizeof(kind), "fd %s:", de->d_name);
		link_in(pid, name, kind, mnt, len, h);
	}
	closedir(d);
}

static void maps_in(const char *pid, const char *mnt, size_t len,
		    struct holds *h)
{
	char p[300], line[PATH_MAX + 128], last[PATH_MAX] = "";
	snprintf(p, sizeof(p), "/proc/%s/maps", pid);
	FILE *f = fopen(p, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *path = strchr(line, '/');
		if (!path)
			continue;
		path[strcspn(path, "\n")] = '\0';
		if (inside(path, mnt, len) && strcmp(path, last)) {
			hold(h, "mapped:", path);
			snprintf(last, sizeof(last), "%s", path);
		}
	}
	fclose(f);
}

/* Print pid's holds on mnt. @return 1 when it holds it. */
static int one(const char *pid, const char *mnt, size_t len)
{
	struct holds h = {.n = 0};
	link_in(pid, "cwd", "working directory", mnt, len, &h);
	link_in(pid, "root", "root", mnt, len, &h);
	link_in(pid, "exe", "program", mnt, len, &h);
	fds_in(pid, mnt, len, &h);
	maps_in(pid, mnt, len, &h);
	if (!h.n)
		return 0;
	char p[300], comm[64] = "?";
	snprintf(p, sizeof(p), "/proc/%s/comm", pid);
	FILE *f = fopen(p, "re");
	if (f) {
		if (fgets(comm, sizeof(comm), f))
			comm[strcspn(comm, "\n")] = '\0';
		fclose(f);
	}
	printf("%s %s:", pid, comm);
	for (unsigned i = 0; i < h.n && i < SHOW_MAX; i++)
		printf("%s %s", i ? "," : "", h.what[i]);
	if (h.n > SHOW_MAX)
		printf(", and %u more", h.n - SHOW_MAX);
	printf("\n");
	return 1;
}

int dlfs_live_holders(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: " PROG " holders MOUNTPOINT\n");
		return 2;
	}
	char mnt[PATH_MAX], type[64];
	int e = canon(argv[1], mnt, sizeof(mnt));
	if (e) {
		fprintf(stderr, PROG ": holders: %s: %s\n", argv[1], strerror(-e));
		return 1;
	}
	if (!mounted(mnt, type, sizeof(type))) {
		fprintf(stderr, PROG ": holders: %s: nothing is mounted there\n",
			argv[1]);
		return 1;
	}
	size_t len = strlen(mnt);
	unsigned n = 0;
	pid_t self = getpid();
	DIR *d = opendir("/proc");
	struct dirent *de;
	while (d && (de = readdir(d)))
		if (isdigit((unsigned char)de->d_name[0]) &&
		    atol(de->d_name) != self)
			n += (unsigned)one(de->d_name, mnt, len);
	if (d)
		closedir(d);
	if (!n)
		printf("nobody holds %s (%s): fusermount3 -u %s unmounts it\n",
		       mnt, type, mnt);
	else
		printf("%u process%s hold%s %s (%s). To detach it now, lazily "
		       "(it goes once they leave it; new opens no longer see "
		       "it): fusermount3 -u -z %s\n",
		       n, n == 1 ? "" : "es", n == 1 ? "s" : "", mnt, type,
		       mnt);
	if (geteuid())
		printf("(not root: other users' processes are not seen)\n");
	return 0;
}
