/* The tiers' shared memory: see share.h and src/node/shared/shm.h. */
#include "share.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

struct dlfs_share {
	int fd[3];       /* meta, data, rw */
	int ro[2];       /* meta and data again, read-only: for clients */
	uint8_t *map[3];
	uint64_t size[3];
	int sealed;      /* meta and data cannot be written by clients */
};

enum { META, DATA, RW };

/* The liveness mutex (shm.h) fits its 64 bytes, and glibc's begins with
 * its futex word, which readers look at. */
_Static_assert(sizeof(pthread_mutex_t) <= 64, "the liveness mutex's room");
_Static_assert(offsetof(pthread_mutex_t, __data.__lock) == 0,
	       "the futex word first");

/* Entries of the locations table at most (48 bytes each, touched only
 * where used): a dataset of up to 2M files has one each. */
#define LOC_MAX (UINT64_C(1) << 21)
/* Entries of the names table at most (128 bytes each, touched only where
 * used). */
#define NAME_MAX_ENTRIES (UINT64_C(1) << 21)
static const char *const names[] = {"dlfs-meta", "dlfs-data", "dlfs-rw"};

static uint64_t up(uint64_t v, uint64_t a)
{
	return (v + a - 1) / a * a;
}

/* Place the arrays: fill in h's offsets and sizes. */
static void lay_out(const struct dlfs_share_conf *c, struct dlfs_shm_head *h)
{
	uint64_t o = up(sizeof(*h), 64);
	h->table_off = o;
	o = up(o + (uint64_t)c->table_size * sizeof(uint32_t), 64);
	h->slots_off = o;
	o = up(o + (uint64_t)c->n_slots * sizeof(struct dlfs_shm_slot), 64);
	h->first_off = o;
	o = up(o + (uint64_t)c->n_containers * sizeof(uint64_t), 64);
	h->nv_st_off = o;
	o = up(o + c->n_chunks, 64);
	h->nv_seq_off = o;
	o += 64;
	h->alive_off = o;
	o += 64;
	h->loc_off = o;
	uint64_t locs = 1;
	while (locs < c->n_inodes && locs < LOC_MAX)
		locs *= 2;
	h->loc_mask = locs - 1;
	o = up(o + locs * sizeof(struct dlfs_shm_loc), 64);
	h->name_off = o;
	uint64_t sets = 1;
	while (sets * DLFS_SHM_NAME_WAYS < 2 * c->n_inodes &&
	       sets * DLFS_SHM_NAME_WAYS < NAME_MAX_ENTRIES)
		sets *= 2;
	h->name_sets = sets;
	h->meta_size = up(o + sets * DLFS_SHM_NAME_WAYS *
				      sizeof(struct dlfs_shm_name),
			  4096);

	o = 0;
	h->file_ok_off = o;
	o = up((c->n_inodes / 64 + 1) * sizeof(uint64_t), 64);
	h->use_off = o;
	o = up(o + (uint64_t)c->n_slots * sizeof(struct dlfs_shm_use), 64);
	h->count_off = o;
	o = up(o + sizeof(struct dlfs_shm_count), 64);
	h->seen_off = o;
	h->rw_size = up(o + sizeof(struct dlfs_shm_seen_ring), 4096);

	h->data_size = (uint64_t)c->n_slots * c->slot_size;
}

/*
 * The slot buffers in 2 MiB huge pages when the node has them free
 * (vm.nr_hugepages): a client then maps a slot with one fault per 2 MiB
 * instead of one per 64 KiB, and an O_DIRECT chunk read is not cut into
 * 512 KiB requests. @return 1 when done, 0 when the node has none (the
 * caller uses ordinary pages).
 */
static int make_huge(struct dlfs_share *sh, uint64_t size)
{
	const uint64_t huge = UINT64_C(2) << 20;
	if (size % huge)
		return 0;
	/* The default huge page size: 2 MiB on x86-64 (another one makes
	 * the sizes below fail, and ordinary pages are used). */
	int fd = memfd_create(names[DATA],
			      MFD_CLOEXEC | MFD_HUGETLB | MFD_ALLOW_SEALING);
	if (fd < 0)
		return 0;
	void *p = MAP_FAILED;
	/* The mapping reserves the pages: it fails when too few are free. */
	if (!ftruncate(fd, (off_t)size))
		p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		close(fd);
		return 0;
	}
	sh->fd[DATA] = fd;
	sh->map[DATA] = p;
	sh->size[DATA] = size;
	return 1;
}

static int make(struct dlfs_share *sh, int i, uint64_t size,
		struct dlfs_err *err)
{
	if (i == DATA && make_huge(sh, size))
		return 0;
	sh->fd[i] = memfd_create(names[i], MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (sh->fd[i] < 0)
		return dlfs_err_set(err, -errno, "memfd_create (%s): %s",
				    names[i], strerror(errno));
	if (ftruncate(sh->fd[i], (off_t)size))
		return dlfs_err_set(err, -errno,
				    "sizing shared memory %s to %llu bytes: %s",
				    names[i], (unsigned long long)size,
				    strerror(errno));
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED,
		       sh->fd[i], 0);
	if (p == MAP_FAILED)
		return dlfs_err_set(err, -errno,
				    "mapping shared memory %s (%llu bytes): %s",
				    names[i], (unsigned long long)size,
				    strerror(errno));
	sh->map[i] = p;
	sh->size[i] = size;
	return 0;
}

/*
 * Seal fd, which the server has mapped writable, so that nobody maps or
 * writes it from now on: F_SEAL_FUTURE_WRITE keeps the server's mapping
 * writable and refuses every later write(2), writable shared mapping and
 * hole punch, through any descriptor of the file (a client's reopened
 * /proc/self/fd/N too). A client that wrote there would give the other
 * processes of the job wrong bytes. Its size is sealed too (a client that
 * shrank it would make the others fault), and then the seals themselves.
 * @return 0 or -errno (-EINVAL: a kernel before Linux 5.1).
 */
static int seal(int fd)
{
	return fcntl(fd, F_ADD_SEALS,
		     F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_FUTURE_WRITE |
			     F_SEAL_SEAL) < 0
		       ? -errno
		       : 0;
}

static pthread_mutex_t *alive_mutex(struct dlfs_share *sh)
{
	return (pthread_mutex_t *)(sh->map[META] +
				   dlfs_share_head(sh)->alive_off);
}

/* The liveness mutex: robust, so that the kernel marks it when its
 * holder dies; shared, for the readers' sake (they only read its word).
 * @return 0 or -errno. */
static int alive_init(struct dlfs_share *sh)
{
	pthread_mutexattr_t a;
	int ret = pthread_mutexattr_init(&a);
	if (ret)
		return -ret;
	ret = pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
	if (!ret)
		ret = pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	if (!ret)
		ret = pthread_mutex_init(alive_mutex(sh), &a);
	pthread_mutexattr_destroy(&a);
	return -ret;
}

int dlfs_share_alive(struct dlfs_share *sh, int on)
{
	pthread_mutex_t *m = alive_mutex(sh);
	return -(on ? pthread_mutex_lock(m) : pthread_mutex_unlock(m));
}

int dlfs_share_new(const struct dlfs_share_conf *c, struct dlfs_share **out,
		   struct dlfs_err *err)
{
	struct dlfs_shm_head h = {
		.magic = DLFS_SHM_MAGIC,
		.version = DLFS_SHM_VERSION,
		.n_slots = c->n_slots,
		.slot_size = c->slot_size,
		.chunk_size = c->chunk_size,
		.data_off = c->data_off,
		.n_chunks = c->n_chunks,
		.n_inodes = c->n_inodes,
		.table_mask = c->table_size - 1,
		.n_containers = c->n_containers,
	};
	*out = NULL;
	if (!c->table_size || (c->table_size & (c->table_size - 1)))
		return dlfs_err_set(err, -EINVAL, "shared table of %u entries",
				    c->table_size);
	lay_out(c, &h);
	struct dlfs_share *sh = calloc(1, sizeof(*sh));
	if (!sh)
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	for (int i = 0; i < 3; i++)
		sh->fd[i] = -1;
	sh->ro[0] = sh->ro[1] = -1;
	uint64_t sizes[3] = {h.meta_size, h.data_size, h.rw_size};
	for (int i = 0; i < 3; i++) {
		int ret = make(sh, i, sizes[i], err);
		if (ret) {
			dlfs_share_free(sh);
			return ret;
		}
	}
	/* Clients get meta and data read-only, and sealed: reopening a
	 * descriptor through /proc read-write gives no way to write them. */
	sh->sealed = seal(sh->fd[META]) == 0 && seal(sh->fd[DATA]) == 0;
	for (int i = 0; i < 2; i++) {
		char path[64];
		snprintf(path, sizeof(path), "/proc/self/fd/%d", sh->fd[i]);
		sh->ro[i] = open(path, O_RDONLY | O_CLOEXEC);
		if (sh->ro[i] < 0) {
			int ret = dlfs_err_set(err, -errno,
					       "reopening %s read-only (%s): %s",
					       names[i], path, strerror(errno));
			dlfs_share_free(sh);
			return ret;
		}
	}
	memcpy(sh->map[META], &h, sizeof(h));
	int ret = alive_init(sh);
	if (ret) {
		dlfs_share_free(sh);
		return dlfs_err_set(err, ret, "the shared liveness mutex: %s",
				    strerror(-ret));
	}
	if (c->n_containers)
		memcpy(sh->map[META] + h.first_off, c->first,
		       c->n_containers * sizeof(uint64_t));
	*out = sh;
	return 0;
}

void dlfs_share_free(struct dlfs_share *sh)
{
	if (!sh)
		return;
	for (int i = 0; i < 3; i++) {
		if (sh->map[i])
			munmap(sh->map[i], sh->size[i]);
		if (sh->fd[i] >= 0)
			close(sh->fd[i]);
	}
	for (int i = 0; i < 2; i++)
		if (sh->ro[i] >= 0)
			close(sh->ro[i]);
	free(sh);
}

struct dlfs_shm_head *dlfs_share_head(struct dlfs_share *sh)
{
	return (struct dlfs_shm_head *)sh->map[META];
}

uint8_t *dlfs_share_meta(struct dlfs_share *sh)
{
	return sh->map[META];
}

uint8_t *dlfs_share_data(struct dlfs_share *sh)
{
	return sh->map[DATA];
}

uint8_t *dlfs_share_rw(struct dlfs_share *sh)
{
	return sh->map[RW];
}

int dlfs_share_sealed(const struct dlfs_share *sh)
{
	return sh->sealed;
}

int dlfs_share_fds(const struct dlfs_share *sh, int fds[3])
{
	if (!sh->sealed)
		return -EPERM;
	fds[0] = sh->ro[0];
	fds[1] = sh->ro[1];
	fds[2] = sh->fd[2];
	return 0;
}

void dlfs_share_put_loc(struct dlfs_share *sh, uint64_t ino,
			uint32_t container, uint64_t offset, uint64_t size,
			uint64_t xxh3)
{
	dlfs_shm_loc_put(dlfs_share_head(sh), sh->map[META], ino, container,
			 offset, size, xxh3);
}

void dlfs_share_put_name(struct dlfs_share *sh, uint64_t parent,
			 const char *name, size_t len, uint64_t ino,
			 const struct stat *st)
{
	struct dlfs_shm_attr a;
	dlfs_shm_attr_pack(st, &a);
	dlfs_shm_name_put(dlfs_share_head(sh), sh->map[META], parent, name,
			  len, ino, &a);
}

int dlfs_share_seen_next(struct dlfs_share *sh, uint64_t *next,
			 uint64_t *ino)
{
	struct dlfs_shm_seen_ring *r =
		(struct dlfs_shm_seen_ring *)(sh->map[RW] +
					      dlfs_share_head(sh)->seen_off);
	uint64_t head = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);
	if (head - *next > DLFS_SHM_SEEN)
		*next = head - DLFS_SHM_SEEN; /* overwritten: skip them */
	while (*next < head) {
		struct dlfs_shm_seen *e = &r->e[*next & (DLFS_SHM_SEEN - 1)];
		uint64_t q = __atomic_load_n(&e->seq, __ATOMIC_ACQUIRE);
		if (q < *next + 1)
			return 0; /* taken, not written yet: next time */
		*ino = __atomic_load_n(&e->ino, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		uint64_t q2 = __atomic_load_n(&e->seq, __ATOMIC_RELAXED);
		(*next)++;
		if (q == *next && q2 == q)
			return 1;
		/* Overwritten by a later lap: that one is not lost, the
		 * loop reaches it in turn; this one is. */
	}
	return 0;
}

int dlfs_share_seen_skip(struct dlfs_share *sh, uint64_t *next)
{
	struct dlfs_shm_seen_ring *r =
		(struct dlfs_shm_seen_ring *)(sh->map[RW] +
					      dlfs_share_head(sh)->seen_off);
	if (__atomic_load_n(&r->head, __ATOMIC_ACQUIRE) <= *next)
		return 0;
	(*next)++;
	return 1;
}

void dlfs_share_set_nvme(struct dlfs_share *sh, int on)
{
	__atomic_store_n(&dlfs_share_head(sh)->nvme, (uint32_t)!!on,
			 __ATOMIC_RELEASE);
}
