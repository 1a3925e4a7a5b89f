/* wiresrv: the preload wire's server in a thread (see wiresrv.h). */
#include "wiresrv.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "state.h"

#define MAX_CONNS 256

static struct {
	int lfd;
	char dir[64];
	char path[108];
	ws_handler h;
	void *ctx;
	atomic_int accepted;
	pthread_mutex_t lock;
	int conns[MAX_CONNS];
	int n_conns;
} ws = {.lfd = -1, .lock = PTHREAD_MUTEX_INITIALIZER};

static int recv_all(int fd, void *buf, size_t len)
{
	char *p = buf;
	while (len) {
		ssize_t n = recv(fd, p, len, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int send_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int ws_reply(int fd, int32_t status, uint32_t count, const void *buf,
	     uint64_t len)
{
	struct dlfs_wire_rep rep = {.status = status,
				    .count = count,
				    .len = len};
	if (send_all(fd, &rep, sizeof(rep)))
		return -1;
	if (!len)
		return 0;
	if (buf)
		return send_all(fd, buf, len);
	char *z = calloc(1, len);
	int ret = z ? send_all(fd, z, len) : -1;
	free(z);
	return ret;
}

int ws_reply_fds(int fd, int32_t status, const void *buf, uint64_t len,
		 const int *fds, int n)
{
	struct dlfs_wire_rep rep = {.status = status, .len = len};
	union {
		char b[CMSG_SPACE(8 * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = {&rep, sizeof(rep)};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	if (n > 0) {
		memset(&u, 0, sizeof(u));
		mh.msg_control = u.b;
		mh.msg_controllen = CMSG_SPACE((size_t)n * sizeof(int));
		struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN((size_t)n * sizeof(int));
		memcpy(CMSG_DATA(c), fds, (size_t)n * sizeof(int));
	}
	if (sendmsg(fd, &mh, MSG_NOSIGNAL) != (ssize_t)sizeof(rep))
		return -1;
	return len ? send_all(fd, buf, len) : 0;
}

int ws_hello(int fd, uint32_t max_io, int shm)
{
	struct dlfs_wire_hello h;
	memset(&h, 0, sizeof(h));
	h.version = DLFS_WIRE_VERSION;
	h.max_io = max_io;
	h.root_ino = 1;
	h.root.st_ino = 1;
	h.root.st_mode = S_IFDIR | 0555;
	h.root.st_nlink = 2;
	strcpy(h.ctl_name, ".dlfs");
	h.shm = (uint32_t)shm;
	return ws_reply(fd, 0, 0, &h, sizeof(h));
}

int ws_accepted(void)
{
	return atomic_load(&ws.accepted);
}

static void forget_conn(int fd)
{
	pthread_mutex_lock(&ws.lock);
	for (int i = 0; i < ws.n_conns; i++)
		if (ws.conns[i] == fd) {
			ws.conns[i] = ws.conns[--ws.n_conns];
			break;
		}
	pthread_mutex_unlock(&ws.lock);
}

static void *serve_conn(void *arg)
{
	int fd = (int)(intptr_t)arg;
	struct dlfs_wire_req q;
	char *nm = malloc(DLFS_WIRE_MAX_NAME + 1);
	while (nm && !recv_all(fd, &q, sizeof(q))) {
		if (q.name_len > DLFS_WIRE_MAX_NAME ||
		    recv_all(fd, nm, q.name_len))
			break;
		nm[q.name_len] = '\0';
		if (ws.h(ws.ctx, fd, &q, nm) < 0)
			break;
	}
	free(nm);
	forget_conn(fd);
	close(fd);
	return NULL;
}

static void *accept_loop(void *arg)
{
	int lfd = (int)(intptr_t)arg;
	for (;;) {
		int fd = accept(lfd, NULL, NULL);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			break;
		}
		atomic_fetch_add(&ws.accepted, 1);
		pthread_mutex_lock(&ws.lock);
		if (ws.n_conns < MAX_CONNS)
			ws.conns[ws.n_conns++] = fd;
		pthread_mutex_unlock(&ws.lock);
		pthread_t t;
		if (pthread_create(&t, NULL, serve_conn, (void *)(intptr_t)fd))
			abort();
		pthread_detach(t);
	}
	return NULL;
}

void ws_start_preload(const char *prefix, ws_handler h, void *ctx)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	strcpy(ws.dir, "/tmp/wiresrv.XXXXXX");
	if (!mkdtemp(ws.dir) || strlen(prefix) >= sizeof(dlfs_pl.prefix))
		abort();
	snprintf(ws.path, sizeof(ws.path), "%s/s", ws.dir);
	strcpy(sa.sun_path, ws.path);
	strcpy(dlfs_pl.prefix, prefix);
	strcpy(dlfs_pl.sock, ws.path);
	dlfs_pl.root.prefix = dlfs_pl.prefix;
	dlfs_pl.root.prefix_len = strlen(prefix);
	dlfs_pl.on = 1;
	atomic_store(&dlfs_pl.pid, (int)getpid());
	ws.h = h;
	ws.ctx = ctx;
	int lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    listen(lfd, 64)) {
		perror("wiresrv");
		abort();
	}
	ws.lfd = lfd;
	pthread_t t;
	if (pthread_create(&t, NULL, accept_loop, (void *)(intptr_t)lfd))
		abort();
	pthread_detach(t);
}

void ws_stop(void)
{
	unlink(ws.path);
	rmdir(ws.dir);
	if (ws.lfd >= 0)
		shutdown(ws.lfd, SHUT_RDWR);
	pthread_mutex_lock(&ws.lock);
	for (int i = 0; i < ws.n_conns; i++)
		shutdown(ws.conns[i], SHUT_RDWR);
	pthread_mutex_unlock(&ws.lock);
}
