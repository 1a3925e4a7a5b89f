/* The NVMe tier's map: chunk states, the map file, CLOCK eviction, the
 * fault log (nvme_map.h). */
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

/* Log a fault of kind bit once per mount; count it always. Here, below
 * the tier's API, since the map's own writes fail too. */
void nv_fault(struct dlfs_nvme *n, unsigned bit, int code,
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

/* Which container holds global chunk g. */
uint32_t nv_container_of(const struct dlfs_nvme *n, uint64_t g)
{
	uint32_t c;
	uint64_t k;
	dlfs_container_locate(n->cont, n->n_containers, n->n_chunks, g, &c,
			      &k);
	return c;
}

void nv_map_set(struct dlfs_nvme *n, uint64_t g, uint8_t v, uint32_t c)
{
	ssize_t w = pwrite(n->map_fd, &v, 1, (off_t)(MAP_HEADER + g));
	if (w != 1)
		nv_fault(n, LOG_MAP, w < 0 ? -errno : -EIO, "map update failed",
		      c);
}

/* Take chunk g out of the tier (caller holds mu); the caller then calls
 * nv_unmap() without the lock. @return 1 if it was present. */
int nv_forget_locked(struct dlfs_nvme *n, uint64_t g, uint32_t c)
{
	uint8_t s = atomic_load_explicit(&n->st[g], memory_order_relaxed);
	if (!(s & ST_PRESENT))
		return 0;
	atomic_fetch_and_explicit(&n->st[g], (uint8_t)~(ST_PRESENT | ST_VERIFIED),
				  memory_order_release);
	atomic_fetch_add_explicit(n->evict_seq, 1, memory_order_acq_rel);
	n->used -= alloc_of(clen(n, c, g - n->cont[c].first_chunk));
	n->present--;
	return 1;
}

/* Clear the map byte and free the blocks of chunk g. */
void nv_unmap(struct dlfs_nvme *n, uint64_t g, uint32_t c)
{
	uint64_t k = g - n->cont[c].first_chunk;
	nv_map_set(n, g, 0, c);
	int fd = atomic_load_explicit(&n->fd[c], memory_order_acquire);
	if (fd >= 0)
		fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			  (off_t)coff(n, k), (off_t)alloc_of(clen(n, c, k)));
}

void nv_forget(struct dlfs_nvme *n, uint32_t c, uint64_t k)
{
	uint64_t g = gid(n, c, k);
	pthread_mutex_lock(&n->mu);
	int was = nv_forget_locked(n, g, c);
	pthread_mutex_unlock(&n->mu);
	if (was)
		nv_unmap(n, g, c);
}

/* A CLOCK victim among present chunks not being written (caller holds
 * mu). @return its global id, or UINT64_MAX. */
uint64_t nv_clock_victim(struct dlfs_nvme *n)
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
 * written to vict (room for max) for nv_unmap() after the lock is dropped.
 * @return the number of victims, or -1 if it cannot make room. */
int nv_make_room(struct dlfs_nvme *n, uint64_t need, uint64_t *vict,
		 int max)
{
	int nv = 0;
	while (n->used + need > n->capacity) {
		uint64_t g = nv < max ? nv_clock_victim(n) : UINT64_MAX;
		if (g == UINT64_MAX)
			return -1;
		nv_forget_locked(n, g, nv_container_of(n, g));
		add(&n->evicted, 1);
		vict[nv++] = g;
	}
	return nv;
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

int nv_load_map(struct dlfs_nvme *n, struct dlfs_err *err)
{
	uint8_t want[MAP_HEADER], have[MAP_HEADER];
	if (header_of(n, want))
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	n->map_fd = openat(n->dirfd, "map",
			   O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (n->map_fd < 0)
		return dlfs_err_sys(err, -errno, "%s/map", n->path);
	if (!nv_own_file(n->map_fd))
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
	int ret = nv_wipe(n, 0, err);
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
