/* Reading HDF5 rows in blocks and writing samples: see h5split.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "h5image.h"
#include "h5lib.h"
#include "h5split.h"
#include "h5src.h"

#define BLOCK_BYTES (64u << 20)

struct split {
	struct pk_h5_src s;
	const struct pk_h5_split_opts *o;
	const char *top;
	struct pk_sink *sink;
	struct dlfs_err *err;
	char **head;      /* npy: per dataset, the header of one row */
	size_t *head_len;
	unsigned char **buf; /* per dataset, one block of rows */
	hid_t *fspace;
	struct pk_h5_template t;
	unsigned char *img; /* h5: one sample's image */
	const void **rows;
	char *path;
	size_t path_cap;
};

static hsize_t gcd(hsize_t a, hsize_t b)
{
	while (b) {
		hsize_t r = a % b;
		a = b;
		b = r;
	}
	return a;
}

/* Rows per block: about block_bytes, in whole chunks where possible. */
static hsize_t block_rows(const struct split *sp)
{
	const struct pk_h5_src *s = &sp->s;
	uint64_t per = 0, target = sp->o->block_bytes ? sp->o->block_bytes
						       : BLOCK_BYTES;
	hsize_t lcm = 1;
	for (unsigned j = 0; j < s->nd; j++) {
		const struct pk_h5_dset *d = &s->d[j];
		if (!d->split)
			continue;
		per += d->row_bytes;
		if (d->chunk0 && lcm <= s->n)
			lcm = lcm / gcd(lcm, d->chunk0) * d->chunk0;
	}
	hsize_t rows = per ? target / per : s->n;
	if (rows < 1)
		rows = 1;
	if (lcm > 1 && lcm <= rows)
		rows = rows / lcm * lcm;
	else if (lcm > rows && lcm <= s->n && lcm * per <= 4 * (uint64_t)target)
		rows = lcm; /* a few chunk bands: still bounded */
	return rows > s->n ? s->n : rows;
}

static int set_path(struct split *sp, uint64_t i, const char *name,
		    const char *ext)
{
	size_t need = strlen(sp->top) + strlen(name) + 64;
	if (need > sp->path_cap) {
		char *p = realloc(sp->path, need);
		if (!p)
			return dlfs_err_set(sp->err, -ENOMEM, "out of memory");
		sp->path = p;
		sp->path_cap = need;
	}
	if (name[0])
		snprintf(sp->path, sp->path_cap, "%s/%0*llu/%s%s", sp->top,
			 (int)sp->s.width, (unsigned long long)i, name, ext);
	else
		snprintf(sp->path, sp->path_cap, "%s/%0*llu%s", sp->top,
			 (int)sp->s.width, (unsigned long long)i, ext);
	return 0;
}

static int prepare(struct split *sp, hsize_t rows)
{
	struct pk_h5_src *s = &sp->s;
	unsigned nd = s->nd ? s->nd : 1;
	sp->head = calloc(nd, sizeof(*sp->head));
	sp->head_len = calloc(nd, sizeof(*sp->head_len));
	sp->buf = calloc(nd, sizeof(*sp->buf));
	sp->fspace = calloc(nd, sizeof(*sp->fspace));
	sp->rows = calloc(nd, sizeof(*sp->rows));
	if (!sp->head || !sp->head_len || !sp->buf || !sp->fspace || !sp->rows)
		return dlfs_err_set(sp->err, -ENOMEM, "out of memory");
	for (unsigned j = 0; j < s->nd; j++)
		sp->fspace[j] = -1;
	int ret = 0;
	for (unsigned j = 0; j < s->nd && !ret; j++) {
		struct pk_h5_dset *d = &s->d[j];
		if (!d->split)
			continue;
		if (sp->o->format == DLFS_SAMPLE_NPY)
			ret = pk_npy_header(&d->np, d->dims + 1, d->rank - 1,
					    &sp->head[j], &sp->head_len[j],
					    sp->err);
		if (ret || pk_sink_dry(sp->sink) || !d->row_bytes)
			continue;
		sp->fspace[j] = H5Dget_space(d->id);
		if (sp->fspace[j] < 0)
			return pk_h5_fail(sp->err, "%s: dataset '%s'", s->path,
					  d->name);
		if (d->row_bytes > SIZE_MAX / rows ||
		    !(sp->buf[j] = malloc((size_t)(rows * d->row_bytes))))
			return dlfs_err_set(sp->err, -ENOMEM,
					    "%s: dataset '%s': out of memory "
					    "for %llu rows of %llu bytes",
					    s->path, d->name,
					    (unsigned long long)rows,
					    (unsigned long long)d->row_bytes);
	}
	if (!ret && sp->o->format == DLFS_SAMPLE_H5) {
		ret = pk_h5_template(s, &sp->t, sp->sink, sp->err);
		if (!ret && !pk_sink_dry(sp->sink) &&
		    !(sp->img = malloc(sp->t.len)))
			ret = dlfs_err_set(sp->err, -ENOMEM, "out of memory");
	}
	return ret;
}

static int emit(struct split *sp, hsize_t a, hsize_t i)
{
	struct pk_h5_src *s = &sp->s;
	int dry = pk_sink_dry(sp->sink), ret = 0;
	if (sp->o->format == DLFS_SAMPLE_H5) {
		ret = set_path(sp, i, "", ".h5");
		if (ret)
			return ret;
		if (dry)
			return pk_sink_file(sp->sink, sp->path, NULL, sp->t.len,
					    NULL, 0, sp->err);
		for (unsigned j = 0; j < s->nd; j++)
			sp->rows[j] = sp->buf[j] ? sp->buf[j] + (i - a) *
							      s->d[j].row_bytes
						 : NULL;
		pk_h5_template_fill(&sp->t, s, sp->rows, sp->img);
		return pk_sink_file(sp->sink, sp->path, sp->img, sp->t.len,
				    NULL, 0, sp->err);
	}
	for (unsigned j = 0; j < s->nd && !ret; j++) {
		const struct pk_h5_dset *d = &s->d[j];
		if (!d->split)
			continue;
		ret = set_path(sp, i, d->name, ".npy");
		if (ret)
			break;
		const void *row =
			sp->buf[j] ? sp->buf[j] + (i - a) * d->row_bytes : NULL;
		if (dry)
			ret = pk_sink_file(sp->sink, sp->path, NULL,
					   sp->head_len[j], NULL, d->row_bytes,
					   sp->err);
		else
			ret = pk_sink_file(sp->sink, sp->path, sp->head[j],
					   sp->head_len[j], row, d->row_bytes,
					   sp->err);
	}
	return ret;
}

/* Rows [a, a + cnt) of dataset d into buf. */
static int read_rows(struct split *sp, const struct pk_h5_dset *d,
		     hid_t fspace, hsize_t a, hsize_t cnt, void *buf)
{
	hsize_t start[H5S_MAX_RANK] = {0}, count[H5S_MAX_RANK];
	memcpy(count, d->dims, sizeof(count));
	start[0] = a;
	count[0] = cnt;
	hid_t ms = H5Screate_simple(d->rank, count, NULL);
	int ret = 0;
	if (ms < 0 ||
	    H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start, NULL, count,
				NULL) < 0 ||
	    H5Dread(d->id, d->ftype, ms, fspace, H5P_DEFAULT, buf) < 0)
		ret = pk_h5_fail(sp->err, "%s: dataset '%s': reading rows %llu "
					  "to %llu",
				 sp->s.path, d->name, (unsigned long long)a,
				 (unsigned long long)(a + cnt - 1));
	pk_h5_close(ms);
	return ret;
}

/* The rows of d streamed after the header, in blocks of about
 * block_bytes. */
static int stream_rows(struct split *sp, const struct pk_h5_dset *d)
{
	uint64_t target = sp->o->block_bytes ? sp->o->block_bytes : BLOCK_BYTES;
	hsize_t rows = target / d->row_bytes, n = sp->s.n;
	if (rows < 1)
		rows = 1;
	if (rows > n)
		rows = n;
	hid_t fspace = H5Dget_space(d->id);
	unsigned char *buf = malloc((size_t)(rows * d->row_bytes));
	int ret = 0;
	if (fspace < 0)
		ret = pk_h5_fail(sp->err, "%s: dataset '%s'", sp->s.path,
				 d->name);
	else if (!buf)
		ret = dlfs_err_set(sp->err, -ENOMEM, "out of memory");
	for (hsize_t a = 0; !ret && a < n; a += rows) {
		hsize_t cnt = n - a < rows ? n - a : rows;
		ret = pk_sink_cancelled(sp->sink, sp->err);
		if (!ret)
			ret = read_rows(sp, d, fspace, a, cnt, buf);
		if (!ret)
			ret = pk_sink_stream(sp->sink, buf,
					     (size_t)(cnt * d->row_bytes),
					     sp->err);
	}
	free(buf);
	pk_h5_close(fspace);
	return ret;
}

/* A dataset kept whole: TOP/DATASET.npy, all N samples. */
static int whole(struct split *sp, const struct pk_h5_dset *d)
{
	char *head = NULL, *path = NULL;
	size_t hlen = 0;
	int ret = pk_npy_header(&d->np, d->dims, d->rank, &head, &hlen,
				sp->err);
	if (!ret && asprintf(&path, "%s/%s.npy", sp->top, d->name) < 0) {
		path = NULL;
		ret = dlfs_err_set(sp->err, -ENOMEM, "out of memory");
	}
	if (ret)
		goto out;
	if (pk_sink_dry(sp->sink)) {
		ret = pk_sink_file(sp->sink, path, NULL, hlen, NULL,
				   (size_t)(sp->s.n * d->row_bytes), sp->err);
		goto out;
	}
	pk_sink_stream_begin(sp->sink);
	ret = pk_sink_stream(sp->sink, head, hlen, sp->err);
	if (!ret && sp->s.n && d->row_bytes)
		ret = stream_rows(sp, d);
	if (!ret)
		ret = pk_sink_stream_end(sp->sink, path, sp->err);
out:
	free(head);
	free(path);
	return ret;
}

static int read_block(struct split *sp, hsize_t a, hsize_t cnt)
{
	struct pk_h5_src *s = &sp->s;
	int ret = 0;
	for (unsigned j = 0; j < s->nd && !ret; j++) {
		struct pk_h5_dset *d = &s->d[j];
		if (d->split && d->row_bytes)
			ret = read_rows(sp, d, sp->fspace[j], a, cnt,
					sp->buf[j]);
	}
	return ret;
}

static int meta(struct split *sp, const char *path)
{
	unsigned char *img = NULL;
	size_t len = 0;
	char *mpath = NULL;
	const char *slash = strrchr(path, '/');
	int ret = pk_h5_meta(&sp->s, slash ? slash + 1 : path, sp->o->format,
			     sp->sink, &img, &len, sp->err);
	if (!ret && asprintf(&mpath, "%s/.meta.h5", sp->top) < 0) {
		mpath = NULL;
		ret = dlfs_err_set(sp->err, -ENOMEM, "out of memory");
	}
	if (!ret)
		ret = pk_sink_file(sp->sink, mpath, img, len, NULL, 0, sp->err);
	free(mpath);
	free(img);
	return ret;
}

int pk_h5_split(const char *path, const char *top,
		const struct pk_h5_split_opts *o, struct pk_sink *sink,
		struct dlfs_err *err)
{
	struct split sp = {.o = o, .top = top, .sink = sink, .err = err};
	char *desc = NULL;
	int ret = pk_h5_src_open(&sp.s, path, o->datasets, err);
	if (!ret && o->format == DLFS_SAMPLE_NPY)
		pk_h5_src_keep_small(&sp.s, o->whole_below);
	if (!ret)
		ret = pk_h5_src_describe(&sp.s, &desc, err);
	if (!ret)
		ret = pk_sink_note(sink, desc, err);
	if (!ret)
		ret = meta(&sp, path);
	for (unsigned j = 0; !ret && j < sp.s.nd; j++)
		if (sp.s.d[j].whole)
			ret = whole(&sp, &sp.s.d[j]);
	hsize_t rows = ret ? 1 : block_rows(&sp);
	if (!ret)
		ret = prepare(&sp, rows ? rows : 1);
	for (hsize_t a = 0; !ret && a < sp.s.n; a += rows) {
		hsize_t cnt = sp.s.n - a < rows ? sp.s.n - a : rows;
		ret = pk_sink_cancelled(sink, err);
		if (!ret && !pk_sink_dry(sink))
			ret = read_block(&sp, a, cnt);
		for (hsize_t i = a; !ret && i < a + cnt; i++)
			ret = emit(&sp, a, i);
	}
	for (unsigned j = 0; sp.head && j < sp.s.nd; j++) {
		free(sp.head[j]);
		free(sp.buf[j]);
		pk_h5_close(sp.fspace[j]);
	}
	free(sp.head);
	free(sp.head_len);
	free(sp.buf);
	free(sp.fspace);
	free((void *)sp.rows);
	free(sp.img);
	free(sp.path);
	free(desc);
	pk_h5_template_free(&sp.t);
	pk_h5_src_close(&sp.s);
	return ret;
}
