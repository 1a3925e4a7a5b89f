/* A mount's parts: see fs.h. */
#include "fs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include <xxhash.h>

#include "dlfs/format.h"
#include "mountpoint.h"

void dlfs_fs_log(void *arg, int prio, const char *msg)
{
	struct dlfs_fs *fs = arg;
	if (fs->foreground)
		fprintf(stderr, "dlfs: %s%s\n", prio <= LOG_ERR ? "error: " : "",
			msg);
	else
		syslog(prio, "%s", msg);
}

static void ctx_destroy(void *p)
{
	dlfs_reader_ctx_free(p);
}

/* The kernel's read-ahead on the mount (-o kernel_readahead). Set on the
 * first request: the kernel sets it from FUSE's INIT reply, which would
 * undo anything set before. */
static void kernel_readahead(struct dlfs_fs *fs)
{
	struct dlfs_err err = {0};
	const struct dlfs_opts *o = fs->opts;
	if (!o->kernel_readahead || !fs->mountpoint ||
	    atomic_exchange(&fs->kernel_ra_set, 1))
		return;
	if (dlfs_mountpoint_readahead(fs->mountpoint,
				      (unsigned long)(o->kernel_readahead >> 10),
				      &err) &&
	    o->kernel_readahead_given) {
		/* Only said when asked for: unprivileged mounts cannot. */
		char msg[sizeof(err.msg) + 64];
		snprintf(msg, sizeof(msg), "warning: kernel_readahead: %s",
			 err.msg);
		dlfs_fs_log(fs, LOG_WARNING, msg);
	}
}

int dlfs_fs_ctx(struct dlfs_fs *fs, struct dlfs_reader_ctx **out)
{
	*out = pthread_getspecific(fs->ctx_key);
	if (*out)
		return 0;
	kernel_readahead(fs);
	struct dlfs_err err = {0};
	int ret = dlfs_reader_ctx_new(fs->reader, out, &err);
	if (ret) {
		dlfs_fs_log(fs, LOG_ERR, err.msg);
		return ret;
	}
	pthread_setspecific(fs->ctx_key, *out);
	return 0;
}

/* The epoch orders' seed: the options', or the default of the dataset
 * whose id is given. */
static uint64_t seed_for(const struct dlfs_opts *o, const uint8_t *id)
{
	return o->seed_from == DLFS_SEED_DATASET
		       ? dlfs_epoch_default_seed(id, DLFS_ID_SIZE)
		       : o->seed;
}

int dlfs_fs_init(struct dlfs_fs *fs, struct dlfs_ds *ds,
		 const struct dlfs_opts *opts, const char *mountpoint,
		 int foreground, struct dlfs_err *err)
{
	memset(fs, 0, sizeof(*fs));
	fs->ds = ds;
	fs->opts = opts;
	fs->seed = seed_for(opts, dlfs_ds_info(ds)->super.dataset_id);
	fs->mountpoint = mountpoint;
	fs->foreground = foreground;
	fs->timeout = 86400.0 * 365; /* the dataset never changes */
	fs->uid = getuid();
	fs->gid = getgid();
	int ret = pthread_key_create(&fs->ctx_key, ctx_destroy);
	if (ret)
		return dlfs_err_set(err, -ret, "pthread_key_create");
	struct dlfs_reader_conf rc = opts->rd;
	rc.log = dlfs_fs_log;
	rc.log_arg = fs;
	/* A socket server's clients read the tiers in shared memory. */
	rc.share = mountpoint == NULL;
	ret = dlfs_reader_open(ds, &rc, &fs->reader, err);
	if (ret)
		pthread_key_delete(fs->ctx_key);
	return ret;
}

/* A peer asks for global chunk g: through this node's tiers, which keep
 * it (RAM, NVMe) and read it from the PFS at most once. */
static int serve_chunk(void *arg, void *ctx, uint64_t g, void *buf,
		       size_t cap, size_t *len)
{
	struct dlfs_fs *fs = arg;
	struct dlfs_cache *cache = fs->reader->cache;
	struct dlfs_chunk_ref r;
	uint32_t c;
	uint64_t k;
	if (!ctx)
		return -ENOMEM;
	/* Serving a peer (as the home, or a gone home's substitute): from
	 * this node's tiers or the PFS, never asking another peer. */
	static const struct dlfs_fetch_chunk_opts serving = {.serve = 1};
	int ret = dlfs_ds_chunk_locate(fs->ds, g, &c, &k);
	if (!ret)
		ret = dlfs_cache_get(cache, dlfs_cache_chunk_key(c, k),
				     &serving, ctx, &r, NULL);
	if (ret)
		return ret;
	if (r.len > cap) {
		dlfs_cache_put(cache, &r, 0);
		return -EOVERFLOW;
	}
	memcpy(buf, r.data, r.len);
	*len = r.len;
	dlfs_cache_put(cache, &r, r.len);
	return 0;
}

static void *serve_ctx_new(void *arg)
{
	struct dlfs_fs *fs = arg;
	struct dlfs_txn *t = NULL;
	return dlfs_txn_begin(fs->ds, &t, NULL) ? NULL : t;
}

static void serve_ctx_free(void *arg, void *ctx)
{
	(void)arg;
	dlfs_txn_end(ctx);
}

static unsigned peer_home(void *arg, uint64_t g)
{
	return dlfs_peer_home(arg, g);
}

static int peer_get(void *arg, uint64_t g, void *buf, size_t cap,
		    size_t *len)
{
	return dlfs_peer_get(arg, g, buf, cap, len);
}

/* The peer layer's settings from the options, with the orders' seed (a
 * sealed dataset's index comes while joining, so the caller knows its
 * id); the dataset's part is the caller's. */
static void peer_conf(struct dlfs_fs *fs, uint64_t seed,
		      struct dlfs_peer_conf *pc)
{
	_Static_assert(DLFS_PEER_TIMEOUT_DEFAULT_MS == 60000,
		       "opts.c's default peer_timeout is peer.h's");
	*pc = (struct dlfs_peer_conf){
		.force = fs->opts->mpi,
		.seed = seed,
		/* Only a drawn seed is rank 0's to give: the others must
		 * agree. */
		.seed_given = fs->opts->seed_from != DLFS_SEED_RANDOM,
		.timeout_ms = fs->opts->peer_timeout_ms,
		.join_timeout_ms = fs->opts->join_timeout_s * 1000,
		.servers = 2,
		.serve = serve_chunk,
		.ctx_new = serve_ctx_new,
		.ctx_free = serve_ctx_free,
		.arg = fs,
		.log = dlfs_fs_log,
	};
}

void dlfs_fs_attach_peer(struct dlfs_fs *fs, struct dlfs_peer *peer)
{
	fs->peer = peer;
	if (!peer)
		return;
	const struct dlfs_info *info = dlfs_ds_info(fs->ds);
	dlfs_peer_set_layout(peer, dlfs_ds_n_chunks(fs->ds),
			     info->super.chunk_size);
	uint64_t lo, hi;
	dlfs_peer_home_range(dlfs_peer_rank(peer), dlfs_peer_size(peer),
			     dlfs_ds_n_chunks(fs->ds), &lo, &hi);
	fs->peer_ops = (struct dlfs_fetch_peer){
		.rank = dlfs_peer_rank(peer),
		.home = peer_home,
		.get = peer_get,
		.arg = peer,
	};
	dlfs_reader_set_peer(fs->reader, &fs->peer_ops, lo, hi);
	dlfs_logf(dlfs_fs_log, fs, LOG_INFO, "rank %u of %u, seed %llu",
		  dlfs_peer_rank(peer), dlfs_peer_size(peer),
		  (unsigned long long)dlfs_peer_seed(peer));
}

int dlfs_fs_join(struct dlfs_fs *fs, struct dlfs_err *err)
{
	const struct dlfs_info *info = dlfs_ds_info(fs->ds);
	uint32_t nc = (uint32_t)info->super.n_containers;
	/* The index's identity: the superblock and every container's
	 * record (which carries its footer's checksum), not the whole
	 * index, so that joining stays O(containers). */
	uint8_t sb[DLFS_SUPER_REC_SIZE];
	uint64_t sum = XXH3_64bits(sb, dlfs_super_encode(&info->super, sb));
	for (uint32_t c = 0; c < nc; c++) {
		const struct dlfs_container *cr = dlfs_ds_container(fs->ds, c);
		uint64_t v[3] = {sum, cr->footer_xxh3, cr->data_size};
		sum = XXH3_64bits(v, sizeof(v));
	}
	struct dlfs_peer_conf pc;
	peer_conf(fs, fs->seed, &pc);
	pc.dataset_id_hex = info->dataset_id_hex;
	pc.index_sum = sum;
	pc.n_chunks = dlfs_ds_n_chunks(fs->ds);
	pc.chunk_size = info->super.chunk_size;
	struct dlfs_peer *peer;
	int ret = dlfs_peer_open(&pc, &peer, err);
	if (!ret)
		dlfs_fs_attach_peer(fs, peer);
	return ret;
}

int dlfs_fs_join_index(struct dlfs_fs *fs, const struct dlfs_seal *seal,
		       struct dlfs_peer **peer, struct dlfs_ixsrc *ix,
		       struct dlfs_ds **ds, struct dlfs_err *err)
{
	struct dlfs_peer_conf pc;
	struct dlfs_ixsrc_share *sh;
	*peer = NULL;
	*ds = NULL;
	/* fs is not initialised yet: the seal has the dataset's id. */
	peer_conf(fs, seed_for(fs->opts, seal->id), &pc);
	int ret = dlfs_ixsrc_share_begin(fs->opts->dataset,
					 fs->opts->rd.cache_dir, seal, &pc,
					 &sh, dlfs_fs_log, fs, err);
	if (ret)
		return ret;
	ret = dlfs_peer_open(&pc, peer, err);
	if (ret) {
		dlfs_ixsrc_share_abort(sh);
		return ret;
	}
	ret = dlfs_ixsrc_share_end(sh, *peer, ix, ds, err);
	if (ret) {
		dlfs_peer_close(*peer);
		*peer = NULL;
	}
	return ret;
}

/* The counters' snapshot: the reader's tiers, the peers, the epoch, the
 * index, and who the mount is. */
static void snapshot(struct dlfs_fs *fs, struct dlfs_tier_snap *ts,
		     struct dlfs_fill_stats *fill,
		     struct dlfs_grain_stats *grain)
{
	memset(ts, 0, sizeof(*ts));
	dlfs_reader_snapshot(fs->reader, ts, fill, grain);
	ts->epoch = dlfs_views_current(fs->views);
	ts->peer_enabled = fs->peer != NULL;
	ts->rank = dlfs_peer_rank(fs->peer);
	ts->ranks = dlfs_peer_size(fs->peer);
	if (fs->peer) {
		struct dlfs_peer_stats p;
		dlfs_peer_get_stats(fs->peer, &p);
		ts->peer = (struct dlfs_peer_snap){
			.requests = p.requests,
			.hits = p.hits,
			.bytes = p.bytes,
			.timeouts = p.timeouts,
			.lost = p.lost,
			.errors = p.errors,
			.back = p.back,
			.rerouted = p.rerouted,
			.latency_us_sum = p.latency_us_sum,
			.latency_us_max = p.latency_us_max,
			.served = p.served,
			.served_bytes = p.served_bytes,
			.heartbeats_sent = p.heartbeats_sent,
			.heartbeats_heard = p.heartbeats_heard,
			.mpi_waits = p.mpi_waits,
			.mpi_lag_us_sum = p.mpi_lag_us_sum,
			.mpi_lag_us_max = p.mpi_lag_us_max,
		};
		_Static_assert(DLFS_LAT_BUCKETS == DLFS_PEER_LAT_BUCKETS,
			       "one latency histogram");
		memcpy(ts->peer.lat_hist, p.latency_hist,
		       sizeof(ts->peer.lat_hist));
	}
	ts->stage = dlfs_fill_mode_name(fs->opts->rd.fill);
	ts->index_source = fs->ix.source;
	ts->index_where = fs->ix.where;
	ts->index_sealed = fs->ix.sealed;
	ts->index_bytes = fs->ix.bytes;
	ts->index_pfs_bytes = fs->ix.pfs_bytes;
	ts->index_seconds = fs->ix.seconds;
	ts->dataset_id = dlfs_ds_info(fs->ds)->dataset_id_hex;
	ts->dataset_path = dlfs_ds_path(fs->ds);
	ts->mountpoint = fs->mountpoint ? fs->mountpoint : "";
	ts->front_end = fs->mountpoint ? "fuse" : "serve";
	ts->mount = fs->mountpoint ? fs->mountpoint
		    : fs->socket   ? fs->socket
				   : "";
}

/* /.dlfs/stats and /.dlfs/metrics: one snapshot, rendered as fmt. */
static int render_stats(void *arg, enum dlfs_ctl_fmt fmt, char **out,
			size_t *len)
{
	struct dlfs_fs *fs = arg;
	struct dlfs_tier_snap ts;
	struct dlfs_fill_stats fill;
	struct dlfs_grain_stats grain;
	const struct dlfs_stats *s = &fs->reader->stats;
	size_t (*render)(const struct dlfs_stats *, const struct dlfs_tier_snap *,
			 char *, size_t) = fmt == DLFS_CTL_JSON
						   ? dlfs_stats_json
						   : dlfs_metrics_text;
	snapshot(fs, &ts, &fill, &grain);
	/* The counters move meanwhile: room to spare, and again if short. */
	size_t cap = render(s, &ts, NULL, 0) + 256, n;
	for (;;) {
		char *b = malloc(cap);
		if (!b)
			return -ENOMEM;
		if ((n = render(s, &ts, b, cap)) < cap) {
			*out = b;
			*len = n;
			return 0;
		}
		free(b);
		cap = n + 256;
	}
}

int dlfs_fs_start(struct dlfs_fs *fs, struct dlfs_err *err)
{
	struct dlfs_views_conf vc = {
		.ds = fs->ds,
		.mode = fs->opts->shuffle,
		.seed = fs->peer ? dlfs_peer_seed(fs->peer) : fs->seed,
		.seed_from = dlfs_seed_from_name(fs->opts->seed_from),
		.rank = dlfs_peer_rank(fs->peer),
		.size = dlfs_peer_size(fs->peer),
		.window = fs->opts->shuffle_window,
		.reader = fs->reader,
	};
	int ret = dlfs_views_new(&vc, &fs->views, err);
	if (ret)
		return ret;
	dlfs_reader_set_observer(fs->reader, dlfs_views_note_read, fs->views);
	dlfs_reader_set_planner(fs->reader, dlfs_views_plan_next, fs->views);
	dlfs_reader_set_file_planner(fs->reader, dlfs_views_plan_files,
				     fs->views);
	ret = dlfs_ctl_init(&fs->ctl, fs->ds, fs->views,
			    fs->mountpoint ? fs->mountpoint : "",
			    fs->uid, fs->gid, fs->timeout, render_stats, fs);
	if (ret)
		return dlfs_err_set(err, ret, "out of memory");
	dlfs_ctl_set_name(&fs->ctl, fs->opts->ctl_dir);
	dlfs_ctl_set_log(&fs->ctl, dlfs_fs_log, fs);
	fs->ctl_ready = 1;
	if ((ret = dlfs_reader_start(fs->reader, err)))
		return ret;
	if (fs->peer)
		ret = dlfs_peer_start(fs->peer, err);
	return ret;
}

void dlfs_fs_destroy(struct dlfs_fs *fs)
{
	struct dlfs_reader_ctx *x = pthread_getspecific(fs->ctx_key);
	if (x) {
		pthread_setspecific(fs->ctx_key, NULL);
		dlfs_reader_ctx_free(x);
	}
	pthread_key_delete(fs->ctx_key);
	/* Background reads may ask peers: they stop first. Then serve peers
	 * until every rank is done, which needs the tiers intact. */
	if (fs->reader)
		dlfs_reader_stop(fs->reader);
	dlfs_peer_close(fs->peer);
	if (fs->ctl_ready)
		dlfs_ctl_destroy(&fs->ctl);
	dlfs_reader_close(fs->reader);
	dlfs_views_free(fs->views);
}
