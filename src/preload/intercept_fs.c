/*
 * intercept_fs: what a path or fd says about its filesystem rather than
 * its file: the xattrs, statfs and statvfs, pathconf and fpathconf, each
 * as the FUSE mount of the dataset answers.
 */
#undef _FORTIFY_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "conn.h"
#include "icept.h"
#include "ns.h"
#include "state.h"
#include "real.h"

/* xattrs: the dataset's own (user.dlfs.*), as the mount answers them. */

static ssize_t xattr_path(const char *path, int nofollow, const char *name,
			  void *v, size_t size, int list, int *pass)
{
	struct dlfs_vp_res res;
	int ret = dlfs_classify(AT_FDCWD, path, nofollow, &res);
	*pass = 0;
	if (ret)
		return dlfs_fail(-ret);
	if (res.kind != DLFS_VP_OURS) {
		*pass = 1;
		return 0;
	}
	long n = list ? dlfs_ns_listxattr(res.ino, v, size)
		      : dlfs_ns_getxattr(res.ino, name, v, size);
	dlfs_conn_report(NULL, res.path, n);
	return n < 0 ? dlfs_fail((int)-n) : n;
}

static ssize_t xattr_fd(struct dlfs_file *f, const char *name, void *v,
			size_t size, int list)
{
	long n = (f->flags & O_PATH) ? -EBADF /* the kernel's fdget */
	       : list		     ? dlfs_ns_listxattr(f->ino, v, size)
				     : dlfs_ns_getxattr(f->ino, name, v, size);
	dlfs_conn_report(NULL, f->vpath, n);
	dlfs_file_put(f);
	return n < 0 ? dlfs_fail((int)-n) : n;
}

DLFS_EXPORT ssize_t getxattr(const char *path, const char *name, void *v,
			     size_t size)
{
	int pass;
	ssize_t n = xattr_path(path, 0, name, v, size, 0, &pass);
	return pass ? dlfs_real()->getxattr(path, name, v, size) : n;
}

DLFS_EXPORT ssize_t lgetxattr(const char *path, const char *name, void *v,
			      size_t size)
{
	int pass;
	ssize_t n = xattr_path(path, 1, name, v, size, 0, &pass);
	return pass ? dlfs_real()->lgetxattr(path, name, v, size) : n;
}

DLFS_EXPORT ssize_t fgetxattr(int fd, const char *name, void *v, size_t size)
{
	struct dlfs_file *f = dlfs_fd_get(fd);
	if (!f)
		return dlfs_real()->fgetxattr(fd, name, v, size);
	return xattr_fd(f, name, v, size, 0);
}

DLFS_EXPORT ssize_t listxattr(const char *path, char *list, size_t size)
{
	int pass;
	ssize_t n = xattr_path(path, 0, NULL, list, size, 1, &pass);
	return pass ? dlfs_real()->listxattr(path, list, size) : n;
}

DLFS_EXPORT ssize_t llistxattr(const char *path, char *list, size_t size)
{
	int pass;
	ssize_t n = xattr_path(path, 1, NULL, list, size, 1, &pass);
	return pass ? dlfs_real()->llistxattr(path, list, size) : n;
}

DLFS_EXPORT ssize_t flistxattr(int fd, char *list, size_t size)
{
	struct dlfs_file *f = dlfs_fd_get(fd);
	if (!f)
		return dlfs_real()->flistxattr(fd, list, size);
	return xattr_fd(f, NULL, list, size, 1);
}

/* statfs and statvfs: the server's answer, as the mount's. */

#define FUSE_SUPER_MAGIC 0x65735546

static void statfs_of(const struct statvfs *sv, struct statfs *sf)
{
	memset(sf, 0, sizeof(*sf));
	sf->f_type = FUSE_SUPER_MAGIC;
	sf->f_bsize = (long)sv->f_bsize;
	sf->f_frsize = (long)sv->f_frsize;
	sf->f_blocks = sv->f_blocks;
	sf->f_bfree = sv->f_bfree;
	sf->f_bavail = sv->f_bavail;
	sf->f_files = sv->f_files;
	sf->f_ffree = sv->f_ffree;
	sf->f_namelen = (long)sv->f_namemax;
	sf->f_flags = (long)(sv->f_flag | ST_RDONLY);
}

/* @return 1 (ours: *sv filled), 0 (not ours), or -1 and errno. */
static int vfs_path(const char *path, struct statvfs *sv, const char **rp,
		    struct dlfs_vp_res *res)
{
	int ret = dlfs_classify(AT_FDCWD, path, 0, res);
	if (ret)
		return dlfs_fail(-ret);
	*rp = res->kind == DLFS_VP_REAL ? res->path : path;
	if (res->kind != DLFS_VP_OURS)
		return 0;
	ret = dlfs_ns_statfs(sv);
	return ret ? dlfs_fail(-ret) : 1;
}

static int vfs_fd(int fd, struct statvfs *sv)
{
	struct dlfs_file *f = dlfs_fd_get(fd);
	if (!f)
		return 0;
	dlfs_file_put(f);
	int ret = dlfs_ns_statfs(sv);
	return ret ? dlfs_fail(-ret) : 1;
}

DLFS_EXPORT int statvfs(const char *path, struct statvfs *sv)
{
	struct dlfs_vp_res res;
	const char *rp;
	int k = vfs_path(path, sv, &rp, &res);
	return k ? (k < 0 ? -1 : 0) : dlfs_real()->statvfs(rp, sv);
}

DLFS_EXPORT int statvfs64(const char *path, struct statvfs64 *sv)
{
	return statvfs(path, (struct statvfs *)sv);
}

DLFS_EXPORT int fstatvfs(int fd, struct statvfs *sv)
{
	int k = vfs_fd(fd, sv);
	return k ? (k < 0 ? -1 : 0) : dlfs_real()->fstatvfs(fd, sv);
}

DLFS_EXPORT int fstatvfs64(int fd, struct statvfs64 *sv)
{
	return fstatvfs(fd, (struct statvfs *)sv);
}

DLFS_EXPORT int statfs(const char *path, struct statfs *sf)
{
	struct dlfs_vp_res res;
	struct statvfs sv;
	const char *rp;
	int k = vfs_path(path, &sv, &rp, &res);
	if (!k)
		return dlfs_real()->statfs(rp, sf);
	if (k > 0)
		statfs_of(&sv, sf);
	return k < 0 ? -1 : 0;
}

DLFS_EXPORT int statfs64(const char *path, struct statfs64 *sf)
{
	return statfs(path, (struct statfs *)sf);
}

DLFS_EXPORT int fstatfs(int fd, struct statfs *sf)
{
	struct statvfs sv;
	int k = vfs_fd(fd, &sv);
	if (!k)
		return dlfs_real()->fstatfs(fd, sf);
	if (k > 0)
		statfs_of(&sv, sf);
	return k < 0 ? -1 : 0;
}

DLFS_EXPORT int fstatfs64(int fd, struct statfs64 *sf)
{
	return fstatfs(fd, (struct statfs *)sf);
}

_Static_assert(sizeof(struct statfs) == sizeof(struct statfs64) &&
		       sizeof(struct statvfs) == sizeof(struct statvfs64),
	       "statfs64 is statfs on this ABI");

/*
 * pathconf and fpathconf: glibc's answers for a file on the mount, whose
 * statfs type is FUSE's (glibc knows no limits for it: LINK_MAX 127,
 * FILESIZEBITS 32), and the server's statvfs. glibc's own would ask the
 * kernel about a path that is not on disk.
 */
static long pathconf_ours(const struct stat *st, int name)
{
	struct statvfs sv;
	int ret;
	switch (name) {
	case _PC_LINK_MAX:
		return 127;
	case _PC_FILESIZEBITS:
		return 32;
	case _PC_2_SYMLINKS:
	case _PC_CHOWN_RESTRICTED:
		return 1;
	case _PC_ASYNC_IO:
		return S_ISREG(st->st_mode) ? 1 : -1;
	case _PC_NAME_MAX:
	case _PC_REC_MIN_XFER_SIZE:
	case _PC_REC_XFER_ALIGN:
	case _PC_ALLOC_SIZE_MIN:
		if ((ret = dlfs_ns_statfs(&sv)))
			return dlfs_fail(-ret);
		return name == _PC_NAME_MAX	    ? (long)sv.f_namemax
		       : name == _PC_REC_MIN_XFER_SIZE ? (long)sv.f_bsize
						       : (long)sv.f_frsize;
	default:
		/* The same for every file (or EINVAL): "/" answers. */
		return dlfs_real()->pathconf("/", name);
	}
}

DLFS_EXPORT long pathconf(const char *path, int name)
{
	struct dlfs_vp_res res;
	int ret = dlfs_classify(AT_FDCWD, path, 0, &res);
	if (ret)
		return dlfs_fail(-ret);
	if (res.kind != DLFS_VP_OURS)
		return dlfs_real()->pathconf(
			res.kind == DLFS_VP_REAL ? res.path : path, name);
	return pathconf_ours(&res.st, name);
}

DLFS_EXPORT long fpathconf(int fd, int name)
{
	struct dlfs_file *f = dlfs_fd_get(fd);
	if (!f)
		return dlfs_real()->fpathconf(fd, name);
	struct stat st = f->st;
	dlfs_file_put(f);
	return pathconf_ours(&st, name);
}
