/* HDF5 datatypes to numpy dtypes and .npy headers: see h5type.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "h5lib.h"
#include "h5type.h"
#include "util.h"

#define MAX_DEPTH 8

struct ctx {
	const char *where;
	struct dlfs_err *err;
	int utf8;
};

static int refuse(struct ctx *c, const char *what)
{
	return dlfs_err_set(c->err, -ENOTSUP,
			    "%s: %s cannot be split (dlfs-pack refuses "
			    "%s); name the datasets to split with "
			    "--split-hdf5=LIST, the others are kept whole in "
			    ".meta.h5",
			    c->where, what, PK_H5_REFUSED);
}

static char order_char(hid_t t, size_t size)
{
	if (size == 1)
		return '|';
	return H5Tget_order(t) == H5T_ORDER_BE ? '>' : '<';
}

/* A Python string literal: ASCII controls and quotes escaped. */
static void py_quote(struct dlfs_str *b, const char *s, struct ctx *c)
{
	dlfs_str_add(b, "'", 1);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '\\' || *p == '\'')
			dlfs_str_addf(b, "\\%c", *p);
		else if (*p < 0x20 || *p == 0x7f)
			dlfs_str_addf(b, "\\x%02x", *p);
		else
			dlfs_str_add(b, p, 1);
		if (*p >= 0x80)
			c->utf8 = 1;
	}
	dlfs_str_add(b, "'", 1);
}

static int describe(hid_t t, struct dlfs_str *b, int depth, struct ctx *c);

static int int_descr(hid_t t, struct dlfs_str *b, int is_signed,
		     struct ctx *c)
{
	size_t size = H5Tget_size(t);
	size_t prec = H5Tget_precision(t);
	int off = H5Tget_offset(t);
	char what[96];
	if ((size != 1 && size != 2 && size != 4 && size != 8) ||
	    prec != 8 * size || off != 0) {
		snprintf(what, sizeof(what),
			 "an integer of %zu bytes with %zu bits of precision "
			 "at bit %d",
			 size, prec, off);
		return refuse(c, what);
	}
	H5T_order_t o = H5Tget_order(t);
	if (size > 1 && o != H5T_ORDER_LE && o != H5T_ORDER_BE)
		return refuse(c, "an integer of mixed byte order");
	dlfs_str_addf(b, "'%c%c%zu'", order_char(t, size), is_signed ? 'i' : 'u',
		    size);
	return 0;
}

static int float_descr(hid_t t, struct dlfs_str *b, struct ctx *c)
{
	static const struct {
		size_t size, spos, epos, esize, mpos, msize, bias;
	} ieee[] = {
		{2, 15, 10, 5, 0, 10, 15},
		{4, 31, 23, 8, 0, 23, 127},
		{8, 63, 52, 11, 0, 52, 1023},
	};
	size_t size = H5Tget_size(t), spos, epos, esize, mpos, msize;
	if (H5Tget_fields(t, &spos, &epos, &esize, &mpos, &msize) < 0)
		return pk_h5_fail(c->err, "%s: float type", c->where);
	for (size_t i = 0; i < sizeof(ieee) / sizeof(ieee[0]); i++) {
		if (ieee[i].size == size && ieee[i].spos == spos &&
		    ieee[i].epos == epos && ieee[i].esize == esize &&
		    ieee[i].mpos == mpos && ieee[i].msize == msize &&
		    H5Tget_ebias(t) == ieee[i].bias &&
		    H5Tget_norm(t) == H5T_NORM_IMPLIED &&
		    H5Tget_offset(t) == 0 && H5Tget_precision(t) == 8 * size) {
			H5T_order_t o = H5Tget_order(t);
			if (o != H5T_ORDER_LE && o != H5T_ORDER_BE)
				break;
			dlfs_str_addf(b, "'%cf%zu'", order_char(t, size), size);
			return 0;
		}
	}
	char what[64];
	snprintf(what, sizeof(what), "a non-IEEE float of %zu bytes", size);
	return refuse(c, what);
}

/* h5py's bool: enum (1-byte int) {FALSE = 0, TRUE = 1}. */
static int is_h5py_bool(hid_t t)
{
	hid_t base = H5Tget_super(t);
	int ok = base >= 0 && H5Tget_size(base) == 1 &&
		 H5Tget_nmembers(t) == 2;
	for (unsigned i = 0; ok && i < 2; i++) {
		char *name = H5Tget_member_name(t, i);
		signed char v = -1;
		ok = name && H5Tget_member_value(t, i, &v) >= 0 &&
		     !strcmp(name, v ? "TRUE" : "FALSE") && (v == 0 || v == 1);
		if (name)
			H5free_memory(name);
	}
	pk_h5_close(base);
	return ok;
}

/*
 * h5py's complex: compound {r, i} of two equal IEEE floats. @return 1
 * (described), 0 (not one), or a negative errno.
 */
static int complex_descr(hid_t t, struct dlfs_str *b, struct ctx *c)
{
	if (H5Tget_nmembers(t) != 2)
		return 0;
	size_t size = H5Tget_size(t);
	hid_t m0 = H5Tget_member_type(t, 0), m1 = H5Tget_member_type(t, 1);
	char *n0 = H5Tget_member_name(t, 0), *n1 = H5Tget_member_name(t, 1);
	int yes = m0 >= 0 && m1 >= 0 && n0 && n1 && !strcmp(n0, "r") &&
		  !strcmp(n1, "i") && H5Tget_class(m0) == H5T_FLOAT &&
		  H5Tequal(m0, m1) > 0 && H5Tget_size(m0) * 2 == size &&
		  (size == 8 || size == 16) &&
		  H5Tget_member_offset(t, 0) == 0 &&
		  H5Tget_member_offset(t, 1) == size / 2;
	if (yes) {
		struct dlfs_str tmp = {0};
		/* The parts must be IEEE floats numpy knows. */
		int r = float_descr(m0, &tmp, c);
		if (r)
			yes = r;
		else
			dlfs_str_addf(b, "'%cc%zu'", order_char(m0, 2), size);
		dlfs_str_free(&tmp);
	}
	if (n0)
		H5free_memory(n0);
	if (n1)
		H5free_memory(n1);
	pk_h5_close(m0);
	pk_h5_close(m1);
	return yes;
}

struct member {
	size_t off, size;
	char *name;
	hid_t type;
};

static int by_offset(const void *a, const void *b)
{
	const struct member *x = a, *y = b;
	return x->off < y->off ? -1 : x->off > y->off;
}

/* One field of a compound: ('name', DESCR) or ('name', DESCR, SHAPE). */
static int field_descr(struct member *m, struct dlfs_str *b, int depth,
		       struct ctx *c)
{
	int ret = 0;
	hid_t base = -1;
	dlfs_str_add(b, "(", 1);
	py_quote(b, m->name, c);
	dlfs_str_add(b, ", ", 2);
	if (H5Tget_class(m->type) == H5T_ARRAY) {
		int nd = H5Tget_array_ndims(m->type);
		hsize_t dims[H5S_MAX_RANK];
		base = H5Tget_super(m->type);
		if (nd < 1 || base < 0 ||
		    H5Tget_array_dims2(m->type, dims) != nd) {
			ret = pk_h5_fail(c->err, "%s: array member", c->where);
			goto out;
		}
		if (H5Tget_class(base) == H5T_ARRAY) {
			ret = refuse(c, "an array of arrays");
			goto out;
		}
		ret = describe(base, b, depth + 1, c);
		if (ret)
			goto out;
		char shape[256];
		pk_shape_str(dims, nd, NULL, 0, shape, sizeof(shape));
		dlfs_str_addf(b, ", %s", shape);
	} else {
		ret = describe(m->type, b, depth + 1, c);
	}
	dlfs_str_add(b, ")", 1);
out:
	pk_h5_close(base);
	return ret;
}

static int compound_descr(hid_t t, struct dlfs_str *b, int depth,
			  struct ctx *c)
{
	int ret = complex_descr(t, b, c);
	if (ret)
		return ret < 0 ? ret : 0;
	int n = H5Tget_nmembers(t);
	size_t size = H5Tget_size(t);
	if (n <= 0)
		return refuse(c, "a compound type without members");
	struct member *m = calloc((size_t)n, sizeof(*m));
	if (!m)
		return dlfs_err_set(c->err, -ENOMEM, "out of memory");
	for (int i = 0; i < n; i++)
		m[i].type = -1;
	for (int i = 0; i < n; i++) {
		m[i].name = H5Tget_member_name(t, (unsigned)i);
		m[i].type = H5Tget_member_type(t, (unsigned)i);
		m[i].off = H5Tget_member_offset(t, (unsigned)i);
		if (!m[i].name || m[i].type < 0) {
			ret = pk_h5_fail(c->err, "%s: compound member %d",
					 c->where, i);
			goto out;
		}
		m[i].size = H5Tget_size(m[i].type);
		if (!m[i].name[0]) {
			ret = refuse(c, "a compound with an unnamed member");
			goto out;
		}
	}
	qsort(m, (size_t)n, sizeof(*m), by_offset);
	/* numpy wants every byte named: gaps become ('', '|VN') padding. */
	size_t at = 0;
	dlfs_str_add(b, "[", 1);
	for (int i = 0; i < n; i++) {
		if (m[i].off < at || m[i].off + m[i].size > size) {
			ret = refuse(c, "a compound with overlapping members");
			goto out;
		}
		if (m[i].off > at)
			dlfs_str_addf(b, "('', '|V%zu'), ", m[i].off - at);
		ret = field_descr(&m[i], b, depth, c);
		if (ret)
			goto out;
		if (i + 1 < n || m[i].off + m[i].size < size)
			dlfs_str_add(b, ", ", 2);
		at = m[i].off + m[i].size;
	}
	if (at < size)
		dlfs_str_addf(b, "('', '|V%zu')", size - at);
	dlfs_str_add(b, "]", 1);
out:
	for (int i = 0; i < n; i++) {
		if (m[i].name)
			H5free_memory(m[i].name);
		pk_h5_close(m[i].type);
	}
	free(m);
	return ret;
}

static int describe(hid_t t, struct dlfs_str *b, int depth, struct ctx *c)
{
	if (depth > MAX_DEPTH)
		return refuse(c, "a type nested more than 8 levels deep");
	size_t size = H5Tget_size(t);
	switch (H5Tget_class(t)) {
	case H5T_INTEGER:
		return int_descr(t, b, H5Tget_sign(t) != H5T_SGN_NONE, c);
	case H5T_BITFIELD:
		return int_descr(t, b, 0, c);
	case H5T_FLOAT:
		return float_descr(t, b, c);
	case H5T_STRING:
		if (H5Tis_variable_str(t) > 0)
			return refuse(c, "a variable-length string");
		dlfs_str_addf(b, "'|S%zu'", size);
		return 0;
	case H5T_OPAQUE:
		dlfs_str_addf(b, "'|V%zu'", size);
		return 0;
	case H5T_ENUM: {
		if (is_h5py_bool(t)) {
			dlfs_str_addf(b, "'|b1'");
			return 0;
		}
		hid_t base = H5Tget_super(t);
		if (base < 0)
			return pk_h5_fail(c->err, "%s: enum type", c->where);
		int ret = describe(base, b, depth + 1, c);
		pk_h5_close(base);
		return ret;
	}
	case H5T_COMPOUND:
		return compound_descr(t, b, depth, c);
	case H5T_ARRAY:
		return refuse(c, "an array type inside an array");
	case H5T_VLEN:
		return refuse(c, "a variable-length sequence");
	case H5T_REFERENCE:
		return refuse(c, "a reference");
	case H5T_TIME:
		return refuse(c, "an H5T_TIME value");
	default:
		return refuse(c, "a datatype of an unknown class");
	}
}

int pk_h5_npy_type(hid_t t, struct pk_npy_type *out, const char *where,
		   struct dlfs_err *err)
{
	struct ctx c = {.where = where, .err = err};
	struct dlfs_str b = {0};
	hid_t base = -1;
	int ret = 0;
	memset(out, 0, sizeof(*out));
	out->size = H5Tget_size(t);
	if (!out->size) {
		ret = pk_h5_fail(err, "%s: datatype", where);
		goto out;
	}
	if (H5Tget_class(t) == H5T_ARRAY) {
		int nd = H5Tget_array_ndims(t);
		base = H5Tget_super(t);
		if (nd < 1 || base < 0 ||
		    H5Tget_array_dims2(t, out->extra) != nd) {
			ret = pk_h5_fail(err, "%s: array type", where);
			goto out;
		}
		out->n_extra = nd;
		out->size = H5Tget_size(base);
		ret = describe(base, &b, 1, &c);
	} else {
		ret = describe(t, &b, 0, &c);
	}
	if (!ret && b.oom)
		ret = dlfs_err_set(err, -ENOMEM, "out of memory");
	if (ret)
		goto out;
	out->descr = b.s;
	out->utf8 = c.utf8;
	b.s = NULL;
out:
	pk_h5_close(base);
	dlfs_str_free(&b);
	return ret;
}

void pk_npy_type_free(struct pk_npy_type *t)
{
	free(t->descr);
	t->descr = NULL;
}

void pk_shape_str(const hsize_t *dims, int n, const hsize_t *extra,
		  int n_extra, char *buf, size_t len)
{
	size_t at = 0;
	int total = n + n_extra;
	at += (size_t)snprintf(buf, len, "(");
	for (int i = 0; i < total && at < len; i++) {
		unsigned long long d = i < n ? dims[i] : extra[i - n];
		at += (size_t)snprintf(buf + at, len - at, "%s%llu",
				       i ? ", " : "", d);
	}
	if (at < len)
		snprintf(buf + at, len - at, total == 1 ? ",)" : ")");
}

int pk_npy_header(const struct pk_npy_type *t, const hsize_t *dims, int n,
		  char **out, size_t *len, struct dlfs_err *err)
{
	char shape[1024];
	struct dlfs_str d = {0};
	pk_shape_str(dims, n, t->extra, t->n_extra, shape, sizeof(shape));
	dlfs_str_addf(&d, "{'descr': %s, 'fortran_order': False, 'shape': %s, }",
		    t->descr, shape);
	if (d.oom) {
		dlfs_str_free(&d);
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	}
	/* Magic, version, length; then the dict, spaces and a newline. */
	int major = t->utf8 ? 3 : 1;
	size_t pre = 10;
	if (!t->utf8 && d.n + 1 + 64 > 0xffff)
		major = 2;
	if (major > 1)
		pre = 12;
	size_t total = (pre + d.n + 1 + 63) / 64 * 64;
	size_t hlen = total - pre;
	char *h = malloc(total);
	if (!h) {
		dlfs_str_free(&d);
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	}
	memcpy(h, "\x93NUMPY", 6);
	h[6] = (char)major;
	h[7] = 0;
	if (major == 1) {
		h[8] = (char)(hlen & 0xff);
		h[9] = (char)(hlen >> 8);
	} else {
		for (int i = 0; i < 4; i++)
			h[8 + i] = (char)((hlen >> (8 * i)) & 0xff);
	}
	memcpy(h + pre, d.s, d.n);
	memset(h + pre + d.n, ' ', total - pre - d.n - 1);
	h[total - 1] = '\n';
	dlfs_str_free(&d);
	*out = h;
	*len = total;
	return 0;
}
