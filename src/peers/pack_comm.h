/*
 * dlfs-pack under an MPI launcher: the struct dlfs_pack_comm that lets
 * the ranks of one job pack one dataset together (see dlfs/pack.h).
 * pack_comm_mpi.c is the only file of dlfs that includes mpi.h for
 * packing; pack_comm_none.c stands in when the build has no MPI. meson
 * picks one. Whether there is a launch at all is launch.h's answer, the
 * daemon's too.
 *
 * Thread-safety: MPI is initialised MPI_THREAD_FUNNELED; only the
 * thread that called pack_comm_init makes MPI calls (dlfs_pack calls the
 * comm from its calling thread only).
 */
#ifndef DLFS_PEERS_PACK_COMM_H
#define DLFS_PEERS_PACK_COMM_H

#include <stddef.h>

#include "dlfs/pack.h"

/* 1 if this build can pack with MPI. */
int pack_comm_available(void);

/*
 * If an MPI launcher started more than one process, join the job and
 * fill c (*joined = 1); otherwise leave MPI alone (*joined = 0). @return
 * 0, or -ENOTSUP with msg saying why (launched as several ranks by a
 * build without MPI), -EPROTO (MPI sees another number of processes
 * than the launcher started: launch.h), or -EIO (MPI failed to start).
 */
int pack_comm_init(int *argc, char ***argv, struct dlfs_pack_comm *c,
		   int *joined, char *msg, size_t len);

/* Leave the job (after pack_comm_init joined it). */
void pack_comm_fini(struct dlfs_pack_comm *c);

#endif
