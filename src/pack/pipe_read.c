/*
 * The pipeline's reader threads (pipe.h): each claims a run of files in
 * layout order and reads every piece of a file into the buffer of the
 * chunk it belongs to, hashing the file on the way. A file's bytes come
 * from its source directory, or from the spool or data file the scan or
 * the ingest put them in.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

#include "pipe.h"
#include "util.h"

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
static int open_bytes(struct pk_pipe *p, const struct pk_entry *d,
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
static int wait_window(struct pk_pipe *p, uint64_t g)
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
static int read_piece(struct pk_pipe *p, uint64_t g, const struct src_fd *f,
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
static void piece_landed(struct pk_pipe *p, uint64_t g, size_t len)
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
static int copy_file(struct pk_pipe *p, const struct pk_entry *e,
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
		uint8_t *dst = pk_pipe_buf(p, g) + in;
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
static int read_file(struct pk_pipe *p, uint64_t i, struct pk_attr a,
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

static uint64_t claim(struct pk_pipe *p, uint64_t *i)
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

void *pk_pipe_reader(void *arg)
{
	struct pk_pipe *p = arg;
	struct dlfs_err err = {0};
	struct rbufs rb = {0};
	XXH3_state_t *hs = XXH3_createState();
	if (!hs) {
		dlfs_err_set(&err, -ENOMEM, "out of memory");
		pk_pipe_fail(p, &err);
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
		pk_pipe_fail(p, &err);
	XXH3_freeState(hs);
	free(rb.rel);
	free(rb.full);
	return NULL;
}
