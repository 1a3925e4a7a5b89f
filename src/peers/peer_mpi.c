/*
 * Many nodes over MPI: see peer.h and peer_mpi_priv.h. This file holds
 * the MPI thread and the requests this rank makes of its peers.
 */
#include "launch.h"
#include "peer_mpi_priv.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

#include "dlfs/format.h"

double dlfs_peer_now(void)
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

/* ---- who is there ---- */

void dlfs_peer_heard(struct dlfs_peer *p, unsigned src, double now)
{
	if (src >= p->size)
		return;
	struct rank_state *rs = &p->ranks[src];
	if (rs->waiting) {
		double from = rs->heard > rs->since ? rs->heard : rs->since;
		if (now - from > rs->gap_max)
			rs->gap_max = now - from;
	}
	rs->heard = now;
	if (rs->gone) {
		rs->gone = 0;
		p->st.back++;
	}
}

/* How long rank r may be silent while this one waits on it before it is
 * gone: the option, or SILENCE_GAPS times its longest silence so far,
 * whichever is longer, but never more than ten times the option. */
static double silence_limit(const struct dlfs_peer *p, unsigned r)
{
	double floor = p->conf.timeout_ms / 1000.0;
	double seen = SILENCE_GAPS * p->ranks[r].gap_max;
	return seen < floor ? floor : seen > 10 * floor ? 10 * floor : seen;
}

/* Has rank r been silent past its limit while this one waits on it? */
static double silent_for(const struct dlfs_peer *p, unsigned r, double now)
{
	const struct rank_state *rs = &p->ranks[r];
	double from = rs->heard > rs->since ? rs->heard : rs->since;
	return rs->waiting ? now - from : 0;
}

/* Where to ask for chunk g: its home, or the home's substitute when it
 * is gone, the next rank after it that is not (this one, possibly). */
static unsigned route(const struct dlfs_peer *p, uint64_t g)
{
	unsigned h = dlfs_peer_home(p, g);
	for (unsigned i = 0; i < p->size; i++) {
		unsigned r = (h + i) % p->size;
		if (r == p->rank || !p->ranks[r].gone)
			return r;
	}
	return p->rank;
}

/* The MPI thread was lag seconds late (negative: woken early). */
static void lag(struct dlfs_peer *p, double lag)
{
	uint64_t us = lag > 0 ? (uint64_t)(lag * 1e6) : 0;
	p->st.mpi_waits++;
	p->st.mpi_lag_us_sum += us;
	if (us > p->st.mpi_lag_us_max)
		p->st.mpi_lag_us_max = us;
}

/* ---- the MPI thread's work ---- */

/* The slot's end: result r, its caller woken. Caller holds mu. */
static void slot_done(struct slot *s, int r)
{
	s->result = r;
	s->state = S_DONE;
	pthread_cond_signal(&s->cv);
}

/* A queued request of slot i out: its reply's receive posted first, then
 * the request. Caller holds mu. */
static void send_request(struct dlfs_peer *p, struct slot *s, unsigned i)
{
	dlfs_put_le64(s->out, s->g);
	dlfs_put_le32(s->out + 8, i);
	dlfs_put_le32(s->out + 12, 0);
	int bad = MPI_Irecv(s->rbuf, (int)(HDR + p->conf.chunk_size), MPI_BYTE,
			    (int)s->home, TAG_REPLY + (int)i, MPI_COMM_WORLD,
			    &s->rreq) != MPI_SUCCESS;
	if (!bad)
		bad = MPI_Isend(s->out, HDR, MPI_BYTE, (int)s->home, TAG_REQ,
				MPI_COMM_WORLD, &s->sreq) != MPI_SUCCESS;
	if (bad)
		slot_done(s, -ECONNRESET);
	else
		s->state = S_SENT;
}

/* The reply in s->rbuf to the caller's buffer, copied without the lock
 * (the caller waits through COPYING). Caller holds mu. */
static void take_reply(struct dlfs_peer *p, struct slot *s)
{
	/* The home has our request, so its send is over locally. */
	if (s->sreq != MPI_REQUEST_NULL)
		MPI_Wait(&s->sreq, MPI_STATUS_IGNORE);
	uint32_t st = dlfs_get_le32(s->rbuf + 8);
	uint32_t len = dlfs_get_le32(s->rbuf + 12);
	if (dlfs_get_le64(s->rbuf) != s->g || st || len > s->cap) {
		slot_done(s, st ? -(int)st : -EPROTO);
		return;
	}
	s->state = S_COPYING;
	pthread_mutex_unlock(&p->mu);
	memcpy(s->buf, s->rbuf + HDR, len);
	pthread_mutex_lock(&p->mu);
	s->len = len;
	slot_done(s, 0);
}

/* A sent or abandoned slot: its receive tested (an abandoned one
 * cancelled first), and what completed handled. Caller holds mu.
 * @return 1 if something completed. */
static int poll_slot(struct dlfs_peer *p, struct slot *s)
{
	int flag = 0;
	if (s->sreq != MPI_REQUEST_NULL)
		MPI_Test(&s->sreq, &flag, MPI_STATUS_IGNORE);
	if (s->state == S_ABANDONED && !s->cancelled) {
		MPI_Cancel(&s->rreq);
		s->cancelled = 1;
	}
	flag = 0;
	MPI_Status status;
	int gone = MPI_Test(&s->rreq, &flag, &status) != MPI_SUCCESS;
	if (!flag && !gone)
		return 0;
	/* An answer, late or not, says its home is alive; a receive that
	 * completes because it was cancelled says nothing. */
	int cancelled = 0;
	if (!gone &&
	    MPI_Test_cancelled(&status, &cancelled) == MPI_SUCCESS &&
	    !cancelled)
		dlfs_peer_heard(p, s->home, dlfs_peer_now());
	if (gone) {
		/* MPI says the peer is gone: nothing more will come for this
		 * slot, and its buffer holds no answer. */
		s->rreq = MPI_REQUEST_NULL;
		if (s->sreq != MPI_REQUEST_NULL)
			MPI_Request_free(&s->sreq);
	}
	if (s->state == S_ABANDONED) {
		if (s->sreq == MPI_REQUEST_NULL) { /* else wait for the send */
			s->state = S_FREE;
			pthread_cond_broadcast(&p->cv);
		}
	} else if (gone) {
		slot_done(s, -ECONNRESET);
	} else {
		take_reply(p, s);
	}
	return 1;
}

/* Send queued requests, collect replies, cancel abandoned receives.
 * Caller holds mu. @return work done. */
static int requests(struct dlfs_peer *p)
{
	int work = 0;
	for (unsigned i = 0; i < SLOTS; i++) {
		struct slot *s = &p->slots[i];
		if (s->state == S_QUEUED) {
			send_request(p, s, i);
			work++;
		} else if (s->state == S_SENT || s->state == S_ABANDONED) {
			work += poll_slot(p, s);
		}
	}
	return work;
}

/* Heartbeats from homes this rank waits on. Caller holds mu. */
static int alive_in(struct dlfs_peer *p)
{
	int work = 0, flag = 1;
	while (flag) {
		MPI_Status status;
		flag = 0;
		if (MPI_Iprobe(MPI_ANY_SOURCE, TAG_ALIVE, MPI_COMM_WORLD, &flag,
			       &status) != MPI_SUCCESS ||
		    !flag)
			break;
		if (MPI_Recv(NULL, 0, MPI_BYTE, status.MPI_SOURCE, TAG_ALIVE,
			     MPI_COMM_WORLD, MPI_STATUS_IGNORE) != MPI_SUCCESS)
			break;
		dlfs_peer_heard(p, (unsigned)status.MPI_SOURCE,
				dlfs_peer_now());
		p->st.heartbeats_heard++;
		work++;
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
	p->last_bye = dlfs_peer_now();
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

/* The home's queue and what this rank knows of the others, once the size
 * is known. @return 0 or -ENOMEM (p->init_msg says so). */
static int alloc_ranks(struct dlfs_peer *p)
{
	/* Each rank has SLOTS requests out at most: all fit. */
	p->jobs_cap = SLOTS * p->size;
	p->jobs = calloc(p->jobs_cap, sizeof(*p->jobs));
	p->ranks = calloc(p->size, sizeof(*p->ranks));
	if (p->jobs && p->ranks)
		return 0;
	snprintf(p->init_msg, sizeof(p->init_msg), "out of memory");
	return -ENOMEM;
}

/* Idle: back off, but wake at once for local work (a request to send, a
 * reply to send); peers' requests can only be polled for. Caller holds
 * mu. @return the next back-off. */
static unsigned idle_wait(struct dlfs_peer *p, unsigned backoff)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += (long)backoff * 1000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	double due = dlfs_peer_now() + backoff / 1e6;
	pthread_cond_timedwait(&p->wake, &p->mu, &ts);
	lag(p, dlfs_peer_now() - due);
	return backoff * 2 > BACKOFF_MAX_US ? BACKOFF_MAX_US : backoff * 2;
}

/* The MPI thread has stopped: byes not received now never will be (those
 * sent go on alone), and nobody will answer a request. Caller holds mu. */
static void wind_down(struct dlfs_peer *p)
{
	if (p->bye_in != MPI_REQUEST_NULL) {
		MPI_Cancel(&p->bye_in);
		MPI_Request_free(&p->bye_in);
	}
	for (unsigned r = 0; p->bye_out && r < p->size; r++)
		if (p->bye_out[r] != MPI_REQUEST_NULL)
			MPI_Request_free(&p->bye_out[r]);
	free(p->bye_out);
	p->bye_out = NULL;
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
}

static void *mpi_main(void *arg)
{
	struct dlfs_peer *p = arg;
	int ret = dlfs_peer_join(p);
	if (!ret)
		ret = alloc_ranks(p);
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
		int work = requests(p) + alive_in(p) + dlfs_peer_serving(p) +
			   byes(p);
		if (p->leaving && !in_barrier) {
			/* Keep serving until every rank is leaving too. */
			say_bye(p);
			if (MPI_Ibarrier(MPI_COMM_WORLD, &barrier) != MPI_SUCCESS)
				break;
			in_barrier = 1;
			left_at = dlfs_peer_now();
		}
		if (in_barrier) {
			int done = 0;
			if (MPI_Test(&barrier, &done, MPI_STATUS_IGNORE) !=
				    MPI_SUCCESS ||
			    done)
				break;
			/* A dead rank never arrives: do not wait forever. */
			unsigned limit = LEAVE_MIN_MS;
			double since = p->last_bye > left_at ? p->last_bye
							     : left_at;
			if (dlfs_peer_now() - since > limit / 1000.0) {
				p->abandon = 1;
				break;
			}
		}
		backoff = work ? BACKOFF_MIN_US : idle_wait(p, backoff);
	}
	wind_down(p);
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

/* ---- asking ---- */

/* Wait on cv for at most CHECK_MS: a caller looks again then. */
static void wait_check(pthread_cond_t *cv, pthread_mutex_t *mu)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += CHECK_MS * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_cond_timedwait(cv, mu, &ts);
}

/* A free slot, waiting for one. Caller holds mu. @return NULL when the
 * job is ending. */
static struct slot *take_slot(struct dlfs_peer *p)
{
	for (;;) {
		if (p->finished || p->leaving)
			return NULL;
		for (unsigned i = 0; i < SLOTS; i++)
			if (p->slots[i].state == S_FREE)
				return &p->slots[i];
		wait_check(&p->cv, &p->mu);
	}
}

/* Rank r is gone: say why, once. Caller holds mu, which is dropped to
 * log. */
static void declare_gone(struct dlfs_peer *p, unsigned r, uint64_t g,
			 double silent)
{
	if (p->ranks[r].gone)
		return;
	p->ranks[r].gone = 1;
	double limit = silence_limit(p, r);
	if (silent > 0)
		p->st.timeouts++;
	else
		p->st.lost++;
	unsigned sub = route(p, g);
	pthread_mutex_unlock(&p->mu);
	if (silent > 0)
		dlfs_logf(p->conf.log, p->conf.arg, LOG_WARNING,
			  "peer rank %u said nothing for %.1f s (its limit: "
			  "%.1f s) while chunk %llu was asked of it: it is "
			  "gone; its chunks go to rank %u",
			  r, silent, limit, (unsigned long long)g, sub);
	else
		dlfs_logf(p->conf.log, p->conf.arg, LOG_WARNING,
			  "peer rank %u is gone (MPI reports its failure) "
			  "for chunk %llu: its chunks go to rank %u",
			  r, (unsigned long long)g, sub);
	pthread_mutex_lock(&p->mu);
}

/* Wait for slot s's answer from rank to: as long as to is heard from.
 * Caller holds mu. @return 0 with *len, -EAGAIN when to is gone (ask
 * again), or the answer's error. */
static int wait_answer(struct dlfs_peer *p, struct slot *s, unsigned to,
		       size_t *len)
{
	while (s->state != S_DONE) {
		if (s->state == S_COPYING) {
			pthread_cond_wait(&s->cv, &p->mu);
			continue;
		}
		wait_check(&s->cv, &p->mu);
		if (s->state == S_DONE || s->state == S_COPYING)
			continue;
		double now = dlfs_peer_now(), silent = silent_for(p, to, now);
		if (!p->ranks[to].gone && silent <= silence_limit(p, to))
			continue;
		/* The MPI thread cancels the receive and frees the slot. */
		s->state = S_ABANDONED;
		pthread_cond_signal(&p->wake);
		declare_gone(p, to, s->g, silent);
		return -EAGAIN;
	}
	int ret = s->result;
	*len = s->len;
	s->state = S_FREE;
	pthread_cond_broadcast(&p->cv);
	if (ret == -ECONNRESET) {
		declare_gone(p, to, s->g, 0);
		return -EAGAIN;
	}
	return ret;
}

/* Ask rank to for chunk g. Caller holds mu. @return as wait_answer, or
 * -EHOSTDOWN when the job is ending. */
static int ask(struct dlfs_peer *p, unsigned to, uint64_t g, void *buf,
	       size_t cap, size_t *len)
{
	struct slot *s = take_slot(p);
	if (!s)
		return -EHOSTDOWN;
	if (!s->rbuf && !(s->rbuf = malloc(HDR + p->conf.chunk_size)))
		return -ENOMEM;
	s->g = g;
	s->home = to;
	s->buf = buf;
	s->cap = cap;
	s->len = 0;
	s->cancelled = 0;
	s->sreq = s->rreq = MPI_REQUEST_NULL;
	s->t0 = dlfs_peer_now();
	s->state = S_QUEUED;
	struct rank_state *rs = &p->ranks[to];
	if (!rs->waiting++)
		rs->since = s->t0;
	pthread_cond_signal(&p->wake);
	int ret = wait_answer(p, s, to, len);
	rs->waiting--;
	return ret;
}

/* Count an answer that took from t0 to now. Caller holds mu. */
static void count_answer(struct dlfs_peer *p, double t0, size_t len)
{
	double us = (dlfs_peer_now() - t0) * 1e6;
	p->st.hits++;
	p->st.bytes += len;
	p->st.latency_us_sum += (uint64_t)us;
	if ((uint64_t)us > p->st.latency_us_max)
		p->st.latency_us_max = (uint64_t)us;
	unsigned b = 0;
	while (b < DLFS_PEER_LAT_BUCKETS - 1 && us > (16u << b))
		b++;
	p->st.latency_hist[b]++;
}

int dlfs_peer_get(struct dlfs_peer *p, uint64_t g, void *buf, size_t cap,
		  size_t *len)
{
	unsigned home = dlfs_peer_home(p, g);
	double t0 = dlfs_peer_now();
	int ret;
	pthread_mutex_lock(&p->mu);
	p->st.requests++;
	for (;;) {
		if (p->finished || p->leaving) {
			ret = -EHOSTDOWN;
			break;
		}
		unsigned to = route(p, g);
		if (to == p->rank) {
			ret = home == p->rank ? -EHOSTDOWN : -EXDEV;
			break;
		}
		if (to != home)
			p->st.rerouted++;
		ret = ask(p, to, g, buf, cap, len);
		if (ret != -EAGAIN)
			break;
	}
	if (!ret)
		count_answer(p, t0, *len);
	else if (ret != -EXDEV && ret != -EHOSTDOWN)
		p->st.errors++;
	pthread_mutex_unlock(&p->mu);
	return ret;
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
	free(p->ranks);
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
		p->conf.timeout_ms = DLFS_PEER_TIMEOUT_DEFAULT_MS;
	if (!p->conf.servers)
		p->conf.servers = 2;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	pthread_cond_init(&p->wake, NULL);
	for (unsigned i = 0; i < SLOTS; i++)
		pthread_cond_init(&p->slots[i].cv, NULL);
	p->n_replies = 2 * p->conf.servers;
	p->replies = calloc(p->n_replies, sizeof(*p->replies));
	if (!p->replies) {
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
		int ret = pthread_create(&p->servers[i], NULL, dlfs_peer_server_main,
					 p);
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
