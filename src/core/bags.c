/* Files read ahead in runs, packed into RAM-tier entries: see bags.h. */
#include "bags_priv.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <xxhash.h>

#include "dlfs/format.h"

/* ---- the map ---- */

static size_t map_home(const struct dlfs_bags *b, uint64_t ino)
{
	return (size_t)((ino * UINT64_C(0x9E3779B97F4A7C15)) >> 17) &
	       (b->map_cap - 1);
}

static struct ment *map_find(struct dlfs_bags *b, uint64_t ino)
{
	if (!b->map_n)
		return NULL;
	for (size_t i = map_home(b, ino);; i = (i + 1) & (b->map_cap - 1)) {
		struct ment *e = &b->map[i];
		if (e->bag == UINT32_MAX)
			return NULL;
		if (e->ino == ino)
			return e;
	}
}

static void map_clear(struct dlfs_bags *b)
{
	for (size_t i = 0; i < b->map_cap; i++)
		b->map[i].bag = UINT32_MAX;
	b->map_n = 0;
}

static void map_insert(struct dlfs_bags *b, const struct ment *m)
{
	size_t i = map_home(b, m->ino);
	while (b->map[i].bag != UINT32_MAX && b->map[i].ino != m->ino)
		i = (i + 1) & (b->map_cap - 1);
	if (b->map[i].bag == UINT32_MAX)
		b->map_n++;
	b->map[i] = *m;
}

/* Room for one more entry (load at most a half). @return 0 or -ENOMEM. */
static int map_room(struct dlfs_bags *b)
{
	if (2 * (b->map_n + 1) <= b->map_cap)
		return 0;
	size_t cap = b->map_cap ? 2 * b->map_cap : 1024;
	struct ment *old = b->map, *m = malloc(cap * sizeof(*m));
	if (!m)
		return -ENOMEM;
	size_t old_cap = b->map_cap;
	b->map = m;
	b->map_cap = cap;
	map_clear(b);
	for (size_t i = 0; i < old_cap; i++)
		if (old[i].bag != UINT32_MAX)
			map_insert(b, &old[i]);
	free(old);
	return 0;
}

/* Remove e (linear probing: shift the entries after it back). */
static void map_remove(struct dlfs_bags *b, struct ment *e)
{
	size_t mask = b->map_cap - 1, i = (size_t)(e - b->map);
	for (size_t j = (i + 1) & mask; b->map[j].bag != UINT32_MAX;
	     j = (j + 1) & mask) {
		size_t h = map_home(b, b->map[j].ino);
		/* Entry j may fill hole i unless its home lies in (i, j]. */
		if (i <= j ? (h > i && h <= j) : (h > i || h <= j))
			continue;
		b->map[i] = b->map[j];
		i = j;
	}
	b->map[i].bag = UINT32_MAX;
	b->map_n--;
}

/* bags_priv.h */
int dlfs_bags_mapped(struct dlfs_bags *b, uint64_t ino)
{
	pthread_mutex_lock(&b->mu);
	int mapped = map_find(b, ino) != NULL;
	pthread_mutex_unlock(&b->mu);
	return mapped;
}

/* ---- bags ---- */

int dlfs_bags_new(const struct dlfs_bags_conf *conf, struct dlfs_bags **out,
		  struct dlfs_err *err)
{
	*out = NULL;
	if (!conf->max || conf->entry_size < 2 * PAGE)
		return dlfs_err_set(err, -EINVAL, "bags: %u entries of %zu bytes",
				    conf->max, conf->entry_size);
	struct dlfs_bags *b = calloc(1, sizeof(*b));
	if (!b || !(b->bags = calloc(conf->max, sizeof(*b->bags)))) {
		free(b);
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	}
	b->conf = *conf;
	b->epoch = UINT64_MAX;
	b->lag = LAG_MIN;
	pthread_mutex_init(&b->mu, NULL);
	pthread_cond_init(&b->loaded, NULL);
	*out = b;
	return 0;
}

static void bag_clear(struct bag *g)
{
	free(g->files);
	free(g->pieces);
	free(g->used);
	free(g->runs);
	*g = (struct bag){.state = BAG_FREE};
}

/* Remove bag g's files from the map (caller holds mu). */
static void unmap(struct dlfs_bags *b, struct bag *g)
{
	uint32_t gi = (uint32_t)(g - b->bags);
	for (size_t i = 0; i < g->n_files; i++) {
		struct ment *e = map_find(b, g->files[i].ino);
		if (e && e->bag == gi)
			map_remove(b, e);
	}
}

/* Let live bag g go (caller holds mu): its map entries, its counts; its
 * hold is the caller's to put (returned). */
static struct dlfs_chunk_ref let_go(struct dlfs_bags *b, struct bag *g)
{
	unmap(b, g);
	atomic_fetch_add(&b->unread, g->left);
	struct dlfs_chunk_ref hold = g->hold;
	bag_clear(g);
	atomic_fetch_sub(&b->live, 1);
	return hold;
}

void dlfs_bags_reset(struct dlfs_bags *b)
{
	pthread_mutex_lock(&b->mu);
	b->gen++;
	for (unsigned i = 0; i < b->conf.max; i++) {
		struct bag *g = &b->bags[i];
		if (g->state == BAG_LIVE) {
			struct dlfs_chunk_ref hold = let_go(b, g);
			dlfs_cache_put(b->conf.cache, &hold, 0);
		} else if (g->state == BAG_PENDING) {
			bag_clear(g);
		} /* a loading one: its loader sees the new gen */
	}
	map_clear(b);
	b->epoch = UINT64_MAX;
	b->cursor = 0;
	b->dry = 0;
	pthread_cond_broadcast(&b->loaded);
	pthread_mutex_unlock(&b->mu);
}

void dlfs_bags_free(struct dlfs_bags *b)
{
	if (!b)
		return;
	dlfs_bags_reset(b);
	for (unsigned i = 0; i < b->conf.max; i++)
		bag_clear(&b->bags[i]);
	pthread_mutex_destroy(&b->mu);
	pthread_cond_destroy(&b->loaded);
	free(b->map);
	free(b->bags);
	free(b);
}

void dlfs_bags_set_planner(struct dlfs_bags *b, dlfs_plan_files_fn fn,
			   void *arg)
{
	pthread_mutex_lock(&b->mu);
	b->plan = fn;
	b->plan_arg = arg;
	pthread_mutex_unlock(&b->mu);
	dlfs_bags_reset(b);
}

/* A pending bag made loading (caller holds mu). @return its index, or
 * -1. */
static int take_pending(struct dlfs_bags *b)
{
	for (unsigned i = 0; i < b->conf.max; i++)
		if (b->bags[i].state == BAG_PENDING) {
			b->bags[i].state = BAG_LOADING;
			return (int)i;
		}
	return -1;
}

/* A loading bag with runs nobody took yet (caller holds mu). @return its
 * index, or -1. */
static int to_help(struct dlfs_bags *b)
{
	for (unsigned i = 0; i < b->conf.max; i++) {
		struct bag *g = &b->bags[i];
		if (g->state == BAG_LOADING && g->buf &&
		    g->next_run < g->n_runs)
			return (int)i;
	}
	return -1;
}

/* Where the plan is (caller holds mu): follow a new epoch and readers
 * that ran ahead; let go of the bags they passed. @return the free bags,
 * or -1 when nothing is planned now. */
static int follow(struct dlfs_bags *b, uint64_t epoch, uint64_t reader)
{
	if (epoch == UINT64_MAX) {
		b->dry = 1;
		return -1;
	}
	if (epoch != b->epoch) {
		b->epoch = epoch;
		b->cursor = reader;
	}
	if (b->cursor + b->lag < reader)
		b->cursor = reader;
	int n_free = 0;
	for (unsigned i = 0; i < b->conf.max; i++) {
		struct bag *g = &b->bags[i];
		if (g->state == BAG_LIVE && g->last_pos + b->lag < reader) {
			struct dlfs_chunk_ref hold = let_go(b, g);
			dlfs_cache_put(b->conf.cache, &hold, 0);
		}
		n_free += g->state == BAG_FREE;
	}
	return n_free;
}

/* Put the bags made (nb of made) in free places as pending (caller holds
 * mu). */
static void install(struct dlfs_bags *b, struct bag *made, unsigned nb)
{
	unsigned j = 0;
	for (unsigned i = 0; i < b->conf.max && j < nb; i++) {
		struct bag *g = &b->bags[i];
		if (g->state != BAG_FREE)
			continue;
		*g = made[j];
		made[j++] = (struct bag){.state = BAG_FREE};
		g->state = BAG_PENDING;
		g->id = ++b->next_id;
		g->gen = b->gen;
		/* Mapped now, so that no later window takes its files
		 * again; readers find them once it is loaded. */
		for (size_t k = 0; k < g->n_files; k++) {
			if (map_room(b))
				break;
			map_insert(b, &(struct ment){g->files[k].ino,
						     (uint32_t)i, (uint32_t)k});
		}
	}
	for (; j < nb; j++)
		bag_clear(&made[j]);
}

int dlfs_bags_next(struct dlfs_bags *b, struct dlfs_txn *txn, unsigned *bag)
{
	uint64_t e, reader;
	pthread_mutex_lock(&b->mu);
	int i = take_pending(b), kind = 1;
	if (i < 0 && (i = to_help(b)) >= 0)
		kind = 2;
	dlfs_plan_files_fn plan = b->plan;
	void *arg = b->plan_arg;
	uint64_t gen = b->gen;
	int busy = b->planning || b->dry || !plan;
	pthread_mutex_unlock(&b->mu);
	if (i >= 0 || busy)
		goto out;
	plan(arg, txn, 0, NULL, 0, &e, &reader); /* where it is */
	pthread_mutex_lock(&b->mu);
	int n_free = gen == b->gen && !b->planning ? follow(b, e, reader) : -1;
	uint64_t from = b->cursor;
	b->planning = n_free > 0;
	pthread_mutex_unlock(&b->mu);
	if (n_free <= 0)
		goto out;

	struct bag *made = calloc((size_t)n_free, sizeof(*made));
	uint64_t next = from;
	size_t n = 0;
	int end = 0;
	unsigned nb = made ? dlfs_bags_plan(b, txn, plan, arg, e, from, n_free,
					    made, &next, &n, &end)
			   : 0;
	pthread_mutex_lock(&b->mu);
	b->planning = 0;
	if (gen == b->gen && made) {
		b->cursor = next > from ? next : from;
		b->lag = n > LAG_MIN ? n : LAG_MIN;
		b->dry = end && !nb;
		install(b, made, nb);
	} else {
		for (unsigned j = 0; made && j < nb; j++)
			bag_clear(&made[j]);
	}
	i = take_pending(b);
	pthread_mutex_unlock(&b->mu);
	free(made);
out:
	if (i < 0)
		return 0;
	*bag = (unsigned)i;
	return kind;
}

/* ---- loading and reading ---- */

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {0, (long)ms * 1000000L};
	nanosleep(&ts, NULL);
}

/* Bag g failed to load, or was planned for an old plan: drop it. */
static void drop(struct dlfs_bags *b, struct bag *g)
{
	pthread_mutex_lock(&b->mu);
	unmap(b, g);
	bag_clear(g);
	pthread_cond_broadcast(&b->loaded);
	pthread_mutex_unlock(&b->mu);
	if (b->conf.wake)
		b->conf.wake(b->conf.wake_arg);
}

/* Check the files of loaded bag g against their checksums; unmap those
 * that fail (caller holds mu). @return how many passed. */
static size_t check_files(struct dlfs_bags *b, struct bag *g,
			  const uint8_t *data)
{
	uint32_t gi = (uint32_t)(g - b->bags);
	size_t good = 0;
	for (size_t i = 0; i < g->n_files; i++) {
		struct bfile *f = &g->files[i];
		struct ment *e = map_find(b, f->ino);
		int mapped = e && e->bag == gi && e->file == i;
		if (mapped && XXH3_64bits(data + f->off, f->size) == f->xxh3) {
			dlfs_fetch_file_set(b->conf.fetch, f->ino, 1);
			good++;
			continue;
		}
		if (mapped) {
			atomic_fetch_add(&b->bad, 1);
			map_remove(b, e);
		}
		g->used[i / 8] |= (uint8_t)(1u << (i % 8));
	}
	return good;
}

/* Read run i of loading bag g into scratch and copy its files to their
 * places in the entry. @return 0 or -errno with err. */
static int read_run(struct dlfs_bags *b, struct bag *g, size_t i,
		    uint8_t *scratch, struct dlfs_err *err)
{
	const struct brun *r = &g->runs[i];
	size_t head;
	int ret = dlfs_fetch_pfs_range(b->conf.fetch, r->c, r->off,
				       (size_t)r->len, scratch,
				       DLFS_BAGS_SCRATCH, &head, err);
	if (ret)
		return ret;
	for (size_t j = r->f0; j < r->f0 + r->nf; j++) {
		const struct bpiece *p = &g->pieces[j];
		memcpy(g->buf + p->dst, scratch + head + p->src, p->len);
	}
	atomic_fetch_add(&b->n_runs, 1);
	atomic_fetch_add(&b->n_bytes,
			 page_up(r->off + r->len) - page_down(r->off));
	return 0;
}

/* Read runs of bag g while some are left (caller holds mu; released
 * around each read). Any thread may: the runs go to disjoint places. */
static void read_runs(struct dlfs_bags *b, struct bag *g, uint8_t *scratch)
{
	while (g->state == BAG_LOADING && g->buf && g->next_run < g->n_runs) {
		size_t i = g->next_run++;
		struct dlfs_err err = {0};
		pthread_mutex_unlock(&b->mu);
		int ret = read_run(b, g, i, scratch, &err);
		pthread_mutex_lock(&b->mu);
		if (ret && !g->err) {
			g->err = ret;
			g->err_msg = err;
		}
		if (++g->runs_done == g->n_runs)
			pthread_cond_broadcast(&b->loaded);
	}
}

struct fill_arg {
	struct dlfs_bags *b;
	struct bag *g;
	uint8_t *scratch;
};

/* The entry's fill (struct dlfs_fetch_bag): its runs, read by this
 * thread and any that help, then this one waits for the last. */
static int fill_bag(void *arg, uint8_t *buf, size_t cap, size_t *len,
		    struct dlfs_err *err)
{
	struct fill_arg *a = arg;
	struct dlfs_bags *b = a->b;
	struct bag *g = a->g;
	if (g->len > cap)
		return dlfs_err_set(err, -EINVAL,
				    "a bag of %zu bytes in an entry of %zu",
				    g->len, cap);
	pthread_mutex_lock(&b->mu);
	g->buf = buf;
	g->next_run = g->runs_done = 0;
	g->err = 0;
	pthread_cond_broadcast(&b->loaded); /* readers may help */
	pthread_mutex_unlock(&b->mu);
	if (b->conf.wake)
		b->conf.wake(b->conf.wake_arg); /* and background threads */
	pthread_mutex_lock(&b->mu);
	read_runs(b, g, a->scratch);
	while (g->runs_done < g->n_runs)
		pthread_cond_wait(&b->loaded, &b->mu);
	int ret = g->err;
	if (ret)
		*err = g->err_msg;
	g->buf = NULL;
	pthread_mutex_unlock(&b->mu);
	*len = g->len;
	return ret;
}

/* Read bag g (loading: its fields are ours) into a held entry. @return 0
 * with *ref, or -errno. */
static int read_bag(struct dlfs_bags *b, struct dlfs_txn *txn, struct bag *g,
		    uint8_t *scratch, struct dlfs_chunk_ref *ref)
{
	struct fill_arg fa = {b, g, scratch};
	struct dlfs_fetch_bag what = {fill_bag, &fa};
	struct dlfs_err err = {0};
	int ret;
	for (unsigned ms = 0;; ms += 2) {
		ret = dlfs_cache_prefetch(b->conf.cache,
					  dlfs_cache_bag_key(g->id), &what, txn,
					  DLFS_CACHE_PF_QUIET, ref, &err);
		if (ret != -EAGAIN || ms >= RETRY_MS)
			break;
		sleep_ms(2);
	}
	return ret; /* an error: the files' own reads meet it */
}

int dlfs_bags_load(struct dlfs_bags *b, struct dlfs_txn *txn, unsigned bag,
		   uint8_t *scratch)
{
	struct bag *g = &b->bags[bag]; /* loading: its fields are ours */
	struct dlfs_chunk_ref ref;
	int ret = -ENOMEM;
	if (!g->used && !(g->used = calloc(g->n_files / 8 + 1, 1)))
		goto dropped;
	if ((ret = read_bag(b, txn, g, scratch, &ref)) == -EAGAIN) {
		/* No entry free now: wait, its files planned still. */
		pthread_mutex_lock(&b->mu);
		g->state = BAG_PENDING;
		pthread_cond_broadcast(&b->loaded);
		pthread_mutex_unlock(&b->mu);
		return ret;
	}
	if (ret)
		goto dropped;
	pthread_mutex_lock(&b->mu);
	if (g->gen != b->gen) {
		pthread_mutex_unlock(&b->mu);
		dlfs_cache_put(b->conf.cache, &ref, 0);
		ret = 0;
		goto dropped;
	}
	g->left = check_files(b, g, ref.data);
	g->hold = ref;
	g->state = BAG_LIVE;
	atomic_fetch_add(&b->live, 1);
	atomic_fetch_add(&b->n_bags, 1);
	atomic_fetch_add(&b->n_files, g->left);
	if (!g->left) {
		struct dlfs_chunk_ref hold = let_go(b, g);
		dlfs_cache_put(b->conf.cache, &hold, 0);
	}
	pthread_cond_broadcast(&b->loaded);
	pthread_mutex_unlock(&b->mu);
	return 0;
dropped:
	drop(b, g);
	return ret ? ret : -ESTALE;
}

void dlfs_bags_help(struct dlfs_bags *b, unsigned bag, uint8_t *scratch)
{
	pthread_mutex_lock(&b->mu);
	read_runs(b, &b->bags[bag], scratch);
	pthread_mutex_unlock(&b->mu);
}

int dlfs_bags_get(struct dlfs_bags *b, uint64_t ino, int first,
		  struct dlfs_chunk_ref *ref, size_t *off)
{
	struct dlfs_chunk_ref done = {0};
	if (!atomic_load_explicit(&b->live, memory_order_relaxed))
		return -ENOENT;
	pthread_mutex_lock(&b->mu);
	struct ment *e = map_find(b, ino);
	/* Not loaded yet: the reader does not wait (a DataLoader worker
	 * that waits for a bag decodes nothing meanwhile: measured 479
	 * samples/s waiting, 631 reading such files alone). */
	if (!e || b->bags[e->bag].state != BAG_LIVE) {
		pthread_mutex_unlock(&b->mu);
		return -ENOENT;
	}
	struct bag *g = &b->bags[e->bag];
	uint32_t fi = e->file;
	uint64_t key = dlfs_cache_bag_key(g->id);
	*off = g->files[fi].off;
	if (first && !(g->used[fi / 8] & (1u << (fi % 8)))) {
		g->used[fi / 8] |= (uint8_t)(1u << (fi % 8));
		atomic_fetch_add(&b->hits, 1);
		if (--g->left == 0)
			done = let_go(b, g);
	}
	pthread_mutex_unlock(&b->mu);
	int ret = dlfs_cache_get_cached(b->conf.cache, key, ref);
	if (done.data) {
		dlfs_cache_put(b->conf.cache, &done, 0);
		if (b->conf.wake)
			b->conf.wake(b->conf.wake_arg);
	}
	return ret ? -ENOENT : 0;
}

void dlfs_bags_get_stats(struct dlfs_bags *b, struct dlfs_bags_stats *s)
{
	memset(s, 0, sizeof(*s));
	if (!b)
		return;
	s->bags = atomic_load(&b->n_bags);
	s->files = atomic_load(&b->n_files);
	s->runs = atomic_load(&b->n_runs);
	s->bytes = atomic_load(&b->n_bytes);
	s->hits = atomic_load(&b->hits);
	s->unread = atomic_load(&b->unread);
	s->bad = atomic_load(&b->bad);
	s->live = atomic_load(&b->live);
}
