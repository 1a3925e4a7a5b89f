/* dlfs-pack built without MPI: see pack_comm.h. */
#include <errno.h>
#include <stdio.h>

#include "launch.h"
#include "pack_comm.h"

int pack_comm_available(void)
{
	return 0;
}

int pack_comm_init(int *argc, char ***argv, struct dlfs_pack_comm *c,
		   int *joined, char *msg, size_t len)
{
	(void)argc;
	(void)argv;
	(void)c;
	*joined = 0;
	int n = dlfs_launch_size();
	if (n > 1) {
		/* Each would pack the same OUT on its own: refuse. */
		snprintf(msg, len,
			 "started as one of %d processes by an MPI launcher, "
			 "but this dlfs-pack was built without MPI "
			 "(meson -Dmpi=enabled, with libopenmpi-dev or libmpich-dev)",
			 n);
		return -ENOTSUP;
	}
	return 0;
}

void pack_comm_fini(struct dlfs_pack_comm *c)
{
	(void)c;
}
