/*
 * Background reads (fill.c, through fill.h) with a real RAM tier over a
 * real dataset, as the read core uses them (read.c: the planner of the
 * epoch views, dlfs_fill_used after each file read from its start,
 * dlfs_fill_demand at each read; prefetch.c: dlfs_fill_stream):
 *   - planned chunks without an NVMe tier are held in RAM (pinned: other
 *     reads do not push them out) until their uses are read, at most
 *     half the RAM tier's slots at a time; the last use frees a hold and
 *     the next chunk is planned; a replan drops the holds; a chunk
 *     planned twice is held once; uses 0 loads without a hold; a planner
 *     with nothing (or a chunk past the end) is not asked again before a
 *     replan; stopping releases the holds; planned work goes before
 *     streams;
 *   - streams past a container's chunks, or of no container, are ignored;
 *   - the sweep without an NVMe tier loads every chunk once (quietly: no
 *     read-ahead is counted), none when RAM has them already; HOME only
 *     the home range; AUTO never without a tier that holds the dataset,
 *     and from the first demand read with one;
 *   - the counters: chunks by kind, their bytes (a container's short last
 *     chunk counted as it is), the holds, the depth.
 *
 * One fill thread runs one job at a time, planned work before streams:
 * so when a marker chunk streamed after everything else has been loaded,
 * the fill found nothing planned to do (settle()).
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "fetch.h"
#include "fill.h"
#include "nvme.h"
#include "tutil.h"

#define CS 16384u
#define PER 16 /* chunks a container, one file each */
#define NC 3
#define N_CHUNKS (NC * PER)
#define SHORT 1000u /* the last file of each container */
#define MARKS 2      /* the container of the markers */

static struct dlfs_ds *ds;
static struct dlfs_txn *txn;
static struct dlfs_stats st;
static struct dlfs_fetch fetch;
static unsigned marker;

/* Global chunk g's cache key. */
static uint64_t key_of(uint64_t g)
{
	return dlfs_cache_chunk_key((uint32_t)(g / PER), g % PER);
}

static struct dlfs_cache *new_cache(unsigned slots)
{
	struct dlfs_cache *c = NULL;
	struct dlfs_err err = {0};
	CHECK_EQ(dlfs_cache_new(CS, (uint64_t)slots * CS, dlfs_fetch_load,
				&fetch, &c, &err),
		 0);
	return c;
}

static struct dlfs_fill *new_fill(struct dlfs_cache *cache,
				  struct dlfs_fetch *fe, enum dlfs_fill_mode mode,
				  unsigned depth, uint64_t lo, uint64_t hi)
{
	struct dlfs_fill_conf conf = {.cache = cache, .fetch = fe,
				      .depth = depth, .mode = mode,
				      .home_lo = lo, .home_hi = hi};
	struct dlfs_fill *f = NULL;
	struct dlfs_err err = {0};
	CHECK_EQ(dlfs_fill_new(&conf, &f, &err), 0);
	return f;
}

static void start(struct dlfs_fill *f)
{
	struct dlfs_err err = {0};
	CHECK_EQ(dlfs_fill_start(f, &err), 0);
}

static struct dlfs_fill_stats stats_of(struct dlfs_fill *f)
{
	struct dlfs_fill_stats s;
	dlfs_fill_get_stats(f, &s);
	return s;
}

static uint64_t cache_held(struct dlfs_cache *cache)
{
	struct dlfs_cache_stats s;
	dlfs_cache_get_stats(cache, &s);
	return s.held;
}

static uint64_t planned(const struct dlfs_fill_stats *s)
{
	return s->planned;
}

static uint64_t streamed(const struct dlfs_fill_stats *s)
{
	return s->streamed;
}

/* Wait (up to 10 s) until the counter that count reads reaches want.
 * @return it is want. */
static int wait_for(struct dlfs_fill *f,
		    uint64_t (*count)(const struct dlfs_fill_stats *),
		    uint64_t want)
{
	uint64_t t0 = t_ms(), got;
	for (;;) {
		struct dlfs_fill_stats s = stats_of(f);
		got = count(&s);
		if (got >= want || t_ms() - t0 > 10000)
			break;
		t_sleep_ms(1);
	}
	if (got != want)
		fprintf(stderr, "waited for %llu, got %llu\n",
			(unsigned long long)want, (unsigned long long)got);
	return got == want;
}

/* Read chunks [lo, hi) that RAM has, as readers do: they are no unread
 * read-ahead any more, which the RAM tier bounds. */
static void read_cached(struct dlfs_cache *cache, uint64_t lo, uint64_t hi)
{
	for (uint64_t g = lo; g < hi; g++) {
		struct dlfs_chunk_ref ref;
		if (dlfs_cache_get_cached(cache, key_of(g), &ref) == 0)
			dlfs_cache_put(cache, &ref, ref.len);
	}
}

/* Wait until the fill has nothing planned left to do: it loads a marker
 * streamed now only then (see above). streams: the other chunks the test
 * streamed since the fill started. */
static void settle(struct dlfs_fill *f, struct dlfs_cache *cache,
		   unsigned streams)
{
	uint64_t g = MARKS * PER + marker++;
	CHECK(marker < PER);
	dlfs_fill_stream(f, MARKS, g % PER);
	CHECK(wait_for(f, streamed, streams + marker));
	read_cached(cache, g, g + 1);
}

/* A plan: chunks g[i] with uses[i] files each. With watch set, late
 * counts the calls made once watch had chunk watch_g. */
struct plan {
	const uint64_t *g;
	const uint32_t *uses;
	unsigned n;
	_Atomic unsigned next, calls, late;
	struct dlfs_cache *watch;
	uint64_t watch_g;
};

static int plan_next(void *arg, struct dlfs_txn *t, uint64_t *g,
		     uint32_t *uses)
{
	struct plan *p = arg;
	(void)t;
	atomic_fetch_add(&p->calls, 1);
	if (p->watch && dlfs_cache_contains(p->watch, key_of(p->watch_g)))
		atomic_fetch_add(&p->late, 1);
	unsigned i = atomic_load(&p->next);
	if (i >= p->n)
		return 0;
	atomic_store(&p->next, i + 1);
	*g = p->g[i];
	*uses = p->uses[i];
	return 1;
}

/* Demand reads of every chunk of container c: they would push out any
 * chunk not held. */
static void churn(struct dlfs_cache *cache, uint32_t c)
{
	struct dlfs_err err = {0};
	for (uint64_t k = 0; k < PER; k++) {
		struct dlfs_chunk_ref ref;
		CHECK_EQ(dlfs_cache_get(cache, dlfs_cache_chunk_key(c, k), NULL,
					txn, &ref, &err),
			 0);
		dlfs_cache_put(cache, &ref, ref.len);
	}
}

static int all_cached(struct dlfs_cache *cache, uint64_t lo, uint64_t hi)
{
	int n = 0;
	for (uint64_t g = lo; g < hi; g++)
		n += dlfs_cache_contains(cache, key_of(g));
	return n == (int)(hi - lo);
}

/* Planned chunks held, within half the RAM tier, released by their last
 * use and by a replan. */
static void test_holds(void)
{
	uint64_t g[16];
	uint32_t uses[16];
	for (unsigned i = 0; i < 16; i++) {
		g[i] = i;
		uses[i] = 2;
	}
	struct plan p = {.g = g, .uses = uses, .n = 16};
	struct dlfs_cache *cache = new_cache(16);
	struct dlfs_fill *f = new_fill(cache, &fetch, DLFS_FILL_NONE, 1, 0,
				       N_CHUNKS);
	marker = 0;
	dlfs_fill_set_planner(f, plan_next, &p);
	start(f);
	/* Half the 16 slots. */
	CHECK(wait_for(f, planned, 8));
	read_cached(cache, 0, 8);
	settle(f, cache, 0);
	struct dlfs_fill_stats s = stats_of(f);
	CHECK_EQ(s.planned, 8);
	CHECK_EQ(s.held, 8);
	CHECK_EQ(s.bytes, 8 * CS + CS); /* and the marker */
	CHECK_EQ(atomic_load(&p.calls), 8);
	CHECK_EQ(cache_held(cache), 8);
	/* Held: demand reads of 16 other chunks leave them. */
	churn(cache, 1);
	CHECK(all_cached(cache, 0, 8));

	/* The first use of two keeps the hold; the second frees it, and the
	 * next chunk is planned. */
	dlfs_fill_used(f, 0);
	CHECK_EQ(stats_of(f).held, 8);
	dlfs_fill_used(f, 0);
	CHECK(wait_for(f, planned, 9));
	read_cached(cache, 8, 9);
	settle(f, cache, 0);
	CHECK_EQ(stats_of(f).held, 8);
	CHECK_EQ(cache_held(cache), 8);
	CHECK_EQ(atomic_load(&p.calls), 9);
	/* A chunk nobody holds: nothing. */
	dlfs_fill_used(f, 40);
	CHECK_EQ(stats_of(f).held, 8);

	/* A replan drops every hold, and planning goes on: the seven
	 * chunks left, held (and only they), then a call that finds
	 * nothing. */
	dlfs_fill_replan(f);
	CHECK(wait_for(f, planned, 16));
	read_cached(cache, 9, 16);
	settle(f, cache, 0);
	CHECK_EQ(stats_of(f).held, 7);
	CHECK_EQ(cache_held(cache), 7);
	CHECK_EQ(atomic_load(&p.calls), 9 + 7 + 1);
	/* A dry planner is asked again after a replan only. */
	settle(f, cache, 0);
	CHECK_EQ(atomic_load(&p.calls), 17);
	dlfs_fill_replan(f);
	settle(f, cache, 0);
	CHECK_EQ(atomic_load(&p.calls), 18);
	CHECK_EQ(stats_of(f).held, 0);
	CHECK_EQ(cache_held(cache), 0);
	dlfs_fill_free(f);
	dlfs_cache_free(cache);
}

/* A chunk planned twice is held once; stopping releases the holds. */
static void test_twice(void)
{
	static const uint64_t g[] = {5, 5, 6};
	static const uint32_t uses[] = {1, 1, 3};
	struct plan p = {.g = g, .uses = uses, .n = 3};
	struct dlfs_cache *cache = new_cache(16);
	struct dlfs_fill *f = new_fill(cache, &fetch, DLFS_FILL_NONE, 1, 0,
				       N_CHUNKS);
	marker = 0;
	start(f);
	dlfs_fill_set_planner(f, plan_next, &p);
	CHECK(wait_for(f, planned, 3));
	settle(f, cache, 0);
	CHECK_EQ(stats_of(f).held, 2);
	CHECK_EQ(cache_held(cache), 2);
	CHECK_EQ(atomic_load(&p.calls), 4);
	dlfs_fill_used(f, 5);
	CHECK_EQ(stats_of(f).held, 1);
	CHECK_EQ(cache_held(cache), 1);
	dlfs_fill_free(f);
	CHECK_EQ(cache_held(cache), 0);
	dlfs_cache_free(cache);
}

/* uses 0 (unknown): loaded, not held. A chunk past the end is no plan:
 * the planner is asked again after a replan only. */
static void test_odd_plans(void)
{
	static const uint64_t g[] = {3, N_CHUNKS, 4};
	static const uint32_t uses[] = {0, 1, 1};
	struct plan p = {.g = g, .uses = uses, .n = 3};
	struct dlfs_cache *cache = new_cache(16);
	struct dlfs_fill *f = new_fill(cache, &fetch, DLFS_FILL_NONE, 1, 0,
				       N_CHUNKS);
	marker = 0;
	start(f);
	dlfs_fill_set_planner(f, plan_next, &p);
	CHECK(wait_for(f, planned, 1));
	settle(f, cache, 0);
	struct dlfs_fill_stats s = stats_of(f);
	CHECK_EQ(s.planned, 1);
	CHECK_EQ(s.held, 0);
	CHECK(dlfs_cache_contains(cache, key_of(3)));
	CHECK_EQ(atomic_load(&p.calls), 2);
	CHECK(!dlfs_cache_contains(cache, key_of(4)));
	dlfs_fill_replan(f);
	CHECK(wait_for(f, planned, 2));
	settle(f, cache, 0);
	CHECK_EQ(stats_of(f).held, 1);
	CHECK_EQ(atomic_load(&p.calls), 4);
	dlfs_fill_free(f);
	dlfs_cache_free(cache);
}

/* Planned work goes before streams queued first. */
static void test_priority(void)
{
	static const uint64_t g[] = {20, 21, 22, 23};
	static const uint32_t uses[] = {0, 0, 0, 0};
	struct dlfs_cache *cache = new_cache(16);
	struct plan p = {.g = g, .uses = uses, .n = 4, .watch = cache,
			 .watch_g = 5};
	struct dlfs_fill *f = new_fill(cache, &fetch, DLFS_FILL_NONE, 1, 0,
				       N_CHUNKS);
	marker = 0;
	dlfs_fill_stream(f, 0, 5);
	dlfs_fill_set_planner(f, plan_next, &p);
	start(f);
	settle(f, cache, 1);
	CHECK_EQ(stats_of(f).planned, 4);
	CHECK_EQ(atomic_load(&p.calls), 5);
	CHECK_EQ(atomic_load(&p.late), 0);
	dlfs_fill_free(f);
	dlfs_cache_free(cache);
}

/* Streams: only chunks that exist are queued. */
static void test_streams(void)
{
	struct dlfs_cache *cache = new_cache(16);
	struct dlfs_fill *f = new_fill(cache, &fetch, DLFS_FILL_NONE, 1, 0,
				       N_CHUNKS);
	marker = 0;
	start(f);
	dlfs_fill_stream(f, NC, 0);   /* no such container */
	dlfs_fill_stream(f, 0, PER);  /* past its last chunk */
	dlfs_fill_stream(f, 0, PER - 1);
	settle(f, cache, 1);
	struct dlfs_fill_stats s = stats_of(f);
	CHECK_EQ(s.streamed, 2);
	CHECK_EQ(s.bytes, SHORT + CS);
	CHECK_EQ(s.planned + s.swept, 0);
	CHECK(dlfs_cache_contains(cache, key_of(PER - 1)));
	CHECK(!dlfs_cache_contains(cache, key_of(PER)));
	CHECK_EQ(s.depth, 1);
	CHECK(!s.sweeping && !s.swept_all);
	dlfs_fill_free(f);
	dlfs_cache_free(cache);
}

static void wait_swept_all(struct dlfs_fill *f)
{
	uint64_t t0 = t_ms();
	while (!stats_of(f).swept_all && t_ms() - t0 < 30000)
		t_sleep_ms(1);
	CHECK(stats_of(f).swept_all);
}

static uint64_t pfs_reads(void)
{
	return atomic_load(&st.pfs_reads);
}

/* Without an NVMe tier the sweep fills RAM: every chunk once, quietly;
 * again, with RAM full, it loads nothing. */
static void test_sweep_ram(void)
{
	struct dlfs_cache *cache = new_cache(4 * N_CHUNKS);
	struct dlfs_fill *f = new_fill(cache, &fetch, DLFS_FILL_ALL, 2, 0,
				       N_CHUNKS);
	uint64_t reads = pfs_reads();
	CHECK(stats_of(f).sweeping);
	start(f);
	wait_swept_all(f);
	struct dlfs_fill_stats s = stats_of(f);
	CHECK_EQ(s.swept, N_CHUNKS);
	CHECK_EQ(s.bytes, NC * ((PER - 1) * CS + SHORT));
	CHECK_EQ(s.planned + s.streamed + s.from_ram, 0);
	CHECK_EQ(s.depth, 2);
	CHECK_EQ(pfs_reads() - reads, N_CHUNKS);
	CHECK(all_cached(cache, 0, N_CHUNKS));
	struct dlfs_cache_stats cs;
	dlfs_cache_get_stats(cache, &cs);
	CHECK_EQ(cs.pf_issued, 0);
	dlfs_fill_free(f);

	f = new_fill(cache, &fetch, DLFS_FILL_ALL, 2, 0, N_CHUNKS);
	start(f);
	wait_swept_all(f);
	CHECK_EQ(stats_of(f).swept, 0);
	CHECK_EQ(pfs_reads() - reads, N_CHUNKS);
	dlfs_fill_free(f);
	dlfs_cache_free(cache);
}

/* HOME sweeps the home range [lo, hi) alone. */
static void test_home(void)
{
	struct dlfs_cache *cache = new_cache(2 * N_CHUNKS);
	struct dlfs_fill *f = new_fill(cache, &fetch, DLFS_FILL_HOME, 1, 10,
				       20);
	start(f);
	wait_swept_all(f);
	struct dlfs_fill_stats s = stats_of(f);
	CHECK_EQ(s.swept, 10);
	CHECK_EQ(s.bytes, 9 * CS + SHORT); /* chunk 15 is short */
	CHECK(all_cached(cache, 10, 20));
	int others = 0;
	for (uint64_t g = 0; g < N_CHUNKS; g++)
		others += (g < 10 || g >= 20) &&
			  dlfs_cache_contains(cache, key_of(g));
	CHECK_EQ(others, 0);
	dlfs_fill_free(f);
	dlfs_cache_free(cache);
}

/* An NVMe tier of capacity bytes in dir for fe (started). */
static struct dlfs_nvme *open_tier(const char *dir, uint64_t capacity)
{
	const struct dlfs_info *info = dlfs_ds_info(ds);
	struct dlfs_nvme_conf conf = {
		.dir = dir,
		.capacity = capacity,
		.dataset_id_hex = info->dataset_id_hex,
		.chunk_size = CS,
		.n_containers = NC,
		.containers = dlfs_ds_container(ds, 0),
	};
	struct dlfs_nvme *n = NULL;
	struct dlfs_err err = {0};
	if (dlfs_nvme_open(&conf, &n, &err) || dlfs_nvme_start(n, &err)) {
		fprintf(stderr, "nvme: %s\n", err.msg);
		t_failures++;
	}
	return n;
}

/* AUTO: no sweep without a tier, nor with one smaller than the dataset;
 * with one that holds it, from the first demand read on, into the tier. */
static void test_auto(void)
{
	struct dlfs_cache *cache = new_cache(16);
	struct dlfs_fill *f = new_fill(cache, &fetch, DLFS_FILL_AUTO, 1, 0,
				       N_CHUNKS);
	start(f);
	dlfs_fill_demand(f);
	CHECK(!stats_of(f).sweeping);
	dlfs_fill_free(f);
	f = new_fill(cache, &fetch, DLFS_FILL_NONE, 1, 0, N_CHUNKS);
	dlfs_fill_demand(f);
	CHECK(!stats_of(f).sweeping);
	dlfs_fill_free(f);
	dlfs_cache_free(cache);

	const uint64_t data = NC * ((PER - 1) * CS + SHORT);
	for (int big = 0; big < 2; big++) {
		char *dir = t_tmpdir();
		struct dlfs_fetch fe;
		CHECK_EQ(dlfs_fetch_init(&fe, ds, &st), 0);
		fe.nvme = open_tier(dir, big ? 2 * data : data / 2);
		struct dlfs_err err = {0};
		CHECK_EQ(dlfs_cache_new(CS, 16 * CS, dlfs_fetch_load, &fe,
					&cache, &err),
			 0);
		f = new_fill(cache, &fe, DLFS_FILL_AUTO, 2, 0, N_CHUNKS);
		start(f);
		CHECK(!stats_of(f).sweeping);
		dlfs_fill_demand(f);
		CHECK_EQ(stats_of(f).sweeping, big);
		if (big) {
			wait_swept_all(f);
			dlfs_nvme_flush(fe.nvme);
			struct dlfs_nvme_stats ns;
			dlfs_nvme_get_stats(fe.nvme, &ns);
			CHECK_EQ(ns.chunks, N_CHUNKS);
			CHECK_EQ(stats_of(f).swept, N_CHUNKS);
		}
		dlfs_fill_free(f);
		dlfs_cache_free(cache);
		dlfs_nvme_close(fe.nvme);
		dlfs_fetch_destroy(&fe);
		t_rmrf(dir);
		free(dir);
	}
}

/* No fill: zero counters; freeing none is fine. */
static void test_none(void)
{
	struct dlfs_fill_stats s;
	memset(&s, 0xff, sizeof(s));
	dlfs_fill_get_stats(NULL, &s);
	CHECK_EQ(s.planned + s.streamed + s.swept + s.bytes + s.held, 0);
	CHECK_EQ(s.depth, 0);
	dlfs_fill_free(NULL);
}

/* Files of a chunk each, the last of each container short. */
static void make_dataset(const char *src, const char *out)
{
	for (int i = 0; i < N_CHUNKS; i++) {
		char n[32];
		snprintf(n, sizeof(n), "f%03d", i);
		t_write(src, n, i % PER == PER - 1 ? SHORT : CS, (uint32_t)i + 1);
	}
	struct dlfs_err err = {0};
	if (t_pack(src, out, CS, PER * CS, 0) || dlfs_ds_open(out, &ds, &err) ||
	    dlfs_txn_begin(ds, &txn, &err)) {
		fprintf(stderr, "dataset: %s\n", err.msg);
		exit(1);
	}
	CHECK_EQ(dlfs_ds_info(ds)->super.n_containers, NC);
	CHECK_EQ(dlfs_ds_n_chunks(ds), N_CHUNKS);
	for (uint64_t g = 0; g < N_CHUNKS; g++) {
		uint32_t c;
		uint64_t k;
		CHECK_EQ(dlfs_ds_chunk_locate(ds, g, &c, &k), 0);
		CHECK(c == g / PER && k == g % PER);
	}
}

int main(void)
{
	char *src = t_tmpdir(), *dir = t_tmpdir();
	char *out = t_path(dir, "ds.dlfs");
	make_dataset(src, out);
	dlfs_stats_init(&st);
	CHECK_EQ(dlfs_fetch_init(&fetch, ds, &st), 0);

	test_none();
	test_holds();
	test_twice();
	test_odd_plans();
	test_priority();
	test_streams();
	test_sweep_ram();
	test_home();
	test_auto();

	dlfs_fetch_destroy(&fetch);
	dlfs_txn_end(txn);
	dlfs_ds_close(ds);
	t_rmrf(src);
	t_rmrf(dir);
	free(src);
	free(dir);
	free(out);
	return t_done("test_fill");
}
