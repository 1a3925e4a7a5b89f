/*
 * Was this process started as one of several by an MPI launcher? One
 * answer for the daemon (peer_mpi.c, peer_none.c, daemon/main.c) and for
 * dlfs-pack (pack_comm_*.c), from the environment a launcher sets.
 *
 * Thread-safety: reads the environment; call before threads that change
 * it (none of dlfs's do).
 */
#ifndef DLFS_PEERS_LAUNCH_H
#define DLFS_PEERS_LAUNCH_H

/*
 * How many processes the launcher says it started, this one among them,
 * or 1 if no launcher did. Read from Open MPI's mpirun
 * (OMPI_COMM_WORLD_SIZE), PMI and PMIx launchers such as MPICH's and
 * srun's (PMI_SIZE, PMIX_SIZE), and srun's job step
 * (SLURM_STEP_NUM_TASKS). Not SLURM_NTASKS: a batch script has it for
 * the whole allocation, and a program it starts directly is still one
 * process.
 */
int dlfs_launch_size(void);

#endif
