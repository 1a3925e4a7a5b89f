/*
 * One archive read in place: the window and the runs (inplace_run.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "inplace_run.h"
#include "util.h"

/* The window: reads of up to this much, front to back. */
#define IP_WINDOW ((size_t)8 << 20)
/* How far past the window the kernel is asked to read. */
#define IP_AHEAD (2 * IP_WINDOW)

int pk_ip_add_chunk(struct pk_inplace *ip, uint64_t xxh3, uint64_t sum,
		    uint64_t stored_offset, uint32_t stored_length,
		    uint32_t length, uint32_t flags)
{
	struct pk_chunks *c = &ip->ch;
	if (ip->n_ch == ip->cap_ch) {
		uint64_t cap = ip->cap_ch ? 2 * ip->cap_ch : 1024;
		void *p[6] = {
			realloc(c->xxh3, cap * sizeof(uint64_t)),
			realloc(c->sum, cap * sizeof(uint64_t)),
			realloc(c->length, cap * sizeof(uint32_t)),
			realloc(c->stored_length, cap * sizeof(uint32_t)),
			realloc(c->stored_offset, cap * sizeof(uint64_t)),
			realloc(c->flags, cap * sizeof(uint32_t)),
		};
		/* Each one that moved is kept, so nothing leaks. */
		if (p[0]) c->xxh3 = p[0];
		if (p[1]) c->sum = p[1];
		if (p[2]) c->length = p[2];
		if (p[3]) c->stored_length = p[3];
		if (p[4]) c->stored_offset = p[4];
		if (p[5]) c->flags = p[5];
		for (int i = 0; i < 6; i++)
			if (!p[i])
				return -ENOMEM;
		ip->cap_ch = cap;
	}
	uint64_t g = ip->n_ch++;
	c->xxh3[g] = xxh3;
	c->sum[g] = sum;
	c->stored_offset[g] = stored_offset;
	c->stored_length[g] = stored_length;
	c->length[g] = length;
	c->flags[g] = flags;
	return 0;
}

void pk_ip_chunks_free(struct pk_inplace *ip)
{
	free(ip->ch.xxh3);
	free(ip->ch.sum);
	free(ip->ch.length);
	free(ip->ch.stored_length);
	free(ip->ch.stored_offset);
	free(ip->ch.flags);
	memset(&ip->ch, 0, sizeof(ip->ch));
	ip->n_ch = ip->cap_ch = 0;
}

int ip_run_open(struct ip_run *r, const char *path, int fd, uint64_t size,
		uint64_t cs, struct pk_inplace *ip, struct dlfs_err *err)
{
	memset(r, 0, sizeof(*r));
	r->path = path;
	r->fd = fd;
	r->size = size;
	r->cs = cs;
	r->ip = ip;
	r->cap = IP_WINDOW;
	r->buf = malloc(r->cap);
	r->ubuf = malloc(cs);
	r->cst = XXH3_createState();
	r->mst = XXH3_createState();
	r->zs_init = inflateInit2(&r->zs, -15) == Z_OK;
	if (!r->buf || !r->ubuf || !r->cst || !r->mst || !r->zs_init) {
		ip_run_close(r);
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	}
	return 0;
}

void ip_run_close(struct ip_run *r)
{
	free(r->buf);
	free(r->ubuf);
	XXH3_freeState(r->cst);
	XXH3_freeState(r->mst);
	if (r->zs_init)
		inflateEnd(&r->zs);
	r->buf = r->ubuf = NULL;
	r->cst = r->mst = NULL;
	r->zs_init = 0;
}

/* Close the open run as chunk k. */
static int close_run(struct ip_run *r, struct dlfs_err *err)
{
	if (!r->open)
		return 0;
	uint64_t x = XXH3_64bits_digest(r->cst);
	uint32_t len = (uint32_t)(r->end - r->start);
	r->open = 0;
	r->lend = r->k * r->cs + len;
	r->k++;
	if (pk_ip_add_chunk(r->ip, x, x, r->start, len, len, 0))
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	return 0;
}

static void open_run(struct ip_run *r, uint64_t off)
{
	r->open = 1;
	r->start = r->end = off;
	XXH3_64bits_reset(r->cst);
}

/*
 * The bytes after the window asked of the kernel, to be read while the
 * window is parsed and hashed: a read of the whole window otherwise
 * waits for all of it, the kernel's own read-ahead being far shorter,
 * and the file system would idle while the CPU works. Asked again once
 * half of what was asked is in the window.
 */
static void read_ahead(struct ip_run *r)
{
	uint64_t top = r->base + r->len;
	if (r->ra_end >= r->size || top + IP_AHEAD / 2 < r->ra_end)
		return;
	uint64_t from = top > r->ra_end ? top : r->ra_end;
	uint64_t to = top + IP_AHEAD < r->size ? top + IP_AHEAD : r->size;
	posix_fadvise(r->fd, (off_t)from, (off_t)(to - from),
		      POSIX_FADV_WILLNEED);
	r->ra_end = to;
}

/*
 * Make [off, off + n) sit in the window, keeping what the open run has
 * not hashed yet (from its end) unless that cannot fit: then the run is
 * closed first, which is always a valid place to end it.
 */
static int fill(struct ip_run *r, uint64_t off, size_t n,
		struct dlfs_err *err)
{
	if (off >= r->base && off + n <= r->base + r->len)
		return 0;
	uint64_t keep = r->open && r->end < off ? r->end : off;
	int ret;
	if (off + n - keep > r->cap) {
		if ((ret = close_run(r, err)))
			return ret;
		keep = off;
	}
	if (keep < r->base)
		return dlfs_err_set(err, -EIO,
				    "%s: offset %llu: read out of order "
				    "(a bug)",
				    r->path, (unsigned long long)keep);
	uint64_t top = r->base + r->len;
	size_t kept = keep < top ? (size_t)(top - keep) : 0;
	if (kept)
		memmove(r->buf, r->buf + (keep - r->base), kept);
	r->base = keep;
	r->len = kept;
	while (r->base + r->len < off + n) {
		uint64_t at = r->base + r->len;
		size_t want = r->cap - r->len;
		if (want > r->size - at)
			want = (size_t)(r->size - at);
		ssize_t got = want ? pread(r->fd, r->buf + r->len, want,
					   (off_t)at)
				   : 0;
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return dlfs_err_sys(err, -errno,
					    "%s: read at offset %llu", r->path,
					    (unsigned long long)at);
		if (got == 0)
			return dlfs_err_set(err, -DLFS_ECORRUPT,
					    "%s: ends at %llu bytes, inside "
					    "what its headers describe "
					    "(truncated?)",
					    r->path, (unsigned long long)at);
		r->len += (size_t)got;
		r->bytes_read += (uint64_t)got;
		if (r->progress)
			atomic_fetch_add_explicit(r->progress, (uint64_t)got,
						  memory_order_relaxed);
	}
	read_ahead(r);
	return 0;
}

int ip_peek(struct ip_run *r, uint64_t off, size_t n, const uint8_t **p,
	    struct dlfs_err *err)
{
	if (n > IP_PEEK_MAX)
		return dlfs_err_set(err, -EFBIG,
				    "%s: offset %llu: a header of %zu bytes, "
				    "more than dlfs reads",
				    r->path, (unsigned long long)off, n);
	int ret = fill(r, off, n, err);
	if (!ret)
		*p = r->buf + (off - r->base);
	return ret;
}

/* Hash [from, to) into the run, and into the member's hash when m. */
static int feed(struct ip_run *r, uint64_t from, uint64_t to, int m,
		struct dlfs_err *err)
{
	while (from < to) {
		size_t want = to - from < IP_PEEK_MAX ? (size_t)(to - from)
						       : IP_PEEK_MAX;
		int ret = fill(r, from, 1, err);
		if (ret)
			return ret;
		size_t have = (size_t)(r->base + r->len - from);
		size_t take = have < want ? have : want;
		const uint8_t *p = r->buf + (from - r->base);
		XXH3_64bits_update(r->cst, p, take);
		if (m)
			XXH3_64bits_update(r->mst, p, take);
		from += take;
		r->end = from;
	}
	return 0;
}

/* The member's bytes [off, off + size) into runs, a new run at each
 * chunk boundary they cross. */
static int feed_member(struct ip_run *r, uint64_t off, uint64_t size,
		       struct dlfs_err *err)
{
	uint64_t pos = off, stop = off + size;
	while (pos < stop) {
		uint64_t edge = r->start + r->cs;
		uint64_t to = stop < edge ? stop : edge;
		int ret = feed(r, pos, to, 1, err);
		if (ret)
			return ret;
		pos = to;
		if (pos == edge && pos < stop) {
			if ((ret = close_run(r, err)))
				return ret;
			open_run(r, pos);
		}
	}
	return 0;
}

int ip_stored(struct ip_run *r, uint64_t off, uint64_t size, uint64_t *loc,
	      uint64_t *xxh3, struct dlfs_err *err)
{
	const uint64_t d0 = DLFS_DATA_OFFSET(r->cs);
	int ret;
	if (off > r->size || size > r->size - off)
		return dlfs_err_set(err, -DLFS_ECORRUPT,
				    "%s: offset %llu: a member of %llu bytes "
				    "runs past the end of the archive",
				    r->path, (unsigned long long)off,
				    (unsigned long long)size);
	if (!size) {
		*loc = d0 + (r->open ? r->k * r->cs + (r->end - r->start)
				     : r->lend);
		*xxh3 = XXH3_64bits(NULL, 0);
		return 0;
	}
	/* Joins when the run stays within a chunk. The bytes between are
	 * still in the window: fill keeps them from the run's end, or
	 * closes the run. */
	int join = r->open && off >= r->end && off + size - r->start <= r->cs;
	if (!join) {
		if ((ret = close_run(r, err)))
			return ret;
		open_run(r, off);
	}
	*loc = d0 + r->k * r->cs + (off - r->start);
	XXH3_64bits_reset(r->mst);
	if ((ret = feed(r, r->end, off, 0, err)) ||
	    (ret = feed_member(r, off, size, err)))
		return ret;
	*xxh3 = XXH3_64bits_digest(r->mst);
	return 0;
}

/* Inflate [off, off + csize) into r->ubuf, hashing the stored bytes into
 * r->cst. @return 0 or -EUCLEAN with why. */
static int inflate_member(struct ip_run *r, uint64_t off, uint64_t csize,
			  uint64_t usize, const char **why,
			  struct dlfs_err *err)
{
	int rc = inflateReset(&r->zs), ret;
	r->zs.next_out = r->ubuf;
	r->zs.avail_out = (uInt)usize;
	/* Every stored byte is hashed, bytes after the stream's end too: a
	 * reader checks all stored_length of them. */
	for (uint64_t pos = off;
	     (rc == Z_OK || rc == Z_STREAM_END) && pos < off + csize;) {
		size_t want = off + csize - pos < IP_PEEK_MAX
				      ? (size_t)(off + csize - pos)
				      : IP_PEEK_MAX;
		if ((ret = fill(r, pos, 1, err)))
			return ret;
		size_t have = (size_t)(r->base + r->len - pos);
		size_t take = have < want ? have : want;
		uint8_t *p = r->buf + (pos - r->base);
		XXH3_64bits_update(r->cst, p, take);
		if (rc == Z_OK) {
			r->zs.next_in = p;
			r->zs.avail_in = (uInt)take;
			rc = inflate(&r->zs, Z_NO_FLUSH);
		}
		pos += take;
	}
	if (rc == Z_STREAM_END && r->zs.total_out == usize)
		return 0;
	*why = rc == Z_STREAM_END ? "inflates to another size"
	       : r->zs.msg	  ? r->zs.msg
				  : "its deflate stream is cut short";
	return -DLFS_ECORRUPT;
}

int ip_deflated(struct ip_run *r, uint64_t off, uint64_t csize,
		uint64_t usize, uint64_t *loc, uint64_t *xxh3,
		struct dlfs_err *err)
{
	const char *why = NULL;
	int ret;
	if (!usize)
		return ip_stored(r, off, 0, loc, xxh3, err);
	if (usize > r->cs || csize > r->cs + DLFS_DEFLATE_SLACK)
		return dlfs_err_set(err, -EFBIG,
				    "%s: offset %llu: a deflated member of "
				    "%llu bytes (%llu stored) is larger than a "
				    "chunk (%llu): raise --chunk-size, or pack "
				    "the archive without --in-place",
				    r->path, (unsigned long long)off,
				    (unsigned long long)usize,
				    (unsigned long long)csize,
				    (unsigned long long)r->cs);
	if ((ret = close_run(r, err)))
		return ret;
	XXH3_64bits_reset(r->cst);
	ret = inflate_member(r, off, csize, usize, &why, err);
	if (ret == -DLFS_ECORRUPT)
		return dlfs_err_set(err, ret,
				    "%s: offset %llu: a deflated member %s",
				    r->path, (unsigned long long)off, why);
	if (ret)
		return ret;
	uint64_t x = XXH3_64bits_digest(r->cst);
	*xxh3 = XXH3_64bits(r->ubuf, (size_t)usize);
	*loc = DLFS_DATA_OFFSET(r->cs) + r->k * r->cs;
	r->lend = r->k * r->cs + usize;
	r->k++;
	if (pk_ip_add_chunk(r->ip, x, *xxh3, off, (uint32_t)csize,
			    (uint32_t)usize, DLFS_CHUNK_DEFLATE))
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	return 0;
}

int ip_run_end(struct ip_run *r, uint64_t *data_size, uint64_t *n_chunks,
	       struct dlfs_err *err)
{
	int ret = close_run(r, err);
	*data_size = r->lend;
	*n_chunks = r->k;
	return ret;
}
