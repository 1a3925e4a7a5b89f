/*
 * In-place datasets: each archive's part (inplace_part.h), as a worker
 * read it, into the tree (inplace.h).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "inplace_part.h"
#include "scan_kind.h"
#include "util.h"

/* A hard link: the earlier member hl's bytes, under a name of its own. */
static int hard_link(struct pk_ip_apply *x, const struct ip_member *m,
		     struct pk_entry *e, struct pk_attr *at, const char *where,
		     struct dlfs_err *err)
{
	char hn[8192];
	struct pk_attr ka;
	ssize_t hl = pk_scan_normalise(m->link, hn, sizeof(hn));
	int64_t k = hl < 0 ? -1 : pk_tree_find(x->t, hn, (size_t)hl);
	if (k < 0 || !S_ISREG(x->t->e[k].mode))
		return dlfs_err_set(err, -EINVAL,
				    "%s: hard link to a missing or hostile "
				    "member",
				    where);
	uint64_t size = x->t->e[k].size;
	int ret = pk_attr_get(x->t, (uint64_t)k, &ka, err);
	if (ret)
		return ret;
	e->size = size;
	at->spool_off = ka.spool_off;
	at->sum = ka.sum;
	return 0;
}

/* The member "./": the root's mode and mtime, once. */
static int root_attrs(struct pk_tree *t, const struct ip_member *m,
		      struct dlfs_err *err)
{
	struct pk_attr ra;
	if (!S_ISDIR(m->mode) || t->root_set)
		return 0;
	int ret = pk_attr_get(t, 0, &ra, err);
	if (ret)
		return ret;
	t->e[0].mode = m->mode;
	ra.mtime_sec = m->mtime_sec;
	ra.mtime_nsec = m->mtime_nsec;
	if ((ret = pk_attr_set(t, 0, &ra, err)))
		return ret;
	t->root_set = 1;
	return 0;
}

/* "ARCHIVE: member 'NAME' at offset N", for messages. */
static void member_where(const char *path, const struct ip_member *m, char *out,
			 size_t cap)
{
	char q[1024], dec[24];
	size_t len = 0, k = sizeof(dec);
	uint64_t v = m->offset;
	dlfs_quote(m->name, strlen(m->name), q, sizeof(q));
	do
		dec[--k] = (char)('0' + v % 10);
	while ((v /= 10));
	out[0] = '\0';
	ip_append(out, cap, &len, path, strlen(path));
	ip_append(out, cap, &len, ": member '", 10);
	ip_append(out, cap, &len, q, strlen(q));
	ip_append(out, cap, &len, "' at offset ", 12);
	ip_append(out, cap, &len, dec + k, sizeof(dec) - k);
}

/* One member into the tree (ip_put_fn). */
static int put_member(void *arg, const struct ip_member *m,
		      struct dlfs_err *err)
{
	struct pk_ip_apply *x = arg;
	char norm[8192], where[8192 + 512];
	ssize_t n = pk_scan_normalise(m->name, norm, sizeof(norm));
	member_where(x->path, m, where, sizeof(where));
	if (n == -EPERM)
		return dlfs_err_set(err, -EINVAL,
				    "%s: refusing a hostile path (absolute "
				    "or with '..')",
				    where);
	if (n < 0)
		return dlfs_err_set(err, (int)n, "%s: path too long", where);
	if (n == 0)
		return root_attrs(x->t, m, err);
	int ret = pk_scan_check_names(norm, (size_t)n, where, err);
	if (!ret)
		ret = pk_scan_parents(x->t, norm, (size_t)n, x->src,
				      m->mtime_sec, err, where);
	struct pk_entry *e = NULL;
	struct pk_attr *at = NULL;
	if (!ret)
		ret = pk_tree_put(x->t, norm, (size_t)n, m->mode, x->src,
				  where, &e, &at, err);
	if (ret || !e)
		return ret; /* or a directory merged into one put before */
	at->mtime_sec = m->mtime_sec;
	at->mtime_nsec = m->mtime_nsec;
	if (m->hard)
		return hard_link(x, m, e, at, where, err);
	if (S_ISLNK(m->mode))
		return pk_tree_set_target(x->t, e, m->link, strlen(m->link),
					  err);
	if (S_ISREG(m->mode)) {
		e->size = m->size;
		at->spool_off = m->loc;
		at->sum = m->xxh3;
		x->ip->files++;
		x->ip->bytes += m->size;
	}
	return 0;
}

/* Split p (absolute, canonical) into its components, in place. */
static int components(char *p, char **c, int max)
{
	int n = 0;
	for (char *s = strtok(p, "/"); s; s = strtok(NULL, "/"))
		if (n < max)
			c[n++] = s;
		else
			return -1;
	return n;
}

/*
 * The archive's path as the index records it: relative to the dataset
 * directory OUT will be, so that a dataset and its archives moved or
 * copied together (another mount point of the PFS, a stage to scratch)
 * still find each other. @return 0 or a negative errno.
 */
static int record_path(const char *archive, const char *out, char **rec)
{
	char a[PATH_MAX], d[PATH_MAX], *ac[512], *dc[512];
	char *od = strdup(out), *slash = od ? strrchr(od, '/') : NULL;
	const char *base = slash ? slash + 1 : out;
	const char *parent = !od ? NULL : slash == od ? "/" : slash ? od : ".";
	if (slash && slash != od)
		*slash = '\0';
	if (!od || !realpath(archive, a) || !realpath(parent, d)) {
		int e = od ? -errno : -ENOMEM;
		free(od);
		return e;
	}
	size_t dl = strlen(d);
	snprintf(d + dl, sizeof(d) - dl, "%s%s", dl > 1 ? "/" : "", base);
	free(od);
	int na = components(a, ac, 512), nd = components(d, dc, 512), i = 0;
	if (na < 0 || nd < 0)
		return -ENAMETOOLONG;
	while (i < na && i < nd && !strcmp(ac[i], dc[i]))
		i++;
	size_t cap = 4 * (size_t)nd + strlen(archive) + PATH_MAX, len = 0;
	char *r = malloc(cap);
	if (!r)
		return -ENOMEM;
	r[0] = '\0';
	for (int j = i; j < nd; j++)
		len += (size_t)snprintf(r + len, cap - len, "../");
	for (int j = i; j < na; j++)
		len += (size_t)snprintf(r + len, cap - len, "%s%s", ac[j],
					j + 1 < na ? "/" : "");
	*rec = r;
	return 0;
}

/* Record rec of archive x->src's part into the tree and ip. */
static int apply_rec(struct pk_ip_apply *x, const struct pk_ip_rec *rec,
		     struct dlfs_err *err)
{
	const struct dlfs_pack_opts *o = x->o;
	struct pk_ip_archive *a = &x->ip->arc[x->src];
	int ret;
	switch (rec->type) {
	case 'S':
		a->size = rec->size;
		a->mtime_sec = rec->mtime_sec;
		a->mtime_nsec = rec->mtime_nsec;
		ret = record_path(x->path, x->out, &a->path);
		return ret ? dlfs_err_sys(err, ret, "%s: its path from %s",
					  x->path, x->out)
			   : 0;
	case 'M':
		return put_member(x, &rec->m, err);
	case 'W':
		if (o->warn)
			o->warn(o->cb_arg, rec->msg);
		return 0;
	case 'C':
		return pk_ip_add_chunk(x->ip, rec->xxh3, rec->sum,
				       rec->stored_offset, rec->stored_length,
				       rec->length, rec->flags)
			       ? dlfs_err_set(err, -ENOMEM, "out of memory")
			       : 0;
	case 'E':
		a->kind = rec->kind;
		a->data_size = rec->data_size;
		a->n_chunks = rec->n_chunks;
		/* The end: 1 stops the reading. */
		return x->ip->n_ch - a->first_chunk == rec->n_chunks ? 1
								     : -EPROTO;
	}
	*err = rec->fail; /* 'F' */
	return err->code;
}

void pk_ip_apply_begin(struct pk_ip_apply *x, struct pk_tree *t,
		       struct pk_inplace *ip, uint32_t i, const char *path,
		       const char *out, const struct dlfs_pack_opts *o)
{
	*x = (struct pk_ip_apply){
		.t = t, .ip = ip, .src = i, .path = path, .out = out, .o = o};
	ip->arc[i].first_chunk = ip->n_ch;
}

static int damaged(const struct pk_ip_apply *x, struct dlfs_err *err)
{
	return dlfs_err_set(err, -EPROTO,
			    "%s: its index from the worker that read it is "
			    "damaged (a bug)",
			    x->path);
}

int pk_ip_apply_piece(struct pk_ip_apply *x, const char *p, size_t n,
		      struct dlfs_err *err)
{
	struct pk_ip_part_rd rd = {p, p + n};
	struct pk_ip_rec rec;
	int ret = 0;
	while (!ret && rd.p != rd.end) {
		/* Nothing may follow the end record. */
		if (x->ended || pk_ip_part_next(&rd, &rec) < 0)
			return damaged(x, err);
		ret = apply_rec(x, &rec, err);
		if (ret == 1) { /* the end */
			x->ended = 1;
			ret = 0;
		}
	}
	return ret == -EPROTO ? damaged(x, err) : ret;
}

int pk_ip_apply_end(struct pk_ip_apply *x, struct dlfs_err *err)
{
	return x->ended ? 0 : damaged(x, err);
}

int pk_ip_part_apply(struct pk_tree *t, struct pk_inplace *ip, uint32_t i,
		     const char *path, const char *out,
		     const struct dlfs_str *part,
		     const struct dlfs_pack_opts *o, struct dlfs_err *err)
{
	struct pk_ip_apply x;
	pk_ip_apply_begin(&x, t, ip, i, path, out, o);
	int ret = pk_ip_apply_piece(&x, part->s, part->n, err);
	return ret ? ret : pk_ip_apply_end(&x, err);
}

void pk_inplace_free(struct pk_inplace *ip)
{
	if (ip->arc)
		for (uint32_t i = 0; i < ip->n; i++)
			free(ip->arc[i].path);
	for (uint32_t i = ip->part0; ip->part && i < ip->part1; i++)
		dlfs_str_free(&ip->part[i - ip->part0]);
	free(ip->part);
	free(ip->arc);
	pk_ip_chunks_free(ip);
	memset(ip, 0, sizeof(*ip));
}
