/*
 * Launch detection (launch.c), the one rule of the daemon and dlfs-pack,
 * fed the environments the launchers really set (rank 1 of 2, as seen on
 * Debian 12: Open MPI 4.1.4's mpirun, MPICH 4.0.2's mpiexec.hydra, Slurm
 * 22.05's srun with --mpi=pmi2, pmix and none, an sbatch script; the
 * variables that name this machine's paths and ports are left out):
 * each gives its size and names its launcher; a batch allocation alone
 * (SLURM_NTASKS) and PMIX_RANK alone are no launch; a launcher's own
 * variables win over the srun step that started it; sizes that are not
 * whole numbers over 1 are ignored. dlfs_launch_check: an MPI that sees
 * another size than the launcher started is refused, naming both.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "launch.h"
#include "tutil.h"

/* Each launcher's environment, NULL-terminated. */
static const char *const ompi[] = {
	"OMPI_COMM_WORLD_SIZE=2", "OMPI_COMM_WORLD_RANK=1",
	"OMPI_COMM_WORLD_LOCAL_SIZE=2", "OMPI_COMM_WORLD_LOCAL_RANK=1",
	"OMPI_UNIVERSE_SIZE=2", "OMPI_MCA_orte_ess_num_procs=2",
	"PMIX_RANK=1", "PMIX_NAMESPACE=1499332609", "PMIX_VERSION=4.2.2rc2",
	NULL};
static const char *const hydra[] = {
	"PMI_RANK=1", "PMI_SIZE=2", "PMI_FD=8", "HYDI_CONTROL_FD=7",
	"MPI_LOCALNRANKS=2", "MPI_LOCALRANKID=1", NULL};
static const char *const srun_pmi2[] = {
	"PMI_FD=13", "PMI_JOBID=2.0", "PMI_RANK=1", "PMI_SIZE=2",
	"SLURM_MPI_TYPE=pmi2", "SLURM_NTASKS=2", "SLURM_NPROCS=2",
	"SLURM_PROCID=1", "SLURM_STEP_NUM_TASKS=2", "SLURM_STEP_ID=0", NULL};
static const char *const srun_pmix[] = {
	"PMIX_RANK=1", "PMIX_NAMESPACE=slurm.pmix.3.0", "PMIX_VERSION=4.2.2rc2",
	"SLURM_MPI_TYPE=pmix", "SLURM_NTASKS=2", "SLURM_NPROCS=2",
	"SLURM_PROCID=1", "SLURM_STEP_NUM_TASKS=2", "SLURM_STEP_ID=0", NULL};
static const char *const srun_none[] = {
	"SLURM_NTASKS=2", "SLURM_NPROCS=2", "SLURM_PROCID=1",
	"SLURM_STEP_NUM_TASKS=2", "SLURM_STEP_ID=0", NULL};
static const char *const sbatch[] = {
	"SLURM_NTASKS=2", "SLURM_NPROCS=2", "SLURM_JOB_ID=4", NULL};
/* mpirun in a batch script: its ranks on this node were started by an
 * orted that srun started, one per node. */
static const char *const ompi_in_slurm[] = {
	"OMPI_COMM_WORLD_SIZE=8", "OMPI_COMM_WORLD_RANK=5", "PMIX_RANK=5",
	"SLURM_NTASKS=8", "SLURM_STEP_NUM_TASKS=2", "SLURM_PROCID=1", NULL};
static const char *const hydra_in_slurm[] = {
	"PMI_RANK=5", "PMI_SIZE=8", "PMI_FD=6", "SLURM_NTASKS=8",
	"SLURM_STEP_NUM_TASKS=2", "SLURM_PROCID=1", NULL};
static const char *const pmix_alone[] = {
	"PMIX_RANK=1", "PMIX_NAMESPACE=prterun-vm-1@1", NULL};

static void with(const char *const *env)
{
	clearenv();
	for (size_t i = 0; env[i]; i++) {
		const char *eq = strchr(env[i], '=');
		char name[64];
		memcpy(name, env[i], (size_t)(eq - env[i]));
		name[eq - env[i]] = 0;
		setenv(name, eq + 1, 1);
	}
}

/* Under env: size, the variable it came from, who launched. */
static void expect(const char *const *env, int size, const char *var,
		   const char *by)
{
	struct dlfs_launch l;
	with(env);
	dlfs_launch_detect(&l);
	CHECK_EQ(l.size, size);
	CHECK_EQ(dlfs_launch_size(), size);
	if (var)
		CHECK(l.var && !strcmp(l.var, var));
	else
		CHECK(!l.var);
	CHECK(!strcmp(l.by, by));
}

static int size_with(const char *var, const char *val)
{
	clearenv();
	setenv(var, val, 1);
	return dlfs_launch_size();
}

int main(void)
{
	static const char *const none[] = {NULL};
	expect(none, 1, NULL, "no launcher");
	expect(ompi, 2, "OMPI_COMM_WORLD_SIZE", "Open MPI's mpirun");
	expect(hydra, 2, "PMI_SIZE", "a PMI launcher (MPICH's mpiexec)");
	expect(srun_pmi2, 2, "PMI_SIZE", "srun --mpi=pmi2");
	expect(srun_pmix, 2, "SLURM_STEP_NUM_TASKS", "srun --mpi=pmix");
	expect(srun_none, 2, "SLURM_STEP_NUM_TASKS", "srun --mpi=none");
	/* A batch script's allocation: one process all the same. */
	expect(sbatch, 1, NULL, "no launcher");
	expect(pmix_alone, 1, NULL, "no launcher");
	expect(ompi_in_slurm, 8, "OMPI_COMM_WORLD_SIZE", "Open MPI's mpirun");
	expect(hydra_in_slurm, 8, "PMI_SIZE", "a PMI launcher (MPICH's mpiexec)");

	CHECK_EQ(size_with("PMI_SIZE", "16"), 16);
	CHECK_EQ(size_with("PMI_SIZE", "1"), 1);
	CHECK_EQ(size_with("PMI_SIZE", "0"), 1);
	CHECK_EQ(size_with("PMI_SIZE", "-4"), 1);
	CHECK_EQ(size_with("PMI_SIZE", "4x"), 1);
	CHECK_EQ(size_with("PMI_SIZE", ""), 1);
	CHECK_EQ(size_with("PMI_SIZE", "99999999999999999999"), 1);
	CHECK_EQ(size_with("OMPI_COMM_WORLD_SIZE", "1"), 1);

	/* What MPI sees, against the launcher. */
	char msg[512];
	with(ompi);
	CHECK_EQ(dlfs_launch_check(2, msg, sizeof(msg)), 0);
	with(srun_pmix); /* MPICH there: each process a job of one */
	memset(msg, 0, sizeof(msg));
	CHECK_EQ(dlfs_launch_check(1, msg, sizeof(msg)), -EPROTO);
	CHECK(strstr(msg, "srun --mpi=pmix started 2 processes "
			  "(SLURM_STEP_NUM_TASKS=2), but MPI sees 1"));
	CHECK(strstr(msg, "--mpi=pmi2 for MPICH-family MPIs"));
	with(hydra);
	CHECK_EQ(dlfs_launch_check(3, msg, sizeof(msg)), -EPROTO);
	/* No launcher (-o mpi, or mpirun -np 1): nothing to hold it to. */
	with(none);
	CHECK_EQ(dlfs_launch_check(1, msg, sizeof(msg)), 0);
	CHECK_EQ(dlfs_launch_check(4, msg, sizeof(msg)), 0);
	clearenv();
	return t_done("test_launch");
}
