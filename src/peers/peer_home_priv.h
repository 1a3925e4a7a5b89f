/*
 * The home's side (peer_home.c): peers' requests taken in by the MPI
 * thread (peer_thread.c), served by the server threads that the API
 * starts (peer_mpi.c) through this node's tiers. See peer_state_priv.h for
 * the messages and the one lock.
 */
#ifndef DLFS_PEER_HOME_PRIV_H
#define DLFS_PEER_HOME_PRIV_H

#include "peer_state_priv.h"

/* On the MPI thread, mu held: take in peers' requests, send the served
 * replies and the heartbeats. @return work done. */
int dlfs_peer_serving(struct dlfs_peer *p);

/* A server thread: arg is the struct dlfs_peer. */
void *dlfs_peer_server_main(void *arg);

#endif
