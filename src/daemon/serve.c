/*
 * The preload front end's server: see serve.h, and wire.h for the
 * protocol.
 */
#include "serve.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <syslog.h>
#include <unistd.h>

#include "ops.h"
#include "shm.h"
#include "users.h"
#include "wire.h"

struct conn {
	struct dlfs_serve *s;
	int fd;
	pthread_t thread;
	int done; /* the thread has finished (under s->mu) */
	struct conn *next;
};

/* Connections at once: each is a thread. */
#define MAX_CONNS 1024
/* A reply a client does not take within this long ends its connection:
 * its read's chunks stay pinned in the RAM tier until then. */
#define SEND_TIMEOUT_S 30

struct dlfs_serve {
	struct dlfs_fs *fs;
	char *path;
	int lfd;             /* listening */
	int sfd;             /* signalfd of SIGINT, SIGTERM, SIGHUP */
	int alive;           /* holds the shared memory's liveness */
	pthread_mutex_t mu;  /* guards conns and n_conns */
	struct conn *conns;
	unsigned n_conns;
	struct stat root;    /* the root's attributes (shm.h's usual ones) */
};

/* ---- the socket ---- */

/* @return bytes received (n), 0 at a clean end, or -errno. */
static ssize_t recv_all(int fd, void *buf, size_t n)
{
	size_t got = 0;
	while (got < n) {
		ssize_t r = recv(fd, (char *)buf + got, n - got, MSG_WAITALL);
		if (r == 0)
			return got ? -EPROTO : 0;
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		got += (size_t)r;
	}
	return (ssize_t)n;
}

/* Send all of m, however many calls it takes. Descriptors in its
 * control part go with the first byte, once. @return 0 or -errno. */
static int send_msg(int fd, struct msghdr *m)
{
	while (m->msg_iovlen) {
		ssize_t w = sendmsg(fd, m, MSG_NOSIGNAL);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		m->msg_control = NULL;
		m->msg_controllen = 0;
		/* Skip what was sent. */
		while (m->msg_iovlen && (size_t)w >= m->msg_iov->iov_len) {
			w -= (ssize_t)m->msg_iov->iov_len;
			m->msg_iov++;
			m->msg_iovlen--;
		}
		if (m->msg_iovlen) {
			m->msg_iov->iov_base = (char *)m->msg_iov->iov_base + w;
			m->msg_iov->iov_len -= (size_t)w;
		}
	}
	return 0;
}

/* Send a reply header and iov (payload). @return 0 or -errno. */
static int send_reply(int fd, int32_t status, uint32_t count,
		      const struct iovec *iov, int iovcnt, size_t len)
{
	struct dlfs_wire_rep rep = {.status = status, .count = count,
				    .len = status ? 0 : len};
	struct iovec v[1 + DLFS_READ_IOV];
	int n = 0;
	v[n++] = (struct iovec){&rep, sizeof(rep)};
	for (int i = 0; !status && i < iovcnt && n < (int)(sizeof(v) / sizeof(v[0])); i++)
		v[n++] = iov[i];
	struct msghdr m = {.msg_iov = v, .msg_iovlen = (size_t)n};
	return send_msg(fd, &m);
}

/* A reply with n descriptors passed along (SCM_RIGHTS), in one message:
 * they arrive with its first byte. @return 0 or -errno. */
static int send_fds(int fd, int32_t status, const void *p, size_t len,
		    const int *fds, int n)
{
	struct dlfs_wire_rep rep = {.status = status, .len = status ? 0 : len};
	struct iovec v[2] = {{&rep, sizeof(rep)}, {(void *)p, len}};
	union {
		char buf[CMSG_SPACE(3 * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr m = {.msg_iov = v, .msg_iovlen = status || !len ? 1 : 2};
	if (!status && n > 0 && n <= 3) {
		memset(&u, 0, sizeof(u));
		m.msg_control = u.buf;
		m.msg_controllen = CMSG_SPACE((size_t)n * sizeof(int));
		struct cmsghdr *c = CMSG_FIRSTHDR(&m);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN((size_t)n * sizeof(int));
		memcpy(CMSG_DATA(c), fds, (size_t)n * sizeof(int));
	}
	return send_msg(fd, &m);
}

static int send_buf(int fd, int32_t status, uint32_t count, const void *p,
		    size_t len)
{
	struct iovec v = {(void *)p, len};
	return send_reply(fd, status, count, &v, 1, len);
}

/* ---- the operations ---- */

/* The count of a reply of status: for EIO, the error behind it (wire.h),
 * which the thread's context noted; it is forgotten either way. A thread
 * without a context (it could not make one) has nothing noted: none is
 * made here. */
static uint32_t why(struct dlfs_serve *s, int status)
{
	struct dlfs_reader_ctx *x = pthread_getspecific(s->fs->ctx_key);
	int c = x ? dlfs_reader_ctx_cause(x) : 0;
	return status == -EIO && c < 0 && c > -4096 ? (uint32_t)-c : 0;
}

struct request {
	struct dlfs_wire_req h;
	char name[DLFS_WIRE_MAX_NAME + 1];
};

static int op_hello(struct dlfs_serve *s, int fd, const struct request *q)
{
	struct dlfs_wire_hello h;
	double tmo;
	memset(&h, 0, sizeof(h));
	if (q->h.size != DLFS_WIRE_VERSION)
		return send_buf(fd, -EPROTONOSUPPORT, 0, NULL, 0);
	h.version = DLFS_WIRE_VERSION;
	h.max_io = DLFS_WIRE_MAX_IO;
	h.root_ino = DLFS_ROOT_INO;
	int fds[3];
	h.shm = dlfs_reader_share_fds(s->fs->reader, fds) == 0;
	int ret = dlfs_ops_getattr(s->fs, DLFS_ROOT_INO, &h.root, &tmo);
	const char *name = s->fs->ctl.name;
	if (strlen(name) >= sizeof(h.ctl_name))
		ret = -ENAMETOOLONG;
	else
		strcpy(h.ctl_name, name);
	return send_buf(fd, ret, why(s, ret), &h, sizeof(h));
}

static int op_lookup(struct dlfs_serve *s, int fd, const struct request *q)
{
	struct dlfs_wire_entry e;
	double tmo;
	memset(&e, 0, sizeof(e));
	int ret = memchr(q->name, '/', q->h.name_len) || !q->h.name_len
			  ? -ENOENT
			  : dlfs_ops_lookup(s->fs, q->h.ino, q->name, &e.ino,
					    &e.st, &tmo);
	/* The control namespace's answers change as the run goes on: the
	 * client caches none of them (wire.h), and no other process gets
	 * them from the names table. */
	int vol = dlfs_ctl_is(q->h.ino) || dlfs_ctl_is(e.ino);
	e.flags = vol ? DLFS_WIRE_VOLATILE : 0;
	if (!ret && !vol && dlfs_shm_attr_usual(&e.st, &s->root))
		dlfs_reader_share_name(s->fs->reader, q->h.ino, q->name,
				       q->h.name_len, e.ino, &e.st);
	return send_buf(fd, ret, why(s, ret), &e, sizeof(e));
}

static int op_getattr(struct dlfs_serve *s, int fd, const struct request *q)
{
	struct stat st;
	double tmo;
	int ret = dlfs_ops_getattr(s->fs, q->h.ino, &st, &tmo);
	return send_buf(fd, ret, why(s, ret), &st, sizeof(st));
}

static int op_readlink(struct dlfs_serve *s, int fd, const struct request *q)
{
	char target[PATH_MAX + 1];
	int n = dlfs_ops_readlink(s->fs, q->h.ino, target);
	return send_buf(fd, n < 0 ? n : 0, why(s, n), target,
			n < 0 ? 0 : (size_t)n);
}

struct dir_out {
	char *buf;
	size_t size, used;
	uint32_t count;
};

static int put_dirent(void *arg, const char *name, size_t len,
		      const struct stat *st, int attrs, uint64_t next)
{
	struct dir_out *d = arg;
	(void)attrs; /* plain listings only */
	if (next <= 2) /* "." and "..": the client knows them */
		return 0;
	uint64_t need = dlfs_wire_dirent_size((uint32_t)len);
	if (need > d->size - d->used)
		return 1;
	struct dlfs_wire_dirent de = {.cookie = next, .ino = st->st_ino,
				      .mode = st->st_mode,
				      .name_len = (uint32_t)len};
	memcpy(d->buf + d->used, &de, sizeof(de));
	memcpy(d->buf + d->used + sizeof(de), name, len);
	memset(d->buf + d->used + sizeof(de) + len, 0,
	       need - sizeof(de) - len);
	d->used += need;
	d->count++;
	return 0;
}

static int op_readdir(struct dlfs_serve *s, int fd, const struct request *q)
{
	struct dir_out d = {.size = q->h.size};
	/* Room for the longest name, or no entries would read as the end. */
	if (d.size < DLFS_WIRE_MIN_DIR)
		return send_buf(fd, -EINVAL, 0, NULL, 0);
	if (!(d.buf = malloc(d.size)))
		return send_buf(fd, -ENOMEM, 0, NULL, 0);
	int ret = dlfs_ops_readdir(s->fs, q->h.ino, q->h.off, 0, put_dirent,
				   &d);
	ret = ret && !d.count ? ret : 0;
	ret = send_buf(fd, ret, ret ? why(s, ret) : d.count, d.buf, d.used);
	free(d.buf);
	return ret;
}

static int op_read(struct dlfs_serve *s, int fd, const struct request *q)
{
	struct dlfs_reader_ctx *x;
	struct dlfs_ops_read r;
	int ret = dlfs_fs_ctx(s->fs, &x);
	if (ret)
		return send_buf(fd, ret, 0, NULL, 0);
	ret = dlfs_ops_read(s->fs, x, q->h.ino, q->h.off, (size_t)q->h.size,
			    &r);
	ret = send_reply(fd, ret, why(s, ret), r.iov, r.iovcnt,
			 ret ? 0 : r.len);
	dlfs_ops_read_done(x, &r);
	return ret;
}

/* The tiers' shared memory (MAP). */
static int op_map(struct dlfs_serve *s, int fd)
{
	int fds[3];
	struct dlfs_wire_map m;
	memset(&m, 0, sizeof(m));
	if (dlfs_reader_share_fds(s->fs->reader, fds))
		return send_buf(fd, -ENOENT, 0, NULL, 0);
	for (int i = 0; i < 3; i++) {
		struct stat st;
		if (fstat(fds[i], &st))
			return send_buf(fd, -errno, 0, NULL, 0);
		m.size[i] = (uint64_t)st.st_size;
	}
	return send_fds(fd, 0, &m, sizeof(m), fds, 3);
}

/* A read-only descriptor of a container's NVMe cache file (NVFD). */
static int op_nvfd(struct dlfs_serve *s, int fd, const struct request *q)
{
	if (q->h.ino > UINT32_MAX)
		return send_buf(fd, -EINVAL, 0, NULL, 0);
	int nv = dlfs_reader_nvme_fd(s->fs->reader, (uint32_t)q->h.ino);
	if (nv < 0)
		return send_buf(fd, nv, 0, NULL, 0);
	int ret = send_fds(fd, 0, NULL, 0, &nv, 1);
	close(nv);
	return ret;
}

static int op_statfs(struct dlfs_serve *s, int fd)
{
	struct statvfs sv;
	dlfs_ops_statfs(s->fs, &sv);
	return send_buf(fd, 0, 0, &sv, sizeof(sv));
}

/* GETXATTR (name) or LISTXATTR: size 0 asks for the length only, given in
 * count with no payload. */
static int op_xattr(struct dlfs_serve *s, int fd, const struct request *q,
		    int list)
{
	char buf[64];
	int is_file;
	const void *val = buf;
	int n = dlfs_ops_xattr(s->fs, q->h.ino, list ? NULL : q->name, buf,
			       sizeof(buf), &is_file);
	if (list) {
		val = dlfs_ops_xattr_names;
		n = n < 0 && n != -ENODATA ? n
			: is_file ? (int)dlfs_ops_xattr_names_len : 0;
	}
	if (n < 0)
		return send_buf(fd, n, why(s, n), NULL, 0);
	if (!q->h.size)
		return send_buf(fd, 0, (uint32_t)n, NULL, 0);
	if ((uint64_t)n > q->h.size)
		return send_buf(fd, -ERANGE, 0, NULL, 0);
	return send_buf(fd, 0, (uint32_t)n, val, (size_t)n);
}

/* One request: @return 0 to go on, or -errno to close the connection. */
static int answer(struct dlfs_serve *s, int fd, struct request *q)
{
	switch (q->h.op) {
	case DLFS_WIRE_HELLO:
		return op_hello(s, fd, q);
	case DLFS_WIRE_LOOKUP:
		return op_lookup(s, fd, q);
	case DLFS_WIRE_GETATTR:
		return op_getattr(s, fd, q);
	case DLFS_WIRE_READLINK:
		return op_readlink(s, fd, q);
	case DLFS_WIRE_READDIR:
		return op_readdir(s, fd, q);
	case DLFS_WIRE_READ:
		return op_read(s, fd, q);
	case DLFS_WIRE_STATFS:
		return op_statfs(s, fd);
	case DLFS_WIRE_GETXATTR:
		return op_xattr(s, fd, q, 0);
	case DLFS_WIRE_LISTXATTR:
		return op_xattr(s, fd, q, 1);
	case DLFS_WIRE_MAP:
		return op_map(s, fd);
	case DLFS_WIRE_NVFD:
		return op_nvfd(s, fd, q);
	}
	return -EPROTO;
}

/* Read one request. @return 1, 0 at the end, or -errno (-EPROTO: not
 * one of ours). */
static int next_request(int fd, struct request *q)
{
	ssize_t r = recv_all(fd, &q->h, sizeof(q->h));
	if (r <= 0)
		return (int)r;
	if (q->h.name_len > DLFS_WIRE_MAX_NAME || q->h.size > DLFS_WIRE_MAX_IO)
		return -EPROTO;
	r = q->h.name_len ? recv_all(fd, q->name, q->h.name_len)
			  : (ssize_t)0;
	if (r < 0 || (q->h.name_len && r == 0))
		return r < 0 ? (int)r : -EPROTO;
	q->name[q->h.name_len] = '\0';
	if (strlen(q->name) != q->h.name_len)
		return -EPROTO; /* a NUL inside a name */
	return 1;
}

static void *conn_main(void *arg)
{
	struct conn *c = arg;
	struct dlfs_serve *s = c->s;
	struct request *q = malloc(sizeof(*q));
	int ret = q ? 1 : -ENOMEM;
	while (ret > 0 && (ret = next_request(c->fd, q)) > 0)
		if (!(ret = answer(s, c->fd, q)))
			ret = 1;
	/* A client that went away (EPIPE, ECONNRESET) is not news. */
	if (ret == -EAGAIN)
		dlfs_fs_log(s->fs, LOG_WARNING,
			    "a preload client did not take a reply within "
			    "30 s (stopped?): its connection is closed");
	if (ret == -EPROTO)
		dlfs_fs_log(s->fs, LOG_WARNING,
			    "a preload client broke the protocol or went "
			    "away mid-request: its connection is closed");
	free(q);
	/* The client sees the end now; the descriptor is closed when the
	 * thread is reaped. */
	shutdown(c->fd, SHUT_RDWR);
	pthread_mutex_lock(&s->mu);
	c->done = 1;
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

/* ---- connections ---- */

/* Join and free the connections whose threads are done (all, when
 * all is set, after shutting their sockets). */
static void reap(struct dlfs_serve *s, int all)
{
	pthread_mutex_lock(&s->mu);
	for (struct conn *c = s->conns; all && c; c = c->next)
		shutdown(c->fd, SHUT_RDWR);
	struct conn **pp = &s->conns;
	while (*pp) {
		struct conn *c = *pp;
		if (!all && !c->done) {
			pp = &c->next;
			continue;
		}
		*pp = c->next;
		s->n_conns--;
		pthread_mutex_unlock(&s->mu);
		pthread_join(c->thread, NULL);
		close(c->fd);
		free(c);
		pthread_mutex_lock(&s->mu);
	}
	pthread_mutex_unlock(&s->mu);
}

static int add_conn(struct dlfs_serve *s, int fd)
{
	struct timeval tv = {.tv_sec = SEND_TIMEOUT_S};
	if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)))
		return -errno;
	struct conn *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->s = s;
	c->fd = fd;
	pthread_mutex_lock(&s->mu);
	int ret = s->n_conns >= MAX_CONNS
			  ? EMFILE
			  : pthread_create(&c->thread, NULL, conn_main, c);
	if (!ret) {
		c->next = s->conns;
		s->conns = c;
		s->n_conns++;
	}
	pthread_mutex_unlock(&s->mu);
	if (ret)
		free(c);
	return -ret;
}

/* ---- the server ---- */

static int listen_at(struct dlfs_serve *s, const char *path,
		     struct dlfs_err *err)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	if (strlen(path) >= sizeof(a.sun_path))
		return dlfs_err_set(err, -ENAMETOOLONG,
				    "--serve %s: longer than a socket path "
				    "may be (%zu bytes)",
				    path, sizeof(a.sun_path) - 1);
	strcpy(a.sun_path, path);
	s->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s->lfd < 0)
		return dlfs_err_sys(err, -errno, "--serve %s: socket", path);
	/* Not umask: other threads create files meanwhile (the NVMe tier).
	 * dlfs-run's socket is in a private directory anyway. */
	if (bind(s->lfd, (struct sockaddr *)&a, sizeof(a)))
		return dlfs_err_sys(err, -errno, "--serve %s", path);
	if (!(s->path = strdup(path)))
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	if (chmod(path, 0600))
		return dlfs_err_sys(err, -errno, "--serve %s: chmod", path);
	if (listen(s->lfd, 128))
		return dlfs_err_sys(err, -errno, "--serve %s: listen", path);
	return 0;
}

int dlfs_serve_open(struct dlfs_fs *fs, const char *path,
		    struct dlfs_serve **out, struct dlfs_err *err)
{
	struct dlfs_serve *s = calloc(1, sizeof(*s));
	if (!s)
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	s->fs = fs;
	s->lfd = s->sfd = -1;
	pthread_mutex_init(&s->mu, NULL);
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	double tmo;
	int ret = dlfs_ops_getattr(fs, DLFS_ROOT_INO, &s->root, &tmo);
	if (ret)
		dlfs_err_set(err, ret, "the dataset's root: %s", strerror(-ret));
	/* Before any client can map the tiers: they trust the NVMe tier's
	 * files only while this thread lives and holds it (shm.h). */
	if (!ret && (ret = dlfs_reader_share_alive(fs->reader, 1)))
		dlfs_err_set(err, ret, "the shared memory's liveness: %s",
			     strerror(-ret));
	s->alive = !ret;
	if (!ret)
		ret = listen_at(s, path, err);
	if (!ret && (s->sfd = signalfd(-1, &set, SFD_CLOEXEC)) < 0)
		ret = dlfs_err_sys(err, -errno, "signalfd");
	if (ret) {
		dlfs_serve_close(s);
		return ret;
	}
	*out = s;
	return 0;
}

int dlfs_serve_run(struct dlfs_serve *s, struct dlfs_users *users,
		   struct dlfs_err *err)
{
	struct pollfd p[2] = {{.fd = s->lfd, .events = POLLIN},
			      {.fd = s->sfd, .events = POLLIN}};
	for (;;) {
		/* A shared server looks for its users once a second. */
		int n = poll(p, 2, users ? 1000 : -1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return dlfs_err_sys(err, -errno, "poll");
		}
		if (n == 0) {
			if (dlfs_users_gone(users, s->path))
				return 0;
			continue;
		}
		if (p[1].revents)
			return 0; /* SIGINT, SIGTERM or SIGHUP */
		if (!p[0].revents)
			continue;
		reap(s, 0);
		int fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED ||
			    errno == EAGAIN)
				continue;
			if (errno == EMFILE || errno == ENFILE ||
			    errno == ENOBUFS || errno == ENOMEM) {
				dlfs_fs_log(s->fs, LOG_WARNING,
					    "accept: out of descriptors or "
					    "memory: a client waits");
				poll(NULL, 0, 100);
				continue;
			}
			return dlfs_err_sys(err, -errno, "accept on %s",
					    s->path);
		}
		int bad = add_conn(s, fd);
		if (bad) {
			char e[64];
			dlfs_logf(dlfs_fs_log, s->fs, LOG_WARNING,
				  "a new preload client is turned away (%s; "
				  "%d connections at most)",
				  dlfs_strerror(bad, e, sizeof(e)), MAX_CONNS);
			close(fd);
		}
	}
}

void dlfs_serve_close(struct dlfs_serve *s)
{
	if (!s)
		return;
	if (s->lfd >= 0)
		close(s->lfd);
	if (s->path)
		unlink(s->path);
	/* Before the tiers close (the NVMe tier's lock goes with them). */
	if (s->alive)
		dlfs_reader_share_alive(s->fs->reader, 0);
	reap(s, 1);
	if (s->sfd >= 0)
		close(s->sfd);
	pthread_mutex_destroy(&s->mu);
	free(s->path);
	free(s);
}
