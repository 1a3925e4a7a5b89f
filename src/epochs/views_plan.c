/*
 * The planner of the epoch views (dlfs_views_plan_next, views.h): the
 * chunks of the current epoch's share in order of first use, each once,
 * from the reader's position on, for the read core's background reads;
 * and the share's files themselves from a position on, for its bags
 * (dlfs_views_plan_files). See views_priv.h.
 */
#include "views_priv.h"

#include <stdlib.h>
#include <string.h>

#include "dlfs/format.h"

/* Global chunks [*g0, *g1) holding file f; empty for an empty file.
 * From the map m when it can tell, else from the index. */
static int file_chunks_of(struct dlfs_views *v, struct dlfs_txn *txn,
			  const struct dlfs_chunkmap *m, uint64_t f,
			  uint64_t *g0, uint64_t *g1)
{
	struct dlfs_inode in;
	uint64_t k0, k1;
	if (m && !dlfs_chunkmap_file(m, f, g0, g1))
		return 0;
	*g0 = *g1 = 0;
	int ret = dlfs_stat(txn, v->first_file + f, &in, NULL);
	if (ret || !in.size)
		return ret;
	dlfs_file_chunks(v->cs, &in, 0, in.size, &k0, &k1);
	uint64_t base =
		dlfs_ds_container(v->conf.ds, in.container)->first_chunk;
	*g0 = base + k0;
	*g1 = base + k1 + 1;
	return 0;
}

/* Non-empty files among [lo, hi). */
static uint64_t count_full(const struct dlfs_chunkmap *m, uint64_t lo,
			   uint64_t hi)
{
	uint64_t n = 0;
	for (uint64_t f = lo; f < hi; f++)
		n += !((m->empty[f / 8] >> (f % 8)) & 1);
	return n;
}

/* Count, for epoch e's share, its files in each chunk: outside the lock,
 * with an order of its own. A share of every file (one rank) takes them
 * from the map alone; a part takes one pass over the share. */
static uint32_t *count_uses(struct dlfs_views *v, struct dlfs_txn *txn,
			    const struct dlfs_chunkmap *m,
			    const struct dlfs_epoch_conf *oc, uint64_t e)
{
	struct dlfs_epoch *o;
	uint64_t n = dlfs_ds_n_chunks(v->conf.ds), g0, g1;
	uint32_t *uses = calloc(n ? n : 1, sizeof(*uses));
	if (!uses)
		return NULL;
	if (oc->size == 1 && m && m->ordered && m->n_chunks == n) {
		/* Files with first chunk <= g and last chunk >= g. */
		for (uint64_t g = 0; g < n; g++)
			if (m->first[g + 1] > m->last[g])
				uses[g] = (uint32_t)count_full(m, m->last[g],
							       m->first[g + 1]);
		return uses;
	}
	if (dlfs_epoch_new(oc, e, &o)) {
		free(uses);
		return NULL;
	}
	uint64_t start = dlfs_epoch_share_start(o);
	for (uint64_t j = 0; j < dlfs_epoch_share_len(o); j++)
		if (!file_chunks_of(v, txn, m, dlfs_epoch_at(o, start + j), &g0,
				    &g1))
			for (uint64_t g = g0; g < g1 && g < n; g++)
				uses[g]++;
	dlfs_epoch_free(o);
	return uses;
}

int dlfs_views_plan_next(void *arg, struct dlfs_txn *txn, uint64_t *g,
			 uint32_t *uses)
{
	struct dlfs_views *v = arg;
	struct dlfs_epoch *o;
	uint64_t n = dlfs_ds_n_chunks(v->conf.ds);
	int got = 0;
	pthread_mutex_lock(&v->mu);
	uint64_t e = dlfs_views_current(v);
	if (e == UINT64_MAX || dlfs_views_order_of(v, txn, e, &o, NULL))
		goto out;
	if (v->plan_epoch != e) {
		if (!v->emitted && !(v->emitted = calloc(n / 8 + 1, 1)))
			goto out;
		memset(v->emitted, 0, n / 8 + 1);
		v->plan_epoch = e;
		v->plan_pos = 0;
		v->plan_g = v->plan_g_end = 0;
	}
	if (!v->cmap && !v->cmap_failed) {
		/* One pass over the inodes, outside the lock, once a mount:
		 * then no plan reads the index to place a file. */
		pthread_mutex_unlock(&v->mu);
		struct dlfs_chunkmap *m = NULL;
		int r = dlfs_chunkmap_build(v->conf.ds, txn, v->cs,
					    v->first_file, v->n_files, &m,
					    NULL);
		pthread_mutex_lock(&v->mu);
		if (r)
			v->cmap_failed = 1;
		else if (v->cmap)
			dlfs_chunkmap_free(m);
		else
			v->cmap = m;
		if (dlfs_views_current(v) != e ||
		    dlfs_views_order_of(v, txn, e, &o, NULL))
			goto out;
	}
	if (uses && v->uses_epoch != e) {
		struct dlfs_epoch_conf oc;
		const struct dlfs_chunkmap *m =
			v->cmap; /* never replaced once set */
		dlfs_views_order_conf(v, &oc);
		pthread_mutex_unlock(&v->mu);
		uint32_t *u = count_uses(v, txn, m, &oc, e);
		pthread_mutex_lock(&v->mu);
		if (!u || v->plan_epoch != e || dlfs_views_current(v) != e ||
		    dlfs_views_order_of(v, txn, e, &o, NULL)) {
			free(u);
			goto out;
		}
		free(v->uses);
		v->uses = u;
		v->uses_epoch = e;
	}
	if (v->plan_pos < v->reader_pos) {
		v->plan_pos = v->reader_pos; /* the reader outran the plan */
		v->plan_g = v->plan_g_end;
	}
	uint64_t start = dlfs_epoch_share_start(o);
	uint64_t len = dlfs_epoch_share_len(o);
	for (;;) {
		while (v->plan_g < v->plan_g_end) {
			uint64_t c = v->plan_g++;
			if (c >= n || (v->emitted[c / 8] >> (c % 8)) & 1)
				continue;
			v->emitted[c / 8] |= (uint8_t)(1u << (c % 8));
			*g = c;
			if (uses)
				*uses = v->uses[c];
			got = 1;
			goto out;
		}
		if (v->plan_pos >= len)
			goto out;
		uint64_t f = dlfs_epoch_at(o, start + v->plan_pos++);
		file_chunks_of(v, txn, v->cmap, f, &v->plan_g, &v->plan_g_end);
	}
out:
	pthread_mutex_unlock(&v->mu);
	return got;
}

size_t dlfs_views_plan_files(void *arg, struct dlfs_txn *txn, uint64_t from,
			     uint64_t *ino, size_t max, uint64_t *epoch,
			     uint64_t *reader)
{
	struct dlfs_views *v = arg;
	struct dlfs_epoch *o;
	size_t n = 0;
	*epoch = UINT64_MAX;
	*reader = 0;
	pthread_mutex_lock(&v->mu);
	uint64_t e = dlfs_views_current(v);
	if (e == UINT64_MAX || dlfs_views_order_of(v, txn, e, &o, NULL))
		goto out;
	*epoch = e;
	*reader = v->reader_pos;
	uint64_t len = dlfs_epoch_share_len(o);
	if (from >= len || !max)
		goto out;
	n = len - from < max ? (size_t)(len - from) : max;
	dlfs_epoch_at_many(o, dlfs_epoch_share_start(o) + from, n, ino);
	for (size_t i = 0; i < n; i++)
		ino[i] += v->first_file;
out:
	pthread_mutex_unlock(&v->mu);
	return n;
}
