/*
 * Bags (bags.c, through bags.h) over a real dataset and RAM tier:
 *   - the runs: none of nothing; containers never merge; neighbours in
 *     shared pages merge for free; gaps merge smallest first while the
 *     pages stay within the waste bound; a run stays within max_run;
 *   - a planned window: bags hold the plan's files with the bytes of the
 *     source, fewer PFS reads than files, only the files' bytes in the
 *     entry, each file a use once; a bag whose files were all read is let
 *     go; a file not planned, or after a reset, is not found;
 *   - a file whose bag is not loaded yet is not found, then is;
 *   - a file whose bytes are damaged is left out (counted bad), the rest
 *     of its bag served;
 *   - files whose chunk the RAM tier has are passed over.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "bags.h"
#include "cache.h"
#include "fetch.h"
#include "tutil.h"

#define CS 65536u    /* chunk and entry size */
#define NF 96        /* files */
#define FSIZE 3000u  /* each file's size: 21 a chunk */
#define SLOTS 8

static struct dlfs_ds *ds;
static struct dlfs_txn *txn;
static struct dlfs_stats st;
static struct dlfs_fetch fetch;
static uint64_t ino_of[NF];
static uint8_t scratch[DLFS_BAGS_SCRATCH] __attribute__((aligned(4096)));

/* ---- runs ---- */

static void test_runs(void)
{
	uint32_t c[4] = {0, 0, 0, 0}, run[4];
	uint64_t off[4], size[4];

	CHECK_EQ(dlfs_bags_runs(c, off, size, 0, CS, 1.5, run), 0);

	/* Adjacent, but in two containers. */
	uint32_t c2[2] = {0, 1};
	off[0] = 0, off[1] = 1000, size[0] = size[1] = 1000;
	CHECK_EQ(dlfs_bags_runs(c2, off, size, 2, CS, 1.5, run), 2);
	CHECK(run[0] == 0 && run[1] == 1);

	/* Four files in one page: one run, whatever the bound. */
	for (int i = 0; i < 4; i++)
		off[i] = 1000u * (unsigned)i, size[i] = 1000;
	CHECK_EQ(dlfs_bags_runs(c, off, size, 4, CS, 1.0, run), 1);
	CHECK(run[0] == 0 && run[3] == 0);

	/* Gaps of 3, 1 and 2 pages between files of 2 pages: 8 pages of
	 * files allow 4 of gaps at 1.5x; the smallest go first, the last
	 * does not fit. */
	uint64_t page = 4096;
	off[0] = 0;
	off[1] = off[0] + 2 * page + 3 * page;
	off[2] = off[1] + 2 * page + 1 * page;
	off[3] = off[2] + 2 * page + 2 * page;
	for (int i = 0; i < 4; i++)
		size[i] = 2 * page;
	CHECK_EQ(dlfs_bags_runs(c, off, size, 4, CS, 1.5, run), 2);
	CHECK(run[0] == 0 && run[1] == 1 && run[2] == 1 && run[3] == 1);
	/* At 1.0x no gap is read. */
	CHECK_EQ(dlfs_bags_runs(c, off, size, 4, CS, 1.0, run), 4);
	/* With room for all of them: one run. */
	CHECK_EQ(dlfs_bags_runs(c, off, size, 4, CS, 3.0, run), 1);

	/* A run stays within max_run (4 pages): 2 + 2 merge, not a third. */
	for (int i = 0; i < 3; i++)
		off[i] = 2 * page * (unsigned)i, size[i] = 2 * page;
	CHECK_EQ(dlfs_bags_runs(c, off, size, 3, 4 * page, 1.5, run), 2);
	CHECK(run[0] == 0 && run[1] == 0 && run[2] == 1);
}

/* ---- bags over a dataset ---- */

struct plan {
	const uint32_t *order; /* indexes into ino_of */
	size_t n;
	uint64_t epoch, reader;
};

static size_t plan_files(void *arg, struct dlfs_txn *t, uint64_t from,
			 uint64_t *ino, size_t max, uint64_t *epoch,
			 uint64_t *reader)
{
	(void)t;
	struct plan *p = arg;
	*epoch = p->epoch;
	*reader = p->reader;
	size_t n = 0;
	for (uint64_t j = from; j < p->n && n < max; j++)
		ino[n++] = ino_of[p->order[j]];
	return n;
}

static struct dlfs_cache *new_cache(void)
{
	struct dlfs_cache *c = NULL;
	struct dlfs_err err = {0};
	CHECK_EQ(dlfs_cache_new(CS, (uint64_t)SLOTS * CS, dlfs_fetch_load,
				&fetch, &c, &err),
		 0);
	dlfs_cache_set_prefetch_limit(c, SLOTS);
	return c;
}

static struct dlfs_bags *new_bags(struct dlfs_cache *cache, unsigned max)
{
	struct dlfs_bags *b = NULL;
	struct dlfs_err err = {0};
	struct dlfs_bags_conf bc = {.cache = cache, .fetch = &fetch,
				    .max = max, .entry_size = CS};
	CHECK_EQ(dlfs_bags_new(&bc, &b, &err), 0);
	return b;
}

/* Load every bag there is to load now. @return how many. */
static unsigned load_all(struct dlfs_bags *b)
{
	unsigned bag, n = 0;
	int kind;
	while ((kind = dlfs_bags_next(b, txn, &bag))) {
		CHECK_EQ(kind, 1); /* one thread: nobody else's load to help */
		CHECK_EQ(dlfs_bags_load(b, txn, bag, scratch), 0);
		n++;
	}
	return n;
}

/* Read file i out of b, first use, and compare with its source bytes.
 * @return 0 if served. */
static int read_one(struct dlfs_bags *b, struct dlfs_cache *cache, int i)
{
	struct dlfs_chunk_ref ref;
	size_t off;
	uint8_t want[FSIZE];
	if (dlfs_bags_get(b, ino_of[i], 1, &ref, &off))
		return -1;
	t_fill(want, FSIZE, (uint32_t)i + 1);
	CHECK(off + FSIZE <= ref.len);
	CHECK(!memcmp(ref.data + off, want, FSIZE));
	dlfs_cache_put(cache, &ref, FSIZE);
	return 0;
}

static uint32_t order[NF];

static void test_window(void)
{
	struct dlfs_cache *cache = new_cache();
	struct dlfs_bags *b = new_bags(cache, 2);
	struct plan p = {order, NF, 0, 0};
	struct dlfs_bags_stats s;
	dlfs_bags_set_planner(b, plan_files, &p);
	uint64_t reads0 = atomic_load(&st.pfs_reads);

	/* Both bags free: 3/4 of two entries of files. */
	CHECK_EQ(load_all(b), 2);
	dlfs_bags_get_stats(b, &s);
	CHECK_EQ(s.bags, 2);
	CHECK(s.files >= 2 * (CS * 3 / 4 / FSIZE) - 2);
	CHECK(s.runs * 3 < s.files); /* neighbours merged */
	CHECK_EQ(atomic_load(&st.pfs_reads) - reads0, s.runs);
	CHECK_EQ(s.live, 2);
	uint64_t planned = s.files;

	/* The plan's files, in its order: each served once as a use. */
	int served = 0;
	for (size_t j = 0; j < planned; j++)
		served += !read_one(b, cache, (int)order[j]);
	CHECK_EQ((uint64_t)served, planned);
	dlfs_bags_get_stats(b, &s);
	CHECK_EQ(s.hits, planned);
	CHECK_EQ(s.live, 0); /* all read: let go */
	CHECK_EQ(s.unread, 0);
	/* Let go: no longer found. */
	CHECK(read_one(b, cache, (int)order[0]));

	/* The next window follows the plan; a reset forgets it. */
	p.reader = planned;
	CHECK(load_all(b) >= 1);
	CHECK(!read_one(b, cache, (int)order[planned]));
	dlfs_bags_reset(b);
	dlfs_bags_get_stats(b, &s);
	CHECK_EQ(s.live, 0);
	CHECK(read_one(b, cache, (int)order[planned + 1]));

	dlfs_bags_free(b);
	dlfs_cache_free(cache);
}

/* A file whose bag is not loaded yet is not found (its reader does not
 * wait): once loaded, it is. */
static void test_pending(void)
{
	struct dlfs_cache *cache = new_cache();
	struct dlfs_bags *b = new_bags(cache, 4);
	struct plan p = {order, NF, 0, 0};
	unsigned bag;
	dlfs_bags_set_planner(b, plan_files, &p);
	/* Plans four bags, hands the first to this "fill thread". */
	CHECK_EQ(dlfs_bags_next(b, txn, &bag), 1);
	CHECK(read_one(b, cache, (int)order[0]));
	CHECK_EQ(dlfs_bags_load(b, txn, bag, scratch), 0);
	CHECK(!read_one(b, cache, (int)order[0]));
	/* The last planned file: in a bag still pending. */
	CHECK(read_one(b, cache, (int)order[NF / 2]));
	CHECK_EQ(load_all(b), 3);
	CHECK(!read_one(b, cache, (int)order[NF / 2]));
	dlfs_bags_free(b);
	dlfs_cache_free(cache);
}

/* A damaged file is left out; the rest of its bag is served. */
static void test_damage(const char *container)
{
	struct dlfs_cache *cache = new_cache();
	struct dlfs_bags *b = new_bags(cache, 2);
	struct plan p = {order, NF, 0, 0};
	struct dlfs_bags_stats s;
	struct dlfs_inode in;
	int bad = (int)order[3];
	CHECK_EQ(dlfs_stat(txn, ino_of[bad], &in, NULL), 0);
	t_flip(container, in.offset + 7);
	dlfs_bags_set_planner(b, plan_files, &p);
	CHECK(load_all(b) >= 1);
	dlfs_bags_get_stats(b, &s);
	CHECK_EQ(s.bad, 1);
	CHECK(read_one(b, cache, bad));
	CHECK(!read_one(b, cache, (int)order[2]));
	CHECK(!read_one(b, cache, (int)order[4]));
	t_flip(container, in.offset + 7);
	dlfs_bags_free(b);
	dlfs_cache_free(cache);
}

/* Files of a chunk a prefetch hold keeps in RAM are not planned; those of
 * a chunk merely cached are (it may be evicted before they are read:
 * each would then be read alone). held: hold it. */
static void test_in_ram(int held)
{
	struct dlfs_cache *cache = new_cache();
	struct dlfs_bags *b = new_bags(cache, 2);
	struct plan p = {order, NF, 0, 0};
	struct dlfs_inode in;
	struct dlfs_chunk_ref ref;
	struct dlfs_err err = {0};
	int first = (int)order[0];
	CHECK_EQ(dlfs_stat(txn, ino_of[first], &in, NULL), 0);
	uint64_t k, k1;
	dlfs_file_chunks(CS, &in, 0, in.size, &k, &k1);
	uint64_t key = dlfs_cache_chunk_key(in.container, k);
	if (held)
		CHECK_EQ(dlfs_cache_prefetch(cache, key, NULL, txn,
					     DLFS_CACHE_PF_QUIET, &ref, &err),
			 0);
	else
		CHECK_EQ(dlfs_cache_get(cache, key, NULL, txn, &ref, &err), 0);
	if (!held)
		dlfs_cache_put(cache, &ref, 0);
	CHECK(dlfs_cache_contains(cache, key));
	CHECK_EQ(dlfs_cache_held(cache, key), held);
	dlfs_bags_set_planner(b, plan_files, &p);
	CHECK(load_all(b) >= 1);
	/* Held: the first file's chunk-mates are passed over, the next
	 * ones planned. Cached only: all are (two bags' window, 7/8 of two
	 * entries, is 38 files). */
	for (int j = 0; j < 36; j++) {
		uint64_t j0, j1;
		CHECK_EQ(dlfs_stat(txn, ino_of[order[j]], &in, NULL), 0);
		dlfs_file_chunks(CS, &in, 0, in.size, &j0, &j1);
		CHECK_EQ(read_one(b, cache, (int)order[j]) == 0,
			 !held || j0 != k);
	}
	dlfs_bags_free(b);
	if (held) {
		dlfs_cache_put(cache, &ref, 0);
		CHECK(!dlfs_cache_held(cache, key));
	}
	dlfs_cache_free(cache);
}

int main(void)
{
	char *src = t_tmpdir(), *dir = t_tmpdir();
	char *out = t_path(dir, "ds.dlfs");
	struct dlfs_err err = {0};
	for (int i = 0; i < NF; i++) {
		char n[32];
		snprintf(n, sizeof(n), "f%03d", i);
		t_write(src, n, FSIZE, (uint32_t)i + 1);
	}
	if (t_pack(src, out, CS, 64 * CS, 0) || dlfs_ds_open(out, &ds, &err) ||
	    dlfs_txn_begin(ds, &txn, &err)) {
		fprintf(stderr, "dataset: %s\n", err.msg);
		return 1;
	}
	for (int i = 0; i < NF; i++) {
		char n[32];
		snprintf(n, sizeof(n), "/f%03d", i);
		CHECK_EQ(dlfs_resolve(txn, n, &ino_of[i], NULL), 0);
	}
	/* The files in reverse: the plan's order is not their place. */
	for (int i = 0; i < NF; i++)
		order[i] = (uint32_t)(NF - 1 - i);
	dlfs_stats_init(&st);
	CHECK_EQ(dlfs_fetch_init(&fetch, ds, &st), 0);

	test_runs();
	test_window();
	test_pending();
	test_in_ram(0);
	test_in_ram(1);
	char *c0 = t_path(out, "000000.dlc");
	test_damage(c0);

	free(c0);
	dlfs_fetch_destroy(&fetch);
	dlfs_txn_end(txn);
	dlfs_ds_close(ds);
	t_rmrf(src);
	t_rmrf(dir);
	free(src);
	free(dir);
	free(out);
	return t_done("test_bags");
}
