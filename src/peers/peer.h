/*
 * Many nodes: the daemons of one job, one per node, fetch chunks from each
 * other so that the PFS sees each chunk read once per job.
 *
 * Every chunk has a home rank: the chunks, numbered across containers, are
 * cut into W contiguous ranges, rank r's being [r*N/W, (r+1)*N/W), so a
 * home reads its range sequentially. A rank that misses a chunk in its
 * RAM and NVMe tiers asks the chunk's home, which serves it from its own
 * tiers or reads it from the PFS once and keeps it. A busy home is waited
 * for: while it owes answers it sends heartbeats, so a slow node never
 * turns into extra PFS reads (a home is slow exactly when it is busy, and
 * reading the PFS then would add load where there is too much). A home is
 * gone only when MPI reports its failure, or when nothing at all is heard
 * from it for its silence limit (timeout_ms, or more when it was seen
 * silent longer before); its chunks then go to one substitute, the next
 * rank after it that is not gone, so the PFS still sees each once. Never
 * a hung read.
 *
 * Threads: one MPI thread makes every MPI call, from MPI_Init_thread to
 * MPI_Finalize. Callers queue requests to it and sleep on their own
 * condition variable; it polls with back-off (50 us up to 2 ms) when idle,
 * so it never starves readers on a small node. Requests for this rank's
 * chunks are served by a pool of server threads (the serve callback may
 * read the PFS), never by the MPI thread.
 *
 * Two implementations, chosen by meson: peer_mpi.c (MPI found at build
 * time) and peer_none.c (no MPI: dlfs_peer_open says so when a launch
 * asks for it, and every node runs alone).
 *
 * Thread-safety: every call is safe from any thread.
 */
#ifndef DLFS_PEER_H
#define DLFS_PEER_H

#include <stddef.h>
#include <stdint.h>

#include "dlfs/err.h"
#include "launch.h" /* dlfs_launch_size: is this an MPI launch? */

struct dlfs_peer;

/* Serve chunk g (global number) into buf (cap bytes): from this node's
 * tiers, or the PFS. ctx is the server thread's own, from ctx_new.
 * @return 0 with *len, or -errno. */
typedef int (*dlfs_peer_serve_fn)(void *arg, void *ctx, uint64_t g,
				  void *buf, size_t cap, size_t *len);
typedef void *(*dlfs_peer_ctx_new_fn)(void *arg);
typedef void (*dlfs_peer_ctx_free_fn)(void *arg, void *ctx);

struct dlfs_peer_conf {
	int force;             /* -o mpi: use MPI even without a launcher */
	const char *dataset_id_hex;
	uint64_t index_sum;    /* checksum of the index, to compare */
	uint64_t seed;         /* this rank's; rank 0's wins (broadcast) */
	int seed_given;        /* -o seed= was given: all must agree */
	uint64_t n_chunks;     /* across all containers */
	size_t chunk_size;
	/* The shortest silence (no answer, no heartbeat, no request) of a
	 * peer waited on that makes it gone; 0: the default. */
	unsigned timeout_ms;
	/* Joining: MPI_Init and the ranks' agreement; 0 = 120 s. A rank
	 * that dies before it joins leaves the others waiting in MPI
	 * forever: this bounds it. */
	unsigned join_timeout_ms;
	unsigned servers;      /* threads serving peers */
	dlfs_peer_serve_fn serve;
	dlfs_peer_ctx_new_fn ctx_new;
	dlfs_peer_ctx_free_fn ctx_free;
	void *arg;
	dlfs_log_fn log; /* may be NULL */
	/*
	 * Sharing the index while joining (share_size > 0; every rank
	 * gives the same size): the ranks that need it (share_need) get
	 * share_size bytes, in order, through share_write; one rank reads
	 * them through share_read: the lowest that does not need them
	 * (it has them locally), else rank 0. Each rank reads nothing if
	 * no rank needs them. n_chunks and chunk_size may then be 0 until
	 * dlfs_peer_set_layout.
	 */
	uint64_t share_size;
	int share_need;
	int (*share_read)(void *arg, uint64_t off, void *buf, size_t len);
	int (*share_write)(void *arg, const void *buf, size_t len);
	void *share_arg;
};

/* What sharing the index did on this rank (dlfs_peer_share_result). */
struct dlfs_peer_share_result {
	int result;         /* 0, or the -errno that spoiled this copy */
	int root;           /* this rank read the bytes for the others */
	unsigned receivers; /* ranks that needed them */
	uint64_t bytes;     /* moved */
	double seconds;
};

/* Latencies of answered requests by power of two: bucket b counts those
 * of at most 16 << b microseconds; the last, all longer ones. */
#define DLFS_PEER_LAT_BUCKETS 20

/* The default of conf.timeout_ms: a minute of silence. A node stopped
 * for less (swapping, a debugger, SIGSTOP) is waited for. */
#define DLFS_PEER_TIMEOUT_DEFAULT_MS 60000

struct dlfs_peer_stats {
	uint64_t requests, hits, bytes;
	uint64_t timeouts; /* ranks found gone by their silence */
	uint64_t lost;     /* ranks found gone by MPI's report */
	uint64_t back;     /* gone ranks heard from again */
	uint64_t errors;   /* answers that were an error */
	uint64_t rerouted; /* requests sent to a gone home's substitute */
	uint64_t latency_us_sum, latency_us_max;
	uint64_t latency_hist[DLFS_PEER_LAT_BUCKETS];
	uint64_t served, served_bytes;
	uint64_t heartbeats_sent, heartbeats_heard;
	/* The MPI thread's idle waits, and how late it woke from them: how
	 * responsive it stays on a node whose CPUs are busy. */
	uint64_t mpi_waits, mpi_lag_us_sum, mpi_lag_us_max;
};

/*
 * Join the job: start the MPI thread, which initialises MPI, checks that
 * every rank mounts the same dataset (id and index checksum) and agrees
 * on the seed, and learns the rank and size. Call after mounting (libfuse
 * may fork to mount) and before any FUSE thread starts; never fork after.
 * *out is NULL (and 0 returned) when there is no launch and no force.
 * @return 0, -ENOTSUP (MPI asked for, not built in), -EPROTO (the ranks
 * disagree, or MPI sees another number of processes than the launcher
 * started: launch.h; err says how), -ETIMEDOUT (not every rank joined within
 * join_timeout_ms: the MPI thread is left behind, blocked in MPI, and the
 * process must exit without MPI_Finalize), or -errno.
 */
int dlfs_peer_open(const struct dlfs_peer_conf *conf, struct dlfs_peer **out,
		   struct dlfs_err *err);

/* What sharing the index did here (zeros when nothing was shared). */
void dlfs_peer_share_result(const struct dlfs_peer *p,
			    struct dlfs_peer_share_result *r);

/* The chunk layout, when it was not known at dlfs_peer_open (the index
 * came through sharing). Before dlfs_peer_start. */
void dlfs_peer_set_layout(struct dlfs_peer *p, uint64_t n_chunks,
			  size_t chunk_size);

/* Start serving peers (the server threads). @return 0 or -errno. */
int dlfs_peer_start(struct dlfs_peer *p, struct dlfs_err *err);

/*
 * Leave the job: keep serving peers until every rank has called this
 * (a non-blocking barrier), then finalise MPI and free. NULL is ok.
 */
void dlfs_peer_close(struct dlfs_peer *p);

unsigned dlfs_peer_rank(const struct dlfs_peer *p);
unsigned dlfs_peer_size(const struct dlfs_peer *p);
uint64_t dlfs_peer_seed(const struct dlfs_peer *p);
/* The home rank of global chunk g. */
unsigned dlfs_peer_home(const struct dlfs_peer *p, uint64_t g);
/* The chunks whose home is rank of size, of n: [*lo, *hi) (the inverse
 * of dlfs_peer_home). Also without a job (rank 0 of 1: all of them). */
void dlfs_peer_home_range(unsigned rank, unsigned size, uint64_t n,
			  uint64_t *lo, uint64_t *hi);

/*
 * Fetch global chunk g from its home, or the home's substitute when the
 * home is gone, into buf (cap bytes); waits as long as the one asked is
 * heard from. @return 0 with *len; -EXDEV when this rank is the gone
 * home's substitute: read it from the PFS for the job; -EHOSTDOWN when
 * the job is ending (or g's home is this rank); or the -errno the peer
 * answered. In every error case read it from the PFS.
 */
int dlfs_peer_get(struct dlfs_peer *p, uint64_t g, void *buf, size_t cap,
		  size_t *len);

void dlfs_peer_get_stats(struct dlfs_peer *p, struct dlfs_peer_stats *s);

/* The MPI library this process runs with, for dlfs --version: the first
 * line of its MPI_Get_library_version (which MPI lets one call before
 * MPI_Init), or "none (built without MPI)". */
void dlfs_peer_mpi_library(char *buf, size_t len);

#endif
