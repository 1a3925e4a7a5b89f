/*
 * Epoch views: see views.h and views_priv.h. This file holds the views'
 * life, the orders kept, samples (their inodes, names and positions)
 * and the path table; the files lists are views_list.c, the planner
 * views_plan.c.
 */
#include "views_priv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dlfs/format.h"
#include "paths.h"

/* Paths a piece of a list renders at once (dlfs_views_conf.piece). A
 * piece of 8,192 left the first 10M-file list 1.1 times as slow: more
 * rounds of the helpers, and of FUSE reads waiting for a render. */
#define PIECE 65536
/* Helper threads that render a piece with the caller, at most (fewer on
 * fewer CPUs): on 2 CPUs, one helper rendered a 10M-file list in 0.95 s
 * instead of 1.27 s. */
#define RENDER_HELPERS 3

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
	dlfs_chunkmap_free(v->cmap);
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

/* The map, built once (caller holds mu). */
static int chunkmap_of(struct dlfs_views *v, struct dlfs_txn *txn,
		       struct dlfs_err *err)
{
	if (v->cmap)
		return 0;
	return dlfs_chunkmap_build(v->conf.ds, txn, v->cs, v->first_file,
				   v->n_files, &v->cmap, err);
}

/* views_priv.h */
void dlfs_views_order_conf(const struct dlfs_views *v,
			   struct dlfs_epoch_conf *oc)
{
	*oc = (struct dlfs_epoch_conf){
		.n_files = v->n_files, .mode = v->conf.mode,
		.seed = v->conf.seed, .rank = v->conf.rank,
		.size = v->conf.size, .window = v->conf.window,
		.n_chunks = v->cmap ? v->cmap->n_chunks : 0,
		.chunk_first = v->cmap ? v->cmap->first : NULL,
	};
}

/* views_priv.h */
int dlfs_views_order_of(struct dlfs_views *v, struct dlfs_txn *txn, uint64_t e,
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
	dlfs_views_order_conf(v, &oc);
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
	int ret = dlfs_views_order_of(v, txn, e, &o, err);
	if (!ret)
		*len = dlfs_epoch_share_len(o);
	pthread_mutex_unlock(&v->mu);
	return ret;
}

/* views_priv.h */
int dlfs_views_set_current(struct dlfs_views *v, uint64_t e)
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


int dlfs_views_sample(struct dlfs_views *v, struct dlfs_txn *txn, uint64_t e,
		      uint64_t j, int mark, uint64_t *ino,
		      struct dlfs_err *err)
{
	struct dlfs_epoch *o;
	int changed = 0;
	pthread_mutex_lock(&v->mu);
	int ret = dlfs_views_order_of(v, txn, e, &o, err);
	if (!ret && j >= dlfs_epoch_share_len(o))
		ret = dlfs_err_set(err, -ENOENT, "no sample %llu in epoch %llu",
				   (unsigned long long)j, (unsigned long long)e);
	if (!ret) {
		*ino = v->first_file +
		       dlfs_epoch_at(o, dlfs_epoch_share_start(o) + j);
		if (mark) {
			changed = dlfs_views_set_current(v, e);
			reader_at(v, j);
		}
	}
	pthread_mutex_unlock(&v->mu);
	if (changed && v->conf.reader)
		dlfs_reader_replan(v->conf.reader);
	return ret;
}

/* views_priv.h */
int dlfs_views_paths_of(struct dlfs_views *v, struct dlfs_txn *txn,
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
	int ret = dlfs_views_paths_of(v, txn, err);
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
	int ret = dlfs_views_order_of(v, txn, e, &o, err);
	if (!ret)
		ret = dlfs_views_paths_of(v, txn, err);
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


int dlfs_views_positions(struct dlfs_views *v, struct dlfs_txn *txn,
			 uint64_t e, const uint64_t *ino, size_t n,
			 uint64_t *j, struct dlfs_err *err)
{
	struct dlfs_epoch *o;
	pthread_mutex_lock(&v->mu);
	int ret = dlfs_views_order_of(v, txn, e, &o, err);
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
	int ret = dlfs_views_paths_of(v, txn, err);
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
	if (!dlfs_views_order_of(v, txn, e, &o, NULL)) {
		uint64_t pos = dlfs_epoch_position(o, ino - v->first_file);
		uint64_t s = dlfs_epoch_share_start(o);
		if (pos >= s && pos - s < dlfs_epoch_share_len(o))
			reader_at(v, pos - s);
	}
	pthread_mutex_unlock(&v->mu);
}
