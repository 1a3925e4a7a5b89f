/* Opening an HDF5 source and choosing what to split: see h5src.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dlfs/format.h"
#include "h5lib.h"
#include "h5src.h"
#include "util.h"

/* The chunk cache bound per dataset: a band of chunks across axis 0. */
#define CACHE_MAX (256u << 20)

struct visit {
	struct pk_h5_src *s;
	unsigned cap;
	struct dlfs_err *err;
	int ret;
};

static herr_t visit_cb(hid_t g, const char *name, const H5L_info_t *li,
		       void *arg)
{
	struct visit *v = arg;
	struct pk_h5_src *s = v->s;
	if (li->type != H5L_TYPE_HARD)
		return 0;
	H5O_info_t oi;
	if (H5Oget_info_by_name2(g, name, &oi, H5O_INFO_BASIC, H5P_DEFAULT) <
	    0) {
		v->ret = pk_h5_fail(v->err, "%s: object '%s'", s->path, name);
		return -1;
	}
	if (oi.type != H5O_TYPE_DATASET)
		return 0;
	for (unsigned i = 0; i < s->nd; i++)
		if (s->d[i].addr == oi.addr)
			return 0; /* another name of one already found */
	if (s->nd == v->cap) {
		unsigned cap = v->cap ? v->cap * 2 : 16;
		struct pk_h5_dset *d = realloc(s->d, cap * sizeof(*d));
		if (!d) {
			v->ret = dlfs_err_set(v->err, -ENOMEM, "out of memory");
			return -1;
		}
		s->d = d;
		v->cap = cap;
	}
	struct pk_h5_dset *d = &s->d[s->nd];
	memset(d, 0, sizeof(*d));
	d->id = d->ftype = -1;
	d->addr = oi.addr;
	d->name = strdup(name);
	if (!d->name) {
		v->ret = dlfs_err_set(v->err, -ENOMEM, "out of memory");
		return -1;
	}
	s->nd++;
	return 0;
}

/* Rank, dims and type of d; the dataset stays open. */
static int inspect(struct pk_h5_src *s, struct pk_h5_dset *d,
		   struct dlfs_err *err)
{
	int ret = 0;
	hid_t sp = -1;
	d->id = H5Dopen2(s->fid, d->name, H5P_DEFAULT);
	if (d->id < 0)
		return pk_h5_fail(err, "%s: dataset '%s'", s->path, d->name);
	hid_t t = H5Dget_type(d->id);
	if (t < 0)
		return pk_h5_fail(err, "%s: dataset '%s'", s->path, d->name);
	d->ftype = H5Tcopy(t);
	pk_h5_close(t);
	if (d->ftype < 0 || (sp = H5Dget_space(d->id)) < 0)
		return pk_h5_fail(err, "%s: dataset '%s'", s->path, d->name);
	H5S_class_t cls = H5Sget_simple_extent_type(sp);
	d->rank = cls == H5S_SIMPLE ? H5Sget_simple_extent_ndims(sp) : 0;
	if (d->rank < 0 ||
	    (d->rank > 0 &&
	     H5Sget_simple_extent_dims(sp, d->dims, NULL) != d->rank)) {
		ret = pk_h5_fail(err, "%s: dataset '%s': dataspace", s->path,
				 d->name);
		goto out;
	}
out:
	pk_h5_close(sp);
	return ret;
}

static double elements(const struct pk_h5_dset *d)
{
	double n = (double)H5Tget_size(d->ftype);
	for (int i = 0; i < d->rank; i++)
		n *= (double)d->dims[i];
	return n;
}

/* The next name of a --split-hdf5 list at *p ("a,/b,,c": commas
 * between, a leading '/' ignored): its start and *len, *p moved past it.
 * @return NULL at the end of the list. */
static const char *next_name(const char **p, size_t *len)
{
	while (**p == ',')
		(*p)++;
	if (!**p)
		return NULL;
	const char *e = strchrnul(*p, ','), *q = *p;
	while (q < e && *q == '/')
		q++;
	*len = (size_t)(e - q);
	*p = e;
	return q;
}

static int has_name(const char *list, const char *name)
{
	size_t n = strlen(name), len;
	const char *q;
	for (const char *p = list ? list : ""; (q = next_name(&p, &len));)
		if (len == n && !memcmp(q, name, n))
			return 1;
	return 0;
}

/*
 * Reopen d with a chunk cache that holds one band of chunks (shape
 * ch[0..nd)) across axis 0, between 1 MiB and CACHE_MAX, so a block
 * boundary inside a chunk never decompresses it twice.
 */
static int reopen_cached(struct pk_h5_src *s, struct pk_h5_dset *d,
			 const hsize_t *ch, int nd, struct dlfs_err *err)
{
	int ret = 0;
	double band = (double)H5Tget_size(d->ftype);
	size_t nchunks = 1;
	for (int i = 0; i < nd; i++) {
		band *= (double)ch[i];
		if (i)
			nchunks *= (size_t)((d->dims[i] + ch[i] - 1) / ch[i]);
	}
	band *= (double)nchunks;
	size_t bytes = band > CACHE_MAX ? CACHE_MAX
		       : band < (1 << 20) ? (1 << 20)
					  : (size_t)band;
	hid_t dapl = H5Pcreate(H5P_DATASET_ACCESS);
	if (dapl < 0 ||
	    H5Pset_chunk_cache(dapl, 10007 + nchunks * 4, bytes, 1.0) < 0) {
		ret = pk_h5_fail(err, "%s: dataset '%s': chunk cache", s->path,
				 d->name);
		goto out;
	}
	H5Dclose(d->id);
	d->id = H5Dopen2(s->fid, d->name, dapl);
	if (d->id < 0)
		ret = pk_h5_fail(err, "%s: dataset '%s'", s->path, d->name);
out:
	pk_h5_close(dapl);
	return ret;
}

/* A chunked dataset: its chunk shape into lay and chunk0, its cache. */
static int check_chunks(struct pk_h5_src *s, struct pk_h5_dset *d,
			hid_t dcpl, struct dlfs_str *lay, struct dlfs_err *err)
{
	hsize_t ch[H5S_MAX_RANK];
	int nd = H5Pget_chunk(dcpl, H5S_MAX_RANK, ch);
	if (nd != d->rank)
		return pk_h5_fail(err, "%s: dataset '%s': chunks", s->path,
				  d->name);
	d->chunk0 = ch[0];
	char shape[256];
	pk_shape_str(ch, nd, NULL, 0, shape, sizeof(shape));
	dlfs_str_addf(lay, "chunked %s", shape);
	return reopen_cached(s, d, ch, nd, err);
}

static const char *layout_name(H5D_layout_t l)
{
	return l == H5D_CONTIGUOUS ? "contiguous"
	       : l == H5D_COMPACT  ? "compact"
	       : l == H5D_VIRTUAL  ? "virtual"
				   : "other layout";
}

/* Every filter must be one this libhdf5 can decode; their names go into
 * lay. */
static int check_filters(struct pk_h5_src *s, struct pk_h5_dset *d,
			 hid_t dcpl, struct dlfs_str *lay,
			 struct dlfs_err *err)
{
	int nf = H5Pget_nfilters(dcpl);
	for (int i = 0; i < nf; i++) {
		unsigned flags = 0, cfg = 0, info = 0;
		size_t nel = 0;
		char name[64] = "";
		H5Z_filter_t f = H5Pget_filter2(dcpl, (unsigned)i, &flags,
						&nel, NULL, sizeof(name), name,
						&cfg);
		if (f < 0)
			return pk_h5_fail(err, "%s: dataset '%s': filter %d",
					  s->path, d->name, i);
		dlfs_str_addf(lay, ", %s", name[0] ? name : "filter");
		if (H5Zfilter_avail(f) <= 0 ||
		    H5Zget_filter_info(f, &info) < 0 ||
		    !(info & H5Z_FILTER_CONFIG_DECODE_ENABLED)) {
			H5Eclear2(H5E_DEFAULT);
			return dlfs_err_set(err, -ENOTSUP,
					    "%s: dataset '%s': filter %d (%s) "
					    "cannot be decoded by this libhdf5 "
					    "(not built in, and no plugin for "
					    "it in HDF5_PLUGIN_PATH)",
					    s->path, d->name, (int)f,
					    name[0] ? name : "unnamed");
		}
	}
	return 0;
}

/* Filters, chunking and the chunk cache; the layout text for notes. */
static int check_storage(struct pk_h5_src *s, struct pk_h5_dset *d,
			 struct dlfs_err *err)
{
	int ret = 0;
	hid_t dcpl = H5Dget_create_plist(d->id);
	struct dlfs_str lay = {0};
	if (dcpl < 0)
		return pk_h5_fail(err, "%s: dataset '%s'", s->path, d->name);
	H5D_layout_t l = H5Pget_layout(dcpl);
	if (l == H5D_CHUNKED)
		ret = check_chunks(s, d, dcpl, &lay, err);
	else
		dlfs_str_addf(&lay, "%s", layout_name(l));
	if (!ret)
		ret = check_filters(s, d, dcpl, &lay, err);
	if (!ret && lay.oom)
		ret = dlfs_err_set(err, -ENOMEM, "out of memory");
	if (!ret)
		snprintf(d->layout, sizeof(d->layout), "%s",
			 lay.s ? lay.s : "");
	dlfs_str_free(&lay);
	pk_h5_close(dcpl);
	return ret;
}

/* Each component of the name must be a file name (with ".npy"). */
static int check_name(struct pk_h5_src *s, const char *name,
		      struct dlfs_err *err)
{
	for (const char *p = name; *p;) {
		const char *e = strchrnul(p, '/');
		size_t n = (size_t)(e - p);
		if (!n || (n == 1 && p[0] == '.') ||
		    (n == 2 && p[0] == '.' && p[1] == '.') ||
		    n + 4 > DLFS_NAME_MAX)
			return dlfs_err_set(err, -EINVAL,
					    "%s: dataset '%s': a part of its "
					    "name cannot be a file name "
					    "(empty, '.', '..' or longer than "
					    "%d bytes)",
					    s->path, name, DLFS_NAME_MAX - 4);
		p = *e ? e + 1 : e;
	}
	return 0;
}

/* --split-hdf5=LIST: every name in it must be a dataset of the file,
 * and those are the ones split. */
static int choose_named(struct pk_h5_src *s, const char *names,
			struct dlfs_err *err)
{
	size_t len;
	const char *q;
	for (const char *p = names; (q = next_name(&p, &len));) {
		int found = 0;
		for (unsigned i = 0; i < s->nd; i++)
			if (strlen(s->d[i].name) == len &&
			    !memcmp(s->d[i].name, q, len))
				found = 1;
		if (!found && len)
			return dlfs_err_set(err, -EINVAL,
					    "%s: no dataset '%.*s' (named by "
					    "--split-hdf5)",
					    s->path, (int)len, q);
	}
	for (unsigned i = 0; i < s->nd; i++)
		s->d[i].split = has_name(names, s->d[i].name);
	s->big = -1;
	return 0;
}

/* By default: every dataset whose first dimension is that of the
 * largest. */
static int choose_largest(struct pk_h5_src *s, struct dlfs_err *err)
{
	struct pk_h5_dset *big = NULL;
	for (unsigned i = 0; i < s->nd; i++)
		if (s->d[i].rank >= 1 &&
		    (!big || elements(&s->d[i]) > elements(big)))
			big = &s->d[i];
	if (!big)
		return dlfs_err_set(err, -EINVAL,
				    "%s: no dataset with a first dimension to "
				    "split along",
				    s->path);
	for (unsigned i = 0; i < s->nd; i++)
		s->d[i].split = s->d[i].rank >= 1 &&
				s->d[i].dims[0] == big->dims[0];
	s->big = (int)(big - s->d);
	return 0;
}

/* The split datasets must agree on N, their first dimension; count
 * them. */
static int agree_on_n(struct pk_h5_src *s, struct dlfs_err *err)
{
	struct pk_h5_dset *first = NULL;
	for (unsigned i = 0; i < s->nd; i++) {
		struct pk_h5_dset *d = &s->d[i];
		if (!d->split)
			continue;
		if (d->rank < 1)
			return dlfs_err_set(err, -EINVAL,
					    "%s: dataset '%s' is a scalar: "
					    "there is no first dimension to "
					    "split along",
					    s->path, d->name);
		if (!first)
			first = d;
		else if (d->dims[0] != first->dims[0])
			return dlfs_err_set(err, -EINVAL,
					    "%s: ragged first dimensions: "
					    "dataset '%s' has %llu rows, '%s' "
					    "has %llu; the datasets split "
					    "together must have the same "
					    "number of samples",
					    s->path, first->name,
					    (unsigned long long)first->dims[0],
					    d->name,
					    (unsigned long long)d->dims[0]);
		s->nsplit++;
	}
	if (!first)
		return dlfs_err_set(err, -EINVAL, "%s: no dataset to split",
				    s->path);
	s->n = first->dims[0];
	return 0;
}

/* Which datasets are split (h5src.h), and N. */
static int choose(struct pk_h5_src *s, const char *names,
		  struct dlfs_err *err)
{
	int ret = names ? choose_named(s, names, err)
			: choose_largest(s, err);
	return ret ? ret : agree_on_n(s, err);
}

int pk_h5_src_open(struct pk_h5_src *s, const char *path, const char *names,
		   struct dlfs_err *err)
{
	memset(s, 0, sizeof(*s));
	s->path = path;
	s->fid = pk_h5_open(path, err);
	if (s->fid < 0) {
		int ret = (int)s->fid;
		s->fid = -1;
		return ret;
	}
	struct visit v = {.s = s, .err = err};
	if (H5Lvisit(s->fid, H5_INDEX_NAME, H5_ITER_INC, visit_cb, &v) < 0)
		return v.ret ? v.ret
			     : pk_h5_fail(err, "%s: walking its groups", path);
	int ret = 0;
	for (unsigned i = 0; i < s->nd && !ret; i++)
		ret = inspect(s, &s->d[i], err);
	if (!ret)
		ret = choose(s, names, err);
	for (unsigned i = 0; i < s->nd && !ret; i++) {
		struct pk_h5_dset *d = &s->d[i];
		if (!d->split)
			continue;
		char where[1024];
		snprintf(where, sizeof(where), "%s: dataset '%s'", path,
			 d->name);
		ret = check_name(s, d->name, err);
		if (!ret)
			ret = pk_h5_npy_type(d->ftype, &d->np, where, err);
		if (!ret)
			ret = check_storage(s, d, err);
		if (ret)
			break;
		uint64_t rb = H5Tget_size(d->ftype);
		for (int k = 1; k < d->rank; k++)
			if (__builtin_mul_overflow(rb, d->dims[k], &rb))
				ret = dlfs_err_set(err, -EFBIG,
						   "%s: a sample is too large",
						   where);
		d->row_bytes = rb;
	}
	if (ret)
		return ret;
	s->width = 1;
	for (uint64_t m = s->n > 0 ? s->n - 1 : 0; m >= 10; m /= 10)
		s->width++;
	return 0;
}

void pk_h5_src_close(struct pk_h5_src *s)
{
	for (unsigned i = 0; i < s->nd; i++) {
		free(s->d[i].name);
		pk_h5_close(s->d[i].id);
		pk_h5_close(s->d[i].ftype);
		pk_npy_type_free(&s->d[i].np);
	}
	free(s->d);
	pk_h5_close(s->fid);
	memset(s, 0, sizeof(*s));
	s->fid = -1;
}

/* Could the first component of name be a sample's directory? */
static int like_sample_dir(const struct pk_h5_src *s, const char *name)
{
	size_t n = strcspn(name, "/");
	if (n != s->width)
		return 0;
	for (size_t k = 0; k < n; k++)
		if (name[k] < '0' || name[k] > '9')
			return 0;
	return 1;
}

void pk_h5_src_keep_small(struct pk_h5_src *s, uint64_t below)
{
	if (s->big < 0 || !below)
		return;
	for (unsigned i = 0; i < s->nd; i++) {
		struct pk_h5_dset *d = &s->d[i];
		if (!d->split || (int)i == s->big || d->row_bytes >= below ||
		    like_sample_dir(s, d->name))
			continue;
		d->split = 0;
		d->whole = 1;
		s->nsplit--;
		s->nwhole++;
	}
}

int pk_h5_src_describe(const struct pk_h5_src *s, char **out,
		       struct dlfs_err *err)
{
	struct dlfs_str b = {0};
	dlfs_str_addf(&b, "%llu samples; split:", (unsigned long long)s->n);
	for (unsigned i = 0; i < s->nd; i++) {
		const struct pk_h5_dset *d = &s->d[i];
		if (!d->split)
			continue;
		char shape[512];
		pk_shape_str(d->dims + 1, d->rank - 1, d->np.extra,
			     d->np.n_extra, shape, sizeof(shape));
		dlfs_str_addf(&b, " %s %s %s [%s];", d->name, shape, d->np.descr,
			    d->layout);
	}
	int kept = 0;
	for (unsigned i = 0; i < s->nd; i++)
		if (s->d[i].whole)
			dlfs_str_addf(&b, "%s %s.npy (%llu bytes a sample)",
				    kept++ ? "," : " one file for all samples:",
				    s->d[i].name,
				    (unsigned long long)s->d[i].row_bytes);
	if (kept)
		dlfs_str_addf(&b, " (--split-hdf5-min=0 splits %s);",
			    kept > 1 ? "them" : "it");
	kept = 0;
	for (unsigned i = 0; i < s->nd; i++)
		if (!s->d[i].split && !s->d[i].whole)
			dlfs_str_addf(&b, "%s %s", kept++ ? "," : " kept whole:",
				    s->d[i].name);
	if (b.s && b.n && b.s[b.n - 1] == ';')
		b.s[--b.n] = '\0';
	if (b.oom) {
		dlfs_str_free(&b);
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	}
	*out = b.s;
	return 0;
}
