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
static atomic_int said_gone, said_garbled, said_socket, said_hello;
static atomic_int n_reported; /* dlfs_conn_report's lines */
static atomic_int oneoff[N_ONEOFF]; /* fd + 1 of this process's one-offs */
/* The error reply of the server that ended this thread's last call, and
 * the errno behind it (its count, wire.h), for dlfs_conn_report; 0 after
 * a call that succeeded or failed otherwise. */
static __thread int reply_err __attribute__((tls_model("initial-exec")));
static __thread uint32_t reply_cause __attribute__((tls_model("initial-exec")));

/* How a connection failed, besides the negative errno of a socket call:
 * the server closed it (a reply's bytes were missing), or sent a reply
 * that makes no sense. */
#define CLOSED (-ECONNABORTED)
#define GARBLED (-EBADMSG)

/* dlfs_conn_report's lines at most, per process. */
#define MAX_REPORTS 20

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

/* A connection failed at what (why: a socket call's -errno, CLOSED or
 * GARBLED); the stream is unusable. Says so once per process (the server
 * gone, or talking nonsense). @return -EIO, the caller's error. */
static int broken(const char *what, int why)
{
	if (why == GARBLED) {
		const char *p[] = {"a reply of the dlfs server at ",
				   dlfs_pl.sock,
				   " makes no sense (another build of dlfs?): "
				   "calls under ",
				   dlfs_pl.prefix, " fail with EIO"};
		if (!atomic_exchange(&said_garbled, 1))
			dlfs_pl_say_parts(p, 5);
		return -EIO;
	}
	const char *p[] = {"the dlfs server is gone (", what, ": ",
			   why == CLOSED ? "it closed the connection"
					 : strerrordesc_np(-why),
			   "): calls under ", dlfs_pl.prefix,
			   " that need it fail with EIO"};
	if (!atomic_exchange(&said_gone, 1))
		dlfs_pl_say_parts(p, 7);
	return -EIO;
}

/* No socket for a connection: the process is out of descriptors or
 * memory, the server is not to blame. @return -errno, the caller's. */
static int no_socket(int e)
{
	const char *p[] = {"cannot make a socket to reach the dlfs server: ",
			   strerrordesc_np(e)};
	if (!atomic_exchange(&said_socket, 1))
		dlfs_pl_say_parts(p, 2);
	return -e;
}

/* Send the iovecs in full. @return 0, -errno or CLOSED. */
static int send_all(int fd, struct iovec *iov, int cnt)
{
	while (cnt) {
		struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t)cnt};
		ssize_t n = sendmsg(fd, &mh, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : CLOSED;
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

/* @return 0, -errno or CLOSED. */
static int recv_all(int fd, void *buf, size_t len)
{
	char *p = buf;
	while (len) {
		ssize_t n = recv(fd, p, len, MSG_WAITALL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : CLOSED;
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
 * @return 0; or -errno, CLOSED or GARBLED when the stream is broken (then
 * fd is unusable). */
static int exchange(int fd, const struct dlfs_wire_req *req, const char *name,
		    void *buf, size_t cap, uint64_t *len, uint32_t *count,
		    struct dlfs_conn_fds *fds, int *status)
{
	struct dlfs_wire_rep rep;
	int ret = GARBLED;
	int saved = errno; /* a successful call leaves errno alone */

	if (req->name_len > DLFS_WIRE_MAX_NAME)
		goto out;
	struct iovec out[2] = {{(void *)req, sizeof(*req)},
			       {(void *)name, req->name_len}};
	if ((ret = send_all(fd, out, req->name_len ? 2 : 1)))
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
	if (n <= 0) {
		ret = n < 0 ? -errno : CLOSED;
		goto out;
	}
	if (fds)
		take_fds(&mh, fds);
	size_t have = 0; /* payload bytes already in buf */
	if ((size_t)n < sizeof(rep)) {
		ret = recv_all(fd, (char *)&rep + n, sizeof(rep) - (size_t)n);
		if (ret)
			goto out;
	} else {
		have = (size_t)n - sizeof(rep);
	}
	ret = GARBLED;
	if (rep.len > cap || have > rep.len || (rep.status && rep.len) ||
	    rep.status > 0 || rep.status < -4095)
		goto out;
	if (rep.len > have &&
	    (ret = recv_all(fd, (char *)buf + have, rep.len - have)))
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

/* Is h a HELLO of this wire that we can use? */
static int hello_ok(const struct dlfs_wire_hello *h, uint64_t len)
{
	return len == sizeof(*h) && h->version == DLFS_WIRE_VERSION &&
	       h->max_io && memchr(h->ctl_name, '\0', sizeof(h->ctl_name));
}

/* The first HELLO of the process fills dlfs_pl. */
static void take_hello(const struct dlfs_wire_hello *h)
{
	if (atomic_load_explicit(&dlfs_pl.ready, memory_order_acquire))
		return;
	pthread_mutex_lock(&hello_lock);
	if (!atomic_load(&dlfs_pl.ready)) {
		dlfs_pl.max_io = h->max_io < DLFS_WIRE_MAX_IO
					 ? h->max_io
					 : DLFS_WIRE_MAX_IO;
		memcpy(dlfs_pl.ctl_name, h->ctl_name, sizeof(dlfs_pl.ctl_name));
		dlfs_pl.root_ino = h->root_ino;
		dlfs_pl.root_st = h->root;
		dlfs_pl.shm = (int)h->shm;
		atomic_store_explicit(&dlfs_pl.ready, 1, memory_order_release);
	}
	pthread_mutex_unlock(&hello_lock);
}

/* The server answered HELLO with an error (st; n, the errno behind an
 * EIO): it is there, and says what is wrong. The damage errors are
 * reported with the caller's path (dlfs_conn_report); the others, which
 * no path explains (another version of the wire, ...), here, once.
 * @return st. */
static int hello_refused(int st, uint32_t n)
{
	reply_err = st;
	reply_cause = n;
	const char *p[] = {"the dlfs server at ", dlfs_pl.sock,
			   " refused this client: ", strerrordesc_np(-st)};
	if (st != -EIO && st != -EUCLEAN && !atomic_exchange(&said_hello, 1))
		dlfs_pl_say_parts(p, 4);
	return st;
}

/* Connect fd and say HELLO; the first HELLO of the process fills
 * dlfs_pl. @return 0, the server's error (its reply), or -EIO (gone,
 * or nonsense). */
static int hello(int fd)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct dlfs_wire_hello h;
	struct dlfs_wire_req req = {.op = DLFS_WIRE_HELLO,
				    .size = DLFS_WIRE_VERSION};
	uint64_t len = 0;
	int saved = errno, ret;
	memcpy(sa.sun_path, dlfs_pl.sock, sizeof(sa.sun_path));
	int r;
	do
		r = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
	while (r < 0 && errno == EINTR);
	if (r < 0) {
		ret = broken(dlfs_pl.sock, -errno);
		goto out;
	}
	int st = 0;
	uint32_t n = 0;
	r = exchange(fd, &req, NULL, &h, sizeof(h), &len, &n, NULL, &st);
	if (r)
		ret = broken("its HELLO", r);
	else if (st)
		ret = hello_refused(st, n);
	else if (!hello_ok(&h, len))
		ret = broken("its HELLO", GARBLED);
	else
		ret = 0;
	if (!ret)
		take_hello(&h);
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
	int e = errno;
	if (fd >= 0) {
		c->fd = fd;
		c->pid = pid;
		c->next = list;
		if (list)
			list->prev = c;
		list = c;
	}
	pthread_mutex_unlock(&list_lock);
	errno = saved;
	if (fd < 0)
		return no_socket(e);
	pthread_setspecific(exit_key, c);
	int ret = hello(fd);
	if (ret)
		drop(c);
	return ret;
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

/* A socket for one request. mine: of this process (registered for the
 * fork handler), not of a vfork child's. @return it, or -errno as
 * hello(). */
static int oneoff_open(int mine)
{
	int saved = errno;
	int fd = new_socket();
	int e = errno;
	errno = saved;
	if (fd < 0)
		return no_socket(e);
	for (int i = 0; mine && i < N_ONEOFF; i++) {
		int free_slot = 0;
		if (atomic_compare_exchange_strong(&oneoff[i], &free_slot,
						   fd + 1))
			break;
	}
	int ret = hello(fd);
	if (ret) {
		oneoff_close(fd, mine);
		fd = ret;
	}
	return fd;
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

/* The end of an exchange (r, the reply's status st and count n): the
 * server's error for dlfs_conn_report, or a broken connection said.
 * @return the call's result. */
static int ended(int r, int st, uint32_t n)
{
	if (r)
		return broken("a request", r);
	reply_err = st;
	reply_cause = st ? n : 0;
	return st;
}

static int call_oneoff(int mine, const struct dlfs_wire_req *req,
		       const char *name, void *buf, size_t cap, uint64_t *len,
		       uint32_t *count, struct dlfs_conn_fds *fds)
{
	int status = 0, ret = 0;
	uint32_t n = 0;
	int fd = oneoff_open(mine);
	if (fd < 0)
		return fd;
	if (req) { /* else a HELLO only */
		ret = exchange(fd, req, name, buf, cap, len, &n, fds, &status);
		ret = ended(ret, status, n);
		if (!ret && count)
			*count = n;
	}
	oneoff_close(fd, mine);
	return ret;
}

static int call_thread(struct conn *c, int pid, const struct dlfs_wire_req *req,
		       const char *name, void *buf, size_t cap, uint64_t *len,
		       uint32_t *count, struct dlfs_conn_fds *fds)
{
	int status = 0;
	uint32_t n = 0;
	c->busy = 1;
	int ret = thread_conn(c, pid);
	if (ret || !req)
		goto out;
	ret = exchange(c->fd, req, name, buf, cap, len, &n, fds, &status);
	/* A broken stream (the server gone, or out of step) is dropped; a
	 * later call tries a new connection. */
	if (ret)
		drop(c);
	ret = ended(ret, status, n);
	if (!ret && count)
		*count = n;
out:
	c->busy = 0;
	return ret;
}

/* One request (or, req NULL, a connection that said HELLO). */
static int call(const struct dlfs_wire_req *req, const char *name, void *buf,
		size_t cap, uint64_t *len, uint32_t *count,
		struct dlfs_conn_fds *fds)
{
	struct conn *c = &tconn;
	int old, ret, pid = sys_getpid();
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
	reply_err = 0;
	reply_cause = 0;
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

/* What the server's damage errors mean to a user: err, and the errno
 * behind an EIO (cause, 0 if not known). */
static const char *damage_text(int err, uint32_t cause)
{
	if (err == -EUCLEAN || cause == EUCLEAN)
		return "the dataset's index or a container is damaged there "
		       "(EUCLEAN; the server's messages say where)";
	if (cause == EBADMSG)
		return "the bytes read did not pass their checksum (EBADMSG; "
		       "the server's messages say where)";
	if (cause)
		return strerrordesc_np((int)cause);
	return "the server's messages say why";
}

void dlfs_conn_report(const char *dir, const char *path, long ret)
{
	int err = reply_err;
	uint32_t cause = reply_cause;
	if (!ret || ret != err)
		return; /* no error, or not the server's */
	reply_err = 0;
	if (err != -EIO && err != -EUCLEAN)
		return; /* an answer (ENOENT, ENODATA, ...), not news */
	int n = atomic_fetch_add(&n_reported, 1);
	if (n < MAX_REPORTS) {
		int rel = dir && path[0] != '/';
		const char *p[] = {rel ? dir : NULL, rel ? "/" : NULL, path,
				   err == -EIO ? ": the dlfs server answered "
						 "EIO: "
					       : ": the dlfs server answered "
						 "EUCLEAN: ",
				   damage_text(err, cause)};
		dlfs_pl_say_parts(p, 5);
	} else if (n == MAX_REPORTS) {
		dlfs_pl_say("more errors from the dlfs server: not shown",
			    NULL);
	}
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
