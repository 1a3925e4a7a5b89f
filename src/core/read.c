/*
 * The read core: see src/core/reader.h. One read is decided here end
 * to end: the RAM tier, the NVMe tier's file path, the unit of a miss
 * (chunk or file), verification, salvage, counters and the errors a
 * reader is told.
 */
#include "read.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <syslog.h>
#include <unistd.h>

#define XXH_STATIC_LINKING_ONLY /* XXH3_state_t on the stack */
#include <xxhash.h>

#include "util.h"

struct dlfs_reader_ctx {
	struct dlfs_reader *r;
	struct dlfs_txn *txn;
	uint8_t *buf;          /* DLFS_FETCH_BUF_SIZE, aligned: NVMe reads */
	uint8_t *copy;         /* gathers and salvages, grown once */
	size_t copy_cap;
	struct dlfs_chunk_ref refs[DLFS_READ_IOV];
	size_t served[DLFS_READ_IOV];
	unsigned n_refs;
	struct iovec iov[DLFS_READ_IOV];
	int cause; /* behind the last EIO given (dlfs_reader_ctx_cause) */
};

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
	/* A compressed or in-place dataset's file cannot be read alone
	 * from its container: its chunk has to be read (and decompressed)
	 * whole, and checked. */
	if (dlfs_stored_apart(info->super.features)) {
		if (conf->read_unit == DLFS_UNIT_FILE)
			dlfs_logf(conf->log, conf->log_arg, LOG_NOTICE,
				  "read_unit=file: the dataset is %s, its "
				  "chunks are read whole",
				  info->super.features &
						  DLFS_FEATURE(IN_PLACE)
					  ? "in place"
					  : "compressed");
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
	struct dlfs_fill_conf fc = {
		.cache = r->cache,
		.fetch = &r->fetch,
		.depth = r->conf.pfs_depth,
		.mode = r->conf.fill,
		.home_lo = r->home_lo,
		.home_hi = r->home_hi,
	};
	if ((ret = dlfs_fill_new(&fc, &r->fill, err)))
		return ret;
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

/* Is key in ring (the last 64 keys of the *n stored)? Remembers it if
 * not. Takes log_lock. */
static int logged_before(struct dlfs_reader *r, uint64_t *ring, unsigned *n,
			 uint64_t key)
{
	int seen = 0;
	pthread_mutex_lock(&r->log_lock);
	for (unsigned i = 0; i < *n && i < 64; i++)
		if (ring[i] == key)
			seen = 1;
	if (!seen)
		ring[(*n)++ % 64] = key;
	pthread_mutex_unlock(&r->log_lock);
	return seen;
}

/* Name a file in the log once per mount (finding its path scans the
 * index, so not on every failure). */
static void log_file_error(struct dlfs_reader_ctx *x, uint64_t ino,
			   const char *msg)
{
	struct dlfs_reader *r = x->r;
	if (!r->conf.log || logged_before(r, r->logged, &r->n_logged, ino))
		return;
	char path[4096] = "?";
	char quoted[4096 * 4];
	dlfs_path_of(x->txn, ino, path, sizeof(path), NULL);
	dlfs_quote(path, strlen(path), quoted, sizeof(quoted));
	dlfs_logf(r->conf.log, r->conf.log_arg, LOG_ERR,
		  "read of '%s' (inode %llu) failed: %s", quoted,
		  (unsigned long long)ino, msg);
}

/* What a reader is told of a failed read of ino: damaged or unreadable
 * data is EIO (counted, logged); what says something else passes. */
static int read_failed(struct dlfs_reader_ctx *x, uint64_t ino, int ret,
		       const struct dlfs_err *err)
{
	struct dlfs_stats *s = &x->r->stats;
	switch (ret) {
	case -ENOMEM:
	case -EINTR:
	case -EAGAIN:
	case -ETIMEDOUT:
		return ret;
	case -ENOENT:
	case -DLFS_ECORRUPT:
	case -EPROTONOSUPPORT:
		dlfs_stats_add(&s->err_container, 1);
		break;
	case -DLFS_ECHECKSUM:
		dlfs_stats_add(&s->err_checksum, 1);
		break;
	default:
		dlfs_stats_add(&s->err_io, 1);
		break;
	}
	log_file_error(x, ino, err->code ? err->msg : "read failed");
	x->cause = ret;
	return -EIO;
}

int dlfs_reader_index_error_once(struct dlfs_reader *r, int code,
				 const char *msg, uint64_t key)
{
	if (code != -DLFS_ECORRUPT)
		return code;
	dlfs_stats_add(&r->stats.err_index, 1);
	if (!logged_before(r, r->logged_key, &r->n_logged_key, key))
		dlfs_logf(r->conf.log, r->conf.log_arg, LOG_ERR, "%s", msg);
	return -EIO;
}

int dlfs_reader_index_error(struct dlfs_reader *r, int code, const char *msg)
{
	if (code != -DLFS_ECORRUPT)
		return code;
	dlfs_stats_add(&r->stats.err_index, 1);
	/* Rate-limited by the kernel's caches: a failed lookup or getattr
	 * is not cached, but a damaged record is rare. */
	dlfs_logf(r->conf.log, r->conf.log_arg, LOG_ERR, "%s", msg);
	return -EIO;
}

/* ---- the read ---- */

void dlfs_read_done(struct dlfs_reader_ctx *x)
{
	for (unsigned i = 0; i < x->n_refs; i++)
		dlfs_cache_put(x->r->cache, &x->refs[i], x->served[i]);
	x->n_refs = 0;
}

/* Room for n bytes in the context's copy buffer. */
static int copy_room(struct dlfs_reader_ctx *x, size_t n)
{
	if (x->copy_cap >= n)
		return 0;
	uint8_t *b = realloc(x->copy, n);
	if (!b)
		return -ENOMEM;
	x->copy = b;
	x->copy_cap = n;
	return 0;
}

/* One piece of the reply. */
static void piece(struct dlfs_reader_ctx *x, struct dlfs_read_out *out,
		  const uint8_t *p, size_t n)
{
	x->iov[out->iovcnt].iov_base = (void *)p;
	x->iov[out->iovcnt].iov_len = n;
	out->iovcnt++;
	out->len += n;
}

/*
 * Check file in against its own checksum the first time all its bytes
 * are in hand in one pinned entry: the file's extent within chunk ref k
 * (a file that fits in one chunk). @return 0, or -EIO: the index record
 * or the data is wrong.
 */
static int check_once(struct dlfs_reader_ctx *x, const struct dlfs_inode *in,
		      const struct dlfs_chunk_ref *ref, uint64_t k,
		      struct dlfs_err *err)
{
	struct dlfs_reader *r = x->r;
	if (dlfs_fetch_file_known(&r->fetch, in->ino))
		return 0;
	uint64_t start = dlfs_chunk_start(r->chunk_size, k);
	if (in->offset + in->size - start > ref->len)
		return dlfs_err_set(err, -DLFS_ECORRUPT,
				    "file extends past its chunk");
	dlfs_stats_add(&r->stats.files_checked, 1);
	if (XXH3_64bits(ref->data + (in->offset - start), in->size) !=
	    in->xxh3)
		return dlfs_err_set(err, -EIO,
				    "file checksum mismatch, its chunk is "
				    "intact: the index record is damaged "
				    "(container %u, offset %llu)",
				    in->container,
				    (unsigned long long)in->offset);
	dlfs_fetch_file_set(&r->fetch, in->ino, 1);
	return 0;
}

/* A file over more chunks than this is checked by its chunks only on the
 * read path (dlfs(1)); up to it, its first read checks it whole. */
#define CHECK_SPAN_MAX 16

static int span(const struct dlfs_reader *r, const struct dlfs_inode *in,
		uint64_t off, uint64_t len, uint64_t done, uint64_t k,
		size_t clen, uint64_t *from, uint64_t *take,
		struct dlfs_err *err);

/*
 * The first read of a file over chunks kf..kl (more than one) during this
 * mount: check it against its own checksum, so that a damaged record (a
 * size one byte long, an offset moved) cannot serve bytes of its
 * neighbours that pass their chunks' checks. A read of the whole file has
 * every byte in hand (out); otherwise, up to CHECK_SPAN_MAX chunks, the
 * file's chunks are walked through the RAM tier (the reader of a file
 * reads them anyway). @return 0, or -EIO: the index record is damaged.
 */
static int check_span(struct dlfs_reader_ctx *x, const struct dlfs_inode *in,
		      uint64_t off, const struct dlfs_read_out *out,
		      uint64_t kf, uint64_t kl, struct dlfs_err *err)
{
	struct dlfs_reader *r = x->r;
	XXH3_state_t st;
	if (dlfs_fetch_file_known(&r->fetch, in->ino))
		return 0;
	if (XXH3_64bits_reset(&st) != XXH_OK)
		return 0;
	if (off == 0 && out->len == in->size) {
		for (int i = 0; i < out->iovcnt; i++)
			XXH3_64bits_update(&st, out->iov[i].iov_base,
					   out->iov[i].iov_len);
	} else if (kl - kf < CHECK_SPAN_MAX) {
		uint64_t done = 0, from = 0, take = 0;
		for (uint64_t k = kf; k <= kl; k++) {
			struct dlfs_chunk_ref ref;
			struct dlfs_err cerr = {0};
			uint64_t key = dlfs_cache_chunk_key(in->container, k);
			/* A chunk that fails its own check is salvaged, and
			 * the file checked, when a read needs it. */
			if (dlfs_cache_get(r->cache, key, NULL, x->txn, &ref,
					   &cerr))
				return 0;
			int ret = span(r, in, 0, in->size, done, k, ref.len,
				       &from, &take, err);
			if (!ret)
				XXH3_64bits_update(&st, ref.data + from,
						   (size_t)take);
			dlfs_cache_put(r->cache, &ref, 0);
			if (ret)
				return ret;
			done += take;
		}
	} else {
		return 0;
	}
	dlfs_stats_add(&r->stats.files_checked, 1);
	if (XXH3_64bits_digest(&st) != in->xxh3)
		return dlfs_err_set(err, -EIO,
				    "file checksum mismatch, its chunks are "
				    "intact: the index record is damaged "
				    "(container %u, offset %llu, size %llu)",
				    in->container,
				    (unsigned long long)in->offset,
				    (unsigned long long)in->size);
	dlfs_fetch_file_set(&r->fetch, in->ino, 1);
	return 0;
}

/* Length of chunk k of container c. */
static uint64_t chunk_len(const struct dlfs_reader *r, uint32_t c, uint64_t k)
{
	uint64_t left = dlfs_ds_container(r->ds, c)->data_size -
			k * r->chunk_size;
	return left < r->chunk_size ? left : r->chunk_size;
}

/* Where [off, off + len) of in lies in chunk k (clen bytes): *from and
 * *take, its part of the range from byte done on. */
static int span(const struct dlfs_reader *r, const struct dlfs_inode *in,
		uint64_t off, uint64_t len, uint64_t done, uint64_t k,
		size_t clen, uint64_t *from, uint64_t *take,
		struct dlfs_err *err)
{
	*from = in->offset + off + done - dlfs_chunk_start(r->chunk_size, k);
	if (*from >= clen)
		return dlfs_err_set(err, -DLFS_ECORRUPT,
				    "file extends past its chunk");
	*take = clen - *from < len - done ? clen - *from : len - done;
	return 0;
}

/*
 * The chunk path: [off, off + len) of in from chunks k0..k1, pinned in
 * the RAM tier (loading misses when load is set, else -ENOENT if one is
 * absent). Up to DLFS_READ_IOV chunks are served in place; more are
 * gathered into the context's copy buffer one at a time.
 */
static int from_chunks(struct dlfs_reader_ctx *x, const struct dlfs_inode *in,
		       uint64_t off, uint64_t len, uint64_t k0, uint64_t k1,
		       int load, struct dlfs_read_out *out,
		       struct dlfs_err *err)
{
	struct dlfs_reader *r = x->r;
	int gather = k1 - k0 + 1 > DLFS_READ_IOV;
	uint64_t done = 0, from = 0, take = 0;
	int ret;
	if (gather && copy_room(x, (size_t)len))
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	for (uint64_t k = k0; k <= k1; k++) {
		struct dlfs_chunk_ref *ref = &x->refs[x->n_refs];
		uint64_t key = dlfs_cache_chunk_key(in->container, k);
		ret = load ? dlfs_cache_get(r->cache, key, NULL, x->txn, ref,
					    err)
			   : dlfs_cache_get_cached(r->cache, key, ref);
		if (ret)
			return ret;
		x->served[x->n_refs++] = 0;
		if (load)
			dlfs_prefetch_note(r->prefetch, in->container, k,
					   ref->prefetched);
		if ((ret = span(r, in, off, len, done, k, ref->len, &from,
				&take, err)))
			return ret;
		x->served[x->n_refs - 1] = (size_t)take;
		if (!gather) {
			piece(x, out, ref->data + from, (size_t)take);
		} else {
			memcpy(x->copy + done, ref->data + from, (size_t)take);
			dlfs_read_done(x);
		}
		done += take;
	}
	if (gather)
		piece(x, out, x->copy, (size_t)len);
	return 0;
}

/* The unit of a miss on file in (its chunk k0): 1 to read the file
 * alone. */
static int read_alone(struct dlfs_reader *r, const struct dlfs_inode *in,
		      uint64_t k0)
{
	if (!dlfs_grain_file_mode(r->grain, in))
		return 0;
	/* Another node's chunk: its home reads the PFS for the job (a file
	 * read alone here would be a second read of those bytes). */
	uint64_t g = dlfs_ds_container(r->ds, in->container)->first_chunk + k0;
	if (r->fetch.peer && (g < r->home_lo || g >= r->home_hi))
		return 0;
	/* A sequential reader, or a chunk the NVMe tier has free room for:
	 * the chunk's other files will be read from where it is kept. A
	 * full LRU tier would evict a chunk to take it: in file mode that
	 * trades one chunk whose files are still to come for another. */
	if (dlfs_prefetch_in_stream(r->prefetch, in->container, k0))
		return 0;
	if (r->nvme && dlfs_nvme_has_room(r->nvme, chunk_len(r, in->container,
							     k0)))
		return 0;
	return 1;
}

/* Salvage of a chunk that failed its checksum: the file alone. */
static int salvage(struct dlfs_reader_ctx *x, const struct dlfs_inode *in,
		   uint64_t off, uint64_t len, struct dlfs_read_out *out,
		   struct dlfs_err *err)
{
	struct dlfs_err serr = {0};
	dlfs_read_done(x);
	out->iovcnt = 0;
	out->len = 0;
	int ret = dlfs_fetch_salvage(&x->r->fetch, in, &x->copy, &x->copy_cap,
				     &serr);
	if (ret) {
		dlfs_err_prefix(&serr, "%s", err->msg);
		*err = serr;
		return ret == -EIO ? -DLFS_ECHECKSUM : ret;
	}
	piece(x, out, x->copy + off, (size_t)len);
	return 0;
}

/* out gives nothing (its pieces, if any, were let go). */
static void unpinned(struct dlfs_read_out *out)
{
	out->iovcnt = 0;
	out->len = 0;
}

/* The first piece of file ino, whose chunks are global g0..g1: counted,
 * told to the observer (the epoch views), and its chunks marked used. */
static void first_read(struct dlfs_reader_ctx *x, uint64_t ino, uint64_t g0,
		       uint64_t g1)
{
	struct dlfs_reader *r = x->r;
	dlfs_stats_add(&r->stats.files_read, 1);
	if (r->observer)
		r->observer(r->observer_arg, x->txn, ino);
	for (uint64_t g = g0; r->fill && g <= g1; g++)
		dlfs_fill_used(r->fill, g);
}

/* The NVMe tier, for a file read alone from it (not in a stream of its
 * container's chunks). @return 0 with out set, or -ENOENT. */
static int nvme_alone(struct dlfs_reader_ctx *x, const struct dlfs_inode *in,
		      uint64_t off, uint64_t len, uint64_t k0,
		      struct dlfs_read_out *out)
{
	struct dlfs_reader *r = x->r;
	const uint8_t *data;
	if (!r->nvme || dlfs_prefetch_in_stream(r->prefetch, in->container, k0))
		return -ENOENT;
	if (dlfs_fetch_file_nvme(&r->fetch, in, off, (size_t)len, x->buf,
				 &data))
		return -ENOENT;
	dlfs_prefetch_note(r->prefetch, in->container, k0, 0);
	piece(x, out, data, (size_t)len);
	return 0;
}

/* A miss read as the file alone, into the RAM tier under its own key.
 * @return 0 with out set, or -errno with err. */
static int file_alone(struct dlfs_reader_ctx *x, const struct dlfs_inode *in,
		      uint64_t off, uint64_t len, uint64_t k0,
		      struct dlfs_read_out *out, struct dlfs_err *err)
{
	struct dlfs_reader *r = x->r;
	struct dlfs_chunk_ref *fref = &x->refs[0];
	int ret = dlfs_cache_get(r->cache, dlfs_cache_file_key(in->ino), in,
				 x->txn, fref, err);
	if (ret)
		return ret;
	x->served[x->n_refs++] = (size_t)len;
	dlfs_prefetch_note(r->prefetch, in->container, k0, 0);
	dlfs_grain_note_file(r->grain, in, k0, chunk_len(r, in->container, k0));
	piece(x, out, fref->data + off, (size_t)len);
	return 0;
}

/* The RAM tier's entry of file ino alone (a file in one chunk).
 * @return 0 with out set, or -ENOENT. */
static int file_cached(struct dlfs_reader_ctx *x, uint64_t ino, uint64_t off,
		       uint64_t len, struct dlfs_read_out *out)
{
	struct dlfs_chunk_ref *fref = &x->refs[0];
	if (dlfs_cache_get_cached(x->r->cache, dlfs_cache_file_key(ino), fref))
		return -ENOENT;
	x->served[x->n_refs++] = (size_t)len;
	piece(x, out, fref->data + off, (size_t)len);
	return 0;
}

/* The RAM tier did not hold it all: let go of what it held. */
static void ram_missed(struct dlfs_reader_ctx *x, struct dlfs_read_out *out)
{
	for (unsigned i = 0; i < x->n_refs; i++)
		x->served[i] = 0; /* served below, not from these */
	dlfs_read_done(x);
	unpinned(out);
}

/* A read served: its bytes, and from the RAM tier its time since t0. */
static void count_served(struct dlfs_reader *r,
			 const struct dlfs_read_out *out, int from_ram,
			 uint64_t t0)
{
	dlfs_stats_add(&r->stats.bytes_served, out->len);
	if (from_ram) {
		dlfs_stats_add(&r->stats.ram_bytes, out->len);
		dlfs_stats_time(&r->stats, DLFS_TIER_RAM, t0);
	}
}

int dlfs_read(struct dlfs_reader_ctx *x, uint64_t ino, uint64_t off,
	      size_t size, struct dlfs_read_out *out)
{
	struct dlfs_reader *r = x->r;
	struct dlfs_err err = {0};
	struct dlfs_inode in;
	uint64_t k0, k1, kf, kl;
	int ret, from_ram = 0;
	/* Timed for the RAM tier's latency; a miss is timed in the tier
	 * that loads it (fetch.c). */
	const uint64_t t0 = dlfs_stats_clock();

	x->n_refs = 0;
	out->iov = x->iov;
	unpinned(out);
	dlfs_stats_add(&r->stats.ops[DLFS_OP_READ], 1);
	ret = dlfs_stat(x->txn, ino, &in, &err);
	if (ret)
		return ret == -ENOENT ? ret : read_failed(x, ino, ret, &err);
	if (!S_ISREG(in.mode))
		return S_ISDIR(in.mode) ? -EISDIR : -EINVAL;
	dlfs_reader_share_file(r, &in);
	if (off >= in.size || size == 0)
		return 0;
	uint64_t len = in.size - off < size ? in.size - off : size;
	const uint64_t g0 = dlfs_ds_container(r->ds, in.container)->first_chunk;
	dlfs_file_chunks(r->chunk_size, &in, off, len, &k0, &k1);
	dlfs_file_chunks(r->chunk_size, &in, 0, in.size, &kf, &kl);
	const int one_chunk = kf == kl; /* all its bytes in one chunk */
	if (off == 0)
		first_read(x, ino, g0 + kf, g0 + kl);
	if (r->fill)
		dlfs_fill_demand(r->fill);

	/* 1. The RAM tier: the file's own entry, or all its chunks. */
	if (one_chunk && !file_cached(x, ino, off, len, out)) {
		from_ram = 1;
		goto served;
	}
	ret = from_chunks(x, &in, off, len, k0, k1, 0, out, &err);
	if (ret == 0) {
		from_ram = 1;
		goto check;
	}
	ram_missed(x, out);
	if (ret != -ENOENT)
		goto fail;

	/* 2. The NVMe tier, for a file read alone from it. */
	if (!nvme_alone(x, &in, off, len, k0, out))
		goto served;

	/* 3. A miss: the file alone when whole chunks would be wasted. */
	if (one_chunk && read_alone(r, &in, k0)) {
		if ((ret = file_alone(x, &in, off, len, k0, out, &err)))
			goto fail;
		goto served;
	}

	/* 4. Whole chunks, through the RAM tier. */
	ret = from_chunks(x, &in, off, len, k0, k1, 1, out, &err);
	if (ret == -DLFS_ECHECKSUM) {
		if ((ret = salvage(x, &in, off, len, out, &err)))
			goto fail;
		goto served;
	}
	if (ret)
		goto fail;
check:
	if (one_chunk ? (ret = check_once(x, &in, &x->refs[0], k0, &err))
		      : (ret = check_span(x, &in, off, out, kf, kl, &err)))
		goto fail;
served:
	count_served(r, out, from_ram, t0);
	return 0;
fail:
	dlfs_read_done(x);
	unpinned(out);
	return read_failed(x, ino, ret, &err);
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
