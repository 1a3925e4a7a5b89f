/* Sequential read-ahead: see prefetch.h. */
#include "prefetch.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define STRIPES 64
/* Steps to the next chunk in a row before a reader is a stream. One step
 * is not enough: a random reader lands on the chunk after its last one
 * once per n_chunks reads, and a dataset of a few hundred chunks then
 * starts a false stream every few hundred reads, each of which reads
 * whole chunks and queues more (measured: 307 chunks streamed, 206 of
 * them wasted, in 30 s of random reads over 66 chunks). */
#define MIN_RUN 2
/* Fewer chunks make false runs likelier: a random reader steps to the
 * next chunk once per n reads, and staying on its chunk (once per n) does
 * not break a run, so a run of r steps comes about once per n^r reads.
 * A container of fewer than about 32 chunks needs longer runs, so that
 * false streams stay near one in 10^3 reads (measured: 4,000 random
 * reads over one container of 14 chunks started 9-23 streams with runs
 * of 2, each reading whole chunks nobody asked for). */
#define FALSE_RUN_ODDS 1000.0

struct stream {
	uint64_t last; /* last chunk a demand read touched; UINT64_MAX none */
	uint64_t next; /* first chunk not queued yet */
	uint32_t window; /* chunks ahead; 0 = no stream */
	uint32_t run;    /* steps to the next chunk in a row */
	uint32_t min_run; /* steps that make a stream, for its container */
	int handed; /* its stream went on in the next container already */
	uint64_t wasted_seen;
};

struct dlfs_prefetch {
	struct dlfs_cache *cache;
	struct dlfs_fill *_Atomic fill;
	struct dlfs_ds *ds;
	uint32_t n_containers;
	uint32_t window_max; /* chunks */
	struct stream *streams;
	pthread_mutex_t stripe[STRIPES];
};

/* The window a stream that ran to the last chunk of container c - 1
 * (or the one before it: a reader of its last may not have told yet)
 * hands on to c, whose chunk 0 comes next in the containers' order (a
 * reader of shards one after another); 0: none. Once: take marks it
 * handed on, so that random readers who later touch c's chunk 0 start
 * no stream from it (the stream of c - 1 stays at its end until a jump
 * there). Takes c - 1's stripe alone: no caller holds another. */
static uint32_t carried(struct dlfs_prefetch *pf, uint32_t c, int take)
{
	if (c == 0)
		return 0;
	struct stream *p = &pf->streams[c - 1];
	uint64_t nk = dlfs_ds_container(pf->ds, c - 1)->n_chunks;
	pthread_mutex_t *mu = &pf->stripe[(c - 1) % STRIPES];
	pthread_mutex_lock(mu);
	uint32_t w = !p->handed && p->run >= p->min_run &&
				     p->last != UINT64_MAX && p->last + 2 >= nk
			     ? (p->window ? p->window : 1)
			     : 0;
	if (w && take)
		p->handed = 1;
	pthread_mutex_unlock(mu);
	return w;
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
	/* Asked before c's stripe is taken: one stripe at a time. (Two
	 * readers may both take it: the second finds c's stream formed.) */
	uint32_t carry = 0;
	if (k == 0) {
		pthread_mutex_lock(mu);
		int formed = s->run >= s->min_run;
		pthread_mutex_unlock(mu);
		carry = formed ? 0 : carried(pf, c, 1);
	}

	pthread_mutex_lock(mu);
	/* The same chunk again; or, after a step, the chunk before the
	 * last: a second reader just behind the first (readers that start
	 * together at chunk 0 step apart, and would otherwise never make
	 * a stream). */
	const int carry_on = carry && s->run < s->min_run;
	if ((k == s->last && !carry_on) ||
	    (s->run > 0 && s->last != UINT64_MAX && k + 1 == s->last)) {
		pthread_mutex_unlock(mu);
		return;
	}
	if (s->last != UINT64_MAX && k == s->last + 1) {
		s->run++;
	} else if (carry_on) {
		s->run = s->min_run; /* the last container's stream goes on */
		s->window = carry;
		s->next = 1;
	} else {
		s->run = 0;
		s->handed = 0; /* a new stream here may hand on again */
	}
	if (s->run >= s->min_run && pf->window_max) {
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
	struct dlfs_fill *f = atomic_load(&pf->fill);
	for (uint64_t j = from; f && from && j <= to; j++)
		dlfs_fill_stream(f, c, j);
}

int dlfs_prefetch_in_stream(struct dlfs_prefetch *pf, uint32_t c,
			    uint64_t k)
{
	if (!pf || c >= pf->n_containers)
		return 0;
	pthread_mutex_t *mu = &pf->stripe[c % STRIPES];
	pthread_mutex_lock(mu);
	uint64_t last = pf->streams[c].last;
	uint32_t run = pf->streams[c].run;
	uint32_t min_run = pf->streams[c].min_run;
	pthread_mutex_unlock(mu);
	/* Steps to the next chunk were seen: random readers that happen to
	 * touch the same chunk twice, or the next one once, are not a
	 * stream. */
	if (run >= min_run && (k == last || k == last + 1))
		return 1;
	/* Chunk 0 after a stream that ended the container before. */
	return k == 0 && carried(pf, c, 0) != 0;
}

/* The steps that make a stream in a container of n chunks: the fewest r
 * >= MIN_RUN with n^r >= FALSE_RUN_ODDS. */
static uint32_t min_run(uint64_t n)
{
	uint32_t r = MIN_RUN;
	double odds = 1.0;
	for (uint32_t i = 0; i < r; i++)
		odds *= (double)(n > 1 ? n : 2);
	for (; odds < FALSE_RUN_ODDS && r < 16; r++)
		odds *= (double)(n > 1 ? n : 2);
	return r;
}

int dlfs_prefetch_new(const struct dlfs_prefetch_conf *conf,
		      struct dlfs_prefetch **out, struct dlfs_err *err)
{
	*out = NULL;
	struct dlfs_prefetch *pf = calloc(1, sizeof(*pf));
	if (!pf)
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	const struct dlfs_info *info = dlfs_ds_info(conf->ds);
	pf->cache = conf->cache;
	atomic_init(&pf->fill, conf->fill);
	pf->ds = conf->ds;
	pf->n_containers = (uint32_t)info->super.n_containers;
	uint64_t w = conf->window_max / info->super.chunk_size;
	pf->window_max = conf->window_max ? (uint32_t)(w < 1 ? 1 : w > 4096 ? 4096 : w) : 0;
	pf->streams = calloc(pf->n_containers ? pf->n_containers : 1,
			     sizeof(*pf->streams));
	if (!pf->streams) {
		free(pf);
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	}
	for (uint32_t c = 0; c < pf->n_containers; c++) {
		pf->streams[c].last = UINT64_MAX;
		pf->streams[c].min_run =
			min_run(dlfs_ds_container(conf->ds, c)->n_chunks);
	}
	for (int i = 0; i < STRIPES; i++)
		pthread_mutex_init(&pf->stripe[i], NULL);
	*out = pf;
	return 0;
}

void dlfs_prefetch_set_fill(struct dlfs_prefetch *pf, struct dlfs_fill *f)
{
	if (pf)
		atomic_store(&pf->fill, f);
}

void dlfs_prefetch_free(struct dlfs_prefetch *pf)
{
	if (!pf)
		return;
	for (int i = 0; i < STRIPES; i++)
		pthread_mutex_destroy(&pf->stripe[i]);
	free(pf->streams);
	free(pf);
}
