/* Encoding of the on-disk records: see include/dlfs/format.h. */
#include "dlfs/format.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <xxhash.h>

#include "bytes.h"
#include "dlfs/err.h"

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

size_t dlfs_super_encode(const struct dlfs_super_rec *r, uint8_t *out)
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
	if (r->format_minor >= 1)
		w64(&c, r->features);
	return (size_t)(c.w - out);
}

int dlfs_super_decode(const uint8_t *in, size_t len, struct dlfs_super_rec *r)
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
	/* Format 1.0 has no features, whatever follows its 112 bytes: a
	 * minor version only ever adds. */
	r->features = 0;
	if (r->format_minor == 0)
		return 0;
	if (len < DLFS_SUPER_REC_SIZE)
		return -DLFS_ECORRUPT;
	r->features = r64(&c);
	return 0;
}

void dlfs_inode_encode(const struct dlfs_inode_rec *r, uint64_t features,
		       uint8_t *out)
{
	struct cur c = {.w = out};
	w32(&c, r->mode);
	w32(&c, r->mtime_nsec);
	w64(&c, (uint64_t)r->mtime_sec);
	w64(&c, r->size);
	w64(&c, r->loc);
	w64(&c, r->xxh3);
	if (features & DLFS_FEATURE(PATH_BOUND))
		w64(&c, r->path_hash);
}

void dlfs_inode_decode(const uint8_t *in, uint64_t features,
		       struct dlfs_inode_rec *r)
{
	struct cur c = {.r = in};
	r->mode = r32(&c);
	r->mtime_nsec = r32(&c);
	r->mtime_sec = (int64_t)r64(&c);
	r->size = r64(&c);
	r->loc = r64(&c);
	r->xxh3 = r64(&c);
	r->path_hash = features & DLFS_FEATURE(PATH_BOUND) ? r64(&c) : 0;
}

uint64_t dlfs_path_hash(uint64_t parent, const char *name, size_t len)
{
	/* Names are at most DLFS_NAME_MAX bytes: one buffer, one call. A
	 * longer one (never a valid entry) is hashed piece by piece. */
	uint8_t b[8 + DLFS_NAME_MAX];
	bytes_put_le64(b, parent);
	if (len <= DLFS_NAME_MAX) {
		memcpy(b + 8, name, len);
		return XXH3_64bits(b, 8 + len);
	}
	XXH3_state_t *st = XXH3_createState();
	if (!st)
		return 0; /* matches no bound record but the root's */
	XXH3_64bits_reset(st);
	XXH3_64bits_update(st, b, 8);
	XXH3_64bits_update(st, name, len);
	uint64_t h = XXH3_64bits_digest(st);
	XXH3_freeState(st);
	return h;
}

const char *dlfs_feature_name(unsigned bit)
{
#define DLFS_FEATURE_CASE_(b, id, name) \
	case b:                          \
		return name;
	switch (bit) {
		DLFS_FEATURES(DLFS_FEATURE_CASE_)
	default:
		return NULL;
	}
#undef DLFS_FEATURE_CASE_
}

void dlfs_chunk_encode(const struct dlfs_chunk_rec *r, uint64_t features,
		       uint8_t *out)
{
	struct cur c = {.w = out};
	w64(&c, r->xxh3);
	w32(&c, r->length);
	if (!dlfs_stored_apart(features)) {
		w32(&c, 0);
		return;
	}
	w32(&c, r->stored_length);
	w64(&c, r->stored_offset);
	w32(&c, r->flags);
	w32(&c, r->reserved);
	w64(&c, r->sum);
}

void dlfs_chunk_decode(const uint8_t *in, uint64_t features,
		       struct dlfs_chunk_rec *r)
{
	struct cur c = {.r = in};
	r->xxh3 = r64(&c);
	r->length = r32(&c);
	if (!dlfs_stored_apart(features)) {
		r->reserved = r32(&c);
		r->stored_length = r->length;
		r->stored_offset = 0;
		r->flags = 0;
		r->sum = r->xxh3;
		return;
	}
	r->stored_length = r32(&c);
	r->stored_offset = r64(&c);
	r->flags = r32(&c);
	r->reserved = r32(&c);
	r->sum = r64(&c);
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

void dlfs_archive_rec_encode(const struct dlfs_archive_rec *r, uint8_t *out)
{
	struct cur c = {.w = out};
	w64(&c, r->size);
	w64(&c, (uint64_t)r->mtime_sec);
	w32(&c, r->mtime_nsec);
	w32(&c, r->kind);
	w32(&c, r->path_len);
	w32(&c, r->reserved);
}

void dlfs_archive_rec_decode(const uint8_t *in, struct dlfs_archive_rec *r)
{
	struct cur c = {.r = in};
	r->size = r64(&c);
	r->mtime_sec = (int64_t)r64(&c);
	r->mtime_nsec = r32(&c);
	r->kind = r32(&c);
	r->path_len = r32(&c);
	r->reserved = r32(&c);
}
