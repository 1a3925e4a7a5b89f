/*
 * Was this process started as one of several by an MPI launcher? One
 * answer for the daemon (peer_mpi.c, peer_none.c, daemon/main.c) and for
 * dlfs-pack (pack_comm_*.c), from the environment a launcher sets, so
 * that a process started alone never initialises MPI (and may fork). The
 * variables are listed once, in src/node/shared/launch_vars.h.
 *
 * What each launcher sets, as seen by running it on Debian 12 (Open MPI
 * 4.1.4, MPICH 4.0.2, Slurm 22.05.8 with PMIx 4.2.2), and what it means
 * here; the first size found, in this order, is the answer:
 *
 *   OMPI_COMM_WORLD_SIZE, _RANK   Open MPI's mpirun/mpiexec. It also
 *                                 sets PMIX_RANK and PMIX_NAMESPACE, but
 *                                 no PMIX_SIZE.
 *   PMI_SIZE, PMI_RANK            PMI-1/PMI-2 launchers: MPICH's
 *                                 mpiexec (hydra; with PMI_FD,
 *                                 MPI_LOCALNRANKS, MPI_LOCALRANKID) and
 *                                 srun --mpi=pmi2 (with PMI_FD, PMI_JOBID,
 *                                 SLURM_MPI_TYPE=pmi2). MPICH-family MPIs
 *                                 speak PMI.
 *   SLURM_STEP_NUM_TASKS          every srun job step, whatever --mpi:
 *                                 the size under srun --mpi=pmix (which
 *                                 sets PMIX_RANK, PMIX_NAMESPACE,
 *                                 SLURM_MPI_TYPE=pmix, and no PMIX_SIZE)
 *                                 and --mpi=none.
 *
 * Not a launch: SLURM_NTASKS alone (a batch script has it for the whole
 * allocation: sbatch -n 2 gives SLURM_NTASKS=2 and no
 * SLURM_STEP_NUM_TASKS; a program it starts directly is one process),
 * and PMIX_RANK alone (no launcher checked sets a PMIx size variable; a
 * PMIx launcher that sets none of the above needs -o mpi).
 *
 * Open MPI's mpirun inside a Slurm allocation starts its daemons, and
 * hydra its proxies, through srun: their ranks see that step's
 * SLURM_STEP_NUM_TASKS too, which is why the launchers' own variables
 * come first.
 *
 * An MPI that does not speak the launcher's process-management
 * interface starts every process as a job of its own (MPICH under srun
 * --mpi=pmix or --mpi=none: each is rank 0 of 1; Debian's Open MPI under
 * srun --mpi=pmi2 or none refuses to start): dlfs_launch_check says so.
 *
 * Thread-safety: reads the environment; call before threads that change
 * it (none of dlfs's do).
 */
#ifndef DLFS_PEERS_LAUNCH_H
#define DLFS_PEERS_LAUNCH_H

#include <stddef.h>

struct dlfs_launch {
	int size;      /* processes started, this one among them; 1: alone */
	const char *var; /* the variable size came from; NULL when alone */
	char by[48];   /* who started them, for messages: "srun --mpi=pmix" */
};

/* Fill l from the environment (above). Never fails: alone is size 1. */
void dlfs_launch_detect(struct dlfs_launch *l);

/* dlfs_launch_detect's size: 1 when no launcher started several. */
int dlfs_launch_size(void);

/*
 * After MPI_Init: MPI_COMM_WORLD has mpi_size processes. @return 0 when
 * that is what the launcher said (or no launcher said anything), else
 * -EPROTO with msg (len bytes) saying that this MPI does not speak the
 * launcher's process-management interface, and what to launch with.
 */
int dlfs_launch_check(int mpi_size, char *msg, size_t len);

#endif
