/*
 * Joining the job, on the MPI thread: MPI_Init, the ranks' agreement on
 * the dataset and the seed, and sharing the index (peer.h, share_*). See
 * peer_join_priv.h.
 */
#include "launch.h"
#include "peer_join_priv.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "dlfs/format.h"

struct hello {
	char id[2 * DLFS_ID_SIZE + 1];
	uint8_t seed_given, pad[6];
	uint64_t index_sum, seed, n_chunks;
};

/* The index in pieces of SHARE_PIECE bytes from the root (rank 0 of
 * sub) to every rank of sub, each with the root's read status first;
 * buf holds HDR + SHARE_PIECE bytes. @return 0 or -EIO (MPI failed). */
static int send_pieces(struct dlfs_peer *p, MPI_Comm sub, uint8_t *buf,
		       int need)
{
	struct dlfs_peer_share_result *r = &p->share;
	uint64_t size = p->conf.share_size;
	for (uint64_t off = 0; off < size;) {
		size_t len = size - off < SHARE_PIECE ? (size_t)(size - off)
						      : SHARE_PIECE;
		int st = 0;
		if (r->root)
			st = p->conf.share_read(p->conf.share_arg, off,
						buf + HDR, len);
		dlfs_put_le32(buf, (uint32_t)-st);
		if (MPI_Bcast(buf, (int)(HDR + len), MPI_BYTE, 0, sub) !=
		    MPI_SUCCESS) {
			snprintf(p->init_msg, sizeof(p->init_msg),
				 "MPI_Bcast of the index at offset %llu failed",
				 (unsigned long long)off);
			return -EIO;
		}
		st = -(int)dlfs_get_le32(buf);
		if (st) {
			if (!r->result)
				r->result = st;
			break;
		}
		if (need && !r->result)
			r->result = p->conf.share_write(p->conf.share_arg,
							buf + HDR, len);
		off += len;
		r->bytes += len;
	}
	return 0;
}

/*
 * Share the index (peer.h, share_*): one rank reads it, in pieces, and
 * broadcasts each to the ranks that need it, over a communicator of just
 * those and itself, so a rank that has it costs nothing. Each piece
 * carries the reader's status first, so a failed read stops every rank at
 * the same piece. A receiver that fails to write goes on receiving (it
 * must stay in step) and reports its failure afterwards. @return 0, or
 * -errno for a failure of MPI itself (p->init_msg says it); a bad copy is
 * p->share.result, for the caller to fall back on.
 */
static int share(struct dlfs_peer *p)
{
	struct dlfs_peer_share_result *r = &p->share;
	int need = !!p->conf.share_need, n = (int)p->size;
	int *needs = calloc((size_t)n, sizeof(int));
	uint8_t *buf = NULL;
	MPI_Comm sub = MPI_COMM_NULL;
	int ret = 0;
	double t0 = dlfs_peer_now();
	if (!needs) {
		snprintf(p->init_msg, sizeof(p->init_msg), "out of memory");
		return -ENOMEM;
	}
	if (MPI_Allgather(&need, 1, MPI_INT, needs, 1, MPI_INT,
			  MPI_COMM_WORLD) != MPI_SUCCESS) {
		snprintf(p->init_msg, sizeof(p->init_msg),
			 "MPI_Allgather of who needs the index failed");
		ret = -EIO;
		goto out;
	}
	int root = -1;
	for (int i = 0; i < n; i++) {
		r->receivers += (unsigned)needs[i];
		if (!needs[i] && root < 0)
			root = i;
	}
	if (!r->receivers)
		goto out;
	if (root < 0)
		root = 0;
	r->root = (int)p->rank == root;
	int in = need || r->root;
	/* The root first in the new communicator: rank 0 there. */
	if (MPI_Comm_split(MPI_COMM_WORLD, in ? 0 : MPI_UNDEFINED,
			   r->root ? 0 : (int)p->rank + 1,
			   &sub) != MPI_SUCCESS) {
		snprintf(p->init_msg, sizeof(p->init_msg),
			 "MPI_Comm_split for sharing the index failed");
		ret = -EIO;
		goto out;
	}
	if (!in)
		goto out;
	if (!(buf = malloc(HDR + SHARE_PIECE))) {
		/* Every rank must take part: a rank without memory still
		 * needs a buffer, so this is fatal for the join. */
		snprintf(p->init_msg, sizeof(p->init_msg), "out of memory");
		ret = -ENOMEM;
		goto out;
	}
	ret = send_pieces(p, sub, buf, need);
out:
	if (sub != MPI_COMM_NULL)
		MPI_Comm_free(&sub);
	r->seconds = dlfs_peer_now() - t0;
	free(buf);
	free(needs);
	return ret;
}

/* peer_join_priv.h */
int dlfs_peer_join(struct dlfs_peer *p)
{
	int provided, rank, size;
	/* FUNNELED: this thread, which calls MPI_Init_thread and so is
	 * MPI's main thread, makes every MPI call. Open MPI 4.1 and MPICH
	 * 4.0 both grant it; the other threads never call MPI. */
	if (MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided) !=
	    MPI_SUCCESS) {
		snprintf(p->init_msg, sizeof(p->init_msg), "MPI_Init_thread failed");
		return -EIO;
	}
	p->mpi_started = 1;
	/* A dead peer must cost a timeout, not abort this node. */
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	p->rank = (unsigned)rank;
	p->size = (unsigned)size;
	/* An MPI that does not speak the launcher's interface makes each
	 * process a job of one: every node alone, the PFS read N times. */
	if (dlfs_launch_check(size, p->init_msg, sizeof(p->init_msg)))
		return -EPROTO;
	if (provided < MPI_THREAD_FUNNELED)
		/* MPI_THREAD_SINGLE promises no other thread exists; ours
		 * never call MPI, which such builds (MPICH's
		 * --enable-threads=single) are known to bear. */
		dlfs_logf(p->conf.log, p->conf.arg, LOG_WARNING,
			  "MPI grants only thread level %d (MPI_THREAD_SINGLE): "
			  "going on, with every MPI call made by one thread",
			  provided);

	struct hello me = {0}, *all = calloc((size_t)size, sizeof(me));
	if (!all) {
		snprintf(p->init_msg, sizeof(p->init_msg), "out of memory");
		return -ENOMEM;
	}
	snprintf(me.id, sizeof(me.id), "%s", p->conf.dataset_id_hex);
	me.index_sum = p->conf.index_sum;
	me.seed = p->conf.seed;
	me.seed_given = (uint8_t)!!p->conf.seed_given;
	me.n_chunks = p->conf.n_chunks;
	int ret = 0;
	if (MPI_Allgather(&me, sizeof(me), MPI_BYTE, all, sizeof(me), MPI_BYTE,
			  MPI_COMM_WORLD) != MPI_SUCCESS) {
		snprintf(p->init_msg, sizeof(p->init_msg),
			 "MPI_Allgather of the dataset identity failed");
		ret = -EIO;
		goto out;
	}
	for (int r = 0; r < size && !ret; r++) {
		if (strcmp(all[r].id, me.id) || all[r].index_sum != me.index_sum ||
		    all[r].n_chunks != me.n_chunks)
			ret = -EPROTO;
		else if (all[r].seed_given && all[0].seed_given &&
			 all[r].seed != all[0].seed)
			ret = -EPROTO;
		if (ret)
			snprintf(p->init_msg, sizeof(p->init_msg),
				 "rank %d mounts dataset %s (index checksum "
				 "%016llx, seed %s%llu), rank %d mounts %s "
				 "(%016llx, seed %s%llu): every rank must mount "
				 "the same dataset with the same seed",
				 r, all[r].id,
				 (unsigned long long)all[r].index_sum,
				 all[r].seed_given ? "" : "drawn ",
				 (unsigned long long)all[r].seed, rank, me.id,
				 (unsigned long long)me.index_sum,
				 me.seed_given ? "" : "drawn ",
				 (unsigned long long)me.seed);
	}
	p->seed = all[0].seed; /* rank 0 draws the seed for everyone */
out:
	free(all);
	if (!ret && p->conf.share_size)
		ret = share(p);
	return ret;
}
