/*
 * fakeserve DIR SOCKET: a stand-in for `dlfs DATASET --serve SOCKET` that
 * serves the plain directory DIR over the preload wire
 * (src/node/shared/wire.h), for testing libdlfs-preload.so without
 * the real server. Inode numbers are DIR's own (the root is 1); a control
 * directory ".dlfs" at the root holds "stats", whose size grows with every
 * READ the server answers, as the real one's does. No xattrs; statfs is
 * DIR's. One thread per
 * connection. Prints "ready" on stdout once it listens; exits on SIGTERM.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/un.h>
#include <unistd.h>

#include "wire.h"

#define CTL_DIR (1ull << 62)
#define CTL_STATS (CTL_DIR + 1)

static const char *top;
static struct stat top_st;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	uint64_t ino;
	char *path;
} *nodes;
static size_t n_nodes, cap_nodes;
static atomic_ulong reads;

/* The path of ino, or NULL. Caller frees. */
static char *path_of(uint64_t ino)
{
	char *p = NULL;
	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < n_nodes && !p; i++)
		if (nodes[i].ino == ino)
			p = strdup(nodes[i].path);
	pthread_mutex_unlock(&lock);
	return p;
}

static void remember(uint64_t ino, const char *path)
{
	char *p = path_of(ino);
	free(p);
	if (p)
		return;
	pthread_mutex_lock(&lock);
	if (n_nodes == cap_nodes) {
		cap_nodes = cap_nodes ? cap_nodes * 2 : 1024;
		nodes = realloc(nodes, cap_nodes * sizeof(*nodes));
	}
	nodes[n_nodes].ino = ino;
	nodes[n_nodes].path = strdup(path);
	n_nodes++;
	pthread_mutex_unlock(&lock);
}

static uint64_t ino_of(const struct stat *st)
{
	return st->st_ino == top_st.st_ino && st->st_dev == top_st.st_dev
		       ? 1
		       : st->st_ino;
}

static int lstat_ino(const char *path, struct stat *st)
{
	if (lstat(path, st))
		return -errno;
	st->st_ino = ino_of(st);
	return 0;
}

static void stats_text(char *buf, size_t size, size_t *len)
{
	*len = (size_t)snprintf(buf, size, "{\"reads\": %lu}\n",
				(unsigned long)atomic_load(&reads));
}

static void ctl_stat(uint64_t ino, struct stat *st)
{
	*st = top_st;
	st->st_ino = ino;
	if (ino == CTL_DIR) {
		st->st_mode = S_IFDIR | 0555;
		st->st_nlink = 2;
	} else {
		char b[64];
		size_t len;
		stats_text(b, sizeof(b), &len);
		st->st_mode = S_IFREG | 0444;
		st->st_nlink = 1;
		st->st_size = (off_t)len;
	}
}

static int recv_all(int fd, void *buf, size_t len)
{
	char *p = buf;
	while (len) {
		ssize_t n = recv(fd, p, len, 0);
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
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int reply(int fd, int status, uint32_t count, const void *buf,
		 uint64_t len)
{
	struct dlfs_wire_rep rep = {.status = status, .count = count,
				    .len = status ? 0 : len};
	if (send_all(fd, &rep, sizeof(rep)))
		return -1;
	return rep.len ? send_all(fd, buf, rep.len) : 0;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int do_readdir(int fd, const struct dlfs_wire_req *q)
{
	char *path = path_of(q->ino);
	if (q->ino == CTL_DIR) {
		/* one entry: stats */
		char buf[64] = {0};
		struct dlfs_wire_dirent de = {.cookie = 1, .ino = CTL_STATS,
					      .mode = S_IFREG, .name_len = 5};
		memcpy(buf, &de, sizeof(de));
		memcpy(buf + sizeof(de), "stats", 5);
		if (q->off >= 1)
			return reply(fd, 0, 0, NULL, 0);
		return reply(fd, 0, 1, buf, dlfs_wire_dirent_size(5));
	}
	if (!path)
		return reply(fd, -ENOENT, 0, NULL, 0);
	DIR *d = opendir(path);
	if (!d) {
		free(path);
		return reply(fd, -errno, 0, NULL, 0);
	}
	char **names = NULL;
	size_t n = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		names = realloc(names, (n + 1) * sizeof(*names));
		names[n++] = strdup(e->d_name);
	}
	closedir(d);
	qsort(names, n, sizeof(*names), cmp_names);
	size_t cap = q->size, len = 0;
	char *buf = malloc(cap ? cap : 1);
	uint32_t count = 0;
	for (size_t i = q->off; i < n; i++) {
		size_t nl = strlen(names[i]);
		uint64_t sz = dlfs_wire_dirent_size((uint32_t)nl);
		if (len + sz > cap)
			break;
		char *child;
		struct stat st;
		if (asprintf(&child, "%s/%s", path, names[i]) < 0)
			abort();
		if (lstat_ino(child, &st)) {
			free(child);
			continue;
		}
		remember(st.st_ino, child);
		free(child);
		struct dlfs_wire_dirent de = {.cookie = i + 1,
					      .ino = st.st_ino,
					      .mode = st.st_mode,
					      .name_len = (uint32_t)nl};
		memset(buf + len, 0, sz);
		memcpy(buf + len, &de, sizeof(de));
		memcpy(buf + len + sizeof(de), names[i], nl);
		len += sz;
		count++;
	}
	int ret = reply(fd, 0, count, buf, len);
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	free(buf);
	free(path);
	return ret;
}

static int serve_one(int fd, const struct dlfs_wire_req *q, const char *name)
{
	char *path = NULL, *child = NULL;
	struct stat st;
	int ret;
	switch (q->op) {
	case DLFS_WIRE_HELLO: {
		struct dlfs_wire_hello h = {.version = DLFS_WIRE_VERSION,
					    .max_io = 1u << 20,
					    .root_ino = 1};
		if (q->size != DLFS_WIRE_VERSION)
			return -1;
		lstat_ino(top, &h.root);
		strcpy(h.ctl_name, ".dlfs");
		return reply(fd, 0, 0, &h, sizeof(h));
	}
	case DLFS_WIRE_LOOKUP: {
		struct dlfs_wire_entry ent;
		memset(&ent, 0, sizeof(ent));
		if (q->ino == 1 && !strcmp(name, ".dlfs")) {
			ent.ino = CTL_DIR;
			ent.flags = DLFS_WIRE_VOLATILE;
			ctl_stat(CTL_DIR, &ent.st);
			return reply(fd, 0, 0, &ent, sizeof(ent));
		}
		if (q->ino == CTL_DIR) {
			if (strcmp(name, "stats"))
				return reply(fd, -ENOENT, 0, NULL, 0);
			ent.ino = CTL_STATS;
			ent.flags = DLFS_WIRE_VOLATILE;
			ctl_stat(CTL_STATS, &ent.st);
			return reply(fd, 0, 0, &ent, sizeof(ent));
		}
		if (!(path = path_of(q->ino)))
			return reply(fd, -ENOENT, 0, NULL, 0);
		if (strchr(name, '/') || !strcmp(name, ".") ||
		    !strcmp(name, "..")) {
			ret = reply(fd, -EINVAL, 0, NULL, 0);
			break;
		}
		if (asprintf(&child, "%s/%s", path, name) < 0)
			abort();
		ret = lstat_ino(child, &ent.st);
		if (!ret) {
			ent.ino = ent.st.st_ino;
			remember(ent.ino, child);
		}
		ret = reply(fd, ret, 0, &ent, sizeof(ent));
		break;
	}
	case DLFS_WIRE_GETATTR:
		if (q->ino == CTL_DIR || q->ino == CTL_STATS) {
			ctl_stat(q->ino, &st);
			return reply(fd, 0, 0, &st, sizeof(st));
		}
		if (!(path = path_of(q->ino)))
			return reply(fd, -ENOENT, 0, NULL, 0);
		ret = lstat_ino(path, &st);
		ret = reply(fd, ret, 0, &st, sizeof(st));
		break;
	case DLFS_WIRE_READLINK: {
		char buf[PATH_MAX];
		if (!(path = path_of(q->ino)))
			return reply(fd, -ENOENT, 0, NULL, 0);
		ssize_t n = readlink(path, buf, sizeof(buf));
		ret = reply(fd, n < 0 ? -errno : 0, 0, buf, n < 0 ? 0 : (uint64_t)n);
		break;
	}
	case DLFS_WIRE_READDIR:
		if (q->size > DLFS_WIRE_MAX_IO)
			return -1;
		return do_readdir(fd, q);
	case DLFS_WIRE_READ: {
		if (q->size > DLFS_WIRE_MAX_IO)
			return -1;
		char *buf = malloc(q->size ? q->size : 1);
		ssize_t n;
		atomic_fetch_add(&reads, 1);
		if (q->ino == CTL_STATS) {
			char b[64];
			size_t len;
			stats_text(b, sizeof(b), &len);
			n = q->off < len ? (ssize_t)(len - q->off) : 0;
			if ((size_t)n > q->size)
				n = (ssize_t)q->size;
			memcpy(buf, b + (q->off < len ? q->off : len), (size_t)n);
		} else if (!(path = path_of(q->ino))) {
			free(buf);
			return reply(fd, -ENOENT, 0, NULL, 0);
		} else {
			int f = open(path, O_RDONLY);
			n = f < 0 ? -1 : 0;
			while (f >= 0 && (uint64_t)n < q->size) {
				ssize_t r = pread(f, buf + n, q->size - (size_t)n,
						  (off_t)(q->off + (uint64_t)n));
				if (r < 0) {
					n = -1;
					break;
				}
				if (r == 0)
					break;
				n += r;
			}
			if (f >= 0)
				close(f);
		}
		ret = reply(fd, n < 0 ? -EIO : 0, 0, buf, n < 0 ? 0 : (uint64_t)n);
		free(buf);
		break;
	}
	case DLFS_WIRE_STATFS: {
		struct statvfs sv;
		ret = statvfs(top, &sv) ? -errno : 0;
		return reply(fd, ret, 0, &sv, sizeof(sv));
	}
	case DLFS_WIRE_GETXATTR:
		return reply(fd, -ENODATA, 0, NULL, 0);
	case DLFS_WIRE_LISTXATTR:
		return reply(fd, 0, 0, NULL, 0);
	default:
		return -1;
	}
	free(path);
	free(child);
	return ret;
}

static void *conn_main(void *arg)
{
	int fd = (int)(intptr_t)arg;
	struct dlfs_wire_req q;
	char name[DLFS_WIRE_MAX_NAME + 1];
	while (!recv_all(fd, &q, sizeof(q))) {
		if (q.name_len > DLFS_WIRE_MAX_NAME ||
		    (q.name_len && q.op != DLFS_WIRE_LOOKUP))
			break;
		if (recv_all(fd, name, q.name_len))
			break;
		name[q.name_len] = '\0';
		if (serve_one(fd, &q, name))
			break;
	}
	close(fd);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: fakeserve DIR SOCKET\n");
		return 2;
	}
	top = argv[1];
	if (stat(top, &top_st)) {
		perror(top);
		return 1;
	}
	remember(1, top);
	int s = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", argv[2]);
	unlink(argv[2]);
	if (bind(s, (struct sockaddr *)&sa, sizeof(sa)) || listen(s, 128)) {
		perror(argv[2]);
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		int c = accept(s, NULL, NULL);
		if (c < 0)
			continue;
		pthread_t t;
		pthread_create(&t, NULL, conn_main, (void *)(intptr_t)c);
		pthread_detach(t);
	}
}
