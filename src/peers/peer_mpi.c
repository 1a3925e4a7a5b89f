/*
 * Many nodes over MPI: see peer.h and peer_state_priv.h. This file holds the
 * API's life cycle (open, start, close) and its small questions; the MPI
 * thread is peer_thread.c, the requests peer_ask.c, the home's side
 * peer_home.c, joining the job peer_join.c.
 */
#include "launch.h"
#include "peer_home_priv.h"
#include "peer_thread_priv.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
	int ret = pthread_create(&p->mpi_thread, NULL, dlfs_peer_mpi_main, p);
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
		int ret = pthread_create(&p->servers[i], NULL,
					 dlfs_peer_server_main, p);
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
