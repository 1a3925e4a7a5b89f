/* Messages between the ranks of a shared pack: see dist.h. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dist.h"
#include "util.h"

#define FAILED UINT64_MAX /* a length that says "the sender failed" */

int pk_agree(const struct dlfs_pack_comm *c, int ret, struct dlfs_err *err)
{
	if (!c)
		return ret;
	struct dlfs_err mine = {0}, pick = {0};
	struct dlfs_err *all = NULL;
	if (ret) {
		if (err && err->code == ret)
			mine = *err;
		else
			dlfs_err_set(&mine, ret, "failed");
	}
	if (c->rank == 0 && !(all = calloc((size_t)c->size, sizeof(*all))))
		dlfs_err_set(&pick, -ENOMEM, "out of memory");
	int rc = c->gather(c->arg, &mine, sizeof(mine), all, 0);
	if (rc)
		dlfs_err_set(&pick, rc, "exchanging results between ranks");
	for (int r = 0; all && !pick.code && r < c->size; r++)
		if (all[r].code && all[r].code != -ECANCELED) {
			pick = all[r];
			if (r)
				dlfs_err_prefix(&pick, "rank %d", r);
		}
	for (int r = 0; all && !pick.code && r < c->size; r++)
		if (all[r].code)
			pick = all[r];
	free(all);
	rc = c->bcast(c->arg, &pick, sizeof(pick), 0);
	if (rc && !pick.code)
		dlfs_err_set(&pick, rc, "exchanging results between ranks");
	if (!pick.code)
		return 0;
	if (err)
		*err = pick;
	return pick.code;
}

/* ---- encoding ---- */

static void put_u32(struct dlfs_str *b, uint32_t v)
{
	dlfs_str_add(b, &v, sizeof(v));
}

static void put_u64(struct dlfs_str *b, uint64_t v)
{
	dlfs_str_add(b, &v, sizeof(v));
}

static void put_s(struct dlfs_str *b, const char *s, size_t n)
{
	put_u32(b, (uint32_t)n);
	dlfs_str_add(b, s, n);
}

struct rd {
	const char *p, *end;
	int bad;
};

static void get(struct rd *r, void *out, size_t n)
{
	if (r->bad || (size_t)(r->end - r->p) < n) {
		r->bad = 1;
		memset(out, 0, n);
		return;
	}
	memcpy(out, r->p, n);
	r->p += n;
}

static uint32_t get_u32(struct rd *r)
{
	uint32_t v;
	get(r, &v, sizeof(v));
	return v;
}

static uint64_t get_u64(struct rd *r)
{
	uint64_t v;
	get(r, &v, sizeof(v));
	return v;
}

/* A malloc'd copy of the next string, or NULL (r->bad, or no memory). */
static char *get_s(struct rd *r, uint32_t *len)
{
	uint32_t n = get_u32(r);
	if (r->bad || (size_t)(r->end - r->p) < n) {
		r->bad = 1;
		return NULL;
	}
	char *s = strndup(r->p, n);
	r->p += n;
	if (len)
		*len = n;
	if (!s)
		r->bad = 1;
	return s;
}

/* One buffer to dest, its length first (FAILED: the sender failed). */
static int send_buf(const struct dlfs_pack_comm *c, int dest,
		    const struct dlfs_str *b, int failed, struct dlfs_err *err)
{
	uint64_t len = failed || b->oom ? FAILED : b->n;
	int rc = c->send(c->arg, &len, sizeof(len), dest);
	if (!rc && len != FAILED && len)
		rc = c->send(c->arg, b->s, b->n, dest);
	if (rc)
		return dlfs_err_set(err, rc, "exchanging data between ranks");
	return 0;
}

/* The buffer send_buf sent from src, into b (empty before). */
static int recv_buf(const struct dlfs_pack_comm *c, int src, struct dlfs_str *b,
		    struct dlfs_err *err)
{
	uint64_t len;
	int rc = c->recv(c->arg, &len, sizeof(len), src);
	if (!rc && len == FAILED)
		return dlfs_err_set(err, -ECANCELED, "rank %d failed", src);
	if (!rc) {
		b->s = malloc(len ? len : 1);
		b->n = b->cap = len;
		if (!b->s)
			return dlfs_err_set(err, -ENOMEM, "out of memory");
		if (len)
			rc = c->recv(c->arg, b->s, len, src);
	}
	if (rc)
		return dlfs_err_set(err, rc, "exchanging data between ranks");
	return 0;
}

static int bcast_buf(const struct dlfs_pack_comm *c, struct dlfs_str *b,
		     struct dlfs_err *err)
{
	uint64_t len = c->rank == 0 ? (b->oom ? FAILED : b->n) : 0;
	int rc = c->bcast(c->arg, &len, sizeof(len), 0);
	if (!rc && len == FAILED)
		return dlfs_err_set(err, -ENOMEM, "out of memory on rank 0");
	if (!rc && c->rank != 0) {
		b->s = malloc(len ? len : 1);
		b->n = b->cap = len;
		if (!b->s)
			return dlfs_err_set(err, -ENOMEM, "out of memory");
	}
	if (!rc && len)
		rc = c->bcast(c->arg, b->s, len, 0);
	if (rc)
		return dlfs_err_set(err, rc, "exchanging data between ranks");
	return 0;
}

int pk_dist_string(const struct dlfs_pack_comm *c, char **s,
		   struct dlfs_err *err)
{
	struct dlfs_str b = {0};
	if (c->rank == 0)
		dlfs_str_add(&b, *s, strlen(*s) + 1);
	int ret = bcast_buf(c, &b, err);
	if (!ret && c->rank != 0) {
		if (!b.n || b.s[b.n - 1] != '\0') {
			dlfs_str_free(&b);
			return dlfs_err_set(err, -EPROTO, "a bad string");
		}
		*s = b.s;
		return 0;
	}
	dlfs_str_free(&b);
	return ret;
}

int pk_dist_sources(const struct dlfs_pack_comm *c, struct pk_source *src,
		    unsigned n, struct dlfs_err *err)
{
	struct dlfs_str b = {0};
	if (c->rank == 0)
		for (unsigned i = 0; i < n; i++) {
			put_u32(&b, src[i].kind);
			put_u64(&b, src[i].size);
			put_s(&b, src[i].top ? src[i].top : "",
			      src[i].top ? strlen(src[i].top) : 0);
		}
	int ret = bcast_buf(c, &b, err);
	if (!ret && c->rank != 0) {
		struct rd r = {b.s, b.s + b.n, 0};
		for (unsigned i = 0; i < n && !r.bad; i++) {
			uint32_t len;
			src[i].kind = (enum pk_src_kind)get_u32(&r);
			src[i].size = get_u64(&r);
			src[i].top = get_s(&r, &len);
			if (src[i].top && !len) {
				free(src[i].top);
				src[i].top = NULL;
			}
		}
		if (r.bad)
			ret = dlfs_err_set(err, -EPROTO,
					   "a bad list of sources from rank 0");
	}
	dlfs_str_free(&b);
	return ret;
}

void pk_dist_share(const struct pk_layout *l, int size, uint32_t *share)
{
	uint64_t total = 0;
	for (uint64_t k = 0; k < l->n_containers; k++)
		total += l->data_size[k];
	share[0] = 0;
	share[size] = (uint32_t)l->n_containers;
	uint64_t cum = l->n_containers ? l->data_size[0] : 0;
	uint32_t k = l->n_containers ? 1 : 0;
	for (int r = 1; r < size; r++) {
		/* The first container that starts past r/size of the data. */
		uint64_t want = (uint64_t)((double)total * r / size);
		while (k < l->n_containers && cum < want)
			cum += l->data_size[k++];
		share[r] = k;
	}
}

/* Entries in the whole tree: directories, then symlinks, then files. */
static uint64_t n_entries(const struct pk_layout *l)
{
	return l->n_dirs + l->n_symlinks + l->n_files;
}

static uint64_t end_file(const struct pk_layout *l, uint32_t c)
{
	return c < l->n_containers ? l->first_file[c] : n_entries(l);
}

static uint64_t end_chunk(const struct pk_layout *l, uint32_t c)
{
	return c < l->n_containers ? l->first_chunk[c] : l->n_chunks;
}

/*
 * The layout message, rank 0 to rank r: the share [c0, c1), the counts
 * and every container's table; the spool and the ingested data files;
 * then the files [f0, f1) of the share, each with its hard-link source.
 */

/* The counts and the containers' tables: the whole layout's. */
static void encode_layout(const struct pk_layout *l, uint32_t c0,
			  uint32_t c1, struct dlfs_str *b)
{
	put_u32(b, c0);
	put_u32(b, c1);
	put_u64(b, l->n_dirs);
	put_u64(b, l->n_symlinks);
	put_u64(b, l->n_files);
	put_u64(b, l->n_containers);
	put_u64(b, l->n_chunks);
	put_u64(b, l->total_bytes);
	for (uint64_t k = 0; k < l->n_containers; k++) {
		put_u64(b, l->data_size[k]);
		put_u64(b, l->first_chunk[k]);
		put_u64(b, l->first_file[k]);
		put_u64(b, l->n_cfiles[k]);
	}
}

/* The files the bytes are read from: the spool ("" if none) and the
 * ingested data files, in the order a->data numbers them. */
static void encode_inputs(const struct pk_tree *t, struct dlfs_str *b)
{
	const char *sp = t->spool_fd >= 0 && t->spool_path ? t->spool_path : "";
	put_s(b, sp, strlen(sp));
	put_u32(b, t->n_data);
	for (uint32_t k = 0; k < t->n_data; k++)
		put_s(b, t->data[k].path, strlen(t->data[k].path));
}

/* An entry's path buffer, grown as needed. */
struct pathbuf {
	char *s;
	size_t cap, len;
};

/*
 * A hard link's bytes are where its group's first entry (k) has them, and
 * data_from indexes rank 0's tree: send that entry's source, spool and
 * path.
 */
static int encode_link_src(const struct pk_tree *t, uint64_t k,
			   struct pathbuf *pb, struct dlfs_str *b,
			   struct dlfs_err *err)
{
	const struct pk_entry *d = &t->e[k];
	struct pk_attr da;
	int ret = pk_attr_read(t, k, 1, &da, err);
	if (ret)
		return ret;
	if (pk_entry_path(t, d, &pb->s, &pb->cap, &pb->len))
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	put_u32(b, d->src);
	put_u32(b, da.data);
	put_u64(b, da.spool_off);
	put_s(b, pb->s, pb->len);
	return 0;
}

/* One file: where to read it, where it goes, its path; a hard link's
 * source after it. */
static int encode_file(const struct pk_tree *t, const struct pk_layout *l,
		       const struct pk_entry *e, const struct pk_attr *a,
		       struct pathbuf *pb, struct dlfs_str *b,
		       struct dlfs_err *err)
{
	if (pk_entry_path(t, e, &pb->s, &pb->cap, &pb->len))
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	put_u32(b, e->src);
	put_u32(b, a->data);
	put_u32(b, e->mode);
	put_u32(b, a->mtime_nsec);
	put_u64(b, (uint64_t)a->mtime_sec);
	put_u64(b, e->size);
	put_u64(b, a->spool_off);
	put_u64(b, l->loc[e - t->e]);
	put_s(b, pb->s, pb->len);
	put_u32(b, a->data_from != 0);
	return a->data_from ? encode_link_src(t, a->data_from - 1, pb, b, err)
			    : 0;
}

/* Files [f0, f1) in layout order, their attributes read AB at a time. */
static int encode_files(const struct pk_tree *t, const struct pk_layout *l,
			uint64_t f0, uint64_t f1, struct dlfs_str *b,
			struct dlfs_err *err)
{
	enum { AB = 1024 };
	struct pk_attr ab[AB];
	struct pathbuf pb = {0};
	int ret = 0;
	for (uint64_t i = f0; i < f1 && !ret; i++) {
		const struct pk_entry *e = pk_at(t, l, i);
		uint64_t k = (uint64_t)(e - t->e);
		if (!((i - f0) % AB) &&
		    (ret = pk_attr_read(t, k, f1 - i < AB ? f1 - i : AB, ab,
					err)))
			break;
		ret = encode_file(t, l, e, &ab[(i - f0) % AB], &pb, b, err);
	}
	free(pb.s);
	return ret;
}

static int encode(const struct pk_tree *t, const struct pk_layout *l,
		  uint32_t c0, uint32_t c1, struct dlfs_str *b,
		  struct dlfs_err *err)
{
	encode_layout(l, c0, c1, b);
	encode_inputs(t, b);
	uint64_t f0 = c0 < c1 ? l->first_file[c0] : 0;
	uint64_t f1 = c0 < c1 ? end_file(l, c1) : 0;
	put_u64(b, f0);
	put_u64(b, f1);
	return encode_files(t, l, f0, f1, b, err);
}

/* A hard link's source, met in the message: appended after the files. */
struct link_src {
	uint32_t src, data, mode;
	uint64_t size, spool_off;
	char *path;
	uint32_t len;
};

/* The receiving side of a layout message. */
struct dec {
	struct rd r;
	struct pk_tree *t;
	struct pk_layout *l;
	uint64_t n_files;     /* the files in the message */
	struct link_src *ls;  /* the hard links' sources met so far */
	uint64_t n_links;
};

static int bad_layout(struct dlfs_err *err)
{
	return dlfs_err_set(err, -EPROTO, "a bad layout message from rank 0");
}

/* The counts and the containers' tables. @return 0, -EPROTO or -ENOMEM. */
static int decode_layout(struct dec *d, struct dlfs_err *err)
{
	struct pk_layout *l = d->l;
	get_u32(&d->r); /* c0 and c1: this rank's share, known already */
	get_u32(&d->r);
	l->n_dirs = get_u64(&d->r);
	l->n_symlinks = get_u64(&d->r);
	l->n_files = get_u64(&d->r);
	l->n_containers = get_u64(&d->r);
	l->n_chunks = get_u64(&d->r);
	l->total_bytes = get_u64(&d->r);
	uint64_t nc = l->n_containers;
	if (d->r.bad || nc > DLFS_MAX_CONTAINERS ||
	    n_entries(l) > (UINT64_C(1) << 40))
		return bad_layout(err);
	l->data_size = calloc(nc + 1, sizeof(uint64_t));
	l->first_chunk = calloc(nc + 1, sizeof(uint64_t));
	l->first_file = calloc(nc + 1, sizeof(uint64_t));
	l->n_cfiles = calloc(nc + 1, sizeof(uint64_t));
	if (!l->data_size || !l->first_chunk || !l->first_file ||
	    !l->n_cfiles)
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	for (uint64_t k = 0; k < nc; k++) {
		l->data_size[k] = get_u64(&d->r);
		l->first_chunk[k] = get_u64(&d->r);
		l->first_file[k] = get_u64(&d->r);
		l->n_cfiles[k] = get_u64(&d->r);
	}
	return 0;
}

/* The spool, opened here, and the data files, numbered as on rank 0. */
static int decode_inputs(struct dec *d, struct dlfs_err *err)
{
	struct pk_tree *t = d->t;
	uint32_t len;
	char *sp = get_s(&d->r, &len);
	if (sp && len) {
		t->spool_path = sp;
		t->spool_fd = open(sp, O_RDONLY | O_CLOEXEC);
		if (t->spool_fd < 0)
			return dlfs_err_sys(err, -errno, "%s", sp);
	} else {
		free(sp);
	}
	uint32_t nd = get_u32(&d->r);
	for (uint32_t k = 0; k < nd && !d->r.bad; k++) {
		uint32_t idx;
		char *p = get_s(&d->r, NULL);
		if (!p)
			return bad_layout(err); /* get_s failed: d->r.bad */
		int ret = pk_tree_data_add(t, p, &idx, err);
		free(p);
		if (ret)
			return ret;
		if (idx != k + 1)
			return bad_layout(err);
	}
	return 0;
}

/* File i's hard-link source, kept until the files are in (e's attributes
 * in a; mode and size are the link's own). */
static int decode_link_src(struct dec *d, struct pk_attr *a, uint32_t mode,
			   uint64_t size, struct dlfs_err *err)
{
	struct link_src *nl = realloc(d->ls, (d->n_links + 1) * sizeof(*nl));
	if (!nl)
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	d->ls = nl;
	struct link_src *x = &d->ls[d->n_links++];
	x->src = get_u32(&d->r);
	x->data = get_u32(&d->r);
	x->spool_off = get_u64(&d->r);
	x->path = get_s(&d->r, &x->len);
	x->mode = mode;
	x->size = size;
	a->data_from = (uint32_t)(d->n_files + d->n_links);
	if (x->data > d->t->n_data)
		d->r.bad = 1;
	return 0;
}

/* File i (ino i + 1) into the tree. A bad message sets d->r.bad. */
static int decode_file(struct dec *d, uint64_t i, struct dlfs_err *err)
{
	struct rd *r = &d->r;
	struct pk_entry *e;
	struct pk_attr *a;
	uint32_t src = get_u32(r), data = get_u32(r);
	uint32_t mode = get_u32(r), nsec = get_u32(r);
	int64_t sec = (int64_t)get_u64(r);
	uint64_t size = get_u64(r), spool_off = get_u64(r);
	d->l->loc[i - d->l->base] = get_u64(r);
	uint32_t n = get_u32(r);
	if (r->bad || (size_t)(r->end - r->p) < n) {
		r->bad = 1;
		return 0;
	}
	int ret = pk_tree_append(d->t, r->p, n, PK_WHOLE, &e, &a, err);
	if (ret)
		return ret;
	r->p += n;
	e->src = src;
	e->mode = mode;
	e->size = size;
	e->ino = (uint32_t)(i + 1);
	a->data = data;
	a->mtime_nsec = nsec;
	a->mtime_sec = sec;
	a->spool_off = spool_off;
	if (data > d->t->n_data)
		r->bad = 1;
	return get_u32(r) ? decode_link_src(d, a, mode, size, err) : 0;
}

/* The files [f0, f1): e[i - f0] has ino i + 1. */
static int decode_files(struct dec *d, struct dlfs_err *err)
{
	struct pk_layout *l = d->l;
	uint64_t f0 = get_u64(&d->r), f1 = get_u64(&d->r);
	if (d->r.bad || f0 > f1 || f1 > n_entries(l))
		return bad_layout(err);
	d->n_files = f1 - f0;
	l->base = f0;
	l->loc = calloc(d->n_files + 1, sizeof(uint64_t));
	l->xxh3 = calloc(d->n_files + 1, sizeof(uint64_t));
	if (!l->loc || !l->xxh3)
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	int ret = 0;
	for (uint64_t i = f0; i < f1 && !d->r.bad && !ret; i++)
		ret = decode_file(d, i, err);
	return ret;
}

/* The hard links' sources, entries after the files, in the order met. */
static int decode_links(struct dec *d, struct dlfs_err *err)
{
	int ret = 0;
	for (uint64_t k = 0; k < d->n_links && !ret && !d->r.bad; k++) {
		const struct link_src *x = &d->ls[k];
		struct pk_entry *e;
		struct pk_attr *a;
		if (!x->path) {
			d->r.bad = 1;
			break;
		}
		ret = pk_tree_append(d->t, x->path, x->len, PK_WHOLE, &e, &a,
				     err);
		if (ret)
			break;
		e->src = x->src;
		e->mode = x->mode;
		e->size = x->size;
		a->data = x->data;
		a->spool_off = x->spool_off;
	}
	return ret;
}

static int decode(struct pk_tree *t, struct pk_layout *l, struct dlfs_str *b,
		  struct dlfs_err *err)
{
	struct dec d = {.r = {b->s, b->s + b->n, 0}, .t = t, .l = l};
	int ret = decode_layout(&d, err);
	if (!ret)
		ret = decode_inputs(&d, err);
	if (!ret)
		ret = decode_files(&d, err);
	if (!ret)
		ret = decode_links(&d, err);
	for (uint64_t k = 0; k < d.n_links; k++)
		free(d.ls[k].path);
	free(d.ls);
	if (ret)
		return ret;
	if (d.r.bad || d.r.p != d.r.end)
		return bad_layout(err);
	return pk_attr_flush(t, err);
}

int pk_dist_layout(const struct dlfs_pack_comm *c, struct pk_tree *t,
		   struct pk_layout *l, const uint32_t *share,
		   struct dlfs_err *err)
{
	int ret = 0;
	if (c->rank != 0) {
		struct dlfs_str b = {0};
		ret = recv_buf(c, 0, &b, err);
		if (!ret)
			ret = decode(t, l, &b, err);
		dlfs_str_free(&b);
		return ret;
	}
	for (int r = 1; r < c->size; r++) {
		struct dlfs_str b = {0};
		if (!ret)
			ret = encode(t, l, share[r], share[r + 1], &b, err);
		if (!ret && b.oom)
			ret = dlfs_err_set(err, -ENOMEM, "out of memory");
		/* A failed rank 0 still tells every rank, so none waits. */
		int rc = send_buf(c, r, &b, ret != 0, err);
		if (!ret)
			ret = rc;
		dlfs_str_free(&b);
	}
	return ret;
}

int pk_dist_sums(const struct dlfs_pack_comm *c, struct pk_layout *l,
		 struct pk_chunks *ch, const uint32_t *share,
		 struct dlfs_err *err)
{
	int ret = 0;
	for (int r = 1; r < c->size; r++) {
		if (c->rank != 0 && c->rank != r)
			continue;
		uint32_t c0 = share[r], c1 = share[r + 1];
		uint64_t f0 = c0 < c1 ? l->first_file[c0] : 0;
		uint64_t f1 = c0 < c1 ? end_file(l, c1) : 0;
		uint64_t g0 = c0 < c1 ? l->first_chunk[c0] : 0;
		uint64_t g1 = c0 < c1 ? end_chunk(l, c1) : 0;
		struct dlfs_str b = {0};
		if (c->rank == r) {
			for (uint64_t i = f0; i < f1; i++)
				put_u64(&b, l->xxh3[i - l->base]);
			for (uint64_t g = g0; g < g1; g++) {
				put_u64(&b, ch->xxh3[g]);
				put_u32(&b, ch->length[g]);
				put_u32(&b, ch->stored_length[g]);
				put_u64(&b, ch->stored_offset[g]);
				put_u32(&b, ch->flags[g]);
				put_u64(&b, ch->sum[g]);
			}
			ret = send_buf(c, 0, &b, 0, err);
			dlfs_str_free(&b);
			return ret;
		}
		/* Rank 0 hears every rank out, even after a failure. */
		int rc = recv_buf(c, r, &b, err);
		if (!rc && b.n != (f1 - f0) * 8 + (g1 - g0) * 36)
			rc = dlfs_err_set(err, -EPROTO,
					  "bad checksums from rank %d", r);
		if (!rc && !ret) {
			struct rd rd = {b.s, b.s + b.n, 0};
			for (uint64_t i = f0; i < f1; i++)
				l->xxh3[i - l->base] = get_u64(&rd);
			for (uint64_t g = g0; g < g1; g++) {
				ch->xxh3[g] = get_u64(&rd);
				ch->length[g] = get_u32(&rd);
				ch->stored_length[g] = get_u32(&rd);
				ch->stored_offset[g] = get_u64(&rd);
				ch->flags[g] = get_u32(&rd);
				ch->sum[g] = get_u64(&rd);
			}
		}
		if (!ret)
			ret = rc;
		dlfs_str_free(&b);
	}
	return ret;
}

int pk_dist_containers(const struct dlfs_pack_comm *c,
		       struct pk_containers *ct, const uint32_t *share,
		       struct dlfs_err *err)
{
	for (int r = 1; r < c->size; r++) {
		if (c->rank != 0 && c->rank != r)
			continue;
		uint32_t c0 = share[r], c1 = share[r + 1];
		if (c0 >= c1)
			continue;
		size_t n = (size_t)(c1 - c0) * sizeof(uint64_t);
		int rc;
		if (c->rank == r) {
			rc = c->send(c->arg, ct->file_size + c0, n, 0);
			if (!rc)
				rc = c->send(c->arg, ct->footer_xxh3 + c0, n,
					     0);
		} else {
			rc = c->recv(c->arg, ct->file_size + c0, n, r);
			if (!rc)
				rc = c->recv(c->arg, ct->footer_xxh3 + c0, n,
					     r);
		}
		if (rc)
			return dlfs_err_set(err, rc,
					    "exchanging container sizes");
	}
	return 0;
}
