/* The index's node-local copy: see ixcopy.h. */
#include "ixcopy.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dlfs/format.h"
#include "util.h"

#define COPY_NAME "index"
#define STAMP_NAME "index.ok"
#define TMP_PREFIX "index.tmp-"
#define STAMP_MAGIC "DLFSIXOK"
#define STAMP_SIZE (8 + DLFS_ID_SIZE + 8 + 16 + 6 * 8)

struct dlfs_ixcopy {
	struct dlfs_seal seal;
	int dirfd;      /* the tier's directory, or -1: in memory */
	int fd;
	char tmp[64];   /* its temporary name in dirfd */
	char *where;    /* for messages */
	uint64_t off;
	struct dlfs_seal_hash *h;
};

static int own_private_file(const struct stat *st)
{
	return S_ISREG(st->st_mode) && st->st_uid == geteuid() &&
	       st->st_nlink == 1 && !(st->st_mode & 077);
}

/*
 * DIR/<id>, made if missing, opened without following a symlink; it must
 * be this user's and private. @return an fd or -errno with err set.
 */
static int open_dir(const char *dir, const struct dlfs_seal *s,
		    struct dlfs_err *err)
{
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return dlfs_err_sys(err, -errno, "cache_dir %s", dir);
	int top = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (top < 0)
		return dlfs_err_sys(err, -errno, "cache_dir %s", dir);
	int fd = -1, ret;
	if (mkdirat(top, s->id_hex, 0700) < 0 && errno != EEXIST) {
		ret = dlfs_err_sys(err, -errno, "cache_dir %s/%s", dir,
				   s->id_hex);
		goto out;
	}
	fd = openat(top, s->id_hex,
		    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		ret = dlfs_err_sys(err, errno == ELOOP ? -EPERM : -errno,
				   "cache_dir %s/%s", dir, s->id_hex);
		goto out;
	}
	if (st.st_uid != geteuid() || (st.st_mode & 077)) {
		ret = dlfs_err_set(err, -EPERM,
				   "cache_dir %s/%s: not private to this user "
				   "(owner uid %u, mode %04o): no local copy of "
				   "the index there",
				   dir, s->id_hex, (unsigned)st.st_uid,
				   (unsigned)(st.st_mode & 07777));
		goto out;
	}
	ret = fd;
	fd = -1;
out:
	if (fd >= 0)
		close(fd);
	close(top);
	return ret;
}

static void stamp_encode(const struct dlfs_seal *s, const struct stat *st,
			 uint8_t *b)
{
	uint8_t *p = b;
	memcpy(p, STAMP_MAGIC, 8);
	p += 8;
	memcpy(p, s->id, DLFS_ID_SIZE);
	p += DLFS_ID_SIZE;
	dlfs_put_le64(p, s->size);
	p += 8;
	memcpy(p, s->sum, 16);
	p += 16;
	uint64_t v[6] = {(uint64_t)st->st_ino,        (uint64_t)st->st_size,
			 (uint64_t)st->st_mtim.tv_sec, (uint64_t)st->st_mtim.tv_nsec,
			 (uint64_t)st->st_ctim.tv_sec, (uint64_t)st->st_ctim.tv_nsec};
	for (int i = 0; i < 6; i++, p += 8)
		dlfs_put_le64(p, v[i]);
}

/* Hash the open copy fd in full. @return 1 (matches s), 0, or -errno. */
static int check_full(int fd, const struct dlfs_seal *s)
{
	struct dlfs_seal now;
	int ret = dlfs_seal_of_fd(fd, s->id, &now);
	return ret ? ret : now.size == s->size && !memcmp(now.sum, s->sum, 16);
}

/* Write the stamp of the copy (fd) beside it, by rename. */
static int write_stamp(int dirfd, int fd, const struct dlfs_seal *s)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return -errno;
	uint8_t b[STAMP_SIZE];
	stamp_encode(s, &st, b);
	char tmp[64];
	snprintf(tmp, sizeof(tmp), STAMP_NAME ".tmp-%d", (int)getpid());
	int sfd = openat(dirfd, tmp,
			 O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
			 0600);
	if (sfd < 0)
		return -errno;
	int ret = dlfs_write_full(sfd, b, sizeof(b));
	if (close(sfd) < 0 && !ret)
		ret = -errno;
	if (!ret && renameat(dirfd, tmp, dirfd, STAMP_NAME) < 0)
		ret = -errno;
	if (ret)
		unlinkat(dirfd, tmp, 0);
	return ret;
}

/* Does the stamp beside the copy (fd, st) name s and this very file? */
static int stamp_matches(int dirfd, const struct stat *st,
			 const struct dlfs_seal *s)
{
	uint8_t want[STAMP_SIZE], have[STAMP_SIZE + 1];
	int sfd = openat(dirfd, STAMP_NAME, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (sfd < 0)
		return 0;
	struct stat sst;
	ssize_t n = -1;
	if (fstat(sfd, &sst) == 0 && own_private_file(&sst))
		n = dlfs_read_full(sfd, have, sizeof(have));
	close(sfd);
	stamp_encode(s, st, want);
	return n == STAMP_SIZE && !memcmp(want, have, STAMP_SIZE);
}

static int path_of(const char *dir, const struct dlfs_seal *s, char **path)
{
	return asprintf(path, "%s/%s/%s", dir, s->id_hex, COPY_NAME) < 0
		       ? -ENOMEM
		       : 0;
}

int dlfs_ixcopy_find(const char *cache_dir, const struct dlfs_seal *s,
		     char **path, struct dlfs_err *err)
{
	*path = NULL;
	int dirfd = open_dir(cache_dir, s, err);
	if (dirfd < 0)
		return dirfd;
	int ret, fd = openat(dirfd, COPY_NAME,
			     O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (fd < 0) {
		ret = errno == ENOENT ? -ENOENT
				      : dlfs_err_sys(err, -errno,
						     "%s/%s/" COPY_NAME,
						     cache_dir, s->id_hex);
		goto out;
	}
	if (fstat(fd, &st) < 0) {
		ret = dlfs_err_sys(err, -errno, "%s/%s/" COPY_NAME, cache_dir,
				   s->id_hex);
		goto out;
	}
	if (!own_private_file(&st)) {
		ret = dlfs_err_set(err, -DLFS_ECORRUPT,
				   "%s/%s/" COPY_NAME ": not a private file "
				   "of this user",
				   cache_dir, s->id_hex);
		goto bad;
	}
	if ((uint64_t)st.st_size == s->size && stamp_matches(dirfd, &st, s)) {
		ret = path_of(cache_dir, s, path);
		goto out;
	}
	/* No stamp, or not this file's: check it in full. */
	ret = (uint64_t)st.st_size == s->size ? check_full(fd, s) : 0;
	if (ret < 0) {
		dlfs_err_sys(err, ret, "%s/%s/" COPY_NAME, cache_dir,
			     s->id_hex);
		goto out;
	}
	if (ret == 1) {
		write_stamp(dirfd, fd, s); /* a failure costs the next mount */
		ret = path_of(cache_dir, s, path);
		goto out;
	}
	if ((uint64_t)st.st_size != s->size)
		ret = dlfs_err_set(err, -DLFS_ECORRUPT,
				   "%s/%s/" COPY_NAME ": %llu bytes, the "
				   "index's seal says %llu",
				   cache_dir, s->id_hex,
				   (unsigned long long)st.st_size,
				   (unsigned long long)s->size);
	else
		ret = dlfs_err_set(err, -DLFS_ECORRUPT,
				   "%s/%s/" COPY_NAME ": its checksum is not "
				   "the one the index's seal gives",
				   cache_dir, s->id_hex);
bad:
	unlinkat(dirfd, STAMP_NAME, 0);
	unlinkat(dirfd, COPY_NAME, 0);
out:
	if (fd >= 0)
		close(fd);
	close(dirfd);
	if (ret == -ENOMEM)
		dlfs_err_set(err, ret, "out of memory");
	return ret;
}

/* Temporary copies of daemons that died on the way: theirs to remove. */
static void remove_stale(int dirfd)
{
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	struct dirent *e;
	size_t pl = strlen(TMP_PREFIX);
	while ((e = readdir(d))) {
		if (strncmp(e->d_name, TMP_PREFIX, pl))
			continue;
		long pid = strtol(e->d_name + pl, NULL, 10);
		if (pid > 0 && kill((pid_t)pid, 0) < 0 && errno == ESRCH)
			unlinkat(dirfd, e->d_name, 0);
	}
	closedir(d);
}

int dlfs_ixcopy_begin(const char *cache_dir, const struct dlfs_seal *s,
		      struct dlfs_ixcopy **out, struct dlfs_err *err)
{
	*out = NULL;
	struct dlfs_ixcopy *c = calloc(1, sizeof(*c));
	if (!c || dlfs_seal_hash_new(&c->h)) {
		free(c);
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	}
	c->seal = *s;
	c->dirfd = c->fd = -1;
	int ret;
	if (!cache_dir) {
		c->fd = memfd_create("dlfs-index", MFD_CLOEXEC);
		if (c->fd < 0) {
			ret = dlfs_err_sys(err, -errno, "memfd_create");
			goto fail;
		}
		c->where = strdup("the index in memory");
	} else {
		ret = c->dirfd = open_dir(cache_dir, s, err);
		if (ret < 0)
			goto fail;
		remove_stale(c->dirfd);
		snprintf(c->tmp, sizeof(c->tmp), TMP_PREFIX "%d",
			 (int)getpid());
		unlinkat(c->dirfd, c->tmp, 0);
		c->fd = openat(c->dirfd, c->tmp,
			       O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
				       O_CLOEXEC,
			       0600);
		if (asprintf(&c->where, "%s/%s/%s", cache_dir, s->id_hex,
			     c->tmp) < 0)
			c->where = NULL;
		if (c->fd < 0) {
			ret = dlfs_err_sys(err, -errno, "%s",
					   c->where ? c->where : cache_dir);
			goto fail;
		}
	}
	if (!c->where) {
		ret = dlfs_err_set(err, -ENOMEM, "out of memory");
		goto fail;
	}
	*out = c;
	return 0;
fail:
	dlfs_ixcopy_abort(c);
	return ret;
}

int dlfs_ixcopy_write(struct dlfs_ixcopy *c, const void *buf, size_t len,
		      struct dlfs_err *err)
{
	if (c->off + len > c->seal.size)
		return dlfs_err_set(err, -DLFS_ECORRUPT,
				    "%s: more bytes than the seal's %llu",
				    c->where,
				    (unsigned long long)c->seal.size);
	int ret = dlfs_pwrite_full(c->fd, buf, len, c->off);
	if (ret)
		return dlfs_err_sys(err, ret, "%s: write at offset %llu",
				    c->where, (unsigned long long)c->off);
	dlfs_seal_hash_add(c->h, buf, len);
	c->off += len;
	return 0;
}

int dlfs_ixcopy_end(struct dlfs_ixcopy *c, char **path, int *hold_fd,
		    struct dlfs_err *err)
{
	*path = NULL;
	*hold_fd = -1;
	int ok = dlfs_seal_hash_end(c->h, &c->seal);
	c->h = NULL;
	int ret = 0;
	if (!ok) {
		ret = dlfs_err_set(err, -DLFS_ECORRUPT,
				   "%s: %llu bytes that do not match the "
				   "index's seal (%llu bytes)",
				   c->where, (unsigned long long)c->off,
				   (unsigned long long)c->seal.size);
		goto out;
	}
	if (c->dirfd < 0) {
		if (asprintf(path, "/proc/self/fd/%d", c->fd) < 0) {
			*path = NULL;
			ret = dlfs_err_set(err, -ENOMEM, "out of memory");
			goto out;
		}
		*hold_fd = c->fd;
		c->fd = -1;
		goto out;
	}
	/* Durable before it is named: a crash must not leave a named copy
	 * with holes (the stamp would not match it anyway). */
	if (fsync(c->fd) < 0 || fchmod(c->fd, 0600) < 0) {
		ret = dlfs_err_sys(err, -errno, "%s", c->where);
		goto out;
	}
	if (renameat(c->dirfd, c->tmp, c->dirfd, COPY_NAME) < 0) {
		ret = dlfs_err_sys(err, -errno, "%s: renaming it", c->where);
		goto out;
	}
	c->tmp[0] = '\0';
	write_stamp(c->dirfd, c->fd, &c->seal); /* a failure: checked again */
	fsync(c->dirfd);
	/* where is DIR/<id>/index.tmp-PID: the copy is its sibling. */
	char *slash = strrchr(c->where, '/');
	if (asprintf(path, "%.*s/" COPY_NAME, (int)(slash - c->where),
		     c->where) < 0) {
		*path = NULL;
		ret = dlfs_err_set(err, -ENOMEM, "out of memory");
	}
out:
	dlfs_ixcopy_abort(c);
	return ret;
}

void dlfs_ixcopy_abort(struct dlfs_ixcopy *c)
{
	if (!c)
		return;
	if (c->fd >= 0)
		close(c->fd);
	if (c->dirfd >= 0) {
		if (c->tmp[0])
			unlinkat(c->dirfd, c->tmp, 0);
		close(c->dirfd);
	}
	if (c->h)
		dlfs_seal_hash_end(c->h, &c->seal);
	free(c->where);
	free(c);
}

int dlfs_ixcopy_fetch(const char *dataset, const char *cache_dir,
		      const struct dlfs_seal *s, char **path, int *hold_fd,
		      uint64_t *pfs_bytes, struct dlfs_err *err)
{
	struct dlfs_ixcopy *c = NULL;
	char *ipath = NULL;
	uint8_t *buf = malloc(DLFS_IXCOPY_PIECE);
	int fd = -1, ret;
	*path = NULL;
	*hold_fd = -1;
	if (!buf || asprintf(&ipath, "%s/%s", dataset, DLFS_INDEX_NAME) < 0) {
		ipath = NULL;
		ret = dlfs_err_set(err, -ENOMEM, "out of memory");
		goto out;
	}
	fd = open(ipath, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = dlfs_err_sys(err, -errno, "%s", ipath);
		goto out;
	}
	/* One pass, front to back: let the kernel read ahead far. */
	posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	if ((ret = dlfs_ixcopy_begin(cache_dir, s, &c, err)))
		goto out;
	for (uint64_t off = 0; off < s->size;) {
		size_t want = s->size - off < DLFS_IXCOPY_PIECE
				      ? (size_t)(s->size - off)
				      : DLFS_IXCOPY_PIECE;
		ssize_t n = dlfs_pread_full(fd, buf, want, off);
		if (n < 0) {
			ret = dlfs_err_sys(err, (int)n,
					   "%s: read at offset %llu", ipath,
					   (unsigned long long)off);
			goto out;
		}
		*pfs_bytes += (uint64_t)n;
		if ((size_t)n < want) {
			ret = dlfs_err_set(err, -DLFS_ECORRUPT,
					   "%s: %llu bytes, its seal says %llu: "
					   "truncated",
					   ipath, (unsigned long long)(off + n),
					   (unsigned long long)s->size);
			goto out;
		}
		/* The copy is what is used: the PFS's pages need not stay. */
		posix_fadvise(fd, (off_t)off, (off_t)n, POSIX_FADV_DONTNEED);
		if ((ret = dlfs_ixcopy_write(c, buf, (size_t)n, err)))
			goto out;
		off += (uint64_t)n;
	}
	ret = dlfs_ixcopy_end(c, path, hold_fd, err);
	c = NULL;
out:
	dlfs_ixcopy_abort(c);
	if (fd >= 0)
		close(fd);
	free(ipath);
	free(buf);
	return ret;
}
