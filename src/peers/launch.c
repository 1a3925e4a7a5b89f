/* Launch detection: see launch.h. */
#include "launch.h"
#include "launch_vars.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A size over 1 in var, or 0. */
static int size_of(const char *var)
{
	const char *v = getenv(var);
	char *end;
	long n = v ? strtol(v, &end, 10) : 0;
	return v && *v && !*end && n > 1 && n <= INT_MAX ? (int)n : 0;
}

/* Who sets var (launch.h), for messages. */
static void who(struct dlfs_launch *l, const char *mpi_type)
{
	if (!strcmp(l->var, "OMPI_COMM_WORLD_SIZE"))
		snprintf(l->by, sizeof(l->by), "Open MPI's mpirun");
	else if (!strcmp(l->var, "PMI_SIZE"))
		snprintf(l->by, sizeof(l->by), "%s",
			 mpi_type && !strcmp(mpi_type, "pmi2")
				 ? "srun --mpi=pmi2"
				 : "a PMI launcher (MPICH's mpiexec)");
	else if (!strcmp(l->var, "SLURM_STEP_NUM_TASKS"))
		snprintf(l->by, sizeof(l->by), "srun --mpi=%.20s",
			 mpi_type ? mpi_type : "none");
	else
		snprintf(l->by, sizeof(l->by), "an MPI launcher");
}

void dlfs_launch_detect(struct dlfs_launch *l)
{
	static const char *const vars[] = {DLFS_LAUNCH_SIZE_VARS};
	memset(l, 0, sizeof(*l));
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
		if ((l->size = size_of(vars[i]))) {
			l->var = vars[i];
			who(l, getenv("SLURM_MPI_TYPE"));
			return;
		}
	}
	l->size = 1;
	snprintf(l->by, sizeof(l->by), "no launcher");
}

int dlfs_launch_size(void)
{
	struct dlfs_launch l;
	dlfs_launch_detect(&l);
	return l.size;
}

int dlfs_launch_check(int mpi_size, char *msg, size_t len)
{
	struct dlfs_launch l;
	dlfs_launch_detect(&l);
	if (l.size <= 1 || l.size == mpi_size)
		return 0;
	snprintf(msg, len,
		 "%s started %d processes (%s=%d), but MPI sees %d: this MPI "
		 "does not speak that launcher's process-management interface "
		 "(under srun: --mpi=pmi2 for MPICH-family MPIs, "
		 "--mpi=pmix for Open MPI; or launch with the MPI's own mpiexec)",
		 l.by, l.size, l.var, l.size, mpi_size);
	return -EPROTO;
}
