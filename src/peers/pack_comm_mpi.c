/* The MPI side of dlfs-pack: see pack_comm.h. Its only mpi.h. */
#include <errno.h>
#include <limits.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>

#include "launch.h"
#include "pack_comm.h"

/* MPI counts are ints: large buffers go in pieces of at most this. */
#define PIECE (1 << 30)

static int mpi_errno(int rc)
{
	return rc == MPI_SUCCESS ? 0 : -EIO;
}

static int do_bcast(void *arg, void *buf, size_t len, int root)
{
	(void)arg;
	for (size_t at = 0; at < len;) {
		int n = len - at > PIECE ? PIECE : (int)(len - at);
		int rc = MPI_Bcast((char *)buf + at, n, MPI_BYTE, root,
				   MPI_COMM_WORLD);
		if (rc != MPI_SUCCESS)
			return mpi_errno(rc);
		at += (size_t)n;
	}
	return 0;
}

static int do_gather(void *arg, const void *in, size_t len, void *out,
		     int root)
{
	(void)arg;
	if (len > INT_MAX)
		return -EMSGSIZE;
	return mpi_errno(MPI_Gather(in, (int)len, MPI_BYTE, out, (int)len,
				    MPI_BYTE, root, MPI_COMM_WORLD));
}

static int do_send(void *arg, const void *buf, size_t len, int dest)
{
	(void)arg;
	for (size_t at = 0; at < len;) {
		int n = len - at > PIECE ? PIECE : (int)(len - at);
		int rc = MPI_Send((const char *)buf + at, n, MPI_BYTE, dest, 7,
				  MPI_COMM_WORLD);
		if (rc != MPI_SUCCESS)
			return mpi_errno(rc);
		at += (size_t)n;
	}
	return 0;
}

static int do_recv(void *arg, void *buf, size_t len, int src)
{
	(void)arg;
	for (size_t at = 0; at < len;) {
		int n = len - at > PIECE ? PIECE : (int)(len - at);
		int rc = MPI_Recv((char *)buf + at, n, MPI_BYTE, src, 7,
				  MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		if (rc != MPI_SUCCESS)
			return mpi_errno(rc);
		at += (size_t)n;
	}
	return 0;
}

int pack_comm_available(void)
{
	return 1;
}

int pack_comm_init(int *argc, char ***argv, struct dlfs_pack_comm *c,
		   int *joined, char *msg, size_t len)
{
	int provided, rank, size;
	*joined = 0;
	if (dlfs_launch_size() <= 1)
		return 0; /* alone: no MPI, so ingest may fork workers */
	if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) !=
	    MPI_SUCCESS) {
		snprintf(msg, len, "MPI_Init_thread failed");
		return -EIO;
	}
	/* Failures come back as codes, which dlfs_pack reports. */
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	/* Each process a job of one would pack the same OUT on its own. */
	if (dlfs_launch_check(size, msg, len)) {
		MPI_Finalize();
		return -EPROTO;
	}
	*c = (struct dlfs_pack_comm){
		.rank = rank,
		.size = size,
		.bcast = do_bcast,
		.gather = do_gather,
		.send = do_send,
		.recv = do_recv,
	};
	*joined = 1;
	return 0;
}

void pack_comm_fini(struct dlfs_pack_comm *c)
{
	(void)c;
	/* MPI_Finalize need not synchronise: the barrier makes sure no
	 * rank exits (and has its launcher end the job) before every rank
	 * has said what it had to say. */
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Finalize();
}
