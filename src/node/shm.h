/*
 * The read core's tiers as other processes on the node may read them:
 * the layout of the shared memory that a reader opened with
 * conf.share (reader.h) keeps, and the rules for reading it without the
 * server. libdlfs-preload.so reads the RAM and NVMe tiers of its dlfs
 * --serve server this way, with no round trip per read; the core writes
 * it. Both are built together: a region of another version is refused.
 *
 * Three memory files (memfd), passed over the preload wire:
 *   meta  (clients map it read-only; sealed with F_SEAL_FUTURE_WRITE,
 *         so no descriptor of it maps writable): struct dlfs_shm_head, then the RAM
 *         tier's hash table and slot records, the containers' first
 *         global chunks, the NVMe tier's chunk states and its eviction
 *         counter, and where files are (the locations table);
 *   data  (read-only and sealed alike): the RAM tier's slot buffers, slot i at
 *         i * slot_size;
 *   rw    (clients write it): the files checked against their own
 *         checksums (a bit per inode), each slot's use (CLOCK's
 *         referenced bit, bytes served) and the direct reads' counters.
 *
 * The RAM tier: slot records are sequence locks. seq is odd while the
 * slot changes hands or loads, even when it holds key's bytes at
 * data[slot * slot_size + off, + len). A reader finds key's slot by
 * probing the table (linear probing of dlfs_shm_hash, slot index + 1, 0
 * ends a chain), reads seq (even), checks key, copies, and reads seq
 * again: the same value means the bytes were key's throughout. A probe
 * may miss an entry being moved (never find a wrong one: the key is
 * checked); a miss only sends the read to the server.
 *
 * The NVMe tier: one state byte per global chunk (DLFS_SHM_NV_PRESENT:
 * its bytes are in the container's cache file at the container's offsets)
 * and an eviction counter that every removal increments. A reader reads
 * the counter, sees every chunk of its range present, reads the cache file,
 * and reads the counter again: unchanged means no chunk left meanwhile
 * (stable).
 *
 * The locations table: where recently looked-up files are, so that a
 * reader needs no request to find a file's bytes. Entry ino & loc_mask
 * holds one file (inodes are dense: a dataset of up to loc_mask + 1
 * files never shares an entry), under a sequence lock as a slot's; the
 * server fills it as it answers lookups and reads. A missing or
 * changing entry sends the read to the server.
 *
 * The names table: lookups the server answered, so that a process needs
 * no request for a name another process of the job looked up already.
 * Sets of DLFS_SHM_NAME_WAYS entries, set dlfs_shm_name_hash & (sets -
 * 1); each entry a sequence lock like a slot's, holding (parent, name)
 * -> the child's inode and attributes. Only names of the dataset (not of
 * the control directory, whose answers change), up to
 * DLFS_SHM_NAME_MAX bytes, whose attributes are the usual ones: st_dev
 * and st_blksize the root's, st_rdev 0, st_blocks from the size, atime
 * and ctime equal to mtime. A miss asks the server.
 *
 * The seen ring: readers outside report each read of a file from its
 * start (the server's epoch views follow readers by them, and its
 * background fills count the chunks used). A reader takes a number from
 * head, writes the inode, then seq = number + 1; the server reads them in
 * order, skipping what was overwritten before it came. Losing some costs
 * only planning.
 *
 * The server's life: meta holds at alive_off a pthread_mutex_t, robust
 * and process-shared, that the server's serving thread holds while it
 * serves (src/daemon/serve.c: from before it listens until it stops).
 * Its first 32 bits are the futex word of Linux's robust futexes: the
 * holder's thread id while it is held; 0 once released; and when the
 * holder dies (kill -9 too) the kernel clears the id and sets
 * FUTEX_OWNER_DIED, before the dying server's descriptors are closed.
 * dlfs_shm_alive reads it. Why: the NVMe tier's cache files outlive
 * their server, and the next server of the same cache_dir, which can
 * open the tier only once this one's lock is gone (its flock, nvme.h),
 * may evict and refill chunks in them while a reader of the dead one
 * still holds their descriptors and the frozen chunk states. The RAM
 * tier's memory is only ever this server's: it stays right.
 *
 * What may be served without the server, the read core's rules
 * (reader.h): a RAM slot's bytes were checked when loaded; an NVMe read
 * that is stable, of a file whose bit is set, while the server is alive
 * (dlfs_shm_alive after the read: then no later server has touched the
 * files yet); else only a read of a whole file whose bytes pass its own
 * checksum (the reader then sets its bit). Anything else goes to the
 * server, which checks, drops and logs; when it is gone, that fails.
 *
 * Memory order: the writer publishes with release stores, readers load
 * with acquire and fence before the second seq load.
 */
#ifndef DLFS_SHM_H
#define DLFS_SHM_H

#include <linux/futex.h> /* FUTEX_TID_MASK */
#include <stdint.h>

#define DLFS_SHM_MAGIC UINT64_C(0x314d4853534c4644) /* "DLFSSHM1" */
#define DLFS_SHM_VERSION 2

/* The NVMe state byte's bit that readers use (the others are the tier's
 * own). */
#define DLFS_SHM_NV_PRESENT 1u

struct dlfs_shm_head {
	uint64_t magic;
	uint32_t version;
	uint32_t n_slots;
	uint64_t slot_size;   /* bytes between slots in data */
	uint64_t chunk_size;  /* the dataset's */
	uint64_t data_off;    /* chunk k of a container starts at data_off +
				 k * chunk_size (dlfs_chunk_start) */
	uint64_t n_chunks;    /* global chunks */
	uint64_t n_inodes;    /* bits in file_ok: inodes 0 .. n_inodes - 1 */
	uint32_t table_mask;  /* table entries - 1 */
	uint32_t n_containers;
	uint32_t nvme;        /* the NVMe tier is there */
	uint32_t pad;
	/* Offsets in meta. */
	uint64_t table_off;   /* uint32_t[table_mask + 1] */
	uint64_t slots_off;   /* struct dlfs_shm_slot[n_slots] */
	uint64_t first_off;   /* uint64_t[n_containers]: first global chunk */
	uint64_t nv_st_off;   /* uint8_t[n_chunks] */
	uint64_t nv_seq_off;  /* uint64_t */
	uint64_t loc_off;     /* struct dlfs_shm_loc[loc_mask + 1] */
	uint64_t loc_mask;
	uint64_t name_off;    /* struct dlfs_shm_name[name_sets * WAYS] */
	uint64_t name_sets;   /* a power of 2 */
	/* Offsets in rw. */
	uint64_t file_ok_off; /* uint64_t[n_inodes / 64 + 1] */
	uint64_t use_off;     /* struct dlfs_shm_use[n_slots] */
	uint64_t count_off;   /* struct dlfs_shm_count */
	uint64_t seen_off;    /* struct dlfs_shm_seen_ring */
	/* Sizes of the three files. */
	uint64_t meta_size, data_size, rw_size;
	uint64_t alive_off;   /* in meta: the server's life (above), 64
				 bytes */
};

struct dlfs_shm_slot {
	uint64_t seq;
	uint64_t key;
	uint64_t off, len;
};

/* Where file ino's bytes are: size bytes at offset of container. */
struct dlfs_shm_loc {
	uint64_t seq; /* odd while written; 0: never */
	uint64_t ino;
	uint64_t offset, size, xxh3;
	uint32_t container;
	uint32_t pad;
};

#define DLFS_SHM_NAME_MAX 64
#define DLFS_SHM_NAME_WAYS 4

/* A name in directory parent (128 bytes). */
struct dlfs_shm_name {
	uint64_t seq; /* odd while written; 0: never */
	uint64_t parent, ino;
	int64_t size, mtime;
	uint32_t mtime_ns, mode, nlink, uid, gid;
	uint16_t len;
	uint16_t pad;
	char name[DLFS_SHM_NAME_MAX];
};

/* A slot's use by readers outside the server. */
struct dlfs_shm_use {
	uint64_t served; /* bytes served from the slot (waste count) */
	uint32_t ref;    /* CLOCK's referenced bit */
	uint32_t pad;
	uint64_t pad2[6]; /* a cache line each */
};

/* What the readers outside the server served (the mount's stats). */
struct dlfs_shm_count {
	uint64_t reads, bytes;      /* reads served without the server */
	uint64_t ram, nvme;         /* ... of them from each tier */
	uint64_t checked;           /* files they checked whole */
	uint64_t ram_bytes;         /* bytes of the reads from RAM */
	uint64_t pad[2];
};

#define DLFS_SHM_SEEN 4096 /* entries of the seen ring, a power of 2 */

struct dlfs_shm_seen {
	uint64_t seq; /* the number taken, + 1 */
	uint64_t ino;
};

struct dlfs_shm_seen_ring {
	uint64_t head; /* numbers taken so far */
	uint64_t pad[7];
	struct dlfs_shm_seen e[DLFS_SHM_SEEN];
};

/* Report a read of file ino from its start. */
static inline void dlfs_shm_seen_put(const struct dlfs_shm_head *h,
				     uint8_t *rw, uint64_t ino)
{
	struct dlfs_shm_seen_ring *r =
		(struct dlfs_shm_seen_ring *)(rw + h->seen_off);
	uint64_t n = __atomic_fetch_add(&r->head, 1, __ATOMIC_RELAXED);
	struct dlfs_shm_seen *e = &r->e[n & (DLFS_SHM_SEEN - 1)];
	__atomic_store_n(&e->ino, ino, __ATOMIC_RELAXED);
	__atomic_store_n(&e->seq, n + 1, __ATOMIC_RELEASE);
}

/* The RAM tier's hash of a key (cache.h's keys). */
static inline uint32_t dlfs_shm_hash(uint64_t key)
{
	key ^= key >> 33;
	key *= UINT64_C(0xff51afd7ed558ccd);
	key ^= key >> 33;
	return (uint32_t)key;
}

static inline uint64_t dlfs_shm_load(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static inline void dlfs_shm_store(uint64_t *p, uint64_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}

/*
 * The slot that holds key, with its seq (even) and where its bytes are,
 * or -1. The caller copies data[slot * slot_size + *off, + *len) and
 * then calls dlfs_shm_slot_same(slot, seq).
 */
static inline int dlfs_shm_find(const struct dlfs_shm_head *h,
				const uint8_t *meta, uint64_t key,
				uint64_t *seq, uint64_t *off, uint64_t *len)
{
	const uint32_t *table = (const uint32_t *)(meta + h->table_off);
	struct dlfs_shm_slot *slots =
		(struct dlfs_shm_slot *)(meta + h->slots_off);
	uint32_t i = dlfs_shm_hash(key) & h->table_mask;
	for (uint32_t n = 0; n <= h->table_mask; n++) {
		uint32_t v = __atomic_load_n(&table[i], __ATOMIC_ACQUIRE);
		if (!v || v > h->n_slots)
			return -1;
		struct dlfs_shm_slot *s = &slots[v - 1];
		uint64_t q = dlfs_shm_load(&s->seq);
		if (!(q & 1) &&
		    __atomic_load_n(&s->key, __ATOMIC_RELAXED) == key) {
			*off = __atomic_load_n(&s->off, __ATOMIC_RELAXED);
			*len = __atomic_load_n(&s->len, __ATOMIC_RELAXED);
			if (*off > h->slot_size || *len > h->slot_size - *off)
				return -1;
			*seq = q;
			return (int)(v - 1);
		}
		i = (i + 1) & h->table_mask;
	}
	return -1;
}

/* The names table's hash of (parent, name). */
static inline uint64_t dlfs_shm_name_hash(uint64_t parent, const char *name,
					  uint64_t len)
{
	uint64_t h = UINT64_C(14695981039346656037) ^ parent;
	h *= UINT64_C(1099511628211);
	for (uint64_t i = 0; i < len; i++) {
		h ^= (unsigned char)name[i];
		h *= UINT64_C(1099511628211);
	}
	return h ^ (h >> 31);
}

/* The set of (parent, name) in the names table. */
static inline struct dlfs_shm_name *dlfs_shm_name_set(
	const struct dlfs_shm_head *h, const uint8_t *meta, uint64_t hash)
{
	return (struct dlfs_shm_name *)(meta + h->name_off) +
	       (hash & (h->name_sets - 1)) * DLFS_SHM_NAME_WAYS;
}

/* Look up (parent, name) in the names table: *out is a copy of its entry.
 * @return 0, or -1 (not there now: ask the server). */
static inline int dlfs_shm_name_get(const struct dlfs_shm_head *h,
				    const uint8_t *meta, uint64_t parent,
				    const char *name, uint64_t len,
				    struct dlfs_shm_name *out)
{
	if (len > DLFS_SHM_NAME_MAX || !h->name_sets)
		return -1;
	struct dlfs_shm_name *set = dlfs_shm_name_set(
		h, meta, dlfs_shm_name_hash(parent, name, len));
	for (int w = 0; w < DLFS_SHM_NAME_WAYS; w++) {
		struct dlfs_shm_name *e = &set[w];
		uint64_t q = dlfs_shm_load(&e->seq);
		if (!q || (q & 1) ||
		    __atomic_load_n(&e->parent, __ATOMIC_RELAXED) != parent ||
		    __atomic_load_n(&e->len, __ATOMIC_RELAXED) != len)
			continue;
		/* A plain copy: torn bytes are caught by seq below. */
		__builtin_memcpy(out, (const void *)e, sizeof(*out));
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (dlfs_shm_load(&e->seq) != q || out->parent != parent ||
		    out->len != len || __builtin_memcmp(out->name, name, len))
			continue;
		return 0;
	}
	return -1;
}

/* Where file ino is, from the locations table. @return 0, or -1 (not
 * there now: ask the server). */
static inline int dlfs_shm_loc_get(const struct dlfs_shm_head *h,
				   const uint8_t *meta, uint64_t ino,
				   struct dlfs_shm_loc *out)
{
	struct dlfs_shm_loc *e =
		(struct dlfs_shm_loc *)(meta + h->loc_off) + (ino & h->loc_mask);
	uint64_t q = dlfs_shm_load(&e->seq);
	if (!q || (q & 1))
		return -1;
	out->ino = __atomic_load_n(&e->ino, __ATOMIC_RELAXED);
	out->offset = __atomic_load_n(&e->offset, __ATOMIC_RELAXED);
	out->size = __atomic_load_n(&e->size, __ATOMIC_RELAXED);
	out->xxh3 = __atomic_load_n(&e->xxh3, __ATOMIC_RELAXED);
	out->container = __atomic_load_n(&e->container, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	if (dlfs_shm_load(&e->seq) != q || out->ino != ino ||
	    out->container >= h->n_containers)
		return -1;
	return 0;
}

/* Is the server that made this memory still serving? (The futex word
 * of its liveness mutex holds an owner's thread id.) */
static inline int dlfs_shm_alive(const struct dlfs_shm_head *h,
				 const uint8_t *meta)
{
	uint32_t w = __atomic_load_n((const uint32_t *)(meta + h->alive_off),
				     __ATOMIC_ACQUIRE);
	return (w & FUTEX_TID_MASK) != 0;
}

/* After copying from slot: were its bytes key's throughout? */
static inline int dlfs_shm_slot_same(const struct dlfs_shm_head *h,
				     const uint8_t *meta, int slot,
				     uint64_t seq)
{
	struct dlfs_shm_slot *slots =
		(struct dlfs_shm_slot *)(meta + h->slots_off);
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	return dlfs_shm_load(&slots[slot].seq) == seq;
}

#endif
