/*
 * The chunk map of the epoch views (views_chunks_priv.h): one pass over the
 * files' inodes, then where each file's bytes lie without the index.
 */
#include "views_chunks_priv.h"

#include <stdlib.h>

#include "dlfs/format.h"
#include "order.h"

void dlfs_chunkmap_free(struct dlfs_chunkmap *m)
{
	if (!m)
		return;
	free(m->first);
	free(m->last);
	free(m->empty);
	free(m);
}

struct cm_build {
	struct dlfs_ds *ds;
	uint64_t cs;
	struct dlfs_chunkmap *m;
	uint64_t f, g, b, prev0, prev1;
};

/* One file of the pass, in data order. */
static int cm_add(void *arg, const struct dlfs_inode *in)
{
	struct cm_build *c = arg;
	struct dlfs_chunkmap *m = c->m;
	uint64_t f = c->f++, k0, k1, n = m->n_chunks;
	if (!in->size) {
		m->empty[f / 8] |= (uint8_t)(1u << (f % 8));
		return 0;
	}
	dlfs_file_chunks(c->cs, in, 0, in->size, &k0, &k1);
	uint64_t base = dlfs_ds_container(c->ds, in->container)->first_chunk;
	k0 += base;
	k1 += base;
	if (k0 < c->prev0 || k1 < c->prev1)
		m->ordered = 0;
	c->prev0 = k0;
	c->prev1 = k1;
	while (c->g <= k0 && c->g < n)
		m->first[c->g++] = f;
	while (c->b <= k1 && c->b < n)
		m->last[c->b++] = f;
	return 0;
}

int dlfs_chunkmap_build(struct dlfs_ds *ds, struct dlfs_txn *txn, uint64_t cs,
			uint64_t first_file, uint64_t n_files,
			struct dlfs_chunkmap **out, struct dlfs_err *err)
{
	uint64_t n = dlfs_ds_n_chunks(ds);
	struct dlfs_chunkmap *m = calloc(1, sizeof(*m));
	if (m) {
		m->first = malloc((n + 1) * sizeof(*m->first));
		m->last = malloc((n + 1) * sizeof(*m->last));
		m->empty = calloc(n_files / 8 + 1, 1);
	}
	if (!m || !m->first || !m->last || !m->empty) {
		dlfs_chunkmap_free(m);
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	}
	m->n_chunks = n;
	m->ordered = 1;
	/* One pass over the files' inodes, a block of them a lookup. */
	struct cm_build c = {.ds = ds, .cs = cs, .m = m};
	int ret = dlfs_stat_range(txn, first_file, n_files, cm_add, &c, err);
	if (ret) {
		dlfs_chunkmap_free(m);
		return ret;
	}
	while (c.g <= n)
		m->first[c.g++] = n_files;
	while (c.b <= n)
		m->last[c.b++] = n_files;
	/* Empty files before the first with bytes go with chunk 0, so that
	 * the runs hold every file (order.h); chunkmap_file knows them by
	 * their empty bit, not by this. */
	if (n)
		m->first[0] = 0;
	*out = m;
	return 0;
}

/* The last g < n with a[g] <= x (a ascending), or n if a[0] > x. */
static uint64_t last_at_most(const uint64_t *a, uint64_t n, uint64_t x)
{
	if (!n || a[0] > x)
		return n;
	return dlfs_last_le(a, n, x);
}

/* Global chunks [*g0, *g1) of file f from the map: 0 when they are
 * known (empty for an empty file), -1 when the map cannot tell. */
int dlfs_chunkmap_file(const struct dlfs_chunkmap *m, uint64_t f, uint64_t *g0,
		       uint64_t *g1)
{
	*g0 = *g1 = 0;
	if (!m->ordered)
		return -1;
	if ((m->empty[f / 8] >> (f % 8)) & 1)
		return 0;
	uint64_t a = last_at_most(m->first, m->n_chunks, f);
	uint64_t b = last_at_most(m->last, m->n_chunks, f);
	if (a >= m->n_chunks || b >= m->n_chunks || b < a)
		return -1;
	*g0 = a;
	*g1 = b + 1;
	return 0;
}
