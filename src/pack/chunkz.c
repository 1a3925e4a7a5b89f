/*
 * One chunk's compression (chunkz.h): zstd at the pack's level, kept
 * only when it saves enough of the chunk's stored size (pk_zsave_min).
 */
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>
#include <zstd_errors.h>

#include "chunkz.h"
#include "dlfs/format.h"
#include "util.h"

int pk_zctx_init(struct pk_zctx *z, int level, uint64_t cs,
		 struct dlfs_err *err)
{
	*z = (struct pk_zctx){.cs = cs};
	z->cc = ZSTD_createCCtx();
	z->buf = malloc(cs);
	if (!z->cc || !z->buf)
		return dlfs_err_set(err, -ENOMEM,
				    "out of memory for a zstd context and "
				    "%llu bytes",
				    (unsigned long long)cs);
	size_t r = ZSTD_CCtx_setParameter(z->cc, ZSTD_c_compressionLevel,
					  level);
	/* No checksum in the frame: the record's covers the stored bytes,
	 * and the files' their logical ones. */
	if (!ZSTD_isError(r))
		r = ZSTD_CCtx_setParameter(z->cc, ZSTD_c_checksumFlag, 0);
	if (ZSTD_isError(r))
		return dlfs_err_set(err, -EINVAL, "zstd level %d: %s", level,
				    ZSTD_getErrorName(r));
	return 0;
}

void pk_zctx_free(struct pk_zctx *z)
{
	ZSTD_freeCCtx(z->cc);
	free(z->buf);
	*z = (struct pk_zctx){0};
}

uint64_t pk_zsave_min(uint64_t room)
{
	uint64_t s = dlfs_roundup(room / 32, 4096);
	return s > 4096 ? s : 4096;
}

int pk_zchunk(struct pk_zctx *z, uint8_t *b, uint64_t len,
	      struct pk_zchunk *r, struct dlfs_err *err)
{
	uint64_t room = dlfs_roundup(len, 4096);
	*r = (struct pk_zchunk){
		.sum = XXH3_64bits(b, len),
		.stored_length = (uint32_t)len,
	};
	r->xxh3 = r->sum;
	uint64_t save = pk_zsave_min(room);
	if (room <= save)
		return 0; /* one page: nothing to save */
	/* Room for a frame that saves enough: zstd gives up
	 * (dstSize_tooSmall) when it cannot fit, and the chunk stays raw. */
	size_t n = ZSTD_compress2(z->cc, z->buf, room - save, b, len);
	if (ZSTD_isError(n)) {
		if (ZSTD_getErrorCode(n) == ZSTD_error_dstSize_tooSmall)
			return 0;
		return dlfs_err_set(err,
				    ZSTD_getErrorCode(n) ==
						    ZSTD_error_memory_allocation
					    ? -ENOMEM
					    : -EIO,
				    "zstd: %s", ZSTD_getErrorName(n));
	}
	uint64_t padded = dlfs_roundup(n, 4096);
	memcpy(b, z->buf, n);
	memset(b + n, 0, padded - n);
	r->xxh3 = XXH3_64bits(b, n);
	r->stored_length = (uint32_t)n;
	r->flags = DLFS_CHUNK_ZSTD;
	return 0;
}
