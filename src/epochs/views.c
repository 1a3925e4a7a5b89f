/* Epoch views: see views.h. */
#include "views.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dlfs/format.h"
#include "paths.h"
#include "split.h"

#define ORDERS 4 /* epochs whose orders are kept */
/* Epochs whose list sizes and piece offsets are kept (a few KiB each):
 * a list whose slot was taken starts again from its first piece, so
 * readers of more epochs at once than this would render pieces again
 * and again. */
#define LISTS 16
/* Paths a piece of a list renders at once (dlfs_views_conf.piece). A
 * piece of 8,192 left the first 10M-file list 1.1 times as slow: more
 * rounds of the helpers, and of FUSE reads waiting for a render. */
#define PIECE 65536
#define PIECES 4   /* rendered pieces kept */
/* Helper threads that render a piece with the caller, at most (fewer on
 * fewer CPUs): on 2 CPUs, one helper rendered a 10M-file list in 0.95 s
 * instead of 1.27 s. */
#define RENDER_HELPERS 3
/* More than any path of an index can need (dlfs_paths_get: 4,097 levels
 * of DLFS_NAME_MAX bytes): growing past it would be a bug, not a path. */
#define PATH_ROOM_MAX (UINT64_C(4) << 20)

/* A list is rendered v->piece_n paths at a time, when read: its pieces'
 * offsets are known up to known (off[0 .. known] are set). */
struct list {
	uint64_t epoch; /* UINT64_MAX: empty */
	uint64_t size, n, pieces, known;
	uint64_t *off; /* pieces + 1 */
};

struct piece {
	struct list *list; /* NULL: empty */
	uint64_t k, tick;
	char *data;
	size_t len, cap;
};

/* Part of a piece as one thread renders it. */
struct part {
	uint64_t *ino; /* its files: room for a piece */
	char *data;
	size_t len, cap;
	int ret; /* 0, -ENOENT (a file has no path), -ENAMETOOLONG (past the
		  * limit), -ENOMEM */
};

struct chunkmap;
static void chunkmap_free(struct chunkmap *m);

struct dlfs_views {
	struct dlfs_views_conf conf;
	const struct dlfs_info *info;
	uint64_t n_files, first_file, cs;

	pthread_mutex_t mu; /* guards everything below */
	struct dlfs_epoch *orders[ORDERS];
	unsigned order_hand;
	struct dlfs_paths *paths;
	struct chunkmap *cmap;   /* built once: by the planner, or chunked */
	int cmap_failed;         /* the planner could not build it */
	struct list lists[LISTS];
	unsigned list_hand;
	struct piece piece[PIECES];
	uint64_t piece_tick;
	/* Rendering a piece: split between the caller and helper threads,
	 * part i of it into part[i] (split.h). */
	struct dlfs_split *split;
	struct part *part; /* dlfs_split_max_parts of them */
	uint64_t piece_n;  /* paths a piece */
	/* The planner (plan_next), which follows the reader. */
	uint64_t plan_epoch;        /* UINT64_MAX: nothing planned */
	uint64_t plan_pos;          /* next share position to look at */
	uint64_t plan_g, plan_g_end; /* chunks of the last file still to give */
	uint64_t reader_pos;        /* share position the reader reached */
	uint8_t *emitted;           /* n_chunks bits: given this epoch */
	uint32_t *uses;             /* n_chunks: share files per chunk */
	uint64_t uses_epoch;

	_Atomic uint64_t current;
};

static void free_parts(struct dlfs_views *v)
{
	for (unsigned i = 0; v->part && i < dlfs_split_max_parts(v->split);
	     i++) {
		free(v->part[i].ino);
		free(v->part[i].data);
	}
	free(v->part);
}

int dlfs_views_new(const struct dlfs_views_conf *conf, struct dlfs_views **out,
		   struct dlfs_err *err)
{
	struct dlfs_views *v = calloc(1, sizeof(*v));
	if (!v)
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	v->conf = *conf;
	v->piece_n = conf->piece ? conf->piece : PIECE;
	int bad = dlfs_split_new(dlfs_split_helpers_for_cpus(RENDER_HELPERS),
				 &v->split) ||
		  !(v->part = calloc(dlfs_split_max_parts(v->split),
				     sizeof(*v->part)));
	for (unsigned i = 0; !bad && i < dlfs_split_max_parts(v->split); i++)
		bad = !(v->part[i].ino = calloc(v->piece_n, sizeof(uint64_t)));
	if (bad) {
		free_parts(v);
		dlfs_split_free(v->split);
		free(v);
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	}
	if (!v->conf.size)
		v->conf.size = 1;
	if (!v->conf.window)
		v->conf.window = 1;
	v->info = dlfs_ds_info(conf->ds);
	v->n_files = v->info->super.n_files;
	v->first_file = v->info->super.first_file_ino;
	v->cs = v->info->super.chunk_size;
	for (int i = 0; i < LISTS; i++)
		v->lists[i].epoch = UINT64_MAX;
	v->plan_epoch = UINT64_MAX;
	v->uses_epoch = UINT64_MAX;
	atomic_init(&v->current, UINT64_MAX);
	pthread_mutex_init(&v->mu, NULL);
	*out = v;
	return 0;
}

void dlfs_views_free(struct dlfs_views *v)
{
	if (!v)
		return;
	for (int i = 0; i < ORDERS; i++)
		dlfs_epoch_free(v->orders[i]);
	for (int i = 0; i < LISTS; i++)
		free(v->lists[i].off);
	for (int i = 0; i < PIECES; i++)
		free(v->piece[i].data);
	free_parts(v);
	dlfs_split_free(v->split);
	dlfs_paths_free(v->paths);
	chunkmap_free(v->cmap);
	free(v->emitted);
	free(v->uses);
	pthread_mutex_destroy(&v->mu);
	free(v);
}

int dlfs_views_describe(const struct dlfs_views *v, char *buf, size_t len)
{
	return snprintf(buf, len,
			"\"shuffle\": \"%s\", \"seed\": %llu, "
			"\"seed_from\": \"%s\", "
			"\"shuffle_window\": %u, \"rank\": %u, \"ranks\": %u",
			dlfs_shuffle_name(v->conf.mode),
			(unsigned long long)v->conf.seed,
			v->conf.seed_from ? v->conf.seed_from : "option",
			v->conf.window,
			v->conf.rank, v->conf.size);
}

uint64_t dlfs_views_current(struct dlfs_views *v)
{
	return atomic_load_explicit(&v->current, memory_order_relaxed);
}

/*
 * Where every file's bytes lie, in global chunks, without the index:
 * files are in data order, so a file's first and last chunks grow with
 * it, and two arrays over the chunks give them for every file. Built by
 * one pass over the inodes, once a mount; immutable after.
 */
struct chunkmap {
	uint64_t n_chunks;
	uint64_t *first; /* n_chunks + 1: first file whose first chunk >= g */
	uint64_t *last;  /* n_chunks + 1: first file whose last chunk >= g */
	uint8_t *empty;  /* a bit a file: no bytes, so in no chunk */
	int ordered;     /* 0: the index breaks data order (use dlfs_stat) */
};

static void chunkmap_free(struct chunkmap *m)
{
	if (!m)
		return;
	free(m->first);
	free(m->last);
	free(m->empty);
	free(m);
}

struct cm_build {
	struct dlfs_views *v;
	struct chunkmap *m;
	uint64_t f, g, b, prev0, prev1;
};

/* One file of the pass, in data order. */
static int cm_add(void *arg, const struct dlfs_inode *in)
{
	struct cm_build *c = arg;
	struct chunkmap *m = c->m;
	uint64_t f = c->f++, k0, k1, n = m->n_chunks;
	if (!in->size) {
		m->empty[f / 8] |= (uint8_t)(1u << (f % 8));
		return 0;
	}
	dlfs_file_chunks(c->v->cs, in, 0, in->size, &k0, &k1);
	uint64_t base =
		dlfs_ds_container(c->v->conf.ds, in->container)->first_chunk;
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

static int chunkmap_build(struct dlfs_views *v, struct dlfs_txn *txn,
			  struct chunkmap **out, struct dlfs_err *err)
{
	uint64_t n = dlfs_ds_n_chunks(v->conf.ds);
	struct chunkmap *m = calloc(1, sizeof(*m));
	if (m) {
		m->first = malloc((n + 1) * sizeof(*m->first));
		m->last = malloc((n + 1) * sizeof(*m->last));
		m->empty = calloc(v->n_files / 8 + 1, 1);
	}
	if (!m || !m->first || !m->last || !m->empty) {
		chunkmap_free(m);
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	}
	m->n_chunks = n;
	m->ordered = 1;
	/* One pass over the files' inodes, a block of them a lookup. */
	struct cm_build c = {.v = v, .m = m};
	int ret = dlfs_stat_range(txn, v->first_file, v->n_files, cm_add, &c,
				  err);
	if (ret) {
		chunkmap_free(m);
		return ret;
	}
	while (c.g <= n)
		m->first[c.g++] = v->n_files;
	while (c.b <= n)
		m->last[c.b++] = v->n_files;
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
static int chunkmap_file(const struct chunkmap *m, uint64_t f, uint64_t *g0,
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

/* The map, built once (caller holds mu). */
static int chunkmap_of(struct dlfs_views *v, struct dlfs_txn *txn,
		       struct dlfs_err *err)
{
	if (v->cmap)
		return 0;
	return chunkmap_build(v, txn, &v->cmap, err);
}

/* The conf of this rank's orders (caller holds mu). */
static void order_conf(const struct dlfs_views *v, struct dlfs_epoch_conf *oc)
{
	*oc = (struct dlfs_epoch_conf){
		.n_files = v->n_files, .mode = v->conf.mode,
		.seed = v->conf.seed, .rank = v->conf.rank,
		.size = v->conf.size, .window = v->conf.window,
		.n_chunks = v->cmap ? v->cmap->n_chunks : 0,
		.chunk_first = v->cmap ? v->cmap->first : NULL,
	};
}

/* The order of epoch e (caller holds mu). */
static int order_of(struct dlfs_views *v, struct dlfs_txn *txn, uint64_t e,
		    struct dlfs_epoch **out, struct dlfs_err *err)
{
	for (int i = 0; i < ORDERS; i++)
		if (v->orders[i] && dlfs_epoch_epoch(v->orders[i]) == e) {
			*out = v->orders[i];
			return 0;
		}
	int ret;
	if (v->conf.mode == DLFS_SHUFFLE_CHUNKED &&
	    (ret = chunkmap_of(v, txn, err)))
		return ret;
	struct dlfs_epoch_conf oc;
	order_conf(v, &oc);
	struct dlfs_epoch *o;
	ret = dlfs_epoch_new(&oc, e, &o);
	if (ret)
		return dlfs_err_set(err, ret, "epoch %llu: cannot build its order",
				    (unsigned long long)e);
	unsigned i = v->order_hand++ % ORDERS;
	dlfs_epoch_free(v->orders[i]);
	v->orders[i] = o;
	*out = o;
	return 0;
}

int dlfs_views_share_len(struct dlfs_views *v, struct dlfs_txn *txn,
			 uint64_t e, uint64_t *len, struct dlfs_err *err)
{
	struct dlfs_epoch *o;
	pthread_mutex_lock(&v->mu);
	int ret = order_of(v, txn, e, &o, err);
	if (!ret)
		*len = dlfs_epoch_share_len(o);
	pthread_mutex_unlock(&v->mu);
	return ret;
}

/* Make e the current epoch (caller holds mu). @return 1 if it changed. */
static int set_current(struct dlfs_views *v, uint64_t e)
{
	if (atomic_load_explicit(&v->current, memory_order_relaxed) == e)
		return 0;
	atomic_store_explicit(&v->current, e, memory_order_relaxed);
	v->reader_pos = 0;
	return 1;
}

/* The reader is at share position j of the current epoch (caller holds
 * mu): the plan need not look behind it. */
static void reader_at(struct dlfs_views *v, uint64_t j)
{
	if (j > v->reader_pos)
		v->reader_pos = j;
}

/* Global chunks [*g0, *g1) holding file f; empty for an empty file.
 * From the map m when it can tell, else from the index. */
static int file_chunks_of(struct dlfs_views *v, struct dlfs_txn *txn,
			  const struct chunkmap *m, uint64_t f, uint64_t *g0,
			  uint64_t *g1)
{
	struct dlfs_inode in;
	uint64_t k0, k1;
	if (m && !chunkmap_file(m, f, g0, g1))
		return 0;
	*g0 = *g1 = 0;
	int ret = dlfs_stat(txn, v->first_file + f, &in, NULL);
	if (ret || !in.size)
		return ret;
	dlfs_file_chunks(v->cs, &in, 0, in.size, &k0, &k1);
	uint64_t base = dlfs_ds_container(v->conf.ds, in.container)->first_chunk;
	*g0 = base + k0;
	*g1 = base + k1 + 1;
	return 0;
}

/* Non-empty files among [lo, hi). */
static uint64_t count_full(const struct chunkmap *m, uint64_t lo, uint64_t hi)
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
			    const struct chunkmap *m,
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
				uses[g] = (uint32_t)count_full(
					m, m->last[g], m->first[g + 1]);
		return uses;
	}
	if (dlfs_epoch_new(oc, e, &o)) {
		free(uses);
		return NULL;
	}
	uint64_t start = dlfs_epoch_share_start(o);
	for (uint64_t j = 0; j < dlfs_epoch_share_len(o); j++)
		if (!file_chunks_of(v, txn, m, dlfs_epoch_at(o, start + j),
				    &g0, &g1))
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
	if (e == UINT64_MAX || order_of(v, txn, e, &o, NULL))
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
		struct chunkmap *m = NULL;
		int r = chunkmap_build(v, txn, &m, NULL);
		pthread_mutex_lock(&v->mu);
		if (r)
			v->cmap_failed = 1;
		else if (v->cmap)
			chunkmap_free(m);
		else
			v->cmap = m;
		if (dlfs_views_current(v) != e || order_of(v, txn, e, &o, NULL))
			goto out;
	}
	if (uses && v->uses_epoch != e) {
		struct dlfs_epoch_conf oc;
		const struct chunkmap *m = v->cmap; /* never replaced once set */
		order_conf(v, &oc);
		pthread_mutex_unlock(&v->mu);
		uint32_t *u = count_uses(v, txn, m, &oc, e);
		pthread_mutex_lock(&v->mu);
		if (!u || v->plan_epoch != e || dlfs_views_current(v) != e ||
		    order_of(v, txn, e, &o, NULL)) {
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

int dlfs_views_sample(struct dlfs_views *v, struct dlfs_txn *txn, uint64_t e,
		      uint64_t j, int mark, uint64_t *ino,
		      struct dlfs_err *err)
{
	struct dlfs_epoch *o;
	int changed = 0;
	pthread_mutex_lock(&v->mu);
	int ret = order_of(v, txn, e, &o, err);
	if (!ret && j >= dlfs_epoch_share_len(o))
		ret = dlfs_err_set(err, -ENOENT, "no sample %llu in epoch %llu",
				   (unsigned long long)j, (unsigned long long)e);
	if (!ret) {
		*ino = v->first_file +
		       dlfs_epoch_at(o, dlfs_epoch_share_start(o) + j);
		if (mark) {
			changed = set_current(v, e);
			reader_at(v, j);
		}
	}
	pthread_mutex_unlock(&v->mu);
	if (changed && v->conf.reader)
		dlfs_reader_replan(v->conf.reader);
	return ret;
}

static int paths_of(struct dlfs_views *v, struct dlfs_txn *txn,
		    struct dlfs_err *err)
{
	if (v->paths)
		return 0;
	int ret = dlfs_paths_build(txn, v->info, &v->paths, err);
	const char *msg;
	uint64_t n = ret ? 0 : dlfs_paths_unbound(v->paths, &msg);
	/* Damage is logged and counted once, when the table is built. */
	if (n && v->conf.reader) {
		char line[DLFS_ERR_MSG_MAX + 128];
		snprintf(line, sizeof(line),
			 "%s (%llu such entries left out of the epoch views)",
			 msg, (unsigned long long)n);
		dlfs_reader_index_error(v->conf.reader, -DLFS_ECORRUPT, line);
	}
	return ret;
}

int dlfs_views_read_mode(struct dlfs_views *v, struct dlfs_txn *txn,
			uint64_t ino, uint32_t mode, uint32_t *out,
			struct dlfs_err *err)
{
	pthread_mutex_lock(&v->mu);
	int ret = paths_of(v, txn, err);
	unsigned x = ret ? 0 : dlfs_paths_search(v->paths, ino);
	pthread_mutex_unlock(&v->mu);
	if (ret)
		return ret;
	/* An execute bit of a class, moved onto that class's read bit. */
	*out = mode & 0444 & (x << 2);
	return 0;
}

static unsigned digits(uint64_t n)
{
	unsigned d = 1;
	while (n >= 10) {
		n /= 10;
		d++;
	}
	return d;
}

/* The extension of file ino: its name from the last '.', or "". */
static void extension(const struct dlfs_paths *p, uint64_t ino,
		      char name[DLFS_NAME_MAX + 1], const char **ext,
		      size_t *len)
{
	int nlen = dlfs_paths_name(p, ino, name);
	*ext = "";
	*len = 0;
	for (size_t i = nlen > 0 ? (size_t)nlen : 0; i-- > 1;)
		if (name[i] == '.') {
			*ext = name + i;
			*len = (size_t)nlen - i;
			return;
		}
}

int dlfs_views_sample_name(struct dlfs_views *v, struct dlfs_txn *txn,
			   uint64_t e, uint64_t j, char *buf, size_t len,
			   struct dlfs_err *err)
{
	struct dlfs_epoch *o;
	char name[DLFS_NAME_MAX + 1];
	const char *ext;
	size_t elen;
	pthread_mutex_lock(&v->mu);
	int ret = order_of(v, txn, e, &o, err);
	if (!ret)
		ret = paths_of(v, txn, err);
	if (!ret && j >= dlfs_epoch_share_len(o))
		ret = -ENOENT;
	if (!ret) {
		uint64_t f = dlfs_epoch_at(o, dlfs_epoch_share_start(o) + j);
		uint64_t last = dlfs_epoch_share_len(o);
		extension(v->paths, v->first_file + f, name, &ext, &elen);
		int n = snprintf(buf, len, "%0*llu%.*s",
				 (int)digits(last ? last - 1 : 0),
				 (unsigned long long)j, (int)elen, ext);
		ret = n < 0 || (size_t)n >= len ? -ENAMETOOLONG : n;
	}
	pthread_mutex_unlock(&v->mu);
	return ret;
}

int dlfs_views_parse_name(struct dlfs_views *v, struct dlfs_txn *txn,
			  uint64_t e, const char *name, uint64_t *j,
			  struct dlfs_err *err)
{
	uint64_t n = 0;
	size_t i = 0;
	for (; name[i] >= '0' && name[i] <= '9'; i++) {
		if (n > (UINT64_MAX - 9) / 10)
			return -ENOENT;
		n = n * 10 + (uint64_t)(name[i] - '0');
	}
	if (!i)
		return -ENOENT;
	/* The one spelling the directory lists, nothing else. */
	char want[DLFS_NAME_MAX + 1];
	int ret = dlfs_views_sample_name(v, txn, e, n, want, sizeof(want), err);
	if (ret < 0)
		return ret == -ENAMETOOLONG ? -ENOENT : ret;
	if (strcmp(want, name))
		return -ENOENT;
	*j = n;
	return 0;
}

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
	int ret = order_of(v, txn, e, &o, err);
	if (!ret)
		ret = paths_of(v, txn, err);
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
					(unsigned long long)(v->first_file + f));
			}
			off[j / v->piece_n + 1] += (uint64_t)len + 1;
		}
		for (uint64_t k = 0; k < pieces; k++)
			off[k + 1] += off[k];
		known = pieces;
	}
	struct list *l = &v->lists[v->list_hand++ % LISTS];
	free(l->off);
	*l = (struct list){.epoch = e, .size = off[pieces], .n = n,
			   .pieces = pieces, .off = off, .known = known};
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
		int ret = pt->cap ? dlfs_paths_lines(r->v->paths, pt->ino, b - a,
						     pt->data, pt->cap, &pt->len)
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
	int ret = order_of(v, txn, l->epoch, &o, err);
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
	dlfs_split_run(v->split, r.n >= SPLIT_MIN ? dlfs_split_max_parts(v->split)
						  : 1,
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
	*changed = set_current(v, e);
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

int dlfs_views_positions(struct dlfs_views *v, struct dlfs_txn *txn,
			 uint64_t e, const uint64_t *ino, size_t n,
			 uint64_t *j, struct dlfs_err *err)
{
	struct dlfs_epoch *o;
	pthread_mutex_lock(&v->mu);
	int ret = order_of(v, txn, e, &o, err);
	if (!ret) {
		uint64_t s = dlfs_epoch_share_start(o);
		uint64_t len = dlfs_epoch_share_len(o);
		for (size_t i = 0; i < n; i++) {
			uint64_t f = ino[i] - v->first_file, pos;
			j[i] = UINT64_MAX;
			if (ino[i] < v->first_file || f >= v->n_files)
				continue;
			pos = dlfs_epoch_position(o, f);
			if (pos >= s && pos - s < len)
				j[i] = pos - s;
		}
	}
	pthread_mutex_unlock(&v->mu);
	return ret;
}

int dlfs_views_paths(struct dlfs_views *v, struct dlfs_txn *txn,
		     const struct dlfs_paths **out, struct dlfs_err *err)
{
	pthread_mutex_lock(&v->mu);
	int ret = paths_of(v, txn, err);
	*out = v->paths;
	pthread_mutex_unlock(&v->mu);
	return ret;
}

void dlfs_views_note_read(void *arg, struct dlfs_txn *txn, uint64_t ino)
{
	struct dlfs_views *v = arg;
	uint64_t e = dlfs_views_current(v);
	if (e == UINT64_MAX || ino < v->first_file ||
	    ino - v->first_file >= v->n_files)
		return;
	struct dlfs_epoch *o;
	pthread_mutex_lock(&v->mu);
	if (!order_of(v, txn, e, &o, NULL)) {
		uint64_t pos = dlfs_epoch_position(o, ino - v->first_file);
		uint64_t s = dlfs_epoch_share_start(o);
		if (pos >= s && pos - s < dlfs_epoch_share_len(o))
			reader_at(v, pos - s);
	}
	pthread_mutex_unlock(&v->mu);
}
