/*
 * Serving peers, as the home of a range of chunks (or a gone home's
 * substitute): requests are taken in by the MPI thread and served by the
 * server threads through this node's tiers; while a rank waits for its
 * answers, it is sent a heartbeat every HEARTBEAT_MS, so that it waits
 * for a busy home instead of reading the PFS. See peer_home_priv.h.
 */
#include "peer_home_priv.h"

#include <errno.h>
#include <string.h>

#include "dlfs/format.h"

/* Take in the peers' requests: each rank has SLOTS at most, so the queue
 * (SLOTS per rank) always has room. */
static int take_requests(struct dlfs_peer *p, double now)
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
		if (j->src < p->size) {
			dlfs_peer_heard(p, j->src, now);
			p->ranks[j->src].owed++;
		}
		pthread_cond_broadcast(&p->cv);
		work++;
	}
	return work;
}

/* Send the served replies, and free those sent. */
static int send_replies(struct dlfs_peer *p)
{
	int work = 0;
	for (unsigned i = 0; i < p->n_replies; i++) {
		struct reply *r = &p->replies[i];
		if (r->ready && !r->sending) {
			if (r->dst < p->size && p->ranks[r->dst].owed)
				p->ranks[r->dst].owed--;
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

/* A heartbeat to each rank this one owes answers, every HEARTBEAT_MS. An
 * empty message needs no buffer: its request is freed at once. */
static int heartbeats(struct dlfs_peer *p, double now)
{
	int work = 0;
	for (unsigned r = 0; r < p->size; r++) {
		struct rank_state *rs = &p->ranks[r];
		if (!rs->owed || now - rs->alive_sent < HEARTBEAT_MS / 1000.0)
			continue;
		MPI_Request req;
		if (MPI_Isend(NULL, 0, MPI_BYTE, (int)r, TAG_ALIVE,
			      MPI_COMM_WORLD, &req) == MPI_SUCCESS)
			MPI_Request_free(&req);
		rs->alive_sent = now;
		p->st.heartbeats_sent++;
		work++;
	}
	return work;
}

int dlfs_peer_serving(struct dlfs_peer *p)
{
	double now = dlfs_peer_now();
	return take_requests(p, now) + send_replies(p) + heartbeats(p, now);
}

/* The next job and a free reply buffer, waiting for both. Caller holds
 * mu. @return 0, or 1 when the servers stop. */
static int next_job(struct dlfs_peer *p, struct job *j, struct reply **out)
{
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
		return 1;
	*j = p->jobs[p->jobs_head];
	p->jobs_head = (p->jobs_head + 1) % p->jobs_cap;
	p->jobs_len--;
	r->in_use = 1;
	*out = r;
	return 0;
}

void *dlfs_peer_server_main(void *arg)
{
	struct dlfs_peer *p = arg;
	void *ctx = p->conf.ctx_new ? p->conf.ctx_new(p->conf.arg) : NULL;
	pthread_mutex_lock(&p->mu);
	for (;;) {
		struct job j;
		struct reply *r;
		if (next_job(p, &j, &r))
			break;
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
