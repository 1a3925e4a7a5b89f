/*
 * FUSE low-level operations over libdlfs. Every op sends exactly one
 * reply, itself; helpers only compute. Errors are negative errnos inside
 * and are negated once, at fuse_reply_err.
 */
#include "fuse_ll.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "dlfs/format.h"
#include "util.h"

#include <xxhash.h>

static struct dlfs_fs *fs_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

void dlfs_log(struct dlfs_fs *fs, int prio, const char *fmt, ...)
{
	char msg[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (fs->foreground)
		fprintf(stderr, "dlfs: %s%s\n",
			prio <= LOG_ERR ? "error: " : "", msg);
	else
		syslog(prio, "%s", msg);
}

static void txn_destroy(void *p)
{
	dlfs_txn_end(p);
}

/* This worker's transaction, begun on its first request. */
static int txn_of(struct dlfs_fs *fs, struct dlfs_txn **t)
{
	*t = pthread_getspecific(fs->txn_key);
	if (*t)
		return 0;
	struct dlfs_err err = {0};
	int ret = dlfs_txn_begin(fs->ds, t, &err);
	if (ret) {
		dlfs_log(fs, LOG_ERR, "%s", err.msg);
		return ret;
	}
	pthread_setspecific(fs->txn_key, *t);
	return 0;
}

static void buf_destroy(void *p)
{
	free(p);
}

/* This worker's buffer for NVMe file reads, allocated on its first. */
static void *buf_of(struct dlfs_fs *fs)
{
	void *b = pthread_getspecific(fs->buf_key);
	if (b)
		return b;
	if (posix_memalign(&b, 4096, DLFS_FETCH_BUF_SIZE))
		return NULL;
	pthread_setspecific(fs->buf_key, b);
	return b;
}

static void nvme_log(void *arg, const char *msg)
{
	dlfs_log(arg, LOG_WARNING, "%s", msg);
}

/* Open the NVMe tier of conf->cache_dir. */
static int open_nvme(struct dlfs_fs *fs, struct dlfs_err *err)
{
	const struct dlfs_info *info = dlfs_ds_info(fs->ds);
	uint32_t nc = (uint32_t)info->super.n_containers;
	uint64_t total = 0;
	/* On disk a chunk takes its length rounded up to 4 KiB; only the
	 * last chunk of a container can be short. */
	for (uint32_t c = 0; c < nc; c++)
		total += dlfs_roundup(dlfs_ds_container(fs->ds, c)->data_size,
				      4096);
	uint64_t cap = fs->conf.cache_size;
	if (!cap) {
		/* Default: the whole dataset, within 90% of the free space. */
		struct statvfs sv;
		cap = total;
		if (statvfs(fs->conf.cache_dir, &sv) == 0) {
			uint64_t room = (uint64_t)sv.f_bavail * sv.f_frsize /
					10 * 9;
			if (cap > room)
				cap = room;
		}
		fs->conf.cache_size = cap;
	}
	struct dlfs_nvme_conf nc_conf = {
		.dir = fs->conf.cache_dir,
		.capacity = cap,
		.policy = fs->conf.cache_policy,
		.dataset_id_hex = info->dataset_id_hex,
		.chunk_size = info->super.chunk_size,
		.n_containers = nc,
		.containers = dlfs_ds_container(fs->ds, 0),
		.log = nvme_log,
		.log_arg = fs,
	};
	if (!nc)
		return 0;
	return dlfs_nvme_open(&nc_conf, &fs->nvme, err);
}

int dlfs_fs_init(struct dlfs_fs *fs, struct dlfs_ds *ds,
		 const struct dlfs_fs_conf *conf, const char *mountpoint,
		 int foreground, struct dlfs_err *err)
{
	memset(fs, 0, sizeof(*fs));
	fs->conf = *conf;
	fs->ds = ds;
	fs->mountpoint = mountpoint;
	fs->foreground = foreground;
	fs->timeout = 86400.0 * 365; /* the dataset never changes */
	fs->uid = getuid();
	fs->gid = getgid();
	dlfs_stats_init(&fs->stats);
	pthread_mutex_init(&fs->log_lock, NULL);
	if (pthread_key_create(&fs->txn_key, txn_destroy))
		return dlfs_err_set(err, -EAGAIN, "pthread_key_create");
	if (pthread_key_create(&fs->buf_key, buf_destroy))
		return dlfs_err_set(err, -EAGAIN, "pthread_key_create");
	fs->fetch.ds = ds;
	fs->fetch.stats = &fs->stats;
	int ret = dlfs_cache_new(dlfs_ds_info(ds)->super.chunk_size,
				 conf->ram_cache, dlfs_fetch_chunk, &fs->fetch,
				 &fs->cache, err);
	if (ret)
		return ret;
	if (conf->cache_dir) {
		ret = open_nvme(fs, err);
		if (ret == -EBUSY) {
			dlfs_log(fs, LOG_WARNING,
				 "%s: running without the NVMe tier", err->msg);
			dlfs_err_clear(err);
			ret = 0;
		}
		if (ret)
			return ret;
		fs->fetch.nvme = fs->nvme;
		if (fs->nvme &&
		    dlfs_fetch_init(&fs->fetch,
				    dlfs_ds_info(ds)->super.n_inodes + 1))
			return dlfs_err_set(err, -ENOMEM, "out of memory");
	}
	return 0;
}

static int render_stats(void *arg, char **json, size_t *len);

/* A peer asks for global chunk g: through this node's tiers, which keep
 * it (RAM, NVMe) and read it from the PFS at most once. */
static int serve_chunk(void *arg, void *ctx, uint64_t g, void *buf,
		       size_t cap, size_t *len)
{
	struct dlfs_fs *fs = arg;
	struct dlfs_chunk_ref r;
	uint32_t c;
	uint64_t k;
	if (!ctx)
		return -ENOMEM;
	int ret = dlfs_ds_chunk_locate(fs->ds, g, &c, &k);
	if (ret)
		return ret;
	ret = dlfs_cache_get(fs->cache, c, k, ctx, &r, NULL);
	if (ret)
		return ret;
	if (r.len > cap) {
		dlfs_cache_put(fs->cache, &r);
		return -EOVERFLOW;
	}
	memcpy(buf, r.data, r.len);
	*len = r.len;
	dlfs_cache_put(fs->cache, &r);
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

static void peer_log(void *arg, const char *msg)
{
	dlfs_log(arg, LOG_WARNING, "%s", msg);
}

int dlfs_fs_join(struct dlfs_fs *fs, struct dlfs_err *err)
{
	const struct dlfs_info *info = dlfs_ds_info(fs->ds);
	uint32_t nc = (uint32_t)info->super.n_containers;
	int ret;
	/* The index's identity: the superblock and every container's
	 * record (which carries its footer's checksum), not the whole
	 * index, so that joining stays O(containers). */
	uint8_t sb[DLFS_SUPER_REC_SIZE];
	dlfs_super_encode(&info->super, sb);
	uint64_t sum = XXH3_64bits(sb, sizeof(sb));
	for (uint32_t c = 0; c < nc; c++) {
		const struct dlfs_container *cr = dlfs_ds_container(fs->ds, c);
		uint64_t v[3] = {sum, cr->footer_xxh3, cr->data_size};
		sum = XXH3_64bits(v, sizeof(v));
	}
	struct dlfs_peer_conf pc = {
		.force = fs->conf.mpi,
		.dataset_id_hex = info->dataset_id_hex,
		.index_sum = sum,
		.seed = fs->conf.seed,
		.seed_given = fs->conf.seed_given,
		.n_chunks = dlfs_ds_n_chunks(fs->ds),
		.chunk_size = info->super.chunk_size,
		.timeout_ms = fs->conf.peer_timeout_ms,
		.servers = 2,
		.serve = serve_chunk,
		.ctx_new = serve_ctx_new,
		.ctx_free = serve_ctx_free,
		.arg = fs,
		.log = peer_log,
	};
	ret = dlfs_peer_open(&pc, &fs->peer, err);
	if (ret || !fs->peer)
		return ret;
	fs->conf.seed = dlfs_peer_seed(fs->peer);
	fs->fetch.peer = fs->peer;
	dlfs_log(fs, LOG_INFO, "rank %u of %u, seed %llu",
		 dlfs_peer_rank(fs->peer), dlfs_peer_size(fs->peer),
		 (unsigned long long)fs->conf.seed);
	return 0;
}

/* The epoch views and the control namespace, once the prefetcher that
 * the views plan for exists. */
static int start_ctl(struct dlfs_fs *fs, struct dlfs_err *err)
{
	struct dlfs_views_conf vc = {
		.ds = fs->ds,
		.mode = fs->conf.shuffle,
		.seed = fs->conf.seed,
		.rank = dlfs_peer_rank(fs->peer),
		.size = dlfs_peer_size(fs->peer),
		.window = fs->conf.shuffle_window,
		.prefetch = fs->prefetch,
		.ahead_bytes = fs->conf.readahead,
	};
	int ret = dlfs_views_new(&vc, &fs->views, err);
	if (ret)
		return ret;
	ret = dlfs_ctl_init(&fs->ctl, fs->ds, fs->views, fs->mountpoint,
			    fs->uid, fs->gid, fs->timeout, render_stats, fs);
	if (ret)
		return dlfs_err_set(err, ret, "out of memory");
	fs->ctl_ready = 1;
	return 0;
}

int dlfs_fs_start(struct dlfs_fs *fs, struct dlfs_err *err)
{
	int ret = 0;
	if (fs->nvme && (ret = dlfs_nvme_start(fs->nvme, err)))
		return ret;
	if (fs->conf.readahead && fs->conf.prefetch_threads) {
		struct dlfs_prefetch_conf pc = {
			.cache = fs->cache,
			.ds = fs->ds,
			.threads = fs->conf.prefetch_threads,
			.window_max = fs->conf.readahead,
		};
		ret = dlfs_prefetch_new(&pc, &fs->prefetch, err);
	}
	if (!ret)
		ret = start_ctl(fs, err);
	if (!ret && fs->peer)
		ret = dlfs_peer_start(fs->peer, err);
	if (!ret && fs->conf.stage != DLFS_STAGE_NONE) {
		uint64_t n = dlfs_ds_n_chunks(fs->ds);
		uint64_t r = dlfs_peer_rank(fs->peer), w = dlfs_peer_size(fs->peer);
		/* The chunks whose home is this rank (dlfs_peer_home). */
		struct dlfs_stage_conf sc = {
			.mode = fs->conf.stage,
			.fetch = &fs->fetch,
			.cache = fs->cache,
			.home_lo = (uint64_t)(((unsigned __int128)r * n + w - 1) / w),
			.home_hi = (uint64_t)(((unsigned __int128)(r + 1) * n + w - 1) / w),
		};
		ret = dlfs_stage_start(&sc, &fs->stage, err);
	}
	return ret;
}

void dlfs_fs_destroy(struct dlfs_fs *fs)
{
	struct dlfs_txn *t = pthread_getspecific(fs->txn_key);
	if (t) {
		pthread_setspecific(fs->txn_key, NULL);
		dlfs_txn_end(t);
	}
	pthread_key_delete(fs->txn_key);
	void *b = pthread_getspecific(fs->buf_key);
	pthread_setspecific(fs->buf_key, NULL);
	free(b);
	pthread_key_delete(fs->buf_key);
	/* Prefetchers use the cache; the NVMe tier drains its queue. */
	/* Staging first; then serve peers until every rank is done, which
	 * needs the tiers below intact. */
	dlfs_stage_stop(fs->stage);
	dlfs_peer_close(fs->peer);
	if (fs->ctl_ready)
		dlfs_ctl_destroy(&fs->ctl);
	dlfs_views_free(fs->views);
	dlfs_prefetch_free(fs->prefetch);
	dlfs_nvme_close(fs->nvme);
	dlfs_fetch_destroy(&fs->fetch);
	dlfs_cache_free(fs->cache);
	pthread_mutex_destroy(&fs->log_lock);
}

/* ---- attributes ---- */

static void fill_attr(const struct dlfs_fs *fs, const struct dlfs_inode *in,
		      struct stat *st)
{
	dlfs_ctl_fill_attr(fs->uid, fs->gid, in, st);
}

/* The stats JSON, for the control namespace. */
static int render_stats(void *arg, char **json, size_t *len)
{
	struct dlfs_fs *fs = arg;
	struct dlfs_tier_snap ts = {0};
	dlfs_cache_get_stats(fs->cache, &ts.ram);
	ts.nvme_enabled = fs->nvme != NULL;
	ts.nvme_policy = dlfs_nvme_policy_name(fs->conf.cache_policy);
	dlfs_nvme_get_stats(fs->nvme, &ts.nvme);
	ts.pf_enabled = fs->prefetch != NULL;
	ts.pf_window_max = fs->prefetch ? fs->conf.readahead : 0;
	ts.pf_dropped = dlfs_prefetch_dropped(fs->prefetch);
	ts.pf_planned = dlfs_prefetch_planned(fs->prefetch);
	ts.epoch = fs->views ? dlfs_views_current(fs->views) : UINT64_MAX;
	ts.peer_enabled = fs->peer != NULL;
	ts.rank = dlfs_peer_rank(fs->peer);
	ts.ranks = dlfs_peer_size(fs->peer);
	if (fs->peer)
		dlfs_peer_get_stats(fs->peer, &ts.peer);
	ts.stage = dlfs_stage_name(fs->conf.stage);
	dlfs_stage_get(fs->stage, &ts.staged_chunks, &ts.staged_bytes,
		       &ts.stage_done);
	size_t need = dlfs_stats_json(&fs->stats, &ts, NULL, 0) + 1;
	char *b = malloc(need);
	if (!b)
		return -ENOMEM;
	*len = dlfs_stats_json(&fs->stats, &ts, b, need);
	*json = b;
	return 0;
}

/* ---- namespace ops ---- */

static void dlfs_ll_lookup(fuse_req_t req, fuse_ino_t parent,
			   const char *name)
{
	struct dlfs_fs *fs = fs_of(req);
	struct fuse_entry_param e;
	struct dlfs_txn *t;
	struct dlfs_inode in;
	uint64_t ino;
	int ret;

	dlfs_stats_add(&fs->stats.ops[DLFS_OP_LOOKUP], 1);
	memset(&e, 0, sizeof(e));
	ret = txn_of(fs, &t);
	if (ret)
		goto fail;
	if (parent == DLFS_ROOT_INO || dlfs_ctl_is(parent)) {
		ret = dlfs_ctl_lookup(&fs->ctl, t, parent, name, &ino, &e.attr,
				      &e.attr_timeout);
		if (!ret) {
			e.ino = ino;
			e.entry_timeout = fs->timeout;
			fuse_reply_entry(req, &e);
			return;
		}
		if (ret != -ENOENT || dlfs_ctl_is(parent))
			goto fail;
	}
	ret = dlfs_lookup(t, parent, name, strlen(name), &ino, NULL);
	if (ret == -ENOENT) {
		/* Negative entries are cached as long as positive ones. */
		e.ino = 0;
		e.entry_timeout = fs->timeout;
		fuse_reply_entry(req, &e);
		return;
	}
	if (!ret)
		ret = dlfs_stat(t, ino, &in, NULL);
	if (ret)
		goto fail;
	fill_attr(fs, &in, &e.attr);
	e.ino = ino;
	e.generation = 1;
	e.attr_timeout = fs->timeout;
	e.entry_timeout = fs->timeout;
	fuse_reply_entry(req, &e);
	return;
fail:
	fuse_reply_err(req, -ret);
}

static void dlfs_ll_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	(void)ino;
	(void)nlookup;
	fuse_reply_none(req); /* inodes are stateless */
}

static void dlfs_ll_forget_multi(fuse_req_t req, size_t count,
				 struct fuse_forget_data *forgets)
{
	(void)count;
	(void)forgets;
	fuse_reply_none(req);
}

static void dlfs_ll_getattr(fuse_req_t req, fuse_ino_t ino,
			    struct fuse_file_info *fi)
{
	struct dlfs_fs *fs = fs_of(req);
	struct dlfs_txn *t;
	struct dlfs_inode in;
	struct stat st;
	int ret;
	(void)fi;

	dlfs_stats_add(&fs->stats.ops[DLFS_OP_GETATTR], 1);
	ret = txn_of(fs, &t);
	if (!ret && dlfs_ctl_is(ino)) {
		double tmo;
		ret = dlfs_ctl_getattr(&fs->ctl, t, ino, &st, &tmo);
		if (ret)
			goto fail;
		fuse_reply_attr(req, &st, tmo);
		return;
	}
	if (!ret)
		ret = dlfs_stat(t, ino, &in, NULL);
	if (ret)
		goto fail;
	fill_attr(fs, &in, &st);
	fuse_reply_attr(req, &st, fs->timeout);
	return;
fail:
	fuse_reply_err(req, -ret);
}

static void dlfs_ll_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct dlfs_fs *fs = fs_of(req);
	struct dlfs_txn *t;
	struct dlfs_inode in;
	char target[PATH_MAX + 1];
	int ret;

	dlfs_stats_add(&fs->stats.ops[DLFS_OP_READLINK], 1);
	ret = dlfs_ctl_is(ino) ? -EINVAL : txn_of(fs, &t);
	if (!ret)
		ret = dlfs_stat(t, ino, &in, NULL);
	if (!ret && !S_ISLNK(in.mode))
		ret = -EINVAL;
	if (!ret && in.size > PATH_MAX)
		ret = -ENAMETOOLONG;
	if (ret) {
		fuse_reply_err(req, -ret);
		return;
	}
	memcpy(target, in.target, in.size);
	target[in.size] = '\0';
	fuse_reply_readlink(req, target);
}

/* open and opendir answer ENOSYS: the kernel then stops sending OPEN and
 * RELEASE altogether and keeps its page cache, as with keep_cache. */
static void dlfs_ll_open(fuse_req_t req, fuse_ino_t ino,
			 struct fuse_file_info *fi)
{
	(void)ino;
	(void)fi;
	fuse_reply_err(req, ENOSYS);
}

static void dlfs_ll_opendir(fuse_req_t req, fuse_ino_t ino,
			    struct fuse_file_info *fi)
{
	(void)ino;
	(void)fi;
	fuse_reply_err(req, ENOSYS);
}

/* ---- readdir ---- */

struct dir_fill {
	fuse_req_t req;
	struct dlfs_fs *fs;
	struct dlfs_txn *t;
	char *buf;
	size_t size, used;
	int plus;
	int err;
};

/* Add one entry; @return 1 when the buffer is full. */
static int add_entry(struct dir_fill *d, const char *name, size_t len,
		     const struct stat *st, off_t next)
{
	char nm[DLFS_NAME_MAX + 1];
	memcpy(nm, name, len);
	nm[len] = '\0';
	size_t room = d->size - d->used, need;
	if (d->plus) {
		struct fuse_entry_param e = {
			.ino = st->st_ino,
			.generation = 1,
			.attr = *st,
			/* The stats change all the time. */
			.attr_timeout = st->st_ino == DLFS_CTL_STATS
						? 0
						: d->fs->timeout,
			.entry_timeout = d->fs->timeout,
		};
		need = fuse_add_direntry_plus(d->req, d->buf + d->used, room,
					      nm, &e, next);
	} else {
		need = fuse_add_direntry(d->req, d->buf + d->used, room, nm,
					 st, next);
	}
	if (need > room)
		return 1;
	d->used += need;
	return 0;
}

static int fill_one(void *arg, const struct dlfs_dirent *de)
{
	struct dir_fill *d = arg;
	struct stat st;
	if (d->plus) {
		struct dlfs_inode in;
		int ret = dlfs_stat(d->t, de->ino, &in, NULL);
		if (ret)
			return ret;
		fill_attr(d->fs, &in, &st);
	} else {
		memset(&st, 0, sizeof(st));
		st.st_ino = de->ino;
		st.st_mode = de->type;
	}
	/* Offsets 1 and 2 are "." and "..". */
	return add_entry(d, de->name, de->name_len, &st,
			 (off_t)(de->cookie + 2));
}

static int ctl_fill_one(void *arg, const char *name, const struct stat *st,
			uint64_t next)
{
	return add_entry(arg, name, strlen(name), st, (off_t)next);
}

static void do_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       int plus)
{
	struct dlfs_fs *fs = fs_of(req);
	struct dir_fill d = {.req = req, .fs = fs, .size = size, .plus = plus};
	struct stat st;
	int ret = 0;

	dlfs_stats_add(&fs->stats.ops[plus ? DLFS_OP_READDIRPLUS
					   : DLFS_OP_READDIR],
		       1);
	d.buf = malloc(size);
	if (!d.buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	ret = txn_of(fs, &d.t);
	if (ret)
		goto out;
	if (dlfs_ctl_is(ino)) {
		ret = dlfs_ctl_readdir(&fs->ctl, d.t, ino, (uint64_t)off,
				       ctl_fill_one, &d);
		goto out;
	}
	struct dlfs_inode self;
	ret = dlfs_stat(d.t, ino, &self, NULL);
	if (ret)
		goto out;
	if (!S_ISDIR(self.mode)) {
		ret = -ENOTDIR;
		goto out;
	}
	if (off < 1) {
		fill_attr(fs, &self, &st);
		if (add_entry(&d, ".", 1, &st, 1))
			goto out;
		off = 1;
	}
	if (off < 2) {
		/* ".." needs no lookup count: the kernel resolves it. */
		memset(&st, 0, sizeof(st));
		st.st_mode = S_IFDIR;
		st.st_ino = DLFS_ROOT_INO;
		if (add_entry(&d, "..", 2, &st, 2))
			goto out;
		off = 2;
	}
	ret = dlfs_readdir(d.t, ino, (uint64_t)off - 2, fill_one, &d, NULL);
out:
	if (ret && !d.used)
		fuse_reply_err(req, -ret);
	else
		fuse_reply_buf(req, d.buf, d.used);
	free(d.buf);
}

static void dlfs_ll_readdir(fuse_req_t req, fuse_ino_t ino, size_t size,
			    off_t off, struct fuse_file_info *fi)
{
	(void)fi;
	do_readdir(req, ino, size, off, 0);
}

static void dlfs_ll_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size,
				off_t off, struct fuse_file_info *fi)
{
	(void)fi;
	do_readdir(req, ino, size, off, 1);
}

/* ---- read ---- */

/* Name a file in the log once: finding its path scans the index. */
static void log_read_error(struct dlfs_fs *fs, uint64_t ino,
			   const struct dlfs_err *err)
{
	int seen = 0;
	pthread_mutex_lock(&fs->log_lock);
	for (unsigned i = 0; i < fs->n_logged && i < 64; i++)
		if (fs->logged[i] == ino)
			seen = 1;
	if (!seen)
		fs->logged[fs->n_logged++ % 64] = ino;
	pthread_mutex_unlock(&fs->log_lock);
	if (seen)
		return;
	char path[4096] = "?";
	char quoted[4096 * 4];
	struct dlfs_txn *t;
	if (txn_of(fs, &t) == 0)
		dlfs_path_of(t, ino, path, sizeof(path), NULL);
	dlfs_quote(path, strlen(path), quoted, sizeof(quoted));
	dlfs_log(fs, LOG_ERR, "read of '%s' (inode %llu) failed: %s", quoted,
		 (unsigned long long)ino, err->msg);
}

#define DLFS_READ_IOV 32

/* Files up to this size are checked alone when their chunk is damaged. */
#define DLFS_SALVAGE_MAX (UINT64_C(64) << 20)

/*
 * A chunk that fails its checksum is damaged somewhere, not necessarily
 * in this file. Read this file alone from its container and check it
 * against its own checksum: an intact neighbour of the damage stays
 * readable. The bytes are served from a private buffer, never cached.
 * @return 0 with *out (malloc'd, in->size bytes), or -EBADMSG.
 */
static int salvage(struct dlfs_fs *fs, const struct dlfs_inode *in,
		   char **out, struct dlfs_err *err)
{
	size_t got;
	*out = NULL;
	if (in->size > DLFS_SALVAGE_MAX)
		return dlfs_err_set(err, -DLFS_ECHECKSUM,
				    "its chunk failed its checksum and the "
				    "file is too large to check alone");
	char *b = malloc(in->size ? in->size : 1);
	if (!b)
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	int ret = dlfs_file_pread(fs->ds, in, b, in->size, 0, &got, err);
	if (!ret && (got != in->size || XXH3_64bits(b, got) != in->xxh3))
		ret = dlfs_err_set(err, -DLFS_ECHECKSUM,
				   "file checksum mismatch (container %u, "
				   "offset %llu)",
				   in->container,
				   (unsigned long long)in->offset);
	if (ret) {
		free(b);
		return ret;
	}
	*out = b;
	return 0;
}

static void dlfs_ll_read(fuse_req_t req, fuse_ino_t ino, size_t size,
			 off_t off, struct fuse_file_info *fi)
{
	struct dlfs_fs *fs = fs_of(req);
	struct dlfs_chunk_ref refs[DLFS_READ_IOV];
	struct iovec iov[DLFS_READ_IOV];
	struct dlfs_err err = {0};
	struct dlfs_txn *t;
	struct dlfs_inode in;
	unsigned n = 0;
	char *bounce = NULL;
	int ret;
	(void)fi;

	ret = txn_of(fs, &t);
	if (ret)
		goto fail;
	if (dlfs_ctl_is(ino)) {
		/* A control file is served here; a sample is its file. */
		uint64_t file_ino;
		size_t got;
		dlfs_stats_add(&fs->stats.ops[DLFS_OP_CONTROL], 1);
		bounce = malloc(size ? size : 1);
		ret = bounce ? dlfs_ctl_read(&fs->ctl, t, ino, (uint64_t)off,
					     size, bounce, &got, &file_ino)
			     : -ENOMEM;
		if (ret) {
			free(bounce);
			fuse_reply_err(req, -ret);
			return;
		}
		if (!file_ino) {
			fuse_reply_buf(req, bounce, got);
			free(bounce);
			return;
		}
		free(bounce);
		bounce = NULL;
		ino = file_ino;
	} else if (off == 0 && fs->views) {
		/* Progress of a reader of an epoch's file list. */
		dlfs_views_note_read(fs->views, t, ino);
	}
	dlfs_stats_add(&fs->stats.ops[DLFS_OP_READ], 1);
	ret = dlfs_stat(t, ino, &in, NULL);
	if (!ret && !S_ISREG(in.mode))
		ret = S_ISDIR(in.mode) ? -EISDIR : -EINVAL;
	if (ret)
		goto fail;
	if ((uint64_t)off >= in.size || size == 0) {
		fuse_reply_buf(req, NULL, 0);
		return;
	}
	uint64_t len = in.size - (uint64_t)off;
	if (len > size)
		len = size;
	const uint64_t cs = dlfs_ds_info(fs->ds)->super.chunk_size;
	uint64_t abs = in.offset + (uint64_t)off;
	uint64_t k0, k1;
	dlfs_file_chunks(cs, &in, (uint64_t)off, len, &k0, &k1);
	uint64_t nchunks = k1 - k0 + 1;
	if (fs->nvme && !dlfs_cache_contains(fs->cache, in.container, k0) &&
	    !dlfs_prefetch_in_stream(fs->prefetch, in.container, k0)) {
		/* Not in RAM and no stream through it: read just the file
		 * from the NVMe tier, if it has it, not whole chunks. */
		const uint8_t *data;
		void *b = buf_of(fs);
		if (b && dlfs_fetch_file(&fs->fetch, &in, (uint64_t)off,
					 (size_t)len, b, &data) == 0) {
			dlfs_prefetch_note(fs->prefetch, in.container, k0, 0);
			fuse_reply_buf(req, (const char *)data, len);
			dlfs_stats_add(&fs->stats.bytes_served, len);
			return;
		}
	}
	if (nchunks > DLFS_READ_IOV) {
		/* Tiny chunks and a big read: gather into one buffer. */
		bounce = malloc(len);
		if (!bounce) {
			ret = -ENOMEM;
			goto fail;
		}
	}
	uint64_t done = 0;
	for (uint64_t k = k0; k <= k1; k++) {
		struct dlfs_chunk_ref r;
		ret = dlfs_cache_get(fs->cache, in.container, k, t, &r, &err);
		if (ret)
			goto release;
		dlfs_prefetch_note(fs->prefetch, in.container, k, r.prefetched);
		uint64_t cstart = dlfs_chunk_start(cs, k);
		uint64_t from = abs + done - cstart;
		uint64_t take = r.len - from < len - done ? r.len - from
							  : len - done;
		if (from > r.len) {
			dlfs_cache_put(fs->cache, &r);
			ret = -DLFS_ECORRUPT;
			dlfs_err_set(&err, ret, "file extends past its chunk");
			goto release;
		}
		if (bounce) {
			memcpy(bounce + done, r.data + from, take);
			dlfs_cache_put(fs->cache, &r);
		} else {
			refs[n] = r;
			iov[n].iov_base = (void *)(r.data + from);
			iov[n].iov_len = take;
			n++;
		}
		done += take;
	}
	if (bounce)
		fuse_reply_buf(req, bounce, len);
	else
		fuse_reply_iov(req, iov, (int)n);
	dlfs_stats_add(&fs->stats.bytes_served, len);
release:
	for (unsigned i = 0; i < n; i++)
		dlfs_cache_put(fs->cache, &refs[i]);
	free(bounce);
	if (!ret)
		return;
	if (ret == -DLFS_ECHECKSUM) {
		dlfs_stats_add(&fs->stats.err_checksum, 1);
		char *whole;
		struct dlfs_err serr = {0};
		ret = salvage(fs, &in, &whole, &serr);
		if (!ret) {
			fuse_reply_buf(req, whole + off, len);
			dlfs_stats_add(&fs->stats.bytes_served, len);
			free(whole);
			return;
		}
		if (ret == -DLFS_ECHECKSUM)
			dlfs_err_prefix(&serr, "%s", err.msg);
		err = serr;
		goto fail_logged;
	}
fail:
	if (ret == -ENOENT || ret == -DLFS_ECORRUPT ||
	    ret == -EPROTONOSUPPORT)
		dlfs_stats_add(&fs->stats.err_container, 1);
	else
		dlfs_stats_add(&fs->stats.err_io, 1);
fail_logged:
	if (err.code)
		log_read_error(fs, ino, &err);
	/* Damaged data or a damaged or missing container: an I/O error to
	 * the reader, the one place these codes become EIO. */
	if (ret == -ENOENT || ret == -DLFS_ECORRUPT ||
	    ret == -EPROTONOSUPPORT || ret == -DLFS_ECHECKSUM)
		ret = -EIO;
	fuse_reply_err(req, -ret);
}

/* ---- the rest ---- */

static void dlfs_ll_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct dlfs_fs *fs = fs_of(req);
	const struct dlfs_info *in = dlfs_ds_info(fs->ds);
	struct statvfs sv;
	(void)ino;
	dlfs_stats_add(&fs->stats.ops[DLFS_OP_STATFS], 1);
	memset(&sv, 0, sizeof(sv));
	sv.f_bsize = 4096;
	sv.f_frsize = 4096;
	sv.f_blocks = (in->super.total_file_bytes + in->index_bytes + 4095) /
		      4096;
	sv.f_files = in->super.n_inodes;
	sv.f_namemax = DLFS_NAME_MAX;
	sv.f_flag = ST_RDONLY;
	fuse_reply_statfs(req, &sv);
}

static const char xattr_names[] =
	"user.dlfs.container\0user.dlfs.offset\0user.dlfs.xxh3";

/* The value of one of our xattrs into buf. @return length or -ENODATA. */
static int xattr_value(struct dlfs_fs *fs, fuse_ino_t ino, const char *name,
		       char *buf, size_t len, int *is_file)
{
	struct dlfs_txn *t;
	struct dlfs_inode in;
	*is_file = 0;
	if (dlfs_ctl_is(ino))
		return -ENODATA;
	int ret = txn_of(fs, &t);
	if (!ret)
		ret = dlfs_stat(t, ino, &in, NULL);
	if (ret)
		return ret;
	if (!S_ISREG(in.mode))
		return -ENODATA;
	*is_file = 1;
	if (!name)
		return 0;
	if (!strcmp(name, "user.dlfs.container"))
		return snprintf(buf, len, "%u", in.container);
	if (!strcmp(name, "user.dlfs.offset"))
		return snprintf(buf, len, "%llu",
				(unsigned long long)in.offset);
	if (!strcmp(name, "user.dlfs.xxh3"))
		return snprintf(buf, len, "%016llx",
				(unsigned long long)in.xxh3);
	return -ENODATA;
}

static void dlfs_ll_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
			     size_t size)
{
	struct dlfs_fs *fs = fs_of(req);
	char buf[64];
	int is_file;
	dlfs_stats_add(&fs->stats.ops[DLFS_OP_GETXATTR], 1);
	int n = xattr_value(fs, ino, name, buf, sizeof(buf), &is_file);
	if (n < 0)
		fuse_reply_err(req, -n);
	else if (size == 0)
		fuse_reply_xattr(req, (size_t)n);
	else if ((size_t)n > size)
		fuse_reply_err(req, ERANGE);
	else
		fuse_reply_buf(req, buf, (size_t)n);
}

static void dlfs_ll_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	struct dlfs_fs *fs = fs_of(req);
	int is_file;
	dlfs_stats_add(&fs->stats.ops[DLFS_OP_LISTXATTR], 1);
	int ret = xattr_value(fs, ino, NULL, NULL, 0, &is_file);
	size_t n = is_file ? sizeof(xattr_names) : 0;
	if (ret < 0 && ret != -ENODATA)
		fuse_reply_err(req, -ret);
	else if (size == 0)
		fuse_reply_xattr(req, n);
	else if (n > size)
		fuse_reply_err(req, ERANGE);
	else
		fuse_reply_buf(req, xattr_names, n);
}

/* Everything that would change the dataset. */
static void dlfs_ll_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
			    int to_set, struct fuse_file_info *fi)
{
	(void)ino;
	(void)attr;
	(void)to_set;
	(void)fi;
	fuse_reply_err(req, EROFS);
}

static void dlfs_ll_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
			  mode_t mode, dev_t rdev)
{
	(void)parent;
	(void)name;
	(void)mode;
	(void)rdev;
	fuse_reply_err(req, EROFS);
}

static void dlfs_ll_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
			  mode_t mode)
{
	(void)parent;
	(void)name;
	(void)mode;
	fuse_reply_err(req, EROFS);
}

static void dlfs_ll_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	(void)parent;
	(void)name;
	fuse_reply_err(req, EROFS);
}

static void dlfs_ll_symlink(fuse_req_t req, const char *link,
			    fuse_ino_t parent, const char *name)
{
	(void)link;
	(void)parent;
	(void)name;
	fuse_reply_err(req, EROFS);
}

static void dlfs_ll_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
			   fuse_ino_t newparent, const char *newname,
			   unsigned int flags)
{
	(void)parent;
	(void)name;
	(void)newparent;
	(void)newname;
	(void)flags;
	fuse_reply_err(req, EROFS);
}

static void dlfs_ll_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
			 const char *newname)
{
	(void)ino;
	(void)newparent;
	(void)newname;
	fuse_reply_err(req, EROFS);
}

static void dlfs_ll_write(fuse_req_t req, fuse_ino_t ino, const char *buf,
			  size_t size, off_t off, struct fuse_file_info *fi)
{
	(void)ino;
	(void)buf;
	(void)size;
	(void)off;
	(void)fi;
	fuse_reply_err(req, EROFS);
}

static void dlfs_ll_create(fuse_req_t req, fuse_ino_t parent, const char *name,
			   mode_t mode, struct fuse_file_info *fi)
{
	(void)parent;
	(void)name;
	(void)mode;
	(void)fi;
	fuse_reply_err(req, EROFS);
}

static void dlfs_ll_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
			     const char *value, size_t size, int flags)
{
	(void)ino;
	(void)name;
	(void)value;
	(void)size;
	(void)flags;
	fuse_reply_err(req, EROFS);
}

static void dlfs_ll_removexattr(fuse_req_t req, fuse_ino_t ino,
				const char *name)
{
	(void)ino;
	(void)name;
	fuse_reply_err(req, EROFS);
}

static void dlfs_ll_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;
	/* Symlink targets and attributes never change: let the kernel keep
	 * them; AUTO_INVAL_DATA refreshes /.dlfs/stats on each read. */
	if (conn->capable & FUSE_CAP_CACHE_SYMLINKS)
		conn->want |= FUSE_CAP_CACHE_SYMLINKS;
	if (conn->capable & FUSE_CAP_AUTO_INVAL_DATA)
		conn->want |= FUSE_CAP_AUTO_INVAL_DATA;
	if (conn->capable & FUSE_CAP_READDIRPLUS)
		conn->want |= FUSE_CAP_READDIRPLUS;
}

const struct fuse_lowlevel_ops dlfs_ll_ops = {
	.init = dlfs_ll_init,
	.lookup = dlfs_ll_lookup,
	.forget = dlfs_ll_forget,
	.forget_multi = dlfs_ll_forget_multi,
	.getattr = dlfs_ll_getattr,
	.setattr = dlfs_ll_setattr,
	.readlink = dlfs_ll_readlink,
	.mknod = dlfs_ll_mknod,
	.mkdir = dlfs_ll_mkdir,
	.unlink = dlfs_ll_unlink,
	.rmdir = dlfs_ll_unlink,
	.symlink = dlfs_ll_symlink,
	.rename = dlfs_ll_rename,
	.link = dlfs_ll_link,
	.open = dlfs_ll_open,
	.read = dlfs_ll_read,
	.write = dlfs_ll_write,
	.opendir = dlfs_ll_opendir,
	.readdir = dlfs_ll_readdir,
	.readdirplus = dlfs_ll_readdirplus,
	.statfs = dlfs_ll_statfs,
	.setxattr = dlfs_ll_setxattr,
	.getxattr = dlfs_ll_getxattr,
	.listxattr = dlfs_ll_listxattr,
	.removexattr = dlfs_ll_removexattr,
	.create = dlfs_ll_create,
};
