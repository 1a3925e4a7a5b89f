/* Epoch orders: see order.h. */
#include "order.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

struct dlfs_epoch {
	uint64_t n, epoch, start, len;
	enum dlfs_shuffle mode;
	uint64_t seed;
	uint32_t rank, size;
	struct dlfs_perm perm; /* GLOBAL: files; CHUNKED: chunks; LOCAL: share */
	/* CHUNKED */
	uint32_t window;
	uint64_t n_chunks, n_windows;
	uint64_t *chunk_first; /* n_chunks + 1 */
	uint64_t *win_start;   /* n_windows + 1: first position of each */
};

static uint64_t share_bound(uint64_t n, uint32_t r, uint32_t w)
{
	/* r * n / w without overflow for n < 2^64 / 2^32. */
	return (uint64_t)((unsigned __int128)n * r / w);
}

/* LOCAL: the shard holding position (or file) x: its first position, and
 * its permutation (each shard has its own key). */
static uint64_t shard_of(const struct dlfs_epoch *o, uint64_t x,
			 struct dlfs_perm *p)
{
	uint32_t r = (uint32_t)((unsigned __int128)x * o->size / o->n);
	while (r + 1 < o->size && share_bound(o->n, r + 1, o->size) <= x)
		r++;
	while (r > 0 && share_bound(o->n, r, o->size) > x)
		r--;
	uint64_t s = share_bound(o->n, r, o->size);
	dlfs_perm_init(p, share_bound(o->n, r + 1, o->size) - s,
		       o->seed + r + 1, o->epoch);
	return s;
}

/* Files whose first byte is in global chunk g. */
static uint64_t chunk_files(const struct dlfs_epoch *o, uint64_t g)
{
	return o->chunk_first[g + 1] - o->chunk_first[g];
}

static void window_perm(const struct dlfs_epoch *o, uint64_t j,
			struct dlfs_perm *p)
{
	dlfs_perm_init(p, o->win_start[j + 1] - o->win_start[j],
		       o->seed ^ (UINT64_C(0x9e3779b97f4a7c15) * (j + 1)),
		       o->epoch);
}

/*
 * chunk_first splits the files [0, n) into the chunks' runs, every file
 * in one: it starts at 0, never falls, and ends at n. Anything else
 * would make the chunked order skip some files and repeat others. With
 * no chunks (every file empty) there is nothing to split: [0] is n.
 */
static int partition_ok(const uint64_t *first, uint64_t n_chunks, uint64_t n)
{
	if (first[n_chunks] != n || (n_chunks && first[0] != 0))
		return 0;
	for (uint64_t g = 0; g < n_chunks; g++)
		if (first[g] > first[g + 1])
			return 0;
	return 1;
}

int dlfs_epoch_new(const struct dlfs_epoch_conf *conf, uint64_t epoch,
		   struct dlfs_epoch **out)
{
	*out = NULL;
	if (!conf->size || conf->rank >= conf->size)
		return -EINVAL;
	if (conf->mode == DLFS_SHUFFLE_CHUNKED &&
	    (!conf->window || !conf->chunk_first ||
	     !partition_ok(conf->chunk_first, conf->n_chunks, conf->n_files)))
		return -EINVAL;
	struct dlfs_epoch *o = calloc(1, sizeof(*o));
	if (!o)
		return -ENOMEM;
	o->n = conf->n_files;
	o->epoch = epoch;
	o->mode = conf->mode;
	o->seed = conf->seed;
	o->rank = conf->rank;
	o->size = conf->size;
	o->start = share_bound(o->n, conf->rank, conf->size);
	o->len = share_bound(o->n, conf->rank + 1, conf->size) - o->start;
	if (o->mode == DLFS_SHUFFLE_CHUNKED && !conf->n_chunks)
		o->mode = DLFS_SHUFFLE_GLOBAL; /* no bytes: no chunks to keep */
	switch (o->mode) {
	case DLFS_SHUFFLE_GLOBAL:
		dlfs_perm_init(&o->perm, o->n, o->seed, epoch);
		break;
	case DLFS_SHUFFLE_LOCAL:
		/* Each shard has its own key, so shards are independent. */
		dlfs_perm_init(&o->perm, o->len, o->seed + conf->rank + 1,
			       epoch);
		break;
	case DLFS_SHUFFLE_CHUNKED:
		o->window = conf->window;
		o->n_chunks = conf->n_chunks;
		o->n_windows = (o->n_chunks + o->window - 1) / o->window;
		o->chunk_first = malloc((o->n_chunks + 1) * sizeof(uint64_t));
		o->win_start = malloc((o->n_windows + 1) * sizeof(uint64_t));
		if (!o->chunk_first || !o->win_start) {
			dlfs_epoch_free(o);
			return -ENOMEM;
		}
		memcpy(o->chunk_first, conf->chunk_first,
		       (o->n_chunks + 1) * sizeof(uint64_t));
		dlfs_perm_init(&o->perm, o->n_chunks, o->seed, epoch);
		o->win_start[0] = 0;
		for (uint64_t j = 0; j < o->n_windows; j++) {
			uint64_t files = 0;
			for (uint64_t i = j * o->window;
			     i < (j + 1) * o->window && i < o->n_chunks; i++)
				files += chunk_files(o,
						     dlfs_perm_at(&o->perm, i));
			o->win_start[j + 1] = o->win_start[j] + files;
		}
		break;
	default:
		free(o);
		return -EINVAL;
	}
	*out = o;
	return 0;
}

void dlfs_epoch_free(struct dlfs_epoch *o)
{
	if (!o)
		return;
	free(o->chunk_first);
	free(o->win_start);
	free(o);
}

uint64_t dlfs_epoch_epoch(const struct dlfs_epoch *o)
{
	return o->epoch;
}

uint64_t dlfs_epoch_share_start(const struct dlfs_epoch *o)
{
	return o->start;
}

uint64_t dlfs_epoch_share_len(const struct dlfs_epoch *o)
{
	return o->len;
}

uint64_t dlfs_epoch_at(const struct dlfs_epoch *o, uint64_t pos)
{
	switch (o->mode) {
	case DLFS_SHUFFLE_GLOBAL:
		return dlfs_perm_at(&o->perm, pos);
	case DLFS_SHUFFLE_LOCAL:
		/* Rank r's shard is its own share of data order. */
		if (pos >= o->start && pos - o->start < o->len)
			return o->start + dlfs_perm_at(&o->perm, pos - o->start);
		{
			/* Another rank's share: its shard, its own key. */
			struct dlfs_perm p;
			uint64_t s = shard_of(o, pos, &p);
			return s + dlfs_perm_at(&p, pos - s);
		}
	case DLFS_SHUFFLE_CHUNKED: {
		/* The window holding pos: the last start <= pos. */
		uint64_t lo = dlfs_last_le(o->win_start, o->n_windows, pos);
		struct dlfs_perm wp;
		window_perm(o, lo, &wp);
		uint64_t m = dlfs_perm_at(&wp, pos - o->win_start[lo]);
		for (uint64_t i = lo * o->window;; i++) {
			uint64_t g = dlfs_perm_at(&o->perm, i);
			uint64_t c = chunk_files(o, g);
			if (m < c)
				return o->chunk_first[g] + m;
			m -= c;
		}
	}
	}
	return 0;
}

void dlfs_epoch_at_many(const struct dlfs_epoch *o, uint64_t pos, size_t n,
			uint64_t *out)
{
	if (o->mode == DLFS_SHUFFLE_GLOBAL) {
		dlfs_perm_at_many(&o->perm, pos, n, out);
		return;
	}
	if (o->mode == DLFS_SHUFFLE_LOCAL && pos >= o->start &&
	    pos - o->start + n <= o->len) {
		dlfs_perm_at_many(&o->perm, pos - o->start, n, out);
		for (size_t i = 0; i < n; i++)
			out[i] += o->start;
		return;
	}
	for (size_t i = 0; i < n; i++)
		out[i] = dlfs_epoch_at(o, pos + i);
}

uint64_t dlfs_epoch_position(const struct dlfs_epoch *o, uint64_t f)
{
	switch (o->mode) {
	case DLFS_SHUFFLE_GLOBAL:
		return dlfs_perm_index(&o->perm, f);
	case DLFS_SHUFFLE_LOCAL: {
		struct dlfs_perm p;
		uint64_t s = shard_of(o, f, &p);
		return s + dlfs_perm_index(&p, f - s);
	}
	case DLFS_SHUFFLE_CHUNKED: {
		/* The chunk of f: the last g with chunk_first[g] <= f (chunks
		 * of a big file's tail hold no file of their own). */
		uint64_t lo = dlfs_last_le(o->chunk_first, o->n_chunks, f);
		uint64_t i = dlfs_perm_index(&o->perm, lo);
		uint64_t j = i / o->window, m = f - o->chunk_first[lo];
		for (uint64_t q = j * o->window; q < i; q++)
			m += chunk_files(o, dlfs_perm_at(&o->perm, q));
		struct dlfs_perm wp;
		window_perm(o, j, &wp);
		return o->win_start[j] + dlfs_perm_index(&wp, m);
	}
	}
	return 0;
}

const char *dlfs_shuffle_name(enum dlfs_shuffle m)
{
	return m == DLFS_SHUFFLE_CHUNKED ? "chunked"
	       : m == DLFS_SHUFFLE_LOCAL ? "local"
					 : "global";
}

int dlfs_shuffle_parse(const char *s, enum dlfs_shuffle *m)
{
	if (!strcmp(s, "global"))
		*m = DLFS_SHUFFLE_GLOBAL;
	else if (!strcmp(s, "chunked"))
		*m = DLFS_SHUFFLE_CHUNKED;
	else if (!strcmp(s, "local"))
		*m = DLFS_SHUFFLE_LOCAL;
	else
		return -EINVAL;
	return 0;
}

uint64_t dlfs_epoch_default_seed(const uint8_t *dataset_id, size_t len)
{
	/* The salt is "dlfsseed": the id's own hash is not reused. */
	return XXH3_64bits_withSeed(dataset_id, len, UINT64_C(0x646c667373656564));
}
