/*
 * The preload front end's server (src/daemon/serve.c, with what a mount
 * answers compiled in), spoken to over its socket as libdlfs-preload.so
 * speaks (wire.h), over a small packed dataset: HELLO refuses another
 * version; LOOKUP refuses a name with a '/'; READDIR sends no "." or
 * "..", resumes at a cookie and refuses too small a room; READ gives the
 * file's bytes; GETXATTR with size 0 gives the length only; a request
 * that breaks the protocol closes its connection and no other; SIGTERM
 * ends the server, and closing it removes its socket.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "serve.h"
#include "tutil.h"
#include "wire.h"

#define CS 65536
#define BIG (2 * CS + 77)

static char *src;

struct reply {
	struct dlfs_wire_rep h;
	char data[DLFS_WIRE_MAX_IO];
};
static struct reply rep;

static int connect_to(const char *path)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	/* A server that waits for what never comes fails the test, in time. */
	struct timeval tv = {.tv_sec = 30};
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) ||
	    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)))
		abort();
	return fd;
}

static int recv_n(int fd, void *buf, size_t n)
{
	size_t o = 0;
	while (o < n) {
		ssize_t r = recv(fd, (char *)buf + o, n - o, 0);
		if (r <= 0)
			return -1;
		o += (size_t)r;
	}
	return 0;
}

/* One request and its reply into rep. @return rep.h.status, or 1 when
 * the server closed the connection instead. */
static int rpc(int fd, uint32_t op, uint64_t ino, uint64_t off, uint64_t size,
	       const char *name)
{
	struct dlfs_wire_req q = {.op = op,
				  .ino = ino,
				  .off = off,
				  .size = size,
				  .name_len = name ? (uint32_t)strlen(name)
						   : 0};
	memset(&rep.h, 0, sizeof(rep.h));
	if (send(fd, &q, sizeof(q), MSG_NOSIGNAL) != sizeof(q) ||
	    (name &&
	     send(fd, name, q.name_len, MSG_NOSIGNAL) != (ssize_t)q.name_len))
		return 1;
	if (recv_n(fd, &rep.h, sizeof(rep.h)))
		return 1;
	if (rep.h.len > sizeof(rep.data) || recv_n(fd, rep.data, rep.h.len))
		return 1;
	return rep.h.status;
}

static void test_hello(int fd)
{
	CHECK_EQ(rpc(fd, DLFS_WIRE_HELLO, 0, 0, DLFS_WIRE_VERSION + 1, NULL),
		 -EPROTONOSUPPORT);
	CHECK_EQ(rpc(fd, DLFS_WIRE_HELLO, 0, 0, DLFS_WIRE_VERSION, NULL), 0);
	CHECK_EQ(rep.h.len, sizeof(struct dlfs_wire_hello));
	struct dlfs_wire_hello h;
	memcpy(&h, rep.data, sizeof(h));
	CHECK_EQ(h.version, DLFS_WIRE_VERSION);
	CHECK_EQ(h.root_ino, DLFS_ROOT_INO);
	CHECK(S_ISDIR(h.root.st_mode));
	CHECK(!strcmp(h.ctl_name, ".dlfs"));
}

static uint64_t lookup(int fd, uint64_t parent, const char *name)
{
	struct dlfs_wire_entry e;
	CHECK_EQ(rpc(fd, DLFS_WIRE_LOOKUP, parent, 0, 0, name), 0);
	CHECK_EQ(rep.h.len, sizeof(e));
	memcpy(&e, rep.data, sizeof(e));
	CHECK_EQ(e.st.st_ino, e.ino);
	return e.ino;
}

static void test_lookup(int fd)
{
	uint64_t d = lookup(fd, DLFS_ROOT_INO, "d");
	CHECK(d != 0);
	CHECK(lookup(fd, d, "big.bin") != 0);
	CHECK_EQ(rpc(fd, DLFS_WIRE_LOOKUP, DLFS_ROOT_INO, 0, 0, "d/big.bin"),
		 -ENOENT);
	CHECK_EQ(rep.h.len, 0);
	CHECK_EQ(rpc(fd, DLFS_WIRE_LOOKUP, d, 0, 0, "nothing"), -ENOENT);
	CHECK_EQ(lookup(fd, DLFS_ROOT_INO, ".dlfs"), DLFS_CTL_DIR);
}

/* A READDIR payload's names, joined by '/'; *last the last cookie. */
static void names_of(char *out, size_t cap, uint64_t *last)
{
	size_t o = 0;
	out[0] = '\0';
	for (uint32_t i = 0; i < rep.h.count && o < rep.h.len; i++) {
		struct dlfs_wire_dirent de;
		memcpy(&de, rep.data + o, sizeof(de));
		size_t n = strlen(out);
		snprintf(out + n, cap - n, "%s%.*s", n ? "/" : "",
			 (int)de.name_len, rep.data + o + sizeof(de));
		*last = de.cookie;
		o += dlfs_wire_dirent_size(de.name_len);
	}
	CHECK_EQ(o, rep.h.len);
}

static void test_readdir(int fd)
{
	char names[512];
	uint64_t last = 0;
	CHECK_EQ(rpc(fd, DLFS_WIRE_READDIR, DLFS_ROOT_INO, 0,
		     DLFS_WIRE_MIN_DIR - 1, NULL),
		 -EINVAL);
	CHECK_EQ(rpc(fd, DLFS_WIRE_READDIR, DLFS_ROOT_INO, 0, 4096, NULL), 0);
	CHECK_EQ(rep.h.count, 3);
	names_of(names, sizeof(names), &last);
	CHECK(!strcmp(names, "d/link/top.txt"));
	/* Resumed after the first entry, with nothing twice; then the end. */
	struct dlfs_wire_dirent first;
	memcpy(&first, rep.data, sizeof(first));
	CHECK_EQ(rpc(fd, DLFS_WIRE_READDIR, DLFS_ROOT_INO, first.cookie,
		     DLFS_WIRE_MIN_DIR, NULL),
		 0);
	names_of(names, sizeof(names), &last);
	CHECK(!strcmp(names, "link/top.txt"));
	CHECK_EQ(rpc(fd, DLFS_WIRE_READDIR, DLFS_ROOT_INO, last,
		     DLFS_WIRE_MIN_DIR, NULL),
		 0);
	CHECK_EQ(rep.h.count, 0);
}

static void test_read(int fd)
{
	uint64_t d = lookup(fd, DLFS_ROOT_INO, "d");
	uint64_t f = lookup(fd, d, "big.bin");
	char *path = t_path(src, "d/big.bin");
	size_t len;
	uint8_t *want = t_read(path, &len);
	uint8_t *got = malloc(BIG);
	uint64_t off = 0;
	while (off < BIG) {
		CHECK_EQ(rpc(fd, DLFS_WIRE_READ, f, off, 100000, NULL), 0);
		if (!rep.h.len || rep.h.len > BIG - off)
			break;
		memcpy(got + off, rep.data, rep.h.len);
		off += rep.h.len;
	}
	CHECK_EQ(off, BIG);
	CHECK(!memcmp(got, want, BIG));
	CHECK_EQ(rpc(fd, DLFS_WIRE_READ, f, BIG, 10, NULL), 0);
	CHECK_EQ(rep.h.len, 0);
	/* The xattr's length only, then its value. */
	CHECK_EQ(rpc(fd, DLFS_WIRE_GETXATTR, f, 0, 0, "user.dlfs.xxh3"), 0);
	CHECK_EQ(rep.h.count, 16);
	CHECK_EQ(rep.h.len, 0);
	CHECK_EQ(rpc(fd, DLFS_WIRE_GETXATTR, f, 0, 64, "user.dlfs.xxh3"), 0);
	CHECK_EQ(rep.h.len, 16);
	free(got);
	free(want);
	free(path);
}

static void *run(void *arg)
{
	struct dlfs_err err = {0};
	intptr_t ret = dlfs_serve_run(arg, NULL, &err);
	return (void *)ret;
}

int main(void)
{
	char *dir = t_tmpdir();
	src = t_path(dir, "src");
	char *out = t_path(dir, "ds.dlfs"), *sock = t_path(dir, "sock");
	char *link = t_path(src, "link");
	t_write(src, "d/big.bin", BIG, 1);
	t_write(src, "top.txt", 10, 3);
	if (symlink("d/big.bin", link))
		abort();
	/* As the daemon does, before any thread: the server's signals. */
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	char *argv[] = {"dlfs", out, "/mnt", NULL};
	struct fuse_args args = FUSE_ARGS_INIT(3, argv);
	struct dlfs_opts o;
	struct dlfs_ds *ds = NULL;
	struct dlfs_fs fs;
	struct dlfs_serve *s = NULL;
	struct dlfs_err err = {0};
	if (t_pack(src, out, CS, 1 << 20, 0) || dlfs_opts_parse(&args, &o) ||
	    dlfs_ds_open(out, &ds, &err) ||
	    dlfs_fs_init(&fs, ds, &o, NULL, 1, &err) ||
	    dlfs_fs_start(&fs, &err)) {
		fprintf(stderr, "setup: %s\n", err.msg);
		return 1;
	}
	/* Something at the path already: refused, and left alone. */
	t_write(dir, "sock", 3, 1);
	CHECK_EQ(dlfs_serve_open(&fs, sock, &s, &err), -EADDRINUSE);
	CHECK(access(sock, F_OK) == 0);
	unlink(sock);
	if (dlfs_serve_open(&fs, sock, &s, &err)) {
		fprintf(stderr, "setup: %s\n", err.msg);
		return 1;
	}
	pthread_t t;
	if (pthread_create(&t, NULL, run, s))
		abort();
	int fd = connect_to(sock), other = connect_to(sock);
	test_hello(fd);
	test_lookup(fd);
	test_readdir(fd);
	test_read(fd);
	/* A name too long for the wire: that connection ends, not another. */
	struct dlfs_wire_req bad = {.op = DLFS_WIRE_LOOKUP,
				    .name_len = DLFS_WIRE_MAX_NAME + 1};
	CHECK(send(fd, &bad, sizeof(bad), MSG_NOSIGNAL) == sizeof(bad));
	char c;
	CHECK_EQ(recv(fd, &c, 1, 0), 0);
	CHECK(lookup(other, DLFS_ROOT_INO, "top.txt") != 0);
	/* An unknown op too. */
	CHECK_EQ(rpc(other, 99, 0, 0, 0, NULL), 1);
	close(fd);
	close(other);
	kill(getpid(), SIGTERM);
	void *ret;
	pthread_join(t, &ret);
	CHECK(ret == NULL);
	dlfs_serve_close(s);
	CHECK(access(sock, F_OK) != 0);
	dlfs_fs_destroy(&fs);
	dlfs_ds_close(ds);
	dlfs_opts_free(&o);
	fuse_opt_free_args(&args);
	t_rmrf(dir);
	free(link);
	free(sock);
	free(out);
	free(src);
	free(dir);
	return t_done("test_serve");
}
