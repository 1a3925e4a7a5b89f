/*
 * The NVMe tier's map (nvme_map.c), the layer the other files of the
 * tier stand on: where a chunk sits (its global id, length, offset and
 * blocks), the chunks' states and the map file that keeps them, CLOCK
 * eviction, and the one log of the tier's faults. The API (nvme.c) and
 * the writer (nvme_writer.c) call down into it; it calls nothing of
 * theirs. The tier's state and its locking: nvme_priv.h.
 */
#ifndef DLFS_NVME_MAP_H
#define DLFS_NVME_MAP_H

#include <stdatomic.h>
#include <stdint.h>

#include "nvme_priv.h"

static inline void add(_Atomic uint64_t *c, uint64_t v)
{
	atomic_fetch_add_explicit(c, v, memory_order_relaxed);
}

static inline uint64_t gid(const struct dlfs_nvme *n, uint32_t c, uint64_t k)
{
	return n->cont[c].first_chunk + k;
}

static inline size_t clen(const struct dlfs_nvme *n, uint32_t c, uint64_t k)
{
	uint64_t left = n->cont[c].data_size - k * n->cs;
	return (size_t)(left < n->cs ? left : n->cs);
}

/* Is len the length of a whole chunk k of container c? The length its
 * place gives, or with short chunks (an in-place dataset's runs) at
 * most that: a reader then has the record's length from the index. */
static inline int whole_len(const struct dlfs_nvme *n, uint32_t c,
			    uint64_t k, size_t len)
{
	return n->short_chunks ? len > 0 && len <= clen(n, c, k)
			       : len == clen(n, c, k);
}

static inline uint64_t alloc_of(size_t len)
{
	return dlfs_roundup(len, 4096);
}

/* Offset of chunk k in a container (and in its cache file). */
static inline uint64_t coff(const struct dlfs_nvme *n, uint64_t k)
{
	return dlfs_chunk_start(n->cs, k);
}

void nv_fault(struct dlfs_nvme *n, unsigned bit, int code,
	      const char *what, uint32_t c);
uint32_t nv_container_of(const struct dlfs_nvme *n, uint64_t g);
void nv_map_set(struct dlfs_nvme *n, uint64_t g, uint8_t v, uint32_t c);
int nv_forget_locked(struct dlfs_nvme *n, uint64_t g, uint32_t c);
void nv_unmap(struct dlfs_nvme *n, uint64_t g, uint32_t c);
void nv_forget(struct dlfs_nvme *n, uint32_t c, uint64_t k);
uint64_t nv_clock_victim(struct dlfs_nvme *n);
int nv_make_room(struct dlfs_nvme *n, uint64_t need, uint64_t *vict,
		 int max);
int nv_load_map(struct dlfs_nvme *n, struct dlfs_err *err);

#endif
