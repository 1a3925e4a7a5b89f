/* Is dlfs-pack one of several processes of an MPI launch? pack_comm.h. */
#include <stdlib.h>

#include "pack_comm.h"

int pack_comm_launched(void)
{
	/*
	 * Open MPI's mpirun, PMI and PMIx (MPICH, srun) and srun itself
	 * for a job step. Not SLURM_NTASKS: a batch script that runs
	 * dlfs-pack directly has it set, and is still one process.
	 */
	static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE",
					   "PMIX_SIZE",
					   "SLURM_STEP_NUM_TASKS"};
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
		const char *v = getenv(vars[i]);
		if (v && atoi(v) > 1)
			return atoi(v);
	}
	return 1;
}
