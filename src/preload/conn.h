/*
 * conn: the connections to the server. One per thread, made lazily on
 * the thread's first request (HELLO first), closed when the thread exits;
 * after fork() the child closes every connection it inherited and makes
 * its own as it needs them. A request made while the thread's connection
 * is busy (a signal handler that reads a dataset file in the middle of a
 * read) gets a connection of its own for that one request.
 *
 * A server that is gone, or that answers nonsense, gives -EIO to the
 * caller and one line on stderr, once per process.
 */
#ifndef DLFS_CONN_H
#define DLFS_CONN_H

#include <stddef.h>
#include <stdint.h>

#include "shared/wire.h"

/* Make the thread-exit key. Constructor only. */
void dlfs_conn_init(void);

/* The fork handlers, which preload.c calls in the library's lock order:
 * prepare takes list_lock and hello_lock, parent releases them, child
 * closes the parent's connections and releases them. */
void dlfs_conn_fork_prepare(void);
void dlfs_conn_fork_parent(void);
void dlfs_conn_fork_child(void);

/* Make sure the first HELLO was answered (dlfs_pl.ready), connecting if
 * needed. @return 0 or -EIO. */
int dlfs_conn_ready(void);

/*
 * One request, one reply. name (name_len bytes, req->name_len) follows a
 * LOOKUP. The reply's payload goes to buf, which holds cap bytes; *len
 * is what came. @return the reply's status (0 or -errno), or -EIO if the
 * server is gone, or its reply is malformed or longer than cap. *count
 * is the reply's count (READDIR).
 */
int dlfs_conn_call(const struct dlfs_wire_req *req, const char *name,
		   void *buf, size_t cap, uint64_t *len, uint32_t *count);

#endif
