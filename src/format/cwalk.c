/*
 * dlfs_cwalk: a container's files streamed through its chunks (cwalk.h).
 * One chunk buffer and one running hash: a file that goes on past the
 * chunk is hashed and handed out piece by piece, one piece a chunk.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <xxhash.h>

#include "cwalk.h"
#include "ds_priv.h"
#include "util.h"

#define CWALK_SIDE_BUF (1 << 20)

struct dlfs_cwalk {
	struct dlfs_ds *ds;
	struct dlfs_txn *txn;
	const struct dlfs_cwalk_ops *ops;
	void *arg;
	uint8_t *buf;  /* one chunk, 4 KiB aligned */
	uint8_t *side; /* a file read alone, CWALK_SIDE_BUF bytes, lazily */
	XXH3_state_t *hs;
	struct dlfs_decoder *dec; /* a compressed dataset's chunks */
	/* The container being walked. */
	uint32_t c;
	uint64_t ino, end; /* the next file's inode, and the end of them */
	struct dlfs_inode in; /* the file at ino, when have */
	int have;
	int open_hash; /* in goes on past the chunk: hs holds its start */
	int chunk_cut; /* the chunk in buf lies past a container's cut */
	int file_cut;  /* some of in's bytes lie in such a chunk */
};

int dlfs_cwalk_new(struct dlfs_ds *ds, struct dlfs_txn *txn,
		   const struct dlfs_cwalk_ops *ops, void *arg,
		   struct dlfs_cwalk **out, struct dlfs_err *err)
{
	struct dlfs_cwalk *w = calloc(1, sizeof(*w));
	int ret = 0;
	*out = NULL;
	if (!w)
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	w->ds = ds;
	w->txn = txn;
	w->ops = ops;
	w->arg = arg;
	w->hs = XXH3_createState();
	if (!w->hs || posix_memalign((void **)&w->buf, 4096,
				     ds->ix.info.super.chunk_size)) {
		w->buf = NULL;
		ret = dlfs_err_set(err, -ENOMEM, "out of memory");
		goto fail;
	}
	if (dlfs_ds_compressed(ds) &&
	    (ret = dlfs_decoder_new(ds, &w->dec, err)))
		goto fail;
	*out = w;
	return 0;
fail:
	dlfs_cwalk_free(w);
	return ret;
}

void dlfs_cwalk_free(struct dlfs_cwalk *w)
{
	if (!w)
		return;
	dlfs_decoder_free(w->dec);
	XXH3_freeState(w->hs);
	free(w->buf);
	free(w->side);
	free(w);
}

/* The callbacks, each a no-op when NULL. */
static int on_begin(struct dlfs_cwalk *w, struct dlfs_err *err)
{
	return w->ops->begin ? w->ops->begin(w->arg, &w->in, err) : 0;
}

static int on_data(struct dlfs_cwalk *w, const void *p, size_t n,
		   struct dlfs_err *err)
{
	return w->ops->data && n ? w->ops->data(w->arg, &w->in, p, n, err) : 0;
}

static int on_file(struct dlfs_cwalk *w, const struct dlfs_inode *in,
		   const char *bad, struct dlfs_err *err)
{
	return w->ops->file ? w->ops->file(w->arg, in, bad, err) : 0;
}

/*
 * Do the stored bytes of chunk k (len logical bytes from cstart; cr when
 * have_rec) end past the cut of a container cut short? @return 1 with e
 * saying so, else 0. A compressed chunk without its record has no known
 * stored range: the record's damage is what is said of it.
 */
static int chunk_past_cut(struct dlfs_cwalk *w, uint64_t k, uint64_t cstart,
			  size_t len, const struct dlfs_chunk_rec *cr,
			  int have_rec, struct dlfs_err *e)
{
	uint64_t end = cstart + len;
	if (dlfs_ds_compressed(w->ds)) {
		if (!have_rec)
			return 0;
		end = cr->stored_offset + cr->stored_length;
	}
	return dlfs_ds_past_cut(w->ds, w->c, k, end, e) != 0;
}

/*
 * Read chunk k (len logical bytes from cstart) into w->buf, and tell
 * ops->chunk how it went. Damage is the callback's to judge; any other
 * failure ends the walk.
 */
static int read_chunk(struct dlfs_cwalk *w, int fd, uint64_t k,
		      uint64_t cstart, size_t len, struct dlfs_err *err)
{
	struct dlfs_ds *ds = w->ds;
	struct dlfs_chunk_rec cr;
	struct dlfs_err e = {0};
	const char *msg = NULL;
	int st = dlfs_chunk_get(w->txn, w->c, k, &cr, &e);
	if (st && st != -DLFS_ECORRUPT && st != -ENOENT)
		return dlfs_err_set(err, st, "%s", e.msg);
	if (st)
		msg = e.msg;
	w->chunk_cut = chunk_past_cut(w, k, cstart, len, &cr, !st, &e);
	if (w->chunk_cut) {
		/* Its bytes are not there: zeros, and its files say why. */
		st = -ENODATA;
		msg = e.msg;
		memset(w->buf, 0, len);
	} else if (dlfs_ds_compressed(ds)) {
		/* The stored bytes are checked as they are read. */
		if (!st) {
			st = dlfs_ds_chunk_logical(ds, w->c, k, &cr, w->dec,
						   w->buf,
						   ds->ix.info.super.chunk_size,
						   &e);
			if (st && st != -DLFS_ECORRUPT &&
			    st != -DLFS_ECHECKSUM)
				return dlfs_err_set(err, st, "%s", e.msg);
			if (st)
				msg = e.msg;
		}
		if (st)
			memset(w->buf, 0, len);
	} else {
		/* Read even without a record: the files have their own
		 * checksums. */
		int ret = dlfs_ds_pread(ds, w->c, w->buf, len, cstart, err);
		if (ret)
			return ret;
		posix_fadvise(fd, (off_t)cstart, (off_t)len,
			      POSIX_FADV_DONTNEED);
		if (!st && XXH3_64bits(w->buf, len) != cr.xxh3)
			st = -DLFS_ECHECKSUM;
	}
	return w->ops->chunk ? w->ops->chunk(w->arg, k, cstart, st, msg, err)
			     : 0;
}

/*
 * The next file of the container, in inode order, into w->in. A damaged
 * inode record goes to ops->file and is skipped. @return 1 with w->in, 0
 * at the end of the container's files, or a negative errno.
 */
static int next_file(struct dlfs_cwalk *w, struct dlfs_err *err)
{
	for (; w->ino < w->end; w->ino++) {
		struct dlfs_err e = {0};
		int ret = dlfs_stat(w->txn, w->ino, &w->in, &e);
		if (ret && ret != -DLFS_ECORRUPT && ret != -ENOENT)
			return dlfs_err_set(err, ret, "%s", e.msg);
		if (!ret && w->in.container == w->c && S_ISREG(w->in.mode))
			return 1;
		struct dlfs_inode bad = {.ino = w->ino};
		ret = on_file(w, &bad,
			      ret ? "its inode record is damaged"
				  : "its inode record is damaged (not a file "
				    "of this container)",
			      err);
		if (ret)
			return ret;
	}
	return 0;
}

/* w->in read alone, piece by piece into w->side: a file the in-order walk
 * cannot stream (its inode record is out of layout order). */
static int read_alone(struct dlfs_cwalk *w, struct dlfs_err *err)
{
	const struct dlfs_inode *in = &w->in;
	int ret;
	if (!w->side && !(w->side = malloc(CWALK_SIDE_BUF)))
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	if ((ret = on_begin(w, err)))
		return ret;
	XXH3_64bits_reset(w->hs);
	for (uint64_t off = 0; off < in->size;) {
		size_t got;
		struct dlfs_err e = {0};
		ret = dlfs_file_pread(w->ds, in, w->side, CWALK_SIDE_BUF, off,
				      &got, &e);
		if (ret == -DLFS_ECORRUPT || ret == -DLFS_ECHECKSUM)
			return on_file(w, in, "checksum mismatch", err);
		if (ret)
			return dlfs_err_set(err, ret, "%s", e.msg);
		XXH3_64bits_update(w->hs, w->side, got);
		if ((ret = on_data(w, w->side, got, err)))
			return ret;
		off += got;
	}
	return on_file(w, in,
		       XXH3_64bits_digest(w->hs) == in->xxh3
			       ? NULL
			       : "checksum mismatch",
		       err);
}

/*
 * w->in's bytes in the chunk [cstart, cend) held in w->buf. @return 1
 * when the file is done (ops->file called), 0 when it starts in a later
 * chunk or goes on past this one, or a negative errno.
 */
static int stream_piece(struct dlfs_cwalk *w, uint64_t cstart, uint64_t cend,
			struct dlfs_err *err)
{
	const struct dlfs_inode *in = &w->in;
	int ret;
	if (in->offset >= cend)
		return 0; /* starts in a later chunk */
	uint64_t fend = in->offset + in->size;
	uint64_t from = w->open_hash ? cstart : in->offset;
	uint64_t to = fend < cend ? fend : cend;
	const uint8_t *p = w->buf + (from - cstart);
	size_t n = (size_t)(to - from);
	uint64_t h = 0;
	if (!w->open_hash && (ret = on_begin(w, err)))
		return ret;
	w->file_cut = (w->open_hash && w->file_cut) || w->chunk_cut;
	if (!w->open_hash && fend <= cend) {
		h = XXH3_64bits(p, n);
	} else {
		if (!w->open_hash) {
			XXH3_64bits_reset(w->hs);
			w->open_hash = 1;
		}
		XXH3_64bits_update(w->hs, p, n);
		if (fend <= cend) {
			h = XXH3_64bits_digest(w->hs);
			w->open_hash = 0;
		}
	}
	if ((ret = on_data(w, p, n, err)))
		return ret;
	if (w->open_hash)
		return 0; /* goes on in the next chunk */
	ret = on_file(w, in,
		      w->file_cut ? "its chunk goes past the end of the "
				    "truncated container"
		      : h == in->xxh3 ? NULL
				      : "checksum mismatch",
		      err);
	return ret ? ret : 1;
}

/* The files that end in chunk [cstart, cend), in w->buf. */
static int chunk_files(struct dlfs_cwalk *w, uint64_t cstart, uint64_t cend,
		       struct dlfs_err *err)
{
	for (;;) {
		int ret;
		if (!w->have) {
			ret = next_file(w, err);
			if (ret <= 0)
				return ret;
			w->have = 1;
		}
		const struct dlfs_inode *in = &w->in;
		if (in->size == 0) {
			ret = on_begin(w, err);
			if (!ret)
				ret = on_file(w, in,
					      XXH3_64bits(NULL, 0) == in->xxh3
						      ? NULL
						      : "checksum mismatch",
					      err);
		} else if (!w->open_hash && in->offset < cstart) {
			ret = read_alone(w, err);
		} else {
			ret = stream_piece(w, cstart, cend, err);
			if (ret == 0)
				return 0;
			ret = ret < 0 ? ret : 0;
		}
		if (ret)
			return ret;
		w->have = 0;
		w->ino++;
	}
}

/* Files left once the chunks are done: they lie past the data, which an
 * empty file may. */
static int leftover_files(struct dlfs_cwalk *w, struct dlfs_err *err)
{
	for (; w->ino < w->end; w->ino++) {
		int ret;
		if (!w->have) {
			ret = next_file(w, err);
			if (ret <= 0)
				return ret;
		}
		w->have = 0;
		int empty = !w->in.size && w->in.xxh3 == XXH3_64bits(NULL, 0);
		if (empty && (ret = on_begin(w, err)))
			return ret;
		ret = on_file(w, &w->in,
			      empty ? NULL
				    : "file lies outside the container's data",
			      err);
		if (ret)
			return ret;
	}
	return 0;
}

int dlfs_cwalk_container(struct dlfs_cwalk *w, uint32_t c,
			 struct dlfs_err *err)
{
	struct dlfs_ds *ds = w->ds;
	const uint64_t cs = ds->ix.info.super.chunk_size;
	/* The table checked at open, not the raw record: its numbers are
	 * consistent, so the walk stays inside its buffers. */
	const struct dlfs_container *rec = dlfs_ds_container(ds, c);
	int fd = -1, ret = 0;
	w->c = c;
	w->ino = rec->first_ino;
	w->end = rec->first_ino + rec->n_files;
	w->have = w->open_hash = w->chunk_cut = w->file_cut = 0;
	if (rec->n_chunks) {
		ret = dlfs_ds_container_fd(ds, c, &fd, err);
		if (ret)
			return ret;
		posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	}
	for (uint64_t k = 0; k < rec->n_chunks && !ret; k++) {
		uint64_t cstart = dlfs_chunk_start(cs, k);
		uint64_t left = rec->data_size - k * cs;
		size_t len = (size_t)(left < cs ? left : cs);
		ret = read_chunk(w, fd, k, cstart, len, err);
		if (!ret)
			ret = chunk_files(w, cstart, cstart + len, err);
		if (!ret && w->ops->chunk_end)
			ret = w->ops->chunk_end(w->arg, k, cstart, err);
	}
	if (!ret)
		ret = leftover_files(w, err);
	return ret;
}
