/* The decode threads: see decode.h. */
#include "decode.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct job {
	uint32_t c;
	uint64_t k;
	const struct dlfs_chunk_rec *cr;
	void *buf;
	size_t cap;
	size_t *len;
	struct dlfs_err *err;
	int ret, done;
	pthread_cond_t cv; /* done, under the pool's mutex */
	struct job *next;
};

struct worker {
	struct dlfs_decode *pool;
	struct dlfs_decoder *dec;
	pthread_t t;
	int started;
};

struct dlfs_decode {
	struct dlfs_ds *ds;
	pthread_mutex_t mu;
	pthread_cond_t work;
	struct job *head, *tail;
	int stop;
	uint64_t count;
	unsigned n;
	struct worker *w;
};

static void *run(void *arg)
{
	struct worker *w = arg;
	struct dlfs_decode *d = w->pool;
	pthread_mutex_lock(&d->mu);
	for (;;) {
		while (!d->head && !d->stop)
			pthread_cond_wait(&d->work, &d->mu);
		if (!d->head)
			break; /* stopping, and nothing is waiting */
		struct job *j = d->head;
		d->head = j->next;
		if (!d->head)
			d->tail = NULL;
		pthread_mutex_unlock(&d->mu);
		int ret = dlfs_chunk_read_rec(d->ds, j->c, j->k, j->cr, w->dec,
					      j->buf, j->cap, j->len, j->err);
		pthread_mutex_lock(&d->mu);
		d->count++;
		j->ret = ret;
		j->done = 1;
		pthread_cond_signal(&j->cv);
	}
	pthread_mutex_unlock(&d->mu);
	return NULL;
}

int dlfs_decode_start(struct dlfs_ds *ds, unsigned threads,
		      struct dlfs_decode **out, struct dlfs_err *err)
{
	*out = NULL;
	if (!threads)
		threads = 1;
	struct dlfs_decode *d = calloc(1, sizeof(*d));
	if (!d || !(d->w = calloc(threads, sizeof(*d->w)))) {
		free(d);
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	}
	d->ds = ds;
	d->n = threads;
	pthread_mutex_init(&d->mu, NULL);
	pthread_cond_init(&d->work, NULL);
	int ret = 0;
	for (unsigned i = 0; i < threads && !ret; i++) {
		struct worker *w = &d->w[i];
		w->pool = d;
		if ((ret = dlfs_decoder_new(ds, &w->dec, err)))
			break;
		int e = pthread_create(&w->t, NULL, run, w);
		if (e)
			ret = dlfs_err_set(err, -e, "decode thread %u: %s", i,
					   strerror(e));
		else
			w->started = 1;
	}
	if (ret) {
		dlfs_decode_free(d);
		return ret;
	}
	*out = d;
	return 0;
}

void dlfs_decode_free(struct dlfs_decode *d)
{
	if (!d)
		return;
	pthread_mutex_lock(&d->mu);
	d->stop = 1;
	pthread_cond_broadcast(&d->work);
	pthread_mutex_unlock(&d->mu);
	for (unsigned i = 0; i < d->n; i++) {
		if (d->w[i].started)
			pthread_join(d->w[i].t, NULL);
		dlfs_decoder_free(d->w[i].dec);
	}
	pthread_cond_destroy(&d->work);
	pthread_mutex_destroy(&d->mu);
	free(d->w);
	free(d);
}

int dlfs_decode_chunk(struct dlfs_decode *d, uint32_t c, uint64_t k,
		      const struct dlfs_chunk_rec *cr, void *buf, size_t cap,
		      size_t *len, struct dlfs_err *err)
{
	struct job j = {.c = c, .k = k, .cr = cr, .buf = buf, .cap = cap,
			.len = len, .err = err};
	pthread_cond_init(&j.cv, NULL);
	pthread_mutex_lock(&d->mu);
	if (d->tail)
		d->tail->next = &j;
	else
		d->head = &j;
	d->tail = &j;
	pthread_cond_signal(&d->work);
	while (!j.done)
		pthread_cond_wait(&j.cv, &d->mu);
	pthread_mutex_unlock(&d->mu);
	pthread_cond_destroy(&j.cv);
	return j.ret;
}

uint64_t dlfs_decode_count(struct dlfs_decode *d)
{
	pthread_mutex_lock(&d->mu);
	uint64_t n = d->count;
	pthread_mutex_unlock(&d->mu);
	return n;
}
