/* Record codecs, key byte order, option parsers, path order. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "dlfs/err.h"
#include "dlfs/format.h"
#include "dlfs/pack.h"
#include "index_write.h"
#include "tutil.h"

static void test_super(void)
{
	struct dlfs_super_rec a = {
		.format_major = 1, .format_minor = 2, .chunk_size = 4 << 20,
		.container_size = 1ull << 32, .align = 8, .n_inodes = 10,
		.n_dirs = 3, .n_symlinks = 2, .n_files = 5,
		.first_file_ino = 6, .n_containers = 7,
		.total_file_bytes = 123456789012ull, .max_mtime_sec = -5,
		.features = 0x8000000000000001ull,
	};
	memset(a.dataset_id, 0xab, DLFS_ID_SIZE);
	uint8_t b[DLFS_SUPER_REC_SIZE], c[DLFS_SUPER_REC_SIZE];
	CHECK_EQ(dlfs_super_encode(&a, b), DLFS_SUPER_REC_SIZE);
	/* The major version is the first four bytes, little-endian. */
	CHECK(b[0] == 1 && b[1] == 0 && b[2] == 0 && b[3] == 0);
	CHECK(b[4] == 2);
	/* features: offset 112, little-endian. */
	CHECK(b[112] == 1 && b[119] == 0x80);
	struct dlfs_super_rec d;
	CHECK_EQ(dlfs_super_decode(b, sizeof(b), &d), 0);
	dlfs_super_encode(&d, c);
	CHECK(!memcmp(b, c, sizeof(b)));
	CHECK_EQ(d.total_file_bytes, a.total_file_bytes);
	CHECK_EQ(d.max_mtime_sec, -5);
	CHECK(d.features == a.features);
	CHECK(!memcmp(d.dataset_id, a.dataset_id, DLFS_ID_SIZE));
	/* A 1.1 superblock cut to 1.0's size is damaged. */
	CHECK_EQ(dlfs_super_decode(b, DLFS_SUPER_REC_SIZE_10, &d),
		 -DLFS_ECORRUPT);

	/* Format 1.0: 112 bytes, no features, decoded as it always was,
	 * whatever bytes follow. */
	a.format_minor = 0;
	memset(b, 0x5a, sizeof(b));
	CHECK_EQ(dlfs_super_encode(&a, b), DLFS_SUPER_REC_SIZE_10);
	CHECK(b[112] == 0x5a);
	CHECK_EQ(dlfs_super_decode(b, DLFS_SUPER_REC_SIZE_10, &d), 0);
	CHECK(d.features == 0 && d.n_containers == 7 && d.max_mtime_sec == -5);
	CHECK_EQ(dlfs_super_decode(b, sizeof(b), &d), 0);
	CHECK(d.features == 0);
}

static void test_features(void)
{
	CHECK(!strcmp(dlfs_feature_name(0), "path_bound"));
	CHECK(DLFS_FEATURE(PATH_BOUND) == 1);
	CHECK(!strcmp(dlfs_feature_name(1), "compressed"));
	CHECK(DLFS_FEATURE(COMPRESSED) == 2);
	CHECK(!strcmp(dlfs_feature_name(2), "in_place"));
	CHECK(DLFS_FEATURE(IN_PLACE) == 4);
	CHECK(DLFS_FEATURES_KNOWN == 7);
	for (unsigned bit = 3; bit < 64; bit++)
		CHECK(dlfs_feature_name(bit) == NULL);
	/* Both keep their chunks apart from their logical place: the long
	 * chunk record. */
	CHECK(dlfs_stored_apart(DLFS_FEATURE(COMPRESSED)) &&
	      dlfs_stored_apart(DLFS_FEATURE(IN_PLACE)) &&
	      !dlfs_stored_apart(DLFS_FEATURE(PATH_BOUND)));
	CHECK(dlfs_chunk_rec_size(DLFS_FEATURE(IN_PLACE)) ==
	      DLFS_CHUNK_REC_SIZE);
	CHECK(!strcmp(dlfs_inodes_db(0), DLFS_DB_INODES));
	CHECK(!strcmp(dlfs_inodes_db(DLFS_FEATURE(PATH_BOUND)), "inodes.f"));
}

static void test_inode(void)
{
	struct dlfs_inode_rec a = {.mode = 0100644, .mtime_nsec = 999999999,
				   .mtime_sec = 1700000000, .size = 1ull << 40,
				   .loc = (3ull << 48) | 12345, .xxh3 = ~0ull,
				   .path_hash = 0x0102030405060708ull};
	uint8_t b[DLFS_INODE_REC_SIZE + 1];
	struct dlfs_inode_rec d;
	const uint64_t pb = DLFS_FEATURE(PATH_BOUND);
	CHECK_EQ(dlfs_inode_rec_size(pb), 48);
	CHECK_EQ(dlfs_inode_rec_size(0), 40);
	b[DLFS_INODE_REC_SIZE] = 0xee;
	dlfs_inode_encode(&a, pb, b);
	CHECK(b[DLFS_INODE_REC_SIZE] == 0xee);
	dlfs_inode_decode(b, pb, &d);
	CHECK(!memcmp(&a, &d, sizeof(a)));
	/* loc lives at byte 24, little-endian: offset low, container high */
	CHECK(b[24] == (12345 & 0xff) && b[30] == 3 && b[31] == 0);
	/* path_hash at byte 40, little-endian */
	CHECK(b[40] == 0x08 && b[47] == 0x01);

	/* Format 1.0's 40 bytes: no path_hash written or read. */
	memset(b, 0xee, sizeof(b));
	dlfs_inode_encode(&a, 0, b);
	CHECK(b[40] == 0xee);
	dlfs_inode_decode(b, 0, &d);
	CHECK(d.path_hash == 0 && d.xxh3 == a.xxh3 && d.loc == a.loc);
}

static void test_path_hash(void)
{
	/* XXH3-64 of le64(parent) || name, as dlfs-format(5) defines it. */
	uint8_t b[8 + 3] = {7, 0, 0, 0, 0, 0, 0, 0, 'a', '/', 'b'};
	CHECK(dlfs_path_hash(7, "a/b", 3) == XXH3_64bits(b, sizeof(b)));
	CHECK(dlfs_path_hash(7, "a/b", 3) != dlfs_path_hash(8, "a/b", 3));
	CHECK(dlfs_path_hash(1, "x", 1) != dlfs_path_hash(1, "y", 1));
	/* A name longer than any valid one still hashes the same way. */
	char big[300];
	uint8_t bb[8 + sizeof(big)];
	memset(big, 'n', sizeof(big));
	memset(bb, 0, 8);
	bb[0] = 2;
	memcpy(bb + 8, big, sizeof(big));
	CHECK(dlfs_path_hash(2, big, sizeof(big)) ==
	      XXH3_64bits(bb, sizeof(bb)));
}

static void test_container_records(void)
{
	struct dlfs_container_header h = {.format_major = 1,
					  .header_size = DLFS_HEADER_SIZE,
					  .container = 9, .chunk_size = 65536,
					  .data_offset = 65536,
					  .data_size = 777};
	memcpy(h.magic, DLFS_CONTAINER_MAGIC, 8);
	uint8_t b[DLFS_CONTAINER_HEADER_REC_SIZE];
	dlfs_header_encode(&h, b);
	CHECK(!memcmp(b, "DLFSCTR", 7));
	struct dlfs_container_header d;
	dlfs_header_decode(b, &d);
	CHECK_EQ(d.container, 9);
	CHECK_EQ(d.data_size, 777);
	CHECK(d.header_xxh3 == h.header_xxh3 && h.header_xxh3 != 0);
	/* A changed byte changes the checksum. */
	struct dlfs_container_header h2 = h;
	h2.data_size = 778;
	dlfs_header_encode(&h2, b);
	CHECK(h2.header_xxh3 != h.header_xxh3);

	struct dlfs_container_footer f = {.container = 1, .trailer_offset = 5,
					  .trailer_size = 6, .n_records = 7,
					  .trailer_xxh3 = 8};
	memcpy(f.magic, DLFS_FOOTER_MAGIC, 8);
	uint8_t fb[DLFS_FOOTER_SIZE];
	dlfs_footer_encode(&f, fb);
	struct dlfs_container_footer g;
	dlfs_footer_decode(fb, &g);
	CHECK(!memcmp(&f, &g, sizeof(f)));

	struct dlfs_trailer_rec t = {.mode = 040755, .size = 3, .offset = 4,
				     .xxh3 = 5, .path_len = 6};
	uint8_t tb[DLFS_TRAILER_REC_SIZE];
	struct dlfs_trailer_rec u;
	dlfs_trailer_rec_encode(&t, tb);
	dlfs_trailer_rec_decode(tb, &u);
	CHECK(!memcmp(&t, &u, sizeof(t)));

	/* Chunk records: 1.0's 16 bytes (the stored fields neither written
	 * nor read; sum decoded as xxh3), and the compressed feature's 40,
	 * field by field. */
	struct dlfs_chunk_rec cr = {.xxh3 = 42, .length = 4096,
				    .stored_length = 777,
				    .stored_offset = UINT64_C(0x123456789000),
				    .flags = DLFS_CHUNK_ZSTD,
				    .sum = UINT64_C(0xfedcba9876543210)}, cd;
	uint8_t cb[DLFS_CHUNK_REC_SIZE + 1];
	CHECK(dlfs_chunk_rec_size(0) == 16 &&
	      dlfs_chunk_rec_size(DLFS_FEATURE(PATH_BOUND)) == 16 &&
	      dlfs_chunk_rec_size(DLFS_FEATURE(COMPRESSED)) == 40);
	memset(cb, 0xee, sizeof(cb));
	dlfs_chunk_encode(&cr, 0, cb);
	CHECK(cb[16] == 0xee); /* nothing past the 16 bytes */
	CHECK(dlfs_get_le64(cb) == 42 && dlfs_get_le32(cb + 8) == 4096 &&
	      dlfs_get_le32(cb + 12) == 0);
	dlfs_chunk_decode(cb, 0, &cd);
	CHECK(cd.xxh3 == 42 && cd.length == 4096);
	CHECK(cd.stored_length == 4096 && cd.stored_offset == 0 &&
	      cd.flags == 0 && cd.sum == 42);
	memset(cb, 0xee, sizeof(cb));
	dlfs_chunk_encode(&cr, DLFS_FEATURE(COMPRESSED), cb);
	CHECK(cb[40] == 0xee);
	CHECK(dlfs_get_le64(cb) == 42 && dlfs_get_le32(cb + 8) == 4096 &&
	      dlfs_get_le32(cb + 12) == 777 &&
	      dlfs_get_le64(cb + 16) == UINT64_C(0x123456789000) &&
	      dlfs_get_le32(cb + 24) == DLFS_CHUNK_ZSTD &&
	      dlfs_get_le32(cb + 28) == 0 &&
	      dlfs_get_le64(cb + 32) == UINT64_C(0xfedcba9876543210));
	dlfs_chunk_decode(cb, DLFS_FEATURE(COMPRESSED), &cd);
	CHECK(!memcmp(&cr, &cd, sizeof(cr)));
	CHECK(!strcmp(dlfs_feature_name(DLFS_FEATURE_BIT_COMPRESSED),
		      "compressed"));

	struct dlfs_container_rec r = {1, 2, 3, 4, 5, 6}, rd;
	uint8_t rb[DLFS_CONTAINER_REC_SIZE];
	dlfs_container_rec_encode(&r, rb);
	dlfs_container_rec_decode(rb, &rd);
	CHECK(!memcmp(&r, &rd, sizeof(r)));

	char name[DLFS_CONTAINER_NAME_MAX];
	dlfs_container_name(12, name);
	CHECK(!strcmp(name, "000012.dlc"));
}

static void test_keys(void)
{
	/* Big-endian keys sort numerically under memcmp. */
	uint8_t a[8], b[8];
	dlfs_put_be64(a, 255);
	dlfs_put_be64(b, 256);
	CHECK(memcmp(a, b, 8) < 0);
	CHECK_EQ(dlfs_get_be64(b), 256);
	uint8_t c[4];
	dlfs_put_be32(c, 0x01020304);
	CHECK(c[0] == 1 && c[3] == 4);
	CHECK_EQ(dlfs_get_be32(c), 0x01020304);
}

static void test_parsers(void)
{
	uint64_t v;
	CHECK(dlfs_parse_size("4096", &v) == 0 && v == 4096);
	CHECK(dlfs_parse_size("64K", &v) == 0 && v == 65536);
	CHECK(dlfs_parse_size("4M", &v) == 0 && v == 4u << 20);
	CHECK(dlfs_parse_size("4MiB", &v) == 0 && v == 4u << 20);
	CHECK(dlfs_parse_size("1g", &v) == 0 && v == 1u << 30);
	CHECK(dlfs_parse_size("2T", &v) == 0 && v == 2ull << 40);
	CHECK(dlfs_parse_size("", &v) == -EINVAL);
	CHECK(dlfs_parse_size("-1", &v) == -EINVAL);
	CHECK(dlfs_parse_size("4X", &v) == -EINVAL);
	CHECK(dlfs_parse_size("4MM", &v) == -EINVAL);
	CHECK(dlfs_parse_size("99999999999T", &v) == -EINVAL);

	enum dlfs_order o;
	uint64_t seed;
	CHECK(dlfs_parse_order("sorted", &o, &seed) == 0 &&
	      o == DLFS_ORDER_SORTED);
	CHECK(dlfs_parse_order("input", &o, &seed) == 0 &&
	      o == DLFS_ORDER_INPUT);
	CHECK(dlfs_parse_order("size", &o, &seed) == 0 &&
	      o == DLFS_ORDER_SIZE);
	CHECK(dlfs_parse_order("shuffle", &o, &seed) == 0 &&
	      o == DLFS_ORDER_SHUFFLE && seed == 0);
	CHECK(dlfs_parse_order("shuffle:42", &o, &seed) == 0 && seed == 42);
	CHECK(dlfs_parse_order("shuffle:", &o, &seed) == -EINVAL);
	CHECK(dlfs_parse_order("shuffle:x", &o, &seed) == -EINVAL);
	CHECK(dlfs_parse_order("random", &o, &seed) == -EINVAL);

	struct dlfs_pack_opts opts;
	struct dlfs_err err = {0};
	dlfs_pack_opts_init(&opts);
	CHECK(dlfs_pack_opts_check(&opts, &err) == 0);
	opts.chunk_size = 1000;
	CHECK(dlfs_pack_opts_check(&opts, &err) == -EINVAL);
	CHECK(strstr(err.msg, "--chunk-size") != NULL);
	dlfs_pack_opts_init(&opts);
	opts.align = 3;
	CHECK(dlfs_pack_opts_check(&opts, &err) == -EINVAL);
	CHECK(strstr(err.msg, "--align") != NULL);
	dlfs_pack_opts_init(&opts);
	opts.container_size = 4096;
	CHECK(dlfs_pack_opts_check(&opts, &err) == -EINVAL);
}

static void test_pathcmp(void)
{
	/* Component-wise: a/b sorts before a-c and a.txt. */
	CHECK(pk_pathcmp("a/b", 3, "a-c", 3) < 0);
	CHECK(pk_pathcmp("a/b", 3, "a.txt", 5) < 0);
	CHECK(pk_pathcmp("a", 1, "a/b", 3) < 0);
	CHECK(pk_pathcmp("", 0, "a", 1) < 0);
	CHECK(pk_pathcmp("b", 1, "a/z", 3) > 0);
	CHECK(pk_pathcmp("x", 1, "x", 1) == 0);
	/* Bytes above 0x7f compare unsigned. */
	CHECK(pk_pathcmp("\xff", 1, "a", 1) > 0);
}

/*
 * A message longer than DLFS_ERR_MSG_MAX loses its middle, never its end:
 * a 5,000-byte path keeps its errno text (issue 23, item 5), also after a
 * prefix is put before it.
 */
static void test_err_long(void)
{
	size_t n = 5000;
	char *path = malloc(n + 1);
	CHECK(path != NULL);
	if (!path)
		return;
	for (size_t i = 0; i < n; i++)
		path[i] = i % 50 == 49 ? '/' : 'a' + (char)(i / 50 % 26);
	path[n] = '\0';
	struct dlfs_err err = {0};
	CHECK(dlfs_err_sys(&err, -ENOENT, "%s/last-name", path) == -ENOENT);
	size_t len = strlen(err.msg);
	CHECK(len == DLFS_ERR_MSG_MAX - 1);
	const char *tail = "/last-name: No such file or directory";
	CHECK(len > strlen(tail) &&
	      !strcmp(err.msg + len - strlen(tail), tail));
	CHECK(!strncmp(err.msg, path, 100));
	CHECK(strstr(err.msg, "...") != NULL);
	dlfs_err_prefix(&err, "walking %s", "src");
	len = strlen(err.msg);
	CHECK(!strncmp(err.msg, "walking src: aaaa", 17));
	CHECK(len > strlen(tail) &&
	      !strcmp(err.msg + len - strlen(tail), tail));
	/* Short messages are whole. */
	CHECK(dlfs_err_set(&err, EINVAL, "short %d", 7) == -EINVAL);
	CHECK(!strcmp(err.msg, "short 7"));
	CHECK(dlfs_err_sys(&err, -ENOENT, "p") == -ENOENT);
	CHECK(!strcmp(err.msg, "p: No such file or directory"));
	free(path);
}

/* Entry paths in the tree's slabs: short ones packed, long ones (past a
 * quarter slab) alone, all intact until the tree is freed. */
static void test_tree_strdup(void)
{
	struct pk_tree t;
	pk_tree_init(&t);
	enum { N = 200000 };
	char **got = calloc(N, sizeof(*got));
	size_t long_len = 300000;
	char *longp = malloc(long_len);
	for (size_t i = 0; i < long_len; i++)
		longp[i] = (char)('a' + i % 26);
	for (int i = 0; i < N; i++) {
		char b[64];
		int n = snprintf(b, sizeof(b), "d%03d/f%08d.bin", i % 997, i);
		if (i % 50000 == 7)
			got[i] = pk_tree_strdup(&t, longp, long_len);
		else
			got[i] = pk_tree_strdup(&t, b, (size_t)n);
		CHECK(got[i] != NULL);
	}
	int bad = 0;
	for (int i = 0; i < N; i++) {
		char b[64];
		snprintf(b, sizeof(b), "d%03d/f%08d.bin", i % 997, i);
		if (i % 50000 == 7)
			bad += strlen(got[i]) != long_len ||
			       memcmp(got[i], longp, long_len);
		else
			bad += strcmp(got[i], b) != 0;
	}
	CHECK_EQ(bad, 0);
	CHECK(t.n_slabs > 4);
	pk_tree_free(&t);
	free(got);
	free(longp);
}

int main(void)
{
	test_tree_strdup();
	test_err_long();
	test_super();
	test_inode();
	test_features();
	test_path_hash();
	test_container_records();
	test_keys();
	test_parsers();
	test_pathcmp();
	return t_done("test_format");
}
