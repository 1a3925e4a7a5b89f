/* Background reads: see fill.h. */
#include "fill.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util.h"

#define STREAM_Q 1024
#define YIELD_MS 20  /* longest a background read waits for demand */
#define RETRY_MS 100 /* longest it waits for room in the RAM tier */
#define BAGS_IDLE_MS 50 /* bags with nothing to do: look again after */

enum job_kind { JOB_KEEP, JOB_PLANNED, JOB_BAG, JOB_STREAM, JOB_SWEEP };

struct job {
	enum job_kind kind;
	uint64_t g;
	uint32_t uses;
};

struct hold {
	uint64_t g;
	uint32_t uses;
	struct dlfs_chunk_ref ref;
};

struct dlfs_fill {
	struct dlfs_fill_conf conf;
	struct dlfs_ds *ds;
	uint64_t n_chunks;
	unsigned hold_max;  /* half the RAM tier's slots */
	int sweep_fits;     /* AUTO may sweep: the tiers hold the dataset */

	pthread_mutex_t plan_mu; /* serializes calls of the planner */
	dlfs_plan_next_fn plan;
	void *plan_arg;

	pthread_mutex_t mu; /* guards what follows */
	pthread_cond_t cv;
	int stop;
	uint64_t plan_gen;  /* bumped by replan */
	int plan_dry;       /* the planner had nothing: wait for a replan */
	struct dlfs_bags *bags; /* NULL: none */
	int bags_idle;      /* they had nothing: until woken, or a while */
	uint64_t sq[STREAM_Q];
	unsigned sq_head, sq_len;
	int sweeping;
	uint64_t sweep_i, sweep_n, sweep_busy;
	struct hold *holds;
	unsigned n_holds;
	unsigned holds_coming; /* planned chunks pulled, not held yet */
	_Atomic unsigned holding; /* n_holds, read without the lock */
	_Atomic int sweep_on;     /* sweeping, read without the lock */

	pthread_t *threads;
	unsigned n_threads;
	_Atomic uint64_t n_planned, n_streamed, n_swept, n_from_ram, bytes,
		waits;
	_Atomic int swept_all;
};

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {0, (long)ms * 1000000L};
	nanosleep(&ts, NULL);
}

static uint64_t data_bytes(struct dlfs_ds *ds)
{
	uint64_t sum = 0;
	uint32_t nc = (uint32_t)dlfs_ds_info(ds)->super.n_containers;
	for (uint32_t c = 0; c < nc; c++)
		sum += dlfs_ds_container(ds, c)->data_size;
	return sum;
}

/* A bag was let go: the workers may plan again. */
static void bags_wake(void *arg)
{
	struct dlfs_fill *f = arg;
	pthread_mutex_lock(&f->mu);
	f->bags_idle = 0;
	pthread_cond_broadcast(&f->cv);
	pthread_mutex_unlock(&f->mu);
}

/* The bags, with conf.bags and no NVMe tier: the RAM tier's slots that
 * the holds and one demand read leave. @return 0 or -errno. */
static int new_bags(struct dlfs_fill *f, struct dlfs_err *err)
{
	unsigned slots = dlfs_cache_slots(f->conf.cache);
	if (!f->conf.bags || f->conf.fetch->nvme || slots < f->hold_max + 2)
		return 0;
	struct dlfs_bags_conf bc = {
		.cache = f->conf.cache,
		.fetch = f->conf.fetch,
		.max = slots - f->hold_max - 1,
		.entry_size = (size_t)dlfs_ds_info(f->ds)->super.chunk_size,
		.wake = bags_wake,
		.wake_arg = f,
	};
	return dlfs_bags_new(&bc, &f->bags, err);
}

int dlfs_fill_new(const struct dlfs_fill_conf *conf, struct dlfs_fill **out,
		  struct dlfs_err *err)
{
	*out = NULL;
	struct dlfs_fill *f = calloc(1, sizeof(*f));
	if (!f)
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	f->conf = *conf;
	f->ds = conf->fetch->ds;
	f->n_chunks = dlfs_ds_n_chunks(f->ds);
	f->hold_max = dlfs_cache_slots(conf->cache) / 2;
	f->holds = calloc(f->hold_max ? f->hold_max : 1, sizeof(*f->holds));
	f->threads = calloc(conf->depth ? conf->depth : 1,
			    sizeof(*f->threads));
	if (!f->holds || !f->threads) {
		free(f->holds);
		free(f->threads);
		free(f);
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	}
	struct dlfs_nvme *nv = conf->fetch->nvme;
	uint64_t data = data_bytes(f->ds), used, cap;
	if (nv) {
		dlfs_nvme_usage(nv, &used, &cap);
		f->sweep_fits = cap >= data;
	}
	if (conf->mode == DLFS_FILL_HOME) {
		f->sweep_n = conf->home_hi - conf->home_lo;
		f->sweeping = 1;
	} else {
		f->sweep_n = f->n_chunks;
		f->sweeping = conf->mode == DLFS_FILL_ALL;
	}
	atomic_init(&f->sweep_on, f->sweeping);
	pthread_mutex_init(&f->plan_mu, NULL);
	pthread_mutex_init(&f->mu, NULL);
	pthread_cond_init(&f->cv, NULL);
	int ret = new_bags(f, err);
	if (ret) {
		dlfs_fill_free(f);
		return ret;
	}
	*out = f;
	return 0;
}

/* Idle bags wait for a wake, or a while (caller holds mu): readers that
 * pass a bag without reading it let it go only when the planner looks
 * again. */
static void bags_wait(struct dlfs_fill *f)
{
	struct timespec ts;
	dlfs_deadline(CLOCK_REALTIME, BAGS_IDLE_MS, &ts);
	if (pthread_cond_timedwait(&f->cv, &f->mu, &ts) == ETIMEDOUT)
		f->bags_idle = 0;
}

/* A bag to load or help (caller holds mu, released meanwhile). @return 1
 * with *j, or 0: the bags are idle until woken. */
static int bag_job(struct dlfs_fill *f, struct dlfs_txn *txn, struct job *j)
{
	unsigned bag;
	pthread_mutex_unlock(&f->mu);
	int got = dlfs_bags_next(f->bags, txn, &bag);
	pthread_mutex_lock(&f->mu);
	if (got) /* uses: 2 to help another's load */
		*j = (struct job){JOB_BAG, bag, (uint32_t)got};
	else
		f->bags_idle = 1;
	return got != 0;
}

/* The next piece of work; 0 when stopping. */
static int next_job(struct dlfs_fill *f, struct dlfs_txn *txn, struct job *j)
{
	struct dlfs_nvme *nv = f->conf.fetch->nvme;
	uint32_t c;
	uint64_t k;
	pthread_mutex_lock(&f->mu);
	int stop = f->stop;
	pthread_mutex_unlock(&f->mu);
	/* First a chunk the tier turned away: no PFS read, and RAM may let
	 * it go soon. */
	if (!stop && nv && dlfs_nvme_next_turned_away(nv, &c, &k)) {
		*j = (struct job){JOB_KEEP,
				  dlfs_ds_container(f->ds, c)->first_chunk + k,
				  0};
		return 1;
	}
	pthread_mutex_lock(&f->mu);
	while (!f->stop) {
		/* Without an NVMe tier, only as many planned chunks as the
		 * holds have room for: one more would be read and let go. */
		int hold_room = f->conf.fetch->nvme ||
				f->n_holds + f->holds_coming < f->hold_max;
		if (f->plan && !f->plan_dry && hold_room) {
			uint64_t gen = f->plan_gen, g;
			uint32_t uses = 0;
			pthread_mutex_unlock(&f->mu);
			pthread_mutex_lock(&f->plan_mu);
			int got = f->plan(f->plan_arg, txn, &g, &uses);
			pthread_mutex_unlock(&f->plan_mu);
			pthread_mutex_lock(&f->mu);
			if (got == 1 && g < f->n_chunks) {
				*j = (struct job){JOB_PLANNED, g, uses};
				f->holds_coming += !f->conf.fetch->nvme;
				pthread_mutex_unlock(&f->mu);
				return 1;
			}
			if (gen == f->plan_gen)
				f->plan_dry = 1;
			continue;
		}
		if (f->bags && !f->bags_idle && (!hold_room || f->plan_dry)) {
			if (bag_job(f, txn, j)) {
				pthread_mutex_unlock(&f->mu);
				return 1;
			}
			continue;
		}
		if (f->sq_len) {
			*j = (struct job){JOB_STREAM, f->sq[f->sq_head], 0};
			f->sq_head = (f->sq_head + 1) % STREAM_Q;
			f->sq_len--;
			pthread_mutex_unlock(&f->mu);
			return 1;
		}
		if (f->sweeping && f->sweep_i < f->sweep_n) {
			uint64_t i = f->sweep_i++;
			*j = (struct job){JOB_SWEEP,
					  (f->conf.home_lo + i) % f->n_chunks,
					  0};
			f->sweep_busy++;
			pthread_mutex_unlock(&f->mu);
			return 1;
		}
		if (f->bags_idle)
			bags_wait(f);
		else
			pthread_cond_wait(&f->cv, &f->mu);
	}
	pthread_mutex_unlock(&f->mu);
	return 0;
}

/* Keep a hold on planned chunk g until its uses are read. */
static void add_hold(struct dlfs_fill *f, uint64_t g, uint32_t uses,
		     struct dlfs_chunk_ref *ref)
{
	pthread_mutex_lock(&f->mu);
	for (unsigned i = 0; i < f->n_holds; i++)
		if (f->holds[i].g == g) {
			/* Held already (planned twice): keep one. */
			pthread_mutex_unlock(&f->mu);
			dlfs_cache_put(f->conf.cache, ref, 0);
			return;
		}
	if (f->n_holds == f->hold_max) {
		pthread_mutex_unlock(&f->mu);
		dlfs_cache_put(f->conf.cache, ref, 0);
		return;
	}
	f->holds[f->n_holds++] = (struct hold){g, uses, *ref};
	atomic_store(&f->holding, f->n_holds);
	pthread_mutex_unlock(&f->mu);
}

/* Demand first: wait (boundedly) while demand and PFS reads in flight
 * fill the queue depth. */
static void yield_to_demand(struct dlfs_fill *f)
{
	for (unsigned ms = 0; ms < YIELD_MS; ms++) {
		unsigned d = dlfs_cache_demand_loading(f->conf.cache);
		unsigned p = atomic_load_explicit(&f->conf.fetch->pfs_inflight,
						  memory_order_relaxed);
		if (!d || d + p < f->conf.depth)
			return;
		if (!ms)
			atomic_fetch_add(&f->waits, 1);
		sleep_ms(1);
	}
}

/* Chunk (c, k), pinned by ref (the caller's, released here), is in RAM:
 * queue it for the tier, waiting for room in its write queue. Readers
 * have the chunk from RAM meanwhile. @return 1 when this call queued it
 * (not when the tier had it already). */
static int to_tier(struct dlfs_fill *f, struct dlfs_nvme *nv, uint32_t c,
		   uint64_t k, struct dlfs_chunk_ref *ref)
{
	int queued = dlfs_nvme_put(nv, c, k, ref->data, ref->len, 1) == 1;
	if (queued)
		dlfs_cache_set_kept(f->conf.cache, ref);
	dlfs_cache_put(f->conf.cache, ref, 0);
	return queued;
}

/*
 * Chunk (c, k) of key is neither in the NVMe tier nor queued for it: if
 * the RAM tier holds it (or a demand read is loading it), queue it for the
 * tier from RAM. A demand load does not wait when the tier's write queue
 * is full: the chunk then sits in RAM only, and once RAM let it go it
 * would be read from the PFS again. @return 1 when RAM had it.
 */
static int keep_from_ram(struct dlfs_fill *f, struct dlfs_nvme *nv,
			 uint64_t key, uint32_t c, uint64_t k)
{
	struct dlfs_chunk_ref ref;
	if (dlfs_cache_peek(f->conf.cache, key, &ref))
		return 0;
	if (to_tier(f, nv, c, k, &ref))
		atomic_fetch_add(&f->n_from_ram, 1);
	return 1;
}

static void run_job(struct dlfs_fill *f, struct dlfs_txn *txn,
		    struct dlfs_decoder *dec, uint8_t *scratch,
		    const struct job *j)
{
	if (j->kind == JOB_BAG && j->uses == 2) {
		dlfs_bags_help(f->bags, (unsigned)j->g, scratch);
		return;
	}
	if (j->kind == JOB_BAG) {
		yield_to_demand(f);
		if (dlfs_bags_load(f->bags, txn, (unsigned)j->g, scratch) ==
		    -EAGAIN) {
			pthread_mutex_lock(&f->mu);
			f->bags_idle = 1; /* until an entry is let go */
			pthread_mutex_unlock(&f->mu);
		}
		return;
	}
	struct dlfs_nvme *nv = f->conf.fetch->nvme;
	/* The load leaves the tier to this thread (to_tier, after it): a
	 * full write queue must not keep the chunk from its readers. It
	 * decompresses in this thread, with its decoder. */
	struct dlfs_fetch_chunk_opts opts = {.defer_nvme = 1, .dec = dec};
	struct dlfs_chunk_ref ref;
	struct dlfs_err err = {0};
	uint32_t c;
	uint64_t k;
	if (dlfs_ds_chunk_locate(f->ds, j->g, &c, &k))
		return;
	uint64_t key = dlfs_cache_chunk_key(c, k);
	if (j->kind == JOB_KEEP) {
		if (!dlfs_nvme_holds(nv, c, k))
			keep_from_ram(f, nv, key, c, k);
		return;
	}
	/* Held only when RAM is the only tier that can keep it. */
	int want_hold = j->kind == JOB_PLANNED && !nv && j->uses;
	/* Planned and swept chunks are for the NVMe tier when there is one:
	 * done if it holds them. */
	int fills_tier = j->kind != JOB_STREAM && nv;
	if (fills_tier && (dlfs_nvme_holds(nv, c, k) ||
			   keep_from_ram(f, nv, key, c, k)))
		return;
	if (!want_hold && dlfs_cache_contains(f->conf.cache, key))
		return;
	yield_to_demand(f);
	for (unsigned ms = 0;; ms += 2) {
		/* A sweep is not read-ahead: it fills the tiers. */
		int ret = dlfs_cache_prefetch(
			f->conf.cache, key, &opts, txn,
			j->kind == JOB_SWEEP ? DLFS_CACHE_PF_QUIET : 0,
			want_hold || nv ? &ref : NULL, &err);
		if (ret == 0)
			break;
		if (ret != -EAGAIN || ms >= RETRY_MS)
			return; /* a load error: a demand read meets it */
		pthread_mutex_lock(&f->mu);
		int stop = f->stop;
		pthread_mutex_unlock(&f->mu);
		if (stop)
			return;
		sleep_ms(2);
	}
	if (want_hold)
		add_hold(f, j->g, j->uses, &ref);
	else if (nv)
		to_tier(f, nv, c, k, &ref);
	const struct dlfs_container *ct = dlfs_ds_container(f->ds, c);
	uint64_t left = ct->data_size - k * dlfs_ds_info(f->ds)->super.chunk_size;
	uint64_t cs = dlfs_ds_info(f->ds)->super.chunk_size;
	atomic_fetch_add(&f->bytes, left < cs ? left : cs);
	atomic_fetch_add(j->kind == JOB_PLANNED  ? &f->n_planned
			 : j->kind == JOB_STREAM ? &f->n_streamed
						 : &f->n_swept,
			 1);
}

static void *worker(void *arg)
{
	struct dlfs_fill *f = arg;
	struct dlfs_txn *txn = NULL;
	struct dlfs_decoder *dec = NULL;
	void *scratch = NULL;
	struct job j;
	/* Bags read their runs into a buffer of the thread's own. */
	if (f->bags && posix_memalign(&scratch, 4096, DLFS_BAGS_SCRATCH))
		return NULL;
	if (dlfs_txn_begin(f->ds, &txn, NULL)) {
		free(scratch);
		return NULL;
	}
	/* Without one (out of memory), the decode threads do its loads. */
	if (f->conf.fetch->compressed)
		dlfs_decoder_new(f->ds, &dec, NULL);
	while (next_job(f, txn, &j)) {
		run_job(f, txn, dec, scratch, &j);
		if (j.kind == JOB_PLANNED && !f->conf.fetch->nvme) {
			pthread_mutex_lock(&f->mu);
			f->holds_coming--;
			pthread_cond_broadcast(&f->cv); /* room to plan */
			pthread_mutex_unlock(&f->mu);
		}
		if (j.kind == JOB_SWEEP) {
			pthread_mutex_lock(&f->mu);
			if (--f->sweep_busy == 0 && f->sweep_i >= f->sweep_n)
				atomic_store(&f->swept_all, 1);
			pthread_mutex_unlock(&f->mu);
		}
	}
	dlfs_decoder_free(dec);
	dlfs_txn_end(txn);
	free(scratch);
	return NULL;
}

int dlfs_fill_start(struct dlfs_fill *f, struct dlfs_err *err)
{
	/* Unread background loads may take half the RAM tier. */
	dlfs_cache_set_prefetch_limit(f->conf.cache,
				      dlfs_cache_slots(f->conf.cache));
	for (unsigned i = 0; i < f->conf.depth; i++) {
		int ret = pthread_create(&f->threads[i], NULL, worker, f);
		if (ret)
			return dlfs_err_set(err, -ret,
					    "background read thread");
		f->n_threads++;
	}
	return 0;
}

void dlfs_fill_free(struct dlfs_fill *f)
{
	if (!f)
		return;
	pthread_mutex_lock(&f->mu);
	f->stop = 1;
	pthread_cond_broadcast(&f->cv);
	pthread_mutex_unlock(&f->mu);
	for (unsigned i = 0; i < f->n_threads; i++)
		pthread_join(f->threads[i], NULL);
	for (unsigned i = 0; i < f->n_holds; i++)
		dlfs_cache_put(f->conf.cache, &f->holds[i].ref, 0);
	dlfs_bags_free(f->bags);
	dlfs_cache_set_prefetch_limit(f->conf.cache, 0);
	pthread_mutex_destroy(&f->plan_mu);
	pthread_mutex_destroy(&f->mu);
	pthread_cond_destroy(&f->cv);
	free(f->holds);
	free(f->threads);
	free(f);
}

void dlfs_fill_set_planner(struct dlfs_fill *f, dlfs_plan_next_fn fn,
			   void *arg)
{
	pthread_mutex_lock(&f->plan_mu);
	f->plan = fn;
	f->plan_arg = arg;
	pthread_mutex_unlock(&f->plan_mu);
	dlfs_fill_replan(f);
}

void dlfs_fill_set_file_planner(struct dlfs_fill *f, dlfs_plan_files_fn fn,
				void *arg)
{
	if (f->bags)
		dlfs_bags_set_planner(f->bags, fn, arg);
}

struct dlfs_bags *dlfs_fill_bags(struct dlfs_fill *f)
{
	return f ? f->bags : NULL;
}

void dlfs_fill_replan(struct dlfs_fill *f)
{
	struct hold *old = NULL;
	unsigned n = 0;
	if (f->bags)
		dlfs_bags_reset(f->bags);
	pthread_mutex_lock(&f->mu);
	f->plan_gen++;
	f->plan_dry = 0;
	f->bags_idle = 0;
	/* The old plan's holds go: the new one counts its own uses. */
	if (f->n_holds) {
		old = malloc(f->n_holds * sizeof(*old));
		if (old) {
			n = f->n_holds;
			memcpy(old, f->holds, n * sizeof(*old));
			f->n_holds = 0;
			atomic_store(&f->holding, 0);
		}
	}
	pthread_cond_broadcast(&f->cv);
	pthread_mutex_unlock(&f->mu);
	for (unsigned i = 0; i < n; i++)
		dlfs_cache_put(f->conf.cache, &old[i].ref, 0);
	free(old);
}

void dlfs_fill_stream(struct dlfs_fill *f, uint32_t c, uint64_t k)
{
	const struct dlfs_container *ct = dlfs_ds_container(f->ds, c);
	if (!ct || k >= ct->n_chunks)
		return;
	pthread_mutex_lock(&f->mu);
	if (f->sq_len < STREAM_Q) {
		f->sq[(f->sq_head + f->sq_len) % STREAM_Q] = ct->first_chunk + k;
		f->sq_len++;
		pthread_cond_signal(&f->cv);
	}
	pthread_mutex_unlock(&f->mu);
}

void dlfs_fill_demand(struct dlfs_fill *f)
{
	if (f->conf.mode != DLFS_FILL_AUTO || !f->sweep_fits ||
	    atomic_load_explicit(&f->sweep_on, memory_order_relaxed))
		return;
	pthread_mutex_lock(&f->mu);
	if (!f->sweeping) {
		f->sweeping = 1;
		atomic_store(&f->sweep_on, 1);
		pthread_cond_broadcast(&f->cv);
	}
	pthread_mutex_unlock(&f->mu);
}

void dlfs_fill_used(struct dlfs_fill *f, uint64_t g)
{
	struct dlfs_chunk_ref done = {0};
	if (!atomic_load_explicit(&f->holding, memory_order_relaxed))
		return;
	pthread_mutex_lock(&f->mu);
	for (unsigned i = 0; i < f->n_holds; i++) {
		struct hold *h = &f->holds[i];
		if (h->g != g)
			continue;
		if (--h->uses == 0) {
			done = h->ref;
			*h = f->holds[--f->n_holds];
			atomic_store(&f->holding, f->n_holds);
			pthread_cond_broadcast(&f->cv); /* room to plan */
		}
		break;
	}
	pthread_mutex_unlock(&f->mu);
	if (done.data)
		dlfs_cache_put(f->conf.cache, &done, 0);
}

void dlfs_fill_get_stats(struct dlfs_fill *f, struct dlfs_fill_stats *s)
{
	memset(s, 0, sizeof(*s));
	if (!f)
		return;
	s->planned = atomic_load(&f->n_planned);
	s->streamed = atomic_load(&f->n_streamed);
	s->swept = atomic_load(&f->n_swept);
	s->from_ram = atomic_load(&f->n_from_ram);
	s->bytes = atomic_load(&f->bytes);
	s->waits = atomic_load(&f->waits);
	s->held = atomic_load(&f->holding);
	s->swept_all = atomic_load(&f->swept_all);
	s->depth = f->conf.depth;
	dlfs_bags_get_stats(f->bags, &s->bags);
	pthread_mutex_lock(&f->mu);
	s->sweeping = f->sweeping;
	pthread_mutex_unlock(&f->mu);
}
