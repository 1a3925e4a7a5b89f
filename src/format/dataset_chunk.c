/*
 * A dataset's chunks read and checked (include/dlfs/dataset.h,
 * dlfs_chunk_read and the decoder; ds_priv.h): raw, zstd or deflate, from
 * a container or an in-place archive; and logical reads through them.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>
#include <zlib.h>
#include <zstd.h>

#include "ds_priv.h"
#include "records.h"
#include "util.h"

int dlfs_file_pread(struct dlfs_ds *ds, const struct dlfs_inode *in,
		    void *buf, size_t len, uint64_t off, size_t *got,
		    struct dlfs_err *err)
{
	*got = 0;
	if (S_ISDIR(in->mode))
		return dlfs_err_set(err, -EISDIR, "inode %llu is a directory",
				    (unsigned long long)in->ino);
	if (!S_ISREG(in->mode))
		return dlfs_err_set(err, -EINVAL,
				    "inode %llu is not a regular file",
				    (unsigned long long)in->ino);
	if (off >= in->size || len == 0)
		return 0;
	if (len > in->size - off)
		len = (size_t)(in->size - off);
	int ret = dlfs_ds_compressed(ds)
			  ? dlfs_ds_logical_read(ds, in->container, in->offset + off,
					 len, buf, err)
			  : dlfs_ds_pread(ds, in->container, buf, len,
					  in->offset + off, err);
	if (ret)
		return ret;
	*got = len;
	return 0;
}

int dlfs_ds_read_range(struct dlfs_ds *ds, uint32_t c, uint64_t off,
		       size_t len, void *buf, size_t cap, size_t *head,
		       struct dlfs_err *err)
{
	int fd;
	int ret = dlfs_ds_container_fd(ds, c, &fd, err);
	if (ret)
		return ret;
	/* The data region is padded to 4 KiB: read whole pages. */
	uint64_t a0 = off & ~UINT64_C(4095);
	size_t want = (size_t)(dlfs_roundup(off + len, 4096) - a0);
	if (want > cap)
		return dlfs_err_set(err, -EINVAL,
				    "%s: read of %zu bytes at offset %llu "
				    "into %zu",
				    ds->path, len, (unsigned long long)off,
				    cap);
	if (dlfs_ds_compressed(ds)) {
		/* Stored bytes are not at their logical place: through the
		 * chunks, into the same spot of buf. */
		ret = dlfs_ds_logical_read(ds, c, off, len, (uint8_t *)buf + (off - a0),
				   err);
		if (!ret)
			*head = (size_t)(off - a0);
		return ret;
	}
	if ((ret = dlfs_ds_raw_past_cut(ds, c, off, len, err)))
		return ret;
	char name[DLFS_CPATH_MAX];
	const struct dlfs_container_slot *slot = &ds->containers[c];
	/* Pages that pass the end of a cut container are read buffered:
	 * after the short read there, O_DIRECT may refuse the unaligned
	 * rest (ext4 answers 0, not every file system may). */
	int direct = slot->dfd_direct && (uintptr_t)buf % 4096 == 0 &&
		     a0 + want <= slot->size;
	if (slot->dfd >= 0 && (direct || !slot->dfd_direct))
		fd = slot->dfd;
	ssize_t n = dlfs_pread_full(fd, buf, want, a0);
	if (n < 0) {
		dlfs_ds_cpath(ds, c, name, sizeof(name));
		return dlfs_err_sys(err, (int)n, "%s: read at offset %llu",
				    name, (unsigned long long)a0);
	}
	if ((uint64_t)n < off + len - a0) {
		dlfs_ds_cpath(ds, c, name, sizeof(name));
		return dlfs_err_set(err, -DLFS_ECORRUPT,
				    "%s: truncated: short read at offset "
				    "%llu",
				    name, (unsigned long long)a0);
	}
	if (!direct)
		posix_fadvise(fd, (off_t)a0, (off_t)want,
			      POSIX_FADV_DONTNEED);
	*head = (size_t)(off - a0);
	return 0;
}

static int pages_read(struct dlfs_ds *ds, uint32_t c, uint64_t k,
		      uint64_t at, size_t len, int at_start, void *buf,
		      size_t cap, size_t *head, uint64_t *got,
		      struct dlfs_err *err);

static int inflate_alone(struct dlfs_ds *ds, uint32_t c, uint64_t k,
			 const struct dlfs_chunk_rec *cr, void *buf,
			 size_t cap, struct dlfs_err *err);

int dlfs_file_read_alone(struct dlfs_ds *ds, struct dlfs_txn *txn,
			 const struct dlfs_inode *in, void *buf, size_t cap,
			 size_t *head, uint64_t *pfs_bytes,
			 struct dlfs_err *err)
{
	const uint64_t cs = ds->ix.info.super.chunk_size;
	const uint64_t features = ds->ix.info.super.features;
	size_t len = (size_t)in->size;
	uint64_t at = in->offset;
	struct dlfs_chunk_rec cr;
	int ret;
	*pfs_bytes = 0;
	if (features & DLFS_FEATURE(COMPRESSED))
		return dlfs_err_set(err, -EINVAL,
				    "%s: a compressed dataset's file cannot "
				    "be read alone (inode %llu)",
				    ds->path, (unsigned long long)in->ino);
	if (features & DLFS_FEATURE(IN_PLACE)) {
		uint64_t k = dlfs_chunk_at(cs, in->offset);
		uint64_t cstart = dlfs_chunk_start(cs, k);
		if ((ret = dlfs_chunk_get(txn, in->container, k, &cr, err)))
			return ret;
		if (in->offset < cstart ||
		    in->offset + len > cstart + cr.length)
			return dlfs_err_set(err, -DLFS_ECORRUPT,
					    "%s/index: inode %llu passes the "
					    "end of chunk %llu of container %u",
					    ds->path,
					    (unsigned long long)in->ino,
					    (unsigned long long)k, in->container);
		if (cr.flags) {
			/* A deflated member: its chunk is the file. */
			*head = 0;
			if (in->offset != cstart || len != cr.length)
				return dlfs_err_set(
					err, -DLFS_ECORRUPT,
					"%s/index: inode %llu is not the "
					"whole of its deflated chunk %llu "
					"of container %u",
					ds->path, (unsigned long long)in->ino,
					(unsigned long long)k, in->container);
			ret = inflate_alone(ds, in->container, k, &cr, buf,
					    cap, err);
			if (!ret)
				*pfs_bytes = cr.stored_length;
			return ret;
		}
		/* A member stored as it is: its own bytes, in the archive. */
		at = cr.stored_offset + (in->offset - cstart);
		return pages_read(ds, in->container, k, at, len, 0, buf, cap,
				  head, pfs_bytes, err);
	}
	ret = dlfs_ds_read_range(ds, in->container, at, len, buf, cap, head,
				 err);
	if (!ret)
		*pfs_bytes = dlfs_roundup(at + len, 4096) - (at & ~UINT64_C(4095));
	return ret;
}

int dlfs_chunk_read(struct dlfs_ds *ds, struct dlfs_txn *txn, uint32_t c,
		    uint64_t k, void *buf, size_t cap, size_t *len,
		    struct dlfs_err *err)
{
	struct dlfs_chunk_rec cr;
	*len = 0;
	int ret = dlfs_chunk_get(txn, c, k, &cr, err);
	if (ret)
		return ret;
	return dlfs_chunk_read_rec(ds, c, k, &cr, NULL, buf, cap, len, err);
}

int dlfs_chunk_read_rec(struct dlfs_ds *ds, uint32_t c, uint64_t k,
			const struct dlfs_chunk_rec *cr,
			struct dlfs_decoder *dec, void *buf, size_t cap,
			size_t *len, struct dlfs_err *err)
{
	size_t head;
	int ret;
	*len = 0;
	uint64_t cs = ds->ix.info.super.chunk_size;
	if (cr->length > cs || cr->length > cap)
		return dlfs_err_set(err, -DLFS_ECORRUPT,
				    "%s/index: chunk %llu of container %u is "
				    "%u bytes, larger than the chunk size",
				    ds->path, (unsigned long long)k, c,
				    cr->length);
	if (dlfs_ds_compressed(ds)) {
		ret = dlfs_ds_chunk_logical(ds, c, k, cr, dec, buf, cap, err);
		if (!ret)
			*len = cr->length;
		return ret;
	}
	uint64_t off = dlfs_chunk_start(cs, k);
	ret = dlfs_ds_read_range(ds, c, off, cr->length, buf, cap, &head, err);
	if (ret)
		return ret;
	if (XXH3_64bits(buf, cr->length) != cr->xxh3) {
		char name[DLFS_CPATH_MAX];
		dlfs_ds_cpath(ds, c, name, sizeof(name));
		*len = cr->length; /* the bytes are there, just not to trust */
		return dlfs_err_set(err, -DLFS_ECHECKSUM,
				    "%s: chunk %llu at offset %llu: checksum "
				    "mismatch",
				    name, (unsigned long long)k,
				    (unsigned long long)off);
	}
	*len = cr->length;
	return 0;
}

/* A zstd context and room for one chunk's stored bytes (a zstd chunk's
 * are shorter than the chunk: dlfs_chunk_rec_check). */
struct dlfs_decoder {
	ZSTD_DCtx *z;
	z_stream zs;  /* raw inflate, for an in-place zip's deflated members */
	int zs_init;
	uint8_t *stored;
	size_t cap;
};

int dlfs_decoder_new(const struct dlfs_ds *ds, struct dlfs_decoder **out,
		     struct dlfs_err *err)
{
	struct dlfs_decoder *d = calloc(1, sizeof(*d));
	*out = NULL;
	if (!d)
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	d->cap = (size_t)ds->ix.info.super.chunk_size;
	/* A deflated member may take a little more room than its bytes
	 * (dlfs-pack keeps it under this). */
	if (ds->ix.arc)
		d->cap += DLFS_DEFLATE_SLACK;
	d->z = ZSTD_createDCtx();
	d->zs_init = inflateInit2(&d->zs, -15) == Z_OK;
	if (!d->z || !d->zs_init || posix_memalign((void **)&d->stored, 4096, d->cap)) {
		dlfs_decoder_free(d);
		return dlfs_err_set(err, -ENOMEM,
				    "out of memory for a chunk decoder");
	}
	*out = d;
	return 0;
}

void dlfs_decoder_free(struct dlfs_decoder *d)
{
	if (!d)
		return;
	ZSTD_freeDCtx(d->z);
	if (d->zs_init)
		inflateEnd(&d->zs);
	free(d->stored);
	free(d);
}

/*
 * Bytes [at, at + len) of container c (stored bytes of its chunk k) into
 * buf (cap bytes, 4 KiB aligned). When the whole blocks around them fit
 * in cap, those blocks are read: with O_DIRECT where the container has
 * it, blocks of its O_DIRECT alignment (an archive's bytes start
 * anywhere, its blocks do not), else pages; the bytes are then at buf +
 * *head. Else, or with at_start when at is not on a block, they are read
 * exactly, at buf (*head = 0), buffered through the fd with no
 * read-ahead, the pages dropped after. *got: the bytes read.
 */
static int pages_read(struct dlfs_ds *ds, uint32_t c, uint64_t k,
		      uint64_t at, size_t len, int at_start, void *buf,
		      size_t cap, size_t *head, uint64_t *got,
		      struct dlfs_err *err)
{
	int fd;
	char name[DLFS_CPATH_MAX];
	int ret = dlfs_ds_container_fd(ds, c, &fd, err);
	if (!ret)
		ret = dlfs_ds_past_cut(ds, c, k, at + len, err);
	if (ret)
		return ret;
	const struct dlfs_container_slot *slot = &ds->containers[c];
	const uint64_t unit = slot->dfd_direct ? slot->dio_align : 4096;
	uint64_t a0 = at & ~(unit - 1);
	size_t want = (size_t)(dlfs_roundup(at + len, unit) - a0);
	if (want > cap || (at_start && a0 != at)) {
		a0 = at;
		want = len;
	}
	if (want > cap)
		return dlfs_err_set(err, -EINVAL,
				    "%s: chunk %llu of container %u: %zu "
				    "stored bytes into %zu",
				    ds->path, (unsigned long long)k, c, len,
				    cap);
	/* As dlfs_ds_read_range: no O_DIRECT past the end of the file. */
	int direct = slot->dfd_direct && (uintptr_t)buf % 4096 == 0 &&
		     a0 % unit == 0 && want % unit == 0 &&
		     a0 + want <= slot->size;
	if (slot->dfd >= 0 && (direct || !slot->dfd_direct))
		fd = slot->dfd;
	else if (slot->rfd >= 0)
		fd = slot->rfd; /* unaligned: no O_DIRECT, no read-ahead */
	ssize_t n = dlfs_pread_full(fd, buf, want, a0);
	if (n < 0 || (uint64_t)n < at + len - a0) {
		dlfs_ds_cpath(ds, c, name, sizeof(name));
		if (n < 0)
			return dlfs_err_sys(err, (int)n,
					    "%s: read at offset %llu", name,
					    (unsigned long long)a0);
		return dlfs_err_set(err, -DLFS_ECORRUPT,
				    "%s: truncated: short read at offset "
				    "%llu",
				    name, (unsigned long long)a0);
	}
	if (!direct)
		posix_fadvise(fd, (off_t)a0, (off_t)want,
			      POSIX_FADV_DONTNEED);
	*head = (size_t)(at - a0);
	if (got)
		*got = want;
	return 0;
}

/* The stored bytes of chunk k of container c (record cr) into buf (cap
 * bytes, 4 KiB aligned), read the way chunks are (pages_read, at_start as
 * there) and checked against cr->xxh3: at buf + *head. */
static int stored_read(struct dlfs_ds *ds, uint32_t c, uint64_t k,
		       const struct dlfs_chunk_rec *cr, int at_start, void *buf,
		       size_t cap, size_t *head, struct dlfs_err *err)
{
	int ret = pages_read(ds, c, k, cr->stored_offset, cr->stored_length,
			     at_start, buf, cap, head, NULL, err);
	if (ret)
		return ret;
	if (XXH3_64bits((const uint8_t *)buf + *head, cr->stored_length) !=
	    cr->xxh3) {
		char name[DLFS_CPATH_MAX];
		dlfs_ds_cpath(ds, c, name, sizeof(name));
		return dlfs_err_set(err, -DLFS_ECHECKSUM,
				    "%s: chunk %llu at offset %llu: checksum "
				    "mismatch",
				    name, (unsigned long long)k,
				    (unsigned long long)cr->stored_offset);
	}
	return 0;
}

/* A deflated zip member's chunk (record cr, its stored bytes at src in
 * d->stored) into buf, checked against cr->sum. */
static int inflate_chunk(struct dlfs_ds *ds, uint32_t c, uint64_t k,
			 const struct dlfs_chunk_rec *cr, z_stream *zs,
			 uint8_t *src, void *buf, size_t cap,
			 struct dlfs_err *err)
{
	char name[DLFS_CPATH_MAX];
	const char *why = "wrong length";
	int rc = Z_DATA_ERROR;
	if (cr->length <= cap && inflateReset(zs) == Z_OK) {
		zs->next_in = src;
		zs->avail_in = cr->stored_length;
		zs->next_out = buf;
		zs->avail_out = cr->length;
		rc = inflate(zs, Z_FINISH);
		if (rc != Z_STREAM_END)
			why = zs->msg ? zs->msg : "cut short";
	}
	dlfs_ds_cpath(ds, c, name, sizeof(name));
	if (rc != Z_STREAM_END || zs->total_out != cr->length)
		return dlfs_err_set(err, -DLFS_ECORRUPT,
				    "%s: chunk %llu at offset %llu: does not "
				    "inflate to its %u bytes (%s)",
				    name, (unsigned long long)k,
				    (unsigned long long)cr->stored_offset,
				    cr->length, why);
	if (XXH3_64bits(buf, cr->length) != cr->sum)
		return dlfs_err_set(err, -DLFS_ECHECKSUM,
				    "%s: chunk %llu at offset %llu: checksum "
				    "mismatch after inflating",
				    name, (unsigned long long)k,
				    (unsigned long long)cr->stored_offset);
	return 0;
}

/* A deflated zip member's chunk k (record cr), read alone into buf: its
 * stored bytes into room their size (not a decoder's chunk-sized room,
 * and no zstd context: a file read alone is small and read once), then
 * inflated. */
static int inflate_alone(struct dlfs_ds *ds, uint32_t c, uint64_t k,
			 const struct dlfs_chunk_rec *cr, void *buf,
			 size_t cap, struct dlfs_err *err)
{
	/* The blocks around the stored bytes: at most a page each side. */
	size_t room = (size_t)dlfs_roundup((uint64_t)cr->stored_length + 8192,
					   4096);
	uint8_t *stored = NULL;
	size_t head;
	z_stream zs;
	memset(&zs, 0, sizeof(zs));
	if (posix_memalign((void **)&stored, 4096, room))
		return dlfs_err_set(err, -ENOMEM,
				    "out of memory for a deflated member of "
				    "%u bytes",
				    cr->stored_length);
	if (inflateInit2(&zs, -15) != Z_OK) {
		free(stored);
		return dlfs_err_set(err, -ENOMEM,
				    "out of memory for an inflate stream");
	}
	int ret = stored_read(ds, c, k, cr, 0, stored, room, &head, err);
	if (!ret)
		ret = inflate_chunk(ds, c, k, cr, &zs, stored + head, buf,
				    cap, err);
	inflateEnd(&zs);
	free(stored);
	return ret;
}

int dlfs_ds_chunk_logical(struct dlfs_ds *ds, uint32_t c, uint64_t k,
			  const struct dlfs_chunk_rec *cr,
			  struct dlfs_decoder *dec, void *buf, size_t cap,
			  struct dlfs_err *err)
{
	size_t head;
	int ret;
	/* A raw chunk goes to buf itself: a tar's chunk starts on a 512-byte
	 * block, which O_DIRECT takes on most local file systems; a zip's,
	 * or one on a file system that wants pages, is read exactly,
	 * buffered (O_DIRECT into a decoder's room and a copy measured no
	 * faster: that room is not in huge pages, so the PFS sees as many
	 * requests). */
	if (!(cr->flags & (DLFS_CHUNK_ZSTD | DLFS_CHUNK_DEFLATE)))
		return stored_read(ds, c, k, cr, 1, buf, cap, &head, err);
	struct dlfs_decoder *tmp = NULL;
	if (!dec && (ret = dlfs_decoder_new(ds, &tmp, err)))
		return ret;
	struct dlfs_decoder *d = dec ? dec : tmp;
	ret = stored_read(ds, c, k, cr, 0, d->stored, d->cap, &head, err);
	uint8_t *src = (uint8_t *)d->stored + head;
	if (!ret && (cr->flags & DLFS_CHUNK_DEFLATE)) {
		ret = inflate_chunk(ds, c, k, cr, &d->zs, src, buf, cap, err);
	} else if (!ret) {
		size_t n = cr->length > cap
				   ? 0
				   : ZSTD_decompressDCtx(d->z, buf, cr->length,
							 src,
							 cr->stored_length);
		char name[DLFS_CPATH_MAX];
		dlfs_ds_cpath(ds, c, name, sizeof(name));
		if (ZSTD_isError(n) || n != cr->length)
			ret = dlfs_err_set(
				err, -DLFS_ECORRUPT,
				"%s: chunk %llu at offset %llu: does not "
				"decompress to its %u bytes (%s)",
				name, (unsigned long long)k,
				(unsigned long long)cr->stored_offset,
				cr->length,
				ZSTD_isError(n) ? ZSTD_getErrorName(n)
						: "wrong length");
		else if (XXH3_64bits(buf, cr->length) != cr->sum)
			/* The stored bytes were right: a decoder fault. */
			ret = dlfs_err_set(
				err, -DLFS_ECHECKSUM,
				"%s: chunk %llu at offset %llu: checksum "
				"mismatch after decompression",
				name, (unsigned long long)k,
				(unsigned long long)cr->stored_offset);
	}
	dlfs_decoder_free(tmp);
	return ret;
}

/* Logical bytes [off, off + len) of container c's data stream into buf,
 * chunk by chunk (a compressed dataset's), each checked and decompressed
 * into a scratch chunk. */
int dlfs_ds_logical_read(struct dlfs_ds *ds, uint32_t c, uint64_t off,
			size_t len, void *buf, struct dlfs_err *err)
{
	const uint64_t cs = ds->ix.info.super.chunk_size;
	struct dlfs_txn *txn = NULL;
	struct dlfs_decoder *dec = NULL;
	void *chunk = NULL;
	int ret = 0;
	if (!len)
		return 0;
	if (off < DLFS_DATA_OFFSET(cs))
		return dlfs_err_set(err, -EINVAL,
				    "%s: read at offset %llu before the data",
				    ds->path, (unsigned long long)off);
	if (posix_memalign(&chunk, 4096, cs))
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	ret = dlfs_txn_begin(ds, &txn, err);
	if (!ret)
		ret = dlfs_decoder_new(ds, &dec, err);
	uint64_t k0 = dlfs_chunk_at(cs, off), k1 = dlfs_chunk_at(cs, off + len - 1);
	for (uint64_t k = k0; !ret && k <= k1; k++) {
		struct dlfs_chunk_rec cr;
		ret = dlfs_chunk_get(txn, c, k, &cr, err);
		if (!ret)
			ret = dlfs_ds_chunk_logical(ds, c, k, &cr, dec, chunk,
						    cs, err);
		if (ret)
			break;
		uint64_t cstart = dlfs_chunk_start(cs, k);
		uint64_t from = off > cstart ? off : cstart;
		uint64_t to = off + len < cstart + cr.length ? off + len
							    : cstart + cr.length;
		if (to <= from || (k == k1 && to != off + len)) {
			ret = dlfs_err_set(err, -DLFS_ECORRUPT,
					   "%s: chunk %llu of container %u "
					   "ends before the bytes asked",
					   ds->path, (unsigned long long)k, c);
			break;
		}
		memcpy((uint8_t *)buf + (from - off),
		       (uint8_t *)chunk + (from - cstart), (size_t)(to - from));
	}
	if (txn)
		dlfs_txn_end(txn);
	dlfs_decoder_free(dec);
	free(chunk);
	return ret;
}
