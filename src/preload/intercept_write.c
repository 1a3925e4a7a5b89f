/*
 * intercept_write: everything that would change the dataset fails as on a
 * read-only filesystem (also glibc's remove, mkfifo, mkstemp family, futimes
 * and lutimes, which use its internal calls): EROFS for a path under the prefix
 * (EEXIST when the call would create a name that exists, as the kernel checks
 * that first), EXDEV for a rename or link between the dataset and elsewhere,
 * EBADF for a write on a dataset fd (it is open read-only).
 */
#undef _FORTIFY_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/xattr.h>
#include <unistd.h>
#include <utime.h>

#include "icept.h"
#include "state.h"
#include "real.h"

/* What a call does to the name it is given. */
enum {
	ATTR = 0, /* changes the node: a missing name is ENOENT (chmod) */
	MAKE = 1, /* makes the name: EEXIST if it is there (mkdir) */
	DROP = 2, /* removes the name: EROFS even if it is not there, as
		   * the kernel asks for write access first (unlink) */
};

/* Where a path call goes: res->kind PASS (dirfd, path as given) or REAL
 * (AT_FDCWD, res->path). @return 0, or -1 and errno for a path of ours. */
static int ro(int dirfd, const char *path, int nofollow, int what,
	      struct dlfs_vp_res *res)
{
	int ret = dlfs_classify(dirfd, path, nofollow, res);
	if (ret == -ENOENT && what != ATTR && dlfs_parent_ours(dirfd, path))
		return dlfs_fail(EROFS);
	if (ret)
		return dlfs_fail(-ret);
	if (res->kind == DLFS_VP_OURS)
		return dlfs_fail(what == MAKE ? EEXIST : EROFS);
	return 0;
}

/* The dirfd and path to give libc after ro(). */
static int rdir(int dirfd, const struct dlfs_vp_res *res)
{
	return res->kind == DLFS_VP_REAL ? AT_FDCWD : dirfd;
}

static const char *rpath(const char *path, const struct dlfs_vp_res *res)
{
	return res->kind == DLFS_VP_REAL ? res->path : path;
}

DLFS_EXPORT int mkdirat(int dirfd, const char *path, mode_t mode)
{
	struct dlfs_vp_res res;
	if (ro(dirfd, path, 1, MAKE, &res))
		return -1;
	return dlfs_real()->mkdirat(rdir(dirfd, &res), rpath(path, &res), mode);
}

DLFS_EXPORT int mkdir(const char *path, mode_t mode)
{
	return mkdirat(AT_FDCWD, path, mode);
}

DLFS_EXPORT int mknodat(int dirfd, const char *path, mode_t mode, dev_t dev)
{
	struct dlfs_vp_res res;
	if (ro(dirfd, path, 1, MAKE, &res))
		return -1;
	return dlfs_real()->mknodat(rdir(dirfd, &res), rpath(path, &res), mode,
				    dev);
}

DLFS_EXPORT int mknod(const char *path, mode_t mode, dev_t dev)
{
	return mknodat(AT_FDCWD, path, mode, dev);
}

DLFS_EXPORT int symlinkat(const char *target, int dirfd, const char *path)
{
	struct dlfs_vp_res res;
	if (ro(dirfd, path, 1, MAKE, &res))
		return -1;
	return dlfs_real()->symlinkat(target, rdir(dirfd, &res),
				      rpath(path, &res));
}

DLFS_EXPORT int symlink(const char *target, const char *path)
{
	return symlinkat(target, AT_FDCWD, path);
}

DLFS_EXPORT int unlinkat(int dirfd, const char *path, int flags)
{
	struct dlfs_vp_res res;
	if (ro(dirfd, path, 1, DROP, &res))
		return -1;
	return dlfs_real()->unlinkat(rdir(dirfd, &res), rpath(path, &res),
				     flags);
}

DLFS_EXPORT int unlink(const char *path)
{
	return unlinkat(AT_FDCWD, path, 0);
}

DLFS_EXPORT int rmdir(const char *path)
{
	return unlinkat(AT_FDCWD, path, AT_REMOVEDIR);
}

/* glibc's remove, mkfifo and the mkstemp family make or drop the name
 * with its internal calls, which would give ENOENT for the prefix (it is
 * not on disk) instead of the mount's EROFS. */

DLFS_EXPORT int remove(const char *path)
{
	struct dlfs_vp_res res;
	if (ro(AT_FDCWD, path, 1, DROP, &res))
		return -1;
	return dlfs_real()->remove(rpath(path, &res));
}

DLFS_EXPORT int mkfifoat(int dirfd, const char *path, mode_t mode)
{
	struct dlfs_vp_res res;
	if (ro(dirfd, path, 1, MAKE, &res))
		return -1;
	return dlfs_real()->mkfifoat(rdir(dirfd, &res), rpath(path, &res),
				     mode);
}

DLFS_EXPORT int mkfifo(const char *path, mode_t mode)
{
	return mkfifoat(AT_FDCWD, path, mode);
}

/* A template of the mkstemp family ("...XXXXXX", then suffixlen bytes):
 * would its file be made under the prefix? @return 0 (no, or a template
 * libc refuses: libc's call), or -1 and errno (the walk's error, or
 * EROFS). */
static int temp_refused(const char *tmpl, int suffixlen)
{
	size_t n = tmpl ? strlen(tmpl) : 0;
	if (suffixlen < 0 || n < 6 + (size_t)suffixlen ||
	    memcmp(tmpl + n - (size_t)suffixlen - 6, "XXXXXX", 6))
		return 0;
	struct dlfs_vp_res res;
	int ret = dlfs_parent_classify(AT_FDCWD, tmpl, &res);
	if (ret)
		return dlfs_fail(-ret);
	if (res.kind != DLFS_VP_OURS)
		return 0;
	return dlfs_fail(S_ISDIR(res.st.st_mode) ? EROFS : ENOTDIR);
}

DLFS_EXPORT int mkostemps(char *tmpl, int suffixlen, int flags)
{
	if (temp_refused(tmpl, suffixlen))
		return -1;
	return dlfs_real()->mkostemps(tmpl, suffixlen, flags);
}

DLFS_EXPORT int mkstemp(char *tmpl)
{
	if (temp_refused(tmpl, 0))
		return -1;
	return dlfs_real()->mkstemp(tmpl);
}

DLFS_EXPORT int mkostemp(char *tmpl, int flags)
{
	if (temp_refused(tmpl, 0))
		return -1;
	return dlfs_real()->mkostemp(tmpl, flags);
}

DLFS_EXPORT int mkstemps(char *tmpl, int suffixlen)
{
	if (temp_refused(tmpl, suffixlen))
		return -1;
	return dlfs_real()->mkstemps(tmpl, suffixlen);
}

DLFS_EXPORT int mkstemp64(char *tmpl) DLFS_ALIAS(mkstemp);
DLFS_EXPORT int mkostemp64(char *tmpl, int flags) DLFS_ALIAS(mkostemp);
DLFS_EXPORT int mkstemps64(char *tmpl, int suffixlen) DLFS_ALIAS(mkstemps);
DLFS_EXPORT int mkostemps64(char *tmpl, int suffixlen, int flags)
	DLFS_ALIAS(mkostemps);

DLFS_EXPORT char *mkdtemp(char *tmpl)
{
	if (temp_refused(tmpl, 0))
		return NULL;
	return dlfs_real()->mkdtemp(tmpl);
}

/* rename and link: both names ours is EROFS, one of them EXDEV. */
static int two(int odir, const char *old, int ndir, const char *new,
	       int nofollow, struct dlfs_vp_res *ro_, struct dlfs_vp_res *rn)
{
	int eo = dlfs_classify(odir, old, nofollow, ro_);
	int en = dlfs_classify(ndir, new, 1, rn);
	int old_ours = (!eo && ro_->kind == DLFS_VP_OURS) ||
		       (eo == -ENOENT && dlfs_parent_ours(odir, old));
	int new_ours = (!en && rn->kind == DLFS_VP_OURS) ||
		       (en == -ENOENT && dlfs_parent_ours(ndir, new));
	/* An error inside the dataset other than a missing last name. */
	if (eo && !old_ours)
		return dlfs_fail(-eo);
	if (en && !new_ours)
		return dlfs_fail(-en);
	if (old_ours && new_ours)
		return dlfs_fail(EROFS);
	if (old_ours || new_ours)
		return dlfs_fail(EXDEV);
	return 0;
}

DLFS_EXPORT int renameat2(int odir, const char *old, int ndir, const char *new,
			  unsigned flags)
{
	struct dlfs_vp_res a, b;
	if (two(odir, old, ndir, new, 1, &a, &b))
		return -1;
	return dlfs_real()->renameat2(rdir(odir, &a), rpath(old, &a),
				      rdir(ndir, &b), rpath(new, &b), flags);
}

DLFS_EXPORT int renameat(int odir, const char *old, int ndir, const char *new)
{
	return renameat2(odir, old, ndir, new, 0);
}

DLFS_EXPORT int rename(const char *old, const char *new)
{
	return renameat2(AT_FDCWD, old, AT_FDCWD, new, 0);
}

DLFS_EXPORT int linkat(int odir, const char *old, int ndir, const char *new,
		       int flags)
{
	struct dlfs_vp_res a, b;
	if (two(odir, old, ndir, new, !(flags & AT_SYMLINK_FOLLOW), &a, &b))
		return -1;
	return dlfs_real()->linkat(rdir(odir, &a), rpath(old, &a),
				   rdir(ndir, &b), rpath(new, &b), flags);
}

DLFS_EXPORT int link(const char *old, const char *new)
{
	return linkat(AT_FDCWD, old, AT_FDCWD, new, 0);
}

/* Attribute changes. */

/* truncate checks the length, then the type, then the mount. */
DLFS_EXPORT int truncate(const char *path, off_t len)
{
	struct dlfs_vp_res res;
	if (len < 0)
		return dlfs_fail(EINVAL);
	int ret = dlfs_classify(AT_FDCWD, path, 0, &res);
	if (ret)
		return dlfs_fail(-ret);
	if (res.kind == DLFS_VP_OURS)
		return dlfs_fail(S_ISDIR(res.st.st_mode)    ? EISDIR
				 : !S_ISREG(res.st.st_mode) ? EINVAL
							    : EROFS);
	return dlfs_real()->truncate(rpath(path, &res), len);
}

DLFS_EXPORT int truncate64(const char *path, off_t len) DLFS_ALIAS(truncate);

DLFS_EXPORT int fchmodat(int dirfd, const char *path, mode_t mode, int flags)
{
	struct dlfs_vp_res res;
	if (ro(dirfd, path, flags & AT_SYMLINK_NOFOLLOW, ATTR, &res))
		return -1;
	return dlfs_real()->fchmodat(rdir(dirfd, &res), rpath(path, &res),
				     mode, flags);
}

DLFS_EXPORT int chmod(const char *path, mode_t mode)
{
	return fchmodat(AT_FDCWD, path, mode, 0);
}

DLFS_EXPORT int fchownat(int dirfd, const char *path, uid_t uid, gid_t gid,
			 int flags)
{
	struct dlfs_vp_res res;
	if (ro(dirfd, path, flags & AT_SYMLINK_NOFOLLOW, ATTR, &res))
		return -1;
	return dlfs_real()->fchownat(rdir(dirfd, &res), rpath(path, &res), uid,
				     gid, flags);
}

DLFS_EXPORT int chown(const char *path, uid_t uid, gid_t gid)
{
	return fchownat(AT_FDCWD, path, uid, gid, 0);
}

DLFS_EXPORT int lchown(const char *path, uid_t uid, gid_t gid)
{
	return fchownat(AT_FDCWD, path, uid, gid, AT_SYMLINK_NOFOLLOW);
}

DLFS_EXPORT int utimensat(int dirfd, const char *path,
			  const struct timespec t[2],
			  int flags)
{
	if (!path) /* futimens */
		return futimens(dirfd, t);
	struct dlfs_vp_res res;
	if (ro(dirfd, path, flags & AT_SYMLINK_NOFOLLOW, ATTR, &res))
		return -1;
	return dlfs_real()->utimensat(rdir(dirfd, &res), rpath(path, &res), t,
				      flags);
}

DLFS_EXPORT int utimes(const char *path, const struct timeval t[2])
{
	struct dlfs_vp_res res;
	if (ro(AT_FDCWD, path, 0, ATTR, &res))
		return -1;
	return dlfs_real()->utimes(rpath(path, &res), t);
}

DLFS_EXPORT int lutimes(const char *path, const struct timeval t[2])
{
	struct dlfs_vp_res res;
	if (ro(AT_FDCWD, path, 1, ATTR, &res))
		return -1;
	return dlfs_real()->lutimes(rpath(path, &res), t);
}

DLFS_EXPORT int futimesat(int dirfd, const char *path,
			  const struct timeval t[2])
{
	if (!path) /* futimes */
		return futimes(dirfd, t);
	struct dlfs_vp_res res;
	if (ro(dirfd, path, 0, ATTR, &res))
		return -1;
	return dlfs_real()->futimesat(rdir(dirfd, &res), rpath(path, &res), t);
}

DLFS_EXPORT int utime(const char *path, const struct utimbuf *t)
{
	struct dlfs_vp_res res;
	if (ro(AT_FDCWD, path, 0, ATTR, &res))
		return -1;
	return dlfs_real()->utime(rpath(path, &res), t);
}

DLFS_EXPORT int setxattr(const char *path, const char *name, const void *v,
			 size_t size, int flags)
{
	struct dlfs_vp_res res;
	if (ro(AT_FDCWD, path, 0, ATTR, &res))
		return -1;
	return dlfs_real()->setxattr(rpath(path, &res), name, v, size, flags);
}

DLFS_EXPORT int lsetxattr(const char *path, const char *name, const void *v,
			  size_t size, int flags)
{
	struct dlfs_vp_res res;
	if (ro(AT_FDCWD, path, 1, ATTR, &res))
		return -1;
	return dlfs_real()->lsetxattr(rpath(path, &res), name, v, size, flags);
}

DLFS_EXPORT int removexattr(const char *path, const char *name)
{
	struct dlfs_vp_res res;
	if (ro(AT_FDCWD, path, 0, ATTR, &res))
		return -1;
	return dlfs_real()->removexattr(rpath(path, &res), name);
}

DLFS_EXPORT int lremovexattr(const char *path, const char *name)
{
	struct dlfs_vp_res res;
	if (ro(AT_FDCWD, path, 1, ATTR, &res))
		return -1;
	return dlfs_real()->lremovexattr(rpath(path, &res), name);
}

/* On a dataset fd. */

/* Is fd the dataset's? @return 0 (no), 1 (yes), or 2 (an O_PATH fd of
 * the dataset, which the kernel's fdget refuses with EBADF before it
 * looks at anything else). */
static int dataset_fd(int fd)
{
	if (!dlfs_fd_maybe(fd))
		return 0;
	struct dlfs_file *f = dlfs_fd_get(fd);
	if (!f)
		return 0;
	int kind = (f->flags & O_PATH) ? 2 : 1;
	dlfs_file_put(f);
	return kind;
}

/* A call on fd that would change its file: 0 if fd is not the dataset's
 * (the caller passes it on), else -1 and err (EBADF for O_PATH). */
static int refused(int fd, int err)
{
	int kind = dataset_fd(fd);
	return kind ? dlfs_fail(kind == 2 ? EBADF : err) : 0;
}

DLFS_EXPORT int fsetxattr(int fd, const char *name, const void *v,
			  size_t size, int flags)
{
	if (refused(fd, EROFS))
		return -1;
	return dlfs_real()->fsetxattr(fd, name, v, size, flags);
}

DLFS_EXPORT int fremovexattr(int fd, const char *name)
{
	if (refused(fd, EROFS))
		return -1;
	return dlfs_real()->fremovexattr(fd, name);
}

DLFS_EXPORT int fchmod(int fd, mode_t mode)
{
	if (refused(fd, EROFS))
		return -1;
	return dlfs_real()->fchmod(fd, mode);
}

DLFS_EXPORT int fchown(int fd, uid_t uid, gid_t gid)
{
	if (refused(fd, EROFS))
		return -1;
	return dlfs_real()->fchown(fd, uid, gid);
}

DLFS_EXPORT int futimens(int fd, const struct timespec t[2])
{
	if (refused(fd, EROFS))
		return -1;
	return dlfs_real()->futimens(fd, t);
}

/* glibc's futimes goes to utimensat inside, which this library does
 * not see: the socket's times would change. */
DLFS_EXPORT int futimes(int fd, const struct timeval t[2])
{
	if (refused(fd, EROFS))
		return -1;
	return dlfs_real()->futimes(fd, t);
}

DLFS_EXPORT int ftruncate(int fd, off_t len)
{
	/* The length first; then the fd, which is not open for writing. */
	int kind = dataset_fd(fd);
	if (kind)
		return dlfs_fail(len < 0 || kind == 1 ? EINVAL : EBADF);
	return dlfs_real()->ftruncate(fd, len);
}

DLFS_EXPORT int ftruncate64(int fd, off_t len) DLFS_ALIAS(ftruncate);

/* A read-only file has nothing to write back. */
DLFS_EXPORT int fsync(int fd)
{
	int kind = dataset_fd(fd);
	if (kind)
		return kind == 2 ? dlfs_fail(EBADF) : 0;
	return dlfs_real()->fsync(fd);
}

DLFS_EXPORT int fdatasync(int fd)
{
	int kind = dataset_fd(fd);
	if (kind)
		return kind == 2 ? dlfs_fail(EBADF) : 0;
	return dlfs_real()->fdatasync(fd);
}

DLFS_EXPORT ssize_t write(int fd, const void *buf, size_t n)
{
	if (refused(fd, EBADF))
		return -1;
	return dlfs_real()->write(fd, buf, n);
}

DLFS_EXPORT ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
	if (refused(fd, EBADF))
		return -1;
	return dlfs_real()->pwrite(fd, buf, n, off);
}

DLFS_EXPORT ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off)
	DLFS_ALIAS(pwrite);

DLFS_EXPORT ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
	if (refused(fd, EBADF))
		return -1;
	return dlfs_real()->writev(fd, iov, cnt);
}

DLFS_EXPORT ssize_t pwritev(int fd, const struct iovec *iov, int cnt, off_t off)
{
	if (refused(fd, EBADF))
		return -1;
	return dlfs_real()->pwritev(fd, iov, cnt, off);
}

DLFS_EXPORT ssize_t pwritev2(int fd, const struct iovec *iov, int cnt,
			     off_t off, int flags)
{
	if (refused(fd, EBADF))
		return -1;
	return dlfs_real()->pwritev2(fd, iov, cnt, off, flags);
}

DLFS_EXPORT ssize_t pwritev64v2(int fd, const struct iovec *iov, int cnt,
				off_t off, int flags)
	DLFS_ALIAS(pwritev2);

DLFS_EXPORT ssize_t pwritev64(int fd, const struct iovec *iov, int cnt,
			      off_t off)
	DLFS_ALIAS(pwritev);

