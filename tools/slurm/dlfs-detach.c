/*
 * dlfs-detach DIR: detach (unmount lazily) every dlfs mount whose mount
 * point lies under DIR, for a root script such as the Slurm epilog that
 * cleans a directory a user can write (dlfs-slurm(7)).
 *
 * Root never acts on a path a user controls: between reading a mount's
 * path and unmounting it, the user may rename a directory on it or put a
 * symlink in its place, and umount(8) of the path would then detach
 * whatever it now leads to (another job's mount, a system mount). Each
 * mount is identified by its ID in /proc/self/mountinfo; its path is only
 * a way to reach it. The path is opened O_PATH, which pins the mount that
 * it leads to; that mount is detached through /proc/self/fd/N only when
 * its ID is the one listed under DIR, and the table, read again while the
 * descriptor pins it (an ID is reused only once its mount is freed), still
 * lists it under DIR as a dlfs mount. Otherwise the path moved: the table
 * is read again and the mount tried again, a bounded number of times.
 *
 * DIR is taken as it is spelled (no symlink in it is resolved: a user
 * could point it elsewhere), and must be absolute.
 *
 * Prints "unmounted PATH" on stdout for each mount it detached, and "cannot
 * unmount PATH: WHY" on stderr for each it could not. Exit status: 0 when
 * no dlfs mount is left under DIR, 1 when some are, 2 for bad usage.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <time.h>
#include <unistd.h>

#include "mountinfo.h"

#define PROG "dlfs-detach"
#define FSTYPE "fuse.dlfs"
/* Passes over the table at most: each detaches every mount it reaches; a
 * mount whose path moved under it waits for the next. */
#define PASSES 200

struct cand {
	unsigned id;
	char *path;
};

struct cands {
	struct cand *v;
	size_t n, cap;
};

/* A path for a message: bytes that are not printable ASCII as \ooo, as
 * mountinfo writes them, so that a name cannot forge a line. */
static void show(FILE *f, const char *p)
{
	for (; *p; p++) {
		unsigned char c = (unsigned char)*p;
		if (c < 0x20 || c >= 0x7f || c == '\\')
			fprintf(f, "\\%03o", c);
		else
			fputc(c, f);
	}
}

/* Is mp DIR itself, or under it? */
static int under(const char *dir, size_t dlen, const char *mp)
{
	return !strncmp(mp, dir, dlen) && (mp[dlen] == '/' || !mp[dlen]);
}

static void cands_clear(struct cands *c)
{
	for (size_t i = 0; i < c->n; i++)
		free(c->v[i].path);
	c->n = 0;
}

static int cands_add(struct cands *c, unsigned id, const char *path)
{
	if (c->n == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 16;
		struct cand *v = realloc(c->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		c->v = v;
		c->cap = cap;
	}
	char *p = strdup(path);
	if (!p)
		return -ENOMEM;
	c->v[c->n++] = (struct cand){.id = id, .path = p};
	return 0;
}

/* Deepest first: a mount inside another goes before it. */
static int deeper_first(const void *a, const void *b)
{
	return strcmp(((const struct cand *)b)->path,
		      ((const struct cand *)a)->path);
}

/* The dlfs mounts under dir now, into c. @return 0 or a negative errno. */
static int list_mounts(const char *dir, struct cands *c)
{
	struct dlfs_mountinfo mi;
	struct dlfs_mount_entry e;
	size_t dlen = strlen(dir);
	cands_clear(c);
	int ret = dlfs_mountinfo_open(&mi);
	if (ret)
		return ret;
	while ((ret = dlfs_mountinfo_next(&mi, &e)) > 0)
		if (!strcmp(e.fstype, FSTYPE) &&
		    under(dir, dlen, e.mountpoint) &&
		    (ret = cands_add(c, e.id, e.mountpoint)) < 0)
			break;
	dlfs_mountinfo_close(&mi);
	if (ret < 0)
		return ret;
	qsort(c->v, c->n, sizeof(*c->v), deeper_first);
	return 0;
}

/* Is mount id listed under dir as a dlfs mount? @return 1, 0 or -errno. */
static int listed_under(const char *dir, unsigned id)
{
	struct dlfs_mountinfo mi;
	struct dlfs_mount_entry e;
	int ret = dlfs_mountinfo_open(&mi), found = 0;
	if (ret)
		return ret;
	while ((ret = dlfs_mountinfo_next(&mi, &e)) > 0)
		if (e.id == id)
			found = !strcmp(e.fstype, FSTYPE) &&
				under(dir, strlen(dir), e.mountpoint);
	dlfs_mountinfo_close(&mi);
	return ret < 0 ? ret : found;
}

/* The ID of the mount fd lies in (fdinfo's mnt_id). @return 0 or -errno. */
static int fd_mount_id(int fd, unsigned *id)
{
	char p[64], line[128];
	snprintf(p, sizeof(p), "/proc/self/fdinfo/%d", fd);
	FILE *f = fopen(p, "re");
	if (!f)
		return -errno;
	int ret = -ENOENT;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "mnt_id: %u", id) == 1) {
			ret = 0;
			break;
		}
	fclose(f);
	return ret;
}

/*
 * Detach mount c->id if c->path still leads to it. @return 0 when
 * detached, -EAGAIN when the path leads elsewhere now (or nowhere), or
 * another negative errno from umount2.
 */
static int detach(const char *dir, const struct cand *c)
{
	int fd = open(c->path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -EAGAIN;
	unsigned id = 0;
	int ret = fd_mount_id(fd, &id);
	if (!ret && id != c->id)
		ret = -EAGAIN;
	if (!ret) {
		int listed = listed_under(dir, id);
		ret = listed < 0 ? listed : listed ? 0 : -EAGAIN;
	}
	if (!ret) {
		char p[64];
		snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
		/* The magic link leads to the pinned mount, not to a path. */
		if (umount2(p, MNT_DETACH) < 0)
			ret = -errno;
	}
	close(fd);
	return ret;
}

/* One pass: try each mount under dir once. @return how many are left
 * (c holds them all, (*errs)[i] the error of c->v[i], 0 if detached), or
 * a negative errno. */
static int pass(const char *dir, struct cands *c, int **errs)
{
	int ret = list_mounts(dir, c), left = 0;
	if (ret)
		return ret;
	free(*errs);
	*errs = calloc(c->n ? c->n : 1, sizeof(**errs));
	if (!*errs)
		return -ENOMEM;
	for (size_t i = 0; i < c->n; i++) {
		int r = detach(dir, &c->v[i]);
		(*errs)[i] = r;
		if (!r) {
			fputs("unmounted ", stdout);
			show(stdout, c->v[i].path);
			fputc('\n', stdout);
			fflush(stdout);
		} else {
			left++;
		}
	}
	return left;
}

int main(int argc, char **argv)
{
	if (argc != 2 || argv[1][0] != '/') {
		fprintf(stderr, "usage: " PROG " DIR (absolute)\n"
				"Detaches every dlfs mount under DIR; see "
				"dlfs-slurm(7).\n");
		return 2;
	}
	const char *dir = argv[1];
	struct cands c = {0};
	int *errs = NULL, left = 0;
	for (int p = 0; p < PASSES; p++) {
		left = pass(dir, &c, &errs);
		if (left <= 0)
			break;
		/* A path moved under us: let the mover run, then look again. */
		nanosleep(&(struct timespec){.tv_nsec = 2000000}, NULL);
	}
	int st = 0;
	if (left < 0) {
		fprintf(stderr, PROG ": %s: %s\n", dir, strerror(-left));
		st = 1;
	}
	for (size_t i = 0; left > 0 && i < c.n; i++) {
		if (!errs[i])
			continue;
		fputs(PROG ": cannot unmount ", stderr);
		show(stderr, c.v[i].path);
		fprintf(stderr, ": %s\n",
			errs[i] == -EAGAIN ? "its path kept moving"
					   : strerror(-errs[i]));
		st = 1;
	}
	cands_clear(&c);
	free(c.v);
	free(errs);
	return st;
}
