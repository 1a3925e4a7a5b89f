/* Encoding of the on-disk records: see include/dlfs/format.h. */
#include "dlfs/format.h"

#include <stdio.h>
#include <string.h>
#include <xxhash.h>

#include "bytes.h"

void dlfs_put_le32(uint8_t *p, uint32_t v) { bytes_put_le32(p, v); }
uint32_t dlfs_get_le32(const uint8_t *p) { return bytes_get_le32(p); }
void dlfs_put_le64(uint8_t *p, uint64_t v) { bytes_put_le64(p, v); }
uint64_t dlfs_get_le64(const uint8_t *p) { return bytes_get_le64(p); }
void dlfs_put_be32(uint8_t *p, uint32_t v) { bytes_put_be32(p, v); }
uint32_t dlfs_get_be32(const uint8_t *p) { return bytes_get_be32(p); }
void dlfs_put_be64(uint8_t *p, uint64_t v) { bytes_put_be64(p, v); }
uint64_t dlfs_get_be64(const uint8_t *p) { return bytes_get_be64(p); }

/*
 * A cursor over a record buffer keeps each codec a flat list of fields in
 * declaration order, which is the documented byte layout.
 */
struct cur {
	uint8_t *w;
	const uint8_t *r;
};

static void w32(struct cur *c, uint32_t v) { bytes_put_le32(c->w, v); c->w += 4; }
static void w64(struct cur *c, uint64_t v) { bytes_put_le64(c->w, v); c->w += 8; }
static void wby(struct cur *c, const uint8_t *b, size_t n) { memcpy(c->w, b, n); c->w += n; }
static uint32_t r32(struct cur *c) { uint32_t v = bytes_get_le32(c->r); c->r += 4; return v; }
static uint64_t r64(struct cur *c) { uint64_t v = bytes_get_le64(c->r); c->r += 8; return v; }
static void rby(struct cur *c, uint8_t *b, size_t n) { memcpy(b, c->r, n); c->r += n; }

void dlfs_super_encode(const struct dlfs_super_rec *r, uint8_t *out)
{
	struct cur c = {.w = out};
	w32(&c, r->format_major);
	w32(&c, r->format_minor);
	wby(&c, r->dataset_id, DLFS_ID_SIZE);
	w64(&c, r->chunk_size);
	w64(&c, r->container_size);
	w64(&c, r->align);
	w64(&c, r->n_inodes);
	w64(&c, r->n_dirs);
	w64(&c, r->n_symlinks);
	w64(&c, r->n_files);
	w64(&c, r->first_file_ino);
	w64(&c, r->n_containers);
	w64(&c, r->total_file_bytes);
	w64(&c, (uint64_t)r->max_mtime_sec);
}

void dlfs_super_decode(const uint8_t *in, struct dlfs_super_rec *r)
{
	struct cur c = {.r = in};
	r->format_major = r32(&c);
	r->format_minor = r32(&c);
	rby(&c, r->dataset_id, DLFS_ID_SIZE);
	r->chunk_size = r64(&c);
	r->container_size = r64(&c);
	r->align = r64(&c);
	r->n_inodes = r64(&c);
	r->n_dirs = r64(&c);
	r->n_symlinks = r64(&c);
	r->n_files = r64(&c);
	r->first_file_ino = r64(&c);
	r->n_containers = r64(&c);
	r->total_file_bytes = r64(&c);
	r->max_mtime_sec = (int64_t)r64(&c);
}

void dlfs_inode_encode(const struct dlfs_inode_rec *r, uint8_t *out)
{
	struct cur c = {.w = out};
	w32(&c, r->mode);
	w32(&c, r->mtime_nsec);
	w64(&c, (uint64_t)r->mtime_sec);
	w64(&c, r->size);
	w64(&c, r->loc);
	w64(&c, r->xxh3);
}

void dlfs_inode_decode(const uint8_t *in, struct dlfs_inode_rec *r)
{
	struct cur c = {.r = in};
	r->mode = r32(&c);
	r->mtime_nsec = r32(&c);
	r->mtime_sec = (int64_t)r64(&c);
	r->size = r64(&c);
	r->loc = r64(&c);
	r->xxh3 = r64(&c);
}

void dlfs_chunk_encode(const struct dlfs_chunk_rec *r, uint8_t *out)
{
	struct cur c = {.w = out};
	w64(&c, r->xxh3);
	w32(&c, r->length);
	w32(&c, r->reserved);
}

void dlfs_chunk_decode(const uint8_t *in, struct dlfs_chunk_rec *r)
{
	struct cur c = {.r = in};
	r->xxh3 = r64(&c);
	r->length = r32(&c);
	r->reserved = r32(&c);
}

void dlfs_container_rec_encode(const struct dlfs_container_rec *r,
			       uint8_t *out)
{
	struct cur c = {.w = out};
	w64(&c, r->file_size);
	w64(&c, r->data_size);
	w64(&c, r->n_chunks);
	w64(&c, r->n_files);
	w64(&c, r->first_ino);
	w64(&c, r->footer_xxh3);
}

void dlfs_container_rec_decode(const uint8_t *in, struct dlfs_container_rec *r)
{
	struct cur c = {.r = in};
	r->file_size = r64(&c);
	r->data_size = r64(&c);
	r->n_chunks = r64(&c);
	r->n_files = r64(&c);
	r->first_ino = r64(&c);
	r->footer_xxh3 = r64(&c);
}

void dlfs_header_encode(struct dlfs_container_header *r, uint8_t *out)
{
	struct cur c = {.w = out};
	wby(&c, r->magic, 8);
	w32(&c, r->format_major);
	w32(&c, r->format_minor);
	w32(&c, r->header_size);
	w32(&c, r->container);
	wby(&c, r->dataset_id, DLFS_ID_SIZE);
	w64(&c, r->chunk_size);
	w64(&c, r->data_offset);
	w64(&c, r->data_size);
	r->header_xxh3 = XXH3_64bits(out, (size_t)(c.w - out));
	w64(&c, r->header_xxh3);
}

void dlfs_header_decode(const uint8_t *in, struct dlfs_container_header *r)
{
	struct cur c = {.r = in};
	rby(&c, r->magic, 8);
	r->format_major = r32(&c);
	r->format_minor = r32(&c);
	r->header_size = r32(&c);
	r->container = r32(&c);
	rby(&c, r->dataset_id, DLFS_ID_SIZE);
	r->chunk_size = r64(&c);
	r->data_offset = r64(&c);
	r->data_size = r64(&c);
	r->header_xxh3 = r64(&c);
}

void dlfs_seal_encode(struct dlfs_seal_rec *r, uint8_t *out)
{
	struct cur c = {.w = out};
	wby(&c, r->magic, 8);
	w32(&c, r->format_major);
	w32(&c, r->format_minor);
	wby(&c, r->dataset_id, DLFS_ID_SIZE);
	w64(&c, r->index_size);
	wby(&c, r->index_xxh128, 16);
	r->seal_xxh3 = XXH3_64bits(out, (size_t)(c.w - out));
	w64(&c, r->seal_xxh3);
}

void dlfs_seal_decode(const uint8_t *in, struct dlfs_seal_rec *r)
{
	struct cur c = {.r = in};
	rby(&c, r->magic, 8);
	r->format_major = r32(&c);
	r->format_minor = r32(&c);
	rby(&c, r->dataset_id, DLFS_ID_SIZE);
	r->index_size = r64(&c);
	rby(&c, r->index_xxh128, 16);
	r->seal_xxh3 = r64(&c);
}

void dlfs_footer_encode(struct dlfs_container_footer *r, uint8_t *out)
{
	struct cur c = {.w = out};
	wby(&c, r->magic, 8);
	wby(&c, r->dataset_id, DLFS_ID_SIZE);
	w32(&c, r->container);
	w32(&c, r->reserved);
	w64(&c, r->trailer_offset);
	w64(&c, r->trailer_size);
	w64(&c, r->n_records);
	w64(&c, r->trailer_xxh3);
	r->footer_xxh3 = XXH3_64bits(out, (size_t)(c.w - out));
	w64(&c, r->footer_xxh3);
}

void dlfs_footer_decode(const uint8_t *in, struct dlfs_container_footer *r)
{
	struct cur c = {.r = in};
	rby(&c, r->magic, 8);
	rby(&c, r->dataset_id, DLFS_ID_SIZE);
	r->container = r32(&c);
	r->reserved = r32(&c);
	r->trailer_offset = r64(&c);
	r->trailer_size = r64(&c);
	r->n_records = r64(&c);
	r->trailer_xxh3 = r64(&c);
	r->footer_xxh3 = r64(&c);
}

void dlfs_trailer_rec_encode(const struct dlfs_trailer_rec *r, uint8_t *out)
{
	struct cur c = {.w = out};
	w32(&c, r->mode);
	w32(&c, r->mtime_nsec);
	w64(&c, (uint64_t)r->mtime_sec);
	w64(&c, r->size);
	w64(&c, r->offset);
	w64(&c, r->xxh3);
	w32(&c, r->path_len);
	w32(&c, r->reserved);
}

void dlfs_trailer_rec_decode(const uint8_t *in, struct dlfs_trailer_rec *r)
{
	struct cur c = {.r = in};
	r->mode = r32(&c);
	r->mtime_nsec = r32(&c);
	r->mtime_sec = (int64_t)r64(&c);
	r->size = r64(&c);
	r->offset = r64(&c);
	r->xxh3 = r64(&c);
	r->path_len = r32(&c);
	r->reserved = r32(&c);
}

void dlfs_container_name(uint32_t n, char *buf)
{
	snprintf(buf, DLFS_CONTAINER_NAME_MAX, "%06u%s", n,
		 DLFS_CONTAINER_SUFFIX);
}
