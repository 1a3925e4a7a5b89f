/* The users of a shared server: see users.h. */
#include "users.h"

#include "run_files.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

struct dlfs_users {
	int lock, users, alive;
	char *pid; /* KEY.pid (run_files.h), removed at the end */
};

static int open_one(const char *key, const char *ext, int *fd,
		    struct dlfs_err *err)
{
	char path[PATH_MAX];
	int n = snprintf(path, sizeof(path), "%s%s", key, ext);
	if (n < 0 || (size_t)n >= sizeof(path))
		return dlfs_err_set(err, -ENAMETOOLONG, "%s%s: too long a path",
				    key, ext);
	*fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (*fd < 0)
		return dlfs_err_sys(err, -errno, "%s", path);
	return 0;
}

/* KEY.pid: this process. A failure only costs dlfs-run its way to stop
 * the server early (it still ends when its users have gone). */
static void write_pid(const char *key)
{
	char path[PATH_MAX], tmp[PATH_MAX], line[32];
	int n = snprintf(path, sizeof(path), "%s" DLFS_RUN_PID, key);
	int m = snprintf(tmp, sizeof(tmp), "%s" DLFS_RUN_PID ".%ld", key,
			 (long)getpid());
	if (n < 0 || (size_t)n >= sizeof(path) || m < 0 ||
	    (size_t)m >= sizeof(tmp))
		return;
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC |
				   O_NOFOLLOW, 0600);
	if (fd < 0)
		return;
	int len = snprintf(line, sizeof(line), "%ld\n", (long)getpid());
	int ok = write(fd, line, (size_t)len) == len;
	if (close(fd) || !ok || rename(tmp, path))
		unlink(tmp);
}

int dlfs_users_open(const char *key, struct dlfs_users **out,
		    struct dlfs_err *err)
{
	struct dlfs_users *u = calloc(1, sizeof(*u));
	*out = NULL;
	if (!u)
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	u->lock = u->users = u->alive = -1;
	int ret = open_one(key, DLFS_RUN_LOCK, &u->lock, err);
	if (!ret)
		ret = open_one(key, DLFS_RUN_USERS, &u->users, err);
	if (!ret)
		ret = open_one(key, DLFS_RUN_ALIVE, &u->alive, err);
	if (!ret && flock(u->alive, LOCK_EX | LOCK_NB))
		ret = errno == EWOULDBLOCK
			      ? dlfs_err_set(err, -EBUSY,
					     "%s" DLFS_RUN_ALIVE ": another "
					     "server of this key is running",
					     key)
			      : dlfs_err_sys(err, -errno,
					     "flock %s" DLFS_RUN_ALIVE, key);
	if (ret) {
		dlfs_users_close(u);
		return ret;
	}
	write_pid(key);
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s" DLFS_RUN_PID, key);
	u->pid = strdup(path);
	*out = u;
	return 0;
}

int dlfs_users_gone(struct dlfs_users *u, const char *sock)
{
	if (flock(u->lock, LOCK_EX | LOCK_NB))
		return 0; /* a dlfs-run is attaching or detaching */
	if (flock(u->users, LOCK_EX | LOCK_NB)) {
		flock(u->lock, LOCK_UN);
		return 0;
	}
	/* Nobody: no new user can come in while we hold the lock, and the
	 * next dlfs-run finds no socket. */
	flock(u->users, LOCK_UN);
	unlink(sock);
	return 1;
}

void dlfs_users_close(struct dlfs_users *u)
{
	if (!u)
		return;
	if (u->pid && u->alive >= 0)
		unlink(u->pid); /* still ours: KEY.alive is held */
	free(u->pid);
	if (u->lock >= 0)
		close(u->lock);
	if (u->users >= 0)
		close(u->users);
	if (u->alive >= 0)
		close(u->alive);
	free(u);
}
