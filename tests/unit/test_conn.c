/*
 * conn: the preload's connections to the server (src/preload/conn.c)
 * against a server of the wire in a thread (tests/lib/wiresrv.c) whose
 * answers the test chooses, one mode at a time.
 *
 * What it checks, and a mutation of conn.c that each check catches:
 * - HELLO fills dlfs_pl, with max_io cut to this build's
 *   DLFS_WIRE_MAX_IO: caught by taking the server's max_io as it is;
 * - a request's name follows its header, a reply's payload (sent in
 *   pieces) lands whole in the buffer, with its len and count: caught
 *   by sending the header alone (`req->name_len ? 2 : 1` made `1`; the
 *   two ends then wait for each other until the test's timeout);
 * - the server's error is the caller's, with no payload; a HELLO
 *   refused gives its error, not EIO: caught by hello_refused returning
 *   -EIO;
 * - a reply that makes no sense (longer than the buffer, a positive
 *   status, an error with a payload) is -EIO: caught by dropping
 *   `rep.status > 0 ||`, or `(rep.status && rep.len) ||`;
 * - after a broken stream (nonsense, or the server closing mid-reply)
 *   the next call dials again and works: caught by not dropping the
 *   connection (`if (ret) drop(c);` removed);
 * - descriptors passed with a reply are the caller's, none after a
 *   failed one: caught by not closing them on failure (the fds stay);
 * - another thread has a connection of its own;
 * - a server that closes the connection is -EIO, said once a process
 *   on stderr, as is nonsense; a server that is gone is -EIO: caught by
 *   saying it every time (`!atomic_exchange(&said_gone, 1)` made true).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tutil.h"

int t_failures;

#include "conn.h"
#include "state.h"
#include "wiresrv.h"

enum mode {
	GOOD,     /* READ: size bytes in pieces; LOOKUP: the name back */
	ERR,      /* -ENOENT */
	TOO_LONG, /* a payload longer than the request's size */
	POSITIVE, /* status 5 */
	ERR_BODY, /* -ENOENT with 8 bytes of payload */
	HANG_UP,  /* half a header, then close */
	FDS,      /* MAP: two descriptors */
	FDS_ERR,  /* MAP: -ENOENT, and a descriptor anyway */
};

static atomic_int mode, hello_err, hellos;
/* What the server passes (opened once, before any probe of the lowest
 * free descriptor: the server's thread opens none meanwhile). */
static int srv_fds[2];
static uint32_t hello_max_io = 4u << 20;

static int pieces(int fd, const struct dlfs_wire_req *q)
{
	struct dlfs_wire_rep rep = {.status = 0, .count = 7, .len = q->size};
	uint8_t *b = malloc(q->size + sizeof(rep));
	memcpy(b, &rep, sizeof(rep));
	for (uint64_t i = 0; i < q->size; i++)
		b[sizeof(rep) + i] = (uint8_t)(q->off + i);
	size_t total = sizeof(rep) + q->size, at = 0;
	/* 5 bytes of header, the rest of it, then the payload in three. */
	size_t cut[] = {5, sizeof(rep), sizeof(rep) + q->size / 3,
			sizeof(rep) + 2 * q->size / 3, total};
	int ret = 0;
	for (size_t i = 0; i < 5 && !ret; i++) {
		if (cut[i] > at && send(fd, b + at, cut[i] - at,
					MSG_NOSIGNAL) != (ssize_t)(cut[i] - at))
			ret = -1;
		if (cut[i] > at)
			at = cut[i];
	}
	free(b);
	return ret;
}

static int handle(void *ctx, int fd, const struct dlfs_wire_req *q,
		  const char *name)
{
	(void)ctx;
	if (q->op == DLFS_WIRE_HELLO) {
		atomic_fetch_add(&hellos, 1);
		int e = atomic_load(&hello_err);
		if (e)
			return ws_reply(fd, e, 0, NULL, 0);
		return ws_hello(fd, hello_max_io, 0);
	}
	switch (atomic_load(&mode)) {
	case GOOD:
		if (q->op == DLFS_WIRE_LOOKUP)
			return ws_reply(fd, 0, q->name_len, name, q->name_len);
		return pieces(fd, q);
	case ERR:
		return ws_reply(fd, -ENOENT, 0, NULL, 0);
	case TOO_LONG:
		return ws_reply(fd, 0, 0, NULL, q->size + 1);
	case POSITIVE:
		return ws_reply(fd, 5, 0, NULL, 0);
	case ERR_BODY:
		return ws_reply(fd, -ENOENT, 0, NULL, 8);
	case HANG_UP:
		send(fd, "\0\0\0\0", 4, MSG_NOSIGNAL);
		return -1;
	case FDS:
	case FDS_ERR: {
		struct dlfs_wire_map wm = {{1, 2, 3}};
		int err = atomic_load(&mode) == FDS_ERR;
		return ws_reply_fds(fd, err ? -ENOENT : 0, err ? NULL : &wm,
				    err ? 0 : sizeof(wm), srv_fds, 2);
	}
	}
	return -1;
}

static int do_read(uint64_t off, void *buf, size_t cap, uint64_t *len,
		   uint32_t *count)
{
	struct dlfs_wire_req q = {.op = DLFS_WIRE_READ,
				  .ino = 2,
				  .off = off,
				  .size = cap};
	return dlfs_conn_call(&q, NULL, buf, cap, len, count);
}

static void hello_and_framing(void)
{
	CHECK_EQ(dlfs_conn_ready(), 0);
	CHECK_EQ(atomic_load(&dlfs_pl.ready), 1);
	CHECK_EQ(dlfs_pl.max_io, DLFS_WIRE_MAX_IO);
	CHECK_EQ(dlfs_pl.root_ino, 1);
	CHECK(!strcmp(dlfs_pl.ctl_name, ".dlfs"));
	CHECK_EQ(ws_accepted(), 1);

	static uint8_t buf[200000];
	uint64_t len = 0;
	uint32_t count = 0;
	CHECK_EQ(do_read(11, buf, sizeof(buf), &len, &count), 0);
	CHECK_EQ(len, sizeof(buf));
	CHECK_EQ(count, 7);
	int same = 1;
	for (size_t i = 0; i < sizeof(buf) && same; i++)
		same = buf[i] == (uint8_t)(11 + i);
	CHECK(same);

	char name[] = "a-name-of-some-length";
	struct dlfs_wire_req q = {.op = DLFS_WIRE_LOOKUP,
				  .name_len = (uint32_t)strlen(name),
				  .ino = 1};
	char back[64] = {0};
	CHECK_EQ(dlfs_conn_call(&q, name, back, sizeof(back), &len, &count), 0);
	CHECK(len == strlen(name) && !memcmp(back, name, len));
	CHECK_EQ(count, strlen(name));
	CHECK_EQ(ws_accepted(), 1); /* one connection for all of it */
}

/* A broken stream is -EIO, and the next call dials again. */
static void server_error(void)
{
	uint8_t buf[64];
	uint64_t len = 99;
	atomic_store(&mode, ERR);
	CHECK_EQ(do_read(0, buf, 16, &len, NULL), -ENOENT);
	atomic_store(&mode, GOOD);
	int before = ws_accepted();
	CHECK_EQ(do_read(0, buf, 16, &len, NULL), 0); /* the same stream */
	CHECK_EQ(ws_accepted(), before);
}

static void broken_then_again(enum mode m, uint64_t cap)
{
	uint8_t buf[64];
	uint64_t len;
	int before = ws_accepted();
	atomic_store(&mode, m);
	CHECK_EQ(do_read(0, buf, cap, &len, NULL), -EIO);
	atomic_store(&mode, GOOD);
	CHECK_EQ(do_read(3, buf, 16, &len, NULL), 0);
	CHECK(len == 16 && buf[0] == 3 && buf[15] == 18);
	CHECK_EQ(ws_accepted(), before + 1);
}

/* Lines on stderr while f runs. */
static int said(void (*f)(void), const char *what)
{
	char tmp[] = "/tmp/test_conn.err.XXXXXX";
	int fd = mkstemp(tmp), saved = dup(2), n = 0;
	dup2(fd, 2);
	f();
	dup2(saved, 2);
	close(saved);
	char buf[4096] = {0};
	ssize_t r = pread(fd, buf, sizeof(buf) - 1, 0);
	for (char *p = buf; r > 0 && (p = strstr(p, what)); p++)
		n++;
	if (r > 0) /* the lines, and any CHECK's, for the log */
		fputs(buf, stderr);
	close(fd);
	unlink(tmp);
	return n;
}

static void two_calls_gone(void)
{
	uint8_t buf[16];
	uint64_t len;
	CHECK_EQ(do_read(0, buf, 16, &len, NULL), -EIO);
	CHECK_EQ(do_read(0, buf, 16, &len, NULL), -EIO);
}

static void nonsense(void)
{
	broken_then_again(TOO_LONG, 16);
	broken_then_again(POSITIVE, 16);
	broken_then_again(ERR_BODY, 16);
}

static void hang_ups(void)
{
	uint8_t buf[64];
	uint64_t len;
	broken_then_again(HANG_UP, 16);
	/* A HELLO refused: its error, then a later call dials again. */
	atomic_store(&mode, HANG_UP);
	CHECK_EQ(do_read(0, buf, 16, &len, NULL), -EIO);
	atomic_store(&mode, GOOD);
	atomic_store(&hello_err, -EPROTONOSUPPORT);
	CHECK_EQ(do_read(0, buf, 16, &len, NULL), -EPROTONOSUPPORT);
	atomic_store(&hello_err, 0);
	CHECK_EQ(do_read(0, buf, 16, &len, NULL), 0);
}

static int is_open(int fd)
{
	return fcntl(fd, F_GETFD) >= 0;
}

static void passed_fds(void)
{
	struct dlfs_wire_req q = {.op = DLFS_WIRE_MAP};
	struct dlfs_wire_map wm;
	struct dlfs_conn_fds fds;
	uint64_t len = 0;
	atomic_store(&mode, FDS);
	CHECK_EQ(dlfs_conn_call_fds(&q, &wm, sizeof(wm), &len, &fds), 0);
	CHECK(len == sizeof(wm) && wm.size[2] == 3);
	CHECK_EQ(fds.n, 2);
	for (int i = 0; i < fds.n; i++) {
		CHECK(is_open(fds.fd[i]));
		CHECK(fcntl(fds.fd[i], F_GETFD) & FD_CLOEXEC);
		close(fds.fd[i]);
	}
	/* A failed reply passes nothing on: what came with it is closed. */
	int probe = open("/dev/null", O_RDONLY); /* the lowest free fd */
	close(probe);
	atomic_store(&mode, FDS_ERR);
	CHECK_EQ(dlfs_conn_call_fds(&q, &wm, sizeof(wm), &len, &fds), -ENOENT);
	CHECK_EQ(fds.n, 0);
	CHECK(!is_open(probe));
	atomic_store(&mode, GOOD);
}

static void *other_thread(void *arg)
{
	uint8_t buf[16];
	uint64_t len = 0;
	*(int *)arg = do_read(1, buf, sizeof(buf), &len, NULL) == 0 &&
		      len == sizeof(buf) && buf[0] == 1;
	return NULL;
}

static void own_connection(void)
{
	int before = ws_accepted(), ok = 0;
	pthread_t t;
	pthread_create(&t, NULL, other_thread, &ok);
	pthread_join(t, NULL);
	CHECK(ok);
	CHECK_EQ(ws_accepted(), before + 1);
}

int main(void)
{
	dlfs_conn_init();
	srv_fds[0] = open("/dev/null", O_RDONLY | O_CLOEXEC);
	srv_fds[1] = open("/dev/zero", O_RDONLY | O_CLOEXEC);
	ws_start_preload("/ds", handle, NULL);

	hello_and_framing();
	server_error();
	/* Each kind of trouble is said once a process, however often. */
	CHECK_EQ(said(nonsense, "makes no sense"), 1);
	CHECK_EQ(said(hang_ups, "the dlfs server is gone"), 1);
	CHECK_EQ(said(hang_ups, "the dlfs server is gone"), 0);
	passed_fds();
	own_connection();

	ws_stop();
	two_calls_gone();
	return t_failures ? 1 : 0;
}
