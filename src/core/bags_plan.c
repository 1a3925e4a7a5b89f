/* The planning of bags: a window of the plan's files, merged into runs
 * and packed into bags (bags.h). */
#include "bags_priv.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dlfs/format.h"

/* ---- runs (pure) ---- */

static size_t find(size_t *parent, size_t i)
{
	while (parent[i] != i) {
		parent[i] = parent[parent[i]];
		i = parent[i];
	}
	return i;
}

/* A gap between file i and file i + 1 of one container. */
struct gap {
	uint64_t bytes;
	size_t i;
};

static int by_gap(const void *a, const void *b)
{
	const struct gap *x = a, *y = b;
	if (x->bytes != y->bytes)
		return x->bytes < y->bytes ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

/* Merge the runs of files i and i + 1 if the bounds allow (heads keep
 * lo, hi). */
static void try_merge(size_t *parent, uint64_t *lo, uint64_t *hi, size_t i,
		      uint64_t max_run, uint64_t budget, uint64_t *total)
{
	size_t a = find(parent, i), b = find(parent, i + 1);
	uint64_t nlo = lo[a] < lo[b] ? lo[a] : lo[b];
	uint64_t nhi = hi[a] > hi[b] ? hi[a] : hi[b];
	uint64_t pa = page_up(hi[a]) - page_down(lo[a]);
	uint64_t pb = page_up(hi[b]) - page_down(lo[b]);
	uint64_t pn = page_up(nhi) - page_down(nlo);
	if (pn > max_run || *total + pn > budget + pa + pb)
		return;
	*total = *total + pn - pa - pb;
	parent[b] = a;
	lo[a] = nlo;
	hi[a] = nhi;
}

size_t dlfs_bags_runs(const uint32_t *c, const uint64_t *off,
		      const uint64_t *size, size_t n, uint64_t max_run,
		      double waste, uint32_t *run)
{
	size_t m = n ? n : 1;
	size_t *parent = malloc(m * sizeof(*parent));
	uint64_t *lo = malloc(m * sizeof(*lo));
	uint64_t *hi = malloc(m * sizeof(*hi));
	struct gap *gap = malloc(m * sizeof(*gap));
	size_t n_gaps = 0, runs = 0;
	uint64_t bytes = 0, total = 0;
	if (!parent || !lo || !hi || !gap) {
		/* No room to plan: every file its own run. */
		for (size_t i = 0; i < n; i++)
			run[i] = (uint32_t)i;
		runs = n;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		parent[i] = i;
		lo[i] = off[i];
		hi[i] = off[i] + size[i];
		bytes += size[i];
		total += page_up(hi[i]) - page_down(lo[i]);
		if (i + 1 < n && c[i + 1] == c[i])
			gap[n_gaps++] = (struct gap){
				off[i + 1] > hi[i] ? off[i + 1] - hi[i] : 0, i};
	}
	uint64_t budget = (uint64_t)(waste * (double)bytes);
	if (budget < total)
		budget = total;
	qsort(gap, n_gaps, sizeof(*gap), by_gap);
	for (size_t j = 0; j < n_gaps; j++)
		try_merge(parent, lo, hi, gap[j].i, max_run, budget, &total);
	for (size_t i = 0; i < n; i++) {
		if (i && find(parent, i) != find(parent, i - 1))
			runs++;
		run[i] = (uint32_t)runs;
	}
	runs = n ? runs + 1 : 0;
out:
	free(parent);
	free(lo);
	free(hi);
	free(gap);
	return runs;
}

/* ---- planning ---- */

/* A file of the window. */
struct wfile {
	uint64_t ino, pos, off, size, xxh3;
	uint32_t c;
};

/* A run of the window: files [f0, f1) of the sorted window. */
struct wrun {
	uint64_t lo, hi, first;
	size_t f0, f1;
};

struct window {
	struct wfile *f;
	size_t n, cap;
	uint64_t bytes, target; /* the files' bytes; the most to take */
	uint64_t next;          /* the position after the last looked at */
};

static int by_place(const void *a, const void *b)
{
	const struct wfile *x = a, *y = b;
	if (x->c != y->c)
		return x->c < y->c ? -1 : 1;
	if (x->off != y->off)
		return x->off < y->off ? -1 : 1;
	return x->pos < y->pos ? -1 : x->pos > y->pos;
}

static int by_first(const void *a, const void *b)
{
	const struct wrun *x = a, *y = b;
	return x->first < y->first ? -1 : x->first > y->first;
}

/* A run's pages fit a helper's scratch buffer. */
static uint64_t max_run(const struct dlfs_bags *b)
{
	uint64_t m = b->conf.entry_size / 4, scratch = DLFS_BAGS_SCRATCH - 2 * PAGE;
	return m < scratch ? m : scratch;
}

/* Is file ino (its inode in) worth a place in a bag? */
static int wanted(struct dlfs_bags *b, const struct dlfs_inode *in)
{
	uint64_t cs = b->conf.entry_size, k0, k1;
	if (!S_ISREG(in->mode) || !in->size || in->size > cs / 2)
		return 0;
	dlfs_file_chunks(cs, in, 0, in->size, &k0, &k1);
	if (k0 != k1 ||
	    page_up(in->offset + in->size) - page_down(in->offset) > max_run(b))
		return 0;
	struct dlfs_cache *cache = b->conf.cache;
	if (dlfs_cache_held(cache, dlfs_cache_chunk_key(in->container, k0)) ||
	    dlfs_cache_contains(cache, dlfs_cache_file_key(in->ino)))
		return 0;
	return !dlfs_bags_mapped(b, in->ino);
}

/* Add the files at positions from on (ino) to w, up to its target.
 * @return how many of ino were looked at. */
static size_t take(struct dlfs_bags *b, struct dlfs_txn *txn,
		   struct window *w, uint64_t from, const uint64_t *ino,
		   size_t n)
{
	size_t i;
	for (i = 0; i < n && w->bytes < w->target && w->n < w->cap; i++) {
		struct dlfs_inode in;
		if (dlfs_stat(txn, ino[i], &in, NULL) || !wanted(b, &in))
			continue;
		w->f[w->n++] = (struct wfile){in.ino, from + i, in.offset,
					      in.size, in.xxh3, in.container};
		w->bytes += in.size;
	}
	return i;
}

/* Fill w from position from on. @return 0, or 1: nothing is planned now
 * (no epoch, or the share's end). */
static int gather(struct dlfs_bags *b, struct dlfs_txn *txn,
		  dlfs_plan_files_fn plan, void *arg, uint64_t from,
		  uint64_t epoch, struct window *w)
{
	uint64_t ino[PLAN_STEP], e, reader;
	w->next = from;
	while (w->bytes < w->target && w->n < w->cap) {
		size_t got = plan(arg, txn, w->next, ino, PLAN_STEP, &e, &reader);
		if (e != epoch)
			return 1; /* the plan moved on: a reset follows */
		if (!got)
			return w->n == 0;
		w->next += take(b, txn, w, w->next, ino, got);
	}
	return 0;
}

/* The runs of w (sorted by place) in order of first use, into *out.
 * @return their number, or 0 (none, or out of memory). */
static size_t window_runs(struct dlfs_bags *b, const struct window *w,
			  struct wrun **out)
{
	size_t n = w->n, nr = 0;
	uint32_t *c = malloc(n * sizeof(*c)), *run = malloc(n * sizeof(*run));
	uint64_t *off = malloc(n * sizeof(*off)), *size = malloc(n * sizeof(*size));
	struct wrun *r = NULL;
	if (!c || !run || !off || !size)
		goto out;
	for (size_t i = 0; i < n; i++) {
		c[i] = w->f[i].c;
		off[i] = w->f[i].off;
		size[i] = w->f[i].size;
	}
	size_t want = dlfs_bags_runs(c, off, size, n, max_run(b),
				     DLFS_BAGS_WASTE, run);
	if (!(r = malloc((want ? want : 1) * sizeof(*r))))
		goto out;
	for (size_t i = 0; i < n; i++) {
		const struct wfile *f = &w->f[i];
		if (!i || run[i] != run[i - 1]) {
			r[nr++] = (struct wrun){f->off, f->off + f->size, f->pos,
						i, i + 1};
			continue;
		}
		struct wrun *x = &r[nr - 1];
		if (f->off + f->size > x->hi)
			x->hi = f->off + f->size;
		if (f->pos < x->first)
			x->first = f->pos;
		x->f1 = i + 1;
	}
	qsort(r, nr, sizeof(*r), by_first);
out:
	free(c);
	free(run);
	free(off);
	free(size);
	if (!nr) {
		free(r);
		r = NULL;
	}
	*out = r;
	return nr;
}

/* A new bag for at most nf files and nr runs. @return 0 or -ENOMEM. */
static int bag_start(struct bag *g, size_t nf, size_t nr)
{
	g->files = malloc((nf ? nf : 1) * sizeof(*g->files));
	g->pieces = malloc((nf ? nf : 1) * sizeof(*g->pieces));
	g->runs = malloc((nr ? nr : 1) * sizeof(*g->runs));
	return g->files && g->pieces && g->runs ? 0 : -ENOMEM;
}

/* The bytes of run r's files. */
static uint64_t run_bytes(const struct window *w, const struct wrun *r)
{
	uint64_t n = 0;
	for (size_t j = r->f0; j < r->f1; j++)
		n += w->f[j].size;
	return n;
}

/* Put run r's files in bag g (room checked), after the files before. */
static void place(struct bag *g, const struct window *w, const struct wrun *r)
{
	size_t f0 = g->n_files;
	uint64_t end = 0; /* past the last file placed */
	for (size_t j = r->f0; j < r->f1; j++) {
		const struct wfile *f = &w->f[j];
		if (f->off < end)
			continue; /* the same bytes as another: read alone */
		end = f->off + f->size;
		g->files[g->n_files] = (struct bfile){f->ino, f->xxh3, f->pos,
						      (uint32_t)g->len,
						      (uint32_t)f->size};
		g->pieces[g->n_files++] = (struct bpiece){
			f->off - r->lo, (size_t)f->size, g->len};
		g->len += f->size;
		if (f->pos > g->last_pos)
			g->last_pos = f->pos;
	}
	g->runs[g->n_runs++] = (struct brun){
		w->f[r->f0].c, r->lo, r->hi - r->lo, f0, g->n_files - f0};
}

/* Pack the runs, in order, into at most max bags (bag[] zeroed).
 * @return the bags made. */
static unsigned pack(struct dlfs_bags *b, const struct window *w,
		     const struct wrun *r, size_t nr, struct bag *bag,
		     unsigned max)
{
	unsigned nb = 0;
	for (size_t i = 0; i < nr; i++) {
		uint64_t bytes = run_bytes(w, &r[i]);
		size_t nf = r[i].f1 - r[i].f0;
		struct bag *g = nb ? &bag[nb - 1] : NULL;
		if (nf > BAG_FILES_MAX)
			continue; /* tiny files: read by their chunk */
		if (!g || g->len + bytes > b->conf.entry_size ||
		    g->n_files + nf > BAG_FILES_MAX) {
			if (nb == max)
				break;
			g = &bag[nb++];
			if (bag_start(g, w->n < BAG_FILES_MAX ? w->n
							     : BAG_FILES_MAX,
				      nr - i))
				break;
		}
		place(g, w, &r[i]);
	}
	while (nb && !bag[nb - 1].n_files)
		nb--;
	return nb;
}

/* bags_priv.h */
unsigned dlfs_bags_plan(struct dlfs_bags *b, struct dlfs_txn *txn,
			dlfs_plan_files_fn plan, void *arg, uint64_t epoch,
			uint64_t from, int n_free, struct bag *made,
			uint64_t *next, size_t *n, int *end)
{
	unsigned nb = 0;
	struct wrun *r = NULL;
	struct window ws = {0}, *w = &ws;
	w->cap = WINDOW_MAX;
	w->target = (uint64_t)n_free * b->conf.entry_size / 8 * 7;
	*next = from;
	*n = 0;
	*end = 0;
	if (!(w->f = malloc(w->cap * sizeof(*w->f))))
		return 0;
	*end = gather(b, txn, plan, arg, from, epoch, w);
	qsort(w->f, w->n, sizeof(*w->f), by_place);
	size_t nr = w->n ? window_runs(b, w, &r) : 0;
	if (nr)
		nb = pack(b, w, r, nr, made, (unsigned)n_free);
	free(r);
	free(w->f);
	*next = w->next;
	*n = w->n;
	return nb;
}

