/* The NVMe tier's writer: the write queue and its thread (nvme_priv.h). */
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

/* Writing into a removed directory would fill the disk with files
 * nobody can reach: notice it, say so once, stop writing. @return 1 if
 * the directory is gone (the write dropped). */
static int dir_gone(struct dlfs_nvme *n, const struct wbuf *w)
{
	struct stat dst;
	if (fstat(n->dirfd, &dst) != 0 || dst.st_nlink != 0)
		return 0;
	pthread_mutex_lock(&n->mu);
	int first = !n->gone;
	n->gone = 1;
	pthread_mutex_unlock(&n->mu);
	add(&n->write_dropped, 1);
	if (first)
		nv_fault(n, LOG_GONE, -ENOENT, "cache directory removed", w->c);
	return 1;
}

/* Room for alloc bytes for chunk g: reserved in n->used, evicting under
 * LRU. @return 1 if reserved, 0 if g is there already or there is no
 * room (then the write is dropped). */
static int reserve(struct dlfs_nvme *n, uint64_t g, uint64_t alloc)
{
	uint64_t vict[64];
	int nv;
	pthread_mutex_lock(&n->mu);
	uint8_t s = atomic_load_explicit(&n->st[g], memory_order_relaxed);
	if (s & ST_PRESENT) {
		pthread_mutex_unlock(&n->mu);
		return 0;
	}
	if (n->policy == DLFS_NVME_KEEP)
		nv = n->used + alloc > n->capacity ? -1 : 0;
	else
		nv = nv_make_room(n, alloc, vict, 64);
	if (nv >= 0)
		n->used += alloc; /* reserved */
	pthread_mutex_unlock(&n->mu);
	for (int i = 0; i < nv; i++)
		nv_unmap(n, vict[i], nv_container_of(n, vict[i]));
	if (nv < 0)
		add(&n->write_dropped, 1);
	return nv >= 0;
}

/* The chunk's bytes into its container's cache file, written back and
 * out of the page cache. @return 0 or -errno (its range then punched). */
static int put_bytes(struct dlfs_nvme *n, struct wbuf *w, uint64_t alloc)
{
	int fd = nv_cfd(n, w->c, 1);
	if (fd < 0)
		return fd;
	off_t at = (off_t)coff(n, w->k);
	memset(w->buf + w->len, 0, alloc - w->len);
	int ret = dlfs_pwrite_full(fd, w->buf, alloc, (uint64_t)at);
	if (ret)
		fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, at,
			  (off_t)alloc);
	else if (!n->direct[w->c])
		/* Write back now and drop the pages: the chunk must not
		 * sit in the page cache a second time. */
		if (!sync_file_range(fd, at, (off_t)alloc,
				     SYNC_FILE_RANGE_WAIT_BEFORE |
					     SYNC_FILE_RANGE_WRITE |
					     SYNC_FILE_RANGE_WAIT_AFTER))
			posix_fadvise(fd, at, (off_t)alloc,
				      POSIX_FADV_DONTNEED);
	return ret;
}

/* A failed write: the reservation back, and why said once. */
static void write_failed(struct dlfs_nvme *n, const struct wbuf *w,
			 uint64_t alloc, int ret)
{
	pthread_mutex_lock(&n->mu);
	n->used -= alloc;
	/* The disk holds less than cache_size: what it holds now is the
	 * capacity from here on, so KEEP stops writing and LRU evicts
	 * instead of failing each write. */
	if ((ret == -ENOSPC || ret == -EDQUOT) && n->used < n->capacity)
		n->capacity = n->used;
	pthread_mutex_unlock(&n->mu);
	add(&n->write_dropped, 1);
	if (ret == -ENOSPC || ret == -EDQUOT)
		nv_fault(n, LOG_ENOSPC, ret, "cache disk full", w->c);
	else if (ret == -ENOENT)
		nv_fault(n, LOG_GONE, ret, "cache directory gone", w->c);
	else
		nv_fault(n, LOG_WRITE, ret, "write failed", w->c);
}

static void write_one(struct dlfs_nvme *n, struct wbuf *w)
{
	uint64_t g = gid(n, w->c, w->k), alloc = alloc_of(w->len);
	if (dir_gone(n, w) || !reserve(n, g, alloc))
		return;
	int ret = put_bytes(n, w, alloc);
	if (ret) {
		write_failed(n, w, alloc, ret);
		return;
	}
	nv_map_set(n, g, 1, w->c);
	pthread_mutex_lock(&n->mu);
	atomic_fetch_or_explicit(&n->st[g], ST_PRESENT | ST_VERIFIED,
				 memory_order_release);
	n->present++;
	pthread_mutex_unlock(&n->mu);
	add(&n->written_chunks, 1);
	add(&n->written_bytes, w->len);
}

void *nv_writer_main(void *arg)
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
	/* Only whole chunks: the map would record anything else as one,
	 * and the unchecked reads (dlfs_nvme_pread) would serve it. */
	if (!data || !whole_len(n, c, k, len)) {
		add(&n->write_dropped, 1);
		return 0;
	}
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
