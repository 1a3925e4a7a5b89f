/*
 * conn: one connection per thread (see conn.h).
 *
 * Each thread's connection lives in its thread-local struct conn, which
 * is also on a process-wide list (under list_lock) so that a forked child
 * can close all of them: the child must never talk on its parent's
 * connections. Locks: list_lock, hello_lock, never both at once (the
 * library's order is in preload.h); neither is taken on the read path
 * (only when a connection is made or closed).
 */
#include "conn.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include "preload.h"

struct conn {
	int fd;   /* -1: none */
	int busy; /* a request is on it (a signal handler must not use it) */
	struct conn *next, *prev; /* on the list while fd >= 0 */
};

static __thread struct conn tconn __attribute__((tls_model("initial-exec"))) = {
	.fd = -1};
static pthread_mutex_t list_lock = PTHREAD_MUTEX_INITIALIZER;
static struct conn *list;
static pthread_key_t exit_key;
static pthread_mutex_t hello_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int said_gone;

static void sys_close(int fd)
{
	syscall(SYS_close, fd);
}

static void gone(const char *why)
{
	if (!atomic_exchange(&said_gone, 1))
		dlfs_pl_say("the dlfs server is gone: ", why);
}

static int send_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int recv_all(int fd, void *buf, size_t len)
{
	char *p = buf;
	while (len) {
		ssize_t n = recv(fd, p, len, MSG_WAITALL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* One exchange on fd: the reply's status goes to *status.
 * @return 0, or -EIO when the stream is broken (then fd is unusable). */
static int exchange(int fd, const struct dlfs_wire_req *req, const char *name,
		    void *buf, size_t cap, uint64_t *len, uint32_t *count,
		    int *status)
{
	struct dlfs_wire_rep rep;
	char msg[sizeof(*req) + DLFS_WIRE_MAX_NAME];
	int ret = -EIO;
	int saved = errno; /* a successful call leaves errno alone */

	if (req->name_len > DLFS_WIRE_MAX_NAME)
		goto out;
	memcpy(msg, req, sizeof(*req));
	if (req->name_len)
		memcpy(msg + sizeof(*req), name, req->name_len);
	if (send_all(fd, msg, sizeof(*req) + req->name_len))
		goto out;
	/* The header and as much of the payload as is there, in one call:
	 * nothing follows a reply on the stream, so this never takes bytes
	 * of another. */
	struct iovec iov[2] = {{&rep, sizeof(rep)}, {buf, cap}};
	struct msghdr mh = {.msg_iov = iov, .msg_iovlen = cap ? 2 : 1};
	ssize_t n;
	do
		n = recvmsg(fd, &mh, 0);
	while (n < 0 && errno == EINTR);
	if (n <= 0)
		goto out;
	size_t have = 0; /* payload bytes already in buf */
	if ((size_t)n < sizeof(rep)) {
		if (recv_all(fd, (char *)&rep + n, sizeof(rep) - (size_t)n))
			goto out;
	} else {
		have = (size_t)n - sizeof(rep);
	}
	if (rep.len > cap || have > rep.len || (rep.status && rep.len) ||
	    rep.status > 0)
		goto out;
	if (rep.len > have &&
	    recv_all(fd, (char *)buf + have, rep.len - have))
		goto out;
	if (len)
		*len = rep.len;
	if (count)
		*count = rep.count;
	*status = rep.status;
	ret = 0;
out:
	errno = saved;
	return ret;
}

/* Connect and say HELLO; the first HELLO of the process fills dlfs_pl.
 * @return the fd, or -EIO. */
static int dial(void)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct dlfs_wire_hello h;
	struct dlfs_wire_req req = {.op = DLFS_WIRE_HELLO,
				    .size = DLFS_WIRE_VERSION};
	uint64_t len = 0;
	int saved = errno;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		gone("cannot make a socket");
		goto fail;
	}
	memcpy(sa.sun_path, dlfs_pl.sock, sizeof(sa.sun_path));
	int r;
	do
		r = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
	while (r < 0 && errno == EINTR);
	if (r < 0) {
		gone(dlfs_pl.sock);
		goto fail_fd;
	}
	int st = 0;
	r = exchange(fd, &req, NULL, &h, sizeof(h), &len, NULL, &st);
	if (r || st || len != sizeof(h) || h.version != DLFS_WIRE_VERSION ||
	    !h.max_io || !memchr(h.ctl_name, '\0', sizeof(h.ctl_name))) {
		gone("its HELLO failed");
		goto fail_fd;
	}
	if (!atomic_load_explicit(&dlfs_pl.ready, memory_order_acquire)) {
		pthread_mutex_lock(&hello_lock);
		if (!atomic_load(&dlfs_pl.ready)) {
			dlfs_pl.max_io = h.max_io < DLFS_WIRE_MAX_IO
						 ? h.max_io
						 : DLFS_WIRE_MAX_IO;
			memcpy(dlfs_pl.ctl_name, h.ctl_name,
			       sizeof(dlfs_pl.ctl_name));
			dlfs_pl.root_ino = h.root_ino;
			dlfs_pl.root_st = h.root;
			atomic_store_explicit(&dlfs_pl.ready, 1,
					      memory_order_release);
		}
		pthread_mutex_unlock(&hello_lock);
	}
	errno = saved;
	return fd;
fail_fd:
	sys_close(fd);
fail:
	errno = saved;
	return -EIO;
}

static void unlist(struct conn *c)
{
	pthread_mutex_lock(&list_lock);
	if (c->prev)
		c->prev->next = c->next;
	else if (list == c)
		list = c->next;
	if (c->next)
		c->next->prev = c->prev;
	c->next = c->prev = NULL;
	pthread_mutex_unlock(&list_lock);
}

static void drop(struct conn *c)
{
	if (c->fd < 0)
		return;
	unlist(c);
	sys_close(c->fd);
	c->fd = -1;
}

static void thread_exit(void *arg)
{
	drop(arg);
}

/* The fork handlers (preload.c calls them in the lock order). */

void dlfs_conn_fork_prepare(void)
{
	pthread_mutex_lock(&list_lock);
	pthread_mutex_lock(&hello_lock);
}

void dlfs_conn_fork_parent(void)
{
	pthread_mutex_unlock(&hello_lock);
	pthread_mutex_unlock(&list_lock);
}

/* In the child: close the parent's connections. The child is
 * single-threaded here, and the list is whole (prepare took list_lock). */
void dlfs_conn_fork_child(void)
{
	for (struct conn *c = list, *n; c; c = n) {
		n = c->next;
		sys_close(c->fd);
		c->fd = -1;
		c->next = c->prev = NULL;
	}
	list = NULL;
	tconn.busy = 0;
	pthread_mutex_unlock(&hello_lock);
	pthread_mutex_unlock(&list_lock);
}

void dlfs_conn_init(void)
{
	pthread_key_create(&exit_key, thread_exit);
}

static int thread_conn(struct conn *c)
{
	if (c->fd >= 0)
		return 0;
	int fd = dial();
	if (fd < 0)
		return fd;
	c->fd = fd;
	pthread_mutex_lock(&list_lock);
	c->next = list;
	if (list)
		list->prev = c;
	list = c;
	pthread_mutex_unlock(&list_lock);
	pthread_setspecific(exit_key, c);
	return 0;
}

/* A new connection made in a vfork child would be the parent's thread's
 * after exec closed it: such a child (or a signal handler, see busy)
 * gets a connection for one request instead. */
static int one_off(const struct conn *c)
{
	return c->busy ||
	       (c->fd < 0 && syscall(SYS_getpid) != atomic_load(&dlfs_pl.pid));
}

int dlfs_conn_ready(void)
{
	if (atomic_load_explicit(&dlfs_pl.ready, memory_order_acquire))
		return 0;
	if (one_off(&tconn)) {
		int fd = dial();
		if (fd < 0)
			return fd;
		sys_close(fd);
		return 0;
	}
	return thread_conn(&tconn);
}

int dlfs_conn_call(const struct dlfs_wire_req *req, const char *name,
		   void *buf, size_t cap, uint64_t *len, uint32_t *count)
{
	struct conn *c = &tconn;
	int ret, status = 0;
	if (one_off(c)) {
		int fd = dial();
		if (fd < 0)
			return fd;
		ret = exchange(fd, req, name, buf, cap, len, count, &status);
		sys_close(fd);
		if (ret)
			gone("a request failed");
		return ret ? ret : status;
	}
	if ((ret = thread_conn(c)))
		return ret;
	c->busy = 1;
	ret = exchange(c->fd, req, name, buf, cap, len, count, &status);
	if (ret) {
		/* The server is gone, or the stream is out of step; a later
		 * call tries a new connection. */
		gone("a request failed");
		drop(c);
	}
	c->busy = 0;
	return ret ? ret : status;
}
