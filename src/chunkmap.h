/*
 * Global chunk numbers: the chunks of all containers, in container order.
 * first[c] is the global number of container c's chunk 0, for c < n, and
 * first[n] the number of chunks. Used by the NVMe tier's map, chunk homes
 * and staging. Stateless.
 */
#ifndef DLFS_CHUNKMAP_H
#define DLFS_CHUNKMAP_H

#include <stdint.h>

/* Container *c and chunk *k of global chunk g (< first[n]). */
static inline void dlfs_chunk_locate(const uint64_t *first, uint32_t n,
				     uint64_t g, uint32_t *c, uint64_t *k)
{
	uint32_t lo = 0, hi = n;
	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (first[mid] <= g)
			lo = mid;
		else
			hi = mid;
	}
	*c = lo;
	*k = g - first[lo];
}

#endif
