/*
 * dlfs-pack's options (src/pack/opts.c, and dlfs_parse_size in format):
 * the text forms parse to what the man page says and nothing else does;
 * the defaults pass the checks; each check refuses what it should, with a
 * message that names the option.
 */
#include <errno.h>
#include <string.h>

#include "dlfs/pack.h"
#include "tutil.h"

static void test_size(void)
{
	uint64_t v = 0;
	CHECK_EQ(dlfs_parse_size("4096", &v), 0);
	CHECK_EQ(v, 4096);
	CHECK_EQ(dlfs_parse_size("64K", &v), 0);
	CHECK_EQ(v, 64 << 10);
	CHECK_EQ(dlfs_parse_size("4m", &v), 0);
	CHECK_EQ(v, 4 << 20);
	CHECK_EQ(dlfs_parse_size("1GiB", &v), 0);
	CHECK_EQ(v, 1 << 30);
	CHECK_EQ(dlfs_parse_size("2TB", &v), 0);
	CHECK(v == UINT64_C(2) << 40);
	CHECK_EQ(dlfs_parse_size("0", &v), 0);
	CHECK_EQ(v, 0);
	const char *bad[] = {"", "K", "-1", " 4", "4 K", "4X", "4KB5", "4iB",
			     "1.5M", "99999999999999999999",
			     "16777216T" /* 2^64 */, NULL};
	for (int i = 0; bad[i]; i++) {
		v = 7;
		CHECK_EQ(dlfs_parse_size(bad[i], &v), -EINVAL);
		CHECK_EQ(v, 7); /* untouched */
	}
	CHECK_EQ(dlfs_parse_size(NULL, &v), -EINVAL);
}

static void test_order(void)
{
	enum dlfs_order o;
	uint64_t seed = 9;
	CHECK_EQ(dlfs_parse_order("sorted", &o, &seed), 0);
	CHECK_EQ(o, DLFS_ORDER_SORTED);
	CHECK_EQ(seed, 0);
	CHECK_EQ(dlfs_parse_order("input", &o, &seed), 0);
	CHECK_EQ(o, DLFS_ORDER_INPUT);
	CHECK_EQ(dlfs_parse_order("size", &o, &seed), 0);
	CHECK_EQ(o, DLFS_ORDER_SIZE);
	CHECK_EQ(dlfs_parse_order("shuffle", &o, &seed), 0);
	CHECK_EQ(o, DLFS_ORDER_SHUFFLE);
	CHECK_EQ(seed, 0);
	CHECK_EQ(dlfs_parse_order("shuffle:42", &o, &seed), 0);
	CHECK_EQ(seed, 42);
	CHECK_EQ(dlfs_parse_order("shuffle:0x10", &o, &seed), 0);
	CHECK_EQ(seed, 16);
	const char *bad[] = {"", "Sorted", "shuffled", "shuffle:", "shuffle:x",
			     "shuffle:-1", "shuffle:1x", "size ", NULL};
	for (int i = 0; bad[i]; i++)
		CHECK_EQ(dlfs_parse_order(bad[i], &o, &seed), -EINVAL);
}

static void test_sample_format(void)
{
	enum dlfs_sample_format f;
	CHECK_EQ(dlfs_parse_sample_format("npy", &f), 0);
	CHECK_EQ(f, DLFS_SAMPLE_NPY);
	CHECK_EQ(dlfs_parse_sample_format("h5", &f), 0);
	CHECK_EQ(f, DLFS_SAMPLE_H5);
	CHECK_EQ(dlfs_parse_sample_format("hdf5", &f), -EINVAL);
	CHECK_EQ(dlfs_parse_sample_format("", &f), -EINVAL);
}

/* The codec's text forms, and what the default stands for: zstd for
 * samples split out of HDF5 files, none for anything else. */
static void test_compress(void)
{
	enum dlfs_compress c;
	int level;
	CHECK_EQ(dlfs_parse_compress("zstd", &c, &level), 0);
	CHECK_EQ(c, DLFS_COMPRESS_ZSTD);
	CHECK_EQ(level, DLFS_ZSTD_LEVEL_DEFAULT);
	CHECK_EQ(dlfs_parse_compress("zstd:19", &c, &level), 0);
	CHECK_EQ(level, 19);
	CHECK_EQ(dlfs_parse_compress("none", &c, &level), 0);
	CHECK_EQ(c, DLFS_COMPRESS_NONE);
	static const char *const bad[] = {"", "zstd:", "zstd:0", "zstd:23",
					  "none:1", "auto", "lz4"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		CHECK_EQ(dlfs_parse_compress(bad[i], &c, &level), -EINVAL);

	struct dlfs_pack_opts o;
	dlfs_pack_opts_init(&o);
	CHECK_EQ(o.compress, DLFS_COMPRESS_AUTO);
	CHECK_EQ(dlfs_pack_compress(&o), DLFS_COMPRESS_NONE);
	o.split_hdf5 = 1;
	CHECK_EQ(dlfs_pack_compress(&o), DLFS_COMPRESS_ZSTD);
	o.compress = DLFS_COMPRESS_NONE;
	CHECK_EQ(dlfs_pack_compress(&o), DLFS_COMPRESS_NONE);
	o.split_hdf5 = 0;
	o.compress = DLFS_COMPRESS_ZSTD;
	CHECK_EQ(dlfs_pack_compress(&o), DLFS_COMPRESS_ZSTD);
}

/* o fails the checks with a message that holds want. */
static void refused(const struct dlfs_pack_opts *o, const char *want)
{
	struct dlfs_err err = {0};
	CHECK_EQ(dlfs_pack_opts_check(o, &err), -EINVAL);
	if (!strstr(err.msg, want)) {
		fprintf(stderr, "message '%s' lacks '%s'\n", err.msg, want);
		t_failures++;
	}
}

static int nop_bcast(void *a, void *b, size_t l, int r)
{
	(void)a, (void)b, (void)l, (void)r;
	return 0;
}

static void test_check(void)
{
	struct dlfs_pack_opts o;
	struct dlfs_err err = {0};
	dlfs_pack_opts_init(&o);
	CHECK_EQ(o.chunk_size, 4 << 20);
	CHECK(o.container_size == UINT64_C(4) << 30);
	CHECK_EQ(o.order, DLFS_ORDER_SORTED);
	CHECK_EQ(dlfs_pack_opts_check(&o, &err), 0);

	o.chunk_size = 4097;
	refused(&o, "--chunk-size");
	o.chunk_size = 2048;
	refused(&o, "--chunk-size");
	o.chunk_size = UINT64_C(2) << 30;
	refused(&o, "--chunk-size");
	dlfs_pack_opts_init(&o);
	o.container_size = o.chunk_size - 4096;
	refused(&o, "--container-size");
	dlfs_pack_opts_init(&o);
	o.align = 3;
	refused(&o, "--align");
	o.align = o.chunk_size * 2;
	refused(&o, "--align");
	dlfs_pack_opts_init(&o);
	o.threads = 0;
	refused(&o, "--threads");
	dlfs_pack_opts_init(&o);
	o.procs = 257;
	refused(&o, "--procs");
	dlfs_pack_opts_init(&o);
	o.sample_format = (enum dlfs_sample_format)7;
	refused(&o, "--sample-format");
	dlfs_pack_opts_init(&o);
	const char *bad[] = {"", ",a", "a,", "a,,b", NULL};
	for (int i = 0; bad[i]; i++) {
		o.hdf5_datasets = bad[i];
		refused(&o, "--split-hdf5");
	}
	o.hdf5_datasets = "images,labels";
	CHECK_EQ(dlfs_pack_opts_check(&o, &err), 0);

	struct dlfs_pack_comm c = {.rank = 0, .size = 2, .bcast = nop_bcast};
	o.comm = &c;
	refused(&o, "dlfs_pack_comm");
}

int main(void)
{
	test_size();
	test_order();
	test_sample_format();
	test_compress();
	test_check();
	return t_done("test_packopts");
}
