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
 * Sequence locks, one style (the helpers below; __atomic builtins with
 * C11's orders, since the records are plain structs that a reader maps):
 *   writer: seq goes odd (one writer: a store; several that may race: a
 *           compare-and-swap from the even value it read), then a release
 *           fence, so that no field is seen written before seq is odd;
 *           the fields, with relaxed atomic stores (a slot's bytes in
 *           data: the loader's own writes); then a release store of the
 *           next even seq, so that every field is seen before it;
 *   reader: an acquire load of seq (even; 0: never written), the fields
 *           with relaxed loads (or a copy), an acquire fence, and seq
 *           again: the same value means the fields are one write's.
 *
 * Who writes what (files of src/core unless named), under which lock or
 * order, and who reads it ("dlfs_shm_" left out of the helpers' names):
 *
 *  field           writer                lock, order          readers
 *  head            share.c (new)         before clients map   direct.c
 *  head.nvme       share.c (set_nvme)    release store        direct.c
 *  table[]         cache.c (tset)        cache mutex; release find
 *  slots[], data   cache.c: slot_begin,  the slot's holder;   find,
 *                  slot_end              seq lock             slot_same
 *  first[]         share.c (new)         before clients map   direct.c
 *  nv_st PRESENT   nvme_writer.c sets;   nvme mutex; release  direct.c,
 *                  nvme_map.c clears,    RMW                  nvme.c
 *                  loads (at open)
 *  nv_st others    nvme*.c               the tier's own       the tier
 *  nv_seq          nvme_map.c, after     nvme mutex; acq_rel  direct.c (a
 *                  each PRESENT cleared  add                  stable read)
 *  alive mutex     share.c (serve.c's    robust, shared       alive
 *                  serving thread)       mutex                (direct.c)
 *  loc[]           share.c: loc_put      any thread: CAS,     loc_get
 *                  (read.c's calls)      seq lock             (direct.c)
 *  names[]         share.c: name_put     any thread: CAS,     name_get
 *                  (serve.c's lookups)   seq lock             (direct.c)
 *  rw file_ok      fetch.c; direct.c     relaxed or, and      both
 *  rw use[]        direct.c sets, adds;  relaxed              both
 *                  cache.c clears, takes
 *  rw count        direct.c              relaxed adds         read.c
 *  rw seen ring    direct.c: seen_put    fetch-add head;      share.c
 *                                        release entry seq    (seen_next)
 *
 * The layout is checked at build time below (sizes and offsets of every
 * record): a change of any of them fails to build until DLFS_SHM_VERSION
 * is bumped and the new layout recorded there.
 */
#ifndef DLFS_SHM_H
#define DLFS_SHM_H

#include <linux/futex.h> /* FUTEX_TID_MASK */
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

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

/* The layout of each version, so that a changed record fails to build
 * until DLFS_SHM_VERSION is bumped and its layout recorded here (a
 * reader of another version is refused at MAP). */
#if DLFS_SHM_VERSION == 2
_Static_assert(sizeof(struct dlfs_shm_head) == 208 &&
		       offsetof(struct dlfs_shm_head, table_off) == 72 &&
		       offsetof(struct dlfs_shm_head, file_ok_off) == 144 &&
		       offsetof(struct dlfs_shm_head, alive_off) == 200,
	       "struct dlfs_shm_head changed: bump DLFS_SHM_VERSION");
_Static_assert(sizeof(struct dlfs_shm_slot) == 32 &&
		       offsetof(struct dlfs_shm_slot, key) == 8,
	       "struct dlfs_shm_slot changed: bump DLFS_SHM_VERSION");
_Static_assert(sizeof(struct dlfs_shm_loc) == 48 &&
		       offsetof(struct dlfs_shm_loc, container) == 40,
	       "struct dlfs_shm_loc changed: bump DLFS_SHM_VERSION");
_Static_assert(sizeof(struct dlfs_shm_name) == 128 &&
		       offsetof(struct dlfs_shm_name, size) == 24 &&
		       offsetof(struct dlfs_shm_name, len) == 60 &&
		       offsetof(struct dlfs_shm_name, name) == 64 &&
		       DLFS_SHM_NAME_MAX == 64 && DLFS_SHM_NAME_WAYS == 4,
	       "struct dlfs_shm_name changed: bump DLFS_SHM_VERSION");
_Static_assert(sizeof(struct dlfs_shm_use) == 64 &&
		       sizeof(struct dlfs_shm_count) == 64,
	       "struct dlfs_shm_use or _count changed: bump DLFS_SHM_VERSION");
_Static_assert(sizeof(struct dlfs_shm_seen) == 16 &&
		       sizeof(struct dlfs_shm_seen_ring) ==
			       64 + 16 * DLFS_SHM_SEEN &&
		       DLFS_SHM_SEEN == 4096,
	       "the seen ring changed: bump DLFS_SHM_VERSION");
_Static_assert(DLFS_SHM_NV_PRESENT == 1u,
	       "the NVMe state bit changed: bump DLFS_SHM_VERSION");
#else
#error "DLFS_SHM_VERSION has no recorded layout: record it above"
#endif

/*
 * The usual attributes. A dataset's files differ only in these
 * (struct dlfs_shm_attr); the rest of their struct stat is the usual:
 * st_dev and st_blksize the root's, st_rdev 0, st_blocks from the size,
 * atime and ctime equal to mtime. The names table keeps only these, and
 * so does libdlfs-preload.so's lookup cache; the server shares a name
 * only when dlfs_shm_attr_usual says its attributes are the usual ones.
 */
struct dlfs_shm_attr {
	int64_t size, mtime;
	uint32_t mtime_ns, mode, nlink, uid, gid;
};

/* Is st all its attr and the usual rest (root: the root's stat)? */
static inline int dlfs_shm_attr_usual(const struct stat *st,
				      const struct stat *root)
{
	return st->st_dev == root->st_dev && st->st_rdev == 0 &&
	       st->st_blksize == root->st_blksize &&
	       st->st_blocks == (st->st_size + 511) / 512 &&
	       st->st_nlink <= UINT32_MAX &&
	       st->st_atim.tv_sec == st->st_mtim.tv_sec &&
	       st->st_atim.tv_nsec == st->st_mtim.tv_nsec &&
	       st->st_ctim.tv_sec == st->st_mtim.tv_sec &&
	       st->st_ctim.tv_nsec == st->st_mtim.tv_nsec;
}

/* What of st varies between a dataset's files. */
static inline void dlfs_shm_attr_pack(const struct stat *st,
				      struct dlfs_shm_attr *a)
{
	a->size = st->st_size;
	a->mtime = st->st_mtim.tv_sec;
	a->mtime_ns = (uint32_t)st->st_mtim.tv_nsec;
	a->mode = st->st_mode;
	a->nlink = (uint32_t)st->st_nlink;
	a->uid = st->st_uid;
	a->gid = st->st_gid;
}

/* The struct stat of inode ino with attributes a and the usual rest. */
static inline void dlfs_shm_attr_unpack(const struct dlfs_shm_attr *a,
					uint64_t ino, const struct stat *root,
					struct stat *st)
{
	__builtin_memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_size = a->size;
	st->st_mtim.tv_sec = a->mtime;
	st->st_mtim.tv_nsec = a->mtime_ns;
	st->st_atim = st->st_mtim;
	st->st_ctim = st->st_mtim;
	st->st_mode = a->mode;
	st->st_nlink = a->nlink;
	st->st_uid = a->uid;
	st->st_gid = a->gid;
	st->st_dev = root->st_dev;
	st->st_blksize = root->st_blksize;
	st->st_blocks = (a->size + 511) / 512;
}

/* ---- The writers' side of the sequence locks (the style above) ---- */

/* One writer (it owns the record): seq goes odd, if it is not yet. */
static inline void dlfs_shm_seq_begin(uint64_t *seq)
{
	uint64_t q = __atomic_load_n(seq, __ATOMIC_RELAXED);
	if (!(q & 1))
		__atomic_store_n(seq, q + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
}

/* Several writers that may race: claim the record whose seq was q (read
 * with an acquire load). @return 1 (claimed: seq is q + 1), or 0 (q was
 * odd, or another writer claimed it meanwhile: leave it). */
static inline int dlfs_shm_seq_claim(uint64_t *seq, uint64_t q)
{
	if ((q & 1) || !__atomic_compare_exchange_n(seq, &q, q + 1, 0,
						    __ATOMIC_RELAXED,
						    __ATOMIC_RELAXED))
		return 0;
	__atomic_thread_fence(__ATOMIC_RELEASE);
	return 1;
}

/* The fields are written: publish them (seq even again). */
static inline void dlfs_shm_seq_end(uint64_t *seq)
{
	uint64_t q = __atomic_load_n(seq, __ATOMIC_RELAXED);
	__atomic_store_n(seq, (q | 1) + 1, __ATOMIC_RELEASE);
}

/* RAM slot s changes hands: readers stop trusting it before its buffer
 * is written. One writer: the cache's holder of the slot. */
static inline void dlfs_shm_slot_begin(struct dlfs_shm_slot *s)
{
	dlfs_shm_seq_begin(&s->seq);
}

/* Slot s holds key's bytes at [off, off + len) of its buffer now. */
static inline void dlfs_shm_slot_end(struct dlfs_shm_slot *s, uint64_t key,
				     uint64_t off, uint64_t len)
{
	__atomic_store_n(&s->key, key, __ATOMIC_RELAXED);
	__atomic_store_n(&s->off, off, __ATOMIC_RELAXED);
	__atomic_store_n(&s->len, len, __ATOMIC_RELAXED);
	dlfs_shm_seq_end(&s->seq);
}

/* Put where file ino is in the locations table. Any thread; a racing
 * write of the same entry wins, the other is dropped. */
static inline void dlfs_shm_loc_put(const struct dlfs_shm_head *h,
				    uint8_t *meta, uint64_t ino,
				    uint32_t container, uint64_t offset,
				    uint64_t size, uint64_t xxh3)
{
	struct dlfs_shm_loc *e =
		(struct dlfs_shm_loc *)(meta + h->loc_off) + (ino & h->loc_mask);
	uint64_t q = __atomic_load_n(&e->seq, __ATOMIC_ACQUIRE);
	if (q && !(q & 1) &&
	    __atomic_load_n(&e->ino, __ATOMIC_RELAXED) == ino &&
	    __atomic_load_n(&e->container, __ATOMIC_RELAXED) == container &&
	    __atomic_load_n(&e->offset, __ATOMIC_RELAXED) == offset &&
	    __atomic_load_n(&e->size, __ATOMIC_RELAXED) == size &&
	    __atomic_load_n(&e->xxh3, __ATOMIC_RELAXED) == xxh3)
		return; /* there already: no write, no cache line taken */
	if (!dlfs_shm_seq_claim(&e->seq, q))
		return;
	__atomic_store_n(&e->ino, ino, __ATOMIC_RELAXED);
	__atomic_store_n(&e->offset, offset, __ATOMIC_RELAXED);
	__atomic_store_n(&e->size, size, __ATOMIC_RELAXED);
	__atomic_store_n(&e->xxh3, xxh3, __ATOMIC_RELAXED);
	__atomic_store_n(&e->container, container, __ATOMIC_RELAXED);
	dlfs_shm_seq_end(&e->seq);
}

/* Does entry e hold (parent, name) now? Relaxed loads: e may be being
 * written, and a wrong answer only picks another way. */
static inline int dlfs_shm_name_is(const struct dlfs_shm_name *e,
				   uint64_t parent, const char *name,
				   uint64_t len)
{
	if (!__atomic_load_n(&e->seq, __ATOMIC_ACQUIRE) ||
	    __atomic_load_n(&e->parent, __ATOMIC_RELAXED) != parent ||
	    __atomic_load_n(&e->len, __ATOMIC_RELAXED) != len)
		return 0;
	for (uint64_t i = 0; i < len; i++)
		if (__atomic_load_n(&e->name[i], __ATOMIC_RELAXED) != name[i])
			return 0;
	return 1;
}

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

/* The way of set to write (parent, name) in: its own entry, else an
 * unused one, else one chosen by the hash (the others stay). */
static inline struct dlfs_shm_name *dlfs_shm_name_way(
	struct dlfs_shm_name *set, uint64_t hash, uint64_t parent,
	const char *name, uint64_t len)
{
	for (int w = 0; w < DLFS_SHM_NAME_WAYS; w++)
		if (dlfs_shm_name_is(&set[w], parent, name, len))
			return &set[w];
	for (int w = 0; w < DLFS_SHM_NAME_WAYS; w++)
		if (!__atomic_load_n(&set[w].seq, __ATOMIC_ACQUIRE))
			return &set[w];
	return &set[(hash >> 40) % DLFS_SHM_NAME_WAYS];
}

/* Put (parent, name) -> ino with attributes a (the usual rest: see
 * dlfs_shm_attr_usual) in the names table. Names longer than
 * DLFS_SHM_NAME_MAX are not kept. Any thread; a racing write of the same
 * entry wins, the other is dropped. */
static inline void dlfs_shm_name_put(const struct dlfs_shm_head *h,
				     uint8_t *meta, uint64_t parent,
				     const char *name, uint64_t len,
				     uint64_t ino,
				     const struct dlfs_shm_attr *a)
{
	if (len > DLFS_SHM_NAME_MAX || !len || !h->name_sets)
		return;
	uint64_t hash = dlfs_shm_name_hash(parent, name, len);
	struct dlfs_shm_name *e = dlfs_shm_name_way(
		dlfs_shm_name_set(h, meta, hash), hash, parent, name, len);
	uint64_t q = __atomic_load_n(&e->seq, __ATOMIC_ACQUIRE);
	if (q && !(q & 1) && dlfs_shm_name_is(e, parent, name, len) &&
	    __atomic_load_n(&e->ino, __ATOMIC_RELAXED) == ino &&
	    __atomic_load_n(&e->size, __ATOMIC_RELAXED) == a->size)
		return; /* there already (not another name of the inode) */
	if (!dlfs_shm_seq_claim(&e->seq, q))
		return;
	__atomic_store_n(&e->parent, parent, __ATOMIC_RELAXED);
	__atomic_store_n(&e->ino, ino, __ATOMIC_RELAXED);
	__atomic_store_n(&e->size, a->size, __ATOMIC_RELAXED);
	__atomic_store_n(&e->mtime, a->mtime, __ATOMIC_RELAXED);
	__atomic_store_n(&e->mtime_ns, a->mtime_ns, __ATOMIC_RELAXED);
	__atomic_store_n(&e->mode, a->mode, __ATOMIC_RELAXED);
	__atomic_store_n(&e->nlink, a->nlink, __ATOMIC_RELAXED);
	__atomic_store_n(&e->uid, a->uid, __ATOMIC_RELAXED);
	__atomic_store_n(&e->gid, a->gid, __ATOMIC_RELAXED);
	__atomic_store_n(&e->len, (uint16_t)len, __ATOMIC_RELAXED);
	for (uint64_t i = 0; i < DLFS_SHM_NAME_MAX; i++)
		__atomic_store_n(&e->name[i], i < len ? name[i] : 0,
				 __ATOMIC_RELAXED);
	dlfs_shm_seq_end(&e->seq);
}

/* The attributes an entry of the names table keeps. */
static inline void dlfs_shm_name_attr(const struct dlfs_shm_name *e,
				      struct dlfs_shm_attr *a)
{
	a->size = e->size;
	a->mtime = e->mtime;
	a->mtime_ns = e->mtime_ns;
	a->mode = e->mode;
	a->nlink = e->nlink;
	a->uid = e->uid;
	a->gid = e->gid;
}

/* Copy entry e, whose seq was q, field by field (relaxed loads: a torn
 * copy is caught by seq after). */
static inline void dlfs_shm_name_copy(const struct dlfs_shm_name *e,
				      uint64_t q, struct dlfs_shm_name *out)
{
	out->seq = q;
	out->parent = __atomic_load_n(&e->parent, __ATOMIC_RELAXED);
	out->ino = __atomic_load_n(&e->ino, __ATOMIC_RELAXED);
	out->size = __atomic_load_n(&e->size, __ATOMIC_RELAXED);
	out->mtime = __atomic_load_n(&e->mtime, __ATOMIC_RELAXED);
	out->mtime_ns = __atomic_load_n(&e->mtime_ns, __ATOMIC_RELAXED);
	out->mode = __atomic_load_n(&e->mode, __ATOMIC_RELAXED);
	out->nlink = __atomic_load_n(&e->nlink, __ATOMIC_RELAXED);
	out->uid = __atomic_load_n(&e->uid, __ATOMIC_RELAXED);
	out->gid = __atomic_load_n(&e->gid, __ATOMIC_RELAXED);
	out->len = __atomic_load_n(&e->len, __ATOMIC_RELAXED);
	out->pad = 0;
	for (int i = 0; i < DLFS_SHM_NAME_MAX; i++)
		out->name[i] = __atomic_load_n(&e->name[i], __ATOMIC_RELAXED);
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
		dlfs_shm_name_copy(e, q, out);
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
