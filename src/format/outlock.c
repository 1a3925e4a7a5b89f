/* The lock of a dataset being packed: see shared/outlock.h. */
#include "outlock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

/* .BASE.lock beside out. @return it (malloc'd), or NULL. */
static char *lock_path(const char *out)
{
	size_t len = strlen(out);
	while (len > 1 && out[len - 1] == '/')
		len--;
	const char *base = out;
	for (size_t i = 0; i < len; i++)
		if (out[i] == '/')
			base = out + i + 1;
	char *p = NULL;
	if (asprintf(&p, "%.*s.%.*s.lock", (int)(base - out), out,
		     (int)(len - (size_t)(base - out)), base) < 0)
		return NULL;
	return p;
}

/* The holder's line of fd, as "pid N on HOST since TIME" into who. */
static void holder(int fd, char *who, size_t len)
{
	char line[256];
	ssize_t n = dlfs_pread_full(fd, line, sizeof(line) - 1, 0);
	long pid = 0;
	long long since = 0;
	char host[128] = "?";
	if (n > 0) {
		line[n] = '\0';
		sscanf(line, "pid %ld host %127s since %lld", &pid, host,
		       &since);
	}
	time_t t = (time_t)since;
	struct tm tm;
	char when[64] = "?";
	if (since && localtime_r(&t, &tm))
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
	snprintf(who, len, "pid %ld on %s since %s", pid, host, when);
}

/* Does flock fail here only because the file system has none? */
static int no_locks(int e)
{
	return e == ENOSYS || e == EOPNOTSUPP || e == EINVAL || e == ENOLCK;
}

/* Take the lock file at path once. @return 0 held, 1 the file was
 * replaced meanwhile (try again), or -errno (-EBUSY: held). */
static int take_once(const char *path, int *out_fd)
{
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		int e = errno;
		if (no_locks(e)) {
			close(fd);
			return -ENOLCK;
		}
		*out_fd = fd; /* for the holder's line */
		return -EBUSY;
	}
	/* Held: unless a packer that finished removed this file after we
	 * opened it (then our lock is on a file nobody else sees). */
	struct stat a, b;
	if (fstat(fd, &a) < 0 || stat(path, &b) < 0 || a.st_ino != b.st_ino ||
	    a.st_dev != b.st_dev) {
		close(fd);
		return 1;
	}
	*out_fd = fd;
	return 0;
}

int dlfs_outlock_take(const char *out, struct dlfs_outlock *l,
		      struct dlfs_err *err)
{
	l->fd = -1;
	l->path = lock_path(out);
	if (!l->path)
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	int ret, fd = -1;
	for (int i = 0; i < 8; i++)
		if ((ret = take_once(l->path, &fd)) != 1)
			break;
	if (ret == -ENOLCK) {
		free(l->path);
		l->path = NULL;
		return 0; /* no locks here: nothing to hold */
	}
	if (ret == -EBUSY) {
		char who[256];
		holder(fd, who, sizeof(who));
		close(fd);
		ret = dlfs_err_set(err, -EBUSY, "%s: being packed by %s (its "
				   "lock: %s)", out, who, l->path);
		free(l->path);
		l->path = NULL;
		return ret;
	}
	if (ret) {
		ret = dlfs_err_sys(err, ret < 0 ? ret : -EAGAIN,
				   "%s: its lock %s", out, l->path);
		free(l->path);
		l->path = NULL;
		return ret;
	}
	char host[128] = "?", line[256];
	gethostname(host, sizeof(host) - 1);
	host[sizeof(host) - 1] = '\0';
	int n = snprintf(line, sizeof(line), "pid %ld host %s since %lld\n",
			 (long)getpid(), host, (long long)time(NULL));
	if (ftruncate(fd, 0) < 0 ||
	    dlfs_pwrite_full(fd, line, (size_t)n, 0) < 0) {
		ret = dlfs_err_sys(err, -errno, "%s", l->path);
		unlink(l->path);
		close(fd);
		free(l->path);
		l->path = NULL;
		return ret;
	}
	l->fd = fd;
	return 0;
}

void dlfs_outlock_release(struct dlfs_outlock *l)
{
	/* A zeroed lock was never taken: path NULL. */
	if (l->path && l->fd >= 0) {
		/* Unlinked while held: whoever opened it meanwhile sees the
		 * file replaced, and tries again. */
		unlink(l->path);
		close(l->fd);
	}
	free(l->path);
	l->fd = -1;
	l->path = NULL;
}

int dlfs_outlock_who(const char *out, char *who, size_t len)
{
	char *path = lock_path(out);
	int busy = 0;
	int fd = path ? open(path, O_RDONLY | O_CLOEXEC) : -1;
	if (fd >= 0 && flock(fd, LOCK_SH | LOCK_NB) < 0 &&
	    errno == EWOULDBLOCK) {
		holder(fd, who, len);
		busy = 1;
	}
	if (fd >= 0)
		close(fd);
	free(path);
	return busy;
}
