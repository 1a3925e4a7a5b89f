/*
 * conn: one connection per thread (see conn.h).
 *
 * Each thread's connection lives in its thread-local struct conn, which
 * is also on a process-wide list (under list_lock) from the moment its
 * socket exists, so that a forked child can close all of them, those
 * still being dialled too: the child must never talk on its parent's
 * connections, nor keep their fds. The socket is made, and closed, with
 * list_lock held, and the fork handler holds it too, so no fork falls
 * between the two.
 *
 * A connection is its dialler's: c->pid is the process that made it.
 * A request from another process (a vfork child, which runs in its
 * parent's memory; a child made without the fork handlers, by _Fork,
 * clone or syscall(SYS_fork), which still has the parent thread's
 * connection) or from a signal handler that interrupted this thread's
 * request (busy) is sent on a connection of its own, made for that one
 * request and closed after it. Those take no lock. A one-off of this
 * process is in oneoff[] while it is open, for the fork handler to close
 * in the child; that leaves a window of a few instructions (after socket,
 * before close) in which a fork in another thread leaks its fd into the
 * child. A one-off of another process is not registered: its fds are in
 * another fd table.
 *
 * Locks: list_lock, hello_lock; never both at once, neither on the read
 * path (only when a connection is made or closed). A request runs with
 * cancellation disabled: a thread cancelled in recv would leave its
 * caller's locks (a description's pos_lock, a stream's lock) held.
 */
#include "conn.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include "state.h"

struct conn {
	int fd;    /* -1: none */
	int pid;   /* the process that made fd */
	volatile sig_atomic_t busy; /* a request is on it, or it is being
				     * made: a signal handler must not use
				     * it */
	struct conn *next, *prev; /* on the list while fd >= 0 */
};

#define N_ONEOFF 64

static __thread struct conn tconn __attribute__((tls_model("initial-exec"))) = {
	.fd = -1};
static pthread_mutex_t list_lock = PTHREAD_MUTEX_INITIALIZER;
static struct conn *list;
static pthread_key_t exit_key;
static pthread_mutex_t hello_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int said_gone;
static atomic_int oneoff[N_ONEOFF]; /* fd + 1 of this process's one-offs */

static int sys_getpid(void)
{
	return (int)syscall(SYS_getpid);
}

static void sys_close(int fd)
{
	syscall(SYS_close, fd);
}

static int new_socket(void)
{
	return socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
}

static void gone(const char *why)
{
	if (!atomic_exchange(&said_gone, 1))
		dlfs_pl_say("the dlfs server is gone: ", why);
}

/* Send the iovecs in full. */
static int send_all(int fd, struct iovec *iov, int cnt)
{
	while (cnt) {
		struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t)cnt};
		ssize_t n = sendmsg(fd, &mh, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -EIO;
		while (cnt && (size_t)n >= iov->iov_len) {
			n -= (ssize_t)iov->iov_len;
			iov++;
			cnt--;
		}
		if (cnt) {
			iov->iov_base = (char *)iov->iov_base + n;
			iov->iov_len -= (size_t)n;
		}
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

/* The descriptors that came with a reply, into fds (any beyond its room
 * are closed). */
static void take_fds(struct msghdr *mh, struct dlfs_conn_fds *fds)
{
	for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < k; i++) {
			int v;
			memcpy(&v, CMSG_DATA(c) + i * sizeof(int), sizeof(v));
			if (fds->n < DLFS_CONN_MAX_FDS)
				fds->fd[fds->n++] = v;
			else
				sys_close(v);
		}
	}
}

/* One exchange on fd: the reply's status goes to *status. Small on the
 * stack (the name is sent from where it is), for signal handlers.
 * @return 0, or -EIO when the stream is broken (then fd is unusable). */
static int exchange(int fd, const struct dlfs_wire_req *req, const char *name,
		    void *buf, size_t cap, uint64_t *len, uint32_t *count,
		    struct dlfs_conn_fds *fds, int *status)
{
	struct dlfs_wire_rep rep;
	int ret = -EIO;
	int saved = errno; /* a successful call leaves errno alone */

	if (req->name_len > DLFS_WIRE_MAX_NAME)
		goto out;
	struct iovec out[2] = {{(void *)req, sizeof(*req)},
			       {(void *)name, req->name_len}};
	if (send_all(fd, out, req->name_len ? 2 : 1))
		goto out;
	/* The header and as much of the payload as is there, in one call:
	 * nothing follows a reply on the stream, so this never takes bytes
	 * of another. */
	struct iovec iov[2] = {{&rep, sizeof(rep)}, {buf, cap}};
	struct msghdr mh = {.msg_iov = iov, .msg_iovlen = cap ? 2 : 1};
	/* Descriptors come with a reply's first byte (MAP, NVFD). */
	union {
		char buf[CMSG_SPACE(DLFS_CONN_MAX_FDS * sizeof(int))];
		struct cmsghdr align;
	} u;
	if (fds) {
		fds->n = 0;
		mh.msg_control = u.buf;
		mh.msg_controllen = sizeof(u.buf);
	}
	ssize_t n;
	do
		n = recvmsg(fd, &mh, fds ? MSG_CMSG_CLOEXEC : 0);
	while (n < 0 && errno == EINTR);
	if (n <= 0)
		goto out;
	if (fds)
		take_fds(&mh, fds);
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

/* Connect fd and say HELLO; the first HELLO of the process fills
 * dlfs_pl. @return 0, or -EIO. */
static int hello(int fd)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct dlfs_wire_hello h;
	struct dlfs_wire_req req = {.op = DLFS_WIRE_HELLO,
				    .size = DLFS_WIRE_VERSION};
	uint64_t len = 0;
	int saved = errno, ret = -EIO;
	memcpy(sa.sun_path, dlfs_pl.sock, sizeof(sa.sun_path));
	int r;
	do
		r = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
	while (r < 0 && errno == EINTR);
	if (r < 0) {
		gone(dlfs_pl.sock);
		goto out;
	}
	int st = 0;
	r = exchange(fd, &req, NULL, &h, sizeof(h), &len, NULL, NULL, &st);
	if (r || st || len != sizeof(h) || h.version != DLFS_WIRE_VERSION ||
	    !h.max_io || !memchr(h.ctl_name, '\0', sizeof(h.ctl_name))) {
		gone("its HELLO failed");
		goto out;
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
			dlfs_pl.shm = (int)h.shm;
			atomic_store_explicit(&dlfs_pl.ready, 1,
					      memory_order_release);
		}
		pthread_mutex_unlock(&hello_lock);
	}
	ret = 0;
out:
	errno = saved;
	return ret;
}

static void unlist(struct conn *c)
{
	if (c->prev)
		c->prev->next = c->next;
	else if (list == c)
		list = c->next;
	if (c->next)
		c->next->prev = c->prev;
	c->next = c->prev = NULL;
}

/* Close the thread's connection (its own process's). */
static void drop(struct conn *c)
{
	if (c->fd < 0)
		return;
	pthread_mutex_lock(&list_lock);
	unlist(c);
	sys_close(c->fd);
	c->fd = -1;
	pthread_mutex_unlock(&list_lock);
}

static void thread_exit(void *arg)
{
	struct conn *c = arg;
	c->busy = 1; /* a signal handler now: a one-off */
	drop(c);
}

/* The thread's connection, made if there is none. c->busy is set: a
 * signal handler that comes while it is made does not touch it. */
static int thread_conn(struct conn *c, int pid)
{
	if (c->fd >= 0)
		return 0;
	int saved = errno;
	pthread_mutex_lock(&list_lock);
	int fd = new_socket();
	if (fd >= 0) {
		c->fd = fd;
		c->pid = pid;
		c->next = list;
		if (list)
			list->prev = c;
		list = c;
	}
	pthread_mutex_unlock(&list_lock);
	if (fd < 0) {
		gone("cannot make a socket");
		errno = saved;
		return -EIO;
	}
	pthread_setspecific(exit_key, c);
	if (hello(fd)) {
		drop(c);
		return -EIO;
	}
	return 0;
}

/* A socket for one request. mine: of this process (registered for the
 * fork handler), not of a vfork child's. @return it, or -EIO. */
static int oneoff_open(int mine)
{
	int saved = errno;
	int fd = new_socket();
	if (fd < 0) {
		gone("cannot make a socket");
		errno = saved;
		return -EIO;
	}
	for (int i = 0; mine && i < N_ONEOFF; i++) {
		int free_slot = 0;
		if (atomic_compare_exchange_strong(&oneoff[i], &free_slot,
						   fd + 1))
			break;
	}
	if (hello(fd)) {
		sys_close(fd);
		fd = -EIO;
	}
	return fd;
}

static void oneoff_close(int fd, int mine)
{
	for (int i = 0; mine && i < N_ONEOFF; i++) {
		int v = fd + 1;
		if (atomic_compare_exchange_strong(&oneoff[i], &v, 0))
			break;
	}
	sys_close(fd);
}

/* How this request is sent. */
enum way {
	THREAD,      /* on the thread's connection */
	ONEOFF_MINE, /* a signal handler's: on its own connection */
	ONEOFF_AWAY, /* another process's: on its own connection */
};

static enum way way_of(const struct conn *c, int pid)
{
	if (c->fd >= 0 ? c->pid != pid : pid != atomic_load(&dlfs_pl.pid))
		return ONEOFF_AWAY;
	return c->busy ? ONEOFF_MINE : THREAD;
}

static int call_oneoff(int mine, const struct dlfs_wire_req *req,
		       const char *name, void *buf, size_t cap, uint64_t *len,
		       uint32_t *count, struct dlfs_conn_fds *fds)
{
	int status = 0;
	int fd = oneoff_open(mine);
	if (fd < 0)
		return fd;
	if (!req)
		goto out; /* a HELLO only */
	if (exchange(fd, req, name, buf, cap, len, count, fds, &status)) {
		gone("a request failed");
		status = -EIO;
	}
out:
	oneoff_close(fd, mine);
	return status;
}

static int call_thread(struct conn *c, int pid, const struct dlfs_wire_req *req,
		       const char *name, void *buf, size_t cap, uint64_t *len,
		       uint32_t *count, struct dlfs_conn_fds *fds)
{
	int status = 0;
	c->busy = 1;
	int ret = thread_conn(c, pid);
	if (ret || !req)
		goto out;
	ret = exchange(c->fd, req, name, buf, cap, len, count, fds, &status);
	if (ret) {
		/* The server is gone, or the stream is out of step; a later
		 * call tries a new connection. */
		gone("a request failed");
		drop(c);
	}
out:
	c->busy = 0;
	return ret ? ret : status;
}

/* One request (or, req NULL, a connection that said HELLO). */
static int call(const struct dlfs_wire_req *req, const char *name, void *buf,
		size_t cap, uint64_t *len, uint32_t *count,
		struct dlfs_conn_fds *fds)
{
	struct conn *c = &tconn;
	int old, ret, pid = sys_getpid();
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
	switch (way_of(c, pid)) {
	case THREAD:
		ret = call_thread(c, pid, req, name, buf, cap, len, count, fds);
		break;
	case ONEOFF_MINE:
		ret = call_oneoff(1, req, name, buf, cap, len, count, fds);
		break;
	default:
		ret = call_oneoff(0, req, name, buf, cap, len, count, fds);
		break;
	}
	pthread_setcancelstate(old, NULL);
	return ret;
}

int dlfs_conn_ready(void)
{
	if (atomic_load_explicit(&dlfs_pl.ready, memory_order_acquire))
		return 0;
	return call(NULL, NULL, NULL, 0, NULL, NULL, NULL);
}

int dlfs_conn_call(const struct dlfs_wire_req *req, const char *name,
		   void *buf, size_t cap, uint64_t *len, uint32_t *count)
{
	return call(req, name, buf, cap, len, count, NULL);
}

int dlfs_conn_call_fds(const struct dlfs_wire_req *req, void *buf, size_t cap,
		       uint64_t *len, struct dlfs_conn_fds *fds)
{
	fds->n = 0;
	int ret = call(req, NULL, buf, cap, len, NULL, fds);
	if (ret) { /* a failed reply passes nothing on */
		for (int i = 0; i < fds->n; i++)
			sys_close(fds->fd[i]);
		fds->n = 0;
	}
	return ret;
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

/* In the child: close the parent's connections, the ones being dialled
 * and the one-offs too. The child is single-threaded here, and the list
 * is whole (prepare took list_lock). */
void dlfs_conn_fork_child(void)
{
	for (struct conn *c = list, *n; c; c = n) {
		n = c->next;
		sys_close(c->fd);
		c->fd = -1;
		c->next = c->prev = NULL;
	}
	list = NULL;
	for (int i = 0; i < N_ONEOFF; i++) {
		int v = atomic_exchange(&oneoff[i], 0);
		if (v)
			sys_close(v - 1);
	}
	tconn.busy = 0;
	pthread_mutex_unlock(&hello_lock);
	pthread_mutex_unlock(&list_lock);
}

void dlfs_conn_init(void)
{
	pthread_key_create(&exit_key, thread_exit);
}
