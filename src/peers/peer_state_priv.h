/*
 * The MPI peer layer's insides (peer.h), shared by all its files, and
 * the functions of its lowest one, peer_state.c (the clock, homes, who
 * was heard from, silences, routes), which uses no other. Above it:
 * peer_join.c (MPI_Init, the ranks' agreement, sharing the index;
 * peer_join_priv.h), peer_home.c (serving peers: requests in, replies and
 * heartbeats out; peer_home_priv.h), peer_thread.c (the MPI thread;
 * peer_thread_priv.h), peer_ask.c (the requests this rank makes) and
 * peer_mpi.c (the API's life cycle). Only these files include mpi.h.
 *
 * Messages (all MPI_BYTE on MPI_COMM_WORLD):
 *   request  tag TAG_REQ:            le64 chunk, le32 slot, le32 0
 *   reply    tag TAG_REPLY + slot:   le64 chunk, le32 status (0 or errno),
 *                                    le32 length, then length bytes
 *   alive    tag TAG_ALIVE:          empty; a home to a rank it owes
 *                                    answers, every HEARTBEAT_MS: "alive,
 *                                    and working on them"
 *   bye      tag TAG_BYE:            empty; "this rank is leaving"
 * A requester has SLOTS outstanding requests at most, each with its own
 * reply buffer, so a late or abandoned reply never lands in a caller's
 * memory: the MPI thread copies a reply out only while its caller waits.
 *
 * A slow home is waited for; only a gone one is not (peer.h). A rank is
 * gone when MPI reports its failure, or when nothing at all (a reply, a
 * heartbeat, a request) came from it for its silence limit while this
 * rank waited on it: the larger of conf.timeout_ms and SILENCE_GAPS times
 * the longest silence seen from it so far. A gone home's chunks go to its
 * substitute, the next rank after it that is not gone (route()): every
 * rank that sees the same ranks gone picks the same one, so the PFS still
 * sees each chunk once. A gone rank heard from again is back.
 *
 * Lock order: p->mu is the one lock; nothing is called with it held but
 * MPI calls on the MPI thread, memcpy of small headers and condition
 * variables.
 */
#ifndef DLFS_PEER_STATE_PRIV_H
#define DLFS_PEER_STATE_PRIV_H

#include <mpi.h>
#include <pthread.h>
#include <stdint.h>

#include "peer.h"

#define TAG_REQ 1
#define TAG_BYE 2
#define TAG_ALIVE 3
#define TAG_REPLY 1000
#define SLOTS 32
#define HDR 16
#define BACKOFF_MIN_US 50
#define BACKOFF_MAX_US 2000
#define HEARTBEAT_MS 250
/* A caller waiting on a home looks at its silence this often. */
#define CHECK_MS 100
#define SILENCE_GAPS 8
/* Longest wait for the other ranks to leave after the last one that did:
 * ranks unmounted one after another (a script, a busy node) keep it going,
 * a dead rank, which never says bye, ends it. */
#define LEAVE_MIN_MS 10000
#define JOIN_DEFAULT_MS 120000 /* longest wait for every rank to join */
#define SHARE_PIECE (8u << 20) /* the index is broadcast in these */

enum slot_state { S_FREE, S_QUEUED, S_SENT, S_COPYING, S_DONE, S_ABANDONED };

struct slot {
	enum slot_state state;
	uint64_t g;
	unsigned home;
	void *buf; /* the caller's, valid until S_DONE is seen */
	size_t cap, len;
	int result;
	int cancelled; /* MPI_Cancel issued for an abandoned receive */
	MPI_Request sreq, rreq;
	uint8_t out[HDR];
	uint8_t *rbuf; /* HDR + chunk_size, allocated on first use */
	pthread_cond_t cv;
	double t0;
};

struct job { /* a request from a peer, for the server threads */
	uint64_t g;
	unsigned src, slot;
};

struct reply { /* a served chunk, for the MPI thread to send */
	int in_use, ready, sending;
	unsigned dst, slot;
	size_t len;
	MPI_Request req;
	uint8_t *buf; /* HDR + chunk_size */
};

/* What this rank knows of another. */
struct rank_state {
	/* As a requester: */
	double heard;     /* the last message of any kind from it */
	double since;     /* when this rank began to wait on it */
	double gap_max;   /* the longest silence seen from it while waited on */
	unsigned waiting; /* this rank's requests it has not answered */
	int gone;         /* MPI reported its failure, or it was silent past
			   * its limit; cleared when it is heard again */
	/* As its home: */
	unsigned owed;     /* its requests not answered yet */
	double alive_sent; /* the last heartbeat sent to it */
};

struct dlfs_peer {
	struct dlfs_peer_conf conf;
	unsigned rank, size;
	uint64_t seed;

	pthread_mutex_t mu;
	pthread_cond_t cv;   /* open's wait, free slots, server jobs */
	pthread_cond_t wake; /* the MPI thread's idle wait: new work */
	pthread_t mpi_thread, *servers;
	unsigned n_servers;
	int mpi_started, init_done, init_ret, leaving, stop_servers, finished;
	int abandon; /* ranks never left: exit without MPI_Finalize */
	char init_msg[DLFS_ERR_MSG_MAX];

	struct slot slots[SLOTS];
	struct job *jobs;
	unsigned jobs_head, jobs_len, jobs_cap;
	struct reply *replies;
	unsigned n_replies;
	struct rank_state *ranks; /* size of them */

	struct dlfs_peer_stats st;
	struct dlfs_peer_share_result share;

	/* Leaving: byes received (and when the last came), byes sent. */
	MPI_Request bye_in, *bye_out;
	unsigned byes;
	double last_bye;
};

/* CLOCK_MONOTONIC seconds. */
double dlfs_peer_now(void);

/* Something came from rank src at now: it is alive. Caller holds mu. */
void dlfs_peer_heard(struct dlfs_peer *p, unsigned src, double now);

/* How long rank r may be silent while this one waits on it before it is
 * gone. Caller holds mu. */
double dlfs_peer_silence_limit(const struct dlfs_peer *p, unsigned r);

/* How long rank r has been silent while this one waits on it (0 when
 * nothing is waited on). Caller holds mu. */
double dlfs_peer_silent_for(const struct dlfs_peer *p, unsigned r, double now);

/* Where to ask for chunk g: its home, or the home's substitute when it
 * is gone (this rank, possibly). Caller holds mu. */
unsigned dlfs_peer_route(const struct dlfs_peer *p, uint64_t g);

#endif
