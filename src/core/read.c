/*
 * The read core's reader: see src/core/reader.h and read.h. This file
 * holds the reader's life (open, start, stop, close, its hooks), the
 * contexts its reading threads hold (read.h), and what it shares
 * and reports (the shared memory's names, the tiers' snapshot). One
 * read is read_path.c; what a reader is told of a failure,
 * read_errors.c.
 */
#include "read.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <syslog.h>
#include <unistd.h>

#include "util.h"

/* ---- setting up ---- */

/* The shared memory of conf.share, sized for the RAM tier and ds. */
static int open_share(struct dlfs_reader *r, struct dlfs_err *err)
{
	const struct dlfs_info *info = dlfs_ds_info(r->ds);
	uint32_t nc = (uint32_t)info->super.n_containers;
	uint64_t *first = calloc(nc ? nc : 1, sizeof(*first));
	if (!first)
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	for (uint32_t c = 0; c < nc; c++)
		first[c] = dlfs_ds_container(r->ds, c)->first_chunk;
	uint64_t n = dlfs_cache_n_slots(r->chunk_size, r->conf.ram_cache);
	struct dlfs_share_conf sc = {
		.n_slots = (uint32_t)n,
		.slot_size = dlfs_cache_slot_bytes(r->chunk_size),
		.table_size = dlfs_cache_table_size(n),
		.chunk_size = r->chunk_size,
		.data_off = dlfs_chunk_start(r->chunk_size, 0),
		.n_chunks = dlfs_ds_n_chunks(r->ds),
		.n_inodes = info->super.n_inodes + 1,
		.n_containers = nc,
		.first = first,
	};
	int ret = n > (1u << 24) ? dlfs_err_set(err, -EINVAL,
						"ram cache of %llu chunks is "
						"too many",
						(unsigned long long)n)
				 : dlfs_share_new(&sc, &r->share, err);
	free(first);
	if (ret)
		dlfs_err_prefix(err, "shared memory for readers outside");
	else if (!dlfs_share_sealed(r->share))
		dlfs_logf(r->conf.log, r->conf.log_arg, LOG_WARNING,
			  "shared memory: this kernel cannot seal it against "
			  "writes (F_SEAL_FUTURE_WRITE, Linux 5.1): clients "
			  "are served by requests, not from the shared tiers");
	return ret;
}

/* The RAM tier, in the shared memory when there is one. */
static int open_cache(struct dlfs_reader *r, struct dlfs_err *err)
{
	if (!r->share)
		return dlfs_cache_new(r->chunk_size, r->conf.ram_cache,
				      dlfs_fetch_load, &r->fetch, &r->cache,
				      err);
	struct dlfs_shm_head *h = dlfs_share_head(r->share);
	uint8_t *meta = dlfs_share_meta(r->share);
	uint8_t *rw = dlfs_share_rw(r->share);
	struct dlfs_cache_place p = {
		.bufs = dlfs_share_data(r->share),
		.table = (uint32_t *)(meta + h->table_off),
		.pub = (struct dlfs_shm_slot *)(meta + h->slots_off),
		.use = (struct dlfs_shm_use *)(rw + h->use_off),
	};
	dlfs_fetch_place_files(&r->fetch, (uint64_t *)(rw + h->file_ok_off));
	return dlfs_cache_new_placed(r->chunk_size, r->conf.ram_cache,
				     dlfs_fetch_load, &r->fetch, &p, &r->cache,
				     err);
}

/* The NVMe tier in r->cache_dir. -EBUSY: another mount has it. */
static int open_nvme(struct dlfs_reader *r, struct dlfs_err *err)
{
	const struct dlfs_info *info = dlfs_ds_info(r->ds);
	uint32_t nc = (uint32_t)info->super.n_containers;
	struct dlfs_nvme_conf c = {
		.dir = r->cache_dir,
		.capacity = r->conf.cache_size, /* 0: the tier's default */
		.policy = r->conf.cache_policy == DLFS_POLICY_LRU
				  ? DLFS_NVME_LRU
				  : DLFS_NVME_KEEP,
		.dataset_id_hex = info->dataset_id_hex,
		.chunk_size = info->super.chunk_size,
		.short_chunks = !!(info->super.features &
				   DLFS_FEATURE(IN_PLACE)),
		.n_containers = nc,
		.containers = dlfs_ds_container(r->ds, 0),
		.log = r->conf.log,
		.log_arg = r->conf.log_arg,
	};
	if (!nc)
		return 0;
	if (r->share) {
		struct dlfs_shm_head *h = dlfs_share_head(r->share);
		c.shared_st = dlfs_share_meta(r->share) + h->nv_st_off;
		c.shared_seq =
			(uint64_t *)(dlfs_share_meta(r->share) + h->nv_seq_off);
	}
	int ret = dlfs_nvme_open(&c, &r->nvme, err);
	if (!ret && !r->conf.cache_size) {
		uint64_t used;
		dlfs_nvme_usage(r->nvme, &used, &r->conf.cache_size);
	}
	return ret;
}

/* The NVMe tier under the cache directory, or none when another
 * process holds it (-EBUSY: said, and not an error). @return 0 or -errno
 * with err. */
static int nvme_tier(struct dlfs_reader *r, struct dlfs_err *err)
{
	int ret = open_nvme(r, err);
	if (ret == -EBUSY) {
		dlfs_logf(r->conf.log, r->conf.log_arg, LOG_WARNING,
			  "%s: running without the NVMe tier", err->msg);
		dlfs_err_clear(err);
		ret = 0;
	}
	if (ret)
		return ret;
	r->fetch.nvme = r->nvme;
	if (r->share && r->nvme)
		dlfs_share_set_nvme(r->share, 1);
	return 0;
}

int dlfs_reader_open(struct dlfs_ds *ds, const struct dlfs_reader_conf *conf,
		     struct dlfs_reader **out, struct dlfs_err *err)
{
	int ret;
	*out = NULL;
	const struct dlfs_info *info = dlfs_ds_info(ds);
	uint64_t cs = info->super.chunk_size;
	if (conf->ram_cache < 2 * cs)
		return dlfs_err_set(err, -EINVAL,
				    "the RAM tier must hold at least two chunks "
				    "(%llu bytes)",
				    (unsigned long long)(2 * cs));
	/* An in-place dataset's archives must be the ones indexed: refused
	 * now, by name, rather than EIO for every chunk of a changed one. */
	if ((ret = dlfs_ds_check_archives(ds, err)))
		return ret;
	struct dlfs_reader *r = calloc(1, sizeof(*r));
	if (!r)
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	r->ds = ds;
	r->conf = *conf;
	r->chunk_size = cs;
	/* A compressed dataset's file cannot be read alone from its
	 * container: its chunk has to be read, decompressed whole and
	 * checked. (An in-place dataset's can: dlfs_file_read_alone.) */
	if (info->super.features & DLFS_FEATURE(COMPRESSED)) {
		if (conf->read_unit == DLFS_UNIT_FILE)
			dlfs_logf(conf->log, conf->log_arg, LOG_NOTICE,
				  "read_unit=file: the dataset is "
				  "compressed, its chunks are read whole");
		r->conf.read_unit = DLFS_UNIT_CHUNK;
	}
	pthread_mutex_init(&r->log_lock, NULL);
	dlfs_stats_init(&r->stats);
	for (uint32_t c = 0; c < info->super.n_containers; c++)
		r->data_bytes += dlfs_ds_container(ds, c)->data_size;
	r->home_hi = dlfs_ds_n_chunks(ds);
	if (conf->cache_dir && !(r->cache_dir = strdup(conf->cache_dir))) {
		ret = dlfs_err_set(err, -ENOMEM, "out of memory");
		goto fail;
	}
	r->conf.cache_dir = r->cache_dir;
	if ((ret = dlfs_fetch_init(&r->fetch, ds, &r->stats))) {
		dlfs_err_set(err, ret, "out of memory");
		goto fail;
	}
	if (conf->share && (ret = open_share(r, err)))
		goto fail;
	if ((ret = open_cache(r, err)))
		goto fail;
	if (r->cache_dir && (ret = nvme_tier(r, err)))
		goto fail;
	struct dlfs_prefetch_conf pc = {
		.cache = r->cache,
		.ds = ds,
		.window_max = conf->pfs_depth ? conf->readahead : 0,
	};
	if ((ret = dlfs_prefetch_new(&pc, &r->prefetch, err)))
		goto fail;
	struct dlfs_grain_conf gc = {
		.unit = r->conf.read_unit,
		.chunk_size = cs,
		.data_bytes = r->data_bytes,
		.cache = r->cache,
		.nvme = r->nvme,
	};
	if ((ret = dlfs_grain_new(&gc, &r->grain))) {
		dlfs_err_set(err, ret, "out of memory");
		goto fail;
	}
	*out = r;
	return 0;
fail:
	dlfs_reader_close(r);
	return ret;
}

void dlfs_reader_set_peer(struct dlfs_reader *r,
			  const struct dlfs_fetch_peer *p, uint64_t home_lo,
			  uint64_t home_hi)
{
	r->fetch.peer = p;
	r->home_lo = home_lo;
	r->home_hi = home_hi;
}

/* A reader outside read file ino from its start: what dlfs_read does
 * then for its own (the outside thread, with its own context). */
static void seen_outside(void *arg, uint64_t ino)
{
	struct dlfs_reader *r = arg;
	struct dlfs_reader_ctx *x = r->seen_ctx;
	struct dlfs_err err = {0};
	struct dlfs_inode in;
	uint64_t kf, kl;
	atomic_fetch_add_explicit(&r->seen, 1, memory_order_relaxed);
	if (dlfs_stat(x->txn, ino, &in, &err) || !S_ISREG(in.mode))
		return;
	if (r->observer)
		r->observer(r->observer_arg, x->txn, ino);
	if (!r->fill || !in.size)
		return;
	const uint64_t g0 = dlfs_ds_container(r->ds, in.container)->first_chunk;
	dlfs_file_chunks(r->chunk_size, &in, 0, in.size, &kf, &kl);
	for (uint64_t k = kf; k <= kl; k++)
		dlfs_fill_used(r->fill, g0 + k);
}

static int start_outside(struct dlfs_reader *r, struct dlfs_err *err)
{
	if (!r->share)
		return 0;
	int ret = dlfs_reader_ctx_new(r, &r->seen_ctx, err);
	if (!ret)
		ret = dlfs_outside_start(r->share, seen_outside, r, &r->outside,
					 err);
	return ret;
}

int dlfs_reader_start(struct dlfs_reader *r, struct dlfs_err *err)
{
	int ret;
	if (r->nvme && (ret = dlfs_nvme_start(r->nvme, err)))
		return ret;
	/* As many as the PFS reads in flight that demand misses may want;
	 * without background reads, one per CPU. */
	if (r->fetch.compressed) {
		long cpus = sysconf(_SC_NPROCESSORS_ONLN);
		unsigned n = r->conf.pfs_depth ? r->conf.pfs_depth
				 : cpus > 0    ? (unsigned)cpus
					       : 1;
		if ((ret = dlfs_decode_start(r->ds, n, &r->decode, err)))
			return ret;
		r->fetch.decode = r->decode;
	}
	if ((ret = start_outside(r, err)))
		return ret;
	if (!r->conf.pfs_depth) {
		if (r->conf.fill == DLFS_FILL_HOME || r->conf.fill == DLFS_FILL_ALL)
			return dlfs_err_set(err, -EINVAL,
					    "staging needs background reads "
					    "(pfs_depth > 0)");
		return 0;
	}
	struct dlfs_cache_stats cs;
	dlfs_cache_get_stats(r->cache, &cs);
	struct dlfs_fill_conf fc = {
		.cache = r->cache,
		.fetch = &r->fetch,
		.depth = r->conf.pfs_depth,
		.mode = r->conf.fill,
		.home_lo = r->home_lo,
		.home_hi = r->home_hi,
		/* Files read ahead in bags: only where a file can be read
		 * alone and the RAM tier is the only tier, too small. */
		.bags = !r->fetch.compressed && !r->nvme &&
			r->data_bytes > cs.capacity_bytes,
	};
	if ((ret = dlfs_fill_new(&fc, &r->fill, err)))
		return ret;
	if (r->file_planner)
		dlfs_fill_set_file_planner(r->fill, r->file_planner,
					   r->file_planner_arg);
	if (r->planner)
		dlfs_fill_set_planner(r->fill, r->planner, r->planner_arg);
	dlfs_prefetch_set_fill(r->prefetch, r->fill);
	return dlfs_fill_start(r->fill, err);
}

void dlfs_reader_stop(struct dlfs_reader *r)
{
	/* It calls into the views and the fill: it goes first. */
	dlfs_outside_stop(r->outside);
	r->outside = NULL;
	dlfs_reader_ctx_free(r->seen_ctx);
	r->seen_ctx = NULL;
	/* Read-ahead feeds the background reads: unhook it first. */
	dlfs_prefetch_set_fill(r->prefetch, NULL);
	dlfs_fill_free(r->fill);
	r->fill = NULL;
}

void dlfs_reader_close(struct dlfs_reader *r)
{
	if (!r)
		return;
	/* Background reads use the cache and the tier: they go first. */
	dlfs_reader_stop(r);
	/* After every reader and the peers: they may wait on it. */
	r->fetch.decode = NULL;
	dlfs_decode_free(r->decode);
	dlfs_prefetch_free(r->prefetch);
	dlfs_nvme_close(r->nvme);
	dlfs_grain_free(r->grain);
	dlfs_cache_free(r->cache);
	dlfs_fetch_destroy(&r->fetch);
	dlfs_share_free(r->share); /* after everything placed in it */
	pthread_mutex_destroy(&r->log_lock);
	free(r->cache_dir);
	free(r);
}

void dlfs_reader_set_observer(struct dlfs_reader *r, dlfs_read_observer_fn fn,
			      void *arg)
{
	r->observer = fn;
	r->observer_arg = arg;
}

void dlfs_reader_set_planner(struct dlfs_reader *r, dlfs_plan_next_fn fn,
			     void *arg)
{
	r->planner = fn;
	r->planner_arg = arg;
	if (r->fill)
		dlfs_fill_set_planner(r->fill, fn, arg);
}

void dlfs_reader_set_file_planner(struct dlfs_reader *r,
				  dlfs_plan_files_fn fn, void *arg)
{
	r->file_planner = fn;
	r->file_planner_arg = arg;
	if (r->fill)
		dlfs_fill_set_file_planner(r->fill, fn, arg);
}

void dlfs_reader_replan(struct dlfs_reader *r)
{
	if (r->fill)
		dlfs_fill_replan(r->fill);
}

int dlfs_reader_ctx_new(struct dlfs_reader *r, struct dlfs_reader_ctx **out,
			struct dlfs_err *err)
{
	struct dlfs_reader_ctx *x = calloc(1, sizeof(*x));
	if (!x)
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	x->r = r;
	int ret = dlfs_txn_begin(r->ds, &x->txn, err);
	if (!ret && r->nvme &&
	    posix_memalign((void **)&x->buf, 4096, DLFS_FETCH_BUF_SIZE)) {
		x->buf = NULL;
		ret = dlfs_err_set(err, -ENOMEM, "out of memory");
	}
	if (ret) {
		dlfs_reader_ctx_free(x);
		return ret;
	}
	*out = x;
	return 0;
}

void dlfs_reader_ctx_free(struct dlfs_reader_ctx *x)
{
	if (!x)
		return;
	dlfs_read_done(x);
	dlfs_txn_end(x->txn);
	free(x->buf);
	free(x->copy);
	free(x);
}

struct dlfs_txn *dlfs_reader_ctx_txn(struct dlfs_reader_ctx *x)
{
	return x->txn;
}

void dlfs_reader_ctx_note(struct dlfs_reader_ctx *x, int code)
{
	x->cause = code;
}

int dlfs_reader_ctx_cause(struct dlfs_reader_ctx *x)
{
	int c = x->cause;
	x->cause = 0;
	return c;
}

/* ---- errors ---- */


void dlfs_read_done(struct dlfs_reader_ctx *x)
{
	for (unsigned i = 0; i < x->n_refs; i++)
		dlfs_cache_put(x->r->cache, &x->refs[i], x->served[i]);
	x->n_refs = 0;
}

int dlfs_reader_share_fds(struct dlfs_reader *r, int fds[3])
{
	if (!r->share)
		return -ENOENT;
	return dlfs_share_fds(r->share, fds);
}

int dlfs_reader_share_alive(struct dlfs_reader *r, int on)
{
	return r->share ? dlfs_share_alive(r->share, on) : 0;
}

void dlfs_reader_share_file(struct dlfs_reader *r, const struct dlfs_inode *in)
{
	if (r->share && S_ISREG(in->mode))
		dlfs_share_put_loc(r->share, in->ino, in->container,
				   in->offset, in->size, in->xxh3);
}

void dlfs_reader_share_name(struct dlfs_reader *r, uint64_t parent,
			    const char *name, size_t len, uint64_t ino,
			    const struct stat *st)
{
	if (r->share)
		dlfs_share_put_name(r->share, parent, name, len, ino, st);
}

int dlfs_reader_nvme_fd(struct dlfs_reader *r, uint32_t c)
{
	return r->nvme ? dlfs_nvme_reader_fd(r->nvme, c) : -ENOENT;
}

void dlfs_reader_snapshot(struct dlfs_reader *r, struct dlfs_tier_snap *t,
			  struct dlfs_fill_stats *fill,
			  struct dlfs_grain_stats *grain)
{
	t->pfs_inflight = atomic_load_explicit(&r->fetch.pfs_inflight,
					       memory_order_relaxed);
	t->direct_enabled = r->share != NULL;
	memset(&t->direct, 0, sizeof(t->direct));
	if (r->share) {
		struct dlfs_shm_count *n = (struct dlfs_shm_count *)(
			dlfs_share_rw(r->share) +
			dlfs_share_head(r->share)->count_off);
		t->direct.reads = __atomic_load_n(&n->reads, __ATOMIC_RELAXED);
		t->direct.bytes = __atomic_load_n(&n->bytes, __ATOMIC_RELAXED);
		t->direct.ram = __atomic_load_n(&n->ram, __ATOMIC_RELAXED);
		t->direct.nvme = __atomic_load_n(&n->nvme, __ATOMIC_RELAXED);
		t->direct.checked = __atomic_load_n(&n->checked,
						    __ATOMIC_RELAXED);
		t->direct.ram_bytes = __atomic_load_n(&n->ram_bytes,
						      __ATOMIC_RELAXED);
		t->direct_seen = atomic_load_explicit(&r->seen,
						      memory_order_relaxed);
	}
	dlfs_cache_get_stats(r->cache, &t->ram);
	t->nvme_enabled = r->nvme != NULL;
	t->nvme_policy = r->nvme ? dlfs_nvme_policy_name(
					   r->conf.cache_policy == DLFS_POLICY_LRU
						   ? DLFS_NVME_LRU
						   : DLFS_NVME_KEEP)
				 : NULL;
	dlfs_nvme_get_stats(r->nvme, &t->nvme);
	t->pf_enabled = r->conf.readahead && r->conf.pfs_depth;
	t->pf_window_max = t->pf_enabled ? r->conf.readahead : 0;
	dlfs_fill_get_stats(r->fill, fill);
	t->fill = fill;
	dlfs_grain_get_stats(r->grain, grain);
	t->grain = grain;
	t->read_unit = r->conf.read_unit == DLFS_UNIT_CHUNK  ? "chunk"
		       : r->conf.read_unit == DLFS_UNIT_FILE ? "file"
							     : "auto";
}
