/*
 * Fuzz target "container": one container file checked as dlfs checks it.
 *
 * Input (fuzzlib.h): the superblock (FUZZ_META, key "super"), the
 * container's index record (FUZZ_CONTAINERS, key be32 c), the file
 * (FUZZ_FILE) and flags (FUZZ_FLAGS):
 *   bit 0  recompute the header checksum, the trailer checksum, the footer
 *          checksum and the record's copy of it, so that mutations reach
 *          the checks behind the checksums;
 *   bit 1  make the record's file_size the file's size;
 *   bits 2-7  walk the trailer in pieces of 1 + 13 * (flags >> 2) bytes
 *          (0: in one piece), as verify does with its 1 MiB reads.
 * Runs what dlfs_ds_container_fd and verify run, in their order: the
 * container table entry (dlfs_container_entry), the header
 * (dlfs_header_check), the size, the footer (dlfs_footer_check), the
 * trailer position (dlfs_trailer_pos_check) and the record walk
 * (dlfs_trailer_walk). Asserts what passing each promises its callers.
 */
#include <string.h>
#include <sys/stat.h>
#include <xxhash.h>

#include "fuzzlib.h"
#include "records.h"
#include "util.h"

static void fix_checksums(uint8_t *file, size_t len,
			  struct dlfs_container *x)
{
	struct dlfs_container_header h;
	if (len >= DLFS_CONTAINER_HEADER_REC_SIZE) {
		dlfs_header_decode(file, &h);
		dlfs_header_encode(&h, file);
	}
	if (len < DLFS_FOOTER_SIZE)
		return;
	uint8_t *fb = file + len - DLFS_FOOTER_SIZE;
	struct dlfs_container_footer f;
	dlfs_footer_decode(fb, &f);
	if (f.trailer_offset <= len - DLFS_FOOTER_SIZE &&
	    f.trailer_size <= len - DLFS_FOOTER_SIZE - f.trailer_offset)
		f.trailer_xxh3 = XXH3_64bits(file + f.trailer_offset,
					     (size_t)f.trailer_size);
	dlfs_footer_encode(&f, fb);
	x->footer_xxh3 = f.footer_xxh3;
}

/* The walk, as verify's check_trailer feeds it. */
static void walk(const uint8_t *tr, size_t size, size_t piece,
		 struct dlfs_trailer_walk *w, size_t *left)
{
	uint8_t *buf = malloc(piece + DLFS_TRAILER_REC_MAX);
	size_t have = 0;
	FUZZ_ASSERT(buf);
	for (size_t at = 0; at < size;) {
		size_t n = size - at < piece ? size - at : piece;
		memcpy(buf + have, tr + at, n);
		at += n;
		have += n;
		size_t used = dlfs_trailer_walk(w, buf, have);
		FUZZ_ASSERT(used <= have);
		/* What is carried is less than one record can be. */
		FUZZ_ASSERT(have - used < DLFS_TRAILER_REC_MAX);
		memmove(buf, buf + used, have - used);
		have -= used;
	}
	*left = have;
	free(buf);
}

/* Walk again record by record over the whole trailer and check what
 * dlfs_trailer_next promises about each record. */
static uint64_t count_records(const uint8_t *tr, size_t size, uint64_t cs,
			      uint64_t data_size)
{
	uint64_t n = 0;
	for (size_t at = 0; at < size;) {
		struct dlfs_trailer_item it;
		int r = dlfs_trailer_next(tr + at, size - at, cs, data_size,
					  &it);
		if (r)
			break;
		FUZZ_ASSERT(it.len >= DLFS_TRAILER_REC_SIZE &&
			    it.len <= size - at);
		FUZZ_ASSERT(it.path == tr + at + DLFS_TRAILER_REC_SIZE);
		FUZZ_ASSERT(DLFS_TRAILER_REC_SIZE + it.rec.path_len <= it.len);
		if (S_ISLNK(it.rec.mode))
			FUZZ_ASSERT(it.target + it.rec.size == tr + at + it.len);
		if (S_ISREG(it.rec.mode) && it.rec.size)
			FUZZ_ASSERT(it.rec.offset >= DLFS_DATA_OFFSET(cs) &&
				    it.rec.offset + it.rec.size <=
					    DLFS_DATA_OFFSET(cs) + data_size);
		at += it.len;
		n++;
	}
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_ent e[16];
	size_t n = fuzz_parse(data, size, e, 16);
	const struct fuzz_ent *sup =
		fuzz_find(e, n, FUZZ_META, DLFS_META_SUPER,
			  strlen(DLFS_META_SUPER));
	const struct fuzz_ent *rec = fuzz_find(e, n, FUZZ_CONTAINERS, NULL, 0);
	const struct fuzz_ent *fe = fuzz_find(e, n, FUZZ_FILE, NULL, 0);
	unsigned flags = fuzz_flags(e, n);
	if (!sup || sup->vlen < DLFS_SUPER_REC_SIZE_10 || !rec ||
	    rec->klen != 4 || !fe)
		return 0;

	struct dlfs_info info = {0};
	if (dlfs_super_decode(sup->val, sup->vlen, &info.super))
		return 0;
	const struct dlfs_super_rec *s = &info.super;
	if (s->format_major != DLFS_FORMAT_MAJOR || dlfs_super_check(s))
		return 0;
	dlfs_hex(s->dataset_id, DLFS_ID_SIZE, info.dataset_id_hex);
	const uint64_t cs = s->chunk_size;
	uint32_t c = dlfs_get_be32(rec->key);

	struct dlfs_container x;
	if (dlfs_container_entry(s, rec->val, rec->vlen, 0, &x)) {
		FUZZ_ASSERT(x.bad && !x.n_chunks && !x.data_size);
		return 0;
	}
	/* The entry promises a data region that fits its file (compressed
	 * chunks may take less room than their data). */
	FUZZ_ASSERT(x.n_chunks * cs >= x.data_size);
	FUZZ_ASSERT(x.n_chunks == 0 || (x.n_chunks - 1) * cs < x.data_size);
	FUZZ_ASSERT(x.file_size >=
		    DLFS_DATA_OFFSET(cs) +
			    (s->features & DLFS_FEATURE(COMPRESSED)
				     ? 0
				     : x.data_size) +
			    DLFS_FOOTER_SIZE);

	size_t len = fe->vlen;
	uint8_t *file = fuzz_dup(fe->val, len);
	if (flags & 2)
		x.file_size = len;
	if (flags & 1)
		fix_checksums(file, len, &x);

	size_t hn = len < DLFS_CONTAINER_HEADER_REC_SIZE
			    ? len
			    : DLFS_CONTAINER_HEADER_REC_SIZE;
	if (dlfs_header_check(file, hn, &info, c, &x, "fuzz.dlc", NULL))
		goto out;
	struct dlfs_container_header h;
	dlfs_header_decode(file, &h);
	FUZZ_ASSERT(h.container == c && h.chunk_size == cs &&
		    h.data_offset == DLFS_DATA_OFFSET(cs) &&
		    h.data_size == x.data_size);
	if (len != x.file_size)
		goto out;
	if (dlfs_footer_check(file + len - DLFS_FOOTER_SIZE, DLFS_FOOTER_SIZE,
			      &x, "fuzz.dlc", NULL))
		goto out;

	struct dlfs_container_footer f;
	dlfs_footer_decode(file + len - DLFS_FOOTER_SIZE, &f);
	if (dlfs_trailer_pos_check(&f, len))
		goto out;
	FUZZ_ASSERT(f.trailer_offset + f.trailer_size + DLFS_FOOTER_SIZE ==
		    len);
	const uint8_t *tr = file + f.trailer_offset;
	size_t piece = (flags >> 2) ? 1 + 13 * (flags >> 2) : f.trailer_size;
	struct dlfs_trailer_walk w = {.chunk_size = cs,
				      .data_size = x.data_size};
	size_t left;
	walk(tr, (size_t)f.trailer_size, piece ? piece : 1, &w, &left);
	/* In one piece or many, the walk counts the same records. */
	uint64_t nrec = count_records(tr, (size_t)f.trailer_size, cs,
				      x.data_size);
	FUZZ_ASSERT(w.n_records == nrec);
	if (!w.bad && !left)
		FUZZ_ASSERT(nrec == 0 || f.trailer_size >= DLFS_TRAILER_REC_SIZE);
out:
	free(file);
	return 0;
}
