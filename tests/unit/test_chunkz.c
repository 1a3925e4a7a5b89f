/*
 * One chunk's compression (src/pack/chunkz.c, through chunkz.h), as
 * dlfs-format(5) `compressed` and dlfs-pack(1) --compress describe it:
 *  - a compressible chunk becomes one zstd frame that decompresses to
 *    it, zeros after the frame to the next 4 KiB, the record's xxh3 of
 *    the frame and sum of the logical bytes;
 *  - random bytes, and a chunk of one page, stay raw (record sums
 *    equal, the bytes untouched), and so does a frame that would save
 *    less than a page, or less than a 32nd of a 4 MiB chunk (128 KiB:
 *    bytes that barely compress, such as JPEGs, are not worth
 *    decompressing); one that saves more is kept;
 *  - the frame depends on the bytes and the level only: a context used
 *    before, or another context, gives the same bytes (the packer's
 *    output must not depend on which thread compressed a chunk);
 *  - zstd failing for another reason than room (here: no memory for its
 *    workspace) is an error that says zstd's, the chunk left as it was.
 */
#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_createCCtx_advanced */
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "chunkz.h"
#include "dlfs/format.h"
#include "tutil.h"

#define CS (64u << 10)
static struct dlfs_err err;

/* Text-like bytes: lines that repeat with variations. */
static void fill_text(uint8_t *b, size_t len, unsigned seed)
{
	size_t at = 0;
	for (unsigned i = 0; at < len; i++) {
		char line[96];
		int n = snprintf(line, sizeof(line),
				 "line %u of sample %u: the quick brown fox\n",
				 i, seed);
		size_t k = (size_t)n < len - at ? (size_t)n : len - at;
		memcpy(b + at, line, k);
		at += k;
	}
}

/* A chunk buffer of CS bytes: len bytes of src, zeros after them. */
static uint8_t *chunk_of(const uint8_t *src, size_t len)
{
	uint8_t *b = calloc(1, CS);
	memcpy(b, src, len);
	return b;
}

static int all_zero(const uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (b[i])
			return 0;
	return 1;
}

static void test_compressible(struct pk_zctx *z)
{
	uint8_t *src = malloc(CS);
	fill_text(src, CS, 1);
	uint8_t *b = chunk_of(src, CS);
	struct pk_zchunk r;
	CHECK_EQ(pk_zchunk(z, b, CS, &r, &err), 0);
	CHECK_EQ(r.flags, DLFS_CHUNK_ZSTD);
	CHECK(r.stored_length > 0 && r.stored_length <= CS - 4096);
	CHECK(r.sum == XXH3_64bits(src, CS));
	CHECK(r.xxh3 == XXH3_64bits(b, r.stored_length));
	CHECK(all_zero(b + r.stored_length,
		       ((r.stored_length + 4095) & ~4095u) - r.stored_length));
	uint8_t *back = malloc(CS);
	size_t n = ZSTD_decompress(back, CS, b, r.stored_length);
	CHECK(!ZSTD_isError(n));
	CHECK_EQ(n, CS);
	CHECK(n == CS && !memcmp(back, src, CS));
	/* A frame carries no checksum: the record's covers it. */
	ZSTD_frameHeader fh;
	CHECK_EQ(ZSTD_getFrameHeader(&fh, b, r.stored_length), 0);
	CHECK_EQ(fh.checksumFlag, 0);
	CHECK(fh.frameContentSize == CS);

	/* A container's last chunk, shorter than the chunk size. */
	free(b);
	b = chunk_of(src, 5000);
	CHECK_EQ(pk_zchunk(z, b, 5000, &r, &err), 0);
	CHECK_EQ(r.flags, DLFS_CHUNK_ZSTD);
	CHECK(r.stored_length < 4096);
	CHECK(r.sum == XXH3_64bits(src, 5000));
	n = ZSTD_decompress(back, CS, b, r.stored_length);
	CHECK(n == 5000 && !memcmp(back, src, 5000));
	free(back);
	free(b);
	free(src);
}

/* len bytes of src as a chunk stay raw: record sums equal, the bytes
 * and the zeros after them untouched. */
static void expect_raw(struct pk_zctx *z, const uint8_t *src, size_t len)
{
	uint8_t *b = chunk_of(src, len);
	struct pk_zchunk r;
	CHECK_EQ(pk_zchunk(z, b, len, &r, &err), 0);
	CHECK_EQ(r.flags, 0);
	CHECK_EQ(r.stored_length, len);
	CHECK(r.sum == XXH3_64bits(src, len) && r.xxh3 == r.sum);
	CHECK(!memcmp(b, src, len) && all_zero(b + len, CS - len));
	free(b);
}

static void test_raw(struct pk_zctx *z)
{
	uint8_t *src = malloc(CS);
	t_fill(src, CS, 7);
	expect_raw(z, src, CS);
	/* One page: nothing to save, however compressible. */
	fill_text(src, 4096, 2);
	expect_raw(z, src, 4096);
	/* Two pages, the second barely used: the frame must fit in one
	 * page, and random bytes do not. */
	t_fill(src, 4100, 9);
	expect_raw(z, src, 4100);
	free(src);
}

/* A 4 MiB chunk of random bytes with a run of zeros: zstd saves about
 * the run. 64 KiB is less than a 32nd of the chunk: raw; 256 KiB is
 * more: a frame. */
static void test_barely(void)
{
	const size_t big = 4u << 20;
	struct pk_zctx z;
	CHECK_EQ(pk_zsave_min(big), 128u << 10);
	CHECK_EQ(pk_zsave_min(8192), 4096);
	CHECK_EQ(pk_zctx_init(&z, 3, big, &err), 0);
	uint8_t *b = malloc(big);
	for (size_t zeros = 64u << 10; zeros <= 256u << 10; zeros *= 4) {
		struct pk_zchunk r;
		t_fill(b, big, 5);
		memset(b + big / 2, 0, zeros);
		CHECK_EQ(pk_zchunk(&z, b, big, &r, &err), 0);
		if (zeros < (128u << 10)) {
			CHECK_EQ(r.flags, 0);
			CHECK_EQ(r.stored_length, big);
		} else {
			CHECK_EQ(r.flags, DLFS_CHUNK_ZSTD);
			CHECK(r.stored_length <= big - (128u << 10));
		}
	}
	free(b);
	pk_zctx_free(&z);
}

/* The same chunk through a fresh context and through one that has
 * compressed other chunks first: the same stored bytes. */
static void test_same_bytes(struct pk_zctx *used)
{
	struct pk_zctx fresh;
	CHECK_EQ(pk_zctx_init(&fresh, 3, CS, &err), 0);
	uint8_t *src = malloc(CS);
	fill_text(src, CS, 5);
	for (unsigned i = 0; i < CS; i += 97)
		src[i] = (uint8_t)(i * 31);
	uint8_t *a = chunk_of(src, CS), *b = chunk_of(src, CS);
	struct pk_zchunk ra, rb;
	CHECK_EQ(pk_zchunk(used, a, CS, &ra, &err), 0);
	CHECK_EQ(pk_zchunk(&fresh, b, CS, &rb, &err), 0);
	CHECK_EQ(ra.flags, DLFS_CHUNK_ZSTD);
	CHECK_EQ(ra.stored_length, rb.stored_length);
	CHECK(ra.xxh3 == rb.xxh3 && ra.sum == rb.sum);
	CHECK(!memcmp(a, b, CS));
	free(a);
	free(b);

	/* Another level is another frame (the level is really applied). */
	struct pk_zctx l19;
	CHECK_EQ(pk_zctx_init(&l19, 19, CS, &err), 0);
	a = chunk_of(src, CS);
	CHECK_EQ(pk_zchunk(&l19, a, CS, &ra, &err), 0);
	CHECK(ra.stored_length != rb.stored_length || ra.xxh3 != rb.xxh3);
	free(a);
	pk_zctx_free(&l19);
	pk_zctx_free(&fresh);
	free(src);
}

/* An allocator that refuses everything after its first n calls. */
static int allow;
static void *stingy_alloc(void *opaque, size_t size)
{
	(void)opaque;
	return allow-- > 0 ? malloc(size) : NULL;
}
static void stingy_free(void *opaque, void *p)
{
	(void)opaque;
	free(p);
}

static void test_error(void)
{
	struct pk_zctx z;
	CHECK_EQ(pk_zctx_init(&z, 3, CS, &err), 0);
	ZSTD_freeCCtx(z.cc);
	/* The context itself, then no workspace for the first frame. */
	allow = 1;
	z.cc = ZSTD_createCCtx_advanced((ZSTD_customMem){
		.customAlloc = stingy_alloc, .customFree = stingy_free});
	CHECK(z.cc != NULL);
	uint8_t *src = malloc(CS);
	fill_text(src, CS, 3);
	uint8_t *b = chunk_of(src, CS);
	struct pk_zchunk r;
	memset(&err, 0, sizeof(err));
	CHECK_EQ(pk_zchunk(&z, b, CS, &r, &err), -ENOMEM);
	CHECK_EQ(err.code, -ENOMEM);
	CHECK(!strncmp(err.msg, "zstd: ", 6));
	CHECK(!memcmp(b, src, CS));
	if (strncmp(err.msg, "zstd: ", 6))
		fprintf(stderr, "message: %s\n", err.msg);
	pk_zctx_free(&z);
	free(b);
	free(src);
}

int main(void)
{
	struct pk_zctx z;
	CHECK_EQ(pk_zctx_init(&z, 3, CS, &err), 0);
	test_compressible(&z);
	test_raw(&z);
	test_barely();
	test_same_bytes(&z);
	pk_zctx_free(&z);
	test_error();
	return t_done("test_chunkz");
}
