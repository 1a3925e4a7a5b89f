/* Staging into the NVMe tier: see stage.h. */
#include "stage.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>


#define YIELD_MS 50

struct dlfs_stage {
	struct dlfs_stage_conf conf;
	uint64_t n_chunks;
	pthread_t thread;
	_Atomic int stop, done;
	_Atomic uint64_t chunks, bytes;
};

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {0, (long)ms * 1000000L};
	nanosleep(&ts, NULL);
}

static void *stage_main(void *arg)
{
	struct dlfs_stage *s = arg;
	struct dlfs_fetch *f = s->conf.fetch;
	struct dlfs_txn *txn = NULL;
	struct dlfs_err err = {0};
	if (dlfs_txn_begin(f->ds, &txn, &err))
		goto out;
	/* Home chunks first, in order; then, for ALL, the others from the
	 * end of the home range on, so ranks do not all ask rank 0 first. */
	uint64_t total = s->conf.mode == DLFS_STAGE_ALL
				 ? s->n_chunks
				 : s->conf.home_hi - s->conf.home_lo;
	for (uint64_t i = 0; i < total && !atomic_load(&s->stop); i++) {
		uint64_t g = (s->conf.home_lo + i) % s->n_chunks;
		uint32_t c;
		uint64_t k;
		dlfs_ds_chunk_locate(f->ds, g, &c, &k);
		if (dlfs_nvme_has(f->nvme, c, k))
			continue;
		for (unsigned ms = 0; ms < YIELD_MS &&
				      dlfs_cache_demand_loading(s->conf.cache);
		     ms++)
			sleep_ms(1);
		/* Through the RAM tier, so that a reader or a peer asking
		 * for the same chunk meanwhile shares this one load instead
		 * of reading the PFS a second time. */
		struct dlfs_chunk_ref r;
		if (dlfs_cache_get(s->conf.cache, c, k, txn, &r, &err) == 0) {
			atomic_fetch_add(&s->chunks, 1);
			atomic_fetch_add(&s->bytes, r.len);
			dlfs_cache_put(s->conf.cache, &r);
		}
		/* Let the writer keep up: staging is pointless if its
		 * chunks are dropped for want of a buffer. */
		dlfs_nvme_flush(f->nvme);
	}
out:
	atomic_store(&s->done, 1);
	if (txn)
		dlfs_txn_end(txn);
	return NULL;
}

int dlfs_stage_start(const struct dlfs_stage_conf *conf,
		     struct dlfs_stage **out, struct dlfs_err *err)
{
	*out = NULL;
	if (conf->mode == DLFS_STAGE_NONE)
		return 0;
	if (!conf->fetch->nvme)
		return dlfs_err_set(err, -EINVAL,
				    "-o stage=%s needs the NVMe tier "
				    "(-o cache_dir=DIR)",
				    dlfs_stage_name(conf->mode));
	struct dlfs_stage *s = calloc(1, sizeof(*s));
	if (!s)
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	s->conf = *conf;
	s->n_chunks = dlfs_ds_n_chunks(conf->fetch->ds);
	if (!s->n_chunks) {
		atomic_store(&s->done, 1);
		*out = s;
		return 0;
	}
	int ret = pthread_create(&s->thread, NULL, stage_main, s);
	if (ret) {
		free(s);
		return dlfs_err_set(err, -ret, "staging thread");
	}
	*out = s;
	return 0;
}

void dlfs_stage_stop(struct dlfs_stage *s)
{
	if (!s)
		return;
	atomic_store(&s->stop, 1);
	if (s->n_chunks)
		pthread_join(s->thread, NULL);
	free(s);
}

void dlfs_stage_get(struct dlfs_stage *s, uint64_t *chunks, uint64_t *bytes,
		    int *done)
{
	*chunks = s ? atomic_load(&s->chunks) : 0;
	*bytes = s ? atomic_load(&s->bytes) : 0;
	*done = s ? atomic_load(&s->done) : 0;
}

const char *dlfs_stage_name(enum dlfs_stage_mode m)
{
	return m == DLFS_STAGE_ALL ? "all" : m == DLFS_STAGE_HOME ? "home" : "none";
}

int dlfs_stage_parse(const char *s, enum dlfs_stage_mode *m)
{
	if (!strcmp(s, "none"))
		*m = DLFS_STAGE_NONE;
	else if (!strcmp(s, "home"))
		*m = DLFS_STAGE_HOME;
	else if (!strcmp(s, "all"))
		*m = DLFS_STAGE_ALL;
	else
		return -EINVAL;
	return 0;
}
