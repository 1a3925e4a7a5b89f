/*
 * icept: the wrappers' shared parts (see icept.h).
 *
 * The virtual cwd is copied in and out under vcwd_lock; vcwd_on is read
 * without it, so a program that never chdir()s into the prefix never takes
 * the lock.
 */
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

#include "ns.h"
#include "preload.h"
#include "real.h"

static pthread_mutex_t vcwd_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int vcwd_on;
static char vcwd_path[PATH_MAX];
static uint64_t vcwd_ino;
static struct stat vcwd_st;

int dlfs_on(void)
{
	return dlfs_pl.on;
}

static int vcwd_store(const char *vpath, uint64_t ino, const struct stat *st)
{
	if (strlen(vpath) >= sizeof(vcwd_path))
		return -ENAMETOOLONG;
	pthread_mutex_lock(&vcwd_lock);
	strcpy(vcwd_path, vpath);
	vcwd_ino = ino;
	vcwd_st = *st;
	atomic_store(&vcwd_on, 1);
	pthread_mutex_unlock(&vcwd_lock);
	return 0;
}

/* The cwd this program inherited: $PWD under the prefix (see preload.h).
 * Resolved on first use, as that needs the server. */
static pthread_once_t pwd_once = PTHREAD_ONCE_INIT;

static void adopt_pwd(void)
{
	struct dlfs_vp_res *res = malloc(sizeof(*res));
	if (res && !dlfs_ns_resolve(NULL, dlfs_pl.pwd, 0, res) &&
	    res->kind == DLFS_VP_OURS && S_ISDIR(res->st.st_mode))
		vcwd_store(res->path, res->ino, &res->st);
	free(res);
}

static void inherit(void)
{
	if (dlfs_pl.pwd[0])
		pthread_once(&pwd_once, adopt_pwd);
}

int dlfs_vcwd_set(const char *vpath, uint64_t ino, const struct stat *st)
{
	inherit();
	return vcwd_store(vpath, ino, st);
}

void dlfs_vcwd_clear(void)
{
	inherit();
	if (!atomic_load(&vcwd_on))
		return;
	pthread_mutex_lock(&vcwd_lock);
	atomic_store(&vcwd_on, 0);
	pthread_mutex_unlock(&vcwd_lock);
}

int dlfs_vcwd_get(char *buf, size_t size, uint64_t *ino, struct stat *st)
{
	inherit();
	if (!atomic_load(&vcwd_on))
		return 0;
	int on;
	pthread_mutex_lock(&vcwd_lock);
	on = atomic_load(&vcwd_on) && strlen(vcwd_path) < size;
	if (on) {
		strcpy(buf, vcwd_path);
		if (ino)
			*ino = vcwd_ino;
		if (st)
			*st = vcwd_st;
	}
	pthread_mutex_unlock(&vcwd_lock);
	return on;
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

/*
 * The real cwd, when it is an ancestor of the prefix: then a relative
 * path with no ".." can name the prefix ("imagenet/x" in /data, for the
 * prefix /data/imagenet). Asked of the kernel once, and again after each
 * chdir; rcwd_state is 0 (not known), 1 (an ancestor: rcwd holds it) or
 * 2 (not an ancestor).
 */
static pthread_mutex_t rcwd_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int rcwd_state;
static char rcwd[PATH_MAX];

void dlfs_rcwd_changed(void)
{
	atomic_store(&rcwd_state, 0);
}

/* Is the real cwd an ancestor of the prefix, and could path's first
 * component step towards it? Then base is that cwd. */
static int rcwd_base(const char *path, char *base, size_t size)
{
	int st = atomic_load(&rcwd_state);
	if (st == 2)
		return 0;
	pthread_mutex_lock(&rcwd_lock);
	if (!atomic_load(&rcwd_state)) {
		int saved = errno;
		size_t pl = dlfs_pl.root.prefix_len, cl;
		int anc = dlfs_real()->getcwd(rcwd, sizeof(rcwd)) != NULL;
		errno = saved;
		if (anc) {
			cl = strlen(rcwd);
			if (cl == 1) /* "/" */
				cl = 0;
			anc = cl < pl && !strncmp(rcwd, dlfs_pl.prefix, cl) &&
			      dlfs_pl.prefix[cl] == '/';
		}
		atomic_store(&rcwd_state, anc ? 1 : 2);
	}
	int ok = atomic_load(&rcwd_state) == 1;
	if (ok) {
		/* The next component of the prefix below the cwd. */
		size_t cl = strlen(rcwd) == 1 ? 0 : strlen(rcwd);
		const char *next = dlfs_pl.prefix + cl + 1;
		size_t nl = strcspn(next, "/");
		while (path[0] == '.' && path[1] == '/')
			path += 2;
		ok = (!strncmp(path, next, nl) &&
		      (path[nl] == '/' || !path[nl])) ||
		     dlfs_vp_maybe_ours(&dlfs_pl.root, path);
		if (ok && strlen(rcwd) < size)
			strcpy(base, rcwd);
		else
			ok = 0;
	}
	pthread_mutex_unlock(&rcwd_lock);
	return ok;
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
	if (dirfd == AT_FDCWD &&
	    dlfs_vcwd_get(bpath, sizeof(bpath), &base.ino, &base.st))
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
		}
		dlfs_file_put(f);
		return ret ? ret : dlfs_ns_resolve(&base, path, flags, res);
	}
	if (dirfd == AT_FDCWD && rcwd_base(path, bpath, sizeof(bpath)))
		return dlfs_ns_resolve(&base, path, flags, res);
	/* Relative to a real directory: only ".." can climb to the prefix. */
	if (!dlfs_vp_maybe_ours(&dlfs_pl.root, path) ||
	    real_dir_path(dirfd, bpath, sizeof(bpath)))
		return 0;
	return dlfs_ns_resolve(&base, path, flags, res);
}

int dlfs_parent_ours(int dirfd, const char *path)
{
	char dir[PATH_MAX];
	size_t n = strlen(path);
	while (n > 1 && path[n - 1] == '/')
		n--;
	while (n > 0 && path[n - 1] != '/')
		n--;
	if (n >= sizeof(dir))
		return 0;
	if (n == 0) {
		strcpy(dir, ".");
	} else {
		memcpy(dir, path, n);
		dir[n] = '\0';
	}
	struct dlfs_vp_res *res = malloc(sizeof(*res));
	int ours = res && !dlfs_classify(dirfd, dir, 0, res) &&
		   res->kind == DLFS_VP_OURS && S_ISDIR(res->st.st_mode);
	free(res);
	return ours;
}

int dlfs_open_node(const struct dlfs_vp_res *res, int flags)
{
	/* What F_GETFL answers for a file opened read-only by a 64-bit
	 * program. */
	int keep = O_ACCMODE | O_APPEND | O_NONBLOCK | O_DIRECT | O_NOATIME |
		   O_PATH | O_DIRECTORY | O_NOFOLLOW;
	struct dlfs_file *f =
		dlfs_file_new(res->ino, &res->st,
			      (flags & keep & ~(O_DIRECTORY | O_NOFOLLOW)) |
				      O_LARGEFILE,
			      res->path, dlfs_ns_volatile(res->path));
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
	if ((off > 0 && base > INT64_MAX - off) || base + off < 0) {
		err = off > 0 ? EOVERFLOW : EINVAL;
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

void dlfs_icept_fork_prepare(void)
{
	pthread_mutex_lock(&vcwd_lock);
	pthread_mutex_lock(&rcwd_lock);
}

void dlfs_icept_fork_parent(void)
{
	pthread_mutex_unlock(&rcwd_lock);
	pthread_mutex_unlock(&vcwd_lock);
}
