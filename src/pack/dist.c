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

static uint64_t end_file(const struct pk_layout *l, uint32_t c)
{
	return c < l->n_containers
		       ? l->first_file[c]
		       : l->n_dirs + l->n_symlinks + l->n_files;
}

static uint64_t end_chunk(const struct pk_layout *l, uint32_t c)
{
	return c < l->n_containers ? l->first_chunk[c] : l->n_chunks;
}

static int encode(const struct pk_tree *t, const struct pk_layout *l,
		  uint32_t c0, uint32_t c1, struct dlfs_str *b,
		  struct dlfs_err *err)
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
	const char *sp = t->spool_fd >= 0 && t->spool_path ? t->spool_path : "";
	put_s(b, sp, strlen(sp));
	put_u32(b, t->n_data);
	for (uint32_t k = 0; k < t->n_data; k++)
		put_s(b, t->data[k].path, strlen(t->data[k].path));
	uint64_t f0 = c0 < c1 ? l->first_file[c0] : 0;
	uint64_t f1 = c0 < c1 ? end_file(l, c1) : 0;
	put_u64(b, f0);
	put_u64(b, f1);
	enum { AB = 1024 };
	struct pk_attr ab[AB], da;
	char *pb = NULL;
	size_t pcap = 0, plen;
	int ret = 0;
	for (uint64_t i = f0; i < f1 && !ret; i++) {
		const struct pk_entry *e = pk_at(t, l, i);
		uint64_t k = (uint64_t)(e - t->e);
		if (!((i - f0) % AB) &&
		    (ret = pk_attr_read(t, k, f1 - i < AB ? f1 - i : AB, ab,
					err)))
			break;
		const struct pk_attr *a = &ab[(i - f0) % AB];
		if (pk_entry_path(t, e, &pb, &pcap, &plen)) {
			ret = dlfs_err_set(err, -ENOMEM, "out of memory");
			break;
		}
		put_u32(b, e->src);
		put_u32(b, a->data);
		put_u32(b, e->mode);
		put_u32(b, a->mtime_nsec);
		put_u64(b, (uint64_t)a->mtime_sec);
		put_u64(b, e->size);
		put_u64(b, a->spool_off);
		put_u64(b, l->loc[k]);
		put_s(b, pb, plen);
		/* A hard link's bytes are where its group's first entry has
		 * them, and data_from indexes rank 0's tree: send that
		 * entry's source, spool and path. */
		put_u32(b, a->data_from != 0);
		if (a->data_from) {
			const struct pk_entry *d = &t->e[a->data_from - 1];
			if ((ret = pk_attr_read(t, a->data_from - 1, 1, &da,
						err)))
				break;
			if (pk_entry_path(t, d, &pb, &pcap, &plen)) {
				ret = dlfs_err_set(err, -ENOMEM,
						   "out of memory");
				break;
			}
			put_u32(b, d->src);
			put_u32(b, da.data);
			put_u64(b, da.spool_off);
			put_s(b, pb, plen);
		}
	}
	free(pb);
	return ret;
}

/* A hard link's source, met in the message: appended after the files. */
struct link_src {
	uint32_t src, data, mode;
	uint64_t size, spool_off;
	char *path;
	uint32_t len;
};

static int decode(struct pk_tree *t, struct pk_layout *l, struct dlfs_str *b,
		  struct dlfs_err *err)
{
	struct rd r = {b->s, b->s + b->n, 0};
	int ret = 0;
	struct link_src *ls = NULL;
	uint64_t n_links = 0;
	get_u32(&r);
	get_u32(&r);
	l->n_dirs = get_u64(&r);
	l->n_symlinks = get_u64(&r);
	l->n_files = get_u64(&r);
	l->n_containers = get_u64(&r);
	l->n_chunks = get_u64(&r);
	l->total_bytes = get_u64(&r);
	uint64_t nc = l->n_containers, ni = l->n_dirs + l->n_symlinks +
					     l->n_files;
	if (r.bad || nc > DLFS_MAX_CONTAINERS || ni > (UINT64_C(1) << 40))
		goto bad;
	l->data_size = calloc(nc + 1, sizeof(uint64_t));
	l->first_chunk = calloc(nc + 1, sizeof(uint64_t));
	l->first_file = calloc(nc + 1, sizeof(uint64_t));
	l->n_cfiles = calloc(nc + 1, sizeof(uint64_t));
	if (!l->data_size || !l->first_chunk || !l->first_file ||
	    !l->n_cfiles)
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	for (uint64_t k = 0; k < nc; k++) {
		l->data_size[k] = get_u64(&r);
		l->first_chunk[k] = get_u64(&r);
		l->first_file[k] = get_u64(&r);
		l->n_cfiles[k] = get_u64(&r);
	}
	uint32_t len;
	char *sp = get_s(&r, &len);
	if (sp && len) {
		t->spool_path = sp;
		t->spool_fd = open(sp, O_RDONLY | O_CLOEXEC);
		if (t->spool_fd < 0)
			return dlfs_err_sys(err, -errno, "%s", sp);
	} else {
		free(sp);
	}
	uint32_t nd = get_u32(&r);
	for (uint32_t k = 0; k < nd && !r.bad; k++) {
		uint32_t idx;
		char *p = get_s(&r, NULL);
		if (p)
			ret = pk_tree_data_add(t, p, &idx, err);
		free(p);
		if (ret)
			return ret;
		if (idx != k + 1)
			goto bad;
	}
	uint64_t f0 = get_u64(&r), f1 = get_u64(&r);
	if (r.bad || f0 > f1 || f1 > ni)
		goto bad;
	/* e[i - f0] has ino i + 1; hard links' sources follow the files. */
	uint64_t n_files = f1 - f0;
	l->base = f0;
	l->loc = calloc(n_files + 1, sizeof(uint64_t));
	l->xxh3 = calloc(n_files + 1, sizeof(uint64_t));
	if (!l->loc || !l->xxh3)
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	for (uint64_t i = f0; i < f1 && !r.bad && !ret; i++) {
		struct pk_entry *e;
		struct pk_attr *a;
		uint32_t src = get_u32(&r), data = get_u32(&r);
		uint32_t mode = get_u32(&r), nsec = get_u32(&r);
		int64_t sec = (int64_t)get_u64(&r);
		uint64_t size = get_u64(&r), spool_off = get_u64(&r);
		l->loc[i - f0] = get_u64(&r);
		uint32_t n = get_u32(&r);
		if (r.bad || (size_t)(r.end - r.p) < n) {
			r.bad = 1;
			break;
		}
		if ((ret = pk_tree_append(t, r.p, n, PK_WHOLE, &e, &a, err)))
			break;
		r.p += n;
		e->src = src;
		e->mode = mode;
		e->size = size;
		e->ino = (uint32_t)(i + 1);
		a->data = data;
		a->mtime_nsec = nsec;
		a->mtime_sec = sec;
		a->spool_off = spool_off;
		if (data > t->n_data)
			r.bad = 1;
		if (get_u32(&r)) {
			struct link_src *nl =
				realloc(ls, (n_links + 1) * sizeof(*ls));
			if (!nl) {
				ret = dlfs_err_set(err, -ENOMEM,
						   "out of memory");
				break;
			}
			ls = nl;
			struct link_src *x = &ls[n_links++];
			x->src = get_u32(&r);
			x->data = get_u32(&r);
			x->spool_off = get_u64(&r);
			x->path = get_s(&r, &x->len);
			x->mode = mode;
			x->size = size;
			a->data_from = (uint32_t)(n_files + n_links);
			if (x->data > t->n_data)
				r.bad = 1;
		}
	}
	for (uint64_t k = 0; k < n_links && !ret && !r.bad; k++) {
		struct pk_entry *e;
		struct pk_attr *a;
		if (!ls[k].path) {
			r.bad = 1;
			break;
		}
		ret = pk_tree_append(t, ls[k].path, ls[k].len, PK_WHOLE, &e, &a,
				     err);
		if (ret)
			break;
		e->src = ls[k].src;
		e->mode = ls[k].mode;
		e->size = ls[k].size;
		a->data = ls[k].data;
		a->spool_off = ls[k].spool_off;
	}
	for (uint64_t k = 0; k < n_links; k++)
		free(ls[k].path);
	free(ls);
	if (ret)
		return ret;
	if (r.bad || r.p != r.end)
		goto bad;
	return pk_attr_flush(t, err);
bad:
	return dlfs_err_set(err, -EPROTO, "a bad layout message from rank 0");
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
			}
			ret = send_buf(c, 0, &b, 0, err);
			dlfs_str_free(&b);
			return ret;
		}
		/* Rank 0 hears every rank out, even after a failure. */
		int rc = recv_buf(c, r, &b, err);
		if (!rc && b.n != (f1 - f0) * 8 + (g1 - g0) * 12)
			rc = dlfs_err_set(err, -EPROTO,
					  "bad checksums from rank %d", r);
		if (!rc && !ret) {
			struct rd rd = {b.s, b.s + b.n, 0};
			for (uint64_t i = f0; i < f1; i++)
				l->xxh3[i - l->base] = get_u64(&rd);
			for (uint64_t g = g0; g < g1; g++) {
				ch->xxh3[g] = get_u64(&rd);
				ch->length[g] = get_u32(&rd);
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
