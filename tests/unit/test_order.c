/*
 * Epoch orders: for every mode, the shares of 4 ranks together are every
 * file exactly once, a position maps back to itself, two epochs differ,
 * the same seed repeats; LOCAL keeps each rank on its own shard; CHUNKED
 * keeps each window of positions inside its window of chunks, and takes
 * only chunk runs that hold every file once.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "order.h"
#include "tutil.h"

enum { N = 5000, CHUNKS = 300, W = 4, WINDOW = 8 };
static uint64_t chunk_first[CHUNKS + 1];

/* Uneven files per chunk, some chunks empty (a big file's tail). */
static void make_chunks(void)
{
	uint64_t f = 0;
	for (int g = 0; g < CHUNKS; g++) {
		chunk_first[g] = f;
		uint64_t k = (g % 7 == 3) ? 0 : (uint64_t)(g * 37 % 29) + 3;
		f += k;
		if (f > N)
			f = N;
	}
	chunk_first[CHUNKS] = N;
}

static uint64_t chunk_of(uint64_t f)
{
	int g = CHUNKS - 1;
	while (chunk_first[g] > f)
		g--;
	return (uint64_t)g;
}

static void check_mode(enum dlfs_shuffle mode)
{
	struct dlfs_epoch_conf conf = {
		.n_files = N, .mode = mode, .seed = 77, .size = W,
		.window = WINDOW, .n_chunks = CHUNKS,
		.chunk_first = chunk_first,
	};
	uint8_t *seen = calloc(N, 1);
	uint64_t *e1 = calloc(N, sizeof(uint64_t));
	int bad_pos = 0, dup = 0, differ = 0, repeat_bad = 0, shard_bad = 0;
	for (uint32_t r = 0; r < W; r++) {
		conf.rank = r;
		struct dlfs_epoch *o, *o2, *o3;
		CHECK_EQ(dlfs_epoch_new(&conf, 1, &o), 0);
		CHECK_EQ(dlfs_epoch_new(&conf, 2, &o2), 0);
		CHECK_EQ(dlfs_epoch_new(&conf, 1, &o3), 0);
		uint64_t s = dlfs_epoch_share_start(o);
		CHECK_EQ(s, (uint64_t)N * r / W);
		CHECK_EQ(dlfs_epoch_share_len(o), (uint64_t)N * (r + 1) / W - s);
		for (uint64_t j = 0; j < dlfs_epoch_share_len(o); j++) {
			uint64_t f = dlfs_epoch_at(o, s + j);
			if (f >= N || seen[f]++)
				dup++;
			else if (dlfs_epoch_position(o, f) != s + j)
				bad_pos++;
			e1[s + j] = f;
			differ += dlfs_epoch_at(o2, s + j) != f;
			repeat_bad += dlfs_epoch_at(o3, s + j) != f;
			if (mode == DLFS_SHUFFLE_LOCAL &&
			    (f < s || f >= s + dlfs_epoch_share_len(o)))
				shard_bad++;
		}
		/* Runs of positions at once: the same files, for runs in
		 * the share, across its ends, and over the whole order. */
		uint64_t *many = calloc(N, sizeof(uint64_t));
		uint64_t len = dlfs_epoch_share_len(o);
		const uint64_t runs[][2] = {{s, len}, {s, len / 3 + 1},
					    {s + len / 2, len - len / 2},
					    {s ? s - 1 : 0, len ? len : 1},
					    {0, N}};
		for (size_t k = 0; k < sizeof(runs) / sizeof(runs[0]); k++) {
			uint64_t p0 = runs[k][0], n = runs[k][1];
			if (p0 + n > N)
				n = N - p0;
			dlfs_epoch_at_many(o, p0, n, many);
			int bad = 0;
			for (uint64_t i = 0; i < n; i++)
				bad += many[i] != dlfs_epoch_at(o, p0 + i);
			CHECK_EQ(bad, 0);
		}
		free(many);
		dlfs_epoch_free(o);
		dlfs_epoch_free(o2);
		dlfs_epoch_free(o3);
	}
	for (uint64_t f = 0; f < N; f++)
		dup += !seen[f];
	CHECK_EQ(dup, 0);
	CHECK_EQ(bad_pos, 0);
	CHECK_EQ(repeat_bad, 0);
	CHECK_EQ(shard_bad, 0);
	CHECK(differ > N / 2);
	if (mode == DLFS_SHUFFLE_CHUNKED) {
		/* Consecutive positions change chunks only at a window's
		 * chunk boundaries: at most N chunks visited per window. */
		uint64_t windows_seen = 0, i = 0;
		while (i < N) {
			uint64_t chunks[WINDOW * 4], nc = 0, j = i;
			for (; j < N; j++) {
				uint64_t g = chunk_of(e1[j]), k;
				for (k = 0; k < nc && chunks[k] != g; k++)
					;
				if (k == nc) {
					if (nc == WINDOW)
						break;
					chunks[nc++] = g;
				}
			}
			windows_seen++;
			i = j;
		}
		/* Each stretch of at most WINDOW chunks is a window, so
		 * the stretches number about chunks-with-files / WINDOW. */
		CHECK(windows_seen <= (CHUNKS + WINDOW - 1) / WINDOW + 1);
	}
	free(seen);
	free(e1);
}

/*
 * CHUNKED takes only a chunk_first that puts every file in one chunk's
 * run: one that leaves files before chunk 0's run (the empty files a
 * dataset starts with, once) or that falls would skip some files and
 * repeat others. A dataset with no chunks is shuffled whole.
 */
static void check_partitions(void)
{
	struct dlfs_epoch_conf conf = {
		.n_files = N, .mode = DLFS_SHUFFLE_CHUNKED, .seed = 77,
		.size = 1, .window = WINDOW, .n_chunks = CHUNKS,
		.chunk_first = chunk_first,
	};
	struct dlfs_epoch *o = NULL;
	chunk_first[0] = 3;
	CHECK_EQ(dlfs_epoch_new(&conf, 1, &o), -EINVAL);
	chunk_first[0] = 0;
	uint64_t keep = chunk_first[10];
	chunk_first[10] = chunk_first[11] + 1;
	CHECK_EQ(dlfs_epoch_new(&conf, 1, &o), -EINVAL);
	chunk_first[10] = keep;
	CHECK_EQ(dlfs_epoch_new(&conf, 1, &o), 0);
	dlfs_epoch_free(o);

	uint64_t none[1] = {N};
	conf.n_chunks = 0;
	conf.chunk_first = none;
	CHECK_EQ(dlfs_epoch_new(&conf, 1, &o), 0);
	if (o) {
		uint8_t *seen = calloc(N, 1);
		int bad = 0;
		for (uint64_t j = 0; j < N; j++) {
			uint64_t f = dlfs_epoch_at(o, j);
			if (f >= N || seen[f]++ || dlfs_epoch_position(o, f) != j)
				bad++;
		}
		CHECK_EQ(bad, 0);
		free(seen);
		dlfs_epoch_free(o);
	}
}

/* The default seed is a fixed function of the dataset id: a restarted
 * job must get the orders it had, also under a newer dlfs. */
static void check_default_seed(void)
{
	uint8_t id[16];
	for (unsigned i = 0; i < sizeof(id); i++)
		id[i] = (uint8_t)i;
	CHECK(dlfs_epoch_default_seed(id, sizeof(id)) ==
	      UINT64_C(0x580d74c9968950ba));
	uint64_t a = dlfs_epoch_default_seed(id, sizeof(id));
	id[15] ^= 1;
	CHECK(dlfs_epoch_default_seed(id, sizeof(id)) != a);
}

int main(void)
{
	check_default_seed();
	make_chunks();
	check_mode(DLFS_SHUFFLE_GLOBAL);
	check_mode(DLFS_SHUFFLE_LOCAL);
	check_mode(DLFS_SHUFFLE_CHUNKED);
	check_partitions();
	enum dlfs_shuffle m;
	CHECK_EQ(dlfs_shuffle_parse("chunked", &m), 0);
	CHECK_EQ(m, DLFS_SHUFFLE_CHUNKED);
	CHECK_EQ(dlfs_shuffle_parse("bogus", &m), -EINVAL);
	return t_done("test_order");
}
