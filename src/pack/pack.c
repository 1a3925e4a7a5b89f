/*
 * dlfs_pack: scan, lay out, stream the data through a window of chunk
 * buffers, write the index, publish atomically; a list of steps (steps[],
 * at the end), the ranks of an MPI pack agreeing after each in one place.
 *
 * The data pipeline: reader threads take files in layout order and read
 * each piece of a file straight into the buffer of the chunk it belongs
 * to. The calling thread writes chunks in order, each in one large
 * sequential write, once every piece in it has landed. A reader waits
 * only when its chunk is beyond the window; the window's first chunk
 * always belongs to files already taken, so it always completes.
 *
 * With --compress, compressor threads (as many as --threads, at most one
 * per CPU and one per chunk of the window) take the landed chunks in
 * chunk order and turn each into its stored form in its own buffer
 * (chunkz.h); the writer takes them in chunk order as before, and only
 * it decides where each goes (stored chunks lie back to back), so the
 * output does not depend on which thread compressed what. A compressor
 * never waits for anything but a chunk to land, so the window's first
 * chunk is always compressed too. Memory stays the window plus one
 * context and one chunk of scratch per compressor.
 *
 * Lock order: only pipe.mu exists.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>
#include <sched.h>
#include <xxhash.h>

#include "dlfs/dataset.h"
#include "chunkz.h"
#include "dist.h"
#include "ingest.h"
#include "index_write.h"
#include "scan.h"
#include "outlock.h"
#include "util.h"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

struct pipe;

/* A compressor thread's own: its pipe, its zstd context and scratch. */
struct zworker {
	struct pipe *p;
	struct pk_zctx z;
};

struct pipe {
	const struct pk_layout *l;
	const struct dlfs_pack_opts *o;
	const struct pk_source *src;
	struct pk_tree *t;
	const char *dir; /* the temporary output directory */
	uint64_t cs, w;  /* chunk size, window in chunks */
	uint64_t g0, g1; /* the chunks this process writes */
	uint64_t f0, f1; /* their files (indices into by_ino) */
	uint8_t *bufs;   /* w * cs bytes */
	_Atomic uint32_t *pieces; /* per chunk: pieces still to land */
	uint32_t *chunk_container;
	_Atomic uint64_t base;    /* first chunk not yet written */
	_Atomic uint64_t next;    /* next file (index into by_ino) */
	_Atomic uint64_t bytes_done, files_done;
	_Atomic int stop;
	pthread_mutex_t mu;
	pthread_cond_t cv_window, cv_chunk;
	struct dlfs_err err; /* the first failure, under mu */
	struct pk_chunks sums;
	/* --compress: nz compressors; the next chunk for them to take
	 * (under mu); per chunk, 1 once it is in stored form (its record in
	 * sums but stored_offset, which the writer gives); per container,
	 * where its stored chunks end (0: none yet). */
	struct zworker *zw;
	unsigned nz;
	uint64_t znext;
	_Atomic uint8_t *zdone;
	uint64_t *stored_end;
};

static void pipe_fail(struct pipe *p, const struct dlfs_err *e)
{
	pthread_mutex_lock(&p->mu);
	if (!p->err.code)
		p->err = *e;
	atomic_store(&p->stop, 1);
	pthread_cond_broadcast(&p->cv_window);
	pthread_cond_broadcast(&p->cv_chunk);
	pthread_mutex_unlock(&p->mu);
}

static uint8_t *chunk_buf(struct pipe *p, uint64_t g)
{
	return p->bufs + (g % p->w) * p->cs;
}

/* A reader thread's buffers: a file's path, and its source's + path. */
struct rbufs {
	char *rel, *full;
	size_t relcap, fullcap;
};

/* Where a file's bytes are read from. */
struct src_fd {
	int fd, own;       /* own: opened for this file, closed after it */
	uint64_t off;      /* where the bytes start in fd */
	const char *where; /* the name errors give */
};

/* rb->full: the path of entry d under the directory source s. */
static int full_path(const struct pk_tree *t, const struct pk_source *s,
		     const struct pk_entry *d, struct rbufs *rb,
		     struct dlfs_err *err)
{
	size_t rl = strlen(s->path), pl;
	if (pk_entry_path(t, d, &rb->rel, &rb->relcap, &pl))
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	size_t need = rl + pl + 2;
	if (need > rb->fullcap) {
		char *b = realloc(rb->full, need * 2);
		if (!b)
			return dlfs_err_set(err, -ENOMEM, "out of memory");
		rb->full = b;
		rb->fullcap = need * 2;
	}
	snprintf(rb->full, rb->fullcap, "%s/%s", s->path, rb->rel);
	return 0;
}

/* Entry d's bytes (attributes a): its file under a directory source,
 * opened here, or the spool or data file that holds them. */
static int open_bytes(struct pipe *p, const struct pk_entry *d,
		      const struct pk_attr *a, struct rbufs *rb,
		      struct src_fd *f, struct dlfs_err *err)
{
	const struct pk_source *s = &p->src[d->src];
	*f = (struct src_fd){.fd = -1};
	if (s->kind != PK_SRC_DIR) {
		/* Archive members are in the spool; ingested files in theirs. */
		f->where = s->path;
		f->fd = a->data ? p->t->data[a->data - 1].fd : p->t->spool_fd;
		f->off = a->spool_off;
		return 0;
	}
	int ret = full_path(p->t, s, d, rb, err);
	if (ret)
		return ret;
	f->where = rb->full;
	f->fd = dlfs_open_long(f->where, O_RDONLY | O_CLOEXEC | O_NOFOLLOW,
			       0);
	if (f->fd < 0)
		return dlfs_err_sys(err, f->fd, "%s", f->where);
	f->own = 1;
	return 0;
}

/* Wait until chunk g is in the window. @return 0 if the pipe stopped. */
static int wait_window(struct pipe *p, uint64_t g)
{
	if (atomic_load(&p->base) + p->w <= g) {
		pthread_mutex_lock(&p->mu);
		while (atomic_load(&p->base) + p->w <= g &&
		       !atomic_load(&p->stop))
			pthread_cond_wait(&p->cv_window, &p->mu);
		pthread_mutex_unlock(&p->mu);
	}
	return !atomic_load(&p->stop);
}

/* Bytes [fo, fo + len) of a file of size bytes into dst, in chunk g's
 * buffer, once g is in the window. */
static int read_piece(struct pipe *p, uint64_t g, const struct src_fd *f,
		      uint64_t fo, uint8_t *dst, size_t len, uint64_t size,
		      struct dlfs_err *err)
{
	if (!wait_window(p, g))
		return -ECANCELED;
	ssize_t n = dlfs_pread_full(f->fd, dst, len, f->off + fo);
	if (n < 0)
		return dlfs_err_sys(err, (int)n, "%s: read at offset %llu",
				    f->where, (unsigned long long)fo);
	if ((size_t)n < len)
		return dlfs_err_set(err, -EIO,
				    "%s: file shrank while packing "
				    "(%llu bytes, expected %llu)",
				    f->where,
				    (unsigned long long)(fo + (uint64_t)n),
				    (unsigned long long)size);
	return 0;
}

/* A piece of chunk g (len bytes) has landed; the writer hears of the
 * chunk's last. */
static void piece_landed(struct pipe *p, uint64_t g, size_t len)
{
	atomic_fetch_add(&p->bytes_done, len);
	if (atomic_fetch_sub(&p->pieces[g], 1) == 1) {
		pthread_mutex_lock(&p->mu);
		pthread_cond_broadcast(&p->cv_chunk);
		pthread_mutex_unlock(&p->mu);
	}
}

/* File e's bytes from f into its chunks' buffers, piece by piece, hashed
 * on the way: in one call if it fits in one chunk, else through hs. */
static int copy_file(struct pipe *p, const struct pk_entry *e,
		     const struct src_fd *f, XXH3_state_t *hs,
		     struct dlfs_err *err)
{
	uint64_t k = (uint64_t)(e - p->t->e), *xxh3 = &p->l->xxh3[k];
	uint64_t cs = p->cs, loc = p->l->loc[k];
	/* in the data region */
	uint64_t data = pk_loc_offset(loc) - DLFS_DATA_OFFSET(cs);
	uint64_t g0 = p->l->first_chunk[pk_loc_container(loc)];
	int single = data / cs == (data + e->size - 1) / cs, ret = 0;
	if (!single)
		XXH3_64bits_reset(hs);
	for (uint64_t fo = 0; fo < e->size;) {
		uint64_t at = data + fo;
		uint64_t g = g0 + at / cs, in = at % cs;
		size_t len = (size_t)(cs - in < e->size - fo ? cs - in
							     : e->size - fo);
		uint8_t *dst = chunk_buf(p, g) + in;
		ret = read_piece(p, g, f, fo, dst, len, e->size, err);
		if (ret)
			break;
		if (single)
			*xxh3 = XXH3_64bits(dst, len);
		else
			XXH3_64bits_update(hs, dst, len);
		fo += len;
		piece_landed(p, g, len);
	}
	if (!ret && !single)
		*xxh3 = XXH3_64bits_digest(hs);
	return ret;
}

/* Read file i (attributes a) into its chunk buffers; hash it on the way. */
static int read_file(struct pipe *p, uint64_t i, struct pk_attr a,
		     struct rbufs *rb, XXH3_state_t *hs, struct dlfs_err *err)
{
	const struct pk_tree *t = p->t;
	const struct pk_entry *e = pk_at(t, p->l, i);
	uint64_t k = (uint64_t)(e - t->e);
	struct src_fd f;
	int ret;
	/* A hard link's bytes are where its group's first entry has them. */
	if (a.data_from) {
		k = a.data_from - 1;
		if ((ret = pk_attr_read(t, k, 1, &a, err)))
			return ret;
	}
	ret = open_bytes(p, &t->e[k], &a, rb, &f, err);
	if (ret)
		return ret;
	ret = copy_file(p, e, &f, hs, err);
	if (f.own)
		close(f.fd);
	return ret;
}

/*
 * Take the next run of files (ino - 1 in *i): up to CLAIM_FILES files and
 * CLAIM_BYTES bytes, at least one file. @return its length, 0 at the end.
 */
#define CLAIM_FILES 64
#define CLAIM_BYTES (UINT64_C(1) << 20)

static uint64_t claim(struct pipe *p, uint64_t *i)
{
	uint64_t at = atomic_load(&p->next);
	for (;;) {
		uint64_t j = at, bytes = 0;
		while (p->f0 + j < p->f1 && j - at < CLAIM_FILES &&
		       (j == at || bytes < CLAIM_BYTES))
			bytes += pk_at(p->t, p->l, p->f0 + j++)->size;
		if (j == at)
			return 0;
		if (atomic_compare_exchange_weak(&p->next, &at, j)) {
			*i = p->f0 + at;
			return j - at;
		}
	}
}

static void *reader(void *arg)
{
	struct pipe *p = arg;
	struct dlfs_err err = {0};
	struct rbufs rb = {0};
	XXH3_state_t *hs = XXH3_createState();
	if (!hs) {
		dlfs_err_set(&err, -ENOMEM, "out of memory");
		pipe_fail(p, &err);
		return NULL;
	}
	struct pk_attr ab[CLAIM_FILES];
	uint64_t i, n;
	int ret = 0;
	while (!ret && !atomic_load(&p->stop) && (n = claim(p, &i))) {
		/* The run's attributes in one read: they are in ino order. */
		ret = pk_attr_read(p->t, (uint64_t)(pk_at(p->t, p->l, i) -
						    p->t->e),
				   n, ab, &err);
		for (uint64_t m = 0; m < n && !ret; m++) {
			const struct pk_entry *e = pk_at(p->t, p->l, i + m);
			if (e->size == 0)
				p->l->xxh3[e - p->t->e] = XXH3_64bits(NULL, 0);
			else
				ret = read_file(p, i + m, ab[m], &rb, hs,
						&err);
			if (!ret)
				atomic_fetch_add(&p->files_done, 1);
		}
	}
	if (ret && ret != -ECANCELED)
		pipe_fail(p, &err);
	XXH3_freeState(hs);
	free(rb.rel);
	free(rb.full);
	return NULL;
}

static void report(struct pipe *p, const char *phase)
{
	if (!p->o->progress)
		return;
	struct dlfs_pack_progress pr = {
		.files_done = atomic_load(&p->files_done),
		.files_total = p->l->n_files,
		.bytes_done = atomic_load(&p->bytes_done),
		.bytes_total = p->l->total_bytes,
		.phase = phase,
	};
	p->o->progress(p->o->cb_arg, &pr);
}

static int open_container(const char *dir, uint32_t c, int flags, int *fd,
			  char *path, size_t plen, struct dlfs_err *err)
{
	char name[DLFS_CONTAINER_NAME_MAX];
	dlfs_container_name(c, name);
	snprintf(path, plen, "%s/%s", dir, name);
	*fd = open(path, flags | O_WRONLY | O_CLOEXEC, 0644);
	if (*fd < 0)
		return dlfs_err_sys(err, -errno, "%s", path);
	return 0;
}

/* buf to fd at off; an error names path and the offset. */
static int write_at(int fd, const void *buf, size_t len, uint64_t off,
		    const char *path, struct dlfs_err *err)
{
	int ret = dlfs_pwrite_full(fd, buf, len, off);
	if (ret)
		return dlfs_err_sys(err, ret, "%s: write at offset %llu", path,
				    (unsigned long long)off);
	return 0;
}

static int cancel_asked(const struct dlfs_pack_opts *o)
{
	return o->cancel && *o->cancel;
}

/* The time 200 ms from now, for a timed wait. */
static struct timespec in_200ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += 200 * 1000 * 1000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	return ts;
}

/* Chunk g is ready to write: every piece landed, and with --compress in
 * its stored form. */
static int chunk_ready(struct pipe *p, uint64_t g)
{
	return p->nz ? atomic_load(&p->zdone[g]) != 0
		     : atomic_load(&p->pieces[g]) == 0;
}

/*
 * Wait until chunk g is ready, reporting progress every 0.2 s (*last:
 * the last report). @return 0, or -ECANCELED when the pipe stops or the
 * user cancels.
 */
static int wait_chunk(struct pipe *p, uint64_t g, double *last,
		      struct dlfs_err *err)
{
	pthread_mutex_lock(&p->mu);
	while (!chunk_ready(p, g) && !atomic_load(&p->stop)) {
		struct timespec ts = in_200ms();
		pthread_cond_timedwait(&p->cv_chunk, &p->mu, &ts);
		if (cancel_asked(p->o)) {
			pthread_mutex_unlock(&p->mu);
			return dlfs_err_set(err, -ECANCELED, "cancelled");
		}
		if (now() - *last > 0.2) {
			pthread_mutex_unlock(&p->mu);
			report(p, "pack");
			*last = now();
			pthread_mutex_lock(&p->mu);
		}
	}
	pthread_mutex_unlock(&p->mu);
	if (atomic_load(&p->stop))
		return -ECANCELED;
	if (cancel_asked(p->o))
		return dlfs_err_set(err, -ECANCELED, "cancelled");
	return 0;
}

/* The container file the writer has open. */
struct wfile {
	int fd;     /* -1: none */
	uint32_t c; /* its container; UINT32_MAX: none */
	uint64_t at; /* where its next stored chunk goes (--compress) */
	char path[4096];
};

/* Have container c's file open: close the one before, create c's. */
static int to_container(struct pipe *p, struct wfile *w, uint32_t c,
			struct dlfs_err *err)
{
	if (c == w->c)
		return 0;
	if (w->fd >= 0 && close(w->fd) < 0) {
		w->fd = -1;
		return dlfs_err_sys(err, -errno, "%s", w->path);
	}
	w->fd = -1;
	int ret = open_container(p->dir, c, O_CREAT | O_EXCL, &w->fd, w->path,
				 sizeof(w->path), err);
	if (!ret) {
		w->c = c;
		w->at = DLFS_DATA_OFFSET(p->cs);
	}
	return ret;
}

/* Chunk g's container, its index in it and its logical length. */
static void chunk_place(const struct pipe *p, uint64_t g, uint32_t *c,
			uint64_t *k, uint64_t *len)
{
	*c = p->chunk_container[g];
	*k = g - p->l->first_chunk[*c];
	*len = p->l->data_size[*c] - *k * p->cs;
	if (*len > p->cs)
		*len = p->cs;
}

/* Chunk g, landed, into its stored form in its buffer, its record but
 * for the offset into p->sums; then the writer may take it. */
static int compress_chunk(struct pipe *p, struct pk_zctx *z, uint64_t g,
			  struct dlfs_err *err)
{
	uint32_t c;
	uint64_t k, len;
	struct pk_zchunk r;
	chunk_place(p, g, &c, &k, &len);
	int ret = pk_zchunk(z, chunk_buf(p, g), len, &r, err);
	if (ret) {
		char name[DLFS_CONTAINER_NAME_MAX];
		dlfs_container_name(c, name);
		return dlfs_err_prefix(err, "%s/%s: compressing chunk %llu",
				       p->dir, name, (unsigned long long)k);
	}
	p->sums.xxh3[g] = r.xxh3;
	p->sums.sum[g] = r.sum;
	p->sums.length[g] = (uint32_t)len;
	p->sums.stored_length[g] = r.stored_length;
	p->sums.flags[g] = r.flags;
	atomic_store(&p->zdone[g], 1);
	pthread_mutex_lock(&p->mu);
	pthread_cond_broadcast(&p->cv_chunk);
	pthread_mutex_unlock(&p->mu);
	return 0;
}

/* The next chunk for a compressor, once it has landed and is in the
 * window (a chunk of no file bytes lands at once, and its buffer may
 * still be an earlier chunk's). @return 0 when there is none. */
static int take_chunk(struct pipe *p, uint64_t *g)
{
	pthread_mutex_lock(&p->mu);
	for (;;) {
		uint64_t n = p->znext;
		if (atomic_load(&p->stop) || n >= p->g1) {
			pthread_mutex_unlock(&p->mu);
			return 0;
		}
		if (!atomic_load(&p->pieces[n]) &&
		    n < atomic_load(&p->base) + p->w)
			break;
		pthread_cond_wait(&p->cv_chunk, &p->mu);
	}
	*g = p->znext++;
	pthread_mutex_unlock(&p->mu);
	return 1;
}

/* A compressor thread: landed chunks, in chunk order, into their stored
 * form. */
static void *compressor(void *arg)
{
	struct zworker *zw = arg;
	struct pipe *p = zw->p;
	struct dlfs_err err = {0};
	uint64_t g;
	while (take_chunk(p, &g)) {
		if (compress_chunk(p, &zw->z, g, &err)) {
			pipe_fail(p, &err);
			break;
		}
	}
	return NULL;
}

/* Chunk g in its stored form, into w's container at w->at, the next
 * stored chunk's place, which its record gets. */
static int store_chunk(struct pipe *p, struct wfile *w, uint64_t g,
		       struct dlfs_err *err)
{
	uint64_t padded = dlfs_roundup(p->sums.stored_length[g], 4096);
	p->sums.stored_offset[g] = w->at;
	int ret = write_at(w->fd, chunk_buf(p, g), padded, w->at, w->path,
			   err);
	if (ret)
		return ret;
	w->at += padded;
	p->stored_end[w->c] = w->at;
	return 0;
}

/* Chunk g, hashed, into w's container; then its buffer is free for the
 * window's next chunk. */
static int write_chunk(struct pipe *p, struct wfile *w, uint64_t g,
		       struct dlfs_err *err)
{
	uint32_t c;
	uint64_t k, len;
	chunk_place(p, g, &c, &k, &len);
	uint8_t *b = chunk_buf(p, g);
	int ret;
	if (p->nz) {
		ret = store_chunk(p, w, g, err);
	} else {
		p->sums.xxh3[g] = p->sums.sum[g] = XXH3_64bits(b, len);
		p->sums.length[g] = (uint32_t)len;
		p->sums.stored_length[g] = (uint32_t)len;
		/* The zeroed tail pads the last chunk to 4 KiB. */
		ret = write_at(w->fd, b, dlfs_roundup(len, 4096),
			       DLFS_DATA_OFFSET(p->cs) + k * p->cs, w->path,
			       err);
	}
	if (ret)
		return ret;
	memset(b, 0, p->cs);
	pthread_mutex_lock(&p->mu);
	atomic_fetch_add(&p->base, 1);
	pthread_cond_broadcast(&p->cv_window);
	if (p->nz) /* compressors wait for the window too */
		pthread_cond_broadcast(&p->cv_chunk);
	pthread_mutex_unlock(&p->mu);
	return 0;
}

/* The writer: the calling thread, in chunk order. */
static int write_chunks(struct pipe *p, struct dlfs_err *err)
{
	struct wfile w = {.fd = -1, .c = UINT32_MAX};
	double last = now();
	int ret = 0;
	for (uint64_t g = p->g0; g < p->g1 && !ret; g++) {
		ret = wait_chunk(p, g, &last, err);
		if (!ret)
			ret = to_container(p, &w, p->chunk_container[g], err);
		if (!ret)
			ret = write_chunk(p, &w, g, err);
		if (!ret && now() - last > 0.2) {
			report(p, "pack");
			last = now();
		}
	}
	if (w.fd >= 0 && close(w.fd) < 0 && !ret)
		ret = dlfs_err_sys(err, -errno, "%s", w.path);
	return ret;
}

/* This process's chunks and files: those of containers [c0, c1). */
static void pipe_range(struct pipe *p, uint32_t c0, uint32_t c1)
{
	const struct pk_layout *l = p->l;
	p->g0 = c0 < c1 ? l->first_chunk[c0] : 0;
	p->g1 = c0 >= c1		    ? 0
		: c1 < l->n_containers ? l->first_chunk[c1]
				       : l->n_chunks;
	p->f0 = c0 < c1 ? l->first_file[c0] : 0;
	p->f1 = c0 >= c1		    ? 0
		: c1 < l->n_containers ? l->first_file[c1]
				       : l->n_dirs + l->n_symlinks + l->n_files;
	atomic_store(&p->base, p->g0);
}

/* The window: two chunks per reader and two more, within 256 MiB, at
 * least two, and no more than there are chunks to write. */
static void pipe_window(struct pipe *p)
{
	p->w = 2 * (uint64_t)p->o->threads + 2;
	if (p->w * p->cs > (UINT64_C(256) << 20))
		p->w = (UINT64_C(256) << 20) / p->cs;
	if (p->w < 2)
		p->w = 2;
	if (p->w > p->g1 - p->g0 && p->g1 > p->g0)
		p->w = p->g1 - p->g0;
}

/* The CPUs this process may run on (a batch job's share). */
static unsigned cpus_here(void)
{
	cpu_set_t set;
	if (!sched_getaffinity(0, sizeof(set), &set) && CPU_COUNT(&set) > 0)
		return (unsigned)CPU_COUNT(&set);
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (unsigned)n : 1;
}

/* --compress: as many compressors as --threads, but no more than CPUs
 * (they only compute) or chunks in the window (they could not all have
 * one), each with its context and scratch. */
static int pipe_zalloc(struct pipe *p, struct dlfs_err *err)
{
	unsigned nz = p->o->threads, cpus = cpus_here();
	if (nz > cpus)
		nz = cpus;
	if (nz > p->w)
		nz = (unsigned)p->w;
	p->zdone = calloc(p->l->n_chunks + 1, sizeof(*p->zdone));
	p->zw = calloc(nz, sizeof(*p->zw));
	if (!p->zdone || !p->zw)
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	p->znext = p->g0;
	for (; p->nz < nz; p->nz++) {
		struct zworker *zw = &p->zw[p->nz];
		zw->p = p;
		int ret = pk_zctx_init(&zw->z, p->o->compress_level, p->cs,
				       err);
		if (ret) {
			pk_zctx_free(&zw->z);
			return ret;
		}
	}
	return 0;
}

/* The compressors' contexts and scratch, once the data is written. */
static void pipe_zfree(struct pipe *p)
{
	for (unsigned i = 0; p->zw && i < p->nz; i++)
		pk_zctx_free(&p->zw[i].z);
	free(p->zw);
	p->zw = NULL;
	free((void *)p->zdone);
	p->zdone = NULL;
}

/* The per-chunk arrays and the window's buffers, zeroed. */
static int pipe_alloc(struct pipe *p, struct dlfs_err *err)
{
	uint64_t n = p->l->n_chunks + 1;
	p->pieces = calloc(n, sizeof(*p->pieces));
	p->chunk_container = calloc(n, sizeof(uint32_t));
	p->sums.xxh3 = calloc(n, sizeof(uint64_t));
	p->sums.sum = calloc(n, sizeof(uint64_t));
	p->sums.length = calloc(n, sizeof(uint32_t));
	p->sums.stored_length = calloc(n, sizeof(uint32_t));
	p->sums.stored_offset = calloc(n, sizeof(uint64_t));
	p->sums.flags = calloc(n, sizeof(uint32_t));
	p->stored_end = calloc(p->l->n_containers + 1, sizeof(uint64_t));
	if (!p->pieces || !p->chunk_container || !p->sums.xxh3 ||
	    !p->sums.sum ||
	    !p->sums.length || !p->sums.stored_length ||
	    !p->sums.stored_offset || !p->sums.flags || !p->stored_end ||
	    posix_memalign((void **)&p->bufs, 4096, p->w * p->cs)) {
		p->bufs = NULL;
		return dlfs_err_set(err, -ENOMEM,
				    "out of memory for %llu chunk buffers",
				    (unsigned long long)p->w);
	}
	memset(p->bufs, 0, p->w * p->cs);
	if (p->o->compress == DLFS_COMPRESS_ZSTD && p->g1 > p->g0)
		return pipe_zalloc(p, err);
	return 0;
}

/* Each chunk's container, and how many pieces of files it waits for. */
static void pipe_count(struct pipe *p, uint32_t c0, uint32_t c1)
{
	const struct pk_layout *l = p->l;
	uint64_t cs = p->cs;
	for (uint64_t c = c0; c < c1; c++) {
		uint64_t nc = (l->data_size[c] + cs - 1) / cs;
		for (uint64_t k = 0; k < nc; k++)
			p->chunk_container[l->first_chunk[c] + k] = (uint32_t)c;
	}
	for (uint64_t i = p->f0; i < p->f1; i++) {
		const struct pk_entry *e = pk_at(p->t, l, i);
		if (!e->size)
			continue;
		uint64_t loc = l->loc[e - p->t->e];
		uint64_t d = pk_loc_offset(loc) - DLFS_DATA_OFFSET(cs);
		uint64_t g0 = l->first_chunk[pk_loc_container(loc)];
		for (uint64_t g = d / cs; g <= (d + e->size - 1) / cs; g++)
			p->pieces[g0 + g]++;
	}
}

/* The readers and compressors on their threads, the writer on this one,
 * then the last progress report; the first failure (another thread's
 * over this thread's cancellation) in err. */
static int pipe_run(struct pipe *p, struct dlfs_err *err)
{
	int ret = 0;
	unsigned nt = p->o->threads + p->nz, started = 0;
	pthread_t *tids = calloc(nt, sizeof(*tids));
	if (!tids)
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	for (; started < nt; started++) {
		int r = started < p->o->threads
				? pthread_create(&tids[started], NULL, reader, p)
				: pthread_create(&tids[started], NULL,
						 compressor,
						 &p->zw[started -
							p->o->threads]);
		if (r) {
			ret = dlfs_err_sys(err, -r, "cannot start %u threads",
					   nt);
			pipe_fail(p, err);
			break;
		}
	}
	if (!ret)
		ret = write_chunks(p, err);
	if (ret) {
		struct dlfs_err mine = *err;
		pipe_fail(p, &mine);
	}
	for (unsigned i = 0; i < started; i++)
		pthread_join(tids[i], NULL);
	free(tids);
	if (p->err.code && (!ret || ret == -ECANCELED)) {
		*err = p->err;
		ret = p->err.code;
	}
	report(p, "pack");
	return ret;
}

/* Write containers [c0, c1) of the layout. */
static int run_pipeline(struct pipe *p, uint32_t c0, uint32_t c1,
			struct dlfs_err *err)
{
	pipe_range(p, c0, c1);
	pipe_window(p);
	int ret = pipe_alloc(p, err);
	if (ret)
		return ret;
	pipe_count(p, c0, c1);
	return pipe_run(p, err);
}

/*
 * A container's trailer as it is written: records gather in buf and go
 * out in large writes, hashed on the way; the footer follows them.
 */
#define TRAILER_BUF (1u << 20)
#define TRAILER_AB 1024 /* entries' attributes read at a time */

struct trailer {
	int fd;
	const char *path; /* the container's, for errors */
	uint64_t start;   /* the trailer's offset in the file */
	uint64_t at;      /* where buf goes */
	uint64_t nrec;    /* records so far */
	uint8_t *buf;
	size_t used;
	XXH3_state_t *hs;
	struct pk_attr *ab; /* a batch of TRAILER_AB entries' attributes */
	char *pb;           /* an entry's path */
	size_t pcap;
};

/* buf holds TRAILER_BUF bytes of records and, after the last, the footer:
 * records are flushed at TRAILER_BUF, so the footer may start at its end. */
static int trailer_init(struct trailer *tr, struct dlfs_err *err)
{
	tr->buf = malloc(TRAILER_BUF + DLFS_FOOTER_SIZE);
	tr->ab = malloc(TRAILER_AB * sizeof(*tr->ab));
	tr->hs = XXH3_createState();
	if (!tr->buf || !tr->hs || !tr->ab)
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	XXH3_64bits_reset(tr->hs);
	return 0;
}

static void trailer_free(struct trailer *tr)
{
	XXH3_freeState(tr->hs);
	free(tr->buf);
	free(tr->pb);
	free(tr->ab);
}

/* The records gathered so far, hashed and written. */
static int trailer_flush(struct trailer *tr, struct dlfs_err *err)
{
	XXH3_64bits_update(tr->hs, tr->buf, tr->used);
	int ret = write_at(tr->fd, tr->buf, tr->used, tr->at, tr->path, err);
	if (ret)
		return ret;
	tr->at += tr->used;
	tr->used = 0;
	return 0;
}

/* Entry e's record (attributes a): the record, its path, and a symlink's
 * target. */
static int trailer_add(struct pipe *p, struct trailer *tr,
		       const struct pk_entry *e, const struct pk_attr *a,
		       struct dlfs_err *err)
{
	const struct pk_layout *l = p->l;
	uint64_t k = (uint64_t)(e - p->t->e);
	size_t plen;
	int ret;
	if (pk_entry_path(p->t, e, &tr->pb, &tr->pcap, &plen))
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	int lnk = S_ISLNK(e->mode), reg = S_ISREG(e->mode);
	size_t need = DLFS_TRAILER_REC_SIZE + plen + (lnk ? e->size : 0);
	if (tr->used + need > TRAILER_BUF && (ret = trailer_flush(tr, err)))
		return ret;
	if (need > TRAILER_BUF)
		return dlfs_err_set(err, -ENAMETOOLONG,
				    "%s: entry too large", tr->pb);
	struct dlfs_trailer_rec rec = {
		.mode = e->mode,
		.mtime_nsec = a->mtime_nsec,
		.mtime_sec = a->mtime_sec,
		.size = e->size,
		.offset = reg ? pk_loc_offset(l->loc[k]) : 0,
		.xxh3 = reg ? l->xxh3[k] : 0,
		.path_len = (uint32_t)plen,
	};
	dlfs_trailer_rec_encode(&rec, tr->buf + tr->used);
	tr->used += DLFS_TRAILER_REC_SIZE;
	memcpy(tr->buf + tr->used, tr->pb, plen);
	tr->used += plen;
	if (lnk) {
		memcpy(tr->buf + tr->used, pk_target(e), e->size);
		tr->used += e->size;
	}
	tr->nrec++;
	return 0;
}

/* The records of entries [i0, i1) in layout order. */
static int trailer_range(struct pipe *p, struct trailer *tr, uint64_t i0,
			 uint64_t i1, struct dlfs_err *err)
{
	int ret = 0;
	for (uint64_t i = i0; i < i1 && !ret; i++) {
		const struct pk_entry *e = pk_at(p->t, p->l, i);
		uint64_t bi = (i - i0) % TRAILER_AB, m = i1 - i;
		if (!bi &&
		    (ret = pk_attr_read(p->t, (uint64_t)(e - p->t->e),
					m < TRAILER_AB ? m : TRAILER_AB,
					tr->ab, err)))
			break;
		ret = trailer_add(p, tr, e, &tr->ab[bi], err);
	}
	return ret;
}

/* The footer after the last records, written with them; ct has the
 * container's size and the footer's checksum. */
static int trailer_end(struct trailer *tr, uint32_t c, const uint8_t *id,
		       struct pk_containers *ct, struct dlfs_err *err)
{
	XXH3_64bits_update(tr->hs, tr->buf, tr->used);
	struct dlfs_container_footer f = {
		.container = c,
		.trailer_offset = tr->start,
		.trailer_size = tr->at + tr->used - tr->start,
		.n_records = tr->nrec,
		.trailer_xxh3 = XXH3_64bits_digest(tr->hs),
	};
	memcpy(f.magic, DLFS_FOOTER_MAGIC, 8);
	memcpy(f.dataset_id, id, DLFS_ID_SIZE);
	dlfs_footer_encode(&f, tr->buf + tr->used);
	tr->used += DLFS_FOOTER_SIZE;
	int ret = write_at(tr->fd, tr->buf, tr->used, tr->at, tr->path, err);
	if (ret)
		return ret;
	tr->at += tr->used;
	ct->file_size[c] = tr->at;
	ct->footer_xxh3[c] = f.footer_xxh3;
	return 0;
}

/* The header block: the record, then zeros to 4 KiB (buf: scratch). */
static int write_header(struct pipe *p, int fd, const char *path, uint32_t c,
			const uint8_t *id, uint8_t *buf, struct dlfs_err *err)
{
	struct dlfs_container_header h = {
		.format_major = DLFS_FORMAT_MAJOR,
		.format_minor = DLFS_FORMAT_MINOR,
		.header_size = DLFS_HEADER_SIZE,
		.container = c,
		.chunk_size = p->cs,
		.data_offset = DLFS_DATA_OFFSET(p->cs),
		.data_size = p->l->data_size[c],
	};
	memcpy(h.magic, DLFS_CONTAINER_MAGIC, 8);
	memcpy(h.dataset_id, id, DLFS_ID_SIZE);
	memset(buf, 0, DLFS_HEADER_SIZE);
	dlfs_header_encode(&h, buf);
	return write_at(fd, buf, DLFS_HEADER_SIZE, 0, path, err);
}

/* Trailer, footer and header of container c, once the id is known. */
static int finish_container(struct pipe *p, uint32_t c, const uint8_t *id,
			    struct pk_containers *ct, struct dlfs_err *err)
{
	const struct pk_layout *l = p->l;
	char path[4096];
	struct trailer tr = {.path = path};
	int ret = open_container(p->dir, c, O_CREAT, &tr.fd, path,
				 sizeof(path), err);
	if (ret)
		return ret;
	/* Compressed: right after the last stored chunk. */
	tr.start = tr.at =
		p->o->compress != DLFS_COMPRESS_NONE
			? (p->stored_end[c] ? p->stored_end[c]
					    : DLFS_DATA_OFFSET(p->cs))
			: DLFS_DATA_OFFSET(p->cs) +
				  dlfs_roundup(l->data_size[c], 4096);
	ret = trailer_init(&tr, err);
	/* Container 0 also carries the directories and symlinks. */
	if (!ret && c == 0)
		ret = trailer_range(p, &tr, 0, l->n_dirs + l->n_symlinks, err);
	if (!ret)
		ret = trailer_range(p, &tr, l->first_file[c],
				    l->first_file[c] + l->n_cfiles[c], err);
	if (!ret)
		ret = trailer_end(&tr, c, id, ct, err);
	if (!ret)
		ret = write_header(p, tr.fd, path, c, id, tr.buf, err);
	if (!ret && fsync(tr.fd) < 0)
		ret = dlfs_err_sys(err, -errno, "%s: fsync", path);
	trailer_free(&tr);
	if (close(tr.fd) < 0 && !ret)
		ret = dlfs_err_sys(err, -errno, "%s: close", path);
	return ret;
}

/* Remove a flat dataset directory (ours: no subdirectories). */
static void remove_flat_dir(const char *dir)
{
	DIR *d = opendir(dir);
	if (d) {
		struct dirent *de;
		while ((de = readdir(d)))
			if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
				unlinkat(dirfd(d), de->d_name, 0);
		closedir(d);
	}
	rmdir(dir);
}

/* OUT may be replaced only if it is a dataset or an empty directory. */
static int check_replaceable(const char *out, struct dlfs_err *err)
{
	char ip[4096];
	struct stat st;
	snprintf(ip, sizeof(ip), "%s/%s", out, DLFS_INDEX_NAME);
	if (stat(ip, &st) == 0)
		return 0;
	if (rmdir(out) == 0)
		return 0; /* was an empty directory */
	return dlfs_err_set(err, -EEXIST,
			    "%s: exists and is not a dlfs dataset; refusing "
			    "to replace it even with --force",
			    out);
}

static int fsync_dir(const char *dir, struct dlfs_err *err)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return dlfs_err_sys(err, -errno, "%s", dir);
	int ret = fsync(fd) < 0 ? dlfs_err_sys(err, -errno, "%s: fsync", dir)
				: 0;
	close(fd);
	return ret;
}

/* What one pack holds across its phases. */
struct job {
	const struct dlfs_pack_comm *c; /* NULL when packing alone */
	int rank;
	const struct dlfs_pack_opts *o;
	const char *out;
	struct pk_source *src;
	unsigned n;
	struct pk_tree tree;
	struct pk_layout lay;
	struct pk_containers ct;
	struct pipe p;
	struct pk_ingest *ing;
	uint32_t *share; /* rank r writes containers [share[r], share[r+1]) */
	uint8_t id[DLFS_ID_SIZE];
	char *tmp, *spool, *ipath, *parent;
	int exists;
	struct dlfs_outlock lock; /* rank 0: OUT's, from start to publish */
};

/* Rank 0: check OUT and make the temporary directory beside it. */
static int prepare_out(struct job *j, const char *out,
		       const struct dlfs_pack_opts *o, struct dlfs_err *err)
{
	struct stat ost;
	/* The temporary directory sits beside OUT, so rename is atomic. */
	const char *slash = strrchr(out, '/');
	const char *base = slash ? slash + 1 : out;
	if (!*base || !strcmp(base, ".") || !strcmp(base, ".."))
		return dlfs_err_set(err, -EINVAL, "%s: not a valid output name",
				    out);
	j->parent = !slash ? strdup(".")
		    : slash == out ? strdup("/")
				   : strndup(out, (size_t)(slash - out));
	if (!j->parent || asprintf(&j->tmp, "%.*s.%s.tmp-XXXXXX",
				   (int)(base - out), out, base) < 0) {
		j->tmp = NULL;
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	}
	int e = stat(j->parent, &ost) < 0 ? errno
		: !S_ISDIR(ost.st_mode)	   ? ENOTDIR
					   : 0;
	if (e) {
		free(j->tmp);
		j->tmp = NULL;
		return dlfs_err_set(err, -e,
				    "%s: the directory it goes in, %s: %s",
				    out, j->parent, strerror(e));
	}
	/* Before anything is written: a second pack into OUT fails now, not
	 * at its end. */
	int ret = dlfs_outlock_take(out, &j->lock, err);
	if (ret) {
		free(j->tmp);
		j->tmp = NULL;
		return ret;
	}
	j->exists = lstat(out, &ost) == 0;
	if (j->exists && !o->force) {
		free(j->tmp);
		j->tmp = NULL;
		return dlfs_err_set(err, -EEXIST,
				    "%s: already exists (use --force to "
				    "replace it)",
				    out);
	}
	if (!mkdtemp(j->tmp)) {
		ret = dlfs_err_sys(err, -errno,
				       "%s: creating a temporary directory "
				       "beside it",
				       out);
		free(j->tmp);
		j->tmp = NULL;
		return ret;
	}
	return 0;
}

/* Rank 0: the index, then the directory renamed to OUT. */
static int finish(struct job *j, const char *out, const uint8_t *id,
		  const struct dlfs_pack_opts *o, struct dlfs_err *err)
{
	struct dlfs_pack_progress pr = {.phase = "index"};
	if (o->progress)
		o->progress(o->cb_arg, &pr);
	int ret = pk_index_write(j->ipath, &j->tree, &j->lay, o, id,
				 &j->p.sums, &j->ct, err);
	/* The seal: nodes check their copies of the index against it. The
	 * index was just written, so this reads it from the page cache. */
	struct dlfs_seal seal;
	if (!ret)
		ret = dlfs_seal_make(j->ipath, id, &seal, err);
	if (!ret)
		ret = dlfs_seal_write(j->tmp, &seal, err);
	if (!ret && o->cancel && *o->cancel)
		ret = dlfs_err_set(err, -ECANCELED, "cancelled");
	if (ret)
		return ret;
	if (j->tree.spool_fd >= 0) {
		close(j->tree.spool_fd);
		j->tree.spool_fd = -1;
		unlink(j->spool);
	}
	pk_ingest_free(j->ing, 1);
	j->ing = NULL;
	if (chmod(j->tmp, 0755) < 0)
		return dlfs_err_sys(err, -errno, "%s", j->tmp);
	ret = fsync_dir(j->tmp, err);
	if (ret)
		return ret;

	/* Publish. */
	if (j->exists) {
		ret = check_replaceable(out, err);
		if (ret)
			return ret;
		if (renameat2(AT_FDCWD, j->tmp, AT_FDCWD, out,
			      RENAME_EXCHANGE) == 0) {
			remove_flat_dir(j->tmp); /* the old dataset */
			free(j->tmp);
			j->tmp = NULL;
		} else if (errno != ENOENT) {
			return dlfs_err_sys(err, -errno, "%s: replacing", out);
		}
	}
	if (j->tmp) {
		if (renameat2(AT_FDCWD, j->tmp, AT_FDCWD, out,
			      RENAME_NOREPLACE) < 0)
			return dlfs_err_sys(err, -errno, "%s: publishing", out);
		free(j->tmp);
		j->tmp = NULL;
	}
	return fsync_dir(j->parent, err);
}

/*
 * dlfs_pack is this list of steps. A step runs on rank 0 alone (ONE) or
 * on every rank (ALL); then, in one place (dlfs_pack's loop), the ranks
 * agree on how it went, and a step whose result the other ranks need has
 * it shared out (share, on every rank, again followed by an agreement).
 * No step calls the comm itself; without a comm, there is no share and
 * every agreement is the step's own result.
 */
enum who { ONE, ALL };

struct step {
	enum who who;
	int (*run)(struct job *j, struct dlfs_err *err);
	int (*share)(struct job *j, struct dlfs_err *err);
};

/* The sources, as rank 0 sees them. */
static int classify(struct job *j, struct dlfs_err *err)
{
	return pk_classify(j->src, j->n, j->o, err);
}

static int share_sources(struct job *j, struct dlfs_err *err)
{
	return pk_dist_sources(j->c, j->src, j->n, err);
}

static int make_tmp(struct job *j, struct dlfs_err *err)
{
	return prepare_out(j, j->out, j->o, err);
}

static int share_tmp(struct job *j, struct dlfs_err *err)
{
	return pk_dist_string(j->c, &j->tmp, err);
}

/* The spool and index paths in the temporary directory, and the
 * entries' attribute file (tree.c): rank 0's all, the others' share. */
static int scratch(struct job *j, struct dlfs_err *err)
{
	char *ap;
	if (asprintf(&j->spool, "%s/spool", j->tmp) < 0 ||
	    asprintf(&j->ipath, "%s/%s", j->tmp, DLFS_INDEX_NAME) < 0) {
		j->spool = j->ipath = NULL;
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	}
	if (asprintf(&ap, "%s/attrs.%d", j->tmp, j->rank) < 0)
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	int ret = pk_tree_open_attrs(&j->tree, ap, err);
	free(ap);
	return ret;
}

/* Ingest: every rank its share, or forked workers. */
static int ingest(struct job *j, struct dlfs_err *err)
{
	return pk_ingest_run(j->src, j->n, j->tmp, j->o, &j->ing, err);
}

/* Rank 0: scan the sources, lay the dataset out. */
static int scan_and_layout(struct job *j, struct dlfs_err *err)
{
	struct dlfs_pack_progress pr = {.phase = "scan"};
	if (j->o->progress)
		j->o->progress(j->o->cb_arg, &pr);
	int ret = pk_scan(&j->tree, j->src, j->n, j->spool, j->o, err);
	if (!ret && j->o->cancel && *j->o->cancel)
		ret = dlfs_err_set(err, -ECANCELED, "cancelled");
	if (!ret)
		ret = pk_layout(&j->tree, j->o, &j->lay, err);
	return ret;
}

/* Who writes which containers, and what each needs to write them. */
static int share_layout(struct job *j, struct dlfs_err *err)
{
	if (j->rank == 0)
		pk_dist_share(&j->lay, j->c->size, j->share);
	int ret = j->c->bcast(j->c->arg, j->share,
			      ((size_t)j->c->size + 1) * sizeof(*j->share), 0);
	return ret ? ret : pk_dist_layout(j->c, &j->tree, &j->lay, j->share,
					  err);
}

/* The data: this rank's containers. */
static int data(struct job *j, struct dlfs_err *err)
{
	if (!j->c)
		j->share[1] = (uint32_t)j->lay.n_containers;
	j->p.l = &j->lay;
	j->p.o = j->o;
	j->p.src = j->src;
	j->p.t = &j->tree;
	j->p.dir = j->tmp;
	j->p.cs = j->o->chunk_size;
	int ret = run_pipeline(&j->p, j->share[j->rank], j->share[j->rank + 1],
			       err);
	/* The chunk buffers (up to 256 MiB) and the compressors' scratch
	 * are not needed past here. */
	free(j->p.bufs);
	j->p.bufs = NULL;
	pipe_zfree(&j->p);
	return ret;
}

static int share_sums(struct job *j, struct dlfs_err *err)
{
	return pk_dist_sums(j->c, &j->lay, &j->p.sums, j->share, err);
}

static int dataset_id(struct job *j, struct dlfs_err *err)
{
	return pk_dataset_id(&j->tree, &j->lay, j->o, j->id, err);
}

static int share_id(struct job *j, struct dlfs_err *err)
{
	(void)err;
	return j->c->bcast(j->c->arg, j->id, sizeof(j->id), 0);
}

/* Every container's trailer, footer and header: this rank's. */
static int containers(struct job *j, struct dlfs_err *err)
{
	j->ct.file_size = calloc(j->lay.n_containers + 1, sizeof(uint64_t));
	j->ct.footer_xxh3 = calloc(j->lay.n_containers + 1, sizeof(uint64_t));
	if (!j->ct.file_size || !j->ct.footer_xxh3)
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	int ret = 0;
	for (uint32_t c = j->share[j->rank];
	     c < j->share[j->rank + 1] && !ret; c++)
		ret = finish_container(&j->p, c, j->id, &j->ct, err);
	return ret;
}

static int share_containers(struct job *j, struct dlfs_err *err)
{
	return pk_dist_containers(j->c, &j->ct, j->share, err);
}

/* Rank 0: the index, then the dataset published as OUT. */
static int publish(struct job *j, struct dlfs_err *err)
{
	return finish(j, j->out, j->id, j->o, err);
}

static const struct step steps[] = {
	{ONE, classify, share_sources},      /* what the sources are */
	{ONE, make_tmp, share_tmp},          /* the temporary directory */
	{ALL, scratch, NULL},                /* the scratch files */
	{ALL, ingest, NULL},                 /* HDF5 and LMDB sources */
	{ONE, scan_and_layout, share_layout}, /* the tree, laid out */
	{ALL, data, share_sums},             /* the containers' data */
	{ONE, dataset_id, share_id},         /* the dataset id */
	{ALL, containers, share_containers}, /* trailers, footers, headers */
	{ONE, publish, NULL},                /* the index, then OUT */
};

int dlfs_pack_dry_run(const char *const *sources, unsigned n,
		      const struct dlfs_pack_opts *o, dlfs_plan_cb cb,
		      void *arg, struct dlfs_err *err)
{
	struct pk_source *src = calloc(n ? n : 1, sizeof(*src));
	int ret = dlfs_pack_opts_check(o, err);
	if (!ret && !src)
		ret = dlfs_err_set(err, -ENOMEM, "out of memory");
	if (ret) {
		free(src);
		return ret;
	}
	for (unsigned i = 0; i < n; i++)
		src[i].path = sources[i];
	ret = pk_classify(src, n, o, err);
	if (!ret)
		ret = pk_ingest_plan(src, n, o, cb, arg, err);
	pk_sources_free(src, n);
	free(src);
	return ret;
}

/* The job's arrays and locks; the sources' paths. Whatever fails, the
 * job is ready for job_free. */
static int job_init(struct job *j, const char *const *sources,
		    struct dlfs_err *err)
{
	const struct dlfs_pack_opts *o = j->o;
	int ret = 0;
	j->c = o->comm && o->comm->size > 1 ? o->comm : NULL;
	j->rank = j->c ? j->c->rank : 0;
	j->src = calloc(j->n, sizeof(*j->src));
	j->share = calloc(j->c ? (size_t)j->c->size + 1 : 2, sizeof(*j->share));
	pk_tree_init(&j->tree);
	pthread_mutex_init(&j->p.mu, NULL);
	pthread_cond_init(&j->p.cv_window, NULL);
	pthread_cond_init(&j->p.cv_chunk, NULL);
	if (!j->src || !j->share)
		ret = dlfs_err_set(err, -ENOMEM, "out of memory");
	for (unsigned i = 0; !ret && i < j->n; i++)
		j->src[i].path = sources[i];
	return ret;
}

/* The steps in order, the ranks agreeing after each (and after each
 * share). A failure before them (ret) is this rank's: the others hear of
 * it at the first agreement. */
static int run_steps(struct job *j, int ret, struct dlfs_err *err)
{
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		const struct step *s = &steps[i];
		if (!ret && (s->who == ALL || j->rank == 0))
			ret = s->run(j, err);
		if ((ret = pk_agree(j->c, ret, err)))
			break;
		if (j->c && s->share &&
		    (ret = pk_agree(j->c, s->share(j, err), err)))
			break;
	}
	return ret;
}

/* Rank 0 removes what is left of the temporary directory (a failed
 * pack's); every rank frees the job. */
static void job_free(struct job *j)
{
	if (j->rank == 0 && j->tmp) {
		if (j->tree.spool_fd >= 0) {
			close(j->tree.spool_fd);
			j->tree.spool_fd = -1;
		}
		remove_flat_dir(j->tmp);
	}
	dlfs_outlock_release(&j->lock);
	pk_ingest_free(j->ing, 0);
	free(j->tmp);
	free(j->spool);
	free(j->ipath);
	free(j->parent);
	free(j->share);
	free(j->ct.file_size);
	free(j->ct.footer_xxh3);
	free(j->p.bufs);
	free((void *)j->p.pieces);
	free(j->p.chunk_container);
	free(j->p.sums.xxh3);
	free(j->p.sums.sum);
	free(j->p.sums.length);
	free(j->p.sums.stored_length);
	free(j->p.sums.stored_offset);
	free(j->p.sums.flags);
	free(j->p.stored_end);
	pipe_zfree(&j->p);
	pthread_mutex_destroy(&j->p.mu);
	pthread_cond_destroy(&j->p.cv_window);
	pthread_cond_destroy(&j->p.cv_chunk);
	pk_layout_free(&j->lay);
	pk_tree_free(&j->tree);
	pk_sources_free(j->src, j->n);
	free(j->src);
}

int dlfs_pack(const char *const *sources, unsigned n_sources, const char *out,
	      const struct dlfs_pack_opts *o, struct dlfs_err *err)
{
	struct dlfs_err own = {0};
	if (!err)
		err = &own; /* messages travel between ranks through it */
	int ret = dlfs_pack_opts_check(o, err);
	if (ret)
		return ret;
	/* The pack sees the codec the default stands for. */
	struct dlfs_pack_opts ro = *o;
	ro.compress = dlfs_pack_compress(o);
	struct job j = {.o = &ro, .out = out, .n = n_sources};
	if (!n_sources)
		return dlfs_err_set(err, -EINVAL, "no sources given");
	ret = run_steps(&j, job_init(&j, sources, err), err);
	job_free(&j);
	return ret;
}
