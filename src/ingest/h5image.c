/* In-memory HDF5 files: per-sample images and .meta.h5; see h5image.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "h5image.h"
#include "h5lib.h"

/* Property lists shared by everything one build creates. */
struct mem {
	hid_t fapl, fcpl, gcpl, lcpl, fid;
};

static void mem_close(struct mem *m)
{
	pk_h5_close(m->fid);
	pk_h5_close(m->fapl);
	pk_h5_close(m->fcpl);
	pk_h5_close(m->gcpl);
	pk_h5_close(m->lcpl);
	m->fid = m->fapl = m->fcpl = m->gcpl = m->lcpl = -1;
}

static int mem_open(struct mem *m, size_t increment, const char *what,
		    struct dlfs_err *err)
{
	char name[64];
	m->fid = m->gcpl = m->lcpl = -1;
	int ret = pk_h5_mem_plists(increment, &m->fapl, &m->fcpl, err);
	if (ret)
		return ret;
	m->gcpl = H5Pcreate(H5P_GROUP_CREATE);
	m->lcpl = H5Pcreate(H5P_LINK_CREATE);
	if (m->gcpl < 0 || m->lcpl < 0 ||
	    H5Pset_obj_track_times(m->gcpl, 0) < 0) {
		ret = pk_h5_fail(err, "%s: property lists", what);
		goto fail;
	}
	/* The name only identifies the file among those open here. */
	snprintf(name, sizeof(name), "dlfs-mem-%p", (void *)m);
	m->fid = H5Fcreate(name, H5F_ACC_EXCL, m->fcpl, m->fapl);
	if (m->fid < 0) {
		ret = pk_h5_fail(err, "%s: creating it in memory", what);
		goto fail;
	}
	return 0;
fail:
	mem_close(m);
	return ret;
}

/* Create the missing groups on the way to path, without times. */
static int make_parents(struct mem *m, const char *path, const char *what,
			struct dlfs_err *err)
{
	char buf[4096];
	snprintf(buf, sizeof(buf), "%s", path);
	for (char *p = strchr(buf, '/'); p; p = strchr(p + 1, '/')) {
		*p = '\0';
		htri_t e = H5Lexists(m->fid, buf, H5P_DEFAULT);
		if (e == 0) {
			hid_t g = H5Gcreate2(m->fid, buf, H5P_DEFAULT, m->gcpl,
					     H5P_DEFAULT);
			if (g < 0)
				e = -1;
			pk_h5_close(g);
		}
		if (e < 0)
			return pk_h5_fail(err, "%s: group '%s'", what, buf);
		*p = '/';
	}
	return 0;
}

/* ---- attributes ---- */

struct acopy {
	hid_t to;
	const char *where;
	struct pk_sink *ws;
	struct dlfs_err *err;
	int ret;
};

static herr_t attr_cb(hid_t loc, const char *name, const H5A_info_t *ai,
		      void *arg)
{
	struct acopy *c = arg;
	hid_t a = -1, t = -1, mt = -1, sp = -1, acpl = -1, b = -1;
	void *buf = NULL;
	int vlen = 0, ret = 0;
	a = H5Aopen(loc, name, H5P_DEFAULT);
	t = a < 0 ? -1 : H5Aget_type(a);
	sp = a < 0 ? -1 : H5Aget_space(a);
	mt = t < 0 ? -1 : H5Tcopy(t); /* transient, same layout */
	if (mt < 0 || sp < 0) {
		ret = pk_h5_fail(c->err, "%s: attribute '%s'", c->where, name);
		goto out;
	}
	if (H5Tdetect_class(mt, H5T_REFERENCE) > 0) {
		if (c->ws)
			ret = pk_sink_warn(c->ws, c->err,
					   "%s: attribute '%s' holds references "
					   "and is left out",
					   c->where, name);
		goto out;
	}
	vlen = H5Tdetect_class(mt, H5T_VLEN) > 0 || H5Tis_variable_str(mt) > 0;
	hssize_t np = H5Sget_simple_extent_npoints(sp);
	size_t es = H5Tget_size(mt);
	if (np < 0 || !es) {
		ret = pk_h5_fail(c->err, "%s: attribute '%s'", c->where, name);
		goto out;
	}
	buf = calloc(np ? (size_t)np : 1, es);
	if (!buf) {
		ret = dlfs_err_set(c->err, -ENOMEM, "out of memory");
		goto out;
	}
	if (np && H5Aread(a, mt, buf) < 0) {
		ret = pk_h5_fail(c->err, "%s: reading attribute '%s'",
				 c->where, name);
		goto out;
	}
	acpl = H5Pcreate(H5P_ATTRIBUTE_CREATE);
	if (acpl < 0 || H5Pset_char_encoding(acpl, ai->cset) < 0 ||
	    (b = H5Acreate2(c->to, name, mt, sp, acpl, H5P_DEFAULT)) < 0 ||
	    (np && H5Awrite(b, mt, buf) < 0))
		ret = pk_h5_fail(c->err, "%s: copying attribute '%s'",
				 c->where, name);
	if (np && vlen)
		H5Dvlen_reclaim(mt, sp, H5P_DEFAULT, buf);
out:
	free(buf);
	pk_h5_close(b);
	pk_h5_close(acpl);
	pk_h5_close(mt);
	pk_h5_close(t);
	pk_h5_close(sp);
	pk_h5_close(a);
	c->ret = ret;
	return ret ? -1 : 0;
}

/* Copy every attribute of from onto to, in name order. */
static int copy_attrs(hid_t from, hid_t to, const char *where,
		      struct pk_sink *ws, struct dlfs_err *err)
{
	struct acopy c = {.to = to, .where = where, .ws = ws, .err = err};
	hsize_t idx = 0;
	if (H5Aiterate2(from, H5_INDEX_NAME, H5_ITER_INC, &idx, attr_cb, &c) <
	    0)
		return c.ret ? c.ret
			     : pk_h5_fail(err, "%s: attributes", where);
	return 0;
}

/* ---- per-sample files ---- */

static int build_sample(const struct pk_h5_src *s, const void *const *rows,
			struct mem *m, uint64_t *off, struct pk_sink *ws,
			struct dlfs_err *err)
{
	char where[1024];
	uint64_t total = 0;
	void *zeros = NULL;
	hid_t dcpl = -1;
	int ret;
	for (unsigned j = 0; j < s->nd; j++)
		if (s->d[j].split)
			total += s->d[j].row_bytes;
	snprintf(where, sizeof(where), "%s: per-sample HDF5 file", s->path);
	ret = mem_open(m, (size_t)(total + (64 << 10)), where, err);
	if (ret)
		return ret;
	dcpl = H5Pcreate(H5P_DATASET_CREATE);
	if (dcpl < 0 || H5Pset_obj_track_times(dcpl, 0) < 0 ||
	    H5Pset_layout(dcpl, H5D_CONTIGUOUS) < 0 ||
	    H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_EARLY) < 0 ||
	    H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER) < 0) {
		ret = pk_h5_fail(err, "%s: property lists", where);
		goto out;
	}
	for (unsigned j = 0; j < s->nd && !ret; j++) {
		const struct pk_h5_dset *d = &s->d[j];
		off[j] = UINT64_MAX;
		if (!d->split)
			continue;
		snprintf(where, sizeof(where),
			 "%s: dataset '%s': per-sample HDF5 file", s->path,
			 d->name);
		hid_t sp = d->rank > 1
				   ? H5Screate_simple(d->rank - 1, d->dims + 1,
						      NULL)
				   : H5Screate(H5S_SCALAR);
		hid_t ds = -1;
		ret = make_parents(m, d->name, where, err);
		if (!ret && (sp < 0 ||
			     (ds = H5Dcreate2(m->fid, d->name, d->ftype, sp,
					      H5P_DEFAULT, dcpl,
					      H5P_DEFAULT)) < 0))
			ret = pk_h5_fail(err, "%s", where);
		if (!ret)
			ret = copy_attrs(d->id, ds, where, ws, err);
		if (!ret && d->row_bytes) {
			const void *row = rows ? rows[j] : NULL;
			if (!row) {
				free(zeros);
				zeros = calloc(1, d->row_bytes);
				row = zeros;
			}
			if (!row)
				ret = dlfs_err_set(err, -ENOMEM,
						   "out of memory");
			else if (H5Dwrite(ds, d->ftype, H5S_ALL, H5S_ALL,
					  H5P_DEFAULT, row) < 0)
				ret = pk_h5_fail(err, "%s: write", where);
			haddr_t a = ret ? HADDR_UNDEF : H5Dget_offset(ds);
			if (!ret && a == HADDR_UNDEF)
				ret = pk_h5_fail(err, "%s: data address",
						 where);
			off[j] = (uint64_t)a;
		}
		pk_h5_close(ds);
		pk_h5_close(sp);
	}
out:
	free(zeros);
	pk_h5_close(dcpl);
	if (ret)
		mem_close(m);
	return ret;
}

int pk_h5_template(const struct pk_h5_src *s, struct pk_h5_template *t,
		   struct pk_sink *ws, struct dlfs_err *err)
{
	struct mem m;
	memset(t, 0, sizeof(*t));
	t->off = calloc(s->nd ? s->nd : 1, sizeof(*t->off));
	if (!t->off)
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	int ret = build_sample(s, NULL, &m, t->off, ws, err);
	if (ret)
		return ret;
	ret = pk_h5_image(m.fid, &t->img, &t->len, err);
	mem_close(&m);
	for (unsigned j = 0; !ret && j < s->nd; j++)
		if (t->off[j] != UINT64_MAX &&
		    t->off[j] + s->d[j].row_bytes > t->len)
			ret = dlfs_err_set(err, -EIO,
					   "%s: dataset '%s': its data lies "
					   "outside the per-sample image",
					   s->path, s->d[j].name);
	return ret;
}

void pk_h5_template_free(struct pk_h5_template *t)
{
	free(t->img);
	free(t->off);
	memset(t, 0, sizeof(*t));
}

void pk_h5_template_fill(const struct pk_h5_template *t,
			 const struct pk_h5_src *s, const void *const *rows,
			 unsigned char *out)
{
	memcpy(out, t->img, t->len);
	for (unsigned j = 0; j < s->nd; j++)
		if (t->off[j] != UINT64_MAX)
			memcpy(out + t->off[j], rows[j], s->d[j].row_bytes);
}

int pk_h5_sample_build(const struct pk_h5_src *s, const void *const *rows,
		       unsigned char **img, size_t *len, struct dlfs_err *err)
{
	struct mem m;
	uint64_t *off = calloc(s->nd ? s->nd : 1, sizeof(*off));
	if (!off)
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	int ret = build_sample(s, rows, &m, off, NULL, err);
	if (!ret) {
		ret = pk_h5_image(m.fid, img, len, err);
		mem_close(&m);
	}
	free(off);
	return ret;
}

/* ---- .meta.h5 ---- */

struct seen {
	uint64_t addr;
	char *name;
};

struct meta {
	const struct pk_h5_src *s;
	struct mem m;
	hid_t dcpl, ocpl;
	struct seen *seen;
	unsigned nseen, cap;
	struct pk_sink *ws;
	struct dlfs_err *err;
	int ret;
};

static const char *seen_name(struct meta *mt, uint64_t addr)
{
	for (unsigned i = 0; i < mt->nseen; i++)
		if (mt->seen[i].addr == addr)
			return mt->seen[i].name;
	return NULL;
}

static int add_seen(struct meta *mt, uint64_t addr, const char *name)
{
	if (mt->nseen == mt->cap) {
		unsigned cap = mt->cap ? mt->cap * 2 : 32;
		struct seen *sn = realloc(mt->seen, cap * sizeof(*sn));
		if (!sn)
			return dlfs_err_set(mt->err, -ENOMEM, "out of memory");
		mt->seen = sn;
		mt->cap = cap;
	}
	mt->seen[mt->nseen].addr = addr;
	mt->seen[mt->nseen].name = strdup(name);
	if (!mt->seen[mt->nseen].name)
		return dlfs_err_set(mt->err, -ENOMEM, "out of memory");
	mt->nseen++;
	return 0;
}

static int placeholder(struct meta *mt, const struct pk_h5_dset *d,
		       const char *where)
{
	hsize_t dims[H5S_MAX_RANK];
	memcpy(dims, d->dims, sizeof(dims));
	dims[0] = 0;
	int ret = 0;
	hid_t sp = H5Screate_simple(d->rank, dims, NULL), ds = -1;
	if (sp < 0 || (ds = H5Dcreate2(mt->m.fid, d->name, d->ftype, sp,
				       mt->m.lcpl, mt->dcpl, H5P_DEFAULT)) < 0)
		ret = pk_h5_fail(mt->err, "%s", where);
	if (!ret)
		ret = copy_attrs(d->id, ds, where, mt->ws, mt->err);
	pk_h5_close(ds);
	pk_h5_close(sp);
	return ret;
}

static int meta_hard(struct meta *mt, hid_t g, const char *name,
		     const char *where)
{
	const struct pk_h5_src *s = mt->s;
	hid_t dst = mt->m.fid;
	H5O_info_t oi;
	if (H5Oget_info_by_name2(g, name, &oi, H5O_INFO_BASIC, H5P_DEFAULT) <
	    0)
		return pk_h5_fail(mt->err, "%s", where);
	const char *prev = seen_name(mt, oi.addr);
	if (prev) {
		if (H5Lcreate_hard(dst, prev, dst, name, mt->m.lcpl,
				   H5P_DEFAULT) < 0)
			return pk_h5_fail(mt->err, "%s: hard link", where);
		return 0;
	}
	int ret = add_seen(mt, oi.addr, name);
	if (ret)
		return ret;
	if (oi.type == H5O_TYPE_GROUP) {
		hid_t from = H5Gopen2(g, name, H5P_DEFAULT), to = -1;
		if (from < 0 || (to = H5Gcreate2(dst, name, mt->m.lcpl,
						  mt->m.gcpl, H5P_DEFAULT)) < 0)
			ret = pk_h5_fail(mt->err, "%s", where);
		if (!ret)
			ret = copy_attrs(from, to, where, mt->ws, mt->err);
		pk_h5_close(to);
		pk_h5_close(from);
		return ret;
	}
	if (oi.type == H5O_TYPE_DATASET)
		for (unsigned i = 0; i < s->nd; i++)
			if (s->d[i].addr == oi.addr && s->d[i].split)
				return placeholder(mt, &s->d[i], where);
	/* Datasets kept whole and named datatypes, as they are. */
	if (H5Ocopy(g, name, dst, name, mt->ocpl, mt->m.lcpl) < 0)
		return pk_h5_fail(mt->err, "%s: copying it", where);
	return 0;
}

static herr_t meta_cb(hid_t g, const char *name, const H5L_info_t *li,
		      void *arg)
{
	struct meta *mt = arg;
	char where[1024], *val = NULL;
	int ret = 0;
	snprintf(where, sizeof(where), "%s: '%s': .meta.h5", mt->s->path,
		 name);
	if (H5Pset_char_encoding(mt->m.lcpl, li->cset) < 0) {
		ret = pk_h5_fail(mt->err, "%s", where);
		goto out;
	}
	if (li->type == H5L_TYPE_HARD) {
		ret = meta_hard(mt, g, name, where);
		goto out;
	}
	if (li->type != H5L_TYPE_SOFT && li->type != H5L_TYPE_EXTERNAL) {
		if (mt->ws)
			ret = pk_sink_warn(mt->ws, mt->err,
					   "%s: a user-defined link, left out",
					   where);
		goto out;
	}
	val = malloc(li->u.val_size + 1);
	if (!val) {
		ret = dlfs_err_set(mt->err, -ENOMEM, "out of memory");
		goto out;
	}
	if (H5Lget_val(g, name, val, li->u.val_size, H5P_DEFAULT) < 0) {
		ret = pk_h5_fail(mt->err, "%s: link value", where);
		goto out;
	}
	val[li->u.val_size] = '\0';
	if (li->type == H5L_TYPE_SOFT) {
		if (H5Lcreate_soft(val, mt->m.fid, name, mt->m.lcpl,
				   H5P_DEFAULT) < 0)
			ret = pk_h5_fail(mt->err, "%s: soft link", where);
	} else {
		const char *file, *obj;
		unsigned flags;
		if (H5Lunpack_elink_val(val, li->u.val_size, &flags, &file,
					&obj) < 0 ||
		    H5Lcreate_external(file, obj, mt->m.fid, name, mt->m.lcpl,
				       H5P_DEFAULT) < 0)
			ret = pk_h5_fail(mt->err, "%s: external link", where);
	}
out:
	free(val);
	mt->ret = ret;
	return ret ? -1 : 0;
}

/* A UTF-8 variable-length string attribute (h5py reads str), or n. */
static int put_str_attr(hid_t loc, const char *name, const char *const *v,
			unsigned n, int scalar, const char *where,
			struct dlfs_err *err)
{
	hid_t t = H5Tcopy(H5T_C_S1), sp = -1, a = -1;
	hsize_t dim = n;
	int ret = 0;
	sp = scalar ? H5Screate(H5S_SCALAR) : H5Screate_simple(1, &dim, NULL);
	if (t < 0 || sp < 0 || H5Tset_size(t, H5T_VARIABLE) < 0 ||
	    H5Tset_cset(t, H5T_CSET_UTF8) < 0 ||
	    (a = H5Acreate2(loc, name, t, sp, H5P_DEFAULT, H5P_DEFAULT)) < 0 ||
	    (n && H5Awrite(a, t, v) < 0))
		ret = pk_h5_fail(err, "%s: attribute %s", where, name);
	pk_h5_close(a);
	pk_h5_close(sp);
	pk_h5_close(t);
	return ret;
}

/* dlfs_* attributes on the root, where the source has none by the name. */
static int provenance(struct meta *mt, const char *source_name,
		      enum dlfs_sample_format f, const char *where)
{
	const struct pk_h5_src *s = mt->s;
	hid_t root = mt->m.fid;
	int ret = 0;
	const char **names = calloc(s->nd ? s->nd : 1, sizeof(*names));
	unsigned n = 0;
	if (!names)
		return dlfs_err_set(mt->err, -ENOMEM, "out of memory");
	for (unsigned i = 0; i < s->nd; i++)
		if (s->d[i].split)
			names[n++] = s->d[i].name;
	const char *fmt = f == DLFS_SAMPLE_H5 ? "h5" : "npy";
	if (H5Aexists(root, "dlfs_source") == 0)
		ret = put_str_attr(root, "dlfs_source", &source_name, 1, 1,
				   where, mt->err);
	if (!ret && H5Aexists(root, "dlfs_sample_format") == 0)
		ret = put_str_attr(root, "dlfs_sample_format", &fmt, 1, 1,
				   where, mt->err);
	if (!ret && H5Aexists(root, "dlfs_split") == 0)
		ret = put_str_attr(root, "dlfs_split", names, n, 0, where,
				   mt->err);
	if (!ret && H5Aexists(root, "dlfs_samples") == 0) {
		unsigned long long v = s->n;
		hid_t sp = H5Screate(H5S_SCALAR), a = -1;
		if (sp < 0 ||
		    (a = H5Acreate2(root, "dlfs_samples", H5T_STD_U64LE, sp,
				    H5P_DEFAULT, H5P_DEFAULT)) < 0 ||
		    H5Awrite(a, H5T_NATIVE_ULLONG, &v) < 0)
			ret = pk_h5_fail(mt->err, "%s: attribute dlfs_samples",
					 where);
		pk_h5_close(a);
		pk_h5_close(sp);
	}
	free(names);
	return ret;
}

int pk_h5_meta(const struct pk_h5_src *s, const char *source_name,
	       enum dlfs_sample_format f, struct pk_sink *ws,
	       unsigned char **img, size_t *len, struct dlfs_err *err)
{
	struct meta mt = {.s = s, .ws = ws, .err = err, .dcpl = -1,
			  .ocpl = -1};
	char where[1024];
	snprintf(where, sizeof(where), "%s: .meta.h5", s->path);
	int ret = mem_open(&mt.m, 1 << 20, where, err);
	if (ret)
		return ret;
	mt.dcpl = H5Pcreate(H5P_DATASET_CREATE);
	mt.ocpl = H5Pcreate(H5P_OBJECT_COPY);
	if (mt.dcpl < 0 || mt.ocpl < 0 ||
	    H5Pset_obj_track_times(mt.dcpl, 0) < 0) {
		ret = pk_h5_fail(err, "%s: property lists", where);
		goto out;
	}
	ret = copy_attrs(s->fid, mt.m.fid, where, ws, err);
	if (!ret)
		ret = provenance(&mt, source_name, f, where);
	if (!ret && H5Lvisit(s->fid, H5_INDEX_NAME, H5_ITER_INC, meta_cb,
			     &mt) < 0)
		ret = mt.ret ? mt.ret : pk_h5_fail(err, "%s: walking", where);
	if (!ret)
		ret = pk_h5_image(mt.m.fid, img, len, err);
out:
	for (unsigned i = 0; i < mt.nseen; i++)
		free(mt.seen[i].name);
	free(mt.seen);
	pk_h5_close(mt.dcpl);
	pk_h5_close(mt.ocpl);
	mem_close(&mt.m);
	return ret;
}
