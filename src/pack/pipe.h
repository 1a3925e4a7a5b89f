/*
 * The data pipeline of dlfs_pack (pipe_write.c, pipe_read.c,
 * pipe_zstd.c): the files of the containers this process writes, read
 * into a window of chunk buffers, hashed, optionally compressed, and
 * written to the containers' data regions in chunk order. Not installed;
 * shared by the pipeline's files, the container writer (container.c) and
 * the steps (pack.c).
 *
 * Reader threads (pipe_read.c) take files in layout order and read each
 * piece of a file straight into the buffer of the chunk it belongs to.
 * The calling thread writes chunks in order (pipe_write.c), each in one
 * large sequential write, once every piece in it has landed. A reader
 * waits only when its chunk is beyond the window; the window's first
 * chunk always belongs to files already taken, so it always completes.
 *
 * With --compress, compressor threads (pipe_zstd.c; as many as --threads,
 * at most one per CPU and one per chunk of the window) take the landed
 * chunks in chunk order and turn each into its stored form in its own
 * buffer (chunkz.h); the writer takes them in chunk order as before, and
 * only it decides where each goes (stored chunks lie back to back), so
 * the output does not depend on which thread compressed what. A
 * compressor never waits for anything but a chunk to land, so the
 * window's first chunk is always compressed too. Memory stays the window
 * plus one context and one chunk of scratch per compressor.
 *
 * Ownership: the driver owns the struct (pk_pipe_init, pk_pipe_free) and
 * fills l, o, src, t, dir and cs before pk_pipe_run; the pipeline owns
 * the rest. After the run, sums holds every chunk's record (this
 * process's chunks) and stored_end where each container's stored chunks
 * end; both live until pk_pipe_free.
 *
 * Lock order: only pk_pipe.mu exists.
 */
#ifndef DLFS_PACK_PIPE_H
#define DLFS_PACK_PIPE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "chunkz.h"
#include "index_write.h"
#include "ingest.h"

struct pk_pipe;

/* A compressor thread's own: its pipe, its zstd context and scratch. */
struct pk_zworker {
	struct pk_pipe *p;
	struct pk_zctx z;
};

struct pk_pipe {
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
	struct pk_zworker *zw;
	unsigned nz;
	uint64_t znext;
	_Atomic uint8_t *zdone;
	uint64_t *stored_end;
};

/* Chunk g's buffer in the window. */
static inline uint8_t *pk_pipe_buf(const struct pk_pipe *p, uint64_t g)
{
	return p->bufs + (g % p->w) * p->cs;
}

/* Chunk g's container, its index in it and its logical length. */
static inline void pk_pipe_place(const struct pk_pipe *p, uint64_t g,
				 uint32_t *c, uint64_t *k, uint64_t *len)
{
	*c = p->chunk_container[g];
	*k = g - p->l->first_chunk[*c];
	*len = p->l->data_size[*c] - *k * p->cs;
	if (*len > p->cs)
		*len = p->cs;
}

/* The mutex and condition variables; the rest zeroed by the caller. */
void pk_pipe_init(struct pk_pipe *p);

/*
 * Write the data of containers [c0, c1) of the layout: their chunks
 * into files the pipeline creates in p->dir, their records into p->sums.
 * @return 0 or a negative errno with err: the first failure of any
 * thread, -ECANCELED when the user cancelled.
 */
int pk_pipe_run(struct pk_pipe *p, uint32_t c0, uint32_t c1,
		struct dlfs_err *err);

/* The chunk buffers and the compressors' scratch, once the data is
 * written; sums and stored_end stay. */
void pk_pipe_release(struct pk_pipe *p);

/* Everything the pipe holds, its locks included. */
void pk_pipe_free(struct pk_pipe *p);

/* Inside the pipeline. */

/* Stop the pipe: the first failure e is kept, every waiter woken. */
static inline void pk_pipe_fail(struct pk_pipe *p, const struct dlfs_err *e)
{
	pthread_mutex_lock(&p->mu);
	if (!p->err.code)
		p->err = *e;
	atomic_store(&p->stop, 1);
	pthread_cond_broadcast(&p->cv_window);
	pthread_cond_broadcast(&p->cv_chunk);
	pthread_mutex_unlock(&p->mu);
}

/* A reader thread (arg: the pipe): files, claimed in runs, into their
 * chunks' buffers, each hashed into the layout's xxh3. */
void *pk_pipe_reader(void *arg);

/* The CPUs this process may run on (a batch job's share): how many
 * compressors at most, and the in-place indexer's default workers
 * (inplace_par.c). At least 1. */
unsigned pk_cpus_here(void);

/* --compress: nz compressors with their contexts, for the chunks of
 * [g0, g1). @return 0 or -ENOMEM (or the context's error) with err. */
int pk_pipe_zalloc(struct pk_pipe *p, struct dlfs_err *err);
void pk_pipe_zfree(struct pk_pipe *p);

/* A compressor thread (arg: its struct pk_zworker): landed chunks, in
 * chunk order, into their stored form and records. */
void *pk_pipe_compressor(void *arg);

#endif
