/* One dlfs server a node, shared by the user's dlfs-run: see node.h. */
#include "node.h"

#include "run_files.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define ME "dlfs-run"

/* How long an ending server may take to let go (NVMe writes in flight). */
#define END_WAIT_MS 30000

static uint64_t fnv(const char *s)
{
	uint64_t h = UINT64_C(14695981039346656037);
	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= UINT64_C(1099511628211);
	}
	return h;
}

int node_init(struct node *n, const char *base, const char *what)
{
	struct stat st;
	n->lock = n->users = -1;
	int len = snprintf(n->dir, sizeof(n->dir), "%s/dlfs-run-%lu", base,
			   (unsigned long)getuid());
	if (len < 0 || (size_t)len >= sizeof(n->dir))
		goto too_long;
	if (mkdir(n->dir, 0700) && errno != EEXIST) {
		fprintf(stderr, ME ": mkdir %s: %s\n", n->dir, strerror(errno));
		return 1;
	}
	/* Ours and private, not a link: its files decide who shares what. */
	if (lstat(n->dir, &st) || !S_ISDIR(st.st_mode) ||
	    st.st_uid != getuid() || (st.st_mode & 077)) {
		fprintf(stderr, ME ": %s is not a private directory of yours: "
				   "remove it, or run with --private\n", n->dir);
		return 1;
	}
	len = snprintf(n->key, sizeof(n->key), "%s/%016llx", n->dir,
		       (unsigned long long)fnv(what));
	if (len < 0 || (size_t)len >= sizeof(n->key))
		goto too_long;
	len = snprintf(n->sock, sizeof(n->sock), "%s" DLFS_RUN_SOCK, n->key);
	struct sockaddr_un a;
	if (len < 0 || (size_t)len >= sizeof(a.sun_path))
		goto too_long;
	return 0;
too_long:
	fprintf(stderr, ME ": %s: too long a path for a socket\n", base);
	return 1;
}

static int open_file(const struct node *n, const char *ext)
{
	char path[PATH_MAX + 16]; /* the key is short: node_init */
	snprintf(path, sizeof(path), "%s%s", n->key, ext);
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		fprintf(stderr, ME ": %s: %s\n", path, strerror(errno));
	return fd;
}

/* Is a server holding KEY.alive? */
static int alive(const struct node *n)
{
	int fd = open_file(n, DLFS_RUN_ALIVE);
	if (fd < 0)
		return 0;
	int held = flock(fd, LOCK_SH | LOCK_NB) && errno == EWOULDBLOCK;
	close(fd);
	return held;
}

/* Does something answer on the socket? */
static int answers(const struct node *n)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	memcpy(a.sun_path, n->sock, strlen(n->sock) + 1);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return 0;
	int ok = !connect(fd, (struct sockaddr *)&a, sizeof(a));
	close(fd);
	return ok;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* Wait up to ms for KEY.alive to be free. @return 0, or -1 (still held). */
static int wait_gone(const struct node *n, long ms)
{
	for (long t = 0; alive(n); t += 50) {
		if (t >= ms)
			return -1;
		sleep_ms(50);
	}
	return 0;
}

static pid_t server_pid(const struct node *n)
{
	char path[PATH_MAX + 16], line[32] = "";
	snprintf(path, sizeof(path), "%s" DLFS_RUN_PID, n->key);
	FILE *f = fopen(path, "re");
	if (!f)
		return 0;
	long pid = fgets(line, sizeof(line), f) ? strtol(line, NULL, 10) : 0;
	fclose(f);
	return pid > 1 ? (pid_t)pid : 0;
}

int node_attach(struct node *n, int (*start)(void *arg), void *arg)
{
	if ((n->lock = open_file(n, DLFS_RUN_LOCK)) < 0 ||
	    (n->users = open_file(n, DLFS_RUN_USERS)) < 0)
		goto fail;
	while (flock(n->lock, LOCK_EX))
		if (errno != EINTR)
			goto fail;
	/* A server that runs but does not answer is ending (its last user
	 * stopped it): wait for it to let go, then start a new one. */
	if (alive(n) && !answers(n) && wait_gone(n, END_WAIT_MS + 5000)) {
		fprintf(stderr, ME ": the dlfs server of %s did not end\n",
			n->sock);
		goto fail_locked;
	}
	if (!alive(n)) {
		unlink(n->sock); /* one that was killed left it */
		if (start(arg))
			goto fail_locked;
	}
	while (flock(n->users, LOCK_SH))
		if (errno != EINTR)
			goto fail_locked;
	flock(n->lock, LOCK_UN);
	return 0;
fail_locked:
	flock(n->lock, LOCK_UN);
fail:
	if (n->lock >= 0)
		close(n->lock);
	if (n->users >= 0)
		close(n->users);
	n->lock = n->users = -1;
	return 1;
}

void node_detach(struct node *n)
{
	if (n->users < 0)
		return;
	if (!alive(n)) /* the command's reads failed: say why */
		fprintf(stderr, ME ": the node's dlfs server (%s) ended while "
				   "the command ran\n", n->sock);
	flock(n->users, LOCK_UN);
	while (flock(n->lock, LOCK_EX) && errno == EINTR)
		;
	pid_t pid = 0;
	if (!alive(n)) { /* killed: what it would have removed */
		char path[PATH_MAX + 16];
		snprintf(path, sizeof(path), "%s" DLFS_RUN_PID, n->key);
		unlink(path);
		unlink(n->sock);
	} else if (!flock(n->users, LOCK_EX | LOCK_NB)) {
		/* The last user: nobody attaches while we hold the lock, and
		 * whoever comes next finds no socket and waits. */
		flock(n->users, LOCK_UN);
		if (alive(n) && (pid = server_pid(n)) > 0) {
			unlink(n->sock);
			kill(pid, SIGTERM);
		}
	}
	flock(n->lock, LOCK_UN);
	close(n->lock);
	close(n->users);
	n->lock = n->users = -1;
	if (pid > 0 && wait_gone(n, END_WAIT_MS)) {
		fprintf(stderr, ME ": the dlfs server did not stop within "
				   "30 s: killed\n");
		kill(pid, SIGKILL);
		wait_gone(n, 5000);
	}
}
