/*
 * wiresrv: a server of the preload wire (src/node/shared/wire.h) in a
 * thread of the unit test, for the library's own modules (conn.c, ns.c,
 * direct.c) to talk to over a real Unix socket. It does the framing; the
 * test's handler decides each reply (or breaks the connection), so a test
 * can answer short, garbled, late or not at all.
 *
 * One thread accepts; each connection gets a thread that reads requests
 * and calls the handler, one at a time per connection (the handler may be
 * called from several connections at once: it keeps its own counts
 * atomic). Returning -1 from the handler closes that connection.
 */
#ifndef DLFS_WIRESRV_H
#define DLFS_WIRESRV_H

#include <stdint.h>

#include "wire.h"

typedef int (*ws_handler)(void *ctx, int fd, const struct dlfs_wire_req *q,
			  const char *name);

/* Listen at a socket in a new temporary directory and serve with h, and
 * point the preload library's state (dlfs_pl, state.h) at it, for the
 * dataset at prefix (absolute, no trailing slash), as the library's
 * constructor would from DLFS_PRELOAD. Aborts on failure. */
void ws_start_preload(const char *prefix, ws_handler h, void *ctx);

/* Stop accepting and remove the socket and its directory: later
 * connections are refused. The connections open now are closed too. */
void ws_stop(void);

/* A reply: the header (len as given, even with a status: a test may send
 * nonsense), then len bytes of payload from buf (NULL: zeros).
 * @return 0 or -1. */
int ws_reply(int fd, int32_t status, uint32_t count, const void *buf,
	     uint64_t len);

/* The same, with n descriptors passed along with its first byte. */
int ws_reply_fds(int fd, int32_t status, const void *buf, uint64_t len,
		 const int *fds, int n);

/* A good HELLO for a dataset whose root is ino 1 (a directory), whose
 * control directory is ".dlfs", with max_io and shm as given. */
int ws_hello(int fd, uint32_t max_io, int shm);

/* Connections accepted so far. */
int ws_accepted(void);

#endif
