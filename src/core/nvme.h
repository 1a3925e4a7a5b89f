/*
 * The NVMe tier: a bounded, persistent cache of whole chunks on node-local
 * storage, kept across unmounts and keyed by dataset id.
 *
 * Layout under the cache directory DIR (a public contract, dlfs(1)):
 *   DIR/<dataset id hex>/            0700
 *   DIR/<dataset id hex>/lock        0600, flock()ed by the daemon using it
 *   DIR/<dataset id hex>/map         0600, a 64-byte header, then one byte
 *                                    per chunk (1 = present) in container
 *                                    order
 *   DIR/<dataset id hex>/NNNNNN.cache  0600, sparse: container NNNNNN's
 *                                    chunks at their container offsets
 * A chunk is marked present in the map only after its bytes are written,
 * but without fsync: after a crash a chunk may be marked and not there.
 * That is why every chunk is checked against the index's checksum the
 * first time it is read after the tier is opened (dlfs_nvme_read_chunk
 * always checks; dlfs_nvme_pread serves unchecked bytes only for chunks
 * checked before, and says so). Bad data is dropped and counted, never
 * served.
 *
 * Writes happen on the tier's own writer thread, never on the caller's:
 * dlfs_nvme_put copies the chunk into one of a fixed pool of buffers and
 * returns; when the pool is empty the chunk is simply not cached. Faults
 * of the cache disk (ENOSPC, EIO, a removed directory) never fail a
 * caller: they are logged once each, counted, and the tier degrades (the
 * chunk stays uncached and is read from the PFS). A full disk also lowers
 * the capacity to what the tier holds then, until it is opened again.
 *
 * Policies: KEEP admits chunks until the capacity is reached and then keeps
 * what it has, which gives capacity/dataset hits under cyclic epochs where
 * LRU gives none; LRU evicts by CLOCK to admit new chunks.
 *
 * Thread-safety: every call is safe from any thread. Presence checks are
 * lock-free (atomic per-chunk state); state changes and the writer queue
 * take the tier's one mutex, never held across I/O except the writer's
 * own map updates. Lock order: the tier's mutex is a leaf.
 */
#ifndef DLFS_NVME_H
#define DLFS_NVME_H

#include <stddef.h>
#include <stdint.h>

#include "dlfs/dataset.h"
#include "dlfs/err.h"

struct dlfs_nvme;

enum dlfs_nvme_policy { DLFS_NVME_KEEP, DLFS_NVME_LRU };

struct dlfs_nvme_conf {
	const char *dir;        /* the cache directory (created if missing) */
	/* Bytes; chunks count rounded up to 4 KiB. 0: the whole dataset,
	 * within 90% of the cache disk's free space plus what this tier
	 * already holds there (dlfs_nvme_usage says what it came to). */
	uint64_t capacity;
	enum dlfs_nvme_policy policy;
	const char *dataset_id_hex;
	uint64_t chunk_size;
	/* Chunks may be shorter than their place: an in-place dataset's
	 * (runs of archive members). Without it, a chunk is whole only at
	 * the length its place gives (the chunk size, or the rest of its
	 * container's data). */
	int short_chunks;
	uint32_t n_containers;
	/* The container table (dlfs_ds_container), borrowed for the tier's
	 * life: data sizes, chunk counts and global chunk numbers. */
	const struct dlfs_container *containers;
	dlfs_log_fn log;        /* may be NULL */
	void *log_arg;
	/* Where to keep the chunks' states (n_chunks bytes, zeroed) and the
	 * eviction counter, for readers in other processes (src/node/shared/shm.h);
	 * NULL: the tier's own memory. Borrowed for the tier's life. */
	uint8_t *shared_st;
	uint64_t *shared_seq;
};

struct dlfs_nvme_stats {
	uint64_t hits, misses, bytes;
	uint64_t capacity_bytes, used_bytes, chunks;
	uint64_t written_chunks, written_bytes, write_dropped, evicted;
	uint64_t corrupt, errors;
};

/*
 * Open (or create) the tier of one dataset. A map written for another
 * chunk layout is discarded with its cache files. @return 0, or -EBUSY
 * (another daemon holds the lock), -EINVAL (bad conf), or -errno with err
 * naming the path.
 */
int dlfs_nvme_open(const struct dlfs_nvme_conf *conf, struct dlfs_nvme **out,
		   struct dlfs_err *err);

/*
 * Start the writer thread. Separate from opening because a daemon opens
 * the tier (and reports a bad cache_dir) before it forks into the
 * background, and threads do not survive a fork. Until started, puts are
 * dropped. @return 0 or -errno.
 */
int dlfs_nvme_start(struct dlfs_nvme *n, struct dlfs_err *err);

/* Finish pending writes, sync the map, release everything. NULL is ok. */
void dlfs_nvme_close(struct dlfs_nvme *n);

/* Is chunk k of container c present? Lock-free; does not count. */
int dlfs_nvme_has(struct dlfs_nvme *n, uint32_t c, uint64_t k);

/* Is it present, or queued to be written? Lock-free; does not count. */
int dlfs_nvme_holds(struct dlfs_nvme *n, uint32_t c, uint64_t k);

/*
 * Read chunk k of container c (len bytes, expected checksum xxh3) into
 * buf (cap bytes, 4 KiB aligned, cap >= len rounded up to 4 KiB).
 * @return 0 (counted as a hit), -ENOENT (not present: a miss), -EBADMSG
 * (its bytes failed the checksum: dropped, counted, logged), or -EIO for
 * any other fault (counted, logged once, the chunk is dropped). Every
 * error means "read it elsewhere".
 */
int dlfs_nvme_read_chunk(struct dlfs_nvme *n, uint32_t c, uint64_t k,
			 size_t len, uint64_t xxh3, void *buf, size_t cap);

/*
 * Read len bytes at container offset off of container c into buf, which
 * has room for len + 8 KiB and is 4 KiB aligned; the bytes are at
 * *data. Every chunk the range touches must be present. *stable is set
 * to 1 when no chunk was evicted while reading: only then may bytes known
 * good before (dlfs_nvme_range_verified, or the caller's own check) be
 * served unchecked. @return 0 (a hit), -ENOENT (a chunk is absent; not
 * counted as a miss: the chunk path that follows counts it), -EIO.
 */
int dlfs_nvme_pread(struct dlfs_nvme *n, uint32_t c, uint64_t off,
		    size_t len, void *buf, const uint8_t **data, int *stable);

/* Were all chunks under [off, off + len) of container c checked against
 * the index since the tier opened (or written by it)? */
int dlfs_nvme_range_verified(struct dlfs_nvme *n, uint32_t c, uint64_t off,
			     size_t len);

/*
 * A new read-only descriptor of container c's cache file (buffered, not
 * O_DIRECT as the tier's own), for a reader in another process that
 * follows src/node/shared/shm.h. @return it, or -ENOENT (no chunk of c was ever
 * kept), -errno.
 */
int dlfs_nvme_reader_fd(struct dlfs_nvme *n, uint32_t c);

/* Drop chunk (c, k): its cached bytes are bad. Counted as corrupt. */
void dlfs_nvme_drop(struct dlfs_nvme *n, uint32_t c, uint64_t k);

/*
 * Queue chunk (c, k), len bytes of verified data, for writing in the
 * background. Copies data; never blocks on I/O, never fails. When the
 * write queue is full, drops the chunk (and remembers it for
 * dlfs_nvme_next_turned_away), or with wait set waits for room
 * (background loads: they exist to fill the tier). @return 1 when this
 * call queued the chunk, 2 when the tier had it or had queued it already,
 * 0 when it was not taken (full tier, full queue, a faulty disk, or len
 * not the chunk's length: only whole chunks are kept).
 */
int dlfs_nvme_put(struct dlfs_nvme *n, uint32_t c, uint64_t k,
		  const void *data, size_t len, int wait);

/*
 * The oldest chunk dlfs_nvme_put turned away only for want of room in the
 * write queue, or because the writer had not started: a demand load's
 * chunk that RAM may still hold, to queue again from there. The last 256
 * are remembered. @return 1 with *c and *k, 0 when there is none.
 */
int dlfs_nvme_next_turned_away(struct dlfs_nvme *n, uint32_t *c, uint64_t *k);

/* Is there free room for a chunk of len bytes, without evicting one?
 * (LRU would take it all the same, by evicting; but a chunk read whole
 * only to be cached, evicting another whose files are still to be read,
 * is how a random reader thrashes a tier smaller than the dataset.)
 * Takes the tier's lock. */
int dlfs_nvme_has_room(struct dlfs_nvme *n, size_t len);

/* Chunks the tier holds and bytes they take, and its capacity. */
void dlfs_nvme_usage(struct dlfs_nvme *n, uint64_t *used, uint64_t *cap);

/* Hold the writer (on = 1): it takes nothing from its queue until it is
 * let go (on = 0), as a tier disk that cannot keep up would not. Stopping
 * the tier lets it go, but background loads waiting for room stop first:
 * let it go before closing their reader. For tests. */
void dlfs_nvme_pause(struct dlfs_nvme *n, int on);

/* Wait until the write queue is empty (tests and shutdown). */
void dlfs_nvme_flush(struct dlfs_nvme *n);

void dlfs_nvme_get_stats(struct dlfs_nvme *n, struct dlfs_nvme_stats *s);

const char *dlfs_nvme_policy_name(enum dlfs_nvme_policy p);
/* @return 0 and *p for "keep" or "lru", else -EINVAL. */
int dlfs_nvme_policy_parse(const char *s, enum dlfs_nvme_policy *p);

#endif
