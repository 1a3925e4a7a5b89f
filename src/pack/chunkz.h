/*
 * One chunk's compression for dlfs-pack --compress (chunkz.c): the
 * stored form of a chunk under the feature `compressed` of
 * dlfs-format(5). Not installed.
 *
 * A struct pk_zctx belongs to one thread: a zstd context and a scratch
 * buffer of one chunk, both reused for every chunk it compresses, so a
 * pool of N compressing threads holds N of each and nothing more.
 * Compression of a chunk depends on its bytes and the level only, never
 * on which context did it or what that context did before: a pack's
 * output is the same whatever the number of threads.
 */
#ifndef DLFS_PACK_CHUNKZ_H
#define DLFS_PACK_CHUNKZ_H

#include <stdint.h>
#include <zstd.h>

#include "dlfs/err.h"

struct pk_zctx {
	ZSTD_CCtx *cc;
	uint8_t *buf; /* cs bytes */
	uint64_t cs;
};

/* A chunk's record fields as compression decides them (dlfs-format(5),
 * chunks): its stored bytes' and its logical bytes' XXH3-64, the stored
 * length and the flags (DLFS_CHUNK_ZSTD or 0: raw). */
struct pk_zchunk {
	uint64_t xxh3, sum;
	uint32_t stored_length, flags;
};

/*
 * A context for chunks of up to cs bytes at zstd level (1 to 22), with
 * no checksum in the frames (the chunk record has the stored bytes', the
 * files theirs). @return 0, -ENOMEM, or -EINVAL (the level) with err set.
 * On failure z is ready for pk_zctx_free.
 */
int pk_zctx_init(struct pk_zctx *z, int level, uint64_t cs,
		 struct dlfs_err *err);

/* Free z's context and buffer; z may be zeroed or half-initialised. */
void pk_zctx_free(struct pk_zctx *z);

/*
 * The bytes a frame must save for a chunk of room stored bytes (its
 * length rounded up to 4 KiB) to be stored compressed: a 32nd of them,
 * and at least one 4 KiB page, in whole pages. zstd shaves a percent or
 * so off JPEGs and other compressed data; that is not worth
 * decompressing each such chunk in every epoch that reads it.
 */
uint64_t pk_zsave_min(uint64_t room);

/*
 * Chunk b (len bytes, 0 < len <= cs, then zeros up to the next 4 KiB;
 * b has room for cs bytes), turned in place into its stored form: a
 * zstd frame followed by zeros up to the next 4 KiB when that saves at
 * least pk_zsave_min of the stored size, else left raw. r gets its
 * record fields. @return 0, or -ENOMEM / -EIO when zstd fails for any
 * other reason than the frame not fitting, with err "zstd: <its
 * error>" (the caller prefixes the chunk's name).
 */
int pk_zchunk(struct pk_zctx *z, uint8_t *b, uint64_t len,
	      struct pk_zchunk *r, struct dlfs_err *err);

#endif
