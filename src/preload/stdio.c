/*
 * stdio: fopen, fopen64 and fdopen of dataset files, as fopencookie
 * streams over the library's own read, lseek and close of the fd; and
 * freopen. glibc's
 * fopen opens with its internal open, which this library cannot see, so
 * fopen itself is interposed. fileno() of such a stream answers the
 * dataset fd.
 */
#undef _FORTIFY_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "icept.h"
#include "conn.h"
#include "ns.h"
#include "state.h"
#include "real.h"

static ssize_t c_read(void *cookie, char *buf, size_t n)
{
	int fd = (int)(intptr_t)cookie;
	struct dlfs_file *f = dlfs_fd_get(fd);
	if (!f) {
		errno = EBADF;
		return -1;
	}
	ssize_t r = dlfs_file_read(f, buf, n);
	dlfs_file_put(f);
	return r;
}

static ssize_t c_write(void *cookie, const char *buf, size_t n)
{
	(void)cookie;
	(void)buf;
	(void)n;
	errno = EBADF;
	return -1;
}

static int c_seek(void *cookie, off64_t *off, int whence)
{
	int fd = (int)(intptr_t)cookie;
	struct dlfs_file *f = dlfs_fd_get(fd);
	if (!f) {
		errno = EBADF;
		return -1;
	}
	off_t r = dlfs_file_lseek(f, *off, whence);
	dlfs_file_put(f);
	if (r < 0)
		return -1;
	*off = r;
	return 0;
}

static int c_close(void *cookie)
{
	return dlfs_close((int)(intptr_t)cookie);
}

static const cookie_io_functions_t funcs = {
	.read = c_read, .write = c_write, .seek = c_seek, .close = c_close};

/* A stream on fd (ours). mode was checked by the caller. */
static FILE *stream(int fd, const char *mode)
{
	FILE *fp = fopencookie((void *)(intptr_t)fd, mode, funcs);
	if (fp)
		fp->_fileno = fd; /* fileno() answers it; the cookie's
				   * functions never use it */
	return fp;
}

/* "r", "rb", "re", "rm", "rc", ... without '+': read-only. Anything else
 * would write. */
static int read_only(const char *mode)
{
	return mode[0] == 'r' && !strchr(mode, '+');
}

static FILE *do_fopen(const char *path, const char *mode)
{
	struct dlfs_vp_res res;
	int ret = dlfs_classify(AT_FDCWD, path, 0, &res);
	int creates = mode[0] == 'w' || mode[0] == 'a';
	if (ret == -ENOENT && creates && dlfs_parent_ours(AT_FDCWD, path))
		ret = -EROFS;
	if (ret) {
		errno = -ret;
		return NULL;
	}
	if (res.kind != DLFS_VP_OURS)
		return dlfs_real()->fopen(
			res.kind == DLFS_VP_REAL ? res.path : path, mode);
	if (!read_only(mode)) {
		errno = S_ISDIR(res.st.st_mode) ? EISDIR
			: strchr(mode, 'x') ? EEXIST
					    : EROFS;
		return NULL;
	}
	if (S_ISLNK(res.st.st_mode)) {
		errno = ELOOP;
		return NULL;
	}
	int fd = dlfs_open_node(&res, O_RDONLY | (strchr(mode, 'e') ? O_CLOEXEC
								   : 0));
	if (fd < 0)
		return NULL;
	FILE *fp = stream(fd, mode);
	if (!fp) {
		int err = errno;
		dlfs_close(fd);
		errno = err;
	}
	return fp;
}

DLFS_EXPORT FILE *fopen(const char *path, const char *mode)
{
	return do_fopen(path, mode);
}

DLFS_EXPORT FILE *fopen64(const char *path, const char *mode) DLFS_ALIAS(fopen);

DLFS_EXPORT FILE *fdopen(int fd, const char *mode)
{
	struct dlfs_file *f = dlfs_fd_get(fd);
	if (!f)
		return dlfs_real()->fdopen(fd, mode);
	dlfs_file_put(f);
	if (!read_only(mode)) {
		errno = EINVAL; /* the fd is open read-only */
		return NULL;
	}
	return stream(fd, mode);
}

/*
 * freopen of a dataset file: glibc's reopens the stream with its internal
 * open and reads it with its internal read, neither of which this library
 * sees, and the stream (often stdin) must stay the same FILE. So it is
 * given a private copy of the file, made in memory (memfd) at the call:
 * the right bytes, seekable, at the cost of the file's size in memory.
 * What would write fails as fopen does; the stream is closed then, as
 * freopen's failure leaves it.
 */

/* A memfd holding the bytes of the file res names. @return it or -1. */
static int copy_of(const struct dlfs_vp_res *res)
{
	int fd = (int)syscall(SYS_memfd_create, "dlfs-freopen", MFD_CLOEXEC);
	size_t chunk = 1 << 20;
	char *buf = malloc(chunk);
	int err = fd < 0 ? errno : buf ? 0 : ENOMEM;
	for (uint64_t off = 0; !err;) {
		ssize_t n = dlfs_ns_read(res->ino, buf, chunk, off);
		if (n < 0) {
			dlfs_conn_report(NULL, res->path, n);
			err = (int)-n;
		}
		if (n <= 0)
			break;
		for (ssize_t w = 0; !err && w < n;) {
			ssize_t k = dlfs_real()->pwrite(fd, buf + w,
							(size_t)(n - w),
							(off_t)off + w);
			if (k < 0)
				err = errno;
			else
				w += k;
		}
		off += (uint64_t)n;
	}
	free(buf);
	if (err && fd >= 0)
		syscall(SYS_close, fd);
	errno = err;
	return err ? -1 : fd;
}

/* Fail as freopen does: fp closed (glibc's freopen closes it before it
 * opens the new file, which "" never is), errno err. */
static FILE *reopen_failed(FILE *fp, const char *mode, int err)
{
	dlfs_real()->freopen("", mode, fp);
	errno = err;
	return NULL;
}

DLFS_EXPORT FILE *freopen(const char *path, const char *mode, FILE *fp)
{
	struct dlfs_vp_res res;
	int ret = path ? dlfs_classify(AT_FDCWD, path, 0, &res) : 0;
	if (!path || (!ret && res.kind != DLFS_VP_OURS))
		return dlfs_real()->freopen(
			path && res.kind == DLFS_VP_REAL ? res.path : path,
			mode, fp);
	int creates = mode[0] == 'w' || mode[0] == 'a';
	if (ret == -ENOENT && creates && dlfs_parent_ours(AT_FDCWD, path))
		ret = -EROFS;
	if (ret)
		return reopen_failed(fp, mode, -ret);
	if (!read_only(mode))
		return reopen_failed(fp, mode,
				     S_ISDIR(res.st.st_mode) ? EISDIR
				     : strchr(mode, 'x')     ? EEXIST
							     : EROFS);
	if (!S_ISREG(res.st.st_mode))
		return reopen_failed(fp, mode, S_ISDIR(res.st.st_mode)
							? EISDIR
							: ELOOP);
	int m = copy_of(&res);
	if (m < 0)
		return reopen_failed(fp, mode, errno);
	char proc[64];
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", m);
	FILE *r = dlfs_real()->freopen(proc, mode, fp);
	int err = errno;
	syscall(SYS_close, m);
	errno = err;
	return r;
}

DLFS_EXPORT FILE *freopen64(const char *path, const char *mode, FILE *fp)
	DLFS_ALIAS(freopen);
