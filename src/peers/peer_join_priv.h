/*
 * Joining the job (peer_join.c): MPI_Init, the ranks' agreement on the
 * dataset and the seed, and sharing the index. Called once, by the MPI
 * thread (peer_thread.c), before any other MPI call. See peer_state_priv.h.
 */
#ifndef DLFS_PEER_JOIN_PRIV_H
#define DLFS_PEER_JOIN_PRIV_H

#include "peer_state_priv.h"

/* Initialise MPI, check the ranks agree, share the index. On the MPI
 * thread. @return 0 or -errno, with p->init_msg saying why. */
int dlfs_peer_join(struct dlfs_peer *p);

#endif
