/*
 * The variables in which MPI launchers give each task the size of its
 * launch, in the order src/peers/launch.c reads them (launch.h says who
 * sets which, as seen running them). The one list: launch.c reads it,
 * and dlfs-run (tools/dlfs-run.c) clears it for the server it starts,
 * since the command it runs is the job's rank and the server never is.
 */
#ifndef DLFS_NODE_LAUNCH_VARS_H
#define DLFS_NODE_LAUNCH_VARS_H

#define DLFS_LAUNCH_SIZE_VARS                                                 \
	"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_STEP_NUM_TASKS"

#endif
