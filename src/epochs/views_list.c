/*
 * The files lists of the epoch views (/.dlfs/epochs/E/files, views.h):
 * measured on first use, rendered a piece at a time when read, in parts
 * by the caller and the helper threads (split.h), and the last pieces
 * kept. See views_priv.h.
 */
#include "views_priv.h"

#include <stdlib.h>
#include <string.h>

#include "dlfs/format.h"

/* More than any path of an index can need (dlfs_paths_get: 4,097 levels
 * of DLFS_NAME_MAX bytes): growing past it would be a bug, not a path. */
#define PATH_ROOM_MAX (UINT64_C(4) << 20)

/*
 * The list of epoch e (caller holds mu): its size, and where its pieces
 * start as far as they are known. A share of every file has the size of
 * the walk's sum, and its pieces are found as they are rendered; a share
 * of a part takes one pass over it to measure.
 */
static int list_of(struct dlfs_views *v, struct dlfs_txn *txn, uint64_t e,
		   struct list **out, struct dlfs_err *err)
{
	for (int i = 0; i < LISTS; i++)
		if (v->lists[i].epoch == e) {
			*out = &v->lists[i];
			return 0;
		}
	struct dlfs_epoch *o;
	int ret = dlfs_views_order_of(v, txn, e, &o, err);
	if (!ret)
		ret = dlfs_views_paths_of(v, txn, err);
	if (ret)
		return ret;
	uint64_t n = dlfs_epoch_share_len(o), start = dlfs_epoch_share_start(o);
	uint64_t pieces = (n + v->piece_n - 1) / v->piece_n;
	uint64_t *off = calloc(pieces + 1, sizeof(*off));
	if (!off)
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	uint64_t known = 0;
	int64_t all = dlfs_paths_all_len(v->paths);
	if (n == v->n_files && all >= 0) {
		/* Every file: the size is known, the pieces are not yet. */
		off[pieces] = (uint64_t)all;
	} else {
		for (uint64_t j = 0; j < n; j++) {
			uint64_t f = dlfs_epoch_at(o, start + j);
			int64_t len = dlfs_paths_len(v->paths,
						     v->first_file + f);
			if (len < 0) {
				free(off);
				return dlfs_err_set(
					err, -EIO, "file %llu has no path",
					(unsigned long long)(v->first_file +
							     f));
			}
			off[j / v->piece_n + 1] += (uint64_t)len + 1;
		}
		for (uint64_t k = 0; k < pieces; k++)
			off[k + 1] += off[k];
		known = pieces;
	}
	struct list *l = &v->lists[v->list_hand++ % LISTS];
	free(l->off);
	*l = (struct list){.epoch = e,
			   .size = off[pieces],
			   .n = n,
			   .pieces = pieces,
			   .off = off,
			   .known = known};
	/* Pieces of the list this slot held are stale now. */
	for (int i = 0; i < PIECES; i++)
		if (v->piece[i].list == l)
			v->piece[i].list = NULL;
	*out = l;
	return 0;
}

/* Pieces shorter than this are rendered by the caller alone. */
#define SPLIT_MIN 1024

/* Files [start, start + n) of an order, to render as lines. */
struct render {
	struct dlfs_views *v;
	const struct dlfs_epoch *o;
	uint64_t start, n;
	unsigned parts; /* set by the parts: how many the run had */
};

/*
 * Part i of r into v->part[i] (dlfs_split_fn): the part's share of the
 * files, then their paths. The buffer grows until they fit: a path has no
 * length limit but the index's, and one long path must not fail the list.
 * Runs outside mu on a helper, on data that does not change while the
 * caller holds mu (the order, the path table, the part).
 */
static void render_part(void *arg, unsigned i, unsigned parts)
{
	struct render *r = arg;
	struct part *pt = &r->v->part[i];
	uint64_t a = r->n * i / parts, b = r->n * (i + 1) / parts;
	if (!i)
		r->parts = parts;
	pt->len = 0;
	dlfs_epoch_at_many(r->o, r->start + a, b - a, pt->ino);
	for (uint64_t j = 0; j < b - a; j++)
		pt->ino[j] += r->v->first_file;
	for (;;) {
		int ret = pt->cap ? dlfs_paths_lines(r->v->paths, pt->ino,
						     b - a, pt->data, pt->cap,
						     &pt->len)
				  : -ENAMETOOLONG;
		if (ret != -ENAMETOOLONG) {
			pt->ret = ret;
			return;
		}
		/* Every path of the part may be as long as an index allows
		 * (4,096 levels of 255 bytes): growing past that is a bug. */
		if (pt->cap > (b - a + 1) * PATH_ROOM_MAX) {
			pt->ret = -ENAMETOOLONG;
			return;
		}
		size_t cap = pt->cap ? pt->cap * 2 : (b - a + 1) * 32;
		char *nb = realloc(pt->data, cap);
		if (!nb) {
			pt->ret = -ENOMEM;
			return;
		}
		pt->data = nb;
		pt->cap = cap;
	}
}

/*
 * Render piece k of list l into a piece slot (caller holds mu), or find
 * it there: in parts, by this thread and the helpers (render_part).
 */
static int piece_of(struct dlfs_views *v, struct dlfs_txn *txn, struct list *l,
		    uint64_t k, struct piece **out, struct dlfs_err *err)
{
	struct piece *p = NULL;
	for (int i = 0; i < PIECES; i++)
		if (v->piece[i].list == l && v->piece[i].k == k) {
			p = &v->piece[i];
			p->tick = ++v->piece_tick;
			*out = p;
			return 0;
		}
	struct dlfs_epoch *o;
	int ret = dlfs_views_order_of(v, txn, l->epoch, &o, err);
	if (ret)
		return ret;
	for (int i = 0; i < PIECES; i++)
		if (!p || v->piece[i].tick < p->tick)
			p = &v->piece[i];
	p->list = NULL;
	p->len = 0;
	uint64_t pn = v->piece_n, start = dlfs_epoch_share_start(o) + k * pn;
	uint64_t end = (k + 1) * pn < l->n ? (k + 1) * pn : l->n;
	struct render r = {v, o, start, end - k * pn, 1};
	/* A short piece is not worth waking the helpers for. */
	dlfs_split_run(v->split,
		       r.n >= SPLIT_MIN ? dlfs_split_max_parts(v->split) : 1,
		       render_part, &r);
	size_t len = 0;
	for (unsigned i = 0; i < r.parts; i++) {
		struct part *pt = &v->part[i];
		if (pt->ret == -ENOENT)
			return dlfs_err_set(err, -EIO,
					    "epoch %llu: a file of piece %llu "
					    "has no path",
					    (unsigned long long)l->epoch,
					    (unsigned long long)k);
		if (pt->ret == -ENAMETOOLONG)
			return dlfs_err_set(err, -ENAMETOOLONG,
					    "epoch %llu: piece %llu is longer "
					    "than an index allows",
					    (unsigned long long)l->epoch,
					    (unsigned long long)k);
		if (pt->ret)
			return dlfs_err_set(err, pt->ret, "out of memory");
		len += pt->len;
	}
	if (len > p->cap) {
		char *nb = realloc(p->data, len);
		if (!nb)
			return dlfs_err_set(err, -ENOMEM, "out of memory");
		p->data = nb;
		p->cap = len;
	}
	for (unsigned i = 0; i < r.parts; i++) {
		memcpy(p->data + p->len, v->part[i].data, v->part[i].len);
		p->len += v->part[i].len;
	}
	if (k == l->known) {
		l->off[k + 1] = l->off[k] + p->len;
		l->known++;
		if (l->known == l->pieces && l->off[k + 1] != l->size)
			return dlfs_err_set(err, -EIO,
					    "epoch %llu: the list is %llu "
					    "bytes, not the %llu measured",
					    (unsigned long long)l->epoch,
					    (unsigned long long)l->off[k + 1],
					    (unsigned long long)l->size);
	} else if (k < l->known && l->off[k + 1] - l->off[k] != p->len) {
		return dlfs_err_set(err, -EIO,
				    "epoch %llu: piece %llu changed its size",
				    (unsigned long long)l->epoch,
				    (unsigned long long)k);
	}
	p->list = l;
	p->k = k;
	p->tick = ++v->piece_tick;
	*out = p;
	return 0;
}

/* Take the list of e and make e current (caller holds mu). */
static int list_use(struct dlfs_views *v, struct dlfs_txn *txn, uint64_t e,
		    struct list **l, int *changed, struct dlfs_err *err)
{
	int ret = list_of(v, txn, e, l, err);
	if (ret) {
		dlfs_err_prefix(err, "epoch %llu: cannot list it",
				(unsigned long long)e);
		return ret;
	}
	*changed = dlfs_views_set_current(v, e);
	return 0;
}

int dlfs_views_files_size(struct dlfs_views *v, struct dlfs_txn *txn,
			  uint64_t e, uint64_t *size, struct dlfs_err *err)
{
	struct list *l;
	int changed = 0;
	pthread_mutex_lock(&v->mu);
	int ret = list_use(v, txn, e, &l, &changed, err);
	if (!ret)
		*size = l->size;
	pthread_mutex_unlock(&v->mu);
	if (changed && v->conf.reader)
		dlfs_reader_replan(v->conf.reader);
	return ret;
}

int dlfs_views_files_read(struct dlfs_views *v, struct dlfs_txn *txn,
			  uint64_t e, uint64_t off, char *buf, size_t size,
			  size_t *got, struct dlfs_err *err)
{
	struct list *l;
	int changed = 0;
	*got = 0;
	pthread_mutex_lock(&v->mu);
	int ret = list_use(v, txn, e, &l, &changed, err);
	if (!ret && off < l->size && size) {
		/* Find the pieces up to off, rendering those not yet known. */
		struct piece *p;
		while (!ret && l->known < l->pieces && l->off[l->known] <= off)
			ret = piece_of(v, txn, l, l->known, &p, err);
		uint64_t k0 = dlfs_last_le(l->off, l->known, off);
		for (uint64_t k = k0; !ret && k < l->pieces && *got < size;
		     k++) {
			if ((ret = piece_of(v, txn, l, k, &p, err)))
				break;
			uint64_t at = off + *got - l->off[k];
			if (at >= p->len)
				continue;
			size_t n = p->len - at < size - *got
					   ? (size_t)(p->len - at)
					   : size - *got;
			memcpy(buf + *got, p->data + at, n);
			*got += n;
		}
	}
	pthread_mutex_unlock(&v->mu);
	if (changed && v->conf.reader)
		dlfs_reader_replan(v->conf.reader);
	return ret;
}
