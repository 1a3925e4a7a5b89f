/*
 * Sequential read-ahead (prefetch.c) with a real RAM tier and real
 * background reads (fill.c, one thread) over a real dataset: a stream is
 * three consecutive chunks (one step is what random readers do), a second
 * reader just behind does not break it, and a jump ends it; the window starts at two
 * chunks, doubles while read-ahead is used, is capped by window_max and
 * halves when read-ahead is wasted; what is queued lands in the RAM tier;
 * with read-ahead off (window_max 0) streams are followed and nothing is
 * loaded.
 *
 * The background reads run one job at a time, in order: to know that
 * everything queued so far is done, the test queues a marker chunk of
 * another container and waits until it is loaded.
 */
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "fetch.h"
#include "fill.h"
#include "prefetch.h"
#include "tutil.h"

#define CS 16384u
#define PER_CONTAINER 48 /* chunks: one file each */
#define SLOTS 32

enum { STREAM = 0, MARKS = 1, CHURN = 2, OTHER = 3 };

static struct dlfs_ds *ds;
static struct dlfs_txn *txn;
static struct dlfs_cache *cache;
static struct dlfs_fill *fill;
static uint64_t marker;   /* next marker chunk of container MARKS */
static uint64_t streamed; /* chunks the fill should have loaded */

static uint64_t key(uint32_t c, uint64_t k)
{
	return dlfs_cache_chunk_key(c, k);
}

static int loaded(uint32_t c, uint64_t k)
{
	return dlfs_cache_contains(cache, key(c, k));
}

static uint64_t fill_streamed(void)
{
	struct dlfs_fill_stats s;
	dlfs_fill_get_stats(fill, &s);
	return s.streamed;
}

/* A demand read of chunk (c, k), told to pf. @return it was a used
 * read-ahead. */
static int demand(struct dlfs_prefetch *pf, uint32_t c, uint64_t k)
{
	struct dlfs_chunk_ref ref;
	struct dlfs_err err = {0};
	int ret = dlfs_cache_get(cache, key(c, k), NULL, txn, &ref, &err);
	CHECK_EQ(ret, 0);
	if (ret)
		return 0;
	int pre = ref.prefetched;
	if (pf)
		dlfs_prefetch_note(pf, c, k, pre);
	dlfs_cache_put(cache, &ref, ref.len);
	return pre;
}

/* Wait until everything queued so far has been loaded. */
static void settle(void)
{
	uint64_t m = marker++;
	struct dlfs_chunk_ref ref;
	dlfs_fill_stream(fill, MARKS, m);
	streamed++;
	uint64_t t0 = t_ms();
	while (!loaded(MARKS, m) && t_ms() - t0 < 10000)
		t_sleep_ms(1);
	CHECK(loaded(MARKS, m));
	/* Read it, so that it is not an unread read-ahead any more. */
	if (dlfs_cache_get_cached(cache, key(MARKS, m), &ref) == 0)
		dlfs_cache_put(cache, &ref, ref.len);
	CHECK_EQ(fill_streamed(), streamed);
}

/* Chunks lo..hi of the stream's container are loaded, hi + 1 is not. */
static void check_ahead(uint64_t lo, uint64_t hi, int line)
{
	for (uint64_t k = lo; k <= hi; k++)
		if (!loaded(STREAM, k)) {
			fprintf(stderr, "line %d: chunk %llu not read ahead\n",
				line, (unsigned long long)k);
			t_failures++;
		}
	if (loaded(STREAM, hi + 1)) {
		fprintf(stderr, "line %d: chunk %llu read ahead too\n", line,
			(unsigned long long)hi + 1);
		t_failures++;
	}
}

/* Read every chunk of the stream's container in the RAM tier (without
 * telling the read-ahead): no read-ahead is left unread to be wasted by
 * later evictions. */
static void use_all(void)
{
	struct dlfs_chunk_ref ref;
	for (uint64_t k = 0; k < PER_CONTAINER; k++)
		if (dlfs_cache_get_cached(cache, key(STREAM, k), &ref) == 0)
			dlfs_cache_put(cache, &ref, ref.len);
	struct dlfs_cache_stats cs;
	dlfs_cache_get_stats(cache, &cs);
	CHECK_EQ(cs.pf_pending, 0);
}

static struct dlfs_prefetch *new_pf(struct dlfs_fill *f, uint64_t chunks)
{
	struct dlfs_prefetch_conf conf = {
		.cache = cache, .fill = f, .ds = ds, .window_max = chunks * CS,
	};
	struct dlfs_prefetch *pf = NULL;
	struct dlfs_err err = {0};
	CHECK_EQ(dlfs_prefetch_new(&conf, &pf, &err), 0);
	return pf;
}

static void test_window(void)
{
	struct dlfs_prefetch *pf = new_pf(fill, 8);
	struct dlfs_cache_stats cs;

	CHECK(!dlfs_prefetch_in_stream(pf, STREAM, 0));
	/* One chunk read: no stream yet, nothing ahead. */
	CHECK(!demand(pf, STREAM, 0));
	settle();
	CHECK(!loaded(STREAM, 1));
	/* A reader that touched one chunk is not a stream: random readers
	 * touch chunks too. */
	CHECK(!dlfs_prefetch_in_stream(pf, STREAM, 0));
	CHECK(!dlfs_prefetch_in_stream(pf, STREAM, 1));
	/* Nor one step to the next: a random reader does that once in
	 * n_chunks reads. */
	CHECK(!demand(pf, STREAM, 1));
	settle();
	CHECK(!loaded(STREAM, 2));
	CHECK(!dlfs_prefetch_in_stream(pf, STREAM, 1));
	CHECK(!dlfs_prefetch_in_stream(pf, STREAM, 2));
	/* The second step in a row: a stream, two chunks ahead. */
	CHECK(!demand(pf, STREAM, 2));
	streamed += 2;
	settle();
	check_ahead(3, 4, __LINE__);
	CHECK(dlfs_prefetch_in_stream(pf, STREAM, 2));
	CHECK(dlfs_prefetch_in_stream(pf, STREAM, 3));
	CHECK(!dlfs_prefetch_in_stream(pf, STREAM, 4));
	CHECK(!dlfs_prefetch_in_stream(pf, STREAM + 1, 3));
	/* Read-ahead used: the window doubles, 4 then 8 ahead... */
	CHECK(demand(pf, STREAM, 3));
	streamed += 3;
	settle();
	check_ahead(5, 7, __LINE__);
	CHECK(demand(pf, STREAM, 4));
	streamed += 5;
	settle();
	check_ahead(8, 12, __LINE__);
	/* ... and no further than window_max (8 chunks). */
	CHECK(demand(pf, STREAM, 5));
	streamed += 1;
	settle();
	check_ahead(13, 13, __LINE__);
	dlfs_cache_get_stats(cache, &cs);
	CHECK_EQ(cs.pf_wasted, 0);

	/* Other reads evict the read-ahead before it is used: wasted. */
	for (uint64_t k = 0; k < SLOTS + 8; k++)
		demand(NULL, CHURN, k);
	dlfs_cache_get_stats(cache, &cs);
	CHECK_EQ(cs.pf_wasted, 8); /* chunks 6..13 */
	CHECK(!loaded(STREAM, 6));
	/* The window halves to 4: nothing new until chunk 10 is read
	 * (14 was queued up to). */
	for (uint64_t k = 6; k <= 9; k++) {
		CHECK(!demand(pf, STREAM, k));
		settle();
		CHECK(!loaded(STREAM, 14));
	}
	CHECK(!demand(pf, STREAM, 10));
	streamed += 1;
	settle();
	check_ahead(14, 14, __LINE__);
	use_all();

	/* A jump ends the stream; two steps start a new one, two chunks
	 * ahead again. */
	CHECK(!demand(pf, STREAM, 20));
	settle();
	CHECK(!loaded(STREAM, 21));
	CHECK(!dlfs_prefetch_in_stream(pf, STREAM, 11));
	CHECK(!dlfs_prefetch_in_stream(pf, STREAM, 20));
	CHECK(!dlfs_prefetch_in_stream(pf, STREAM, 21));
	CHECK(!demand(pf, STREAM, 21));
	settle();
	CHECK(!loaded(STREAM, 22));
	CHECK(!demand(pf, STREAM, 22));
	streamed += 2;
	settle();
	check_ahead(23, 24, __LINE__);
	CHECK(dlfs_prefetch_in_stream(pf, STREAM, 22));
	CHECK(dlfs_prefetch_in_stream(pf, STREAM, 23));
	/* Reading a chunk again is no step. */
	CHECK(demand(pf, STREAM, 23));
	streamed += 3;
	settle();
	check_ahead(25, 27, __LINE__);
	CHECK(!demand(pf, STREAM, 23));
	settle();
	CHECK(!loaded(STREAM, 28));
	/* ... nor a break: the stream goes on, its window too. */
	CHECK(demand(pf, STREAM, 24));
	streamed += 5;
	settle();
	check_ahead(25, 32, __LINE__);
	/* A second reader just behind the first (the chunk before the
	 * last) is no break either. */
	CHECK(!demand(pf, STREAM, 23));
	settle();
	CHECK(!loaded(STREAM, 33));
	CHECK(dlfs_prefetch_in_stream(pf, STREAM, 24));
	CHECK(dlfs_prefetch_in_stream(pf, STREAM, 25));
	CHECK(demand(pf, STREAM, 25));
	streamed += 1;
	settle();
	check_ahead(25, 33, __LINE__);
	use_all();
	/* Near the container's end the window stops at its last chunk. */
	unsigned ahead[PER_CONTAINER] = {[42] = 2, [43] = 3};
	for (uint64_t k = 40; k < PER_CONTAINER; k++) {
		demand(pf, STREAM, k);
		streamed += ahead[k];
		settle();
	}
	check_ahead(40, PER_CONTAINER - 1, __LINE__);
	use_all();
	dlfs_prefetch_free(pf);
}

/* Read-ahead off, or no background reads yet: streams are followed (the
 * read core reads whole chunks for them), nothing is loaded. */
static void test_off(void)
{
	struct dlfs_prefetch *off = new_pf(fill, 0);
	struct dlfs_prefetch *nofill = new_pf(NULL, 8);
	for (uint64_t k = 0; k < 6; k++) {
		demand(off, OTHER, k);
		CHECK(dlfs_prefetch_in_stream(off, OTHER, k + 1) == (k > 1));
	}
	for (uint64_t k = 10; k < 16; k++) {
		demand(nofill, OTHER, k);
		CHECK(dlfs_prefetch_in_stream(nofill, OTHER, k + 1) ==
		      (k > 11));
	}
	settle();
	CHECK(!loaded(OTHER, 6));
	CHECK(!loaded(OTHER, 16));
	CHECK_EQ(fill_streamed(), streamed);
	/* Once the background reads are there, read-ahead starts. */
	dlfs_prefetch_set_fill(nofill, fill);
	demand(nofill, OTHER, 30);
	demand(nofill, OTHER, 31);
	demand(nofill, OTHER, 32);
	streamed += 2;
	settle();
	CHECK(loaded(OTHER, 33) && loaded(OTHER, 34));
	CHECK(!loaded(OTHER, 35));
	dlfs_prefetch_free(off);
	dlfs_prefetch_free(nofill);
}

int main(void)
{
	struct dlfs_err err = {0};
	struct dlfs_stats st;
	struct dlfs_fetch fetch;
	char *src = t_tmpdir(), *dir = t_tmpdir();
	char *out = t_path(dir, "ds.dlfs");
	/* One file per chunk, four full containers. */
	for (int i = 0; i < 4 * PER_CONTAINER; i++) {
		char n[32];
		snprintf(n, sizeof(n), "f%03d", i);
		t_write(src, n, CS, (uint32_t)i + 1);
	}
	if (t_pack(src, out, CS, PER_CONTAINER * CS, 0))
		return 1;
	if (dlfs_ds_open(out, &ds, &err) || dlfs_txn_begin(ds, &txn, &err)) {
		fprintf(stderr, "open: %s\n", err.msg);
		return 1;
	}
	CHECK_EQ(dlfs_ds_info(ds)->super.n_containers, 4);
	CHECK_EQ(dlfs_ds_container(ds, STREAM)->n_chunks, PER_CONTAINER);
	dlfs_stats_init(&st);
	CHECK_EQ(dlfs_fetch_init(&fetch, ds, &st), 0);
	CHECK_EQ(dlfs_cache_new(CS, SLOTS * CS, dlfs_fetch_load, &fetch,
				&cache, &err),
		 0);
	struct dlfs_fill_conf fc = {
		.cache = cache, .fetch = &fetch, .depth = 1,
		.mode = DLFS_FILL_NONE, .home_hi = dlfs_ds_n_chunks(ds),
	};
	CHECK_EQ(dlfs_fill_new(&fc, &fill, &err), 0);
	CHECK_EQ(dlfs_fill_start(fill, &err), 0);

	test_window();
	test_off();

	dlfs_fill_free(fill);
	dlfs_cache_free(cache);
	dlfs_fetch_destroy(&fetch);
	dlfs_txn_end(txn);
	dlfs_ds_close(ds);
	t_rmrf(src);
	t_rmrf(dir);
	free(src);
	free(dir);
	free(out);
	return t_done("test_prefetch");
}
