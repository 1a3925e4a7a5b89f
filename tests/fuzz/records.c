/*
 * Fuzz target "records": the values of the index's LMDB databases,
 * decoded and checked as the index decodes and checks them, without LMDB.
 *
 * Input (fuzzlib.h): the superblock (FUZZ_META "super"), container
 * records (FUZZ_CONTAINERS, key be32 c), inode blocks (FUZZ_INODES, key
 * be64 block), directory entries (FUZZ_DIRENTS) and chunk records
 * (FUZZ_CHUNKS), as dlfs-pack stores them.
 *
 * Runs what dlfs_index_open and dlfs_stat/lookup/readdir run: the
 * superblock check, the container table (dlfs_container_entry, then
 * dlfs_container_locate), every inode of every block
 * (dlfs_inode_rec_check), every directory entry (dlfs_dirent_decode).
 * Asserts what passing promises callers: an inode or an entry has the
 * type its number gives, a file's chunks exist in its container and that
 * container lists it, a global chunk number maps back to itself, a
 * directory entry names an inode other than the root, with a name the
 * format allows (dlfs-format(5): 1 to 255 bytes, no '/' or NUL, not "."
 * or ".."; the FUSE layer and extract copy names into 256-byte buffers
 * and use them as path components), and leads to its inode only when that
 * record is bound to it (format 1.1, path_bound: the superblock's 120
 * bytes carry the features, inode records are 48 bytes). A superblock
 * with a feature bit this dlfs does not know is refused. A chunk record
 * that passes (dlfs_chunk_rec_check) has its container's length and, in
 * a compressed dataset (40-byte records), stored bytes inside the file,
 * and a raw chunk's two checksums equal.
 * Also that every fixed-size codec round-trips, in both layouts.
 */
#include <string.h>
#include <sys/stat.h>
#include <xxhash.h>

#include "fuzzlib.h"
#include "records.h"

#define MAX_ENTS 256
/* Tables larger than this are no more interesting, only slower. */
#define MAX_CONTAINERS 4096

static void roundtrip(const struct fuzz_ent *e)
{
	uint8_t out[DLFS_SUPER_REC_SIZE];
	switch (e->tag) {
	case FUZZ_CHUNKS:
		/* Both layouts: 16 bytes, and compressed's 40. */
		for (uint64_t f = 0; f <= DLFS_FEATURE(COMPRESSED);
		     f += DLFS_FEATURE(COMPRESSED)) {
			size_t rs = dlfs_chunk_rec_size(f);
			if (e->vlen < rs)
				continue;
			struct dlfs_chunk_rec r;
			dlfs_chunk_decode(e->val, f, &r);
			dlfs_chunk_encode(&r, f, out);
			/* 1.0's reserved u32 is written as 0. */
			FUZZ_ASSERT(!memcmp(out, e->val, f ? rs : 12));
			if (!f)
				FUZZ_ASSERT(r.stored_length == r.length &&
					    !r.stored_offset && !r.flags &&
					    r.sum == r.xxh3);
		}
		break;
	case FUZZ_CONTAINERS:
		if (e->vlen == DLFS_CONTAINER_REC_SIZE) {
			struct dlfs_container_rec r;
			dlfs_container_rec_decode(e->val, &r);
			dlfs_container_rec_encode(&r, out);
			FUZZ_ASSERT(!memcmp(out, e->val, e->vlen));
		}
		break;
	case FUZZ_INODES:
		/* Both layouts: 1.0's 40 bytes and path_bound's 48. */
		for (uint64_t f = 0; f <= DLFS_FEATURE(PATH_BOUND); f++) {
			size_t rs = dlfs_inode_rec_size(f);
			for (size_t at = 0; at + rs <= e->vlen; at += rs) {
				struct dlfs_inode_rec r;
				dlfs_inode_decode(e->val + at, f, &r);
				dlfs_inode_encode(&r, f, out);
				FUZZ_ASSERT(!memcmp(out, e->val + at, rs));
				if (!f)
					FUZZ_ASSERT(r.path_hash == 0);
			}
		}
		break;
	case FUZZ_META:
		if (e->vlen >= DLFS_SUPER_REC_SIZE_10 &&
		    e->vlen <= DLFS_SUPER_REC_SIZE) {
			struct dlfs_super_rec r;
			if (dlfs_super_decode(e->val, e->vlen, &r)) {
				/* Only a later minor needs the features. */
				FUZZ_ASSERT(r.format_minor >= 1 &&
					    e->vlen < DLFS_SUPER_REC_SIZE);
				break;
			}
			size_t n = dlfs_super_encode(&r, out);
			FUZZ_ASSERT(n == (r.format_minor ? DLFS_SUPER_REC_SIZE
							 : DLFS_SUPER_REC_SIZE_10));
			FUZZ_ASSERT(n <= e->vlen && !memcmp(out, e->val, n));
			if (!r.format_minor)
				FUZZ_ASSERT(r.features == 0);
		}
		break;
	}
}

static void check_table(const struct dlfs_super_rec *s,
			const struct dlfs_container *t, uint32_t nc,
			uint64_t total)
{
	const uint64_t cs = s->chunk_size;
	for (uint32_t c = 0; c < nc; c++) {
		const struct dlfs_container *x = &t[c];
		if (x->bad) {
			FUZZ_ASSERT(!x->n_chunks && !x->data_size &&
				    !x->n_files);
			continue;
		}
		FUZZ_ASSERT(x->n_chunks * cs >= x->data_size);
		FUZZ_ASSERT(x->n_chunks == 0 ||
			    (x->n_chunks - 1) * cs < x->data_size);
		/* Compressed chunks may take less room than their data. */
		FUZZ_ASSERT(x->file_size >=
			    DLFS_DATA_OFFSET(cs) +
				    (s->features & DLFS_FEATURE(COMPRESSED)
					     ? 0
					     : x->data_size) +
				    DLFS_FOOTER_SIZE);
		FUZZ_ASSERT(x->first_ino + x->n_files <= s->n_inodes + 1);
		/* Each chunk's global number maps back to it. */
		uint64_t ks[] = {0, x->n_chunks / 2, x->n_chunks - 1};
		for (size_t i = 0; x->n_chunks && i < 3; i++) {
			uint32_t cc;
			uint64_t k;
			FUZZ_ASSERT(dlfs_container_locate(
					    t, nc, total, x->first_chunk + ks[i],
					    &cc, &k) == 0);
			FUZZ_ASSERT(cc == c && k == ks[i]);
		}
	}
	uint32_t cc;
	uint64_t k;
	FUZZ_ASSERT(dlfs_container_locate(t, nc, total, total, &cc, &k) ==
		    -EINVAL);
}

static void check_inodes(const struct dlfs_super_rec *s,
			 const struct dlfs_container *t,
			 const struct fuzz_ent *e)
{
	const uint64_t cs = s->chunk_size;
	if (e->klen != 8)
		return;
	uint64_t block = dlfs_get_be64(e->key);
	for (uint64_t slot = 0; slot < DLFS_INODES_PER_BLOCK; slot++) {
		if (block > (UINT64_MAX - slot - 1) / DLFS_INODES_PER_BLOCK)
			return;
		uint64_t ino = block * DLFS_INODES_PER_BLOCK + slot + 1;
		if (ino > s->n_inodes)
			return;
		struct dlfs_inode in;
		struct dlfs_err err;
		if (dlfs_inode_rec_check(s, t, "fuzz", ino, e->val, e->vlen,
					 &in, &err)) {
			FUZZ_ASSERT(err.code == -EUCLEAN);
			continue;
		}
		FUZZ_ASSERT(in.ino == ino && in.target == NULL);
		FUZZ_ASSERT((in.mode & S_IFMT) == dlfs_ino_type(s, ino));
		if (S_ISREG(in.mode) && in.size == 0)
			FUZZ_ASSERT(in.xxh3 == XXH3_64bits(NULL, 0));
		if (!S_ISREG(in.mode) || in.size == 0)
			continue;
		FUZZ_ASSERT(in.container < s->n_containers);
		const struct dlfs_container *x = &t[in.container];
		FUZZ_ASSERT(!x->bad);
		FUZZ_ASSERT(ino >= x->first_ino && ino - x->first_ino < x->n_files);
		FUZZ_ASSERT(in.offset >= DLFS_DATA_OFFSET(cs));
		FUZZ_ASSERT(in.size <= x->data_size &&
			    in.offset + in.size <=
				    DLFS_DATA_OFFSET(cs) + x->data_size);
		/* The chunks of any byte range of the file exist. */
		uint64_t k0, k1;
		dlfs_file_chunks(cs, &in, 0, in.size, &k0, &k1);
		FUZZ_ASSERT(k0 <= k1 && k1 < x->n_chunks);
		FUZZ_ASSERT(dlfs_chunk_start(cs, k0) <= in.offset);
		FUZZ_ASSERT(dlfs_chunk_start(cs, k1) + cs >=
			    in.offset + in.size);
		dlfs_file_chunks(cs, &in, in.size - 1, 1, &k0, &k1);
		FUZZ_ASSERT(k0 == k1 && k1 < x->n_chunks);
	}
}

/* The inode record of ino, as dlfs_stat would decode it from the
 * input's block; 0 or -1 when there is none or it does not pass. */
static int inode_of(const struct dlfs_super_rec *s,
		    const struct dlfs_container *t, const struct fuzz_ent *e,
		    size_t n, uint64_t ino, struct dlfs_inode *in)
{
	uint8_t kb[8];
	struct dlfs_err err;
	dlfs_put_be64(kb, (ino - 1) / DLFS_INODES_PER_BLOCK);
	const struct fuzz_ent *b = fuzz_find(e, n, FUZZ_INODES, kb, 8);
	if (!b || dlfs_inode_rec_check(s, t, "fuzz", ino, b->val, b->vlen, in,
				       &err))
		return -1;
	return 0;
}

static void check_dirent(const struct dlfs_super_rec *s,
			 const struct dlfs_container *t,
			 const struct fuzz_ent *all, size_t n,
			 const struct fuzz_ent *e)
{
	struct dlfs_dirent d;
	if (dlfs_dirent_decode(s, e->key, e->klen, e->val, e->vlen, &d))
		return;
	/* An inode other than the root, of the type its number gives. */
	FUZZ_ASSERT(d.ino >= 2 && d.ino <= s->n_inodes);
	FUZZ_ASSERT(d.type == dlfs_ino_type(s, d.ino));
	FUZZ_ASSERT(d.name == (const char *)e->key + 8);
	FUZZ_ASSERT(d.name_len >= 1 && d.name_len <= DLFS_NAME_MAX);
	FUZZ_ASSERT(!memchr(d.name, '/', d.name_len) &&
		    !memchr(d.name, '\0', d.name_len));
	FUZZ_ASSERT(!(d.name_len == 1 && d.name[0] == '.') &&
		    !(d.name_len == 2 && !memcmp(d.name, "..", 2)));
	FUZZ_ASSERT(d.ino == (dlfs_get_le64(e->val) & DLFS_DIRENT_INO_MASK));
	/* As a FUSE readdir or extract would use it. */
	char name[DLFS_NAME_MAX + 1];
	memcpy(name, d.name, d.name_len);
	name[d.name_len] = '\0';
	FUZZ_ASSERT(strlen(name) == d.name_len);
	/* The entry's inode: followed only when its record is bound to this
	 * entry (path_bound), as dlfs_lookup and dlfs_stat_entry decide. */
	struct dlfs_inode in;
	if (inode_of(s, t, all, n, d.ino, &in))
		return;
	uint64_t parent = dlfs_get_be64(e->key);
	struct dlfs_err err;
	int r = dlfs_inode_bound_check(s, "fuzz", parent, d.name, d.name_len,
				       &in, &err);
	if (!(s->features & DLFS_FEATURE(PATH_BOUND))) {
		FUZZ_ASSERT(r == 0 && in.path_hash == 0);
		return;
	}
	FUZZ_ASSERT(r == (in.path_hash == dlfs_path_hash(parent, d.name,
							 d.name_len)
				  ? 0
				  : -EUCLEAN));
	if (r)
		FUZZ_ASSERT(err.code == -EUCLEAN && strstr(err.msg, "fuzz"));
}

/* A chunk record as dlfs_chunk_get checks it: what passes has the length
 * its container implies, and a compressed one's stored bytes lie whole
 * between the data offset and the footer, 4 KiB aligned. */
static void check_chunk(const struct dlfs_super_rec *s,
			const struct dlfs_container *t, uint32_t nc,
			const struct fuzz_ent *e)
{
	const uint64_t cs = s->chunk_size;
	if (e->klen != 8)
		return;
	uint32_t c = dlfs_get_be32(e->key);
	uint64_t k = dlfs_get_be32(e->key + 4);
	if (c >= nc || t[c].bad || k >= t[c].n_chunks)
		return;
	struct dlfs_chunk_rec r;
	struct dlfs_err err;
	if (dlfs_chunk_rec_check(s, &t[c], "fuzz", c, k, e->val, e->vlen, &r,
				 &err)) {
		FUZZ_ASSERT(err.code == -EUCLEAN && strstr(err.msg, "fuzz"));
		return;
	}
	FUZZ_ASSERT(r.length <= cs && r.length > 0 &&
		    k * cs + r.length <= t[c].data_size);
	if (!(s->features & DLFS_FEATURE(COMPRESSED))) {
		FUZZ_ASSERT(r.stored_length == r.length && r.sum == r.xxh3);
		return;
	}
	FUZZ_ASSERT(r.stored_length <= r.length);
	FUZZ_ASSERT((r.flags & DLFS_CHUNK_ZSTD) || r.sum == r.xxh3);
	FUZZ_ASSERT(r.stored_offset % 4096 == 0 &&
		    r.stored_offset >= DLFS_DATA_OFFSET(cs) &&
		    r.stored_offset + r.stored_length + DLFS_FOOTER_SIZE <=
			    t[c].file_size);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_ent e[MAX_ENTS];
	size_t n = fuzz_parse(data, size, e, MAX_ENTS);
	for (size_t i = 0; i < n; i++)
		roundtrip(&e[i]);
	const struct fuzz_ent *sup =
		fuzz_find(e, n, FUZZ_META, DLFS_META_SUPER,
			  strlen(DLFS_META_SUPER));
	if (!sup || sup->vlen < DLFS_SUPER_REC_SIZE_10)
		return 0;
	struct dlfs_super_rec s;
	if (dlfs_super_decode(sup->val, sup->vlen, &s) ||
	    s.format_major != DLFS_FORMAT_MAJOR)
		return 0;
	/* The index refuses unknown features before anything else. */
	struct dlfs_err ferr;
	if (dlfs_super_features_check(&s, "fuzz", &ferr)) {
		FUZZ_ASSERT(ferr.code == -EPROTONOSUPPORT &&
			    (s.features & ~DLFS_FEATURES_KNOWN) &&
			    strstr(ferr.msg, "feature bit"));
		return 0;
	}
	FUZZ_ASSERT(!(s.features & ~DLFS_FEATURES_KNOWN));
	if (dlfs_super_check(&s))
		return 0;
	FUZZ_ASSERT(s.chunk_size >= 4096 && s.chunk_size % 4096 == 0 &&
		    s.chunk_size <= UINT32_MAX);
	/* Counts that readers size arrays and ranges by. */
	FUZZ_ASSERT(s.n_dirs <= s.n_inodes && s.n_symlinks <= s.n_inodes &&
		    s.n_files <= s.n_inodes && s.first_file_ino >= 2 &&
		    s.first_file_ino <= s.n_inodes + 1);
	FUZZ_ASSERT(s.n_containers <= DLFS_MAX_CONTAINERS);
	if (s.n_containers > MAX_CONTAINERS)
		return 0;

	uint32_t nc = (uint32_t)s.n_containers;
	struct dlfs_container *t = calloc(nc ? nc : 1, sizeof(*t));
	FUZZ_ASSERT(t);
	uint64_t g = 0;
	for (uint32_t c = 0; c < nc; c++) {
		uint8_t kb[4];
		dlfs_put_be32(kb, c);
		const struct fuzz_ent *r = fuzz_find(e, n, FUZZ_CONTAINERS, kb, 4);
		dlfs_container_entry(&s, r ? r->val : NULL, r ? r->vlen : 0, g,
				     &t[c]);
		FUZZ_ASSERT(t[c].first_chunk == g);
		g += t[c].n_chunks;
	}
	check_table(&s, t, nc, g);
	for (size_t i = 0; i < n; i++) {
		if (e[i].tag == FUZZ_INODES)
			check_inodes(&s, t, &e[i]);
		if (e[i].tag == FUZZ_DIRENTS)
			check_dirent(&s, t, e, n, &e[i]);
		if (e[i].tag == FUZZ_CHUNKS)
			check_chunk(&s, t, nc, &e[i]);
	}
	free(t);
	return 0;
}
