/*
 * intercept_open: the exported open family, close, dup, fcntl and the DIR
 * calls. Each asks "is this ours?" (a path under the prefix,
 * an fd or DIR of ours) and otherwise calls libc's own function.
 */
#undef _FORTIFY_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dirs.h"
#include "icept.h"
#include "state.h"
#include "real.h"

/* Flags that would change a file that exists (O_CREAT alone does not:
 * the kernel opens an existing file read-only on a read-only mount). */
static int writes(int flags)
{
	return (flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC);
}

/* The kernel's __O_TMPFILE bit (glibc's __O_TMPFILE has O_DIRECTORY in
 * it, as O_TMPFILE has). */
#define TMPFILE_BIT 020000000

/* What the kernel refuses before it looks at the path: O_TMPFILE with
 * O_CREAT, or not for writing. @return 0 or an errno. */
static int bad_flags(int flags)
{
	if (!(flags & TMPFILE_BIT))
		return 0;
	if ((flags & (TMPFILE_BIT | O_DIRECTORY | O_CREAT)) !=
		    (TMPFILE_BIT | O_DIRECTORY) ||
	    (flags & O_ACCMODE) == O_RDONLY)
		return EINVAL;
	return 0;
}

/* What the kernel refuses on a read-only filesystem, for an open of a
 * node of ours, in its order. @return 0 or an errno. */
static int refuse(const struct dlfs_vp_res *res, int flags)
{
	int type = res->st.st_mode & S_IFMT;
	if ((flags & (O_CREAT | O_EXCL)) == (O_CREAT | O_EXCL))
		return EEXIST;
	if (type == S_IFLNK && !(flags & O_PATH))
		return ELOOP; /* O_NOFOLLOW on a symlink */
	if ((flags & O_DIRECTORY) && type != S_IFDIR)
		return ENOTDIR;
	if ((flags & O_TMPFILE) == O_TMPFILE)
		return EROFS; /* a file in the directory would be made */
	if (type == S_IFDIR &&
	    ((flags & O_CREAT) || (flags & O_ACCMODE) != O_RDONLY))
		return EISDIR;
	if (writes(flags) && !(flags & O_PATH))
		return EROFS;
	return 0;
}

/* Does path end in a slash? */
static int trailing_slash(const char *path)
{
	size_t n = path ? strlen(path) : 0;
	return n && path[n - 1] == '/';
}

static int do_openat(int dirfd, const char *path, int flags, mode_t mode)
{
	struct dlfs_vp_res res;
	int err = bad_flags(flags);
	if (err)
		return dlfs_fail(err);
	/* O_CREAT of "name/" is EISDIR once the directory that would hold
	 * it is found, whether or not name is there. */
	if ((flags & O_CREAT) && trailing_slash(path) &&
	    dlfs_parent_ours(dirfd, path))
		return dlfs_fail(EISDIR);
	int ret = dlfs_classify(dirfd, path, flags & O_NOFOLLOW, &res);
	if (ret == -ENOENT && (flags & O_CREAT) &&
	    dlfs_parent_ours(dirfd, path))
		return dlfs_fail(EROFS);
	if (ret)
		return dlfs_fail(-ret);
	if (res.kind == DLFS_VP_PASS)
		return dlfs_real()->openat(dirfd, path, flags, mode);
	if (res.kind == DLFS_VP_REAL)
		return dlfs_real()->openat(AT_FDCWD, res.path, flags, mode);
	if ((err = refuse(&res, flags)))
		return dlfs_fail(err);
	return dlfs_open_node(&res, flags);
}

static mode_t mode_arg(int flags, va_list ap)
{
	if ((flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE)
		return va_arg(ap, mode_t);
	return 0;
}

DLFS_EXPORT int open(const char *path, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	mode_t mode = mode_arg(flags, ap);
	va_end(ap);
	return do_openat(AT_FDCWD, path, flags, mode);
}

DLFS_EXPORT int open64(const char *path, int flags, ...) DLFS_ALIAS(open);

DLFS_EXPORT int openat(int dirfd, const char *path, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	mode_t mode = mode_arg(flags, ap);
	va_end(ap);
	return do_openat(dirfd, path, flags, mode);
}

DLFS_EXPORT int openat64(int dirfd, const char *path, int flags, ...)
	DLFS_ALIAS(openat);

/* The fortified entry points: callers that pass no mode. */
DLFS_EXPORT int __open_2(const char *path, int flags)
{
	return do_openat(AT_FDCWD, path, flags, 0);
}

DLFS_EXPORT int __open64_2(const char *path, int flags) DLFS_ALIAS(__open_2);

DLFS_EXPORT int __openat_2(int dirfd, const char *path, int flags)
{
	return do_openat(dirfd, path, flags, 0);
}

DLFS_EXPORT int __openat64_2(int dirfd, const char *path, int flags)
	DLFS_ALIAS(__openat_2);

DLFS_EXPORT int creat(const char *path, mode_t mode)
{
	return do_openat(AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC, mode);
}

DLFS_EXPORT int creat64(const char *path, mode_t mode) DLFS_ALIAS(creat);

DLFS_EXPORT int close(int fd)
{
	return dlfs_close(fd);
}

/* close_range and closefrom: ours forgotten first, as close does (after,
 * another thread's new dataset fd could have the number). Not in a vfork
 * child (_posixsubprocess calls close_range there): the table is its
 * parent's. */
DLFS_EXPORT int close_range(unsigned first, unsigned last, int flags)
{
	if (first > last || (flags & ~(CLOSE_RANGE_UNSHARE |
				       CLOSE_RANGE_CLOEXEC)))
		return dlfs_fail(EINVAL);
	if (!(flags & CLOSE_RANGE_CLOEXEC) && dlfs_own_memory())
		dlfs_fd_forget_range(first, last);
	return dlfs_real()->close_range(first, last, flags);
}

DLFS_EXPORT void closefrom(int lowfd)
{
	if (lowfd >= 0 && dlfs_own_memory())
		dlfs_fd_forget_range((unsigned)lowfd, ~0u);
	dlfs_real()->closefrom(lowfd);
}

/* In a vfork child the tables are the parent's: dup there is libc's, and
 * the copy is an unconnected socket to the program that is exec'd. */
static struct dlfs_file *dup_source(int fd)
{
	if (!dlfs_fd_maybe(fd) || !dlfs_own_memory())
		return NULL;
	return dlfs_fd_get(fd);
}

DLFS_EXPORT int dup(int fd)
{
	struct dlfs_file *f = dup_source(fd);
	int nfd = dlfs_real()->dup(fd);
	if (f && nfd >= 0 && dlfs_fd_add(nfd, f)) {
		dlfs_real()->close(nfd);
		nfd = dlfs_fail(EMFILE);
	}
	if (f)
		dlfs_file_put(f);
	return nfd;
}

static int do_dup3(int fd, int nfd, int flags, int is_dup2)
{
	struct dlfs_file *f = dup_source(fd);
	int ret = is_dup2 ? dlfs_real()->dup2(fd, nfd)
			  : dlfs_real()->dup3(fd, nfd, flags);
	/* Only once the kernel has replaced nfd: a failed dup2 leaves it. */
	if (ret >= 0 && fd != nfd) {
		if (f && dlfs_fd_add(ret, f)) {
			dlfs_real()->close(ret);
			ret = dlfs_fail(EMFILE);
		} else if (!f && dlfs_fd_maybe(ret) && dlfs_own_memory()) {
			dlfs_fd_forget(ret); /* the kernel closed ours */
		}
	}
	if (f)
		dlfs_file_put(f);
	return ret;
}

DLFS_EXPORT int dup2(int fd, int nfd)
{
	return do_dup3(fd, nfd, 0, 1);
}

DLFS_EXPORT int dup3(int fd, int nfd, int flags)
{
	return do_dup3(fd, nfd, flags, 0);
}

/* fcntl on one of ours: what a read-only regular file (or directory)
 * would answer. */
static int fcntl_ours(int fd, struct dlfs_file *f, int cmd, void *arg)
{
	/* An O_PATH fd knows only these. */
	if ((f->flags & O_PATH) && cmd != F_DUPFD && cmd != F_DUPFD_CLOEXEC &&
	    cmd != F_GETFD && cmd != F_SETFD && cmd != F_GETFL)
		return dlfs_fail(EBADF);
	switch (cmd) {
	case F_DUPFD:
	case F_DUPFD_CLOEXEC: {
		int nfd = dlfs_real()->fcntl(fd, cmd, arg);
		if (nfd >= 0 && dlfs_own_memory() && dlfs_fd_add(nfd, f)) {
			dlfs_real()->close(nfd);
			return dlfs_fail(EMFILE);
		}
		return nfd;
	}
	case F_GETFD:
	case F_SETFD:
	case F_GETOWN:
	case F_SETOWN:
		return dlfs_real()->fcntl(fd, cmd, arg);
	case F_GETFL:
		return f->flags;
	case F_SETFL: {
		int ch = O_APPEND | O_NONBLOCK | O_DIRECT | O_NOATIME | O_ASYNC;
		f->flags = (f->flags & ~ch) | ((int)(long)arg & ch);
		return 0;
	}
	case F_GETLK:
	case F_SETLK:
	case F_SETLKW:
	case F_OFD_GETLK:
	case F_OFD_SETLK:
	case F_OFD_SETLKW: {
		struct flock *fl = arg;
		if (!fl)
			return dlfs_fail(EFAULT);
		if (fl->l_type == F_WRLCK &&
		    (cmd == F_SETLK || cmd == F_SETLKW || cmd == F_OFD_SETLK ||
		     cmd == F_OFD_SETLKW))
			return dlfs_fail(EBADF);
		/* Nobody can hold a write lock on a read-only dataset, and
		 * read locks never conflict with each other. */
		if (cmd == F_GETLK || cmd == F_OFD_GETLK)
			fl->l_type = F_UNLCK;
		return 0;
	}
	default:
		return dlfs_fail(EINVAL);
	}
}

DLFS_EXPORT int fcntl(int fd, int cmd, ...)
{
	va_list ap;
	va_start(ap, cmd);
	void *arg = va_arg(ap, void *);
	va_end(ap);
	struct dlfs_file *f = dlfs_fd_get(fd);
	if (!f)
		return dlfs_real()->fcntl(fd, cmd, arg);
	int ret = fcntl_ours(fd, f, cmd, arg);
	dlfs_file_put(f);
	return ret;
}

DLFS_EXPORT int fcntl64(int fd, int cmd, ...) DLFS_ALIAS(fcntl);

/* Directory streams. */

/* A stream on the directory res names (ours): a new fd of ours, which
 * closedir closes. @return it, or NULL and errno. */
static DIR *open_stream(const struct dlfs_vp_res *res)
{
	if (!S_ISDIR(res->st.st_mode)) {
		errno = ENOTDIR;
		return NULL;
	}
	/* glibc's opendir's flags, which F_GETFL shows. */
	int fd = dlfs_open_node(res, O_RDONLY | O_NONBLOCK | O_DIRECTORY |
					     O_CLOEXEC);
	if (fd < 0)
		return NULL;
	struct dlfs_file *f = dlfs_fd_get(fd);
	DIR *d = f ? dlfs_dir_open(fd, f) : NULL;
	if (!d) {
		int err = f ? errno : EIO;
		if (f)
			dlfs_file_put(f);
		dlfs_close(fd);
		errno = err;
	}
	return d;
}

DLFS_EXPORT DIR *opendir(const char *path)
{
	struct dlfs_vp_res res;
	int ret = dlfs_classify(AT_FDCWD, path, 0, &res);
	if (ret) {
		errno = -ret;
		return NULL;
	}
	if (res.kind != DLFS_VP_OURS)
		return dlfs_real()->opendir(res.kind == DLFS_VP_REAL ? res.path
								   : path);
	return open_stream(&res);
}

DLFS_EXPORT DIR *fdopendir(int fd)
{
	struct dlfs_file *f = dlfs_fd_get(fd);
	if (!f)
		return dlfs_real()->fdopendir(fd);
	if (!S_ISDIR(f->st.st_mode) || (f->flags & O_PATH)) {
		int err = (f->flags & O_PATH) ? EBADF : ENOTDIR;
		dlfs_file_put(f);
		errno = err;
		return NULL;
	}
	DIR *d = dlfs_dir_open(fd, f);
	if (!d)
		dlfs_file_put(f);
	return d;
}

DLFS_EXPORT struct dirent *readdir(DIR *d)
{
	if (dlfs_dir_is(d))
		return dlfs_dir_read(d);
	return dlfs_real()->readdir(d);
}

_Static_assert(sizeof(struct dirent) == sizeof(struct dirent64) &&
		       offsetof(struct dirent, d_name) ==
			       offsetof(struct dirent64, d_name),
	       "readdir64 is readdir on this ABI");

DLFS_EXPORT struct dirent64 *readdir64(DIR *d)
{
	return (struct dirent64 *)readdir(d);
}

DLFS_EXPORT int readdir_r(DIR *d, struct dirent *ent, struct dirent **res)
{
	if (dlfs_dir_is(d))
		return dlfs_dir_read_r(d, ent, res);
	return dlfs_real()->readdir_r(d, ent, res);
}

DLFS_EXPORT int readdir64_r(DIR *d, struct dirent64 *ent, struct dirent64 **res)
{
	return readdir_r(d, (struct dirent *)ent, (struct dirent **)res);
}

DLFS_EXPORT int closedir(DIR *d)
{
	if (!dlfs_dir_is(d))
		return dlfs_real()->closedir(d);
	return dlfs_close(dlfs_dir_close(d));
}

DLFS_EXPORT int dirfd(DIR *d)
{
	if (dlfs_dir_is(d))
		return dlfs_dir_fd(d);
	return dlfs_real()->dirfd(d);
}

DLFS_EXPORT void rewinddir(DIR *d)
{
	if (dlfs_dir_is(d))
		dlfs_dir_rewind(d);
	else
		dlfs_real()->rewinddir(d);
}

DLFS_EXPORT long telldir(DIR *d)
{
	if (dlfs_dir_is(d))
		return dlfs_dir_tell(d);
	return dlfs_real()->telldir(d);
}

DLFS_EXPORT void seekdir(DIR *d, long pos)
{
	if (dlfs_dir_is(d))
		dlfs_dir_seek(d, pos);
	else
		dlfs_real()->seekdir(d, pos);
}

/* scandir: glibc's opens and reads the directory with its internal
 * functions, which this library does not see, so a directory of ours is
 * read here, on a stream of dirs.c's. */

/* The entries of d that sel takes, each in a malloc'd copy.
 * @return 0 (*v, *n set) or an errno. */
static int scan_stream(DIR *d, int (*sel)(const struct dirent *),
		       struct dirent ***v, size_t *n)
{
	struct dirent *e;
	size_t cap = 0;
	int err = 0;
	*v = NULL;
	*n = 0;
	errno = 0;
	while ((e = dlfs_dir_read(d))) {
		/* sel may set errno whatever it answers, as glibc allows */
		int take = !sel || sel(e);
		errno = 0;
		if (!take)
			continue;
		if (*n == cap) {
			cap = cap ? cap * 2 : 32;
			struct dirent **nv = realloc(*v, cap * sizeof(**v));
			if (!nv) {
				err = ENOMEM;
				break;
			}
			*v = nv;
		}
		if (!((*v)[*n] = malloc(sizeof(*e)))) {
			err = ENOMEM;
			break;
		}
		memcpy((*v)[(*n)++], e, sizeof(*e));
		errno = 0;
	}
	if (!err)
		err = errno;
	if (err) {
		while (*n)
			free((*v)[--*n]);
		free(*v);
		*v = NULL;
	}
	return err;
}

static int do_scandirat(int dirfd, const char *path, struct dirent ***list,
			int (*sel)(const struct dirent *),
			int (*cmp)(const struct dirent **,
				   const struct dirent **))
{
	struct dlfs_vp_res res;
	int ret = dlfs_classify(dirfd, path, 0, &res);
	if (ret)
		return dlfs_fail(-ret);
	if (res.kind != DLFS_VP_OURS)
		return -2; /* not ours: libc's */
	DIR *d = open_stream(&res);
	if (!d)
		return -1;
	struct dirent **v;
	size_t n;
	int err = scan_stream(d, sel, &v, &n);
	dlfs_close(dlfs_dir_close(d));
	if (err)
		return dlfs_fail(err);
	if (cmp && n > 1)
		qsort(v, n, sizeof(*v),
		      (int (*)(const void *, const void *))cmp);
	*list = v;
	return (int)n;
}

DLFS_EXPORT int scandir(const char *path, struct dirent ***list,
			int (*sel)(const struct dirent *),
			int (*cmp)(const struct dirent **,
				   const struct dirent **))
{
	int n = do_scandirat(AT_FDCWD, path, list, sel, cmp);
	return n != -2 ? n : dlfs_real()->scandir(path, list, sel, cmp);
}

DLFS_EXPORT int scandir64(const char *path, struct dirent64 ***list,
			  int (*sel)(const struct dirent64 *),
			  int (*cmp)(const struct dirent64 **,
				     const struct dirent64 **))
{
	return scandir(path, (struct dirent ***)list,
		       (int (*)(const struct dirent *))sel,
		       (int (*)(const struct dirent **,
				const struct dirent **))cmp);
}

DLFS_EXPORT int scandirat(int dirfd, const char *path, struct dirent ***list,
			  int (*sel)(const struct dirent *),
			  int (*cmp)(const struct dirent **,
				     const struct dirent **))
{
	int n = do_scandirat(dirfd, path, list, sel, cmp);
	return n != -2 ? n
		       : dlfs_real()->scandirat(dirfd, path, list, sel, cmp);
}

DLFS_EXPORT int scandirat64(int dirfd, const char *path,
			    struct dirent64 ***list,
			    int (*sel)(const struct dirent64 *),
			    int (*cmp)(const struct dirent64 **,
				       const struct dirent64 **))
{
	return scandirat(dirfd, path, (struct dirent ***)list,
			 (int (*)(const struct dirent *))sel,
			 (int (*)(const struct dirent **,
				  const struct dirent **))cmp);
}
