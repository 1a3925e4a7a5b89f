/* The NVMe tier: see nvme.h; its parts: nvme_priv.h. */
#include "nvme_map.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <syslog.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <xxhash.h>

void dlfs_nvme_usage(struct dlfs_nvme *n, uint64_t *used, uint64_t *cap)
{
	pthread_mutex_lock(&n->mu);
	*used = n->used;
	*cap = n->capacity;
	pthread_mutex_unlock(&n->mu);
}

int dlfs_nvme_has(struct dlfs_nvme *n, uint32_t c, uint64_t k)
{
	return !!(atomic_load_explicit(&n->st[gid(n, c, k)],
				       memory_order_acquire) &
		  ST_PRESENT);
}

int dlfs_nvme_holds(struct dlfs_nvme *n, uint32_t c, uint64_t k)
{
	return !!(atomic_load_explicit(&n->st[gid(n, c, k)],
				       memory_order_acquire) &
		  (ST_PRESENT | ST_QUEUED));
}

/* A cached chunk turned out bad: drop it, count it, say so (a few times). */
static void corrupt(struct dlfs_nvme *n, uint32_t c, uint64_t k,
		    const char *why)
{
	nv_forget(n, c, k);
	add(&n->corrupt, 1);
	pthread_mutex_lock(&n->mu);
	int say = n->corrupt_logs < MAX_CORRUPT_LOGS;
	n->corrupt_logs++;
	pthread_mutex_unlock(&n->mu);
	if (say)
		dlfs_logf(n->log, n->log_arg, LOG_WARNING,
		      "NVMe cache %s/%06u.cache: chunk %llu at offset %llu %s: "
		      "dropped, reading it from the PFS",
		      n->path, c, (unsigned long long)k,
		      (unsigned long long)coff(n, k), why);
}

void dlfs_nvme_drop(struct dlfs_nvme *n, uint32_t c, uint64_t k)
{
	corrupt(n, c, k, "failed its checksum");
}

/* The open cache file of a present chunk, or a negative errno (the chunk
 * is then forgotten: its file is gone). */
int dlfs_nvme_reader_fd(struct dlfs_nvme *n, uint32_t c)
{
	if (c >= n->n_containers)
		return -EINVAL;
	int fd = nv_cfd(n, c, 0);
	if (fd < 0)
		return fd;
	char name[64];
	snprintf(name, sizeof(name), "/proc/self/fd/%d", fd);
	/* Buffered: a reader outside reads a file's bytes, not a chunk,
	 * and the page cache's read-ahead serves the next ones (measured:
	 * 0.69 s against 1.0 s for an epoch of 10,000 files, O_DIRECT). */
	int rfd = open(name, O_RDONLY | O_CLOEXEC);
	if (rfd < 0)
		return -errno;
	if (!nv_own_file(rfd)) {
		close(rfd);
		return -EPERM;
	}
	return rfd;
}

static int read_fd(struct dlfs_nvme *n, uint32_t c, uint64_t k)
{
	int fd = nv_cfd(n, c, 0);
	if (fd < 0) {
		nv_fault(n, LOG_GONE, fd, "cache file missing", c);
		nv_forget(n, c, k);
	}
	return fd;
}

/*
 * Chunk g is queued to be written: copy it from its write buffer (caller
 * holds mu). A chunk the RAM tier let go before the writer reached it is
 * then not read from the PFS a second time. @return 0 or -ENOENT.
 */
static int from_queue(struct dlfs_nvme *n, uint32_t c, uint64_t k, void *buf,
		      size_t len)
{
	for (unsigned j = 0; j <= n->q_len; j++) {
		unsigned i;
		if (j < n->q_len)
			i = n->queue[(n->q_head + j) % n->pool_n];
		else if (n->writing)
			i = n->writing_i;
		else
			break;
		const struct wbuf *w = &n->pool[i];
		if (w->c == c && w->k == k && w->len == len) {
			memcpy(buf, w->buf, len);
			return 0;
		}
	}
	return -ENOENT;
}

int dlfs_nvme_read_chunk(struct dlfs_nvme *n, uint32_t c, uint64_t k,
			 size_t len, uint64_t xxh3, void *buf, size_t cap)
{
	uint64_t g = gid(n, c, k);
	uint8_t st = atomic_load_explicit(&n->st[g], memory_order_acquire);
	if (!(st & ST_PRESENT) && (st & ST_QUEUED) && len <= cap) {
		pthread_mutex_lock(&n->mu);
		int ret = from_queue(n, c, k, buf, len);
		pthread_mutex_unlock(&n->mu);
		/* Verified before it was queued; checked again all the same,
		 * as every chunk entering a reader is. */
		if (!ret && XXH3_64bits(buf, len) == xxh3) {
			add(&n->hits, 1);
			add(&n->bytes, len);
			return 0;
		}
	}
	if (!(st & ST_PRESENT)) {
		add(&n->misses, 1);
		return -ENOENT;
	}
	size_t want = (size_t)alloc_of(len);
	if (want > cap || !whole_len(n, c, k, len)) {
		add(&n->misses, 1);
		return -ENOENT;
	}
	int fd = read_fd(n, c, k);
	if (fd < 0) {
		add(&n->misses, 1);
		return -EIO;
	}
	ssize_t got = dlfs_pread_full(fd, buf, want, coff(n, k));
	if (got < 0) {
		nv_fault(n, LOG_READ, (int)got, "read failed", c);
		nv_forget(n, c, k);
		add(&n->misses, 1);
		return -EIO;
	}
	if ((size_t)got < len) {
		corrupt(n, c, k, "is truncated");
		add(&n->misses, 1);
		return -DLFS_ECHECKSUM;
	}
	if (!n->direct[c])
		posix_fadvise(fd, (off_t)coff(n, k), (off_t)want,
			      POSIX_FADV_DONTNEED);
	if (XXH3_64bits(buf, len) != xxh3) {
		corrupt(n, c, k, "failed its checksum");
		add(&n->misses, 1);
		return -DLFS_ECHECKSUM;
	}
	atomic_fetch_or_explicit(&n->st[g], ST_VERIFIED | ST_REF,
				 memory_order_relaxed);
	add(&n->hits, 1);
	add(&n->bytes, len);
	return 0;
}

/* Chunks of container c under [off, off + len). */
static void range_chunks(const struct dlfs_nvme *n, uint64_t off, size_t len,
			 uint64_t *k0, uint64_t *k1)
{
	*k0 = dlfs_chunk_at(n->cs, off);
	*k1 = dlfs_chunk_at(n->cs, off + len - 1);
}

int dlfs_nvme_range_verified(struct dlfs_nvme *n, uint32_t c, uint64_t off,
			     size_t len)
{
	uint64_t k0, k1;
	range_chunks(n, off, len, &k0, &k1);
	for (uint64_t k = k0; k <= k1; k++)
		if ((atomic_load_explicit(&n->st[gid(n, c, k)],
					  memory_order_acquire) &
		     (ST_PRESENT | ST_VERIFIED)) != (ST_PRESENT | ST_VERIFIED))
			return 0;
	return 1;
}

int dlfs_nvme_pread(struct dlfs_nvme *n, uint32_t c, uint64_t off,
		    size_t len, void *buf, const uint8_t **data, int *stable)
{
	uint64_t k0, k1;
	range_chunks(n, off, len, &k0, &k1);
	uint64_t seq = atomic_load_explicit(n->evict_seq, memory_order_acquire);
	for (uint64_t k = k0; k <= k1; k++)
		if (!(atomic_load_explicit(&n->st[gid(n, c, k)],
					   memory_order_acquire) &
		      ST_PRESENT))
			return -ENOENT; /* the chunk path counts the miss */
	int fd = read_fd(n, c, k0);
	if (fd < 0) {
		add(&n->misses, 1);
		return -EIO;
	}
	uint64_t a0 = off & ~UINT64_C(4095);
	size_t want = (size_t)(dlfs_roundup(off + len, 4096) - a0);
	ssize_t got = dlfs_pread_full(fd, buf, want, a0);
	if (got < 0 || (uint64_t)got < off + len - a0) {
		if (got < 0)
			nv_fault(n, LOG_READ, (int)got, "read failed", c);
		for (uint64_t k = k0; k <= k1; k++)
			if (got < 0)
				nv_forget(n, c, k);
			else
				corrupt(n, c, k, "is truncated");
		add(&n->misses, 1);
		return -EIO;
	}
	if (!n->direct[c])
		posix_fadvise(fd, (off_t)a0, (off_t)want, POSIX_FADV_DONTNEED);
	for (uint64_t k = k0; k <= k1; k++)
		atomic_fetch_or_explicit(&n->st[gid(n, c, k)], ST_REF,
					 memory_order_relaxed);
	*data = (const uint8_t *)buf + (off - a0);
	*stable = atomic_load_explicit(n->evict_seq, memory_order_acquire) ==
		  seq;
	add(&n->hits, 1);
	add(&n->bytes, len);
	return 0;
}

/*
 * The default capacity: the whole dataset, within 90% of the room the
 * cache disk has for this tier, which is its free space plus what the
 * tier already holds there. Free space alone would make a remount of a
 * full tier shrink it to nothing and evict the very chunks it was kept
 * for.
 */
static int default_capacity(struct dlfs_nvme *n, struct dlfs_err *err)
{
	uint64_t total = 0;
	for (uint32_t c = 0; c < n->n_containers; c++)
		total += dlfs_roundup(n->cont[c].data_size, 4096);
	struct statvfs sv;
	if (fstatvfs(n->dirfd, &sv) < 0)
		return dlfs_err_sys(err, -errno, "cache_dir %s", n->path);
	uint64_t room = (uint64_t)sv.f_bavail * sv.f_frsize / 10 * 9 + n->used;
	n->capacity = total < room ? total : room;
	return 0;
}

static int setup(struct dlfs_nvme *n, const struct dlfs_nvme_conf *conf,
		 struct dlfs_err *err)
{
	int ret;
	if (asprintf(&n->path, "%s/%s", conf->dir, conf->dataset_id_hex) < 0) {
		n->path = NULL;
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	}
	if ((ret = nv_open_tier_dir(n, conf->dir, conf->dataset_id_hex, err)))
		return ret;
	/* The lock first, so that emptying below cannot pull the files from
	 * under another mount of ours. A lock file we cannot trust is
	 * replaced: removing a name never follows it. */
	struct stat st;
	if (fstatat(n->dirfd, "lock", &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    !nv_own_stat(&st) && unlinkat(n->dirfd, "lock", 0) < 0)
		return dlfs_err_sys(err, -errno, "%s/lock", n->path);
	n->lock_fd = openat(n->dirfd, "lock",
			    O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (n->lock_fd < 0)
		return dlfs_err_sys(err, -errno, "%s/lock", n->path);
	if (!nv_own_file(n->lock_fd))
		return dlfs_err_set(err, -EPERM,
				    "%s/lock: not a private file of this "
				    "user: refusing the cache tier",
				    n->path);
	if (flock(n->lock_fd, LOCK_EX | LOCK_NB) < 0)
		return errno == EWOULDBLOCK
			       ? dlfs_err_set(err, -EBUSY,
					      "%s is in use by another dlfs "
					      "mount of this dataset",
					      n->path)
			       : dlfs_err_sys(err, -errno, "%s/lock", n->path);
	ret = n->was_open ? 0 : nv_audit(n, err);
	if (ret < 0)
		return ret;
	if (!ret) {
		dlfs_logf(n->log, n->log_arg, LOG_WARNING,
			  "NVMe cache %s: %s: starting empty", n->path,
			  n->was_open ? "the directory was open to other "
					"users, so what it holds is not trusted"
				      : "holds files this user does not own "
					"alone (or symlinks): not trusted");
		if ((ret = nv_wipe(n, 1, err)))
			return ret;
	}
	if ((ret = nv_load_map(n, err)))
		return ret;

	for (uint32_t c = 0; c < n->n_containers; c++)
		for (uint64_t k = 0; k < n->cont[c].n_chunks; k++)
			if (atomic_load(&n->st[gid(n, c, k)]) & ST_PRESENT) {
				n->present++;
				n->used += alloc_of(clen(n, c, k));
			}
	if (!n->capacity && (ret = default_capacity(n, err)))
		return ret;
	/* A smaller cache_size than last time: shrink now, any policy. */
	while (n->used > n->capacity) {
		uint64_t g = nv_clock_victim(n);
		if (g == UINT64_MAX)
			break;
		uint32_t c = nv_container_of(n, g);
		nv_forget_locked(n, g, c);
		nv_cfd(n, c, 0); /* so that unmap can free the blocks */
		nv_unmap(n, g, c);
	}
	return 0;
}

int dlfs_nvme_open(const struct dlfs_nvme_conf *conf, struct dlfs_nvme **out,
		   struct dlfs_err *err)
{
	int ret;
	*out = NULL;
	if (!conf->dir || !conf->n_containers || conf->chunk_size < 4096 ||
	    conf->chunk_size % 4096)
		return dlfs_err_set(err, -EINVAL, "NVMe tier: bad settings");
	struct dlfs_nvme *n = calloc(1, sizeof(*n));
	if (!n)
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	n->dirfd = n->lock_fd = n->map_fd = -1;
	n->cs = conf->chunk_size;
	n->short_chunks = conf->short_chunks;
	n->capacity = conf->capacity;
	n->policy = conf->policy;
	n->n_containers = conf->n_containers;
	n->log = conf->log;
	n->log_arg = conf->log_arg;
	pthread_mutex_init(&n->mu, NULL);
	pthread_cond_init(&n->work, NULL);
	pthread_cond_init(&n->idle, NULL);
	pthread_cond_init(&n->room, NULL);

	n->cont = conf->containers;
	n->fd = calloc(conf->n_containers, sizeof(*n->fd));
	n->direct = calloc(conf->n_containers, 1);
	if (!n->fd || !n->direct) {
		ret = dlfs_err_set(err, -ENOMEM, "out of memory");
		goto fail;
	}
	for (uint32_t c = 0; c < conf->n_containers; c++)
		atomic_init(&n->fd[c], -1);
	n->n_chunks = n->cont[conf->n_containers - 1].first_chunk +
		      n->cont[conf->n_containers - 1].n_chunks;
	n->evict_seq = conf->shared_seq ? (_Atomic uint64_t *)conf->shared_seq
					 : &n->evict_own;
	n->st_placed = conf->shared_st != NULL;
	n->st = n->st_placed ? (_Atomic uint8_t *)conf->shared_st
			     : calloc(n->n_chunks ? n->n_chunks : 1, 1);
	uint64_t pool = POOL_BYTES / n->cs;
	n->pool_n = (unsigned)(pool < 2 ? 2 : pool > 64 ? 64 : pool);
	n->pool = calloc(n->pool_n, sizeof(*n->pool));
	n->free_idx = calloc(n->pool_n, sizeof(unsigned));
	n->queue = calloc(n->pool_n, sizeof(unsigned));
	if (!n->st || !n->pool || !n->free_idx || !n->queue) {
		ret = dlfs_err_set(err, -ENOMEM, "out of memory");
		goto fail;
	}
	for (unsigned i = 0; i < n->pool_n; i++) {
		if (posix_memalign((void **)&n->pool[i].buf, 4096,
				   alloc_of(n->cs))) {
			n->pool[i].buf = NULL;
			ret = dlfs_err_set(err, -ENOMEM, "out of memory");
			goto fail;
		}
		n->free_idx[n->n_free++] = i;
	}
	if (n->n_chunks && (ret = setup(n, conf, err)))
		goto fail;
	*out = n;
	return 0;
fail:
	dlfs_nvme_close(n);
	return ret;
}

int dlfs_nvme_start(struct dlfs_nvme *n, struct dlfs_err *err)
{
	int ret = pthread_create(&n->writer, NULL, nv_writer_main, n);
	if (ret)
		return dlfs_err_set(err, -ret, "NVMe tier: writer thread");
	n->writer_started = 1;
	return 0;
}

void dlfs_nvme_close(struct dlfs_nvme *n)
{
	if (!n)
		return;
	if (n->writer_started) {
		pthread_mutex_lock(&n->mu);
		n->stop = 1;
		pthread_cond_broadcast(&n->work);
		pthread_cond_broadcast(&n->room);
		pthread_mutex_unlock(&n->mu);
		pthread_join(n->writer, NULL);
	}
	if (n->map_fd >= 0) {
		fdatasync(n->map_fd);
		close(n->map_fd);
	}
	for (uint32_t c = 0; n->fd && c < n->n_containers; c++)
		if (atomic_load(&n->fd[c]) >= 0)
			close(atomic_load(&n->fd[c]));
	if (n->lock_fd >= 0)
		close(n->lock_fd); /* releases the flock */
	if (n->dirfd >= 0)
		close(n->dirfd);
	for (unsigned i = 0; n->pool && i < n->pool_n; i++)
		free(n->pool[i].buf);
	free(n->pool);
	free(n->free_idx);
	free(n->queue);
	if (!n->st_placed)
		free((void *)n->st);
	free(n->fd);
	free(n->direct);
	free(n->path);
	pthread_mutex_destroy(&n->mu);
	pthread_cond_destroy(&n->work);
	pthread_cond_destroy(&n->idle);
	pthread_cond_destroy(&n->room);
	free(n);
}

void dlfs_nvme_get_stats(struct dlfs_nvme *n, struct dlfs_nvme_stats *s)
{
	memset(s, 0, sizeof(*s));
	if (!n)
		return;
	pthread_mutex_lock(&n->mu);
	s->used_bytes = n->used;
	s->chunks = n->present;
	pthread_mutex_unlock(&n->mu);
	s->capacity_bytes = n->capacity;
	s->hits = atomic_load(&n->hits);
	s->misses = atomic_load(&n->misses);
	s->bytes = atomic_load(&n->bytes);
	s->written_chunks = atomic_load(&n->written_chunks);
	s->written_bytes = atomic_load(&n->written_bytes);
	s->write_dropped = atomic_load(&n->write_dropped);
	s->evicted = atomic_load(&n->evicted);
	s->corrupt = atomic_load(&n->corrupt);
	s->errors = atomic_load(&n->errors);
}

const char *dlfs_nvme_policy_name(enum dlfs_nvme_policy p)
{
	return p == DLFS_NVME_LRU ? "lru" : "keep";
}

int dlfs_nvme_policy_parse(const char *s, enum dlfs_nvme_policy *p)
{
	if (!strcmp(s, "keep"))
		*p = DLFS_NVME_KEEP;
	else if (!strcmp(s, "lru"))
		*p = DLFS_NVME_LRU;
	else
		return -EINVAL;
	return 0;
}
