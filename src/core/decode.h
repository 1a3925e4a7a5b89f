/*
 * The decode threads: the reads of a compressed dataset's zstd chunks
 * that a demand miss needs, done off the thread that asked. A FUSE worker
 * (or a peer's request) that misses in RAM and NVMe hands the chunk here
 * and waits; one of the threads reads its stored bytes from the PFS,
 * checks them, decompresses them with its own zstd context and buffer,
 * checks the result and wakes the caller. So a worker never spends CPU
 * on decompression, and misses from many workers decompress in parallel,
 * as many at once as there are threads. The background reads (fill.h)
 * decompress what they load in their own threads, each with its own
 * decoder.
 *
 * Ownership: the caller's buffers and error stay the caller's; the
 * threads write into them only while the caller waits.
 *
 * Thread-safety: dlfs_decode_chunk is safe from any thread.
 * dlfs_decode_free must not race with it. Lock order: the pool's one
 * mutex, a leaf (the reads run without it).
 */
#ifndef DLFS_DECODE_H
#define DLFS_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include "dlfs/dataset.h"

struct dlfs_decode;

/* Start threads threads (at least one) for ds, each with its own
 * decoder. After a daemon's fork. @return 0, -ENOMEM, -errno. */
int dlfs_decode_start(struct dlfs_ds *ds, unsigned threads,
		      struct dlfs_decode **out, struct dlfs_err *err);

/* Stop the threads and free. NULL is ok. No call may be waiting. */
void dlfs_decode_free(struct dlfs_decode *d);

/*
 * Chunk k of container c, record cr (from dlfs_chunk_get), into buf (cap
 * bytes, 4 KiB aligned): dlfs_chunk_read_rec in one of the threads while
 * the caller waits. @return as dlfs_chunk_read_rec, with *len and err
 * set as it sets them.
 */
int dlfs_decode_chunk(struct dlfs_decode *d, uint32_t c, uint64_t k,
		      const struct dlfs_chunk_rec *cr, void *buf, size_t cap,
		      size_t *len, struct dlfs_err *err);

/* Chunks decoded by the threads so far. */
uint64_t dlfs_decode_count(struct dlfs_decode *d);

#endif
