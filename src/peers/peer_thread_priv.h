/*
 * The MPI thread (peer_thread.c), started by dlfs_peer_open (peer_mpi.c):
 * the one thread that makes MPI calls, from MPI_Init to MPI_Finalize.
 * See peer_state_priv.h for the messages and the one lock.
 */
#ifndef DLFS_PEER_THREAD_PRIV_H
#define DLFS_PEER_THREAD_PRIV_H

#include "peer_state_priv.h"

/* The thread's body: arg is the struct dlfs_peer. It joins the job,
 * reports p->init_ret, then serves until p->leaving and every rank is
 * leaving too (or a dead rank is given up on: p->abandon), and sets
 * p->finished. @return NULL. */
void *dlfs_peer_mpi_main(void *arg);

#endif
