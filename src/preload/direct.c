/*
 * direct: reads from the server's tiers in shared memory (see direct.h
 * and src/node/shared/shm.h, whose rules this follows).
 *
 * Process state: the mappings (made once, under map_lock, by a process
 * in its own memory; a vfork child never maps) and the NVMe cache fds,
 * one per container, published with atomics. Per thread: a bounce buffer
 * for O_DIRECT reads, and a flag that says a direct read is running (a
 * signal handler that interrupts it goes to the server).
 */
#include "direct.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "conn.h"
#include "state.h"
#include "shm.h"

enum { UNTRIED, READY, OFF };

/* A container's NVMe cache file, as the server passed it. */
struct nvfd {
	atomic_int fd;  /* -1: not asked yet (or asked, and none yet) */
	dev_t dev;
	ino_t ino;
	int odirect;
};

static struct {
	atomic_int state;
	int disabled; /* DLFS_PRELOAD_DIRECT=0 */
	pthread_mutex_t lock; /* making the mappings */
	const struct dlfs_shm_head *h;
	const uint8_t *meta, *data;
	uint8_t *rw;
	uint64_t sizes[3];
	struct nvfd *nv; /* n_containers entries, in an anonymous mapping */
} m = {.lock = PTHREAD_MUTEX_INITIALIZER};

static __thread struct {
	uint8_t *buf;
	size_t cap;
	volatile int busy;
} t __attribute__((tls_model("initial-exec")));

void dlfs_direct_init(void)
{
	const char *v = getenv("DLFS_PRELOAD_DIRECT");
	m.disabled = v && !strcmp(v, "0");
}

void dlfs_direct_fork_child(void)
{
	pthread_mutex_init(&m.lock, NULL);
	t.busy = 0;
}

static void *sys_map(void *addr, size_t len, int prot, int flags, int fd)
{
	long r = syscall(SYS_mmap, addr, len, prot, flags, fd, 0L);
	return r < 0 && r > -4096 ? MAP_FAILED : (void *)r;
}

static void sys_close(int fd)
{
	syscall(SYS_close, fd);
}

static int sys_fstat(int fd, struct stat *st)
{
	return (int)syscall(SYS_fstat, fd, st);
}

/* Is the head one we read, and are its arrays inside the files? */
static int head_ok(const struct dlfs_shm_head *h, const uint64_t *sz)
{
	if (h->magic != DLFS_SHM_MAGIC || h->version != DLFS_SHM_VERSION ||
	    h->meta_size != sz[0] || h->data_size != sz[1] ||
	    h->rw_size != sz[2] || !h->n_slots || !h->slot_size)
		return 0;
	uint64_t t = (uint64_t)h->table_mask + 1;
	if (t & (t - 1) || (h->loc_mask + 1) & h->loc_mask ||
	    (h->name_sets & (h->name_sets - 1)))
		return 0;
	return h->table_off + t * 4 <= sz[0] &&
	       h->slots_off + (uint64_t)h->n_slots *
				      sizeof(struct dlfs_shm_slot) <= sz[0] &&
	       h->first_off + (uint64_t)h->n_containers * 8 <= sz[0] &&
	       h->nv_st_off + h->n_chunks <= sz[0] &&
	       h->nv_seq_off + 8 <= sz[0] &&
	       h->alive_off % 4 == 0 && h->alive_off + 4 <= sz[0] &&
	       h->loc_off + (h->loc_mask + 1) *
				     sizeof(struct dlfs_shm_loc) <= sz[0] &&
	       h->name_off + h->name_sets * DLFS_SHM_NAME_WAYS *
				      sizeof(struct dlfs_shm_name) <= sz[0] &&
	       h->seen_off + sizeof(struct dlfs_shm_seen_ring) <= sz[2] &&
	       (uint64_t)h->n_slots * h->slot_size <= sz[1] &&
	       h->file_ok_off + (h->n_inodes / 64 + 1) * 8 <= sz[2] &&
	       h->use_off + (uint64_t)h->n_slots *
				    sizeof(struct dlfs_shm_use) <= sz[2] &&
	       h->count_off + sizeof(struct dlfs_shm_count) <= sz[2];
}

/* Map the three files (MAP). @return READY or OFF. */
static int map_all(void)
{
	struct dlfs_wire_req req = {.op = DLFS_WIRE_MAP};
	struct dlfs_wire_map wm;
	struct dlfs_conn_fds fds;
	uint64_t got = 0;
	void *p[3] = {MAP_FAILED, MAP_FAILED, MAP_FAILED};
	int ret = dlfs_conn_call_fds(&req, &wm, sizeof(wm), &got, &fds);
	if (ret || got != sizeof(wm) || fds.n != 3) {
		for (int i = 0; i < fds.n; i++)
			sys_close(fds.fd[i]);
		return OFF;
	}
	static const int prot[3] = {PROT_READ, PROT_READ,
				    PROT_READ | PROT_WRITE};
	int ok = 1;
	for (int i = 0; i < 3; i++) {
		struct stat st;
		if (sys_fstat(fds.fd[i], &st) || (uint64_t)st.st_size != wm.size[i] ||
		    !wm.size[i])
			ok = 0;
		if (ok)
			p[i] = sys_map(NULL, wm.size[i], prot[i], MAP_SHARED,
				       fds.fd[i]);
		ok = ok && p[i] != MAP_FAILED;
		sys_close(fds.fd[i]);
	}
	const struct dlfs_shm_head *h = p[0];
	size_t nv_bytes = 0;
	if (ok && head_ok(h, wm.size)) {
		nv_bytes = ((size_t)h->n_containers + 1) * sizeof(struct nvfd);
		m.nv = sys_map(NULL, nv_bytes, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1);
		ok = m.nv != MAP_FAILED;
	} else {
		ok = 0;
	}
	if (!ok) {
		for (int i = 0; i < 3; i++)
			if (p[i] != MAP_FAILED)
				syscall(SYS_munmap, p[i], wm.size[i]);
		m.nv = NULL;
		return OFF;
	}
	for (uint32_t c = 0; c < h->n_containers; c++)
		atomic_init(&m.nv[c].fd, -1);
	m.h = h;
	m.meta = p[0];
	m.data = p[1];
	m.rw = p[2];
	memcpy(m.sizes, wm.size, sizeof(m.sizes));
	return READY;
}

/* Are the mappings there? Made on the first call of a process that
 * runs in its own memory, when the server offers them. */
static int ready(void)
{
	int s = atomic_load_explicit(&m.state, memory_order_acquire);
	if (s != UNTRIED)
		return s == READY;
	if (m.disabled || !atomic_load(&dlfs_pl.ready) || !dlfs_pl.shm ||
	    (int)syscall(SYS_getpid) != atomic_load(&dlfs_pl.pid))
		return 0;
	pthread_mutex_lock(&m.lock);
	s = atomic_load(&m.state);
	if (s == UNTRIED) {
		s = map_all();
		atomic_store_explicit(&m.state, s, memory_order_release);
	}
	pthread_mutex_unlock(&m.lock);
	return s == READY;
}

static void count(int tier, uint64_t bytes, int checked)
{
	struct dlfs_shm_count *n =
		(struct dlfs_shm_count *)(m.rw + m.h->count_off);
	__atomic_fetch_add(&n->reads, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&n->bytes, bytes, __ATOMIC_RELAXED);
	__atomic_fetch_add(tier ? &n->nvme : &n->ram, 1, __ATOMIC_RELAXED);
	if (!tier)
		__atomic_fetch_add(&n->ram_bytes, bytes, __ATOMIC_RELAXED);
	if (checked)
		__atomic_fetch_add(&n->checked, 1, __ATOMIC_RELAXED);
}

static uint64_t *file_ok(void)
{
	return (uint64_t *)(m.rw + m.h->file_ok_off);
}

static int known(uint64_t ino)
{
	return ino < m.h->n_inodes &&
	       (__atomic_load_n(&file_ok()[ino / 64], __ATOMIC_RELAXED) >>
		(ino % 64)) & 1;
}

/* The whole file is in buf: is it what its record says? Marks it known
 * when it is. */
static int check(const struct dlfs_shm_loc *l, const void *buf)
{
	if (XXH3_64bits(buf, (size_t)l->size) != l->xxh3)
		return 0;
	if (l->ino < m.h->n_inodes)
		__atomic_fetch_or(&file_ok()[l->ino / 64],
				  UINT64_C(1) << (l->ino % 64),
				  __ATOMIC_RELAXED);
	return 1;
}

/* ---- the RAM tier ---- */

/* Copy [off, off + n) of file l from its RAM slots (one chunk entry each,
 * or the file's own entry). @return 1 when every byte came from a slot
 * that held it throughout, else 0. */
static int from_ram(const struct dlfs_shm_loc *l, uint64_t off, size_t n,
		    uint8_t *buf)
{
	const uint64_t cs = m.h->chunk_size;
	struct dlfs_shm_use *use =
		(struct dlfs_shm_use *)(m.rw + m.h->use_off);
	uint64_t seq, soff, slen;
	/* The file's own entry (read alone from the PFS). */
	int s = dlfs_shm_find(m.h, m.meta, (UINT64_C(1) << 63) | l->ino, &seq,
			      &soff, &slen);
	if (s >= 0) {
		if (slen < l->size)
			return 0;
		memcpy(buf, m.data + (uint64_t)s * m.h->slot_size + soff + off,
		       n);
		if (!dlfs_shm_slot_same(m.h, m.meta, s, seq))
			return 0;
		goto used;
	}
	const uint64_t d0 = m.h->data_off;
	uint64_t pos = l->offset + off, end = pos + n;
	if (pos < d0)
		return 0;
	while (pos < end) {
		uint64_t k = (pos - d0) / cs, start = d0 + k * cs;
		uint64_t key = ((uint64_t)l->container << 40) | k;
		s = dlfs_shm_find(m.h, m.meta, key, &seq, &soff, &slen);
		if (s < 0 || pos - start >= slen)
			return 0;
		uint64_t take = start + slen - pos;
		if (take > end - pos)
			take = end - pos;
		memcpy(buf + (pos - l->offset - off),
		       m.data + (uint64_t)s * m.h->slot_size + soff +
			       (pos - start),
		       (size_t)take);
		if (!dlfs_shm_slot_same(m.h, m.meta, s, seq))
			return 0;
		if (!__atomic_load_n(&use[s].ref, __ATOMIC_RELAXED))
			__atomic_store_n(&use[s].ref, 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&use[s].served, take, __ATOMIC_RELAXED);
		pos += take;
	}
	return 1;
used:
	if (!__atomic_load_n(&use[s].ref, __ATOMIC_RELAXED))
		__atomic_store_n(&use[s].ref, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&use[s].served, n, __ATOMIC_RELAXED);
	return 1;
}

/* ---- the NVMe tier ---- */

/* Container c's cache file: asked for once, then kept while fstat says
 * it is still the one the server passed. @return an fd or -1. */
static int nv_fd(uint32_t c, int *odirect)
{
	struct nvfd *e = &m.nv[c];
	int fd = atomic_load_explicit(&e->fd, memory_order_acquire);
	struct stat st;
	if (fd >= 0) {
		if (!sys_fstat(fd, &st) && st.st_dev == e->dev &&
		    st.st_ino == e->ino) {
			*odirect = e->odirect;
			return fd;
		}
		/* Closed behind our back (and perhaps reused): not ours to
		 * close. Ask again. */
		atomic_compare_exchange_strong(&e->fd, &fd, -1);
	}
	/* A vfork child has its own fd table in its parent's memory: what it
	 * got would be published for the parent. */
	if ((int)syscall(SYS_getpid) != atomic_load(&dlfs_pl.pid))
		return -1;
	struct dlfs_wire_req req = {.op = DLFS_WIRE_NVFD, .ino = c};
	struct dlfs_conn_fds fds;
	uint64_t got = 0;
	int ret = dlfs_conn_call_fds(&req, NULL, 0, &got, &fds);
	if (ret || fds.n != 1) {
		for (int i = 0; i < fds.n; i++)
			sys_close(fds.fd[i]);
		return -1;
	}
	int nfd = fds.fd[0];
	long fl = syscall(SYS_fcntl, nfd, F_GETFL);
	if (sys_fstat(nfd, &st) || fl < 0) {
		sys_close(nfd);
		return -1;
	}
	int expect = -1;
	/* Publish dev and ino before the fd (another thread checks them). */
	e->dev = st.st_dev;
	e->ino = st.st_ino;
	e->odirect = (fl & O_DIRECT) != 0;
	if (!atomic_compare_exchange_strong_explicit(&e->fd, &expect, nfd,
						     memory_order_release,
						     memory_order_relaxed)) {
		sys_close(nfd); /* another thread won */
		return nv_fd(c, odirect);
	}
	*odirect = e->odirect;
	return nfd;
}

/* The thread's bounce buffer for O_DIRECT reads, at least n bytes. */
static uint8_t *bounce(size_t n)
{
	if (t.cap >= n)
		return t.buf;
	size_t cap = (n + (1u << 20) - 1) & ~(size_t)((1u << 20) - 1);
	void *p = sys_map(NULL, cap, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1);
	if (p == MAP_FAILED)
		return NULL;
	if (t.buf)
		syscall(SYS_munmap, t.buf, t.cap);
	t.buf = p;
	t.cap = cap;
	return t.buf;
}

/* Read [off, off + n) of file l from the NVMe tier. @return 1 with
 * *stable (no chunk left the tier meanwhile, and the server still serves:
 * no later server has touched the cache files), or 0 (not there). */
static int from_nvme(const struct dlfs_shm_loc *l, uint64_t off, size_t n,
		     uint8_t *buf, int *stable)
{
	const uint64_t cs = m.h->chunk_size;
	const uint8_t *st = m.meta + m.h->nv_st_off;
	const uint64_t *seqp = (const uint64_t *)(m.meta + m.h->nv_seq_off);
	const uint64_t *first = (const uint64_t *)(m.meta + m.h->first_off);
	if (!__atomic_load_n(&m.h->nvme, __ATOMIC_ACQUIRE))
		return 0;
	const uint64_t d0 = m.h->data_off;
	uint64_t pos = l->offset + off, end = pos + n;
	if (pos < d0)
		return 0;
	uint64_t seq = dlfs_shm_load(seqp);
	for (uint64_t k = (pos - d0) / cs; k <= (end - 1 - d0) / cs; k++) {
		uint64_t g = first[l->container] + k;
		if (g >= m.h->n_chunks ||
		    !(__atomic_load_n(&st[g], __ATOMIC_ACQUIRE) &
		      DLFS_SHM_NV_PRESENT))
			return 0;
	}
	int odirect;
	int fd = nv_fd(l->container, &odirect);
	if (fd < 0)
		return 0;
	if (!odirect) {
		long r = syscall(SYS_pread64, fd, buf, n, (long)pos);
		if (r != (long)n)
			return 0;
	} else {
		uint64_t a0 = pos & ~UINT64_C(4095);
		size_t want = (size_t)(((end + 4095) & ~UINT64_C(4095)) - a0);
		uint8_t *b = bounce(want);
		if (!b)
			return 0;
		long r = syscall(SYS_pread64, fd, b, want, (long)a0);
		if (r < 0 || (uint64_t)r < end - a0)
			return 0;
		memcpy(buf, b + (pos - a0), n);
	}
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	*stable = dlfs_shm_load(seqp) == seq && dlfs_shm_alive(m.h, m.meta);
	return 1;
}

/* ---- a read ---- */

/* Served n bytes of l at off from a tier: counted, and a read from the
 * file's start reported for the server's views and fills. */
static ssize_t served(const struct dlfs_shm_loc *l, uint64_t off, size_t n,
		      int tier, int checked)
{
	count(tier, n, checked);
	if (off == 0)
		dlfs_shm_seen_put(m.h, m.rw, l->ino);
	return (ssize_t)n;
}

static ssize_t serve(uint64_t ino, void *buf, size_t size, uint64_t off)
{
	struct dlfs_shm_loc l;
	if (dlfs_shm_loc_get(m.h, m.meta, ino, &l))
		return -1;
	if (off >= l.size || !size)
		return 0;
	size_t n = l.size - off < size ? (size_t)(l.size - off) : size;
	int good = known(ino);
	int whole = off == 0 && n == l.size;
	if (!good && !whole)
		return -1; /* its first check is the server's */

	if (from_ram(&l, off, n, buf)) {
		if (!good && !check(&l, buf))
			return -1;
		return served(&l, off, n, 0, !good);
	}
	int stable;
	if (!from_nvme(&l, off, n, buf, &stable))
		return -1;
	if (!(good && stable)) {
		/* As the core: unknown, or a chunk moved meanwhile. */
		if (!whole || !check(&l, buf))
			return -1;
		good = 0;
	}
	return served(&l, off, n, 1, !good);
}

int dlfs_direct_lookup(uint64_t parent, const char *name, size_t len,
		       uint64_t *ino, struct stat *st)
{
	struct dlfs_shm_name e;
	if (!ready() || dlfs_shm_name_get(m.h, m.meta, parent, name, len, &e))
		return -1;
	/* The rest are the usual attributes (shm.h), from the root's. */
	struct dlfs_shm_attr a;
	dlfs_shm_name_attr(&e, &a);
	dlfs_shm_attr_unpack(&a, e.ino, &dlfs_pl.root_st, st);
	*ino = e.ino;
	return 0;
}

ssize_t dlfs_direct_read(uint64_t ino, void *buf, size_t size, uint64_t off)
{
	if (!ready() || t.busy)
		return -1;
	t.busy = 1;
	ssize_t r = serve(ino, buf, size, off);
	t.busy = 0;
	return r;
}
