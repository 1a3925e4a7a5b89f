/*
 * dlfs_extract: rebuild the tree under a directory. A depth-first walk
 * with one directory fd per level; each directory's entries are collected
 * before descending because the txn's cursor is shared. Modes and mtimes
 * of directories are set after their contents are written.
 *
 * The index may be hostile: names come from dlfs_readdir, which refuses
 * any that is not one path component, and everything is created relative
 * to a directory fd and never through a symlink (O_NOFOLLOW, O_EXCL,
 * AT_SYMLINK_NOFOLLOW), so nothing is written outside dir, not even
 * through a symlink the extraction itself made.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "dlfs/check.h"
#include "util.h"

struct child {
	uint64_t ino;
	const char *name;
	size_t len;
};

struct kids {
	struct child *v;
	size_t n, cap;
};

static int collect(void *arg, const struct dlfs_dirent *d)
{
	struct kids *k = arg;
	if (k->n == k->cap) {
		size_t cap = k->cap ? k->cap * 2 : 32;
		struct child *v = realloc(k->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		k->v = v;
		k->cap = cap;
	}
	k->v[k->n++] = (struct child){d->ino, d->name, d->name_len};
	return 0;
}

struct ex {
	struct dlfs_ds *ds;
	struct dlfs_txn *txn;
	uint8_t *seen; /* a bit per directory inode: a tree visits each once */
	uint8_t *buf;
	size_t buf_len;
	XXH3_state_t *hs;
	char path[1 << 14]; /* for messages: the current path */
};

static int set_times(int dirfd, const char *name, const struct dlfs_inode *in,
		     int flags)
{
	struct timespec ts[2] = {
		{.tv_sec = in->mtime_sec, .tv_nsec = in->mtime_nsec},
		{.tv_sec = in->mtime_sec, .tv_nsec = in->mtime_nsec},
	};
	return utimensat(dirfd, name, ts, flags);
}

static int write_file(struct ex *x, int dirfd, const char *name,
		      const struct dlfs_inode *in, struct dlfs_err *err)
{
	int fd = openat(dirfd, name,
			O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
			0600);
	if (fd < 0)
		return dlfs_err_sys(err, -errno, "%s", x->path);
	int ret = 0;
	XXH3_64bits_reset(x->hs);
	for (uint64_t off = 0; off < in->size;) {
		size_t got;
		ret = dlfs_file_pread(x->ds, in, x->buf, x->buf_len, off, &got,
				      err);
		if (ret)
			break;
		XXH3_64bits_update(x->hs, x->buf, got);
		ret = dlfs_write_full(fd, x->buf, got);
		if (ret) {
			ret = dlfs_err_sys(err, ret, "%s", x->path);
			break;
		}
		off += got;
	}
	if (!ret && XXH3_64bits_digest(x->hs) != in->xxh3)
		ret = dlfs_err_sys(err, -EIO,
				   "%s: checksum mismatch, the dataset is "
				   "damaged (container %u, offset %llu)",
				   x->path, in->container,
				   (unsigned long long)in->offset);
	if (!ret && fchmod(fd, in->mode & 07777) < 0)
		ret = dlfs_err_sys(err, -errno, "%s: chmod", x->path);
	struct timespec ts[2] = {
		{.tv_sec = in->mtime_sec, .tv_nsec = in->mtime_nsec},
		{.tv_sec = in->mtime_sec, .tv_nsec = in->mtime_nsec},
	};
	if (!ret && futimens(fd, ts) < 0)
		ret = dlfs_err_sys(err, -errno, "%s: utimens", x->path);
	if (close(fd) < 0 && !ret)
		ret = dlfs_err_sys(err, -errno, "%s", x->path);
	return ret;
}

static int walk(struct ex *x, int dirfd, uint64_t dir, size_t plen,
		struct dlfs_err *err)
{
	struct kids k = {0};
	int ret = dlfs_readdir(x->txn, dir, 0, collect, &k, err);
	for (size_t i = 0; i < k.n && !ret; i++) {
		struct child *c = &k.v[i];
		char name[DLFS_NAME_MAX + 1];
		memcpy(name, c->name, c->len);
		name[c->len] = '\0';
		if (plen + c->len + 2 > sizeof(x->path)) {
			ret = dlfs_err_set(err, -ENAMETOOLONG,
					   "%s/%s: path too long", x->path,
					   name);
			break;
		}
		size_t np = plen;
		x->path[np++] = '/';
		memcpy(x->path + np, name, c->len + 1);
		np += c->len;

		struct dlfs_inode in;
		/* Through its entry: a record bound to another name stops
		 * the extract, as a damaged one does. */
		ret = dlfs_stat_entry(x->txn, dir, name, c->len, c->ino, &in,
				      err);
		if (ret)
			break;
		/* A directory named twice (or its own ancestor) would be
		 * extracted again and again: the index is damaged. */
		if (S_ISDIR(in.mode) &&
		    (x->seen[in.ino / 8] & (1u << (in.ino % 8)))) {
			ret = dlfs_err_set(err, -DLFS_ECORRUPT,
					   "%s: directory inode %llu is "
					   "named twice: the index is "
					   "damaged",
					   x->path,
					   (unsigned long long)in.ino);
			break;
		}
		if (S_ISDIR(in.mode)) {
			x->seen[in.ino / 8] |= (uint8_t)(1u << (in.ino % 8));
			if (mkdirat(dirfd, name, 0700) < 0) {
				ret = dlfs_err_sys(err, -errno, "%s", x->path);
				break;
			}
			int sub = openat(dirfd, name,
					 O_RDONLY | O_DIRECTORY | O_CLOEXEC |
						 O_NOFOLLOW);
			if (sub < 0) {
				ret = dlfs_err_sys(err, -errno, "%s", x->path);
				break;
			}
			ret = walk(x, sub, c->ino, np, err);
			x->path[np] = '\0';
			if (!ret && fchmod(sub, in.mode & 07777) < 0)
				ret = dlfs_err_sys(err, -errno, "%s: chmod",
						   x->path);
			close(sub);
			if (!ret && set_times(dirfd, name, &in,
					      AT_SYMLINK_NOFOLLOW) < 0)
				ret = dlfs_err_sys(err, -errno, "%s: utimens",
						   x->path);
		} else if (S_ISLNK(in.mode)) {
			char *tg = strndup(in.target, in.size);
			if (!tg) {
				ret = dlfs_err_set(err, -ENOMEM,
						   "out of memory");
				break;
			}
			if (symlinkat(tg, dirfd, name) < 0)
				ret = dlfs_err_sys(err, -errno, "%s", x->path);
			else if (set_times(dirfd, name, &in,
					   AT_SYMLINK_NOFOLLOW) < 0)
				ret = dlfs_err_sys(err, -errno, "%s: utimens",
						   x->path);
			free(tg);
		} else {
			ret = write_file(x, dirfd, name, &in, err);
		}
		x->path[plen] = '\0';
	}
	free(k.v);
	return ret;
}

int dlfs_extract(struct dlfs_ds *ds, const char *dir, struct dlfs_err *err)
{
	struct ex *x = calloc(1, sizeof(*x));
	int fd = -1, ret;
	if (!x)
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	x->ds = ds;
	x->buf_len = 1 << 20;
	x->buf = malloc(x->buf_len);
	x->hs = XXH3_createState();
	x->seen = calloc(dlfs_ds_info(ds)->super.n_dirs / 8 + 1, 1);
	if (!x->buf || !x->hs || !x->seen) {
		ret = dlfs_err_set(err, -ENOMEM, "out of memory");
		goto out;
	}
	if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
		ret = dlfs_err_sys(err, -errno, "%s", dir);
		goto out;
	}
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		ret = dlfs_err_sys(err, -errno, "%s", dir);
		goto out;
	}
	/* Refuse to mix into a directory that has anything in it. */
	int probe = dup(fd);
	DIR *d = probe >= 0 ? fdopendir(probe) : NULL;
	if (!d) {
		if (probe >= 0)
			close(probe);
		ret = dlfs_err_sys(err, -errno, "%s", dir);
		goto out;
	}
	struct dirent *de;
	int empty = 1;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			empty = 0;
	closedir(d);
	if (!empty) {
		ret = dlfs_err_set(err, -EEXIST,
				   "%s: not empty; extract wants a new or "
				   "empty directory",
				   dir);
		goto out;
	}
	ret = dlfs_txn_begin(ds, &x->txn, err);
	if (ret)
		goto out;
	snprintf(x->path, sizeof(x->path), "%s", dir);
	size_t plen = strlen(x->path);
	while (plen > 1 && x->path[plen - 1] == '/')
		x->path[--plen] = '\0';
	ret = walk(x, fd, DLFS_ROOT_INO, plen, err);
	struct dlfs_inode root;
	if (!ret)
		ret = dlfs_stat(x->txn, DLFS_ROOT_INO, &root, err);
	if (!ret && fchmod(fd, root.mode & 07777) < 0)
		ret = dlfs_err_sys(err, -errno, "%s: chmod", dir);
	struct timespec rts[2] = {
		{.tv_sec = root.mtime_sec, .tv_nsec = root.mtime_nsec},
		{.tv_sec = root.mtime_sec, .tv_nsec = root.mtime_nsec},
	};
	if (!ret && futimens(fd, rts) < 0)
		ret = dlfs_err_sys(err, -errno, "%s: utimens", dir);
out:
	if (fd >= 0)
		close(fd);
	dlfs_txn_end(x->txn);
	XXH3_freeState(x->hs);
	free(x->buf);
	free(x->seen);
	free(x);
	return ret;
}
