/*
 * The tiers' shared memory as readers in other processes see it
 * (share.c, the placed RAM tier of cache.c, outside.c), read only
 * through src/node/shared/shm.h and mappings of the three files made from their
 * fds, as libdlfs-preload.so maps them:
 *   - dlfs_share_new's layout: the head's magic, version and sizes, every
 *     array 64-aligned, inside its file and overlapping no other; three
 *     distinct memfds of meta_size, data_size and rw_size bytes; a table
 *     size that is not a power of 2 refused with -EINVAL;
 *   - a placed RAM tier (a fake loader writes a pattern of its key at a
 *     key-dependent offset and length): what dlfs_cache_get loaded is
 *     found by dlfs_shm_find with an even seq, its off and len, and its
 *     bytes; a load in progress (the loader blocked), an evicted entry and
 *     a failed load are not found, and a reader that copied before an
 *     eviction sees dlfs_shm_slot_same() false; use[].ref spares a slot
 *     from CLOCK once and use[].served counts as served when it is
 *     evicted;
 *   - a stress: loaders getting random keys of 16 through 3 slots while
 *     readers copy through the sequence locks: every copy that
 *     dlfs_shm_slot_same() vouches for is its key's bytes exactly;
 *   - the writers' order: slots rewritten by shm.h's writer helpers
 *     alone, two keys in turn, while readers copy: no copy vouched for
 *     holds the other key's bytes (a seq published before its key);
 *   - the locations table and the names table: round trips, replacement,
 *     refused containers and names, collisions that never answer wrong;
 *   - the seen ring: order, overflow, a number taken but not yet written,
 *     and dlfs_outside_start/stop handing every report on, also past a
 *     report whose number was taken and never written.
 * Run with test names as arguments to run only those (layout, find,
 * loading, evict, failed, ref, served, stress, order, loc, names, seen,
 * outside).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cache.h"
#include "outside.h"
#include "share.h"
#include "shm.h"
#include "tutil.h"

#define SLOT 8192u

/* ---- a fake loader ---- */

/* Where key's bytes start in its slot, and how many: they vary by key,
 * so that a reader is seen to take off and len from the key's record. */
static size_t key_off(uint64_t key)
{
	return (size_t)(key % 5) * 64;
}

static size_t key_len(uint64_t key)
{
	return SLOT - key_off(key) - (size_t)(key % 3) * 100;
}

/* The bytes of key's entry. */
static void pattern(uint64_t key, uint8_t *buf, size_t len)
{
	t_fill(buf, len, (uint32_t)(key ^ (key >> 29)) * 7919u + 1);
}

/* Is buf (len bytes) key's entry? */
static int is_key(uint64_t key, const uint8_t *buf, size_t len)
{
	uint8_t want[SLOT];
	if (len != key_len(key))
		return 0;
	pattern(key, want, len);
	return !memcmp(buf, want, len);
}

static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	unsigned entered;   /* loads started */
	uint64_t block_key; /* loads of it wait while blocked is set */
	int blocked;
	uint64_t fail_key;  /* loads of it return fail */
	int fail;
} fk = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static void fake_reset(void)
{
	pthread_mutex_lock(&fk.mu);
	fk.entered = 0;
	fk.blocked = 0;
	fk.fail = 0;
	pthread_mutex_unlock(&fk.mu);
}

static int fake_load(void *arg, void *ctx, uint64_t key, const void *what,
		     struct dlfs_load *l)
{
	(void)arg;
	(void)ctx;
	(void)what;
	pthread_mutex_lock(&fk.mu);
	fk.entered++;
	pthread_cond_broadcast(&fk.cv);
	while (fk.blocked && key == fk.block_key)
		pthread_cond_wait(&fk.cv, &fk.mu);
	int fail = fk.fail && key == fk.fail_key ? fk.fail : 0;
	pthread_mutex_unlock(&fk.mu);
	/* Scribble over the whole slot first, as a failed or partial read
	 * might: a reader that trusts a slot being loaded sees this. */
	memset(l->buf, 0xee, l->cap);
	if (fail)
		return dlfs_err_set(l->err, fail, "fake load of %llu fails",
				    (unsigned long long)key);
	l->off = key_off(key);
	l->len = key_len(key);
	pattern(key, (uint8_t *)l->buf + l->off, l->len);
	return 0;
}

/* Wait until the fake loader has started n loads. */
static void wait_entered(unsigned n)
{
	pthread_mutex_lock(&fk.mu);
	while (fk.entered < n)
		pthread_cond_wait(&fk.cv, &fk.mu);
	pthread_mutex_unlock(&fk.mu);
}

static void block(uint64_t key)
{
	pthread_mutex_lock(&fk.mu);
	fk.blocked = 1;
	fk.block_key = key;
	pthread_mutex_unlock(&fk.mu);
}

static void unblock(void)
{
	pthread_mutex_lock(&fk.mu);
	fk.blocked = 0;
	pthread_cond_broadcast(&fk.cv);
	pthread_mutex_unlock(&fk.mu);
}

/* ---- the share, and a reader's view of it ---- */

/* The three files as a reader in another process maps them: from the
 * fds, meta and data read-only. */
struct view {
	const struct dlfs_shm_head *h;
	const uint8_t *meta, *data;
	uint8_t *rw;
	size_t size[3];
};

static void *map_fd(int fd, size_t size, int prot)
{
	void *p = mmap(NULL, size, prot, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		perror("mmap of a shared file");
		abort();
	}
	return p;
}

static void view_open(struct dlfs_share *sh, struct view *v)
{
	int fds[3];
	struct stat st;
	if (dlfs_share_fds(sh, fds))
		abort();
	for (int i = 0; i < 3; i++) {
		if (fstat(fds[i], &st))
			abort();
		v->size[i] = (size_t)st.st_size;
	}
	v->meta = map_fd(fds[0], v->size[0], PROT_READ);
	v->data = map_fd(fds[1], v->size[1], PROT_READ);
	v->rw = map_fd(fds[2], v->size[2], PROT_READ | PROT_WRITE);
	v->h = (const struct dlfs_shm_head *)v->meta;
}

static void view_close(struct view *v)
{
	munmap((void *)v->meta, v->size[0]);
	munmap((void *)v->data, v->size[1]);
	munmap(v->rw, v->size[2]);
}

static struct dlfs_share *new_share(uint32_t n_slots, uint64_t n_inodes,
				    uint32_t n_containers)
{
	static const uint64_t first[4] = {0, 16, 40, 41};
	struct dlfs_share_conf c = {
		.n_slots = n_slots,
		.slot_size = dlfs_cache_slot_bytes(SLOT),
		.table_size = dlfs_cache_table_size(n_slots),
		.chunk_size = SLOT,
		.data_off = 4096,
		.n_chunks = 64,
		.n_inodes = n_inodes,
		.n_containers = n_containers,
		.first = first,
	};
	struct dlfs_share *sh = NULL;
	struct dlfs_err err = {0};
	if (n_containers > 4 || dlfs_share_new(&c, &sh, &err)) {
		fprintf(stderr, "dlfs_share_new: %s\n", err.msg);
		exit(1);
	}
	return sh;
}

/* A RAM tier of n slots placed in a share, and a reader's view. */
struct placed {
	struct dlfs_share *sh;
	struct dlfs_cache *c;
	struct view v;
	struct dlfs_shm_use *use; /* in the reader's rw mapping */
};

static void placed_new(struct placed *p, unsigned n)
{
	struct dlfs_err err = {0};
	p->sh = new_share(n, 100, 2);
	struct dlfs_shm_head *h = dlfs_share_head(p->sh);
	uint8_t *meta = dlfs_share_meta(p->sh);
	struct dlfs_cache_place place = {
		.bufs = dlfs_share_data(p->sh),
		.table = (uint32_t *)(meta + h->table_off),
		.pub = (struct dlfs_shm_slot *)(meta + h->slots_off),
		.use = (struct dlfs_shm_use *)(dlfs_share_rw(p->sh) +
					       h->use_off),
	};
	if (dlfs_cache_new_placed(SLOT, (uint64_t)n * SLOT, fake_load, NULL,
				  &place, &p->c, &err)) {
		fprintf(stderr, "dlfs_cache_new_placed: %s\n", err.msg);
		exit(1);
	}
	CHECK_EQ(dlfs_cache_slots(p->c), n);
	view_open(p->sh, &p->v);
	p->use = (struct dlfs_shm_use *)(p->v.rw + p->v.h->use_off);
}

static void placed_free(struct placed *p)
{
	view_close(&p->v);
	dlfs_cache_free(p->c);
	dlfs_share_free(p->sh);
}

/* Slot i's published record, as the reader sees it. */
static const struct dlfs_shm_slot *pub(const struct placed *p, int i)
{
	return (const struct dlfs_shm_slot *)(p->v.meta +
					      p->v.h->slots_off) + i;
}

static uint64_t seq_of(const struct placed *p, int i)
{
	return dlfs_shm_load(&pub(p, i)->seq);
}

/* The slot of key by dlfs_shm_find (seq, off, len out), or -1. */
static int find(const struct placed *p, uint64_t key, uint64_t *seq,
		uint64_t *off, uint64_t *len)
{
	return dlfs_shm_find(p->v.h, p->v.meta, key, seq, off, len);
}

static int found(const struct placed *p, uint64_t key)
{
	uint64_t seq = 0, off = 0, len = 0;
	return find(p, key, &seq, &off, &len) >= 0;
}

/* A reader's whole read of key: 1 with its bytes in buf (*len of them),
 * 0 when not found, -1 when the slot changed under the copy. */
static int shm_read(const struct placed *p, uint64_t key, uint8_t *buf,
		    size_t *len)
{
	uint64_t seq = 0, off = 0, n = 0;
	int slot = find(p, key, &seq, &off, &n);
	if (slot < 0)
		return 0;
	memcpy(buf, p->v.data + (uint64_t)slot * p->v.h->slot_size + off, n);
	*len = n;
	return dlfs_shm_slot_same(p->v.h, p->v.meta, slot, seq) ? 1 : -1;
}

/* get and put at once, serving served bytes. @return the get's code. */
static int touch(struct placed *p, uint64_t key, size_t served)
{
	struct dlfs_chunk_ref ref;
	struct dlfs_err err = {0};
	int ret = dlfs_cache_get(p->c, key, NULL, NULL, &ref, &err);
	if (!ret) {
		CHECK(is_key(key, ref.data, ref.len));
		dlfs_cache_put(p->c, &ref, served);
	}
	return ret;
}

static struct dlfs_cache_stats stats(struct placed *p)
{
	struct dlfs_cache_stats s;
	dlfs_cache_get_stats(p->c, &s);
	return s;
}

/* A dlfs_cache_get on a thread of its own (for a load that blocks). */
struct getter {
	struct placed *p;
	uint64_t key;
	int ret;
	struct dlfs_chunk_ref ref;
	struct dlfs_err err;
	pthread_t th;
};

static void *getter_main(void *arg)
{
	struct getter *g = arg;
	g->ret = dlfs_cache_get(g->p->c, g->key, NULL, NULL, &g->ref, &g->err);
	return NULL;
}

static void getter_start(struct getter *g, struct placed *p, uint64_t key)
{
	memset(g, 0, sizeof(*g));
	g->p = p;
	g->key = key;
	if (pthread_create(&g->th, NULL, getter_main, g))
		abort();
}

/* ---- the layout ---- */

struct range {
	const char *what;
	uint64_t off, size;
};

/* Each range inside size bytes, 64-aligned (but the head), and none
 * overlapping another. @return how many are not. */
static int check_ranges(const struct range *r, int n, uint64_t size)
{
	int bad = 0;
	for (int i = 0; i < n; i++) {
		if (r[i].off % 64 || r[i].size > size ||
		    r[i].off > size - r[i].size) {
			fprintf(stderr, "%s: %llu bytes at %llu of %llu\n",
				r[i].what, (unsigned long long)r[i].size,
				(unsigned long long)r[i].off,
				(unsigned long long)size);
			bad++;
		}
		for (int j = 0; j < i; j++)
			if (r[i].off < r[j].off + r[j].size &&
			    r[j].off < r[i].off + r[i].size) {
				fprintf(stderr, "%s overlaps %s\n", r[i].what,
					r[j].what);
				bad++;
			}
	}
	return bad;
}

static int is_pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

static void test_layout(void)
{
	/* Sizes that are no multiples of anything. */
	static const uint64_t first[3] = {0, 10, 500};
	const struct dlfs_share_conf c = {
		.n_slots = 5,
		.slot_size = 12288,
		.table_size = 16,
		.chunk_size = 8192,
		.data_off = 4096,
		.n_chunks = 1001,
		.n_inodes = 3001,
		.n_containers = 3,
		.first = first,
	};
	struct dlfs_share *sh = NULL;
	struct dlfs_err err = {0};
	CHECK_EQ(dlfs_share_new(&c, &sh, &err), 0);
	if (!sh) {
		fprintf(stderr, "dlfs_share_new: %s\n", err.msg);
		exit(1);
	}
	struct view v;
	view_open(sh, &v);
	const struct dlfs_shm_head *h = v.h;
	CHECK(h->magic == DLFS_SHM_MAGIC);
	CHECK_EQ(h->version, DLFS_SHM_VERSION);
	CHECK_EQ(h->n_slots, 5);
	CHECK_EQ(h->slot_size, 12288);
	CHECK_EQ(h->chunk_size, 8192);
	CHECK_EQ(h->data_off, 4096);
	CHECK_EQ(h->n_chunks, 1001);
	CHECK_EQ(h->n_inodes, 3001);
	CHECK_EQ(h->table_mask, 15);
	CHECK_EQ(h->n_containers, 3);
	CHECK_EQ(h->nvme, 0);
	/* The tables' sizes: a dataset of n_inodes files has an entry of
	 * its own in the locations table each, and the names table sets
	 * of ways, a power of 2 of them. */
	CHECK(is_pow2(h->loc_mask + 1) && h->loc_mask + 1 >= c.n_inodes);
	CHECK(is_pow2(h->name_sets));
	CHECK(h->name_sets * DLFS_SHM_NAME_WAYS >= c.n_inodes);
	/* The records' sizes that shm.h and share.c promise. */
	CHECK_EQ(sizeof(struct dlfs_shm_name), 128);
	CHECK_EQ(sizeof(struct dlfs_shm_use), 64);
	CHECK_EQ(sizeof(struct dlfs_shm_loc), 48);
	CHECK_EQ(sizeof(struct dlfs_shm_slot), 32);

	const struct range meta[] = {
		{"head", 0, sizeof(*h)},
		{"table", h->table_off, 16 * sizeof(uint32_t)},
		{"slots", h->slots_off, 5 * sizeof(struct dlfs_shm_slot)},
		{"first", h->first_off, 3 * sizeof(uint64_t)},
		{"nv_st", h->nv_st_off, 1001},
		{"nv_seq", h->nv_seq_off, sizeof(uint64_t)},
		{"loc", h->loc_off,
		 (h->loc_mask + 1) * sizeof(struct dlfs_shm_loc)},
		{"names", h->name_off,
		 h->name_sets * DLFS_SHM_NAME_WAYS *
			 sizeof(struct dlfs_shm_name)},
	};
	const struct range rw[] = {
		{"file_ok", h->file_ok_off, (3001 / 64 + 1) * sizeof(uint64_t)},
		{"use", h->use_off, 5 * sizeof(struct dlfs_shm_use)},
		{"count", h->count_off, sizeof(struct dlfs_shm_count)},
		{"seen", h->seen_off, sizeof(struct dlfs_shm_seen_ring)},
	};
	const struct range data[] = {{"slot buffers", 0, 5 * 12288}};
	CHECK_EQ(check_ranges(meta, sizeof(meta) / sizeof(*meta),
			      h->meta_size),
		 0);
	CHECK_EQ(check_ranges(rw, sizeof(rw) / sizeof(*rw), h->rw_size), 0);
	CHECK_EQ(check_ranges(data, 1, h->data_size), 0);
	CHECK(h->data_size == 5 * 12288);
	/* 3001 bits of file_ok: inode 3000's is in the array. */
	CHECK(h->file_ok_off + 3000 / 64 * 8 + 8 <= h->use_off);
	CHECK(!memcmp(v.meta + h->first_off, first, sizeof(first)));

	/* Three distinct memfds, each the size the head says, and the same
	 * memory as the share's own mappings. */
	int fds[3];
	const uint64_t sizes[3] = {h->meta_size, h->data_size, h->rw_size};
	CHECK(dlfs_share_fds(sh, fds) == 0);
	for (int i = 0; i < 3; i++) {
		struct stat st;
		char link[64], target[128];
		CHECK(fds[i] >= 0);
		CHECK(fds[i] != fds[(i + 1) % 3]);
		CHECK(fstat(fds[i], &st) == 0 && S_ISREG(st.st_mode));
		CHECK((uint64_t)st.st_size == sizes[i]);
		CHECK(fcntl(fds[i], F_GET_SEALS) >= 0); /* only a memfd */
		CHECK(fcntl(fds[i], F_GETFD) & FD_CLOEXEC);
		snprintf(link, sizeof(link), "/proc/self/fd/%d", fds[i]);
		ssize_t n = readlink(link, target, sizeof(target) - 1);
		target[n > 0 ? n : 0] = '\0';
		CHECK(!strncmp(target, "/memfd:dlfs-", 12));
		/* meta and data are the clients' to read, not to write. */
		void *w = mmap(NULL, (size_t)sizes[i], PROT_READ | PROT_WRITE,
			       MAP_SHARED, fds[i], 0);
		CHECK(i == 2 ? w != MAP_FAILED : w == MAP_FAILED && errno == EACCES);
		if (w != MAP_FAILED)
			munmap(w, (size_t)sizes[i]);
	}
	CHECK(!memcmp(v.meta, dlfs_share_head(sh), sizeof(*h)));
	CHECK(dlfs_share_meta(sh) == (uint8_t *)dlfs_share_head(sh));
	dlfs_share_data(sh)[5 * 12288 - 1] = 0x5a;
	CHECK_EQ(v.data[5 * 12288 - 1], 0x5a);
	v.rw[h->count_off] = 0x17;
	CHECK_EQ(dlfs_share_rw(sh)[h->count_off], 0x17);
	/* Fresh: an empty table, no seen reads; NVMe on when set. */
	for (unsigned i = 0; i < 16; i++)
		CHECK_EQ(((const uint32_t *)(v.meta + h->table_off))[i], 0);
	const struct dlfs_shm_seen_ring *ring0 =
		(const struct dlfs_shm_seen_ring *)(v.rw + h->seen_off);
	CHECK_EQ(ring0->head, 0);
	dlfs_share_set_nvme(sh, 1);
	CHECK_EQ(__atomic_load_n(&h->nvme, __ATOMIC_ACQUIRE), 1);
	dlfs_share_set_nvme(sh, 0);
	CHECK_EQ(__atomic_load_n(&h->nvme, __ATOMIC_ACQUIRE), 0);
	view_close(&v);
	dlfs_share_free(sh);
	dlfs_share_free(NULL);

	/* A table size that is no power of 2: refused, nothing made. */
	static const uint32_t bad[] = {0, 3, 12, 0x80000001u};
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		struct dlfs_share_conf b = c;
		struct dlfs_err e = {0};
		b.table_size = bad[i];
		char junk;
		sh = (struct dlfs_share *)(void *)&junk; /* to be NULL */
		CHECK_EQ(dlfs_share_new(&b, &sh, &e), -EINVAL);
		CHECK_EQ(e.code, -EINVAL);
		CHECK(sh == NULL);
	}
}

/* ---- the placed RAM tier ---- */

/* What get loaded is found by a reader with its bytes, off and len. */
static void test_find(void)
{
	struct placed p;
	uint8_t buf[SLOT];
	size_t len = 0;
	fake_reset();
	placed_new(&p, 4);
	/* Fresh: every record odd, nothing found. */
	for (int i = 0; i < 4; i++)
		CHECK(seq_of(&p, i) & 1);
	CHECK(!found(&p, 0) && !found(&p, 7));

	const uint64_t keys[] = {dlfs_cache_chunk_key(1, 7),
				 dlfs_cache_chunk_key(0, 0),
				 dlfs_cache_file_key(42)};
	for (int k = 0; k < 3; k++) {
		struct dlfs_chunk_ref ref;
		struct dlfs_err err = {0};
		uint64_t key = keys[k], seq = 0, off = 0, n = 0;
		CHECK_EQ(dlfs_cache_get(p.c, key, NULL, NULL, &ref, &err), 0);
		int slot = find(&p, key, &seq, &off, &n);
		CHECK(slot >= 0 && slot < 4);
		if (slot < 0) {
			dlfs_cache_put(p.c, &ref, 0);
			continue;
		}
		CHECK(!(seq & 1) && seq > 0);
		CHECK_EQ(off, key_off(key));
		CHECK_EQ(n, key_len(key));
		CHECK(pub(&p, slot)->key == key);
		/* The cache's buffer is the shared memory. */
		CHECK(ref.data == dlfs_share_data(p.sh) +
					  (uint64_t)slot * p.v.h->slot_size +
					  off);
		CHECK(is_key(key, p.v.data + (uint64_t)slot *
						     p.v.h->slot_size + off,
			     n));
		CHECK(dlfs_shm_slot_same(p.v.h, p.v.meta, slot, seq));
		dlfs_cache_put(p.c, &ref, 0);
		/* Still there after the put, with the same seq. */
		CHECK_EQ(shm_read(&p, key, buf, &len), 1);
		CHECK(is_key(key, buf, len));
		CHECK(dlfs_shm_slot_same(p.v.h, p.v.meta, slot, seq));
	}
	/* A hit changes nothing a reader sees. */
	uint64_t seq = 0, off = 0, n = 0, seq2 = 0;
	int slot = find(&p, keys[0], &seq, &off, &n);
	CHECK_EQ(touch(&p, keys[0], 0), 0);
	CHECK_EQ(find(&p, keys[0], &seq2, &off, &n), slot);
	CHECK(seq2 == seq);
	CHECK(!found(&p, dlfs_cache_chunk_key(1, 8)));
	CHECK_EQ(stats(&p).chunks, 3);
	placed_free(&p);
}

/* While a load is blocked in the loader, its slot is odd and neither the
 * key loading nor the key it replaced is found. */
static void test_loading(void)
{
	struct placed p;
	struct getter g;
	uint64_t sx = 0, seq = 0, off = 0, len = 0;
	const uint64_t x = 11, k = 12;
	fake_reset();
	placed_new(&p, 1);
	CHECK_EQ(touch(&p, x, 0), 0);
	CHECK_EQ(find(&p, x, &sx, &off, &len), 0);

	block(k);
	getter_start(&g, &p, k);
	wait_entered(2);
	CHECK(seq_of(&p, 0) & 1);
	CHECK(seq_of(&p, 0) > sx);
	CHECK(!found(&p, k));
	CHECK(!found(&p, x)); /* its record may still name x: seq says no */
	CHECK(!dlfs_shm_slot_same(p.v.h, p.v.meta, 0, sx));
	/* The table already points at the slot: the seq alone keeps
	 * readers out. */
	const uint32_t *table = (const uint32_t *)(p.v.meta +
						   p.v.h->table_off);
	CHECK_EQ(table[dlfs_shm_hash(k) & p.v.h->table_mask], 1);
	unblock();
	pthread_join(g.th, NULL);
	CHECK_EQ(g.ret, 0);
	CHECK_EQ(find(&p, k, &seq, &off, &len), 0);
	CHECK(!(seq & 1) && seq == sx + 2);
	CHECK(is_key(k, p.v.data + off, len));
	dlfs_cache_put(p.c, &g.ref, 0);
	placed_free(&p);
}

/* An evicted key is not found, and a reader holding its old seq learns
 * that its copy may be of other bytes. */
static void test_evict(void)
{
	struct placed p;
	uint64_t sa = 0, oa = 0, la = 0, seq = 0, off = 0, len = 0;
	uint8_t buf[SLOT];
	fake_reset();
	placed_new(&p, 2);
	const uint64_t a = dlfs_cache_chunk_key(1, 1);
	CHECK_EQ(touch(&p, a, 0), 0);
	int slot = find(&p, a, &sa, &oa, &la);
	CHECK(slot >= 0);
	/* A reader copies a's bytes ... */
	memcpy(buf, p.v.data + (uint64_t)slot * p.v.h->slot_size + oa, la);
	/* ... while other keys push a out. */
	for (uint64_t k = 2; k < 6; k++)
		CHECK_EQ(touch(&p, dlfs_cache_chunk_key(1, k), 0), 0);
	CHECK(!dlfs_cache_contains(p.c, a));
	CHECK(!found(&p, a));
	CHECK(!dlfs_shm_slot_same(p.v.h, p.v.meta, slot, sa));
	CHECK(seq_of(&p, slot) > sa);
	/* The two left are found, with their bytes. */
	for (uint64_t k = 4; k < 6; k++) {
		size_t n = 0;
		uint64_t key = dlfs_cache_chunk_key(1, k);
		CHECK_EQ(shm_read(&p, key, buf, &n), 1);
		CHECK(is_key(key, buf, n));
	}
	/* Loaded again: found again, in a new seq. */
	CHECK_EQ(touch(&p, a, 0), 0);
	slot = find(&p, a, &seq, &off, &len);
	CHECK(slot >= 0);
	CHECK(!(seq & 1) && seq > sa);
	placed_free(&p);
}

/* A failed load leaves nothing to find, not even what its slot held. */
static void test_failed(void)
{
	struct placed p;
	struct dlfs_chunk_ref ref;
	struct dlfs_err err = {0};
	uint64_t sy = 0, off = 0, len = 0;
	const uint64_t y = 21, f = 22, g = 23;
	fake_reset();
	placed_new(&p, 1);
	CHECK_EQ(touch(&p, y, 0), 0);
	CHECK_EQ(find(&p, y, &sy, &off, &len), 0);
	pthread_mutex_lock(&fk.mu);
	fk.fail = -EIO;
	fk.fail_key = f;
	pthread_mutex_unlock(&fk.mu);
	CHECK_EQ(dlfs_cache_get(p.c, f, NULL, NULL, &ref, &err), -EIO);
	CHECK(!found(&p, f));
	CHECK(!found(&p, y));
	CHECK(seq_of(&p, 0) & 1);
	CHECK(!dlfs_shm_slot_same(p.v.h, p.v.meta, 0, sy));
	CHECK_EQ(((const uint32_t *)(p.v.meta + p.v.h->table_off))
			 [dlfs_shm_hash(f) & p.v.h->table_mask],
		 0);
	/* Again: still nothing. */
	CHECK_EQ(dlfs_cache_get(p.c, f, NULL, NULL, &ref, &err), -EIO);
	CHECK(!found(&p, f));
	CHECK(seq_of(&p, 0) & 1);
	/* The slot serves the next key. */
	CHECK_EQ(touch(&p, g, 0), 0);
	CHECK(found(&p, g) && !found(&p, f));
	CHECK(!(seq_of(&p, 0) & 1));
	placed_free(&p);
}

/* Three slots: a, b, c loaded, then d evicts a and the hand stops on b,
 * whose bit CLOCK has cleared. e then evicts b, unless a reader outside
 * marked b (use.ref): then c goes, and b's mark is gone, so f evicts b.
 * @return how b and c fare: bit 0 b is there after e, bit 1 c is. */
static int clock_run(int outside)
{
	struct placed p;
	fake_reset();
	placed_new(&p, 3);
	for (uint64_t k = 1; k <= 4; k++) /* a b c d */
		CHECK_EQ(touch(&p, k, 0), 0);
	CHECK(!found(&p, 1));
	uint64_t seq = 0, off = 0, len = 0;
	int b = find(&p, 2, &seq, &off, &len);
	CHECK(b >= 0);
	if (b < 0)
		return -1;
	/* A reader outside served from b: as a reader's own hit would. */
	if (outside)
		__atomic_store_n(&p.use[b].ref, 1, __ATOMIC_RELAXED);
	CHECK_EQ(touch(&p, 5, 0), 0); /* e */
	int ret = found(&p, 2) | found(&p, 3) << 1;
	CHECK(found(&p, 4) && found(&p, 5));
	/* The mark was taken: it spares b once. */
	CHECK_EQ(__atomic_load_n(&p.use[b].ref, __ATOMIC_RELAXED), 0);
	CHECK_EQ(touch(&p, 6, 0), 0); /* f */
	CHECK(!found(&p, 2));
	placed_free(&p);
	return ret;
}

static void test_ref(void)
{
	CHECK_EQ(clock_run(0), 2); /* b went, c stayed */
	CHECK_EQ(clock_run(1), 1); /* b stayed, c went */
}

/* Bytes served outside count as served when an entry is evicted. */
static void test_served(void)
{
	struct placed p;
	uint64_t seq = 0, off = 0, len = 0;
	const uint64_t a = 30, b = 31, c = 32; /* chunk keys */
	fake_reset();
	placed_new(&p, 1);
	CHECK_EQ(touch(&p, a, 1000), 0);
	int slot = find(&p, a, &seq, &off, &len);
	CHECK_EQ(slot, 0);
	__atomic_fetch_add(&p.use[0].served, 2500, __ATOMIC_RELAXED);
	CHECK_EQ(touch(&p, b, 0), 0); /* evicts a */
	struct dlfs_cache_stats s = stats(&p);
	CHECK_EQ(s.evicted_bytes, key_len(a));
	CHECK_EQ(s.evicted_unused_bytes, key_len(a) - 3500);
	/* Taken: b starts from 0. */
	CHECK_EQ(__atomic_load_n(&p.use[0].served, __ATOMIC_RELAXED), 0);
	/* b served whole outside, none inside: nothing wasted. */
	__atomic_fetch_add(&p.use[0].served, key_len(b), __ATOMIC_RELAXED);
	CHECK_EQ(touch(&p, c, 0), 0);
	s = stats(&p);
	CHECK_EQ(s.evicted_bytes, key_len(a) + key_len(b));
	CHECK_EQ(s.evicted_unused_bytes, key_len(a) - 3500);
	/* Without outside use: all of c's unread bytes are wasted. */
	CHECK_EQ(touch(&p, a, 0), 0);
	s = stats(&p);
	CHECK_EQ(s.evicted_unused_bytes, key_len(a) - 3500 + key_len(c));
	placed_free(&p);

	/* A count left in a slot's use before its load is not the new
	 * key's (a reader late with its count of what the slot held). */
	fake_reset();
	placed_new(&p, 1);
	__atomic_store_n(&p.use[0].served, 100000, __ATOMIC_RELAXED);
	CHECK_EQ(touch(&p, a, 0), 0);
	CHECK_EQ(touch(&p, b, 0), 0);
	CHECK_EQ(stats(&p).evicted_unused_bytes, key_len(a));
	placed_free(&p);
}

/* ---- the stress ---- */

#define STRESS_KEYS 16
#define STRESS_LOADERS 2
#define STRESS_READERS 3
#define STRESS_GETS 12000     /* per loader */
#define STRESS_READS 20000000 /* per reader, at most */

struct stress {
	struct placed p;
	uint8_t want[STRESS_KEYS][SLOT];
	atomic_uint loaders_left;
	atomic_ulong ok, bad, changed, missed, gets_bad;
	atomic_uint seed;
};

static uint64_t stress_key(unsigned i)
{
	return dlfs_cache_chunk_key(3, 100 + i);
}

static uint32_t xorshift(uint32_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 17;
	*x ^= *x << 5;
	return *x;
}

static void *stress_loader(void *arg)
{
	struct stress *s = arg;
	uint32_t x = atomic_fetch_add(&s->seed, 1) * 2654435761u + 1;
	for (unsigned i = 0; i < STRESS_GETS; i++) {
		unsigned k = xorshift(&x) % STRESS_KEYS;
		struct dlfs_chunk_ref ref;
		struct dlfs_err err = {0};
		uint64_t key = stress_key(k);
		if (dlfs_cache_get(s->p.c, key, NULL, NULL, &ref, &err) ||
		    ref.len != key_len(key) ||
		    memcmp(ref.data, s->want[k], ref.len)) {
			atomic_fetch_add(&s->gets_bad, 1);
		}
		dlfs_cache_put(s->p.c, &ref, 0);
	}
	atomic_fetch_sub(&s->loaders_left, 1);
	return NULL;
}

static void *stress_reader(void *arg)
{
	struct stress *s = arg;
	uint32_t x = atomic_fetch_add(&s->seed, 1) * 2654435761u + 1;
	uint64_t ok = 0, bad = 0, changed = 0, missed = 0;
	uint8_t buf[SLOT];
	for (unsigned i = 0;
	     i < STRESS_READS && atomic_load(&s->loaders_left); i++) {
		unsigned k = xorshift(&x) % STRESS_KEYS;
		uint64_t key = stress_key(k);
		size_t len = 0;
		int r = shm_read(&s->p, key, buf, &len);
		if (!r) {
			missed++;
		} else if (r < 0) {
			changed++;
		} else if (len == key_len(key) &&
			   !memcmp(buf, s->want[k], len)) {
			ok++;
		} else {
			bad++;
		}
	}
	atomic_fetch_add(&s->ok, ok);
	atomic_fetch_add(&s->bad, bad);
	atomic_fetch_add(&s->changed, changed);
	atomic_fetch_add(&s->missed, missed);
	return NULL;
}

static void test_stress(void)
{
	struct stress *s = calloc(1, sizeof(*s));
	pthread_t th[STRESS_LOADERS + STRESS_READERS];
	if (!s)
		abort();
	fake_reset();
	placed_new(&s->p, 3);
	for (unsigned k = 0; k < STRESS_KEYS; k++)
		pattern(stress_key(k), s->want[k], key_len(stress_key(k)));
	atomic_store(&s->loaders_left, STRESS_LOADERS);
	uint64_t t0 = t_ms();
	for (int i = 0; i < STRESS_LOADERS + STRESS_READERS; i++)
		if (pthread_create(&th[i], NULL,
				   i < STRESS_LOADERS ? stress_loader
						      : stress_reader,
				   s))
			abort();
	for (int i = 0; i < STRESS_LOADERS + STRESS_READERS; i++)
		pthread_join(th[i], NULL);
	struct dlfs_cache_stats cs = stats(&s->p);
	fprintf(stderr,
		"stress: %llu ms, %llu loads; reads: %lu whole, %lu changed, "
		"%lu missed, %lu wrong\n",
		(unsigned long long)(t_ms() - t0),
		(unsigned long long)cs.misses, atomic_load(&s->ok),
		atomic_load(&s->changed), atomic_load(&s->missed),
		atomic_load(&s->bad));
	CHECK_EQ(atomic_load(&s->bad), 0);
	CHECK_EQ(atomic_load(&s->gets_bad), 0);
	/* The readers did read, while the slots changed hands. */
	CHECK(atomic_load(&s->ok) > 0);
	CHECK(cs.misses > STRESS_GETS / 2);
	placed_free(&s->p);
	free(s);
}

/* ---- the writers' order ----
 * The stress above finds a slot left unpublished, but a writer that
 * publishes seq before the key (a reader then takes the new bytes for the
 * old key) only shows in the instant between two stores. Here each of
 * ORDER_SLOTS slots is written over and over, by shm.h's helpers alone,
 * for keys A and B in turn, with a few bytes of the key's tag: while twice
 * as many threads share the cores, a writer is now and then preempted in
 * that instant, and a reader of A then copies B's tag and is vouched for
 * by seq. (Such a writer made 10 runs of 10 fail here, with 1 to 700,000
 * wrong reads each.) */

#define ORDER_MS 1500
#define ORDER_LEN 8
#define ORDER_SLOTS 4

struct order {
	struct dlfs_share *sh;
	struct view v;
	uint64_t key[ORDER_SLOTS][2]; /* slot, then A and B */
	uint64_t t0;
	atomic_uint writers_left;
	atomic_ulong ok, wrong, writes;
};

struct order_arg {
	struct order *o;
	int slot;
};

static uint8_t order_tag(uint64_t key)
{
	return (uint8_t)(key * 0x9e3779b1u >> 24) | 1;
}

static void *order_writer(void *arg)
{
	struct order_arg *a = arg;
	struct order *o = a->o;
	struct dlfs_shm_head *h = dlfs_share_head(o->sh);
	struct dlfs_shm_slot *s = (struct dlfs_shm_slot *)(
		dlfs_share_meta(o->sh) + h->slots_off) + a->slot;
	uint8_t *buf = dlfs_share_data(o->sh) + a->slot * h->slot_size;
	uint64_t n = 0;
	while (t_ms() - o->t0 < ORDER_MS) {
		for (unsigned i = 0; i < 1000; i++, n++) {
			uint64_t key = o->key[a->slot][n & 1];
			dlfs_shm_slot_begin(s);
			memset(buf, order_tag(key), ORDER_LEN);
			dlfs_shm_slot_end(s, key, 0, ORDER_LEN);
		}
	}
	atomic_fetch_add(&o->writes, n);
	atomic_fetch_sub(&o->writers_left, 1);
	return NULL;
}

static void *order_reader(void *arg)
{
	struct order *o = arg;
	uint64_t ok = 0, wrong = 0, k = 0;
	uint8_t buf[ORDER_LEN];
	while (atomic_load(&o->writers_left)) {
		uint64_t key = o->key[k % ORDER_SLOTS][(k / ORDER_SLOTS) & 1];
		uint64_t seq, off, len;
		k++;
		int slot = dlfs_shm_find(o->v.h, o->v.meta, key, &seq, &off,
					 &len);
		if (slot < 0 || off != 0 || len != ORDER_LEN)
			continue;
		memcpy(buf, o->v.data + (uint64_t)slot * o->v.h->slot_size,
		       ORDER_LEN);
		if (!dlfs_shm_slot_same(o->v.h, o->v.meta, slot, seq))
			continue;
		int good = 1;
		for (unsigned i = 0; i < ORDER_LEN; i++)
			good &= buf[i] == order_tag(key);
		good ? ok++ : wrong++;
	}
	atomic_fetch_add(&o->ok, ok);
	atomic_fetch_add(&o->wrong, wrong);
	return NULL;
}

/* Key k's table entry: slot v - 1, by linear probing. */
static void order_table(struct order *o, uint64_t key, uint32_t v)
{
	struct dlfs_shm_head *h = dlfs_share_head(o->sh);
	uint32_t *table = (uint32_t *)(dlfs_share_meta(o->sh) + h->table_off);
	uint32_t i = dlfs_shm_hash(key) & h->table_mask;
	while (table[i])
		i = (i + 1) & h->table_mask;
	__atomic_store_n(&table[i], v, __ATOMIC_RELEASE);
}

static void test_order(void)
{
	struct order *o = calloc(1, sizeof(*o));
	struct order_arg wa[ORDER_SLOTS];
	pthread_t th[2 * ORDER_SLOTS];
	if (!o)
		abort();
	o->sh = new_share(ORDER_SLOTS, 100, 2);
	view_open(o->sh, &o->v);
	for (int slot = 0; slot < ORDER_SLOTS; slot++)
		for (int i = 0; i < 2; i++) {
			o->key[slot][i] = dlfs_cache_chunk_key(1, 10 * slot + i);
			order_table(o, o->key[slot][i], (uint32_t)slot + 1);
		}
	atomic_store(&o->writers_left, ORDER_SLOTS);
	o->t0 = t_ms();
	for (int i = 0; i < 2 * ORDER_SLOTS; i++) {
		int w = i < ORDER_SLOTS;
		wa[i % ORDER_SLOTS] = (struct order_arg){o, i % ORDER_SLOTS};
		if (pthread_create(&th[i], NULL,
				   w ? order_writer : order_reader,
				   w ? (void *)&wa[i] : (void *)o))
			abort();
	}
	for (int i = 0; i < 2 * ORDER_SLOTS; i++)
		pthread_join(th[i], NULL);
	fprintf(stderr, "order: %lu writes; reads: %lu right, %lu wrong\n",
		atomic_load(&o->writes), atomic_load(&o->ok),
		atomic_load(&o->wrong));
	CHECK_EQ(atomic_load(&o->wrong), 0);
	CHECK(atomic_load(&o->ok) > 0);
	view_close(&o->v);
	dlfs_share_free(o->sh);
	free(o);
}

/* ---- the locations table ---- */

static const struct dlfs_shm_loc *loc_entry(const struct view *v,
					    uint64_t ino)
{
	return (const struct dlfs_shm_loc *)(v->meta + v->h->loc_off) +
	       (ino & v->h->loc_mask);
}

static void test_loc(void)
{
	struct dlfs_share *sh = new_share(4, 100, 3);
	struct view v;
	struct dlfs_shm_loc out;
	view_open(sh, &v);
	const uint64_t mask = v.h->loc_mask;
	CHECK_EQ(mask, 127);
	CHECK_EQ(dlfs_shm_loc_get(v.h, v.meta, 5, &out), -1); /* never */
	CHECK_EQ(dlfs_shm_loc_get(v.h, v.meta, 0, &out), -1);

	dlfs_share_put_loc(sh, 5, 2, 1 << 20, 777, 0xabcdef0123456789ull);
	memset(&out, 0xff, sizeof(out));
	CHECK_EQ(dlfs_shm_loc_get(v.h, v.meta, 5, &out), 0);
	CHECK_EQ(out.ino, 5);
	CHECK_EQ(out.container, 2);
	CHECK_EQ(out.offset, 1 << 20);
	CHECK_EQ(out.size, 777);
	CHECK(out.xxh3 == 0xabcdef0123456789ull);
	/* The same again writes nothing; a change is written. */
	uint64_t q = dlfs_shm_load(&loc_entry(&v, 5)->seq);
	CHECK(q && !(q & 1));
	dlfs_share_put_loc(sh, 5, 2, 1 << 20, 777, 0xabcdef0123456789ull);
	CHECK(dlfs_shm_load(&loc_entry(&v, 5)->seq) == q);
	dlfs_share_put_loc(sh, 5, 1, 4096, 778, 1);
	CHECK(dlfs_shm_load(&loc_entry(&v, 5)->seq) == q + 2);
	CHECK_EQ(dlfs_shm_loc_get(v.h, v.meta, 5, &out), 0);
	CHECK(out.container == 1 && out.offset == 4096 && out.size == 778 &&
	      out.xxh3 == 1);
	/* Other inodes have entries of their own. */
	dlfs_share_put_loc(sh, 6, 0, 0, 0, 0);
	CHECK_EQ(dlfs_shm_loc_get(v.h, v.meta, 6, &out), 0);
	CHECK(out.ino == 6 && out.size == 0);
	CHECK_EQ(dlfs_shm_loc_get(v.h, v.meta, 5, &out), 0);
	CHECK_EQ(out.ino, 5);

	/* Another inode of the same entry replaces it: the first is gone,
	 * not answered with the other's place. */
	const uint64_t other = 5 + mask + 1;
	CHECK_EQ(dlfs_shm_loc_get(v.h, v.meta, other, &out), -1);
	dlfs_share_put_loc(sh, other, 0, 8192, 99, 2);
	CHECK_EQ(dlfs_shm_loc_get(v.h, v.meta, other, &out), 0);
	CHECK(out.ino == other && out.container == 0 && out.offset == 8192 &&
	      out.size == 99 && out.xxh3 == 2);
	CHECK_EQ(dlfs_shm_loc_get(v.h, v.meta, 5, &out), -1);
	dlfs_share_put_loc(sh, 5, 1, 4096, 778, 1);
	CHECK_EQ(dlfs_shm_loc_get(v.h, v.meta, 5, &out), 0);
	CHECK_EQ(dlfs_shm_loc_get(v.h, v.meta, other, &out), -1);

	/* A container the dataset does not have: the reader refuses it. */
	dlfs_share_put_loc(sh, 7, 3, 0, 10, 0);
	CHECK_EQ(dlfs_shm_loc_get(v.h, v.meta, 7, &out), -1);
	dlfs_share_put_loc(sh, 8, UINT32_MAX, 0, 10, 0);
	CHECK_EQ(dlfs_shm_loc_get(v.h, v.meta, 8, &out), -1);
	dlfs_share_put_loc(sh, 7, 2, 0, 10, 0);
	CHECK_EQ(dlfs_shm_loc_get(v.h, v.meta, 7, &out), 0);

	/* An entry being written (odd) is not read, and not written by a
	 * second writer. */
	struct dlfs_shm_loc *e = (struct dlfs_shm_loc *)(dlfs_share_meta(sh) +
							 v.h->loc_off) +
				 7;
	q = e->seq;
	__atomic_store_n(&e->seq, q + 1, __ATOMIC_RELEASE);
	CHECK_EQ(dlfs_shm_loc_get(v.h, v.meta, 7, &out), -1);
	dlfs_share_put_loc(sh, 7, 1, 1, 1, 1);
	CHECK(e->seq == q + 1 && e->container == 2);
	__atomic_store_n(&e->seq, q, __ATOMIC_RELEASE);
	CHECK_EQ(dlfs_shm_loc_get(v.h, v.meta, 7, &out), 0);
	CHECK_EQ(out.container, 2);
	view_close(&v);
	dlfs_share_free(sh);
}

/* ---- the names table ---- */

static int name_get(const struct view *v, uint64_t parent, const char *name,
		    struct dlfs_shm_name *out)
{
	return dlfs_shm_name_get(v->h, v->meta, parent, name, strlen(name),
				 out);
}

static void put_name(struct dlfs_share *sh, uint64_t parent,
		     const char *name, uint64_t ino, int64_t size)
{
	struct stat st;
	memset(&st, 0, sizeof(st));
	st.st_size = size;
	st.st_mode = S_IFREG | 0644;
	st.st_nlink = 1;
	dlfs_share_put_name(sh, parent, name, strlen(name), ino, &st);
}

/* Entries written so far (seq not 0). */
static unsigned names_used(const struct view *v)
{
	const struct dlfs_shm_name *e =
		(const struct dlfs_shm_name *)(v->meta + v->h->name_off);
	unsigned n = 0;
	for (uint64_t i = 0; i < v->h->name_sets * DLFS_SHM_NAME_WAYS; i++)
		n += dlfs_shm_load(&e[i].seq) != 0;
	return n;
}

/* Five names in parent of one set that no entry is in yet, into coll.
 * @return how many were found (5). */
static int collide(const struct view *v, uint64_t parent, char coll[5][16])
{
	const uint64_t sets = v->h->name_sets;
	const struct dlfs_shm_name *all =
		(const struct dlfs_shm_name *)(v->meta + v->h->name_off);
	uint64_t want = 0;
	int n = 0;
	/* Ways fill in order: a set whose first is unused is empty. */
	while (want < sets && all[want * DLFS_SHM_NAME_WAYS].seq)
		want++;
	for (unsigned i = 0; want < sets && n < 5 && i < 1000000; i++) {
		char s[16];
		int len = snprintf(s, sizeof(s), "x%u", i);
		if ((dlfs_shm_name_hash(parent, s, (uint64_t)len) &
		     (sets - 1)) == want)
			memcpy(coll[n++], s, sizeof(s));
	}
	return n;
}

static void test_names(void)
{
	struct dlfs_share *sh = new_share(4, 100, 2);
	struct view v;
	struct dlfs_shm_name out;
	view_open(sh, &v);
	CHECK(v.h->name_sets >= 2);

	/* A round trip with every field. */
	struct stat st;
	memset(&st, 0, sizeof(st));
	st.st_size = 123456789012ll;
	st.st_mtim.tv_sec = 1700000000;
	st.st_mtim.tv_nsec = 987654321;
	st.st_mode = S_IFREG | 0640;
	st.st_nlink = 3;
	st.st_uid = 1234;
	st.st_gid = 5678;
	CHECK_EQ(name_get(&v, 1, "cat.jpg", &out), -1);
	dlfs_share_put_name(sh, 1, "cat.jpg", 7, 42, &st);
	memset(&out, 0xff, sizeof(out));
	CHECK_EQ(name_get(&v, 1, "cat.jpg", &out), 0);
	CHECK_EQ(out.parent, 1);
	CHECK_EQ(out.ino, 42);
	CHECK_EQ(out.size, 123456789012ll);
	CHECK_EQ(out.mtime, 1700000000);
	CHECK_EQ(out.mtime_ns, 987654321);
	CHECK_EQ(out.mode, S_IFREG | 0640);
	CHECK_EQ(out.nlink, 3);
	CHECK_EQ(out.uid, 1234);
	CHECK_EQ(out.gid, 5678);
	CHECK_EQ(out.len, 7);
	CHECK(!memcmp(out.name, "cat.jpg", 7));
	CHECK(!(out.seq & 1) && out.seq);
	/* Prefixes, extensions and other parents are other names. */
	CHECK_EQ(name_get(&v, 1, "cat.jp", &out), -1);
	CHECK_EQ(name_get(&v, 1, "cat.jpgx", &out), -1);
	CHECK_EQ(name_get(&v, 1, "Cat.jpg", &out), -1);
	CHECK_EQ(name_get(&v, 2, "cat.jpg", &out), -1);
	/* The same name in another directory is another entry. */
	put_name(sh, 2, "cat.jpg", 43, 10);
	CHECK_EQ(name_get(&v, 2, "cat.jpg", &out), 0);
	CHECK(out.parent == 2 && out.ino == 43 && out.size == 10);
	CHECK_EQ(name_get(&v, 1, "cat.jpg", &out), 0);
	CHECK(out.parent == 1 && out.ino == 42);
	/* A changed answer replaces the name's entry. */
	put_name(sh, 2, "cat.jpg", 44, 11);
	CHECK_EQ(name_get(&v, 2, "cat.jpg", &out), 0);
	CHECK(out.ino == 44 && out.size == 11);
	CHECK_EQ(names_used(&v), 2);

	/* Names up to DLFS_SHM_NAME_MAX bytes; longer and empty ones are
	 * not stored. */
	char name[DLFS_SHM_NAME_MAX + 2];
	memset(name, 'n', sizeof(name));
	name[DLFS_SHM_NAME_MAX] = '\0';
	put_name(sh, 1, name, 50, 1);
	CHECK_EQ(names_used(&v), 3);
	CHECK_EQ(name_get(&v, 1, name, &out), 0);
	CHECK(out.ino == 50 && out.len == DLFS_SHM_NAME_MAX &&
	      !memcmp(out.name, name, DLFS_SHM_NAME_MAX));
	name[DLFS_SHM_NAME_MAX] = 'n';
	name[DLFS_SHM_NAME_MAX + 1] = '\0';
	put_name(sh, 1, name, 51, 1);
	CHECK_EQ(names_used(&v), 3);
	CHECK_EQ(name_get(&v, 1, name, &out), -1);
	dlfs_share_put_name(sh, 1, "", 0, 52, &st);
	CHECK_EQ(names_used(&v), 3);
	CHECK_EQ(name_get(&v, 1, "", &out), -1);

	/* Five names of one set (one none of the names above is in): at
	 * most four stay, and each answer is the name's own. */
	const uint64_t parent = 9;
	char coll[5][16];
	int n = collide(&v, parent, coll);
	CHECK_EQ(n, 5);
	for (int i = 0; i < n; i++) {
		put_name(sh, parent, coll[i], 1000 + (uint64_t)i, i);
		/* The name just put is there. */
		CHECK_EQ(name_get(&v, parent, coll[i], &out), 0);
	}
	int there = 0;
	for (int i = 0; i < n; i++) {
		memset(&out, 0, sizeof(out));
		if (name_get(&v, parent, coll[i], &out))
			continue;
		there++;
		CHECK(out.ino == 1000 + (uint64_t)i && out.size == i &&
		      out.parent == parent && out.len == strlen(coll[i]) &&
		      !memcmp(out.name, coll[i], out.len));
	}
	CHECK(there <= DLFS_SHM_NAME_WAYS);
	CHECK_EQ(there, DLFS_SHM_NAME_WAYS); /* one replaced, the rest stay */
	/* The other names are untouched. */
	CHECK_EQ(name_get(&v, 1, "cat.jpg", &out), 0);
	CHECK_EQ(out.ino, 42);

	/* A fifth name that is a hard link of the name in the way it
	 * replaces (same directory, inode and size) is stored as any
	 * fifth name is: the entry there is another name's, not its own. */
	const uint64_t dir = 10;
	char link[5][16];
	CHECK_EQ(collide(&v, dir, link), 5);
	const uint64_t victim = (dlfs_shm_name_hash(dir, link[4],
						    strlen(link[4])) >>
				 40) %
				DLFS_SHM_NAME_WAYS;
	for (int i = 0; i < 4; i++)
		put_name(sh, dir, link[i], 2000 + (uint64_t)i, 7);
	put_name(sh, dir, link[4], 2000 + victim, 7);
	CHECK_EQ(name_get(&v, dir, link[4], &out), 0);
	CHECK(out.ino == 2000 + victim && out.len == strlen(link[4]));
	CHECK_EQ(name_get(&v, dir, link[victim], &out), -1);
	there = 0;
	for (int i = 0; i < 4; i++)
		if (!name_get(&v, dir, link[i], &out)) {
			there++;
			CHECK_EQ(out.ino, 2000 + (uint64_t)i);
		}
	CHECK_EQ(there, DLFS_SHM_NAME_WAYS - 1);

	/* An entry being written (odd) is not read. */
	struct dlfs_shm_name *set = dlfs_shm_name_set(
		v.h, dlfs_share_meta(sh), dlfs_shm_name_hash(1, "cat.jpg", 7));
	int w = 0;
	while (w < DLFS_SHM_NAME_WAYS && set[w].ino != 42)
		w++;
	CHECK(w < DLFS_SHM_NAME_WAYS);
	if (w < DLFS_SHM_NAME_WAYS) {
		uint64_t q = set[w].seq;
		/* The same answer again writes nothing. */
		dlfs_share_put_name(sh, 1, "cat.jpg", 7, 42, &st);
		CHECK(set[w].seq == q);
		__atomic_store_n(&set[w].seq, q + 1, __ATOMIC_RELEASE);
		CHECK_EQ(name_get(&v, 1, "cat.jpg", &out), -1);
		__atomic_store_n(&set[w].seq, q, __ATOMIC_RELEASE);
		CHECK_EQ(name_get(&v, 1, "cat.jpg", &out), 0);
	}
	view_close(&v);
	dlfs_share_free(sh);
}

/* ---- the seen ring ---- */

static struct dlfs_shm_seen_ring *ring(const struct view *v)
{
	return (struct dlfs_shm_seen_ring *)(v->rw + v->h->seen_off);
}

static void test_seen(void)
{
	struct dlfs_share *sh = new_share(4, 100, 2);
	struct view v;
	uint64_t next = 0, ino = 0;
	view_open(sh, &v);
	CHECK_EQ(dlfs_share_seen_next(sh, &next, &ino), 0);
	CHECK_EQ(next, 0);

	/* In order. */
	for (uint64_t i = 10; i < 20; i++)
		dlfs_shm_seen_put(v.h, v.rw, i);
	for (uint64_t i = 10; i < 20; i++) {
		CHECK_EQ(dlfs_share_seen_next(sh, &next, &ino), 1);
		CHECK_EQ(ino, i);
	}
	CHECK_EQ(dlfs_share_seen_next(sh, &next, &ino), 0);
	CHECK_EQ(next, 10);

	/* More than the ring holds, undrained: the newest DLFS_SHM_SEEN,
	 * in order. */
	const uint64_t more = DLFS_SHM_SEEN + 5;
	for (uint64_t i = 0; i < more; i++)
		dlfs_shm_seen_put(v.h, v.rw, 1000 + i);
	uint64_t got = 0, bad = 0;
	while (dlfs_share_seen_next(sh, &next, &ino)) {
		bad += ino != 1000 + (more - DLFS_SHM_SEEN) + got;
		got++;
	}
	CHECK_EQ(got, DLFS_SHM_SEEN);
	CHECK_EQ(bad, 0);
	CHECK_EQ(next, 10 + more);

	/* A number taken, its entry not written yet: the drain stops there
	 * (what follows waits its turn) until it is written. */
	struct dlfs_shm_seen_ring *r = ring(&v);
	uint64_t hole = __atomic_fetch_add(&r->head, 1, __ATOMIC_RELAXED);
	dlfs_shm_seen_put(v.h, v.rw, 77);
	dlfs_shm_seen_put(v.h, v.rw, 78);
	for (int i = 0; i < 3; i++)
		CHECK_EQ(dlfs_share_seen_next(sh, &next, &ino), 0);
	CHECK_EQ(next, hole);
	struct dlfs_shm_seen *e = &r->e[hole & (DLFS_SHM_SEEN - 1)];
	__atomic_store_n(&e->ino, 66, __ATOMIC_RELAXED);
	__atomic_store_n(&e->seq, hole + 1, __ATOMIC_RELEASE);
	const uint64_t order[] = {66, 77, 78};
	for (int i = 0; i < 3; i++) {
		CHECK_EQ(dlfs_share_seen_next(sh, &next, &ino), 1);
		CHECK_EQ(ino, order[i]);
	}
	CHECK_EQ(dlfs_share_seen_next(sh, &next, &ino), 0);

	/* A hole that a later lap overwrote is lost, not waited for. */
	hole = __atomic_fetch_add(&r->head, 1, __ATOMIC_RELAXED);
	for (uint64_t i = 0; i < DLFS_SHM_SEEN; i++)
		dlfs_shm_seen_put(v.h, v.rw, 5000 + i);
	got = 0;
	bad = 0;
	while (dlfs_share_seen_next(sh, &next, &ino)) {
		bad += ino != 5000 + got;
		got++;
	}
	CHECK_EQ(got, DLFS_SHM_SEEN);
	CHECK_EQ(bad, 0);
	CHECK_EQ(next, hole + 1 + DLFS_SHM_SEEN);
	view_close(&v);
	dlfs_share_free(sh);
}

/* What dlfs_outside hands on. */
struct seen_log {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	uint64_t n, bad;
	pthread_t main;
};

static void on_seen(void *arg, uint64_t ino)
{
	struct seen_log *s = arg;
	pthread_mutex_lock(&s->mu);
	s->bad += ino != 100 + s->n || pthread_equal(pthread_self(), s->main);
	s->n++;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
}

/* Wait (10 s at most) until n reports came. @return how many did. */
static uint64_t wait_seen(struct seen_log *s, uint64_t n)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 10;
	pthread_mutex_lock(&s->mu);
	while (s->n < n &&
	       pthread_cond_timedwait(&s->cv, &s->mu, &ts) != ETIMEDOUT)
		;
	uint64_t got = s->n;
	pthread_mutex_unlock(&s->mu);
	return got;
}

/* Follow sh's ring into s (aborts if the thread cannot start). */
static struct dlfs_outside *follow(struct dlfs_share *sh, struct seen_log *s)
{
	struct dlfs_outside *o = NULL;
	struct dlfs_err err = {0};
	CHECK_EQ(dlfs_outside_start(sh, on_seen, s, &o, &err), 0);
	if (!o)
		abort();
	return o;
}

static void test_outside(void)
{
	struct dlfs_share *sh = new_share(4, 100, 2);
	struct seen_log s = {.mu = PTHREAD_MUTEX_INITIALIZER,
			     .cv = PTHREAD_COND_INITIALIZER,
			     .main = pthread_self()};
	struct view v;
	view_open(sh, &v);
	struct dlfs_outside *o = follow(sh, &s);
	for (uint64_t i = 0; i < 100; i++)
		dlfs_shm_seen_put(v.h, v.rw, 100 + i);
	CHECK_EQ(wait_seen(&s, 100), 100);
	/* Reported just before stop: stop hands them on first. */
	for (uint64_t i = 100; i < 150; i++)
		dlfs_shm_seen_put(v.h, v.rw, 100 + i);
	dlfs_outside_stop(o);
	CHECK_EQ(s.n, 150);
	CHECK_EQ(s.bad, 0);
	dlfs_outside_stop(NULL);

	/* Started and stopped with nothing reported: fn never called. */
	struct seen_log none = {.mu = PTHREAD_MUTEX_INITIALIZER,
				.cv = PTHREAD_COND_INITIALIZER,
				.main = pthread_self()};
	struct dlfs_share *sh2 = new_share(4, 100, 2);
	dlfs_outside_stop(follow(sh2, &none));
	CHECK_EQ(none.n, 0);
	dlfs_share_free(sh2);
	view_close(&v);
	dlfs_share_free(sh);
}

/* A reader that died between taking a number and writing its report
 * holds the rest up only for a while: the thread skips the hole. */
static void test_outside_hole(void)
{
	struct dlfs_share *sh = new_share(4, 100, 2);
	struct seen_log s = {.mu = PTHREAD_MUTEX_INITIALIZER,
			     .cv = PTHREAD_COND_INITIALIZER,
			     .main = pthread_self()};
	struct view v;
	view_open(sh, &v);
	struct dlfs_shm_seen_ring *r =
		(struct dlfs_shm_seen_ring *)(v.rw + v.h->seen_off);
	__atomic_fetch_add(&r->head, 1, __ATOMIC_RELAXED); /* the hole */
	for (uint64_t i = 0; i < 3; i++)
		dlfs_shm_seen_put(v.h, v.rw, 100 + i);
	struct dlfs_outside *o = follow(sh, &s);
	CHECK_EQ(wait_seen(&s, 3), 3);
	dlfs_outside_stop(o);
	CHECK_EQ(s.bad, 0);
	view_close(&v);
	dlfs_share_free(sh);
}

/*
 * What a client holding meta's and data's descriptors could try to write
 * them with (issue 38): reopening /proc/self/fd/N read-write, then a
 * writable shared mapping, write(2), a read-only mapping made writable,
 * a hole punched, a new size. Each is refused, by the seals; the server's
 * own mapping stays writable, and what it writes is what clients read.
 */
static void attack(int fd, size_t size, const uint8_t *seen)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	int w = open(path, O_RDWR | O_CLOEXEC);
	int tries[] = {fd, w};
	for (int k = 0; k < 2; k++) {
		int f = tries[k];
		if (f < 0)
			continue;
		void *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED,
			       f, 0);
		CHECK(m == MAP_FAILED);
		if (m != MAP_FAILED) {
			((uint8_t *)m)[0] ^= 0xff; /* what an attacker would do */
			munmap(m, size);
		}
		uint8_t b = (uint8_t)~seen[1];
		CHECK(pwrite(f, &b, 1, 1) < 0);
		CHECK(ftruncate(f, (off_t)size / 2) < 0);
		CHECK(ftruncate(f, (off_t)size * 2) < 0);
		CHECK(fallocate(f, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				0, 4096) < 0);
		void *r = mmap(NULL, size, PROT_READ, MAP_SHARED, f, 0);
		CHECK(r != MAP_FAILED);
		if (r != MAP_FAILED) {
			CHECK(mprotect(r, size, PROT_READ | PROT_WRITE) < 0);
			munmap(r, size);
		}
		/* The seals cannot be taken off or changed. */
		CHECK(fcntl(f, F_ADD_SEALS, F_SEAL_WRITE) < 0);
	}
	CHECK((fcntl(fd, F_GET_SEALS) & F_SEAL_FUTURE_WRITE) != 0);
	if (w >= 0)
		close(w);
}

static void test_sealed(void)
{
	struct dlfs_share *sh = new_share(4, 100, 2);
	struct view v;
	view_open(sh, &v);
	int fds[3];
	CHECK(dlfs_share_sealed(sh));
	CHECK(dlfs_share_fds(sh, fds) == 0);
	dlfs_share_meta(sh)[4096] = 0x21;
	dlfs_share_data(sh)[0] = 0x42;
	dlfs_share_data(sh)[1] = 0x43;
	attack(fds[0], v.size[0], v.meta);
	attack(fds[1], v.size[1], v.data);
	CHECK_EQ(v.meta[4096], 0x21);
	CHECK_EQ(v.data[0], 0x42);
	CHECK_EQ(v.data[1], 0x43);
	/* The server writes on, and clients see it. */
	dlfs_share_data(sh)[1] = 0x44;
	dlfs_share_meta(sh)[4097] = 0x45;
	CHECK_EQ(v.data[1], 0x44);
	CHECK_EQ(v.meta[4097], 0x45);
	view_close(&v);
	dlfs_share_free(sh);
}

static const struct {
	const char *name;
	void (*fn)(void);
} tests[] = {
	{"layout", test_layout}, {"find", test_find},
	{"loading", test_loading}, {"evict", test_evict},
	{"failed", test_failed}, {"ref", test_ref},
	{"served", test_served}, {"stress", test_stress},
	{"order", test_order},
	{"loc", test_loc}, {"names", test_names},
	{"seen", test_seen}, {"outside", test_outside},
	{"outside_hole", test_outside_hole},
	{"sealed", test_sealed},
};

int main(int argc, char **argv)
{
	for (size_t i = 0; i < sizeof(tests) / sizeof(*tests); i++) {
		int run = argc < 2;
		for (int a = 1; a < argc; a++)
			run |= !strcmp(argv[a], tests[i].name);
		if (run)
			tests[i].fn();
	}
	return t_done("test_share");
}
