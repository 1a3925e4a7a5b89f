/*
 * The requests this rank makes of its peers (dlfs_peer_get, peer.h): a
 * caller takes a slot, the MPI thread sends it and copies the reply in,
 * and the caller waits as long as the home is heard from; a gone home's
 * chunks are asked of its substitute (peer_state_priv.h).
 */
#include "peer_state_priv.h"

#include <errno.h>
#include <stdlib.h>
#include <syslog.h>
#include <time.h>

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
	double limit = dlfs_peer_silence_limit(p, r);
	if (silent > 0)
		p->st.timeouts++;
	else
		p->st.lost++;
	unsigned sub = dlfs_peer_route(p, g);
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
		double now = dlfs_peer_now(),
		       silent = dlfs_peer_silent_for(p, to, now);
		if (!p->ranks[to].gone &&
		    silent <= dlfs_peer_silence_limit(p, to))
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
		unsigned to = dlfs_peer_route(p, g);
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
