/*
 * The coordinator (ingest.h, pk_ingest_put): each ingest source's
 * entries, read from its worker's list in source order, given to the
 * packer through struct pk_ingest_to; and the run's lists freed.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ingest_priv.h"
#include "util.h"

void pk_ingest_free(struct pk_ingest *ing, int unlink_files)
{
	if (!ing)
		return;
	for (unsigned w = 0; w < ing->nw; w++) {
		if (ing->lists[w])
			fclose(ing->lists[w]);
		if (unlink_files) {
			char p[4096];
			snprintf(p, sizeof(p), "%s/ingest-%u.list", ing->dir, w);
			unlink(p);
			snprintf(p, sizeof(p), "%s/ingest-%u.spool", ing->dir,
				 w);
			unlink(p);
		}
	}
	free(ing->owner);
	free(ing->lists);
	free(ing->spool);
	free(ing->buf);
	free(ing);
}

static int put_dir(const struct pk_ingest_to *to, const char *p, size_t n,
		   uint32_t mode, int64_t sec, uint32_t nsec, unsigned i,
		   const char *where, struct dlfs_err *err)
{
	struct pk_ingest_entry d = {.path = p, .len = n, .mode = S_IFDIR | mode,
				    .sec = sec, .nsec = nsec, .src = i,
				    .where = where};
	return to->put(to->arg, &d, err);
}

/* Worker w's list, opened when first needed, and its spool as a data
 * file of the packer. */
static int open_list(const struct pk_ingest_to *to, struct pk_ingest *ing,
		     unsigned w, struct dlfs_err *err)
{
	char path[4096];
	if (ing->lists[w])
		return 0;
	snprintf(path, sizeof(path), "%s/ingest-%u.list", ing->dir, w);
	ing->lists[w] = fopen(path, "rbe");
	if (!ing->lists[w])
		return dlfs_err_sys(err, -errno, "%s", path);
	snprintf(path, sizeof(path), "%s/ingest-%u.spool", ing->dir, w);
	return to->data(to->arg, path, &ing->spool[w], err);
}

/* One ingest source's records being given to the packer (pk_ingest_put). */
struct putting {
	const struct pk_ingest_to *to;
	const struct pk_source *s;
	const struct dlfs_pack_opts *o;
	struct pk_ingest *ing;
	unsigned i, w;      /* the source; the worker whose list holds it */
	size_t top_len;
	int begun;          /* its PK_REC_SOURCE was read */
	uint32_t fmode, dmode, src_data; /* from that record */
	int64_t sec;
	uint32_t nsec;
	char *last;         /* the parent of the last file */
	char where[4096];   /* the source and file, for messages */
	struct dlfs_err *err;
};

/* The list does not hold what its worker wrote. */
static int list_corrupt(const struct putting *p)
{
	return dlfs_err_set(p->err, -DLFS_ECORRUPT,
			    "%s: the ingest list of worker %u is not as "
			    "written",
			    p->s->path, p->w);
}

/* The source's record: its entries' modes and mtime, the source file as
 * a data file if entries lie in it, and the directory it becomes. */
static int put_source(struct putting *p, const struct pk_rec *r)
{
	p->begun = 1;
	p->fmode = r->mode & 0666;
	p->dmode = p->fmode | ((p->fmode & 0444) >> 2);
	p->sec = r->sec;
	p->nsec = r->nsec;
	if (r->len) {
		int ret = p->to->data(p->to->arg, r->str, &p->src_data, p->err);
		if (ret)
			return ret;
	}
	return put_dir(p->to, p->s->top, p->top_len, p->dmode, p->sec,
		       p->nsec, p->i, p->s->path, p->err);
}

static void put_warn(const struct dlfs_pack_opts *o, const struct pk_rec *r)
{
	if (!o->warn)
		return;
	char msg[DLFS_ERR_MSG_MAX + 16];
	snprintf(msg, sizeof(msg), "warning: %s", r->str);
	o->warn(o->cb_arg, msg);
}

static void put_note(const struct putting *p, const struct pk_rec *r)
{
	if (!p->o->note)
		return;
	char msg[DLFS_ERR_MSG_MAX + PATH_MAX];
	snprintf(msg, sizeof(msg), "%s: %s", p->s->path, r->str);
	p->o->note(p->o->cb_arg, msg);
}

/* The directories between top and a file's parent str[0..plen), once
 * each: files come grouped by directory, so once per change of parent. */
static int put_parents(struct putting *p, const char *str, size_t plen)
{
	if (p->last && strlen(p->last) == plen && !memcmp(p->last, str, plen))
		return 0;
	for (size_t k = p->top_len + 1; k <= plen; k++) {
		if (k < plen && str[k] != '/')
			continue;
		int ret = put_dir(p->to, str, k, p->dmode, p->sec, p->nsec,
				  p->i, p->where, p->err);
		if (ret)
			return ret;
	}
	free(p->last);
	p->last = strndup(str, plen);
	if (!p->last)
		return dlfs_err_set(p->err, -ENOMEM, "out of memory");
	return 0;
}

/* A file, which must lie under top; its bytes are in the source itself
 * or in the worker's spool. */
static int put_file(struct putting *p, const struct pk_rec *r)
{
	const char *slash = strrchr(r->str, '/');
	size_t plen = slash ? (size_t)(slash - r->str) : 0;
	if (plen < p->top_len || memcmp(r->str, p->s->top, p->top_len) ||
	    r->str[p->top_len] != '/' || (r->in_source && !p->src_data))
		return list_corrupt(p);
	snprintf(p->where, sizeof(p->where), "%s: %s", p->s->path, r->str);
	int ret = put_parents(p, r->str, plen);
	if (ret)
		return ret;
	struct pk_ingest_entry f = {
		.path = r->str, .len = r->len, .mode = S_IFREG | p->fmode,
		.sec = p->sec, .nsec = p->nsec, .size = r->size, .off = r->off,
		.data = r->in_source ? p->src_data : p->ing->spool[p->w],
		.src = p->i, .where = p->where};
	return p->to->put(p->to->arg, &f, p->err);
}

/* One record of the source's run in the list. @return 0 to read on, 1
 * at its end (PK_REC_DONE), or a negative errno with err set. */
static int put_record(struct putting *p, const struct pk_rec *r)
{
	switch (r->tag) {
	case PK_REC_SOURCE:
		return p->begun ? list_corrupt(p) : put_source(p, r);
	case PK_REC_WARN:
		put_warn(p->o, r);
		return 0;
	case PK_REC_NOTE:
		put_note(p, r);
		return 0;
	case PK_REC_FILE:
		return put_file(p, r);
	case PK_REC_DONE:
		return 1;
	default:
		return list_corrupt(p);
	}
}

int pk_ingest_put(const struct pk_ingest_to *to, const struct pk_source *s,
		  unsigned i, const struct dlfs_pack_opts *o,
		  struct dlfs_err *err)
{
	struct pk_ingest *ing = s->ing;
	if (!ing || ing->owner[i] < 0)
		return dlfs_err_set(err, -EIO, "%s: was not ingested", s->path);
	struct putting p = {.to = to, .s = s, .o = o, .ing = ing, .i = i,
			    .w = (unsigned)ing->owner[i],
			    .top_len = strlen(s->top), .err = err};
	int ret = open_list(to, ing, p.w, err);
	if (ret)
		return ret;
	struct pk_rec r;
	int got = 0;
	while (!ret &&
	       (got = pk_rec_read(ing->lists[p.w], &r, &ing->buf,
				  &ing->cap)) == 1) {
		/* Lists hold their sources in order. */
		if (!p.begun && (r.tag != PK_REC_SOURCE || r.src != i))
			ret = list_corrupt(&p);
		else
			ret = put_record(&p, &r);
	}
	if (!ret && got < 0)
		ret = dlfs_err_set(err, got,
				   "%s: reading the ingest list of worker %u",
				   s->path, p.w);
	else if (!ret)
		ret = list_corrupt(&p); /* it ends before the source does */
	free(p.last);
	return ret == 1 ? 0 : ret;
}
