/*
 * intercept_stat: the exported calls that look at a path or an fd without
 * reading its bytes: the stat family, statx, access, readlink, realpath.
 */
#undef _FORTIFY_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "conn.h"
#include "cwd.h"
#include "icept.h"
#include "ns.h"
#include "state.h"
#include "real.h"

/* The stat family. */

/* fstatat(dirfd, "", AT_EMPTY_PATH): dirfd's own attributes, when it is
 * ours or the virtual cwd. @return 1 (*st filled), 0 (not ours), or -1
 * and errno. */
static int empty_path_stat(int dirfd, struct stat *st)
{
	char v[PATH_MAX];
	if (dirfd == AT_FDCWD)
		return dlfs_vcwd_get(v, sizeof(v), NULL, st, NULL);
	struct dlfs_file *f = dlfs_fd_get(dirfd);
	if (!f)
		return 0;
	int ret = dlfs_file_stat(f, st);
	dlfs_file_put(f);
	return ret ? -1 : 1;
}

static int do_fstatat(int dirfd, const char *path, struct stat *st, int flags)
{
	if ((flags & AT_EMPTY_PATH) && path && !path[0]) {
		int k = empty_path_stat(dirfd, st);
		if (k)
			return k > 0 ? 0 : -1;
		return dlfs_real()->fstatat(dirfd, path, st, flags);
	}
	struct dlfs_vp_res res;
	int ret = dlfs_classify(dirfd, path, flags & AT_SYMLINK_NOFOLLOW, &res);
	if (ret)
		return dlfs_fail(-ret);
	if (res.kind == DLFS_VP_PASS)
		return dlfs_real()->fstatat(dirfd, path, st, flags);
	if (res.kind == DLFS_VP_REAL)
		return dlfs_real()->fstatat(AT_FDCWD, res.path, st, flags);
	*st = res.st;
	return 0;
}

static int do_fstat(int fd, struct stat *st)
{
	struct dlfs_file *f = dlfs_fd_get(fd);
	if (!f)
		return dlfs_real()->fstat(fd, st);
	int ret = dlfs_file_stat(f, st);
	dlfs_file_put(f);
	return ret;
}

DLFS_EXPORT int stat(const char *path, struct stat *st)
{
	return do_fstatat(AT_FDCWD, path, st, 0);
}

DLFS_EXPORT int stat64(const char *path, struct stat64 *st)
{
	return do_fstatat(AT_FDCWD, path, (struct stat *)st, 0);
}

DLFS_EXPORT int lstat(const char *path, struct stat *st)
{
	return do_fstatat(AT_FDCWD, path, st, AT_SYMLINK_NOFOLLOW);
}

DLFS_EXPORT int lstat64(const char *path, struct stat64 *st)
{
	return do_fstatat(AT_FDCWD, path, (struct stat *)st,
			  AT_SYMLINK_NOFOLLOW);
}

DLFS_EXPORT int fstatat(int dirfd, const char *path, struct stat *st, int flags)
{
	return do_fstatat(dirfd, path, st, flags);
}

DLFS_EXPORT int fstatat64(int dirfd, const char *path, struct stat64 *st,
			  int flags)
{
	return do_fstatat(dirfd, path, (struct stat *)st, flags);
}

DLFS_EXPORT int fstat(int fd, struct stat *st)
{
	return do_fstat(fd, st);
}

DLFS_EXPORT int fstat64(int fd, struct stat64 *st)
{
	return do_fstat(fd, (struct stat *)st);
}

_Static_assert(sizeof(struct stat) == sizeof(struct stat64),
	       "stat64 is stat on this ABI");

/* The old versioned entry points (programs built before glibc 2.33); on
 * x86-64 every version of struct stat is the kernel's. */
DLFS_EXPORT int __xstat(int ver, const char *path, struct stat *st)
{
	(void)ver;
	return do_fstatat(AT_FDCWD, path, st, 0);
}

DLFS_EXPORT int __xstat64(int ver, const char *path, struct stat64 *st)
{
	(void)ver;
	return do_fstatat(AT_FDCWD, path, (struct stat *)st, 0);
}

DLFS_EXPORT int __lxstat(int ver, const char *path, struct stat *st)
{
	(void)ver;
	return do_fstatat(AT_FDCWD, path, st, AT_SYMLINK_NOFOLLOW);
}

DLFS_EXPORT int __lxstat64(int ver, const char *path, struct stat64 *st)
{
	(void)ver;
	return do_fstatat(AT_FDCWD, path, (struct stat *)st,
			  AT_SYMLINK_NOFOLLOW);
}

DLFS_EXPORT int __fxstat(int ver, int fd, struct stat *st)
{
	(void)ver;
	return do_fstat(fd, st);
}

DLFS_EXPORT int __fxstat64(int ver, int fd, struct stat64 *st)
{
	(void)ver;
	return do_fstat(fd, (struct stat *)st);
}

DLFS_EXPORT int __fxstatat(int ver, int dirfd, const char *path,
			   struct stat *st,
			   int flags)
{
	(void)ver;
	return do_fstatat(dirfd, path, st, flags);
}

DLFS_EXPORT int __fxstatat64(int ver, int dirfd, const char *path,
			     struct stat64 *st, int flags)
{
	(void)ver;
	return do_fstatat(dirfd, path, (struct stat *)st, flags);
}

static struct statx_timestamp ts_of(struct timespec t)
{
	return (struct statx_timestamp){.tv_sec = t.tv_sec,
					.tv_nsec = (uint32_t)t.tv_nsec};
}

static void statx_of(const struct stat *st, struct statx *sx)
{
	memset(sx, 0, sizeof(*sx));
	sx->stx_mask = STATX_BASIC_STATS;
	sx->stx_blksize = (uint32_t)st->st_blksize;
	sx->stx_nlink = (uint32_t)st->st_nlink;
	sx->stx_uid = st->st_uid;
	sx->stx_gid = st->st_gid;
	sx->stx_mode = (uint16_t)st->st_mode;
	sx->stx_ino = st->st_ino;
	sx->stx_size = (uint64_t)st->st_size;
	sx->stx_blocks = (uint64_t)st->st_blocks;
	sx->stx_atime = ts_of(st->st_atim);
	sx->stx_ctime = ts_of(st->st_ctim);
	sx->stx_mtime = ts_of(st->st_mtim);
	sx->stx_dev_major = major(st->st_dev);
	sx->stx_dev_minor = minor(st->st_dev);
	sx->stx_rdev_major = major(st->st_rdev);
	sx->stx_rdev_minor = minor(st->st_rdev);
}

DLFS_EXPORT int statx(int dirfd, const char *path, int flags, unsigned mask,
		      struct statx *sx)
{
	struct stat st;
	if ((flags & AT_EMPTY_PATH) && path && !path[0]) {
		int k = empty_path_stat(dirfd, &st);
		if (!k)
			return dlfs_real()->statx(dirfd, path, flags, mask, sx);
		if (k > 0)
			statx_of(&st, sx);
		return k > 0 ? 0 : -1;
	}
	struct dlfs_vp_res res;
	int ret = dlfs_classify(dirfd, path, flags & AT_SYMLINK_NOFOLLOW, &res);
	if (ret)
		return dlfs_fail(-ret);
	if (res.kind == DLFS_VP_PASS)
		return dlfs_real()->statx(dirfd, path, flags, mask, sx);
	if (res.kind == DLFS_VP_REAL)
		return dlfs_real()->statx(AT_FDCWD, res.path, flags, mask, sx);
	statx_of(&res.st, sx);
	return 0;
}

/* access: the mode bits, as default_permissions makes the mount check
 * them; writing is EROFS. */
static int may(const struct stat *st, int mode, int effective)
{
	if (mode == F_OK)
		return 0;
	if (mode & W_OK)
		return dlfs_fail(EROFS);
	uid_t uid = effective ? geteuid() : getuid();
	gid_t gid = effective ? getegid() : getgid();
	unsigned bits;
	if (uid == 0) {
		/* root may read anything, and run what someone may run */
		if ((mode & X_OK) && !S_ISDIR(st->st_mode) &&
		    !(st->st_mode & 0111))
			return dlfs_fail(EACCES);
		return 0;
	}
	if (st->st_uid == uid)
		bits = (st->st_mode >> 6) & 7;
	else if (st->st_gid == gid || group_member(st->st_gid))
		bits = (st->st_mode >> 3) & 7;
	else
		bits = st->st_mode & 7;
	if (((mode & R_OK) && !(bits & 4)) || ((mode & X_OK) && !(bits & 1)))
		return dlfs_fail(EACCES);
	return 0;
}

static int do_faccessat(int dirfd, const char *path, int mode, int flags)
{
	struct dlfs_vp_res res;
	int ret = dlfs_classify(dirfd, path, flags & AT_SYMLINK_NOFOLLOW, &res);
	if (ret)
		return dlfs_fail(-ret);
	if (res.kind == DLFS_VP_PASS)
		return dlfs_real()->faccessat(dirfd, path, mode, flags);
	if (res.kind == DLFS_VP_REAL)
		return dlfs_real()->faccessat(AT_FDCWD, res.path, mode, flags);
	if (mode & ~(R_OK | W_OK | X_OK))
		return dlfs_fail(EINVAL);
	return may(&res.st, mode, flags & AT_EACCESS);
}

DLFS_EXPORT int access(const char *path, int mode)
{
	return do_faccessat(AT_FDCWD, path, mode, 0);
}

DLFS_EXPORT int faccessat(int dirfd, const char *path, int mode, int flags)
{
	return do_faccessat(dirfd, path, mode, flags);
}

DLFS_EXPORT int euidaccess(const char *path, int mode)
{
	return do_faccessat(AT_FDCWD, path, mode, AT_EACCESS);
}

DLFS_EXPORT int eaccess(const char *path, int mode)
{
	return do_faccessat(AT_FDCWD, path, mode, AT_EACCESS);
}

/* readlink and realpath */

static ssize_t do_readlinkat(int dirfd, const char *path, char *buf,
			     size_t size)
{
	struct dlfs_vp_res res;
	if ((int)size <= 0)
		return dlfs_fail(EINVAL); /* the kernel's int bufsiz, first */
	int ret = dlfs_classify(dirfd, path, 1, &res);
	if (ret)
		return dlfs_fail(-ret);
	if (res.kind == DLFS_VP_PASS)
		return dlfs_real()->readlinkat(dirfd, path, buf, size);
	if (res.kind == DLFS_VP_REAL)
		return dlfs_real()->readlinkat(AT_FDCWD, res.path, buf, size);
	if (!S_ISLNK(res.st.st_mode))
		return dlfs_fail(EINVAL);
	char target[PATH_MAX];
	long n = dlfs_ns_readlink(res.ino, target, sizeof(target));
	if (n < 0) {
		dlfs_conn_report(NULL, res.path, n);
		return dlfs_fail((int)-n);
	}
	if ((size_t)n > size)
		n = (long)size; /* readlink truncates */
	memcpy(buf, target, (size_t)n);
	return n;
}

DLFS_EXPORT ssize_t readlink(const char *path, char *buf, size_t size)
{
	return do_readlinkat(AT_FDCWD, path, buf, size);
}

DLFS_EXPORT ssize_t readlinkat(int dirfd, const char *path, char *buf,
			       size_t size)
{
	return do_readlinkat(dirfd, path, buf, size);
}

DLFS_EXPORT ssize_t __readlink_chk(const char *path, char *buf, size_t size,
				   size_t buflen)
{
	if (size > buflen)
		abort();
	return do_readlinkat(AT_FDCWD, path, buf, size);
}

DLFS_EXPORT ssize_t __readlinkat_chk(int dirfd, const char *path, char *buf,
				     size_t size, size_t buflen)
{
	if (size > buflen)
		abort();
	return do_readlinkat(dirfd, path, buf, size);
}

DLFS_EXPORT char *realpath(const char *path, char *out)
{
	struct dlfs_vp_res res;
	if (!path) {
		errno = EINVAL;
		return NULL;
	}
	int ret = dlfs_classify(AT_FDCWD, path, 0, &res);
	if (ret) {
		errno = -ret;
		return NULL;
	}
	if (res.kind != DLFS_VP_OURS)
		return dlfs_real()->realpath(
			res.kind == DLFS_VP_REAL ? res.path : path, out);
	if (!out && !(out = malloc(PATH_MAX))) {
		errno = ENOMEM;
		return NULL;
	}
	strcpy(out, res.path);
	return out;
}

DLFS_EXPORT char *__realpath_chk(const char *path, char *out, size_t outlen)
{
	if (out && outlen < PATH_MAX)
		abort();
	return realpath(path, out);
}

DLFS_EXPORT char *canonicalize_file_name(const char *path)
{
	return realpath(path, NULL);
}
