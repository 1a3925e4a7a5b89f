/* Is this an MPI launch? Shared by both peer implementations: peer.h. */
#include "peer.h"

#include <stdlib.h>

int dlfs_peer_launched(void)
{
	/* Open MPI's mpirun, PMI (MPICH, Slurm), PMIx, and srun itself. */
	static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE",
					   "PMIX_SIZE", "SLURM_NTASKS"};
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
		const char *v = getenv(vars[i]);
		if (v && atoi(v) > 1)
			return 1;
	}
	return 0;
}

void dlfs_peer_home_range(unsigned rank, unsigned size, uint64_t n,
			  uint64_t *lo, uint64_t *hi)
{
	/* home(g) = floor(g * size / n) = rank  <=>  rank * n / size <= g <
	 * (rank + 1) * n / size. */
	if (!size)
		size = 1;
	*lo = (uint64_t)(((unsigned __int128)rank * n + size - 1) / size);
	*hi = (uint64_t)(((unsigned __int128)(rank + 1) * n + size - 1) / size);
}
