/*
 * One archive being indexed in place (inplace.h): read front to back in
 * large reads through one window, and cut into chunks as its members
 * come. The archive's parser (inplace_tar.c, inplace_zip.c) asks for
 * header bytes with ip_peek and hands over each member's data with
 * ip_stored or ip_deflated, in archive order; the run places the member
 * in the archive's logical data stream and hashes every byte once.
 *
 * A chunk is a run of whole stored members (format.h, IN_PLACE): a
 * member joins the open run when the run, from its first member's first
 * byte to this member's last, stays within the chunk size (the header
 * bytes between members come with it: read and checked, never served);
 * otherwise the run is closed and a new one starts at this member. A
 * member larger than a chunk fills whole chunks and starts a run with its
 * rest. A deflated member is a chunk of its own. Chunk k's logical bytes
 * begin at DLFS_DATA_OFFSET + k * chunk_size, so a member's logical
 * offset is its place in its run from there.
 *
 * Not installed. One thread at a time.
 */
#ifndef DLFS_PACK_INPLACE_RUN_H
#define DLFS_PACK_INPLACE_RUN_H

#include <stdatomic.h>
#include <stdint.h>
#include <xxhash.h>
#include <zlib.h>

#include "dlfs/err.h"
#include "inplace.h"

/* The largest header area ip_peek hands out at once. */
#define IP_PEEK_MAX ((size_t)1 << 20)

struct ip_run {
	const char *path; /* the archive, for messages */
	int fd;
	uint64_t size; /* of the archive */
	uint64_t cs;   /* the chunk size */
	struct pk_inplace *ip;
	/* The window: bytes [base, base + len) of the archive. */
	uint8_t *buf;
	size_t cap;
	uint64_t base;
	size_t len;
	/* Chunks: k closed so far; the open run [start, end), hashed. */
	uint64_t k;
	int open;
	uint64_t start, end;
	uint64_t lend; /* logical end of the data so far, from the data
			* offset */
	XXH3_state_t *cst, *mst; /* the run's hash, the member's */
	uint8_t *ubuf;           /* a deflated member, inflated */
	z_stream zs;
	int zs_init;
	uint64_t ra_end;     /* asked of the kernel up to here */
	uint64_t bytes_read; /* from the archive, for tests and reports */
	/* NULL, or where bytes read are added as they come: the progress
	 * of several runs at once, read by another thread. */
	atomic_uint_least64_t *progress;
};

/* Start reading the archive open as fd (size bytes) at path, its chunks
 * going to ip. @return 0 or -ENOMEM. */
int ip_run_open(struct ip_run *r, const char *path, int fd, uint64_t size,
		uint64_t cs, struct pk_inplace *ip, struct dlfs_err *err);
void ip_run_close(struct ip_run *r);

/* Bytes [off, off + n) of the archive (n <= IP_PEEK_MAX) at *p, valid
 * until the next call on r. @return 0, or -EUCLEAN when the archive
 * ends first (err names it and the offset), or -errno. */
int ip_peek(struct ip_run *r, uint64_t off, size_t n, const uint8_t **p,
	    struct dlfs_err *err);

/* A stored member's bytes [off, off + size), after every byte already
 * handed over: placed and hashed. *loc is its offset in the container
 * (DLFS_DATA_OFFSET included), *xxh3 its content hash. @return 0 or as
 * ip_peek. */
int ip_stored(struct ip_run *r, uint64_t off, uint64_t size, uint64_t *loc,
	      uint64_t *xxh3, struct dlfs_err *err);

/* A deflated member: csize bytes of raw deflate at off that inflate to
 * usize bytes (at most the chunk size), a chunk of its own. @return 0,
 * -EFBIG (too large for a chunk), -EUCLEAN (does not inflate to usize),
 * or as ip_peek; err names where. */
int ip_deflated(struct ip_run *r, uint64_t off, uint64_t csize,
		uint64_t usize, uint64_t *loc, uint64_t *xxh3,
		struct dlfs_err *err);

/* The end of the archive: the open run closed. *data_size is the
 * logical size of its chunks, *n_chunks their number. */
int ip_run_end(struct ip_run *r, uint64_t *data_size, uint64_t *n_chunks,
	       struct dlfs_err *err);

#endif
