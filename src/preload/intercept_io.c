/*
 * intercept_io: the exported calls that read a dataset fd's bytes: read, pread,
 * readv, preadv, preadv2, lseek, mmap, posix_fadvise, ioctl. An fd that is not
 * ours costs one table lookup (two loads) before libc's own call; one of ours
 * costs a real fstat (is the kernel's fd still our socket?) and the READ
 * requests on this thread's connection.
 */
#undef _FORTIFY_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include "icept.h"
#include "state.h"
#include "real.h"

/* The description of fd if it is a dataset fd (a reference), or NULL. */
static struct dlfs_file *file_of(int fd)
{
	return dlfs_fd_maybe(fd) ? dlfs_fd_get(fd) : NULL;
}

DLFS_EXPORT ssize_t read(int fd, void *buf, size_t n)
{
	struct dlfs_file *f = file_of(fd);
	if (!f)
		return dlfs_real()->read(fd, buf, n);
	ssize_t r = dlfs_file_read(f, buf, n);
	dlfs_file_put(f);
	return r;
}

DLFS_EXPORT ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen)
{
	if (n > buflen)
		abort();
	return read(fd, buf, n);
}

DLFS_EXPORT ssize_t pread(int fd, void *buf, size_t n, off_t off)
{
	struct dlfs_file *f = file_of(fd);
	if (!f)
		return dlfs_real()->pread(fd, buf, n, off);
	ssize_t r = dlfs_file_pread(f, buf, n, off);
	dlfs_file_put(f);
	return r;
}

DLFS_EXPORT ssize_t pread64(int fd, void *buf, size_t n, off_t off)
	DLFS_ALIAS(pread);

DLFS_EXPORT ssize_t __pread_chk(int fd, void *buf, size_t n, off_t off,
				size_t buflen)
{
	if (n > buflen)
		abort();
	return pread(fd, buf, n, off);
}

DLFS_EXPORT ssize_t __pread64_chk(int fd, void *buf, size_t n, off_t off,
				  size_t buflen)
	DLFS_ALIAS(__pread_chk);

/* The vector reads: one piece after another, stopping at a short one.
 * off < 0: at the fd's offset (readv), which moves. */
static ssize_t vec(struct dlfs_file *f, const struct iovec *iov, int cnt,
		   off_t off)
{
	if (cnt < 0 || cnt > IOV_MAX) {
		errno = EINVAL;
		return -1;
	}
	ssize_t done = 0;
	int at_pos = off < 0;
	if (at_pos) {
		pthread_mutex_lock(&f->pos_lock);
		off = (off_t)f->pos;
	}
	for (int i = 0; i < cnt; i++) {
		ssize_t r = dlfs_file_pread(f, iov[i].iov_base, iov[i].iov_len,
					    off + done);
		if (r < 0) {
			if (!done)
				done = -1;
			break;
		}
		done += r;
		if ((size_t)r < iov[i].iov_len)
			break;
	}
	if (at_pos) {
		if (done > 0)
			f->pos += (uint64_t)done;
		pthread_mutex_unlock(&f->pos_lock);
	}
	return done;
}

DLFS_EXPORT ssize_t readv(int fd, const struct iovec *iov, int cnt)
{
	struct dlfs_file *f = file_of(fd);
	if (!f)
		return dlfs_real()->readv(fd, iov, cnt);
	ssize_t r = vec(f, iov, cnt, -1);
	dlfs_file_put(f);
	return r;
}

DLFS_EXPORT ssize_t preadv(int fd, const struct iovec *iov, int cnt, off_t off)
{
	struct dlfs_file *f = file_of(fd);
	if (!f)
		return dlfs_real()->preadv(fd, iov, cnt, off);
	ssize_t r;
	if (off < 0) {
		errno = EINVAL;
		r = -1;
	} else {
		r = vec(f, iov, cnt, off);
	}
	dlfs_file_put(f);
	return r;
}

DLFS_EXPORT ssize_t preadv64(int fd, const struct iovec *iov, int cnt,
			     off_t off)
	DLFS_ALIAS(preadv);

/* preadv2's flags for a file of ours: RWF_NOWAIT needs a file that can
 * say "not now", which the mount's files are not either (EOPNOTSUPP
 * there too); the others change nothing for a read. */
#define RWF_OURS (RWF_HIPRI | RWF_DSYNC | RWF_SYNC | RWF_APPEND)

DLFS_EXPORT ssize_t preadv2(int fd, const struct iovec *iov, int cnt,
			    off_t off, int flags)
{
	struct dlfs_file *f = file_of(fd);
	if (!f)
		return dlfs_real()->preadv2(fd, iov, cnt, off, flags);
	ssize_t r;
	if (off < -1)
		r = dlfs_fail(EINVAL);
	else if (flags & ~RWF_OURS)
		r = dlfs_fail(EOPNOTSUPP);
	else
		r = vec(f, iov, cnt, off); /* -1: at the fd's offset */
	dlfs_file_put(f);
	return r;
}

DLFS_EXPORT ssize_t preadv64v2(int fd, const struct iovec *iov, int cnt,
			       off_t off, int flags)
	DLFS_ALIAS(preadv2);

DLFS_EXPORT off_t lseek(int fd, off_t off, int whence)
{
	struct dlfs_file *f = file_of(fd);
	if (!f)
		return dlfs_real()->lseek(fd, off, whence);
	off_t r = dlfs_file_lseek(f, off, whence);
	dlfs_file_put(f);
	return r;
}

DLFS_EXPORT off_t lseek64(int fd, off_t off, int whence) DLFS_ALIAS(lseek);

DLFS_EXPORT int posix_fadvise(int fd, off_t off, off_t len, int advice)
{
	struct dlfs_file *f = file_of(fd);
	if (!f)
		return dlfs_real()->posix_fadvise(fd, off, len, advice);
	int path_only = f->flags & O_PATH;
	dlfs_file_put(f);
	if (path_only)
		return EBADF;
	if (advice < POSIX_FADV_NORMAL || advice > POSIX_FADV_NOREUSE ||
	    len < 0)
		return EINVAL;
	return 0; /* advice taken */
}

DLFS_EXPORT int posix_fadvise64(int fd, off_t off, off_t len, int advice)
	DLFS_ALIAS(posix_fadvise);

/*
 * mmap of a dataset fd: private anonymous memory filled with the file's
 * bytes (zeros past its end), then given the protection asked for. A
 * dataset never changes, so MAP_SHARED without PROT_WRITE reads the same;
 * MAP_SHARED with PROT_WRITE is EACCES, as for any read-only fd.
 */
static void *map_ours(struct dlfs_file *f, void *addr, size_t len, int prot,
		      int flags, off_t off)
{
	int type = flags & MAP_TYPE;
	long page = sysconf(_SC_PAGESIZE);
	if (f->flags & O_PATH) {
		errno = EBADF;
		return MAP_FAILED;
	}
	if (S_ISDIR(f->st.st_mode)) {
		errno = ENODEV;
		return MAP_FAILED;
	}
	if (!len || off < 0 || off % page) {
		errno = EINVAL;
		return MAP_FAILED;
	}
	if ((type == MAP_SHARED || type == MAP_SHARED_VALIDATE) &&
	    (prot & PROT_WRITE)) {
		errno = EACCES;
		return MAP_FAILED;
	}
	int nflags = (flags & ~(MAP_TYPE | MAP_ANONYMOUS)) | MAP_PRIVATE |
		     MAP_ANONYMOUS;
	void *m = dlfs_real()->mmap(addr, len, PROT_READ | PROT_WRITE, nflags,
				    -1, 0);
	if (m == MAP_FAILED)
		return m;
	struct stat st;
	if (dlfs_file_stat(f, &st))
		goto fail;
	if ((uint64_t)off < (uint64_t)st.st_size) {
		size_t want = len;
		if (want > (uint64_t)st.st_size - (uint64_t)off)
			want = (size_t)((uint64_t)st.st_size - (uint64_t)off);
		for (size_t done = 0; done < want;) {
			ssize_t r = dlfs_file_pread(f, (char *)m + done,
						    want - done,
						    off + (off_t)done);
			if (r < 0)
				goto fail;
			if (r == 0)
				break;
			done += (size_t)r;
		}
	}
	if (prot != (PROT_READ | PROT_WRITE) && mprotect(m, len, prot))
		goto fail;
	return m;
fail:;
	int err = errno;
	munmap(m, len);
	errno = err;
	return MAP_FAILED;
}

DLFS_EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd,
		       off_t off)
{
	struct dlfs_file *f = (flags & MAP_ANONYMOUS) ? NULL : file_of(fd);
	if (!f)
		return dlfs_real()->mmap(addr, len, prot, flags, fd, off);
	void *m = map_ours(f, addr, len, prot, flags, off);
	dlfs_file_put(f);
	return m;
}

DLFS_EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd,
			 off_t off)
	DLFS_ALIAS(mmap);


#define FIGETBSZ_ _IO(0x00, 2) /* <linux/fs.h>'s FIGETBSZ */

/* ioctl on a dataset fd: what the kernel answers itself for a file of
 * the mount (FIONREAD, the bytes left of a regular file; FIOQSIZE;
 * FIGETBSZ, FUSE's block size, a page; FIONBIO; and the fd's own FIOCLEX
 * and FIONCLEX); nothing else (ENOTTY, as the mount's files answer). */
static int ioctl_ours(int fd, struct dlfs_file *f, unsigned long req,
		      void *arg)
{
	struct stat st;
	int v;
	int64_t bytes;
	/* arg may be anywhere, as the kernel's put_user allows: memcpy. */
	if (f->flags & O_PATH)
		return dlfs_fail(EBADF);
	switch (req) {
	case FIOCLEX:
	case FIONCLEX:
		return dlfs_real()->ioctl(fd, req, arg);
	case FIONBIO:
		if (!arg)
			return dlfs_fail(EFAULT);
		memcpy(&v, arg, sizeof(v));
		if (v)
			f->flags |= O_NONBLOCK;
		else
			f->flags &= ~O_NONBLOCK;
		return 0;
	case FIONREAD:
		if (!S_ISREG(f->st.st_mode))
			return dlfs_fail(ENOTTY);
		if (!arg)
			return dlfs_fail(EFAULT);
		if (dlfs_file_stat(f, &st))
			return -1;
		pthread_mutex_lock(&f->pos_lock);
		v = (int)(st.st_size - (off_t)f->pos);
		pthread_mutex_unlock(&f->pos_lock);
		memcpy(arg, &v, sizeof(v));
		return 0;
	case FIOQSIZE:
		if (S_ISDIR(f->st.st_mode) || S_ISREG(f->st.st_mode) ||
		    S_ISLNK(f->st.st_mode)) {
			if (!arg)
				return dlfs_fail(EFAULT);
			if (dlfs_file_stat(f, &st))
				return -1;
			bytes = (int64_t)st.st_blocks * 512;
			memcpy(arg, &bytes, sizeof(bytes));
			return 0;
		}
		return dlfs_fail(ENOTTY);
	case FIGETBSZ_:
		if (!arg)
			return dlfs_fail(EFAULT);
		v = (int)sysconf(_SC_PAGESIZE);
		memcpy(arg, &v, sizeof(v));
		return 0;
	default:
		return dlfs_fail(ENOTTY);
	}
}

DLFS_EXPORT int ioctl(int fd, unsigned long req, ...)
{
	va_list ap;
	va_start(ap, req);
	void *arg = va_arg(ap, void *);
	va_end(ap);
	struct dlfs_file *f = file_of(fd);
	if (!f)
		return dlfs_real()->ioctl(fd, req, arg);
	int r = ioctl_ours(fd, f, req, arg);
	dlfs_file_put(f);
	return r;
}
