/*
 * node: the dlfs server that every dlfs-run of one user shares on a node,
 * for one dataset with the same options (and, under Slurm, in the same
 * job step): the first starts it, each holds it while its command runs,
 * and the last one stops it and waits until it has let go of everything.
 * The files are those of src/node/shared/run_files.h, in a private directory of
 * the user's (DIR/KEY.lock, .users, .alive, .pid) with the socket
 * DIR/KEY.sock; dlfs-run(1) documents them.
 */
#ifndef DLFS_RUN_NODE_H
#define DLFS_RUN_NODE_H

#include <limits.h>
#include <stddef.h>

struct node {
	char dir[PATH_MAX];  /* BASE/dlfs-run-UID */
	char key[PATH_MAX];  /* DIR/KEY: the files' stem */
	char sock[PATH_MAX]; /* DIR/KEY.sock */
	int lock, users;     /* -1: not open */
};

/*
 * Make or check the per-user directory under base and name the files of
 * what (the dataset, its options, the daemon, the job step: joined by
 * the caller). @return 0, or 1 after a message.
 */
int node_init(struct node *n, const char *base, const char *what);

/*
 * Attach: with DIR/KEY.lock held, use the server that runs, or wait for
 * one that is ending to be gone and call start(arg), which must start one
 * (dlfs --serve KEY.sock --users KEY) and wait until it answers; then hold
 * KEY.users shared. @return 0, or 1 after a message.
 */
int node_attach(struct node *n, int (*start)(void *arg), void *arg);

/* Detach; the last user stops the server (SIGTERM; SIGKILL after 30 s)
 * and waits until it has ended. */
void node_detach(struct node *n);

#endif
