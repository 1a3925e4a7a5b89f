/*
 * The daemon's second front end: instead of a FUSE session, a Unix
 * socket that the processes of dlfs-run read through
 * (libdlfs-preload.so), speaking the wire of src/node/shared/wire.h.
 * Each answer comes from ops.h, as the FUSE ops' do.
 *
 * One thread per connection (a client thread has one connection), each
 * with its own read context, 1024 connections at most; a connection that
 * breaks the protocol, or does not take a reply within 30 s (the read's
 * chunks stay pinned meanwhile), is closed, and nothing else is
 * affected.
 *
 * Signals: the caller blocks SIGINT, SIGTERM and SIGHUP in every thread
 * (before starting any), and dlfs_serve_run returns when one of them
 * comes, as a mount ends on them.
 *
 * Ownership: a server borrows fs, which must be started (dlfs_fs_start)
 * and outlive it. Thread-safety: open, run and close from one thread.
 */
#ifndef DLFS_SERVE_H
#define DLFS_SERVE_H

#include "dlfs/err.h"
#include "fs.h"

struct dlfs_serve;

/*
 * Listen on a new socket at path (mode 0600: the user's own processes).
 * @return 0, or -errno with err naming the path (-EADDRINUSE: something
 * is there already).
 */
int dlfs_serve_open(struct dlfs_fs *fs, const char *path,
		    struct dlfs_serve **out, struct dlfs_err *err);

/* Answer connections until SIGINT, SIGTERM or SIGHUP, or, with users
 * (users.h; NULL: none), until its users have gone. @return 0, or -errno
 * with err set when accepting fails for good. */
struct dlfs_users;
int dlfs_serve_run(struct dlfs_serve *s, struct dlfs_users *users,
		   struct dlfs_err *err);

/* Close every connection, wait for their threads, remove the socket. NULL
 * is ok. */
void dlfs_serve_close(struct dlfs_serve *s);

#endif
