/*
 * Many nodes over MPI: see peer.h. The only file that includes mpi.h.
 *
 * Messages (all MPI_BYTE on MPI_COMM_WORLD):
 *   request  tag TAG_REQ:            le64 chunk, le32 slot, le32 0
 *   reply    tag TAG_REPLY + slot:   le64 chunk, le32 status (0 or errno),
 *                                    le32 length, then length bytes
 * A requester has SLOTS outstanding requests at most, each with its own
 * reply buffer, so a late or abandoned reply never lands in a caller's
 * memory: the MPI thread copies a reply out only while its caller waits.
 *
 * Lock order: p->mu is the one lock; nothing is called with it held but
 * memcpy of small headers and condition variables.
 */
#include "launch.h"
#include "peer.h"

#include <mpi.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <syslog.h>
#include <string.h>
#include <time.h>

#include "dlfs/format.h"

#define TAG_REQ 1
#define TAG_BYE 2 /* "this rank is leaving": empty */
#define TAG_REPLY 1000
#define SLOTS 32
#define HDR 16
#define BACKOFF_MIN_US 50
#define BACKOFF_MAX_US 2000
#define DEAD_MS 10000 /* a peer that timed out is skipped this long */
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

struct dlfs_peer {
	struct dlfs_peer_conf conf;
	unsigned rank, size;
	uint64_t seed;

	pthread_mutex_t mu;
	pthread_cond_t cv;      /* open's wait, free slots, server jobs */
	pthread_cond_t wake;    /* the MPI thread's idle wait: new work */
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
	double *dead_until; /* per rank */

	struct dlfs_peer_stats st;
	struct dlfs_peer_share_result share;

	/* Leaving: byes received (and when the last came), byes sent. */
	MPI_Request bye_in, *bye_out;
	unsigned byes;
	double last_bye;
};

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}


unsigned dlfs_peer_home(const struct dlfs_peer *p, uint64_t g)
{
	if (!p || !p->conf.n_chunks)
		return 0;
	return (unsigned)((unsigned __int128)g * p->size / p->conf.n_chunks);
}

unsigned dlfs_peer_rank(const struct dlfs_peer *p)
{
	return p ? p->rank : 0;
}

unsigned dlfs_peer_size(const struct dlfs_peer *p)
{
	return p ? p->size : 1;
}

uint64_t dlfs_peer_seed(const struct dlfs_peer *p)
{
	return p ? p->seed : 0;
}

void dlfs_peer_share_result(const struct dlfs_peer *p,
			    struct dlfs_peer_share_result *r)
{
	memset(r, 0, sizeof(*r));
	if (p)
		*r = p->share;
}

void dlfs_peer_set_layout(struct dlfs_peer *p, uint64_t n_chunks,
			  size_t chunk_size)
{
	p->conf.n_chunks = n_chunks;
	p->conf.chunk_size = chunk_size;
}

/* ---- start: runs on the MPI thread ---- */

struct hello {
	char id[2 * DLFS_ID_SIZE + 1];
	uint8_t seed_given, pad[6];
	uint64_t index_sum, seed, n_chunks;
};

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
	double t0 = now_s();
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
	size_t piece = SHARE_PIECE;
	if (!(buf = malloc(HDR + piece))) {
		/* Every rank must take part: a rank without memory still
		 * needs a buffer, so this is fatal for the join. */
		snprintf(p->init_msg, sizeof(p->init_msg), "out of memory");
		ret = -ENOMEM;
		goto out;
	}
	uint64_t size = p->conf.share_size;
	for (uint64_t off = 0; off < size;) {
		size_t len = size - off < piece ? (size_t)(size - off) : piece;
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
			ret = -EIO;
			goto out;
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
out:
	if (sub != MPI_COMM_NULL)
		MPI_Comm_free(&sub);
	r->seconds = now_s() - t0;
	free(buf);
	free(needs);
	return ret;
}

/* Initialise MPI and check the ranks agree. @return 0 or -errno, with
 * p->init_msg saying why. */
static int join(struct dlfs_peer *p)
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

/* ---- the MPI thread's work ---- */

/* Send queued requests, collect replies, cancel abandoned receives.
 * Caller holds mu. @return work done. */
static int requests(struct dlfs_peer *p)
{
	int work = 0;
	for (unsigned i = 0; i < SLOTS; i++) {
		struct slot *s = &p->slots[i];
		if (s->state == S_QUEUED) {
			dlfs_put_le64(s->out, s->g);
			dlfs_put_le32(s->out + 8, i);
			dlfs_put_le32(s->out + 12, 0);
			int bad = MPI_Irecv(s->rbuf, (int)(HDR + p->conf.chunk_size),
					    MPI_BYTE, (int)s->home,
					    TAG_REPLY + (int)i, MPI_COMM_WORLD,
					    &s->rreq) != MPI_SUCCESS;
			if (!bad)
				bad = MPI_Isend(s->out, HDR, MPI_BYTE,
						(int)s->home, TAG_REQ,
						MPI_COMM_WORLD,
						&s->sreq) != MPI_SUCCESS;
			if (bad) {
				s->result = -ECONNRESET;
				s->state = S_DONE;
				pthread_cond_signal(&s->cv);
			} else {
				s->state = S_SENT;
			}
			work++;
			continue;
		}
		if (s->state != S_SENT && s->state != S_ABANDONED)
			continue;
		int flag = 0;
		if (s->sreq != MPI_REQUEST_NULL)
			MPI_Test(&s->sreq, &flag, MPI_STATUS_IGNORE);
		if (s->state == S_ABANDONED && !s->cancelled) {
			MPI_Cancel(&s->rreq);
			s->cancelled = 1;
		}
		flag = 0;
		int gone = MPI_Test(&s->rreq, &flag, MPI_STATUS_IGNORE) !=
			   MPI_SUCCESS;
		if (!flag && !gone)
			continue;
		work++;
		if (gone) {
			/* MPI says the peer is gone: nothing more will come
			 * for this slot, and its buffer holds no answer. */
			s->rreq = MPI_REQUEST_NULL;
			if (s->sreq != MPI_REQUEST_NULL)
				MPI_Request_free(&s->sreq);
		}
		if (s->state == S_ABANDONED) {
			if (s->sreq != MPI_REQUEST_NULL)
				continue; /* wait for the send to finish too */
			s->state = S_FREE;
			pthread_cond_broadcast(&p->cv);
			continue;
		}
		if (gone) {
			s->result = -ECONNRESET;
			s->state = S_DONE;
			pthread_cond_signal(&s->cv);
			continue;
		}
		/* The home has our request, so its send is over locally. */
		if (s->sreq != MPI_REQUEST_NULL)
			MPI_Wait(&s->sreq, MPI_STATUS_IGNORE);
		uint32_t st = dlfs_get_le32(s->rbuf + 8);
		uint32_t len = dlfs_get_le32(s->rbuf + 12);
		if (dlfs_get_le64(s->rbuf) != s->g || st || len > s->cap) {
			s->result = st ? -(int)st : -EPROTO;
			s->state = S_DONE;
			pthread_cond_signal(&s->cv);
			continue;
		}
		/* Copy without the lock; the caller waits through COPYING. */
		s->state = S_COPYING;
		pthread_mutex_unlock(&p->mu);
		memcpy(s->buf, s->rbuf + HDR, len);
		pthread_mutex_lock(&p->mu);
		s->len = len;
		s->result = 0;
		s->state = S_DONE;
		pthread_cond_signal(&s->cv);
	}
	return work;
}

/* Take in peers' requests, send served replies. Caller holds mu. */
static int serving(struct dlfs_peer *p)
{
	int work = 0, flag = 1;
	while (flag && p->jobs_len < p->jobs_cap) {
		MPI_Status status;
		flag = 0;
		if (MPI_Iprobe(MPI_ANY_SOURCE, TAG_REQ, MPI_COMM_WORLD, &flag,
			       &status) != MPI_SUCCESS ||
		    !flag)
			break;
		uint8_t in[HDR];
		if (MPI_Recv(in, HDR, MPI_BYTE, status.MPI_SOURCE, TAG_REQ,
			     MPI_COMM_WORLD, MPI_STATUS_IGNORE) != MPI_SUCCESS)
			break;
		struct job *j = &p->jobs[(p->jobs_head + p->jobs_len++) %
					 p->jobs_cap];
		j->g = dlfs_get_le64(in);
		j->slot = dlfs_get_le32(in + 8);
		j->src = (unsigned)status.MPI_SOURCE;
		pthread_cond_broadcast(&p->cv);
		work++;
	}
	for (unsigned i = 0; i < p->n_replies; i++) {
		struct reply *r = &p->replies[i];
		if (r->ready && !r->sending) {
			if (MPI_Isend(r->buf, (int)(HDR + r->len), MPI_BYTE,
				      (int)r->dst, TAG_REPLY + (int)r->slot,
				      MPI_COMM_WORLD, &r->req) != MPI_SUCCESS) {
				r->in_use = r->ready = 0;
				pthread_cond_broadcast(&p->cv);
				continue;
			}
			r->sending = 1;
			work++;
		}
		if (r->sending) {
			int done = 0;
			if (MPI_Test(&r->req, &done, MPI_STATUS_IGNORE) !=
			    MPI_SUCCESS)
				done = 1;
			if (done) {
				r->in_use = r->ready = r->sending = 0;
				pthread_cond_broadcast(&p->cv);
				work++;
			}
		}
	}
	return work;
}

/* Count the byes of ranks that left. Caller holds mu. @return work. */
static int byes(struct dlfs_peer *p)
{
	int flag = 0;
	if (p->bye_in == MPI_REQUEST_NULL ||
	    MPI_Test(&p->bye_in, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS ||
	    !flag)
		return 0;
	p->byes++;
	p->last_bye = now_s();
	if (p->byes + 1 < p->size &&
	    MPI_Irecv(NULL, 0, MPI_BYTE, MPI_ANY_SOURCE, TAG_BYE,
		      MPI_COMM_WORLD, &p->bye_in) != MPI_SUCCESS)
		p->bye_in = MPI_REQUEST_NULL;
	return 1;
}

/* Tell every other rank this one is leaving. Caller holds mu. */
static void say_bye(struct dlfs_peer *p)
{
	p->bye_out = calloc(p->size, sizeof(*p->bye_out));
	for (unsigned r = 0; p->bye_out && r < p->size; r++)
		if (r == p->rank ||
		    MPI_Isend(NULL, 0, MPI_BYTE, (int)r, TAG_BYE,
			      MPI_COMM_WORLD, &p->bye_out[r]) != MPI_SUCCESS)
			p->bye_out[r] = MPI_REQUEST_NULL;
}

static void *mpi_main(void *arg)
{
	struct dlfs_peer *p = arg;
	int ret = join(p);
	pthread_mutex_lock(&p->mu);
	p->init_ret = ret;
	p->init_done = 1;
	pthread_cond_broadcast(&p->cv);
	unsigned backoff = BACKOFF_MIN_US;
	MPI_Request barrier = MPI_REQUEST_NULL;
	p->bye_in = MPI_REQUEST_NULL;
	if (!ret && p->size > 1 &&
	    MPI_Irecv(NULL, 0, MPI_BYTE, MPI_ANY_SOURCE, TAG_BYE,
		      MPI_COMM_WORLD, &p->bye_in) != MPI_SUCCESS)
		p->bye_in = MPI_REQUEST_NULL;
	int in_barrier = 0;
	double left_at = 0;
	while (!ret) {
		int work = requests(p) + serving(p) + byes(p);
		if (p->leaving && !in_barrier) {
			/* Keep serving until every rank is leaving too. */
			say_bye(p);
			if (MPI_Ibarrier(MPI_COMM_WORLD, &barrier) != MPI_SUCCESS)
				break;
			in_barrier = 1;
			left_at = now_s();
		}
		if (in_barrier) {
			int done = 0;
			if (MPI_Test(&barrier, &done, MPI_STATUS_IGNORE) !=
				    MPI_SUCCESS ||
			    done)
				break;
			/* A dead rank never arrives: do not wait forever. */
			unsigned limit = 2 * p->conf.timeout_ms > LEAVE_MIN_MS
						 ? 2 * p->conf.timeout_ms
						 : LEAVE_MIN_MS;
			double since = p->last_bye > left_at ? p->last_bye
							     : left_at;
			if (now_s() - since > limit / 1000.0) {
				p->abandon = 1;
				break;
			}
		}
		if (work) {
			backoff = BACKOFF_MIN_US;
		} else {
			/* Idle: back off, but wake at once for local work (a
			 * request to send, a reply to send); peers' requests
			 * can only be polled for. */
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += (long)backoff * 1000L;
			if (ts.tv_nsec >= 1000000000L) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000L;
			}
			pthread_cond_timedwait(&p->wake, &p->mu, &ts);
			backoff = backoff * 2 > BACKOFF_MAX_US ? BACKOFF_MAX_US
							       : backoff * 2;
		}
	}
	/* Byes not received now never will be; those sent go on alone. */
	if (p->bye_in != MPI_REQUEST_NULL) {
		MPI_Cancel(&p->bye_in);
		MPI_Request_free(&p->bye_in);
	}
	for (unsigned r = 0; p->bye_out && r < p->size; r++)
		if (p->bye_out[r] != MPI_REQUEST_NULL)
			MPI_Request_free(&p->bye_out[r]);
	free(p->bye_out);
	p->bye_out = NULL;
	/* Nobody will answer from now on. */
	for (unsigned i = 0; i < SLOTS; i++) {
		struct slot *s = &p->slots[i];
		if (s->rreq != MPI_REQUEST_NULL &&
		    (s->state == S_SENT || s->state == S_ABANDONED)) {
			MPI_Cancel(&s->rreq);
			MPI_Request_free(&s->rreq);
		}
		if (s->sreq != MPI_REQUEST_NULL)
			MPI_Request_free(&s->sreq);
		if (s->state == S_SENT || s->state == S_QUEUED) {
			s->result = -EHOSTDOWN;
			s->state = S_DONE;
			pthread_cond_signal(&s->cv);
		}
	}
	p->finished = 1;
	pthread_cond_broadcast(&p->cv);
	int abandon = p->abandon;
	pthread_mutex_unlock(&p->mu);
	if (abandon)
		/* MPI_Finalize would wait for the missing ranks too. */
		dlfs_logf(p->conf.log, p->conf.arg, LOG_WARNING, "not every rank left the job: leaving without "
			"MPI_Finalize");
	else if (p->mpi_started)
		MPI_Finalize();
	return NULL;
}

/* ---- server threads ---- */

static void *server_main(void *arg)
{
	struct dlfs_peer *p = arg;
	void *ctx = p->conf.ctx_new ? p->conf.ctx_new(p->conf.arg) : NULL;
	pthread_mutex_lock(&p->mu);
	for (;;) {
		struct reply *r = NULL;
		while (!p->stop_servers) {
			r = NULL;
			for (unsigned i = 0; i < p->n_replies && !r; i++)
				if (!p->replies[i].in_use)
					r = &p->replies[i];
			if (p->jobs_len && r)
				break;
			pthread_cond_wait(&p->cv, &p->mu);
		}
		if (p->stop_servers)
			break;
		struct job j = p->jobs[p->jobs_head];
		p->jobs_head = (p->jobs_head + 1) % p->jobs_cap;
		p->jobs_len--;
		r->in_use = 1;
		pthread_mutex_unlock(&p->mu);

		size_t len = 0;
		int st = j.g < p->conf.n_chunks
				 ? p->conf.serve(p->conf.arg, ctx, j.g,
						 r->buf + HDR, p->conf.chunk_size,
						 &len)
				 : -EINVAL;
		dlfs_put_le64(r->buf, j.g);
		dlfs_put_le32(r->buf + 8, st < 0 ? (uint32_t)-st : 0);
		dlfs_put_le32(r->buf + 12, st ? 0 : (uint32_t)len);

		pthread_mutex_lock(&p->mu);
		r->len = st ? 0 : len;
		r->dst = j.src;
		r->slot = j.slot;
		r->ready = 1;
		pthread_cond_signal(&p->wake);
		p->st.served++;
		p->st.served_bytes += r->len;
	}
	pthread_mutex_unlock(&p->mu);
	if (ctx && p->conf.ctx_free)
		p->conf.ctx_free(p->conf.arg, ctx);
	return NULL;
}

/* ---- the API ---- */

static void free_peer(struct dlfs_peer *p)
{
	for (unsigned i = 0; i < SLOTS; i++) {
		free(p->slots[i].rbuf);
		pthread_cond_destroy(&p->slots[i].cv);
	}
	for (unsigned i = 0; p->replies && i < p->n_replies; i++)
		free(p->replies[i].buf);
	free(p->replies);
	free(p->jobs);
	free(p->servers);
	free(p->dead_until);
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->cv);
	pthread_cond_destroy(&p->wake);
	free(p);
}

int dlfs_peer_open(const struct dlfs_peer_conf *conf, struct dlfs_peer **out,
		   struct dlfs_err *err)
{
	*out = NULL;
	if (!conf->force && dlfs_launch_size() <= 1)
		return 0;
	struct dlfs_peer *p = calloc(1, sizeof(*p));
	if (!p)
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	p->conf = *conf;
	if (!p->conf.timeout_ms)
		p->conf.timeout_ms = 5000;
	if (!p->conf.servers)
		p->conf.servers = 2;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	pthread_cond_init(&p->wake, NULL);
	for (unsigned i = 0; i < SLOTS; i++)
		pthread_cond_init(&p->slots[i].cv, NULL);
	p->jobs_cap = 4 * SLOTS;
	p->jobs = calloc(p->jobs_cap, sizeof(*p->jobs));
	p->n_replies = 2 * p->conf.servers;
	p->replies = calloc(p->n_replies, sizeof(*p->replies));
	if (!p->jobs || !p->replies) {
		free_peer(p);
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	}
	int ret = pthread_create(&p->mpi_thread, NULL, mpi_main, p);
	if (ret) {
		free_peer(p);
		return dlfs_err_set(err, -ret, "MPI thread");
	}
	/* MPI_Init and the first collective wait for every rank, forever
	 * when one died on the way: bound the wait. */
	unsigned limit = p->conf.join_timeout_ms ? p->conf.join_timeout_ms
						 : JOIN_DEFAULT_MS;
	struct timespec dl;
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += limit / 1000;
	dl.tv_nsec += (long)(limit % 1000) * 1000000L;
	if (dl.tv_nsec >= 1000000000L) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&p->mu);
	int waited = 0;
	while (!p->init_done && waited != ETIMEDOUT)
		waited = pthread_cond_timedwait(&p->cv, &p->mu, &dl);
	ret = p->init_done ? p->init_ret : -ETIMEDOUT;
	pthread_mutex_unlock(&p->mu);
	if (ret == -ETIMEDOUT) {
		/* The MPI thread cannot be stopped inside MPI: leave it (and
		 * p, which it uses) to the exit that follows. */
		pthread_detach(p->mpi_thread);
		return dlfs_err_set(err, -ETIMEDOUT,
				    "MPI: not every rank joined the job within "
				    "%u s (a rank died or hangs in MPI_Init, "
				    "or never started): giving up; see "
				    "-o join_timeout",
				    (limit + 999) / 1000);
	}
	if (ret) {
		dlfs_err_set(err, ret, "MPI: %s", p->init_msg);
		pthread_join(p->mpi_thread, NULL);
		free_peer(p);
		return ret;
	}
	p->dead_until = calloc(p->size, sizeof(*p->dead_until));
	if (!p->dead_until) {
		*out = p;
		dlfs_peer_close(p);
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	}
	*out = p;
	return 0;
}

int dlfs_peer_start(struct dlfs_peer *p, struct dlfs_err *err)
{
	p->servers = calloc(p->conf.servers, sizeof(*p->servers));
	if (!p->servers)
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	for (unsigned i = 0; i < p->n_replies; i++)
		if (!(p->replies[i].buf = malloc(HDR + p->conf.chunk_size)))
			return dlfs_err_set(err, -ENOMEM, "out of memory");
	for (unsigned i = 0; i < p->conf.servers; i++) {
		int ret = pthread_create(&p->servers[i], NULL, server_main, p);
		if (ret)
			return dlfs_err_set(err, -ret, "peer server thread");
		p->n_servers++;
	}
	return 0;
}

void dlfs_peer_close(struct dlfs_peer *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->leaving = 1;
	pthread_cond_signal(&p->wake);
	while (!p->finished)
		pthread_cond_wait(&p->cv, &p->mu);
	p->stop_servers = 1;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	for (unsigned i = 0; i < p->n_servers; i++)
		pthread_join(p->servers[i], NULL);
	pthread_join(p->mpi_thread, NULL);
	free_peer(p);
}

int dlfs_peer_get(struct dlfs_peer *p, uint64_t g, void *buf, size_t cap,
		  size_t *len)
{
	unsigned home = dlfs_peer_home(p, g);
	double t0 = now_s();
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	double real_deadline = (double)ts.tv_sec + ts.tv_nsec / 1e9 +
			       p->conf.timeout_ms / 1000.0;
	ts.tv_sec = (time_t)real_deadline;
	ts.tv_nsec = (long)((real_deadline - (double)ts.tv_sec) * 1e9);

	pthread_mutex_lock(&p->mu);
	p->st.requests++;
	if (home == p->rank || p->finished || p->leaving ||
	    p->dead_until[home] > t0) {
		pthread_mutex_unlock(&p->mu);
		return -EHOSTDOWN;
	}
	struct slot *s = NULL;
	while (!s) {
		for (unsigned i = 0; i < SLOTS && !s; i++)
			if (p->slots[i].state == S_FREE)
				s = &p->slots[i];
		if (!s && pthread_cond_timedwait(&p->cv, &p->mu, &ts)) {
			p->st.timeouts++;
			pthread_mutex_unlock(&p->mu);
			return -ETIMEDOUT;
		}
	}
	if (!s->rbuf && !(s->rbuf = malloc(HDR + p->conf.chunk_size))) {
		pthread_mutex_unlock(&p->mu);
		return -ENOMEM;
	}
	s->g = g;
	s->home = home;
	s->buf = buf;
	s->cap = cap;
	s->len = 0;
	s->cancelled = 0;
	s->sreq = s->rreq = MPI_REQUEST_NULL;
	s->t0 = t0;
	s->state = S_QUEUED;
	pthread_cond_signal(&p->wake);
	while (s->state != S_DONE) {
		if (s->state != S_COPYING &&
		    pthread_cond_timedwait(&s->cv, &p->mu, &ts) &&
		    s->state != S_DONE && s->state != S_COPYING) {
			/* Too slow or gone: the PFS instead, and skip this
			 * peer for a while. */
			s->state = S_ABANDONED;
			p->st.timeouts++;
			p->dead_until[home] = now_s() + DEAD_MS / 1000.0;
			pthread_mutex_unlock(&p->mu);
			dlfs_logf(p->conf.log, p->conf.arg, LOG_WARNING,
			     "peer rank %u did not answer for chunk %llu within "
			     "%u ms: reading from the PFS, and skipping it for "
			     "%d s",
			     home, (unsigned long long)g, p->conf.timeout_ms,
			     DEAD_MS / 1000);
			return -ETIMEDOUT;
		}
		if (s->state == S_COPYING)
			pthread_cond_wait(&s->cv, &p->mu);
	}
	int ret = s->result;
	*len = s->len;
	s->state = S_FREE;
	pthread_cond_broadcast(&p->cv);
	if (!ret) {
		double us = (now_s() - t0) * 1e6;
		p->st.hits++;
		p->st.bytes += *len;
		p->st.latency_us_sum += (uint64_t)us;
		if ((uint64_t)us > p->st.latency_us_max)
			p->st.latency_us_max = (uint64_t)us;
		unsigned b = 0;
		while (b < DLFS_PEER_LAT_BUCKETS - 1 && us > (16u << b))
			b++;
		p->st.latency_hist[b]++;
	} else if (ret == -ECONNRESET) {
		/* As for a timeout: the PFS instead, and skip this peer. */
		p->st.lost++;
		p->dead_until[home] = now_s() + DEAD_MS / 1000.0;
	} else {
		p->st.errors++;
	}
	pthread_mutex_unlock(&p->mu);
	if (ret == -ECONNRESET)
		dlfs_logf(p->conf.log, p->conf.arg, LOG_WARNING,
			  "peer rank %u is gone (MPI reports its failure) "
			  "for chunk %llu: reading from the PFS, and skipping "
			  "it for %d s",
			  home, (unsigned long long)g, DEAD_MS / 1000);
	return ret;
}

void dlfs_peer_get_stats(struct dlfs_peer *p, struct dlfs_peer_stats *s)
{
	pthread_mutex_lock(&p->mu);
	*s = p->st;
	pthread_mutex_unlock(&p->mu);
}

void dlfs_peer_mpi_library(char *buf, size_t len)
{
	char v[MPI_MAX_LIBRARY_VERSION_STRING];
	int n = 0;
	if (!len)
		return;
	if (MPI_Get_library_version(v, &n) != MPI_SUCCESS || n <= 0) {
		snprintf(buf, len, "unknown (MPI_Get_library_version failed)");
		return;
	}
	/* One line, runs of blanks as one space: MPICH says "MPICH
	 * Version:\t4.0.2" and goes on for lines. */
	size_t o = 0;
	for (int i = 0; i < n && v[i] && v[i] != '\n' && o + 1 < len; i++) {
		int blank = v[i] == ' ' || v[i] == '\t';
		if (!blank || (o && buf[o - 1] != ' '))
			buf[o++] = blank ? ' ' : v[i];
	}
	while (o && buf[o - 1] == ' ')
		o--;
	buf[o] = 0;
}
