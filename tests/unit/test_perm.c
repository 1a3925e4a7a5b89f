/*
 * Epoch permutations: every size gives a bijection whose inverse is
 * right; the same (seed, epoch) gives the same order, another epoch or
 * seed another one; and over many epochs each position is uniform
 * (chi-square); and the orders are those of every earlier release (a job's
 * ranks, and a rerun, must compute the same ones).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "perm.h"
#include "tutil.h"

static void test_bijection(void)
{
	const uint64_t sizes[] = {1, 2, 3, 4, 5, 7, 8, 9, 100, 1000, 4097,
				  65537, 100003};
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		uint64_t n = sizes[s];
		uint8_t *seen = calloc(n, 1);
		struct dlfs_perm p;
		dlfs_perm_init(&p, n, 42, 3);
		int bad = 0;
		for (uint64_t i = 0; i < n; i++) {
			uint64_t x = dlfs_perm_at(&p, i);
			if (x >= n || seen[x] || dlfs_perm_index(&p, x) != i)
				bad++;
			else
				seen[x] = 1;
		}
		if (bad)
			fprintf(stderr, "n=%llu: %d bad positions\n",
				(unsigned long long)n, bad);
		CHECK_EQ(bad, 0);
		free(seen);
	}
}

static void test_keys(void)
{
	const uint64_t n = 10000;
	struct dlfs_perm a, b, c, d;
	dlfs_perm_init(&a, n, 7, 1);
	dlfs_perm_init(&b, n, 7, 1);
	dlfs_perm_init(&c, n, 7, 2);
	dlfs_perm_init(&d, n, 8, 1);
	uint64_t same_ab = 0, same_ac = 0, same_ad = 0, fixed = 0;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t x = dlfs_perm_at(&a, i);
		same_ab += x == dlfs_perm_at(&b, i);
		same_ac += x == dlfs_perm_at(&c, i);
		same_ad += x == dlfs_perm_at(&d, i);
		fixed += x == i;
	}
	CHECK_EQ(same_ab, n);
	/* Unrelated orders agree on about one position in expectation. */
	CHECK(same_ac < 10);
	CHECK(same_ad < 10);
	CHECK(fixed < 10);
}

/* Where does each of 8 items land among 8 positions, over 16000 epochs? */
static void test_uniform(void)
{
	enum { N = 8, EPOCHS = 16000 };
	static unsigned count[N][N];
	memset(count, 0, sizeof(count));
	for (uint64_t e = 0; e < EPOCHS; e++) {
		struct dlfs_perm p;
		dlfs_perm_init(&p, N, 1234, e);
		for (uint64_t i = 0; i < N; i++)
			count[i][dlfs_perm_at(&p, i)]++;
	}
	double chi = 0, expect = (double)EPOCHS / N;
	for (int i = 0; i < N; i++)
		for (int j = 0; j < N; j++)
			chi += (count[i][j] - expect) * (count[i][j] - expect) /
			       expect;
	/* 49 degrees of freedom: the 0.999 quantile is about 85.4. */
	fprintf(stderr, "test_perm: chi-square %.1f (49 dof)\n", chi);
	CHECK(chi < 85.4);
}

/* A larger dataset: items 0..9 of 1000 land in each tenth of the order
 * equally often over 3000 epochs. */
static void test_uniform_large(void)
{
	enum { N = 1000, ITEMS = 10, BUCKETS = 10, EPOCHS = 3000 };
	static unsigned count[ITEMS][BUCKETS];
	memset(count, 0, sizeof(count));
	for (uint64_t e = 0; e < EPOCHS; e++) {
		struct dlfs_perm p;
		dlfs_perm_init(&p, N, 99, e);
		for (uint64_t i = 0; i < ITEMS; i++)
			count[i][dlfs_perm_index(&p, i) * BUCKETS / N]++;
	}
	double chi = 0, expect = (double)EPOCHS / BUCKETS;
	for (int i = 0; i < ITEMS; i++)
		for (int j = 0; j < BUCKETS; j++)
			chi += (count[i][j] - expect) * (count[i][j] - expect) /
			       expect;
	/* 90 degrees of freedom: the 0.999 quantile is about 137.2. */
	fprintf(stderr, "test_perm: chi-square %.1f (90 dof)\n", chi);
	CHECK(chi < 137.2);
}

/* Known answers, computed by the first release's code (XXH3 called in
 * libxxhash): a new round function or a change of XXH3 would break them. */
static void test_known(void)
{
	const uint64_t at[] = {0, 1, 2, 999, 500000, 1000002};
	const uint64_t want[] = {205812, 959899, 268886, 251837, 36430, 7153};
	struct dlfs_perm p;
	dlfs_perm_init(&p, 1000003, 42, 3);
	for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
		CHECK_EQ(dlfs_perm_at(&p, at[i]), want[i]);
		CHECK_EQ(dlfs_perm_index(&p, want[i]), at[i]);
	}
}

/* Runs of positions in lockstep (perm.c writes XXH3's round out as
 * vectors): the same as one at a time, for sizes around the lane count,
 * runs that end inside a group of lanes, and many keys, including halves
 * of 32 bits. */
static void test_many(void)
{
	const uint64_t sizes[] = {1, 2, 7, 8, 9, 17, 31, 32, 33, 63, 65, 100,
				  4097, 100003, UINT64_C(1) << 40,
				  (UINT64_C(1) << 63) + 5, UINT64_MAX};
	const uint64_t seeds[] = {9, 0, UINT64_MAX, UINT64_C(0x80000000),
				  UINT64_C(0x123456789abcdef0)};
	uint64_t out[300];
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		struct dlfs_perm p;
		dlfs_perm_init(&p, sizes[s], seeds[s % 5], 4 + s);
		for (uint64_t first = 0; first < sizes[s];
		     first = first >= sizes[s] / 4 ? sizes[s] : 4 * first + 1) {
			size_t n = sizes[s] - first < 300 ? sizes[s] - first : 300;
			for (size_t len = 0; len <= n; len += 1 + len / 2) {
				dlfs_perm_at_many(&p, first, len, out);
				int bad = 0;
				for (size_t i = 0; i < len; i++)
					bad += out[i] != dlfs_perm_at(&p, first + i);
				CHECK_EQ(bad, 0);
			}
		}
	}
}

int main(void)
{
	test_known();
	test_many();
	test_bijection();
	test_keys();
	test_uniform();
	test_uniform_large();
	return t_done("test_perm");
}
