/*
 * The HDF5 ingest modules, white-box: dtypes numpy would give (and the
 * types refused), .npy headers, per-sample images made from the template
 * equal to images built from scratch and deterministic, and LMDB key
 * names.
 */
#include <hdf5.h>
#include <stdlib.h>
#include <string.h>

#include "dlfs/format.h"
#include "h5image.h"
#include "h5lib.h"
#include "h5src.h"
#include "h5type.h"
#include "lmdbsrc.h"
#include "util.h"
#include "tutil.h"

/* descr of t, or "REFUSED: <code>" */
static char *descr_of(hid_t t)
{
	struct pk_npy_type np;
	struct dlfs_err err = {0};
	char *out;
	int ret = pk_h5_npy_type(t, &np, "x", &err);
	if (ret) {
		if (asprintf(&out, "REFUSED %d", ret) < 0)
			abort();
		return out;
	}
	if (np.n_extra) {
		if (asprintf(&out, "%s+%d", np.descr, np.n_extra) < 0)
			abort();
		pk_npy_type_free(&np);
		return out;
	}
	return np.descr;
}

static void expect_descr(hid_t t, const char *want)
{
	char *got = descr_of(t);
	if (strcmp(got, want)) {
		fprintf(stderr, "descr: got %s, want %s\n", got, want);
		t_failures++;
	}
	free(got);
	H5Tclose(t);
}

static void test_types(void)
{
	expect_descr(H5Tcopy(H5T_STD_I32LE), "'<i4'");
	expect_descr(H5Tcopy(H5T_STD_U16BE), "'>u2'");
	expect_descr(H5Tcopy(H5T_STD_U8LE), "'|u1'");
	expect_descr(H5Tcopy(H5T_STD_I8BE), "'|i1'");
	expect_descr(H5Tcopy(H5T_IEEE_F64BE), "'>f8'");
	expect_descr(H5Tcopy(H5T_IEEE_F32LE), "'<f4'");

	/* binary16, as h5py makes it */
	hid_t h = H5Tcopy(H5T_IEEE_F32LE);
	H5Tset_fields(h, 15, 10, 5, 0, 10);
	H5Tset_size(h, 2);
	H5Tset_ebias(h, 15);
	expect_descr(h, "'<f2'");
	/* an 80-bit long double in 16 bytes is refused */
	hid_t ld = H5Tcopy(H5T_NATIVE_LDOUBLE);
	expect_descr(ld, "REFUSED -95");
	/* 12 bits of a 16-bit integer: refused */
	hid_t i12 = H5Tcopy(H5T_STD_I16LE);
	H5Tset_precision(i12, 12);
	expect_descr(i12, "REFUSED -95");

	hid_t s = H5Tcopy(H5T_C_S1);
	H5Tset_size(s, 7);
	expect_descr(s, "'|S7'");
	hid_t vs = H5Tcopy(H5T_C_S1);
	H5Tset_size(vs, H5T_VARIABLE);
	expect_descr(vs, "REFUSED -95");
	expect_descr(H5Tvlen_create(H5T_STD_I32LE), "REFUSED -95");
	expect_descr(H5Tcopy(H5T_STD_REF_OBJ), "REFUSED -95");
	expect_descr(H5Tcreate(H5T_OPAQUE, 5), "'|V5'");

	/* h5py's bool, and another enum (its base integer) */
	hid_t b = H5Tenum_create(H5T_NATIVE_SCHAR);
	signed char v0 = 0, v1 = 1;
	H5Tenum_insert(b, "FALSE", &v0);
	H5Tenum_insert(b, "TRUE", &v1);
	expect_descr(b, "'|b1'");
	hid_t e = H5Tenum_create(H5T_STD_U16BE);
	unsigned short r = 0, g = 1;
	H5Tconvert(H5T_NATIVE_USHORT, H5T_STD_U16BE, 1, &r, NULL, H5P_DEFAULT);
	H5Tconvert(H5T_NATIVE_USHORT, H5T_STD_U16BE, 1, &g, NULL, H5P_DEFAULT);
	H5Tenum_insert(e, "RED", &r);
	H5Tenum_insert(e, "GREEN", &g);
	expect_descr(e, "'>u2'");

	/* h5py's complex */
	hid_t c = H5Tcreate(H5T_COMPOUND, 16);
	H5Tinsert(c, "r", 0, H5T_IEEE_F64LE);
	H5Tinsert(c, "i", 8, H5T_IEEE_F64LE);
	expect_descr(c, "'<c16'");

	/* a packed compound, inserted out of order, with gaps and a tail */
	hid_t cp = H5Tcreate(H5T_COMPOUND, 24);
	H5Tinsert(cp, "y", 8, H5T_STD_I16LE);
	H5Tinsert(cp, "x", 2, H5T_IEEE_F32BE);
	hsize_t ad[2] = {2, 3};
	hid_t arr = H5Tarray_create2(H5T_STD_U8LE, 2, ad);
	H5Tinsert(cp, "it's", 12, arr);
	H5Tclose(arr);
	expect_descr(cp, "[('', '|V2'), ('x', '>f4'), ('', '|V2'), "
			 "('y', '<i2'), ('', '|V2'), ('it\\'s', '|u1', (2, 3)), "
			 "('', '|V6')]");

	/* nested compound */
	hid_t in = H5Tcreate(H5T_COMPOUND, 4);
	H5Tinsert(in, "a", 0, H5T_STD_I32LE);
	hid_t out = H5Tcreate(H5T_COMPOUND, 5);
	H5Tinsert(out, "in", 0, in);
	H5Tinsert(out, "b", 4, H5T_STD_U8LE);
	H5Tclose(in);
	expect_descr(out, "[('in', [('a', '<i4')]), ('b', '|u1')]");

	/* a top-level array extends the shape */
	hsize_t d3[1] = {3};
	expect_descr(H5Tarray_create2(H5T_IEEE_F32LE, 1, d3), "'<f4'+1");
	/* a compound with a vlen member is refused */
	hid_t cv = H5Tcreate(H5T_COMPOUND, sizeof(hvl_t));
	hid_t vl = H5Tvlen_create(H5T_STD_I32LE);
	H5Tinsert(cv, "v", 0, vl);
	H5Tclose(vl);
	expect_descr(cv, "REFUSED -95");
}

static void test_npy_header(void)
{
	struct pk_npy_type t = {.descr = (char *)"'<f4'", .size = 4};
	hsize_t dims[2] = {3, 4};
	char *h;
	size_t len;
	CHECK(!pk_npy_header(&t, dims, 2, &h, &len, NULL));
	CHECK_EQ(len % 64, 0);
	CHECK(!memcmp(h, "\x93NUMPY\x01\x00", 8));
	CHECK_EQ((unsigned char)h[8] | (unsigned char)h[9] << 8, len - 10);
	CHECK(h[len - 1] == '\n');
	const char *want = "{'descr': '<f4', 'fortran_order': False, "
			   "'shape': (3, 4), }";
	CHECK(!memcmp(h + 10, want, strlen(want)));
	free(h);
	/* a scalar row, and one dimension */
	CHECK(!pk_npy_header(&t, dims, 0, &h, &len, NULL));
	CHECK(strstr(h + 10, "'shape': (), }") != NULL);
	free(h);
	CHECK(!pk_npy_header(&t, dims, 1, &h, &len, NULL));
	CHECK(strstr(h + 10, "'shape': (3,), }") != NULL);
	free(h);
	/* a header past 64 KiB is version 2.0, with a 4-byte length */
	struct dlfs_str big = {0};
	dlfs_str_add(&big, "[", 1);
	for (int i = 0; i < 5000; i++)
		dlfs_str_addf(&big, "%s('field%05d', '<f8')", i ? ", " : "", i);
	dlfs_str_add(&big, "]", 1);
	struct pk_npy_type bt = {.descr = big.s, .size = 8 * 5000};
	CHECK(!pk_npy_header(&bt, dims, 1, &h, &len, NULL));
	CHECK(h[6] == 2 && len % 64 == 0 && len > 65536);
	CHECK_EQ((size_t)dlfs_get_le32((const uint8_t *)h + 8), len - 12);
	free(h);
	dlfs_str_free(&big);
}

/* A source file with several datasets of several types. */
static void make_source(const char *path, hsize_t n)
{
	hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
	hid_t g = H5Gcreate2(f, "grp", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
	hsize_t d3[3] = {n, 5, 7}, d1[1] = {n}, d2[2] = {n, 3};
	float *img = malloc(n * 35 * sizeof(float));
	long long *lab = malloc(n * sizeof(long long));
	struct {
		int a;
		double b;
	} *rec = malloc(n * 16);
	for (hsize_t i = 0; i < n * 35; i++)
		img[i] = (float)i * 0.5f - 3.0f;
	for (hsize_t i = 0; i < n; i++) {
		lab[i] = (long long)(i * 7919 % 13);
		rec[i].a = (int)i;
		rec[i].b = (double)i / 3;
	}
	hid_t sp3 = H5Screate_simple(3, d3, NULL);
	hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
	hsize_t ch[3] = {4, 5, 7};
	H5Pset_chunk(dcpl, 3, ch);
	H5Pset_deflate(dcpl, 4);
	hid_t ds = H5Dcreate2(f, "images", H5T_IEEE_F32BE, sp3, H5P_DEFAULT,
			      dcpl, H5P_DEFAULT);
	H5Dwrite(ds, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, img);
	hid_t asp = H5Screate(H5S_SCALAR);
	hid_t at = H5Acreate2(ds, "scale", H5T_IEEE_F64LE, asp, H5P_DEFAULT,
			      H5P_DEFAULT);
	double scale = 0.25;
	H5Awrite(at, H5T_NATIVE_DOUBLE, &scale);
	H5Aclose(at);
	H5Dclose(ds);
	hid_t sp1 = H5Screate_simple(1, d1, NULL);
	ds = H5Dcreate2(g, "labels", H5T_STD_I64LE, sp1, H5P_DEFAULT,
			H5P_DEFAULT, H5P_DEFAULT);
	H5Dwrite(ds, H5T_NATIVE_LLONG, H5S_ALL, H5S_ALL, H5P_DEFAULT, lab);
	H5Dclose(ds);
	hid_t ct = H5Tcreate(H5T_COMPOUND, 12);
	H5Tinsert(ct, "a", 0, H5T_STD_I32LE);
	H5Tinsert(ct, "b", 4, H5T_IEEE_F64LE);
	hid_t mt = H5Tcreate(H5T_COMPOUND, 16);
	H5Tinsert(mt, "a", 0, H5T_NATIVE_INT);
	H5Tinsert(mt, "b", 8, H5T_NATIVE_DOUBLE);
	ds = H5Dcreate2(f, "recs", ct, sp1, H5P_DEFAULT, H5P_DEFAULT,
			H5P_DEFAULT);
	H5Dwrite(ds, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, rec);
	H5Dclose(ds);
	hid_t sp2 = H5Screate_simple(2, d2, NULL);
	ds = H5Dcreate2(f, "zeros", H5T_STD_U8LE, sp2, H5P_DEFAULT,
			H5P_DEFAULT, H5P_DEFAULT);
	H5Dclose(ds);
	H5Tclose(ct);
	H5Tclose(mt);
	H5Sclose(asp);
	H5Sclose(sp1);
	H5Sclose(sp2);
	H5Sclose(sp3);
	H5Pclose(dcpl);
	H5Gclose(g);
	H5Fclose(f);
	free(img);
	free(lab);
	free(rec);
}

static void test_template(const char *dir)
{
	char path[4096];
	struct pk_h5_src s;
	struct pk_h5_template t, t2;
	struct dlfs_err err = {0};
	snprintf(path, sizeof(path), "%s/src.h5", dir);
	make_source(path, 23);
	int ret = pk_h5_src_open(&s, path, NULL, &err);
	CHECK_EQ(ret, 0);
	if (ret) {
		fprintf(stderr, "%s\n", err.msg);
		pk_h5_src_close(&s);
		return;
	}
	CHECK_EQ(s.n, 23);
	CHECK_EQ(s.nsplit, 4);
	CHECK_EQ(s.width, 2);
	CHECK(!pk_h5_template(&s, &t, NULL, &err));
	CHECK(!pk_h5_template(&s, &t2, NULL, &err));
	/* Deterministic: the same bytes twice. */
	CHECK(t.len == t2.len && !memcmp(t.img, t2.img, t.len));
	unsigned char **rows = calloc(s.nd, sizeof(*rows));
	for (unsigned j = 0; j < s.nd; j++)
		rows[j] = malloc(s.d[j].row_bytes + 1);
	unsigned char *img = malloc(t.len);
	for (unsigned i = 0; i < 23; i += 5) {
		for (unsigned j = 0; j < s.nd; j++)
			t_fill(rows[j], s.d[j].row_bytes, i * 31 + j);
		unsigned char *fresh = NULL;
		size_t flen = 0;
		pk_h5_template_fill(&t, &s, (const void *const *)rows, img);
		CHECK(!pk_h5_sample_build(&s, (const void *const *)rows,
					  &fresh, &flen, &err));
		/* The template path gives exactly the file built afresh. */
		CHECK(flen == t.len && fresh && !memcmp(fresh, img, flen));
		free(fresh);
		/* And libhdf5 reads it back: the rows, in the file's type. */
		char sp[4200];
		snprintf(sp, sizeof(sp), "%s/sample.h5", dir);
		FILE *f = fopen(sp, "wb");
		CHECK(f && fwrite(img, 1, t.len, f) == t.len);
		if (f)
			fclose(f);
		hid_t fid = H5Fopen(sp, H5F_ACC_RDONLY, H5P_DEFAULT);
		CHECK(fid >= 0);
		for (unsigned j = 0; fid >= 0 && j < s.nd; j++) {
			unsigned char back[1024];
			hid_t ds = H5Dopen2(fid, s.d[j].name, H5P_DEFAULT);
			CHECK(ds >= 0 && s.d[j].row_bytes <= sizeof(back));
			CHECK(H5Dread(ds, s.d[j].ftype, H5S_ALL, H5S_ALL,
				      H5P_DEFAULT, back) >= 0);
			CHECK(!memcmp(back, rows[j], s.d[j].row_bytes));
			H5Dclose(ds);
		}
		if (fid >= 0)
			H5Fclose(fid);
	}
	for (unsigned j = 0; j < s.nd; j++)
		free(rows[j]);
	free(rows);
	free(img);
	unsigned char *m1, *m2;
	size_t l1, l2;
	CHECK(!pk_h5_meta(&s, "src.h5", DLFS_SAMPLE_H5, NULL, &m1, &l1, &err));
	CHECK(!pk_h5_meta(&s, "src.h5", DLFS_SAMPLE_H5, NULL, &m2, &l2, &err));
	CHECK(l1 == l2 && !memcmp(m1, m2, l1));
	free(m1);
	free(m2);
	pk_h5_template_free(&t);
	pk_h5_template_free(&t2);
	pk_h5_src_close(&s);

	/* Named datasets must agree on their first dimension. */
	ret = pk_h5_src_open(&s, path, "images,zeros", &err);
	CHECK_EQ(ret, 0);
	CHECK_EQ(s.nsplit, 2);
	pk_h5_src_close(&s);
	ret = pk_h5_src_open(&s, path, "images,missing", &err);
	CHECK_EQ(ret, -EINVAL);
	CHECK(strstr(err.msg, "no dataset 'missing'") != NULL);
	pk_h5_src_close(&s);
}

static unsigned count_whole(const struct pk_h5_src *s, const char *name)
{
	for (unsigned j = 0; j < s->nd; j++)
		if (!strcmp(s->d[j].name, name))
			return s->d[j].whole * 2 + s->d[j].split;
	return 9;
}

/* Tiny samples stay whole: those under the bound, never the largest
 * dataset, nor one named like a sample directory, nor a named choice. */
static void test_keep_small(const char *dir)
{
	char path[4096];
	struct pk_h5_src s;
	struct dlfs_err err = {0};
	snprintf(path, sizeof(path), "%s/small.h5", dir);
	make_source(path, 23);
	hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
	hsize_t d1[1] = {23};
	hid_t sp = H5Screate_simple(1, d1, NULL);
	hid_t ds = H5Dcreate2(f, "07", H5T_STD_U8LE, sp, H5P_DEFAULT,
			      H5P_DEFAULT, H5P_DEFAULT);
	CHECK(f >= 0 && sp >= 0 && ds >= 0);
	H5Dclose(ds);
	H5Sclose(sp);
	H5Fclose(f);
	/* images 140 bytes a sample, recs 12, grp/labels 8, zeros 3, 07 1 */
	CHECK_EQ(pk_h5_src_open(&s, path, NULL, &err), 0);
	pk_h5_src_keep_small(&s, 10);
	CHECK_EQ(count_whole(&s, "images"), 1);
	CHECK_EQ(count_whole(&s, "recs"), 1);
	CHECK_EQ(count_whole(&s, "grp/labels"), 2);
	CHECK_EQ(count_whole(&s, "zeros"), 2);
	CHECK_EQ(count_whole(&s, "07"), 1); /* width 2: like sample 07 */
	CHECK_EQ(s.nsplit, 3);
	CHECK_EQ(s.nwhole, 2);
	char *desc = NULL;
	CHECK(!pk_h5_src_describe(&s, &desc, &err));
	CHECK(desc && strstr(desc, "one file for all samples: grp/labels.npy "
				   "(8 bytes a sample), zeros.npy (3 bytes a "
				   "sample) (--split-hdf5-min=0 splits them)"));
	free(desc);
	pk_h5_src_close(&s);
	/* Larger than the largest: all but the largest (and 07). */
	CHECK_EQ(pk_h5_src_open(&s, path, NULL, &err), 0);
	pk_h5_src_keep_small(&s, 1 << 20);
	CHECK_EQ(count_whole(&s, "images"), 1);
	CHECK_EQ(count_whole(&s, "recs"), 2);
	CHECK_EQ(s.nsplit, 2);
	pk_h5_src_close(&s);
	/* 0 and a named choice: nothing kept whole. */
	CHECK_EQ(pk_h5_src_open(&s, path, NULL, &err), 0);
	pk_h5_src_keep_small(&s, 0);
	CHECK_EQ(s.nwhole, 0);
	pk_h5_src_close(&s);
	CHECK_EQ(pk_h5_src_open(&s, path, "images,zeros", &err), 0);
	pk_h5_src_keep_small(&s, 1024);
	CHECK_EQ(s.nwhole, 0);
	CHECK_EQ(count_whole(&s, "zeros"), 1);
	pk_h5_src_close(&s);
}

static void test_lmdb_names(void)
{
	char out[DLFS_NAME_MAX + 1];
	pk_lmdb_name("img_001.jpg", 11, out);
	CHECK(!strcmp(out, "img_001.jpg"));
	pk_lmdb_name("a/b", 3, out);
	CHECK(!strcmp(out, "%612f62"));
	pk_lmdb_name("\x00\x01", 2, out);
	CHECK(!strcmp(out, "%0001"));
	pk_lmdb_name(".keys", 5, out);
	CHECK(!strcmp(out, "%2e6b657973"));
	pk_lmdb_name("%41", 3, out);
	CHECK(!strcmp(out, "%253431"));
	pk_lmdb_name("\xc3\xbc", 2, out); /* ü: a good name */
	CHECK(!strcmp(out, "\xc3\xbc"));
	pk_lmdb_name("\xc3", 1, out); /* not UTF-8 */
	CHECK(!strcmp(out, "%c3"));
	char k[300];
	memset(k, 'x', sizeof(k));
	pk_lmdb_name(k, 255, out);
	CHECK_EQ(strlen(out), 255);
	pk_lmdb_name(k, 256, out); /* too long for a name: hashed */
	CHECK(!strncmp(out, "%%", 2) && strlen(out) == 34);
	k[0] = '/';
	pk_lmdb_name(k, 127, out);
	CHECK(out[0] == '%' && strlen(out) == 255);
	CHECK(dlfs_utf8_valid("\xe2\x82\xac", 3));
	CHECK(!dlfs_utf8_valid("\xe2\x82", 2));
	CHECK(!dlfs_utf8_valid("\xed\xa0\x80", 3)); /* a surrogate */
	CHECK(!dlfs_utf8_valid("\xc0\xaf", 2));     /* overlong */
}

int main(void)
{
	struct pk_h5_state st;
	struct dlfs_err err = {0};
	CHECK(!pk_h5_begin(&st, &err));
	char *dir = t_tmpdir();
	test_types();
	test_npy_header();
	test_template(dir);
	test_keep_small(dir);
	test_lmdb_names();
	pk_h5_end(&st);
	t_rmrf(dir);
	free(dir);
	return t_done("test_h5");
}
