/*
 * conn: the connections to the server. One per thread, made lazily on
 * the thread's first request (HELLO first), closed when the thread exits;
 * after fork() the child closes every connection it inherited and makes
 * its own as it needs them. A connection is used only by the process that
 * made it: a request from a vfork child, or from a child made without the
 * fork handlers (_Fork, clone), goes on a connection of its own, for that
 * one request.
 *
 * Signal handlers: pread and fstat of an open dataset fd from a signal
 * handler work, also when the handler interrupts a request of the same
 * thread (it then gets a connection for that one request), in about a
 * kilobyte of stack. read and lseek take the description's pos_lock: a
 * handler that interrupts its own thread's read of the same description
 * waits for itself, as with any lock. Path calls (open, stat, ...) from a
 * signal handler are not supported: the walk takes about 20 KiB of stack
 * (PATH_MAX buffers) and its cache calls malloc.
 *
 * Errors. A server that is gone (it refused the connection, closed it,
 * reset it) gives -EIO to the caller and one line on stderr that says
 * so, once per process; a reply that makes no sense the same, with a line
 * of its own. A server that is there and answers with an error (a HELLO
 * too: the dataset's root may be damaged) gives its error to the caller,
 * and says nothing here: the caller, which knows the path, hands its
 * result to dlfs_conn_report. A process out of descriptors gets the
 * errno of socket(). A request is not a cancellation point
 * (cancellation is disabled while it runs).
 */
#ifndef DLFS_CONN_H
#define DLFS_CONN_H

#include <stddef.h>
#include <stdint.h>

#include "wire.h"

/* Make the thread-exit key. Constructor only. */
void dlfs_conn_init(void);

/* The fork handlers, which preload.c calls in the library's lock order:
 * prepare takes list_lock and hello_lock, parent releases them, child
 * closes the parent's connections and releases them. */
void dlfs_conn_fork_prepare(void);
void dlfs_conn_fork_parent(void);
void dlfs_conn_fork_child(void);

/* Make sure the first HELLO was answered (dlfs_pl.ready), connecting if
 * needed. @return 0, the server's error, or -EIO (gone). */
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

/*
 * A call on path (as the program named it, relative to dir when dir is
 * not NULL; or a descriptor's path) ended with ret (0, -errno): when
 * that is the damage error (-EIO, -EUCLEAN) the server answered to this
 * thread's last request, one line on stderr says so with the path and
 * the errno behind an EIO that the server sent along ("PATH: the dlfs
 * server answered EIO: the dataset's index or a container is damaged
 * there (EUCLEAN; ...)"), at most 20 a process. Errors the library made,
 * and a server that is gone (said once already), say nothing here.
 * Async-signal-safe; a signal handler's request between the call and
 * this report may hide the call's line.
 */
void dlfs_conn_report(const char *dir, const char *path, long ret);

/* Descriptors passed along with a reply (SCM_RIGHTS, close-on-exec). */
#define DLFS_CONN_MAX_FDS 3
struct dlfs_conn_fds {
	int fd[DLFS_CONN_MAX_FDS];
	int n;
};

/* dlfs_conn_call for a request whose reply passes descriptors (MAP,
 * NVFD): they are the caller's in fds (none after a failure). */
int dlfs_conn_call_fds(const struct dlfs_wire_req *req, void *buf, size_t cap,
		       uint64_t *len, struct dlfs_conn_fds *fds);

#endif
