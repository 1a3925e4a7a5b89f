/* Sequential read-ahead: see prefetch.h. */
#include "prefetch.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define STRIPES 64
#define QUEUE 1024
#define YIELD_MS 20 /* longest a prefetch waits for demand loads */
#define RETRY_MS 50 /* longest it waits for the cache to have room */

struct stream {
	uint64_t last; /* last chunk a demand read touched; UINT64_MAX none */
	uint64_t next; /* first chunk not queued yet */
	uint32_t window; /* chunks ahead; 0 = no stream */
	uint64_t wasted_seen;
};

struct req {
	uint32_t c;
	uint64_t k;
};

struct dlfs_prefetch {
	struct dlfs_cache *cache;
	struct dlfs_ds *ds;
	uint32_t n_containers;
	uint32_t window_max; /* chunks */
	struct stream *streams;
	pthread_mutex_t stripe[STRIPES];

	pthread_mutex_t qmu; /* guards the queue and stop */
	pthread_cond_t qcv;
	struct req q[QUEUE];
	unsigned q_head, q_len;
	int stop;
	unsigned n_threads;
	pthread_t *threads;
	_Atomic uint64_t dropped, planned;
};

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {0, (long)ms * 1000000L};
	nanosleep(&ts, NULL);
}

static void enqueue(struct dlfs_prefetch *pf, uint32_t c, uint64_t k)
{
	pthread_mutex_lock(&pf->qmu);
	if (pf->q_len == QUEUE) {
		pthread_mutex_unlock(&pf->qmu);
		atomic_fetch_add_explicit(&pf->dropped, 1,
					  memory_order_relaxed);
		return;
	}
	pf->q[(pf->q_head + pf->q_len) % QUEUE] = (struct req){c, k};
	pf->q_len++;
	pthread_cond_signal(&pf->qcv);
	pthread_mutex_unlock(&pf->qmu);
}

void dlfs_prefetch_note(struct dlfs_prefetch *pf, uint32_t c, uint64_t k,
			int was_prefetched)
{
	if (!pf || c >= pf->n_containers)
		return;
	struct dlfs_cache_stats cs;
	struct stream *s = &pf->streams[c];
	uint64_t from = 0, to = 0;
	pthread_mutex_t *mu = &pf->stripe[c % STRIPES];

	pthread_mutex_lock(mu);
	if (k == s->last) {
		pthread_mutex_unlock(mu);
		return;
	}
	if (s->last != UINT64_MAX && k == s->last + 1) {
		dlfs_cache_get_stats(pf->cache, &cs);
		if (cs.pf_wasted > s->wasted_seen && s->window > 1)
			s->window /= 2; /* guesses were wasted */
		else if (!s->window)
			s->window = 2;
		else if (was_prefetched)
			s->window *= 2; /* guesses were used */
		s->wasted_seen = cs.pf_wasted;
		if (s->window > pf->window_max)
			s->window = pf->window_max;
		from = s->next > k + 1 ? s->next : k + 1;
		to = k + s->window; /* inclusive */
		uint64_t nk = dlfs_ds_container(pf->ds, c)->n_chunks;
		if (to >= nk)
			to = nk - 1;
		if (to >= from)
			s->next = to + 1;
	} else {
		s->window = 0; /* a jump: no stream (yet) */
		s->next = k + 1;
	}
	s->last = k;
	pthread_mutex_unlock(mu);
	for (uint64_t j = from; from && j <= to; j++)
		enqueue(pf, c, j);
}

void dlfs_prefetch_plan(struct dlfs_prefetch *pf, const uint32_t *c,
			const uint64_t *k, unsigned n)
{
	if (!pf)
		return;
	for (unsigned i = 0; i < n; i++)
		if (c[i] < pf->n_containers && k[i] < dlfs_ds_container(pf->ds, c[i])->n_chunks)
			enqueue(pf, c[i], k[i]);
	atomic_fetch_add_explicit(&pf->planned, n, memory_order_relaxed);
}

uint64_t dlfs_prefetch_planned(struct dlfs_prefetch *pf)
{
	return pf ? atomic_load(&pf->planned) : 0;
}

int dlfs_prefetch_in_stream(struct dlfs_prefetch *pf, uint32_t c,
			    uint64_t k)
{
	if (!pf || c >= pf->n_containers)
		return 0;
	pthread_mutex_t *mu = &pf->stripe[c % STRIPES];
	pthread_mutex_lock(mu);
	uint64_t last = pf->streams[c].last;
	pthread_mutex_unlock(mu);
	return last != UINT64_MAX && (k == last || k == last + 1);
}

uint64_t dlfs_prefetch_dropped(struct dlfs_prefetch *pf)
{
	return pf ? atomic_load(&pf->dropped) : 0;
}

static void *worker(void *arg)
{
	struct dlfs_prefetch *pf = arg;
	struct dlfs_txn *txn = NULL;
	struct dlfs_err err = {0};
	int have_txn = dlfs_txn_begin(pf->ds, &txn, &err) == 0;

	pthread_mutex_lock(&pf->qmu);
	while (!pf->stop) {
		if (!pf->q_len) {
			pthread_cond_wait(&pf->qcv, &pf->qmu);
			continue;
		}
		struct req r = pf->q[pf->q_head];
		pf->q_head = (pf->q_head + 1) % QUEUE;
		pf->q_len--;
		pthread_mutex_unlock(&pf->qmu);

		if (!have_txn)
			goto next;
		/* Demand first: hold back while demand loads are running. */
		for (unsigned ms = 0;
		     ms < YIELD_MS && dlfs_cache_demand_loading(pf->cache);
		     ms++)
			sleep_ms(1);
		for (unsigned ms = 0;; ms += 2) {
			int ret = dlfs_cache_prefetch(pf->cache, r.c, r.k, txn,
						      &err);
			if (ret != -EAGAIN)
				break; /* done, or a load error: the demand
					  read will meet and report it */
			if (ms >= RETRY_MS) {
				atomic_fetch_add_explicit(
					&pf->dropped, 1, memory_order_relaxed);
				break;
			}
			sleep_ms(2);
		}
	next:
		pthread_mutex_lock(&pf->qmu);
	}
	pthread_mutex_unlock(&pf->qmu);
	if (txn)
		dlfs_txn_end(txn);
	return NULL;
}

int dlfs_prefetch_new(const struct dlfs_prefetch_conf *conf,
		      struct dlfs_prefetch **out, struct dlfs_err *err)
{
	int ret;
	*out = NULL;
	struct dlfs_prefetch *pf = calloc(1, sizeof(*pf));
	if (!pf)
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	pf->cache = conf->cache;
	pf->ds = conf->ds;
	pf->n_containers = (uint32_t)dlfs_ds_info(conf->ds)->super.n_containers;
	uint64_t w = conf->window_max / dlfs_ds_info(conf->ds)->super.chunk_size;
	pf->window_max = (uint32_t)(w < 1 ? 1 : w > 4096 ? 4096 : w);
	pf->streams = calloc(pf->n_containers ? pf->n_containers : 1,
			     sizeof(*pf->streams));
	pf->threads = calloc(conf->threads ? conf->threads : 1,
			     sizeof(*pf->threads));
	if (!pf->streams || !pf->threads) {
		free(pf->streams);
		free(pf->threads);
		free(pf);
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	}
	for (uint32_t c = 0; c < pf->n_containers; c++)
		pf->streams[c].last = UINT64_MAX;
	for (int i = 0; i < STRIPES; i++)
		pthread_mutex_init(&pf->stripe[i], NULL);
	pthread_mutex_init(&pf->qmu, NULL);
	pthread_cond_init(&pf->qcv, NULL);
	/* Two windows' worth of unread prefetches at most. */
	dlfs_cache_set_prefetch_limit(conf->cache, 2 * pf->window_max);
	for (unsigned i = 0; i < conf->threads; i++) {
		ret = pthread_create(&pf->threads[i], NULL, worker, pf);
		if (ret) {
			dlfs_prefetch_free(pf);
			return dlfs_err_set(err, -ret, "prefetch thread");
		}
		pf->n_threads++;
	}
	*out = pf;
	return 0;
}

void dlfs_prefetch_free(struct dlfs_prefetch *pf)
{
	if (!pf)
		return;
	pthread_mutex_lock(&pf->qmu);
	pf->stop = 1;
	pthread_cond_broadcast(&pf->qcv);
	pthread_mutex_unlock(&pf->qmu);
	for (unsigned i = 0; i < pf->n_threads; i++)
		pthread_join(pf->threads[i], NULL);
	dlfs_cache_set_prefetch_limit(pf->cache, 0);
	for (int i = 0; i < STRIPES; i++)
		pthread_mutex_destroy(&pf->stripe[i]);
	pthread_mutex_destroy(&pf->qmu);
	pthread_cond_destroy(&pf->qcv);
	free(pf->streams);
	free(pf->threads);
	free(pf);
}
