/* Chunk or file reads: see grain.h. */
#include "grain.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#define UPDATE_EVERY 32   /* decisions between two looks at the counters */
#define MIN_CHUNKS 8      /* evictions before a measure counts */
#define WINDOW_CHUNKS 256 /* the ghost's measure forgets older loads */
#define WAYS 8            /* the ghost's associativity */

/* The ghost is set-associative, LRU within a set of WAYS: close to the
 * RAM tier's CLOCK over all its slots. A direct-mapped ghost is not: with
 * a dataset just larger than the tier, keys collide in a third of its
 * slots, and it reported 99% of chunk loads wasted where the tier wastes
 * almost nothing. */
struct ghost {
	uint64_t key; /* 0: empty (chunk keys are never 0 with len > 0) */
	uint64_t served, len;
	uint64_t used; /* the ghost's clock at the last touch */
};

struct dlfs_grain {
	struct dlfs_grain_conf conf;
	_Atomic int file_mode;
	_Atomic uint64_t decisions;

	pthread_mutex_t mu; /* guards the rest */
	struct ghost *ghost;
	unsigned n_sets, ways; /* n_sets * ways <= the tier's slots */
	uint64_t clock;
	uint64_t g_loaded, g_unused;       /* the ghost's recent window */
	uint64_t tot_loaded, tot_unused;   /* and since the start */
	uint64_t last_evicted, last_unused; /* real cache, at the last look */
	uint64_t switches, file_reads;
};

/* Can the tiers hold the whole dataset? */
static int fits(const struct dlfs_grain *g)
{
	struct dlfs_cache_stats cs;
	uint64_t used = 0, cap = 0;
	dlfs_cache_get_stats(g->conf.cache, &cs);
	if (g->conf.nvme)
		dlfs_nvme_usage(g->conf.nvme, &used, &cap);
	return g->conf.data_bytes <= cs.capacity_bytes + cap;
}

int dlfs_grain_new(const struct dlfs_grain_conf *conf,
		   struct dlfs_grain **out)
{
	struct dlfs_grain *g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	g->conf = *conf;
	unsigned slots = dlfs_cache_slots(conf->cache);
	g->ways = slots < WAYS ? (slots ? slots : 1) : WAYS;
	g->n_sets = slots / g->ways ? slots / g->ways : 1;
	g->ghost = calloc((size_t)g->n_sets * g->ways, sizeof(*g->ghost));
	if (!g->ghost) {
		free(g);
		return -ENOMEM;
	}
	pthread_mutex_init(&g->mu, NULL);
	atomic_init(&g->file_mode, conf->unit == DLFS_UNIT_FILE ||
					   (conf->unit == DLFS_UNIT_AUTO &&
					    !fits(g)));
	*out = g;
	return 0;
}

void dlfs_grain_free(struct dlfs_grain *g)
{
	if (!g)
		return;
	pthread_mutex_destroy(&g->mu);
	free(g->ghost);
	free(g);
}

/* Look at the measures and switch modes if they say so (holds mu). */
static void update(struct dlfs_grain *g)
{
	struct dlfs_cache_stats cs;
	dlfs_cache_get_stats(g->conf.cache, &cs);
	uint64_t ev = cs.evicted_bytes - g->last_evicted;
	uint64_t un = cs.evicted_unused_bytes - g->last_unused;
	int file = atomic_load(&g->file_mode);
	if (!file && ev >= MIN_CHUNKS * g->conf.chunk_size) {
		/* Chunk mode: more than a third of evicted bytes unused
		 * means the PFS reads over 1.5x what is served. */
		if (3 * un > ev) {
			file = 1;
			g->g_loaded = g->g_unused = 0;
		}
		g->last_evicted = cs.evicted_bytes;
		g->last_unused = cs.evicted_unused_bytes;
	} else if (file && g->g_loaded >= MIN_CHUNKS * g->conf.chunk_size &&
		   5 * g->g_unused < g->g_loaded) {
		file = 0;
		g->last_evicted = cs.evicted_bytes;
		g->last_unused = cs.evicted_unused_bytes;
	}
	if (file != atomic_load(&g->file_mode)) {
		g->switches++;
		atomic_store(&g->file_mode, file);
	}
}

int dlfs_grain_file_mode(struct dlfs_grain *g, const struct dlfs_inode *in)
{
	if (g->conf.unit == DLFS_UNIT_CHUNK || in->size > g->conf.chunk_size / 2)
		return 0;
	if (g->conf.unit == DLFS_UNIT_FILE)
		return 1;
	if (atomic_fetch_add_explicit(&g->decisions, 1,
				      memory_order_relaxed) %
		    UPDATE_EVERY ==
	    0) {
		pthread_mutex_lock(&g->mu);
		update(g);
		pthread_mutex_unlock(&g->mu);
	}
	return atomic_load_explicit(&g->file_mode, memory_order_relaxed);
}

void dlfs_grain_note_file(struct dlfs_grain *g, const struct dlfs_inode *in,
			  uint64_t k, uint64_t chunk_len)
{
	uint64_t key = dlfs_cache_chunk_key(in->container, k) + 1;
	uint64_t h = key * 0x9E3779B97F4A7C15ULL;
	pthread_mutex_lock(&g->mu);
	g->file_reads++;
	g->clock++;
	struct ghost *set = &g->ghost[(size_t)((h >> 32) % g->n_sets) * g->ways];
	struct ghost *e = NULL, *lru = &set[0];
	for (unsigned w = 0; w < g->ways && !e; w++) {
		if (set[w].key == key)
			e = &set[w];
		else if (set[w].used < lru->used)
			lru = &set[w];
	}
	if (e) {
		e->served += in->size;
		e->used = g->clock;
	} else {
		e = lru;
		if (e->len) {
			/* What chunk mode would have loaded, and wasted. */
			uint64_t unused =
				e->served < e->len ? e->len - e->served : 0;
			g->g_loaded += e->len;
			g->g_unused += unused;
			g->tot_loaded += e->len;
			g->tot_unused += unused;
			if (g->g_loaded > WINDOW_CHUNKS * g->conf.chunk_size) {
				g->g_loaded /= 2;
				g->g_unused /= 2;
			}
		}
		*e = (struct ghost){key, in->size, chunk_len, g->clock};
	}
	pthread_mutex_unlock(&g->mu);
}

void dlfs_grain_get_stats(struct dlfs_grain *g, struct dlfs_grain_stats *s)
{
	pthread_mutex_lock(&g->mu);
	s->file_mode = atomic_load(&g->file_mode);
	s->switches = g->switches;
	s->file_reads = g->file_reads;
	s->ghost_loaded = g->tot_loaded;
	s->ghost_unused = g->tot_unused;
	pthread_mutex_unlock(&g->mu);
}
