/* The NVMe tier's trust: its directory, and which of the files in it
 * may be used (nvme_priv.h). */
#include "nvme_priv.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <syslog.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <xxhash.h>

static void cache_name(uint32_t c, char *buf, size_t len)
{
	snprintf(buf, len, "%06u.cache", c);
}

/*
 * A file of the tier that only this daemon can have written: a regular
 * file (not a device, fifo or, with O_NOFOLLOW, a symlink), owned by our
 * uid, with one name (not a hard link to a file elsewhere), and no access
 * for anyone else. Anything else another user may have planted or may
 * still write, and the "verified" state of its chunks would mean nothing.
 */
int nv_own_stat(const struct stat *st)
{
	return S_ISREG(st->st_mode) && st->st_uid == geteuid() &&
	       st->st_nlink == 1 && !(st->st_mode & 077);
}

int nv_own_file(int fd)
{
	struct stat st;
	return fstat(fd, &st) == 0 && nv_own_stat(&st);
}

/*
 * The cache file of container c, opened on first use (created only when
 * create is set). @return an fd, or a negative errno.
 */
int nv_cfd(struct dlfs_nvme *n, uint32_t c, int create)
{
	int fd = atomic_load_explicit(&n->fd[c], memory_order_acquire);
	if (fd >= 0)
		return fd;
	char name[32];
	cache_name(c, name, sizeof(name));
	pthread_mutex_lock(&n->mu);
	fd = atomic_load_explicit(&n->fd[c], memory_order_relaxed);
	if (fd < 0) {
		int flags = O_RDWR | O_CLOEXEC | O_NOFOLLOW |
			    (create ? O_CREAT : 0);
		fd = openat(n->dirfd, name, flags | O_DIRECT, 0600);
		if (fd < 0 && errno == EINVAL) /* no O_DIRECT here (tmpfs) */
			fd = openat(n->dirfd, name, flags, 0600);
		else if (fd >= 0)
			n->direct[c] = 1;
		if (fd < 0) {
			fd = -errno;
		} else if (!nv_own_file(fd)) {
			close(fd);
			fd = -EPERM;
		} else {
			dlfs_precache_extents(fd);
			atomic_store_explicit(&n->fd[c], fd,
					      memory_order_release);
		}
	}
	pthread_mutex_unlock(&n->mu);
	return fd;
}

/* Rename DIR/name to DIR/name.stale-N (a name the tier never uses), with
 * a warning that says so. @return 1 if moved. */
static int moved_aside(struct dlfs_nvme *n, const char *name)
{
	char to[NAME_MAX + 1];
	for (unsigned i = 0; i < 100; i++) {
		if (snprintf(to, sizeof(to), "%.200s.stale-%u", name, i) >=
		    (int)sizeof(to))
			return 0;
		if (!renameat2(n->dirfd, name, n->dirfd, to, RENAME_NOREPLACE)) {
			dlfs_logf(n->log, n->log_arg, LOG_WARNING,
				  "NVMe cache %s: %s is a directory: moved "
				  "aside to %s (remove it)",
				  n->path, name, to);
			return 1;
		}
		if (errno != EEXIST)
			return 0;
	}
	return 0;
}

/* What the tier keeps in its directory, by kind (each_file). */
enum { F_CACHE = 1, F_MAP = 2, F_INDEX = 4 };

static unsigned kind_of(const char *name)
{
	size_t l = strlen(name);
	if (l > 6 && !strcmp(name + l - 6, ".cache"))
		return F_CACHE;
	if (!strcmp(name, "map"))
		return F_MAP;
	/* The index's local copy and its stamp (ixcopy.h). */
	if (!strcmp(name, "index") || !strcmp(name, "index.ok"))
		return F_INDEX;
	return 0;
}

/*
 * The one walk of the tier's directory, for wipe and audit: fn(n, name,
 * arg) for each entry of a kind in kinds, until one returns non-zero.
 * @return that, 0 at the end, or -errno (err set) if the directory
 * cannot be read.
 */
static int each_file(struct dlfs_nvme *n, unsigned kinds,
		     int (*fn)(struct dlfs_nvme *n, const char *name,
			       void *arg),
		     void *arg, struct dlfs_err *err)
{
	int fd = openat(n->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	if (!d) {
		if (fd >= 0)
			close(fd);
		return dlfs_err_sys(err, -errno, "%s", n->path);
	}
	struct dirent *e;
	int ret = 0;
	while (!ret && (e = readdir(d)))
		if (kind_of(e->d_name) & kinds)
			ret = fn(n, e->d_name, arg);
	closedir(d);
	return ret;
}

struct wipe {
	struct dlfs_err *err;
	int ret; /* the first failure */
};

/* Remove name, or note why not, and go on. unlinkat removes a symlink,
 * never its target. */
static int remove_one(struct dlfs_nvme *n, const char *name, void *arg)
{
	struct wipe *w = arg;
	if (!unlinkat(n->dirfd, name, 0) || errno == ENOENT)
		return 0;
	/* A directory where a file of the tier belongs: removed if empty,
	 * else moved aside (never walked into: it is not ours to trust), so
	 * the tier can start. */
	int e = errno;
	if (e == EISDIR && (!unlinkat(n->dirfd, name, AT_REMOVEDIR) ||
			    moved_aside(n, name)))
		return 0;
	if (!w->ret)
		w->ret = dlfs_err_sys(w->err, -e, "%s/%s: cannot remove it",
				      n->path, name);
	return 0;
}

/*
 * Remove every cache file (their map is gone or belongs elsewhere), and
 * with all the map too, and the index's local copy and stamp, which an
 * untrusted directory may have had planted too. @return 0 or -errno.
 */
int nv_wipe(struct dlfs_nvme *n, int all, struct dlfs_err *err)
{
	struct wipe w = {err, 0};
	int ret = each_file(n, all ? F_CACHE | F_MAP | F_INDEX : F_CACHE,
			    remove_one, &w, err);
	return ret ? ret : w.ret;
}

/* 1 (stop) if name is not a file this daemon can trust. */
static int untrusted(struct dlfs_nvme *n, const char *name, void *arg)
{
	(void)arg;
	struct stat st;
	return fstatat(n->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
	       !nv_own_stat(&st);
}

/*
 * Is every file of the tier one this daemon can trust (nv_own_stat)?
 * @return 1, 0, or a negative errno.
 */
int nv_audit(struct dlfs_nvme *n, struct dlfs_err *err)
{
	int ret = each_file(n, F_CACHE | F_MAP, untrusted, NULL, err);
	return ret < 0 ? ret : !ret;
}

/*
 * The tier's directory DIR/<id>, opened once and then used only through
 * its fd (openat, O_NOFOLLOW), so nobody can swap a path under it. It
 * must be a real directory (not a symlink) owned by this daemon's uid: a
 * directory of another user is refused, since its owner could rewrite
 * the chunks it holds or plant symlinks for this daemon (perhaps root)
 * to write through. A directory that was open to others is made private,
 * and what it held is not trusted (others could have planted it, or
 * still hold it open): it is emptied. @return 0 or -errno with err set.
 */
int nv_open_tier_dir(struct dlfs_nvme *n, const char *dir, const char *id,
		     struct dlfs_err *err)
{
	int top = -1, ret = 0;
	struct stat st;
	/* DIR itself is the administrator's choice, symlink or not. */
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return dlfs_err_sys(err, -errno, "cache_dir %s", dir);
	top = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (top < 0)
		return dlfs_err_sys(err, -errno, "cache_dir %s", dir);
	if (mkdirat(top, id, 0700) < 0 && errno != EEXIST) {
		ret = dlfs_err_sys(err, -errno, "cache_dir %s", n->path);
		goto out;
	}
	n->dirfd = openat(top, id,
			  O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (n->dirfd < 0) {
		/* O_NOFOLLOW | O_DIRECTORY gives ENOTDIR for a symlink. */
		int e = errno;
		int link = fstatat(top, id, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
			   S_ISLNK(st.st_mode);
		ret = e == ELOOP || e == ENOTDIR
			      ? dlfs_err_set(err, -EPERM,
					     "cache_dir %s: %s: refusing it "
					     "(remove it, or choose another "
					     "cache_dir)",
					     n->path,
					     link ? "a symbolic link"
						  : "not a directory")
			      : dlfs_err_sys(err, -e, "cache_dir %s",
					     n->path);
		goto out;
	}
	if (fstat(n->dirfd, &st) < 0) {
		ret = dlfs_err_sys(err, -errno, "cache_dir %s", n->path);
		goto out;
	}
	if (st.st_uid != geteuid()) {
		ret = dlfs_err_set(err, -EPERM,
				   "cache_dir %s: owned by uid %u, not by "
				   "this daemon's uid %u: refusing it (remove "
				   "it, or choose another cache_dir)",
				   n->path, (unsigned)st.st_uid,
				   (unsigned)geteuid());
		goto out;
	}
	n->was_open = (st.st_mode & 07777) != 0700;
	if (n->was_open && fchmod(n->dirfd, 0700) < 0)
		ret = dlfs_err_sys(err, -errno, "cache_dir %s: chmod", n->path);
out:
	close(top);
	return ret;
}
