/*
 * The pipeline's compressor threads, with --compress (pipe.h): each
 * takes the next landed chunk in chunk order and turns it into its
 * stored form in its own buffer (chunkz.h), with its record but the
 * offset, which the writer gives.
 */
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

#include "dlfs/format.h"
#include "pipe.h"

/* Chunk g, landed, into its stored form in its buffer, its record but
 * for the offset into p->sums; then the writer may take it. */
static int compress_chunk(struct pk_pipe *p, struct pk_zctx *z, uint64_t g,
			  struct dlfs_err *err)
{
	uint32_t c;
	uint64_t k, len;
	struct pk_zchunk r;
	pk_pipe_place(p, g, &c, &k, &len);
	int ret = pk_zchunk(z, pk_pipe_buf(p, g), len, &r, err);
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
static int take_chunk(struct pk_pipe *p, uint64_t *g)
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
void *pk_pipe_compressor(void *arg)
{
	struct pk_zworker *zw = arg;
	struct pk_pipe *p = zw->p;
	struct dlfs_err err = {0};
	uint64_t g;
	while (take_chunk(p, &g)) {
		if (compress_chunk(p, &zw->z, g, &err)) {
			pk_pipe_fail(p, &err);
			break;
		}
	}
	return NULL;
}

unsigned pk_cpus_here(void)
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
int pk_pipe_zalloc(struct pk_pipe *p, struct dlfs_err *err)
{
	unsigned nz = p->o->threads, cpus = pk_cpus_here();
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
		struct pk_zworker *zw = &p->zw[p->nz];
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
void pk_pipe_zfree(struct pk_pipe *p)
{
	for (unsigned i = 0; p->zw && i < p->nz; i++)
		pk_zctx_free(&p->zw[i].z);
	free(p->zw);
	p->zw = NULL;
	free((void *)p->zdone);
	p->zdone = NULL;
}
