/*
 * The decode threads (src/core/decode.h): a compressed dataset's chunks
 * read and decompressed off the caller's thread.
 *  - Six callers at once, each over every chunk in its own order, get
 *    the bytes dlfs_chunk_read gives, zstd and raw chunks alike, from
 *    three threads; every call is counted.
 *  - A record whose stored checksum, logical checksum or length is wrong
 *    gives the caller that error with its message (the container, the
 *    chunk), as dlfs_chunk_read_rec does in the caller's own thread.
 *  - A pool of zero threads has one; freeing an idle pool is clean.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode.h"
#include "dlfs/dataset.h"
#include "dlfs/pack.h"
#include "tutil.h"

#define CS (64 * 1024)
#define CALLERS 6
#define MAX_CHUNKS 64

static struct dlfs_ds *ds;
static struct dlfs_decode *pool;
static uint64_t n_chunks;
static uint32_t chunk_c[MAX_CHUNKS];
static uint64_t chunk_k[MAX_CHUNKS];
static struct dlfs_chunk_rec recs[MAX_CHUNKS];
static uint8_t *want[MAX_CHUNKS];
static size_t want_len[MAX_CHUNKS];

/* Text that compresses, and a random file that does not. */
static void make_tree(const char *d)
{
	for (int i = 0; i < 30; i++) {
		char name[32];
		snprintf(name, sizeof(name), "t/f%02d.txt", i);
		t_write(d, name, 0, 0); /* makes its folder */
		char *p = t_path(d, name);
		FILE *f = fopen(p, "w");
		if (!f)
			abort();
		for (int j = 0; j < 400 + 97 * i; j++)
			fprintf(f, "sample %d line %d: the quick brown fox\n", i,
				j);
		fclose(f);
		free(p);
	}
	t_write(d, "r/random", 3 * CS + 123, 7);
}

static uint8_t *aligned(size_t n)
{
	void *p = NULL;
	if (posix_memalign(&p, 4096, n))
		abort();
	return p;
}

struct caller {
	unsigned seed;
	int bad;
};

static void *call(void *arg)
{
	struct caller *c = arg;
	uint8_t *buf = aligned(CS);
	for (uint64_t i = 0; i < n_chunks; i++) {
		uint64_t g = (i * 7 + c->seed) % n_chunks;
		struct dlfs_err err = {0};
		size_t len = 0;
		int ret = dlfs_decode_chunk(pool, chunk_c[g], chunk_k[g],
					    &recs[g], buf, CS, &len, &err);
		if (ret || len != want_len[g] || memcmp(buf, want[g], len)) {
			fprintf(stderr, "chunk %llu: %d (%s), %zu bytes\n",
				(unsigned long long)g, ret, err.msg, len);
			c->bad++;
		}
	}
	free(buf);
	return NULL;
}

static void test_callers(void)
{
	pthread_t t[CALLERS];
	struct caller c[CALLERS];
	uint64_t before = dlfs_decode_count(pool);
	for (unsigned i = 0; i < CALLERS; i++) {
		c[i] = (struct caller){.seed = i * 5};
		CHECK(pthread_create(&t[i], NULL, call, &c[i]) == 0);
	}
	for (unsigned i = 0; i < CALLERS; i++) {
		pthread_join(t[i], NULL);
		CHECK_EQ(c[i].bad, 0);
	}
	CHECK_EQ(dlfs_decode_count(pool) - before, CALLERS * n_chunks);
}

/* Record g with one field made wrong gives code and a message with
 * what. */
static void bad_record(uint64_t g, int field, int code, const char *what)
{
	struct dlfs_chunk_rec cr = recs[g];
	struct dlfs_err err = {0};
	uint8_t *buf = aligned(CS);
	size_t len = 99;
	if (field == 0)
		cr.xxh3 ^= 1;
	else if (field == 1)
		cr.sum ^= 1;
	else
		cr.length -= 1;
	int ret = dlfs_decode_chunk(pool, chunk_c[g], chunk_k[g], &cr, buf,
				    CS, &len, &err);
	CHECK_EQ(ret, code);
	CHECK_EQ(len, 0);
	char name[DLFS_CONTAINER_NAME_MAX];
	dlfs_container_name(chunk_c[g], name);
	if (!strstr(err.msg, what) || !strstr(err.msg, name)) {
		fprintf(stderr, "message: %s\n", err.msg);
		CHECK(0);
	}
	free(buf);
}

int main(void)
{
	struct dlfs_err err = {0};
	char *src = t_tmpdir(), *dir = t_tmpdir();
	char *out = t_path(dir, "ds.dlfs");
	make_tree(src);
	struct dlfs_pack_opts o;
	const char *srcs[] = {src};
	dlfs_pack_opts_init(&o);
	o.chunk_size = CS;
	o.container_size = 1 << 20;
	o.threads = 2;
	o.compress = DLFS_COMPRESS_ZSTD;
	struct dlfs_txn *txn = NULL;
	if (dlfs_pack(srcs, 1, out, &o, &err) || dlfs_ds_open(out, &ds, &err) ||
	    dlfs_txn_begin(ds, &txn, &err)) {
		fprintf(stderr, "set-up: %s\n", err.msg);
		return 1;
	}
	n_chunks = dlfs_ds_n_chunks(ds);
	CHECK(n_chunks >= 4 && n_chunks <= MAX_CHUNKS);
	int zstd = 0, raw = 0;
	for (uint64_t g = 0; g < n_chunks && g < MAX_CHUNKS; g++) {
		CHECK(dlfs_ds_chunk_locate(ds, g, &chunk_c[g], &chunk_k[g]) ==
		      0);
		CHECK(dlfs_chunk_get(txn, chunk_c[g], chunk_k[g], &recs[g],
				     &err) == 0);
		want[g] = aligned(CS);
		CHECK(dlfs_chunk_read(ds, txn, chunk_c[g], chunk_k[g], want[g],
				      CS, &want_len[g], &err) == 0);
		if (recs[g].flags & DLFS_CHUNK_ZSTD)
			zstd++;
		else
			raw++;
	}
	CHECK(zstd > 0 && raw > 0);

	CHECK(dlfs_decode_start(ds, 3, &pool, &err) == 0);
	test_callers();
	uint64_t z = 0;
	while (!(recs[z].flags & DLFS_CHUNK_ZSTD))
		z++;
	bad_record(z, 0, -DLFS_ECHECKSUM, "checksum mismatch");
	bad_record(z, 1, -DLFS_ECHECKSUM, "after decompression");
	bad_record(z, 2, -DLFS_ECORRUPT, "does not decompress");
	test_callers(); /* the threads are still there after errors */
	dlfs_decode_free(pool);

	/* No threads asked: one. */
	CHECK(dlfs_decode_start(ds, 0, &pool, &err) == 0);
	test_callers();
	dlfs_decode_free(pool);
	dlfs_decode_free(NULL);

	for (uint64_t g = 0; g < MAX_CHUNKS; g++)
		free(want[g]);
	dlfs_txn_end(txn);
	dlfs_ds_close(ds);
	t_rmrf(src);
	t_rmrf(dir);
	free(src);
	free(dir);
	free(out);
	return t_done("test_decode");
}
