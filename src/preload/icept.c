/* icept: the wrappers' shared parts (see icept.h). */
#include "icept.h"

#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "conn.h"
#include "cwd.h"
#include "ns.h"
#include "state.h"
#include "real.h"

int dlfs_on(void)
{
	return dlfs_pl.on;
}

/* Is dirfd (real) a directory? */
static int real_dir(int dirfd)
{
	struct stat st;
	int saved = errno;
	int ok = dirfd == AT_FDCWD || (!dlfs_real()->fstat(dirfd, &st) &&
					S_ISDIR(st.st_mode));
	errno = saved;
	return ok;
}

/* The real directory dirfd is, from /proc. @return 0 or -1. */
static int real_dir_path(int dirfd, char *buf, size_t size)
{
	char proc[64];
	int saved = errno;
	if (dirfd == AT_FDCWD) {
		int ok = dlfs_real()->getcwd(buf, size) != NULL;
		errno = saved;
		return ok ? 0 : -1;
	}
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", dirfd);
	ssize_t n = dlfs_real()->readlink(proc, buf, size - 1);
	errno = saved;
	if (n <= 0 || buf[0] != '/')
		return -1;
	buf[n] = '\0';
	return 0;
}

int dlfs_classify(int dirfd, const char *path, int nofollow,
		  struct dlfs_vp_res *res)
{
	res->kind = DLFS_VP_PASS;
	if (!dlfs_pl.on || !path)
		return 0;
	int flags = nofollow ? DLFS_VP_NOFOLLOW : 0;
	if (path[0] == '/') {
		if (!dlfs_vp_maybe_ours(&dlfs_pl.root, path))
			return 0;
		return dlfs_ns_resolve(NULL, path, flags, res);
	}

	char bpath[PATH_MAX];
	struct dlfs_vp_base base = {.path = bpath};
	if (dirfd == AT_FDCWD && dlfs_vcwd_get(bpath, sizeof(bpath), &base.ino,
					       &base.st, &base.vol))
		return dlfs_ns_resolve(&base, path, flags, res);
	struct dlfs_file *f = dirfd == AT_FDCWD ? NULL : dlfs_fd_get(dirfd);
	if (f) {
		int ret = 0;
		if (!S_ISDIR(f->st.st_mode))
			ret = -ENOTDIR;
		else if (strlen(f->vpath) >= sizeof(bpath))
			ret = -ENAMETOOLONG;
		if (!ret) {
			strcpy(bpath, f->vpath);
			base.ino = f->ino;
			base.st = f->st;
			base.vol = f->vol;
		}
		dlfs_file_put(f);
		return ret ? ret : dlfs_ns_resolve(&base, path, flags, res);
	}
	if (dirfd == AT_FDCWD && dlfs_rcwd_base(path, bpath, sizeof(bpath)))
		return dlfs_ns_resolve(&base, path, flags, res);
	/* Relative to a real directory: only ".." can climb to the prefix.
	 * A dirfd that is not a directory is the kernel's (ENOTDIR). */
	if (!dlfs_vp_maybe_ours(&dlfs_pl.root, path) || !real_dir(dirfd) ||
	    real_dir_path(dirfd, bpath, sizeof(bpath)))
		return 0;
	return dlfs_ns_resolve(&base, path, flags, res);
}

int dlfs_parent_classify(int dirfd, const char *path, struct dlfs_vp_res *res)
{
	char dir[PATH_MAX];
	size_t n = strlen(path);
	while (n > 1 && path[n - 1] == '/')
		n--;
	while (n > 0 && path[n - 1] != '/')
		n--;
	if (n >= sizeof(dir))
		return -ENAMETOOLONG;
	if (n == 0) {
		strcpy(dir, ".");
	} else {
		memcpy(dir, path, n);
		dir[n] = '\0';
	}
	return dlfs_classify(dirfd, dir, 0, res);
}

int dlfs_parent_ours(int dirfd, const char *path)
{
	struct dlfs_vp_res *res = malloc(sizeof(*res));
	int ours = res && !dlfs_parent_classify(dirfd, path, res) &&
		   res->kind == DLFS_VP_OURS && S_ISDIR(res->st.st_mode);
	free(res);
	return ours;
}

/* The kernel's O_LARGEFILE, which it adds for a 64-bit program and
 * F_GETFL shows (glibc's O_LARGEFILE is 0 on x86-64). */
#define KERNEL_O_LARGEFILE 0100000

int dlfs_open_node(const struct dlfs_vp_res *res, int flags)
{
	/* What F_GETFL answers, as the kernel keeps it: not O_CLOEXEC or
	 * the creation flags; O_LARGEFILE for a 64-bit program, but not on
	 * an O_PATH fd, which keeps only O_DIRECTORY and O_NOFOLLOW. */
	int keep = O_ACCMODE | O_APPEND | O_NONBLOCK | O_DIRECT | O_NOATIME |
		   O_DIRECTORY | O_NOFOLLOW | O_SYNC | O_DSYNC;
	int fl = (flags & O_PATH) ? flags & (O_PATH | O_DIRECTORY | O_NOFOLLOW)
				  : (flags & keep) | KERNEL_O_LARGEFILE;
	struct dlfs_file *f = dlfs_file_new(res->ino, &res->st, fl, res->path,
					    res->vol);
	if (!f) {
		errno = ENOMEM;
		return -1;
	}
	int fd = dlfs_fd_install(f, flags & O_CLOEXEC);
	if (fd < 0) {
		dlfs_file_put(f);
		errno = -fd;
		return -1;
	}
	return fd;
}

int dlfs_file_stat(struct dlfs_file *f, struct stat *st)
{
	if (!f->vol) {
		*st = f->st;
		return 0;
	}
	int ret = dlfs_ns_getattr(f->ino, st);
	if (ret) {
		dlfs_conn_report(NULL, f->vpath, ret);
		errno = -ret;
		return -1;
	}
	return 0;
}

ssize_t dlfs_file_pread(struct dlfs_file *f, void *buf, size_t n, off_t off)
{
	if (f->flags & O_PATH) {
		errno = EBADF;
		return -1;
	}
	if (S_ISDIR(f->st.st_mode)) {
		errno = EISDIR;
		return -1;
	}
	if (off < 0) {
		errno = EINVAL;
		return -1;
	}
	if (n > SSIZE_MAX)
		n = SSIZE_MAX;
	if (!f->vol) {
		/* Sizes never change: no request for bytes past the end. */
		if ((uint64_t)off >= (uint64_t)f->st.st_size)
			return 0;
		if (n > (uint64_t)f->st.st_size - (uint64_t)off)
			n = (size_t)((uint64_t)f->st.st_size - (uint64_t)off);
	}
	if (!n)
		return 0;
	ssize_t r = dlfs_ns_read(f->ino, buf, n, (uint64_t)off);
	if (r < 0) {
		dlfs_conn_report(NULL, f->vpath, r);
		errno = (int)-r;
		return -1;
	}
	return r;
}

ssize_t dlfs_file_read(struct dlfs_file *f, void *buf, size_t n)
{
	pthread_mutex_lock(&f->pos_lock);
	ssize_t r = dlfs_file_pread(f, buf, n, (off_t)f->pos);
	if (r > 0)
		f->pos += (uint64_t)r;
	pthread_mutex_unlock(&f->pos_lock);
	return r;
}

off_t dlfs_file_lseek(struct dlfs_file *f, off_t off, int whence)
{
	if (f->flags & O_PATH) {
		errno = EBADF;
		return -1;
	}
	struct stat st;
	if (dlfs_file_stat(f, &st))
		return -1;
	pthread_mutex_lock(&f->pos_lock);
	off_t base = 0, ret = -1;
	int err = 0;
	switch (whence) {
	case SEEK_SET:
		base = 0;
		break;
	case SEEK_CUR:
		base = (off_t)f->pos;
		break;
	case SEEK_END:
		base = st.st_size;
		break;
	case SEEK_DATA:
	case SEEK_HOLE:
		if (off < 0 || off >= st.st_size) {
			err = ENXIO;
			goto out;
		}
		if (whence == SEEK_HOLE)
			off = st.st_size;
		break;
	default:
		err = EINVAL;
		goto out;
	}
	/* Past the largest offset, or before 0: EINVAL, as the kernel's
	 * generic llseek says for both. */
	if ((off > 0 && base > INT64_MAX - off) || base + off < 0) {
		err = EINVAL;
		goto out;
	}
	f->pos = (uint64_t)(base + off);
	ret = base + off;
out:
	pthread_mutex_unlock(&f->pos_lock);
	if (err)
		errno = err;
	return ret;
}

int dlfs_own_memory(void)
{
	return (int)syscall(SYS_getpid) == atomic_load(&dlfs_pl.pid);
}

int dlfs_close(int fd)
{
	if (dlfs_fd_maybe(fd) && dlfs_own_memory())
		dlfs_fd_forget(fd);
	return dlfs_real()->close(fd);
}
