/*
 * The files of a dlfs server that several dlfs-run of one user share on
 * a node (tools/dlfs-run.d/node.c attaches and detaches, the daemon's
 * users.c is the server's side), in the user's private directory
 * (dlfs-run(1)). Each is the key (DIR/KEY, a hash of what is served)
 * followed by one of these suffixes; the first three are flock(2)ed:
 *   KEY.lock   held exclusively by a dlfs-run while it attaches (finds or
 *              starts the server) or detaches, and by the server from the
 *              moment it decides to end until it exits
 *   KEY.users  held shared by each dlfs-run while its command runs
 *   KEY.alive  held exclusively by the server for its whole life, so that
 *              a new server starts only once the old one has let go of
 *              everything (the NVMe tier's lock with it)
 *   KEY.sock   the server's socket (dlfs --serve KEY.sock --users KEY)
 *   KEY.pid    the server's pid, written by it (through KEY.pid.PID and a
 *              rename) and removed when it ends
 * Both sides are built together; the names are this header's alone.
 */
#ifndef DLFS_NODE_RUN_FILES_H
#define DLFS_NODE_RUN_FILES_H

#define DLFS_RUN_LOCK ".lock"
#define DLFS_RUN_USERS ".users"
#define DLFS_RUN_ALIVE ".alive"
#define DLFS_RUN_SOCK ".sock"
#define DLFS_RUN_PID ".pid"

#endif
