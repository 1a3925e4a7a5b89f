/*
 * The pipeline's writer (pipe.h): the window of chunk buffers set up,
 * the reader and compressor threads started and joined, and the calling
 * thread writing each ready chunk, in chunk order, to its container.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "container.h"
#include "pipe.h"
#include "util.h"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void report(struct pk_pipe *p, const char *phase)
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
static int chunk_ready(struct pk_pipe *p, uint64_t g)
{
	return p->nz ? atomic_load(&p->zdone[g]) != 0
		     : atomic_load(&p->pieces[g]) == 0;
}

/*
 * Wait until chunk g is ready, reporting progress every 0.2 s (*last:
 * the last report). @return 0, or -ECANCELED when the pipe stops or the
 * user cancels.
 */
static int wait_chunk(struct pk_pipe *p, uint64_t g, double *last,
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
static int to_container(struct pk_pipe *p, struct wfile *w, uint32_t c,
			struct dlfs_err *err)
{
	if (c == w->c)
		return 0;
	if (w->fd >= 0 && close(w->fd) < 0) {
		w->fd = -1;
		return dlfs_err_sys(err, -errno, "%s", w->path);
	}
	w->fd = -1;
	int ret = pk_container_open(p->dir, c, O_CREAT | O_EXCL, &w->fd,
				    w->path, sizeof(w->path), err);
	if (!ret) {
		w->c = c;
		w->at = DLFS_DATA_OFFSET(p->cs);
	}
	return ret;
}

/* Chunk g in its stored form, into w's container at w->at, the next
 * stored chunk's place, which its record gets. */
static int store_chunk(struct pk_pipe *p, struct wfile *w, uint64_t g,
		       struct dlfs_err *err)
{
	uint64_t padded = dlfs_roundup(p->sums.stored_length[g], 4096);
	p->sums.stored_offset[g] = w->at;
	int ret = pk_write_at(w->fd, pk_pipe_buf(p, g), padded, w->at,
			      w->path, err);
	if (ret)
		return ret;
	w->at += padded;
	p->stored_end[w->c] = w->at;
	return 0;
}

/* Chunk g, hashed, into w's container; then its buffer is free for the
 * window's next chunk. */
static int write_chunk(struct pk_pipe *p, struct wfile *w, uint64_t g,
		       struct dlfs_err *err)
{
	uint32_t c;
	uint64_t k, len;
	pk_pipe_place(p, g, &c, &k, &len);
	uint8_t *b = pk_pipe_buf(p, g);
	int ret;
	if (p->nz) {
		ret = store_chunk(p, w, g, err);
	} else {
		p->sums.xxh3[g] = p->sums.sum[g] = XXH3_64bits(b, len);
		p->sums.length[g] = (uint32_t)len;
		p->sums.stored_length[g] = (uint32_t)len;
		/* The zeroed tail pads the last chunk to 4 KiB. */
		ret = pk_write_at(w->fd, b, dlfs_roundup(len, 4096),
				  DLFS_DATA_OFFSET(p->cs) + k * p->cs,
				  w->path, err);
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
static int write_chunks(struct pk_pipe *p, struct dlfs_err *err)
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
static void pipe_range(struct pk_pipe *p, uint32_t c0, uint32_t c1)
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
static void pipe_window(struct pk_pipe *p)
{
	p->w = 2 * (uint64_t)p->o->threads + 2;
	if (p->w * p->cs > (UINT64_C(256) << 20))
		p->w = (UINT64_C(256) << 20) / p->cs;
	if (p->w < 2)
		p->w = 2;
	if (p->w > p->g1 - p->g0 && p->g1 > p->g0)
		p->w = p->g1 - p->g0;
}

/* The per-chunk arrays and the window's buffers, zeroed. */
static int pipe_alloc(struct pk_pipe *p, struct dlfs_err *err)
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
		return pk_pipe_zalloc(p, err);
	return 0;
}

/* Each chunk's container, and how many pieces of files it waits for. */
static void pipe_count(struct pk_pipe *p, uint32_t c0, uint32_t c1)
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
static int pipe_threads(struct pk_pipe *p, struct dlfs_err *err)
{
	int ret = 0;
	unsigned nt = p->o->threads + p->nz, started = 0;
	pthread_t *tids = calloc(nt, sizeof(*tids));
	if (!tids)
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	for (; started < nt; started++) {
		int r = started < p->o->threads
				? pthread_create(&tids[started], NULL,
						 pk_pipe_reader, p)
				: pthread_create(&tids[started], NULL,
						 pk_pipe_compressor,
						 &p->zw[started -
							p->o->threads]);
		if (r) {
			ret = dlfs_err_sys(err, -r, "cannot start %u threads",
					   nt);
			pk_pipe_fail(p, err);
			break;
		}
	}
	if (!ret)
		ret = write_chunks(p, err);
	if (ret) {
		struct dlfs_err mine = *err;
		pk_pipe_fail(p, &mine);
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
int pk_pipe_run(struct pk_pipe *p, uint32_t c0, uint32_t c1,
		struct dlfs_err *err)
{
	pipe_range(p, c0, c1);
	pipe_window(p);
	int ret = pipe_alloc(p, err);
	if (ret)
		return ret;
	pipe_count(p, c0, c1);
	return pipe_threads(p, err);
}

void pk_pipe_init(struct pk_pipe *p)
{
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv_window, NULL);
	pthread_cond_init(&p->cv_chunk, NULL);
}

void pk_pipe_release(struct pk_pipe *p)
{
	free(p->bufs);
	p->bufs = NULL;
	pk_pipe_zfree(p);
}

void pk_pipe_free(struct pk_pipe *p)
{
	pk_pipe_release(p);
	free((void *)p->pieces);
	free(p->chunk_container);
	free(p->sums.xxh3);
	free(p->sums.sum);
	free(p->sums.length);
	free(p->sums.stored_length);
	free(p->sums.stored_offset);
	free(p->sums.flags);
	free(p->stored_end);
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->cv_window);
	pthread_cond_destroy(&p->cv_chunk);
}
