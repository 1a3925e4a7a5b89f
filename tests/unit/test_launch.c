/*
 * Launch detection (launch.c), the one rule of the daemon and dlfs-pack:
 * the size a launcher gives, 1 without one; a batch allocation alone
 * (SLURM_NTASKS) is no launch; sizes that are not whole numbers over 1
 * are ignored.
 */
#include <stdlib.h>

#include "launch.h"
#include "tutil.h"

static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE",
				   "PMIX_SIZE", "SLURM_STEP_NUM_TASKS",
				   "SLURM_NTASKS"};

static void clear(void)
{
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		unsetenv(vars[i]);
}

static int with(const char *var, const char *val)
{
	clear();
	setenv(var, val, 1);
	return dlfs_launch_size();
}

int main(void)
{
	clear();
	CHECK_EQ(dlfs_launch_size(), 1);
	CHECK_EQ(with("OMPI_COMM_WORLD_SIZE", "3"), 3);
	CHECK_EQ(with("PMI_SIZE", "16"), 16);
	CHECK_EQ(with("PMIX_SIZE", "2"), 2);
	CHECK_EQ(with("SLURM_STEP_NUM_TASKS", "4"), 4);
	/* A batch script's allocation: one process all the same. */
	CHECK_EQ(with("SLURM_NTASKS", "8"), 1);
	CHECK_EQ(with("PMI_SIZE", "1"), 1);
	CHECK_EQ(with("PMI_SIZE", "0"), 1);
	CHECK_EQ(with("PMI_SIZE", "-4"), 1);
	CHECK_EQ(with("PMI_SIZE", "4x"), 1);
	CHECK_EQ(with("PMI_SIZE", ""), 1);
	CHECK_EQ(with("PMI_SIZE", "99999999999999999999"), 1);
	/* A step inside an allocation: the step's size. */
	clear();
	setenv("SLURM_NTASKS", "8", 1);
	setenv("SLURM_STEP_NUM_TASKS", "2", 1);
	CHECK_EQ(dlfs_launch_size(), 2);
	clear();
	return t_done("test_launch");
}
