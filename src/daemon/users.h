/*
 * users: a server that several dlfs-run on one node share (dlfs --serve
 * SOCKET --users KEY), and that ends when none of them uses it any more.
 *
 * The files, in dlfs-run's per-user directory, and who holds which: the
 * node's contract, src/node/shared/run_files.h (KEY.lock, .users, .alive, .pid).
 * The server looks once a second: when it gets KEY.lock and KEY.users
 * exclusively (no dlfs-run attaching, none attached: they all ended,
 * or were killed), it removes its socket and ends, still holding
 * KEY.lock.
 *
 * Thread-safety: one thread (the server's main loop).
 */
#ifndef DLFS_USERS_H
#define DLFS_USERS_H

#include "dlfs/err.h"

struct dlfs_users;

/*
 * Open KEY's files and take KEY.alive. @return 0, -EBUSY (another server
 * has it), or -errno with err naming the file.
 */
int dlfs_users_open(const char *key, struct dlfs_users **out,
		    struct dlfs_err *err);

/*
 * Has every user gone? Then the server ends: sock is removed, and
 * KEY.lock stays held until the process exits (no dlfs-run attaches to a
 * server that is ending). @return 1 (end), 0 (go on).
 */
int dlfs_users_gone(struct dlfs_users *u, const char *sock);

/* Close the files (the locks go with them). NULL is ok. */
void dlfs_users_close(struct dlfs_users *u);

#endif
