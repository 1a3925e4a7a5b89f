/* The NVMe tier: see nvme.h. */
#include "nvme.h"

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

#include "dlfs/format.h"
#include "util.h"

#include <xxhash.h>

/* Per-chunk state bits. Only PRESENT is persisted (in the map file). */
#define ST_PRESENT 1u
#define ST_VERIFIED 2u /* checked against the index since the tier opened */
#define ST_REF 4u      /* CLOCK's referenced bit */
#define ST_QUEUED 8u   /* in the write queue or being written */

#define MAP_MAGIC "DLFSNVM1"
#define MAP_VERSION 1
#define MAP_HEADER 64
#define POOL_BYTES (UINT64_C(64) << 20)
#define MAX_CORRUPT_LOGS 10
#define TURNED_Q 256 /* chunks turned away for want of room, newest kept */

/* Faults logged once each. */
enum { LOG_ENOSPC = 1, LOG_WRITE = 2, LOG_READ = 4, LOG_GONE = 8, LOG_MAP = 16 };

struct wbuf {
	uint32_t c;
	uint64_t k;
	size_t len;
	uint8_t *buf;
};

struct dlfs_nvme {
	char *path; /* DIR/<id> */
	int dirfd, lock_fd, map_fd;
	uint64_t cs, capacity;
	enum dlfs_nvme_policy policy;
	uint32_t n_containers;
	const struct dlfs_container *cont; /* the container table, borrowed */
	uint64_t n_chunks;
	_Atomic uint8_t *st;
	_Atomic int *fd; /* per container: -1 not open yet */
	uint8_t *direct; /* per container: fd has O_DIRECT */

	pthread_mutex_t mu; /* guards everything below and state changes */
	pthread_cond_t work, idle, room;
	struct wbuf *pool;
	unsigned pool_n, n_free, q_head, q_len;
	unsigned *free_idx, *queue;
	int writing, stop, writer_started, paused;
	unsigned writing_i; /* the pool entry being written, when writing */
	int gone; /* the cache directory was removed: write nothing more */
	uint64_t turned[TURNED_Q]; /* global chunks, a ring */
	unsigned t_head, t_len;
	int was_open; /* the directory was not private when opened */
	pthread_t writer;
	uint64_t used, present, hand;
	unsigned logged, corrupt_logs;

	_Atomic uint64_t evict_seq;
	_Atomic uint64_t hits, misses, bytes, written_chunks, written_bytes;
	_Atomic uint64_t write_dropped, evicted, corrupt, errors;

	dlfs_log_fn log;
	void *log_arg;
};

static void add(_Atomic uint64_t *c, uint64_t v)
{
	atomic_fetch_add_explicit(c, v, memory_order_relaxed);
}

/* Log a fault of kind bit once per mount; count it always. */
static void fault(struct dlfs_nvme *n, unsigned bit, int code,
		  const char *what, uint32_t c)
{
	char eb[128];
	add(&n->errors, 1);
	pthread_mutex_lock(&n->mu);
	int first = !(n->logged & bit);
	n->logged |= bit;
	pthread_mutex_unlock(&n->mu);
	if (first)
		dlfs_logf(n->log, n->log_arg, LOG_WARNING,
		      "NVMe cache %s: %s (container %u): %s; reading from the "
		      "PFS instead (logged once)",
		      n->path, what, c, dlfs_strerror(code, eb, sizeof(eb)));
}

static uint64_t gid(const struct dlfs_nvme *n, uint32_t c, uint64_t k)
{
	return n->cont[c].first_chunk + k;
}

static size_t clen(const struct dlfs_nvme *n, uint32_t c, uint64_t k)
{
	uint64_t left = n->cont[c].data_size - k * n->cs;
	return (size_t)(left < n->cs ? left : n->cs);
}

static uint64_t alloc_of(size_t len)
{
	return dlfs_roundup(len, 4096);
}

/* Offset of chunk k in a container (and in its cache file). */
static uint64_t coff(const struct dlfs_nvme *n, uint64_t k)
{
	return dlfs_chunk_start(n->cs, k);
}

/* Which container holds global chunk g. */
static uint32_t container_of(const struct dlfs_nvme *n, uint64_t g)
{
	uint32_t c;
	uint64_t k;
	dlfs_container_locate(n->cont, n->n_containers, n->n_chunks, g, &c,
			      &k);
	return c;
}

static void cache_name(uint32_t c, char *buf, size_t len)
{
	snprintf(buf, len, "%06u.cache", c);
}

/*
 * A file of the tier that only this daemon can have written: a regular
 * file (not a device, fifo or, with O_NOFOLLOW, a symlink), owned by our
 * uid, with one name (not a hard link to a file elsewhere), and no access
 * for anyone else. Anything else another user may have planted or may
 * still write, and the "verified" state of its chunks would mean nothing.
 */
static int own_stat(const struct stat *st)
{
	return S_ISREG(st->st_mode) && st->st_uid == geteuid() &&
	       st->st_nlink == 1 && !(st->st_mode & 077);
}

static int own_file(int fd)
{
	struct stat st;
	return fstat(fd, &st) == 0 && own_stat(&st);
}

/*
 * The cache file of container c, opened on first use (created only when
 * create is set). @return an fd, or a negative errno.
 */
static int cfd(struct dlfs_nvme *n, uint32_t c, int create)
{
	int fd = atomic_load_explicit(&n->fd[c], memory_order_acquire);
	if (fd >= 0)
		return fd;
	char name[32];
	cache_name(c, name, sizeof(name));
	pthread_mutex_lock(&n->mu);
	fd = atomic_load_explicit(&n->fd[c], memory_order_relaxed);
	if (fd < 0) {
		int flags = O_RDWR | O_CLOEXEC | O_NOFOLLOW |
			    (create ? O_CREAT : 0);
		fd = openat(n->dirfd, name, flags | O_DIRECT, 0600);
		if (fd < 0 && errno == EINVAL) /* no O_DIRECT here (tmpfs) */
			fd = openat(n->dirfd, name, flags, 0600);
		else if (fd >= 0)
			n->direct[c] = 1;
		if (fd < 0) {
			fd = -errno;
		} else if (!own_file(fd)) {
			close(fd);
			fd = -EPERM;
		} else {
			dlfs_precache_extents(fd);
			atomic_store_explicit(&n->fd[c], fd,
					      memory_order_release);
		}
	}
	pthread_mutex_unlock(&n->mu);
	return fd;
}

static void map_set(struct dlfs_nvme *n, uint64_t g, uint8_t v, uint32_t c)
{
	ssize_t w = pwrite(n->map_fd, &v, 1, (off_t)(MAP_HEADER + g));
	if (w != 1)
		fault(n, LOG_MAP, w < 0 ? -errno : -EIO, "map update failed",
		      c);
}

/* Take chunk g out of the tier (caller holds mu); the caller then calls
 * unmap() without the lock. @return 1 if it was present. */
static int forget_locked(struct dlfs_nvme *n, uint64_t g, uint32_t c)
{
	uint8_t s = atomic_load_explicit(&n->st[g], memory_order_relaxed);
	if (!(s & ST_PRESENT))
		return 0;
	atomic_fetch_and_explicit(&n->st[g], (uint8_t)~(ST_PRESENT | ST_VERIFIED),
				  memory_order_release);
	atomic_fetch_add_explicit(&n->evict_seq, 1, memory_order_acq_rel);
	n->used -= alloc_of(clen(n, c, g - n->cont[c].first_chunk));
	n->present--;
	return 1;
}

/* Clear the map byte and free the blocks of chunk g. */
static void unmap(struct dlfs_nvme *n, uint64_t g, uint32_t c)
{
	uint64_t k = g - n->cont[c].first_chunk;
	map_set(n, g, 0, c);
	int fd = atomic_load_explicit(&n->fd[c], memory_order_acquire);
	if (fd >= 0)
		fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			  (off_t)coff(n, k), (off_t)alloc_of(clen(n, c, k)));
}

static void forget(struct dlfs_nvme *n, uint32_t c, uint64_t k)
{
	uint64_t g = gid(n, c, k);
	pthread_mutex_lock(&n->mu);
	int was = forget_locked(n, g, c);
	pthread_mutex_unlock(&n->mu);
	if (was)
		unmap(n, g, c);
}

/* A CLOCK victim among present chunks not being written (caller holds
 * mu). @return its global id, or UINT64_MAX. */
static uint64_t clock_victim(struct dlfs_nvme *n)
{
	for (uint64_t i = 0; i < 2 * n->n_chunks; i++) {
		uint64_t g = n->hand;
		n->hand = (n->hand + 1) % n->n_chunks;
		uint8_t s = atomic_load_explicit(&n->st[g],
						 memory_order_relaxed);
		if (!(s & ST_PRESENT) || (s & ST_QUEUED))
			continue;
		if (s & ST_REF) {
			atomic_fetch_and_explicit(&n->st[g], (uint8_t)~ST_REF,
						  memory_order_relaxed);
			continue;
		}
		return g;
	}
	return UINT64_MAX;
}

/* Evict until need more bytes fit (caller holds mu); the victims are
 * written to vict (room for max) for unmap() after the lock is dropped.
 * @return the number of victims, or -1 if it cannot make room. */
static int make_room(struct dlfs_nvme *n, uint64_t need, uint64_t *vict,
		     int max)
{
	int nv = 0;
	while (n->used + need > n->capacity) {
		uint64_t g = nv < max ? clock_victim(n) : UINT64_MAX;
		if (g == UINT64_MAX)
			return -1;
		forget_locked(n, g, container_of(n, g));
		add(&n->evicted, 1);
		vict[nv++] = g;
	}
	return nv;
}

static void write_one(struct dlfs_nvme *n, struct wbuf *w)
{
	uint64_t g = gid(n, w->c, w->k), alloc = alloc_of(w->len);
	uint64_t vict[64];
	int nv;

	/* Writing into a removed directory would fill the disk with files
	 * nobody can reach: notice it, say so once, stop writing. */
	struct stat dst;
	if (fstat(n->dirfd, &dst) == 0 && dst.st_nlink == 0) {
		pthread_mutex_lock(&n->mu);
		int first = !n->gone;
		n->gone = 1;
		pthread_mutex_unlock(&n->mu);
		add(&n->write_dropped, 1);
		if (first)
			fault(n, LOG_GONE, -ENOENT, "cache directory removed",
			      w->c);
		return;
	}
	pthread_mutex_lock(&n->mu);
	uint8_t s = atomic_load_explicit(&n->st[g], memory_order_relaxed);
	if (s & ST_PRESENT) {
		pthread_mutex_unlock(&n->mu);
		return;
	}
	if (n->policy == DLFS_NVME_KEEP)
		nv = n->used + alloc > n->capacity ? -1 : 0;
	else
		nv = make_room(n, alloc, vict, 64);
	if (nv >= 0)
		n->used += alloc; /* reserved */
	pthread_mutex_unlock(&n->mu);
	for (int i = 0; i < nv; i++)
		unmap(n, vict[i], container_of(n, vict[i]));
	if (nv < 0) {
		add(&n->write_dropped, 1);
		return;
	}

	int fd = cfd(n, w->c, 1);
	int ret = fd < 0 ? fd : 0;
	if (!ret) {
		memset(w->buf + w->len, 0, alloc - w->len);
		ret = dlfs_pwrite_full(fd, w->buf, alloc, coff(n, w->k));
		if (ret)
			fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				  (off_t)coff(n, w->k), (off_t)alloc);
		else if (!n->direct[w->c])
			/* Write back now and drop the pages: the chunk
			 * must not sit in the page cache a second time. */
			if (!sync_file_range(fd, (off_t)coff(n, w->k),
					     (off_t)alloc,
					     SYNC_FILE_RANGE_WAIT_BEFORE |
						     SYNC_FILE_RANGE_WRITE |
						     SYNC_FILE_RANGE_WAIT_AFTER))
				posix_fadvise(fd, (off_t)coff(n, w->k),
					      (off_t)alloc,
					      POSIX_FADV_DONTNEED);
	}
	if (ret) {
		pthread_mutex_lock(&n->mu);
		n->used -= alloc;
		/* The disk holds less than cache_size: what it holds now is
		 * the capacity from here on, so KEEP stops writing and LRU
		 * evicts instead of failing each write. */
		if ((ret == -ENOSPC || ret == -EDQUOT) && n->used < n->capacity)
			n->capacity = n->used;
		pthread_mutex_unlock(&n->mu);
		add(&n->write_dropped, 1);
		if (ret == -ENOSPC || ret == -EDQUOT)
			fault(n, LOG_ENOSPC, ret, "cache disk full", w->c);
		else if (ret == -ENOENT)
			fault(n, LOG_GONE, ret, "cache directory gone", w->c);
		else
			fault(n, LOG_WRITE, ret, "write failed", w->c);
		return;
	}
	map_set(n, g, 1, w->c);
	pthread_mutex_lock(&n->mu);
	atomic_fetch_or_explicit(&n->st[g], ST_PRESENT | ST_VERIFIED,
				 memory_order_release);
	n->present++;
	pthread_mutex_unlock(&n->mu);
	add(&n->written_chunks, 1);
	add(&n->written_bytes, w->len);
}

static void *writer_main(void *arg)
{
	struct dlfs_nvme *n = arg;
	pthread_mutex_lock(&n->mu);
	for (;;) {
		if (!n->q_len || (n->paused && !n->stop)) {
			if (!n->q_len)
				pthread_cond_broadcast(&n->idle);
			if (n->stop)
				break;
			pthread_cond_wait(&n->work, &n->mu);
			continue;
		}
		unsigned i = n->queue[n->q_head];
		n->q_head = (n->q_head + 1) % n->pool_n;
		n->q_len--;
		n->writing = 1;
		n->writing_i = i;
		pthread_mutex_unlock(&n->mu);

		write_one(n, &n->pool[i]);

		pthread_mutex_lock(&n->mu);
		uint64_t g = gid(n, n->pool[i].c, n->pool[i].k);
		atomic_fetch_and_explicit(&n->st[g], (uint8_t)~ST_QUEUED,
					  memory_order_relaxed);
		n->free_idx[n->n_free++] = i;
		n->writing = 0;
		pthread_cond_broadcast(&n->room);
	}
	pthread_mutex_unlock(&n->mu);
	return NULL;
}

/* The oldest turned-away chunk, taken off the ring (under mu; t_len > 0). */
static uint64_t turned_oldest(struct dlfs_nvme *n)
{
	uint64_t g = n->turned[n->t_head];
	n->t_head = (n->t_head + 1) % TURNED_Q;
	n->t_len--;
	return g;
}

/* Remember chunk g, turned away for want of room (under mu). A full ring
 * forgets its oldest: the likeliest to have left RAM already. */
static void turn_away(struct dlfs_nvme *n, uint64_t g)
{
	if (n->t_len == TURNED_Q)
		turned_oldest(n);
	n->turned[(n->t_head + n->t_len) % TURNED_Q] = g;
	n->t_len++;
}

int dlfs_nvme_next_turned_away(struct dlfs_nvme *n, uint32_t *c, uint64_t *k)
{
	pthread_mutex_lock(&n->mu);
	int got = n->t_len > 0;
	uint64_t g = got ? turned_oldest(n) : 0;
	pthread_mutex_unlock(&n->mu);
	if (got)
		dlfs_container_locate(n->cont, n->n_containers, n->n_chunks, g,
				      c, k);
	return got;
}

int dlfs_nvme_put(struct dlfs_nvme *n, uint32_t c, uint64_t k,
		  const void *data, size_t len, int wait)
{
	uint64_t g = gid(n, c, k);
	if (atomic_load_explicit(&n->st[g], memory_order_relaxed) &
	    (ST_PRESENT | ST_QUEUED))
		return 2;
	pthread_mutex_lock(&n->mu);
	for (;;) {
		uint8_t s = atomic_load_explicit(&n->st[g],
						 memory_order_relaxed);
		if (s & (ST_PRESENT | ST_QUEUED)) {
			pthread_mutex_unlock(&n->mu);
			return 2;
		}
		/* KEEP never evicts: once full, do not even copy. */
		int full = n->gone || n->stop || len > n->cs ||
			   (n->policy == DLFS_NVME_KEEP &&
			    n->used + alloc_of(len) > n->capacity);
		int later = !n->writer_started || (!n->n_free && !wait);
		if (full || later) {
			if (!full)
				turn_away(n, g);
			pthread_mutex_unlock(&n->mu);
			add(&n->write_dropped, 1);
			return 0;
		}
		if (n->n_free)
			break;
		pthread_cond_wait(&n->room, &n->mu);
	}
	unsigned i = n->free_idx[--n->n_free];
	atomic_fetch_or_explicit(&n->st[g], ST_QUEUED, memory_order_relaxed);
	pthread_mutex_unlock(&n->mu);

	struct wbuf *w = &n->pool[i];
	memcpy(w->buf, data, len);
	w->c = c;
	w->k = k;
	w->len = len;

	pthread_mutex_lock(&n->mu);
	n->queue[(n->q_head + n->q_len) % n->pool_n] = i;
	n->q_len++;
	pthread_cond_signal(&n->work);
	pthread_mutex_unlock(&n->mu);
	return 1;
}

int dlfs_nvme_has_room(struct dlfs_nvme *n, size_t len)
{
	pthread_mutex_lock(&n->mu);
	int room = !n->gone && n->used + alloc_of(len) <= n->capacity;
	pthread_mutex_unlock(&n->mu);
	return room;
}

void dlfs_nvme_usage(struct dlfs_nvme *n, uint64_t *used, uint64_t *cap)
{
	pthread_mutex_lock(&n->mu);
	*used = n->used;
	*cap = n->capacity;
	pthread_mutex_unlock(&n->mu);
}

void dlfs_nvme_pause(struct dlfs_nvme *n, int on)
{
	pthread_mutex_lock(&n->mu);
	n->paused = on;
	pthread_cond_signal(&n->work);
	pthread_mutex_unlock(&n->mu);
}

void dlfs_nvme_flush(struct dlfs_nvme *n)
{
	if (!n->writer_started)
		return;
	pthread_mutex_lock(&n->mu);
	while (n->q_len || n->writing)
		pthread_cond_wait(&n->idle, &n->mu);
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
	forget(n, c, k);
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
static int read_fd(struct dlfs_nvme *n, uint32_t c, uint64_t k)
{
	int fd = cfd(n, c, 0);
	if (fd < 0) {
		fault(n, LOG_GONE, fd, "cache file missing", c);
		forget(n, c, k);
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
	if (want > cap || len != clen(n, c, k)) {
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
		fault(n, LOG_READ, (int)got, "read failed", c);
		forget(n, c, k);
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
	uint64_t seq = atomic_load_explicit(&n->evict_seq, memory_order_acquire);
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
			fault(n, LOG_READ, (int)got, "read failed", c);
		for (uint64_t k = k0; k <= k1; k++)
			if (got < 0)
				forget(n, c, k);
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
	*stable = atomic_load_explicit(&n->evict_seq, memory_order_acquire) ==
		  seq;
	add(&n->hits, 1);
	add(&n->bytes, len);
	return 0;
}

/* ---- opening ---- */

struct map_header {
	uint8_t magic[8];
	uint32_t version, pad0;
	uint64_t chunk_size, n_chunks;
	uint32_t n_containers, pad1;
	uint64_t layout;
	uint8_t pad2[16];
};
_Static_assert(sizeof(struct map_header) == MAP_HEADER, "map header");

/* The data sizes, as little-endian u64s back to back (the map's format
 * since version 1). */
static int layout_hash(const struct dlfs_nvme *n, uint64_t *out)
{
	XXH3_state_t *st = XXH3_createState();
	if (!st)
		return -ENOMEM;
	XXH3_64bits_reset(st);
	for (uint32_t c = 0; c < n->n_containers; c++) {
		uint8_t b[8];
		dlfs_put_le64(b, n->cont[c].data_size);
		XXH3_64bits_update(st, b, sizeof(b));
	}
	*out = XXH3_64bits_digest(st);
	XXH3_freeState(st);
	return 0;
}

static int header_of(const struct dlfs_nvme *n, uint8_t *out)
{
	uint8_t *p = out;
	uint64_t h;
	int ret = layout_hash(n, &h);
	if (ret)
		return ret;
	memset(out, 0, MAP_HEADER);
	memcpy(p, MAP_MAGIC, 8);
	dlfs_put_le32(p + 8, MAP_VERSION);
	dlfs_put_le64(p + 16, n->cs);
	dlfs_put_le64(p + 24, n->n_chunks);
	dlfs_put_le32(p + 32, n->n_containers);
	dlfs_put_le64(p + 40, h);
	return 0;
}

/*
 * Remove every cache file (their map is gone or belongs elsewhere), and
 * with all set the map too. unlinkat removes a symlink, never its target.
 */
/* Rename DIR/name to DIR/name.stale-N (a name the tier never uses), with
 * a warning that says so. @return 1 if moved. */
static int moved_aside(struct dlfs_nvme *n, const char *name)
{
	char to[NAME_MAX + 1];
	for (unsigned i = 0; i < 100; i++) {
		if (snprintf(to, sizeof(to), "%.200s.stale-%u", name, i) >=
		    (int)sizeof(to))
			return 0;
		if (!renameat2(n->dirfd, name, n->dirfd, to, RENAME_NOREPLACE)) {
			dlfs_logf(n->log, n->log_arg, LOG_WARNING,
				  "NVMe cache %s: %s is a directory: moved "
				  "aside to %s (remove it)",
				  n->path, name, to);
			return 1;
		}
		if (errno != EEXIST)
			return 0;
	}
	return 0;
}

static int wipe(struct dlfs_nvme *n, int all, struct dlfs_err *err)
{
	int fd = openat(n->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	if (!d) {
		if (fd >= 0)
			close(fd);
		return dlfs_err_sys(err, -errno, "%s", n->path);
	}
	struct dirent *e;
	int ret = 0;
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name);
		/* All: also the index's local copy and its stamp (dlfs/ixcopy.h),
		 * which an untrusted directory may have had planted too. */
		if (!((l > 6 && !strcmp(e->d_name + l - 6, ".cache")) ||
		      (all && (!strcmp(e->d_name, "map") ||
			       !strcmp(e->d_name, "index") ||
			       !strcmp(e->d_name, "index.ok")))))
			continue;
		if (!unlinkat(n->dirfd, e->d_name, 0) || errno == ENOENT)
			continue;
		/* A directory where a cache file belongs: removed if empty,
		 * else moved aside (never walked into: it is not ours to
		 * trust), so the tier can start. */
		int e1 = errno;
		if (e1 == EISDIR &&
		    (!unlinkat(n->dirfd, e->d_name, AT_REMOVEDIR) ||
		     moved_aside(n, e->d_name)))
			continue;
		if (!ret)
			ret = dlfs_err_sys(err, -e1, "%s/%s: cannot remove it",
					   n->path, e->d_name);
	}
	closedir(d);
	return ret;
}

/*
 * Is every file of the tier one this daemon can trust (own_stat)?
 * @return 1, 0, or a negative errno.
 */
static int audit(struct dlfs_nvme *n, struct dlfs_err *err)
{
	int fd = openat(n->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	if (!d) {
		if (fd >= 0)
			close(fd);
		return dlfs_err_sys(err, -errno, "%s", n->path);
	}
	struct dirent *e;
	int ok = 1;
	while (ok && (e = readdir(d))) {
		size_t l = strlen(e->d_name);
		struct stat st;
		if ((l > 6 && !strcmp(e->d_name + l - 6, ".cache")) ||
		    !strcmp(e->d_name, "map"))
			ok = fstatat(n->dirfd, e->d_name, &st,
				     AT_SYMLINK_NOFOLLOW) == 0 &&
			     own_stat(&st);
	}
	closedir(d);
	return ok;
}

static int load_map(struct dlfs_nvme *n, struct dlfs_err *err)
{
	uint8_t want[MAP_HEADER], have[MAP_HEADER];
	if (header_of(n, want))
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	n->map_fd = openat(n->dirfd, "map",
			   O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (n->map_fd < 0)
		return dlfs_err_sys(err, -errno, "%s/map", n->path);
	if (!own_file(n->map_fd))
		return dlfs_err_set(err, -EPERM,
				    "%s/map: not a private file of this "
				    "user: refusing the cache tier",
				    n->path);
	ssize_t got = dlfs_pread_full(n->map_fd, have, MAP_HEADER, 0);
	uint8_t *bytes = (uint8_t *)n->st; /* same size as _Atomic uint8_t */
	_Static_assert(sizeof(_Atomic uint8_t) == 1, "atomic byte");
	if (got == MAP_HEADER && !memcmp(have, want, MAP_HEADER)) {
		got = dlfs_pread_full(n->map_fd, bytes, n->n_chunks,
				      MAP_HEADER);
		if (got < 0)
			return dlfs_err_sys(err, (int)got, "%s/map", n->path);
		for (uint64_t g = 0; g < n->n_chunks; g++)
			bytes[g] = (g < (uint64_t)got && bytes[g] == 1)
					   ? ST_PRESENT
					   : 0;
		return 0;
	}
	if (got > 0)
		dlfs_logf(n->log, n->log_arg, LOG_WARNING, "NVMe cache %s: map is for another layout or damaged: "
			 "starting empty",
		      n->path);
	int ret = wipe(n, 0, err);
	if (ret)
		return ret;
	memset(bytes, 0, n->n_chunks);
	if (ftruncate(n->map_fd, 0) < 0 ||
	    ftruncate(n->map_fd, (off_t)(MAP_HEADER + n->n_chunks)) < 0)
		return dlfs_err_sys(err, -errno, "%s/map", n->path);
	ret = dlfs_pwrite_full(n->map_fd, want, MAP_HEADER, 0);
	if (ret)
		return dlfs_err_sys(err, ret, "%s/map", n->path);
	return 0;
}

/*
 * The tier's directory DIR/<id>, opened once and then used only through
 * its fd (openat, O_NOFOLLOW), so nobody can swap a path under it. It
 * must be a real directory (not a symlink) owned by this daemon's uid: a
 * directory of another user is refused, since its owner could rewrite
 * the chunks it holds or plant symlinks for this daemon (perhaps root)
 * to write through. A directory that was open to others is made private,
 * and what it held is not trusted (others could have planted it, or
 * still hold it open): it is emptied. @return 0 or -errno with err set.
 */
static int open_tier_dir(struct dlfs_nvme *n, const char *dir, const char *id,
			 struct dlfs_err *err)
{
	int top = -1, ret = 0;
	struct stat st;
	/* DIR itself is the administrator's choice, symlink or not. */
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return dlfs_err_sys(err, -errno, "cache_dir %s", dir);
	top = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (top < 0)
		return dlfs_err_sys(err, -errno, "cache_dir %s", dir);
	if (mkdirat(top, id, 0700) < 0 && errno != EEXIST) {
		ret = dlfs_err_sys(err, -errno, "cache_dir %s", n->path);
		goto out;
	}
	n->dirfd = openat(top, id,
			  O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (n->dirfd < 0) {
		/* O_NOFOLLOW | O_DIRECTORY gives ENOTDIR for a symlink. */
		int e = errno;
		int link = fstatat(top, id, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
			   S_ISLNK(st.st_mode);
		ret = e == ELOOP || e == ENOTDIR
			      ? dlfs_err_set(err, -EPERM,
					     "cache_dir %s: %s: refusing it "
					     "(remove it, or choose another "
					     "cache_dir)",
					     n->path,
					     link ? "a symbolic link"
						  : "not a directory")
			      : dlfs_err_sys(err, -e, "cache_dir %s",
					     n->path);
		goto out;
	}
	if (fstat(n->dirfd, &st) < 0) {
		ret = dlfs_err_sys(err, -errno, "cache_dir %s", n->path);
		goto out;
	}
	if (st.st_uid != geteuid()) {
		ret = dlfs_err_set(err, -EPERM,
				   "cache_dir %s: owned by uid %u, not by "
				   "this daemon's uid %u: refusing it (remove "
				   "it, or choose another cache_dir)",
				   n->path, (unsigned)st.st_uid,
				   (unsigned)geteuid());
		goto out;
	}
	n->was_open = (st.st_mode & 07777) != 0700;
	if (n->was_open && fchmod(n->dirfd, 0700) < 0)
		ret = dlfs_err_sys(err, -errno, "cache_dir %s: chmod", n->path);
out:
	close(top);
	return ret;
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
	if ((ret = open_tier_dir(n, conf->dir, conf->dataset_id_hex, err)))
		return ret;
	/* The lock first, so that emptying below cannot pull the files from
	 * under another mount of ours. A lock file we cannot trust is
	 * replaced: removing a name never follows it. */
	struct stat st;
	if (fstatat(n->dirfd, "lock", &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    !own_stat(&st) && unlinkat(n->dirfd, "lock", 0) < 0)
		return dlfs_err_sys(err, -errno, "%s/lock", n->path);
	n->lock_fd = openat(n->dirfd, "lock",
			    O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (n->lock_fd < 0)
		return dlfs_err_sys(err, -errno, "%s/lock", n->path);
	if (!own_file(n->lock_fd))
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
	ret = n->was_open ? 0 : audit(n, err);
	if (ret < 0)
		return ret;
	if (!ret) {
		dlfs_logf(n->log, n->log_arg, LOG_WARNING,
			  "NVMe cache %s: %s: starting empty", n->path,
			  n->was_open ? "the directory was open to other "
					"users, so what it holds is not trusted"
				      : "holds files this user does not own "
					"alone (or symlinks): not trusted");
		if ((ret = wipe(n, 1, err)))
			return ret;
	}
	if ((ret = load_map(n, err)))
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
		uint64_t g = clock_victim(n);
		if (g == UINT64_MAX)
			break;
		uint32_t c = container_of(n, g);
		forget_locked(n, g, c);
		cfd(n, c, 0); /* so that unmap can free the blocks */
		unmap(n, g, c);
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
	n->st = calloc(n->n_chunks ? n->n_chunks : 1, 1);
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
	int ret = pthread_create(&n->writer, NULL, writer_main, n);
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
