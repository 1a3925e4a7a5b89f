/* Launch detection: see launch.h. */
#include "launch.h"

#include <limits.h>
#include <stdlib.h>

int dlfs_launch_size(void)
{
	static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE",
					   "PMIX_SIZE",
					   "SLURM_STEP_NUM_TASKS"};
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
		const char *v = getenv(vars[i]);
		char *end;
		long n = v ? strtol(v, &end, 10) : 0;
		if (v && *v && !*end && n > 1 && n <= INT_MAX)
			return (int)n;
	}
	return 1;
}
