/*
 * The MPI thread (peer_thread_priv.h): it makes every MPI call of the daemon.
 * It sends this rank's queued requests and takes in their replies, hears
 * heartbeats, runs the home's side (peer_home.c) and, at the end, the
 * byes and the barrier that let every rank leave together.
 */
#include "peer_thread_priv.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

#include "dlfs/format.h"
#include "peer_home_priv.h"
#include "peer_join_priv.h"

/* The MPI thread was lag seconds late (negative: woken early). */
static void lag(struct dlfs_peer *p, double lag)
{
	uint64_t us = lag > 0 ? (uint64_t)(lag * 1e6) : 0;
	p->st.mpi_waits++;
	p->st.mpi_lag_us_sum += us;
	if (us > p->st.mpi_lag_us_max)
		p->st.mpi_lag_us_max = us;
}

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
	if (!gone && MPI_Test_cancelled(&status, &cancelled) == MPI_SUCCESS &&
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

void *dlfs_peer_mpi_main(void *arg)
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
			if (MPI_Ibarrier(MPI_COMM_WORLD, &barrier) !=
			    MPI_SUCCESS)
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
		dlfs_logf(p->conf.log, p->conf.arg, LOG_WARNING,
			  "not every rank left the job: leaving without "
			  "MPI_Finalize");
	else if (p->mpi_started)
		MPI_Finalize();
	return NULL;
}
