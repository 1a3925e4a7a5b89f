/*
 * dlfs-h5cost FILE.h5 [SAMPLES]: what one per-sample HDF5 file of the h5
 * form costs, made the two ways h5image.h describes: copying the template
 * with the rows put in (what dlfs-pack does), and building the file in
 * memory with libhdf5 for each sample (core driver, H5Fget_file_image).
 * Reads the first SAMPLES rows (default 2000) of FILE's default split,
 * checks that both ways give the same bytes, and prints one JSON line:
 * {"samples", "bytes", "template_us", "build_us", "npy_us"} (microseconds
 * per sample; npy_us: a .npy header and row copied, for scale).
 * A benchmark helper (tools/bench/ingest), white-box like the unit tests.
 */
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "h5image.h"
#include "h5lib.h"
#include "h5src.h"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int die(const char *what, const struct dlfs_err *err)
{
	fprintf(stderr, "dlfs-h5cost: %s: %s\n", what, err ? err->msg : "");
	return 1;
}

int main(int argc, char **argv)
{
	struct pk_h5_state st;
	struct pk_h5_src s;
	struct pk_h5_template t;
	struct dlfs_err err = {0};
	int ret = 1;
	if (argc < 2) {
		fprintf(stderr, "usage: dlfs-h5cost FILE.h5 [SAMPLES]\n");
		return 2;
	}
	if (pk_h5_begin(&st, &err))
		return die("libhdf5", &err);
	if (pk_h5_src_open(&s, argv[1], NULL, &err)) {
		pk_h5_src_close(&s);
		return die(argv[1], &err);
	}
	hsize_t n = argc > 2 ? strtoull(argv[2], NULL, 10) : 2000;
	if (n > s.n)
		n = s.n;
	unsigned char **rows = calloc(s.nd, sizeof(*rows));
	const void **cur = calloc(s.nd, sizeof(*cur));
	/* Every split dataset's first n rows, read once. */
	for (unsigned j = 0; j < s.nd; j++) {
		struct pk_h5_dset *d = &s.d[j];
		if (!d->split || !d->row_bytes)
			continue;
		rows[j] = malloc(n * d->row_bytes);
		hsize_t start[H5S_MAX_RANK] = {0}, count[H5S_MAX_RANK];
		memcpy(count, d->dims, sizeof(count));
		count[0] = n;
		hid_t fs = H5Dget_space(d->id), ms = H5Screate_simple(d->rank,
								      count, NULL);
		if (H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count,
					NULL) < 0 ||
		    H5Dread(d->id, d->ftype, ms, fs, H5P_DEFAULT, rows[j]) < 0) {
			fprintf(stderr, "dlfs-h5cost: reading %s failed\n",
				d->name);
			goto out;
		}
		H5Sclose(fs);
		H5Sclose(ms);
	}
	if (pk_h5_template(&s, &t, NULL, &err)) {
		die("template", &err);
		goto out;
	}
	unsigned char *img = malloc(t.len);
	/* Touch the buffers once, so page faults are not timed. */
	for (unsigned j = 0; j < s.nd; j++)
		cur[j] = rows[j];
	pk_h5_template_fill(&t, &s, cur, img);
	double t0 = now();
	for (hsize_t i = 0; i < n; i++) {
		for (unsigned j = 0; j < s.nd; j++)
			cur[j] = rows[j] ? rows[j] + i * s.d[j].row_bytes : NULL;
		pk_h5_template_fill(&t, &s, cur, img);
		__asm__ volatile("" : : "r"(img) : "memory");
	}
	double t1 = now();
	int same = 1;
	for (hsize_t i = 0; i < n; i++) {
		unsigned char *fresh;
		size_t len;
		for (unsigned j = 0; j < s.nd; j++)
			cur[j] = rows[j] ? rows[j] + i * s.d[j].row_bytes : NULL;
		if (pk_h5_sample_build(&s, cur, &fresh, &len, &err)) {
			die("build", &err);
			goto out;
		}
		if (i == n - 1) { /* compare the last one both ways */
			pk_h5_template_fill(&t, &s, cur, img);
			same = len == t.len && !memcmp(fresh, img, len);
		}
		free(fresh);
	}
	double t2 = now();
	/* For scale: what the npy form does per sample (header + copy). */
	size_t total = 0;
	for (unsigned j = 0; j < s.nd; j++)
		total += s.d[j].split ? 128 + s.d[j].row_bytes : 0;
	unsigned char *npy = calloc(1, total);
	double t3 = now();
	for (hsize_t i = 0; i < n; i++) {
		size_t at = 0;
		for (unsigned j = 0; j < s.nd; j++) {
			if (!s.d[j].split)
				continue;
			memset(npy + at, ' ', 128);
			at += 128;
			if (rows[j])
				memcpy(npy + at, rows[j] + i * s.d[j].row_bytes,
				       s.d[j].row_bytes);
			at += s.d[j].row_bytes;
		}
		__asm__ volatile("" : : "r"(npy) : "memory");
	}
	double t4 = now();
	if (!same) {
		fprintf(stderr, "dlfs-h5cost: the template and a fresh build "
				"differ\n");
		goto out;
	}
	printf("{\"samples\": %llu, \"bytes\": %zu, \"template_us\": %.3f, "
	       "\"build_us\": %.3f, \"npy_us\": %.3f}\n",
	       (unsigned long long)n, t.len, (t1 - t0) / n * 1e6,
	       (t2 - t1) / n * 1e6, (t4 - t3) / n * 1e6);
	free(npy);
	free(img);
	pk_h5_template_free(&t);
	ret = 0;
out:
	for (unsigned j = 0; j < s.nd; j++)
		free(rows[j]);
	free(rows);
	free((void *)cur);
	pk_h5_src_close(&s);
	pk_h5_end(&st);
	return ret;
}
