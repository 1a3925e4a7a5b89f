/*
 * The users of a shared server (src/daemon/users.c, compiled into this
 * test), with the dlfs-run side played by plain flock(2)s on KEY's files
 * in a temporary directory: KEY.alive keeps a second server out; the
 * server does not end while a user holds KEY.users or one attaches
 * (KEY.lock); once every user has gone it removes its socket and keeps
 * KEY.lock until it closes; closing removes KEY.pid and lets go of
 * KEY.alive. flock locks of two open files conflict inside one process
 * too, so one process plays both sides.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tutil.h"
#include "users.h"

/* A user's side: KEY.EXT opened on its own, so its locks are its own. */
static int side(const char *key, const char *ext)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s.%s", key, ext);
	int fd = open(path, O_RDWR);
	if (fd < 0)
		abort();
	return fd;
}

static int exists(const char *key, const char *ext)
{
	char path[4096];
	struct stat st;
	snprintf(path, sizeof(path), "%s.%s", key, ext);
	return stat(path, &st) == 0;
}

/* KEY.pid holds this process's pid, as one line. */
static void check_pid(const char *key)
{
	char path[4096], want[32];
	size_t len = 0;
	snprintf(path, sizeof(path), "%s.pid", key);
	snprintf(want, sizeof(want), "%ld\n", (long)getpid());
	char *got = (char *)t_read(path, &len);
	CHECK(got && len == strlen(want) && !memcmp(got, want, len));
	free(got);
}

static void make_sock(const char *sock)
{
	int fd = open(sock, O_WRONLY | O_CREAT, 0600);
	if (fd < 0)
		abort();
	close(fd);
}

static void test_open_twice(const char *key)
{
	struct dlfs_users *u = NULL, *v = NULL;
	struct dlfs_err err = {0};
	CHECK_EQ(dlfs_users_open(key, &u, &err), 0);
	CHECK(u != NULL);
	CHECK(exists(key, "lock") && exists(key, "users") &&
	      exists(key, "alive"));
	check_pid(key);
	/* A second server of the key is refused, and says why. */
	CHECK_EQ(dlfs_users_open(key, &v, &err), -EBUSY);
	CHECK(v == NULL);
	CHECK(strstr(err.msg, "another server") != NULL);
	dlfs_users_close(u);
	CHECK(!exists(key, "pid"));
	/* The first let go of KEY.alive: a new one may start. */
	CHECK_EQ(dlfs_users_open(key, &v, &err), 0);
	dlfs_users_close(v);
	dlfs_users_close(NULL);
}

static void test_gone(const char *key, const char *sock)
{
	struct dlfs_users *u = NULL;
	struct dlfs_err err = {0};
	CHECK_EQ(dlfs_users_open(key, &u, &err), 0);
	make_sock(sock);

	/* A user whose command runs: the server goes on. */
	int users = side(key, "users");
	CHECK_EQ(flock(users, LOCK_SH | LOCK_NB), 0);
	CHECK_EQ(dlfs_users_gone(u, sock), 0);
	CHECK(access(sock, F_OK) == 0);
	/* The server let go of KEY.lock: the user can still detach. */
	int lock = side(key, "lock");
	CHECK_EQ(flock(lock, LOCK_EX | LOCK_NB), 0);
	/* ... and while it does (KEY.lock held), the server goes on. */
	flock(users, LOCK_UN);
	CHECK_EQ(dlfs_users_gone(u, sock), 0);
	CHECK(access(sock, F_OK) == 0);
	flock(lock, LOCK_UN);

	/* Nobody: the socket goes, and KEY.lock stays the server's. */
	CHECK_EQ(dlfs_users_gone(u, sock), 1);
	CHECK(access(sock, F_OK) != 0);
	CHECK(flock(lock, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK);
	/* But KEY.users is free again for the next server's users. */
	CHECK_EQ(flock(users, LOCK_SH | LOCK_NB), 0);
	flock(users, LOCK_UN);
	dlfs_users_close(u);
	CHECK_EQ(flock(lock, LOCK_EX | LOCK_NB), 0);
	close(lock);
	close(users);
}

static void test_too_long(const char *dir)
{
	char key[5000];
	struct dlfs_users *u = (struct dlfs_users *)&u;
	struct dlfs_err err = {0};
	snprintf(key, sizeof(key), "%s/", dir);
	memset(key + strlen(key), 'k', sizeof(key) - strlen(key) - 1);
	key[sizeof(key) - 1] = '\0';
	CHECK_EQ(dlfs_users_open(key, &u, &err), -ENAMETOOLONG);
	CHECK(u == NULL);
}

int main(void)
{
	char *dir = t_tmpdir();
	char *key = t_path(dir, "node");
	char *sock = t_path(dir, "node.sock");
	test_open_twice(key);
	test_gone(key, sock);
	test_too_long(dir);
	t_rmrf(dir);
	free(sock);
	free(key);
	free(dir);
	return t_done("test_users");
}
