/*
 * The record checks of src/format/records.c on the records of a real
 * packed dataset: every real record passes, and each kind of damage the
 * checks exist for fails. Plus verify's trailer walk, on a container whose
 * footer miscounts its records (checksums made to agree, so only the walk
 * can tell). And a container whose records fill the packer's trailer
 * buffer exactly, which the footer must still fit after.
 */
#include <errno.h>
#include <fcntl.h>
#include <lmdb.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "dlfs/check.h"
#include "dlfs/dataset.h"
#include "dlfs/pack.h"
#include "records.h"
#include "tutil.h"

#define CS 4096

static char *pack_tree(char **src_out)
{
	char *src = t_tmpdir(), *out;
	t_write(src, "a/one", 10, 1);
	t_write(src, "a/two", 3000, 2);
	t_write(src, "b/big", 3 * CS + 7, 3);
	t_write(src, "b/empty", 0, 4);
	for (int i = 0; i < 40; i++) {
		char n[32];
		snprintf(n, sizeof(n), "many/f%02d", i);
		t_write(src, n, (size_t)(i * 97 % 2000), (uint32_t)(10 + i));
	}
	char *l;
	if (asprintf(&l, "%s/link", src) < 0 || symlink("a/one", l) < 0)
		abort();
	free(l);
	if (asprintf(&out, "%s.dlfs", src) < 0)
		abort();
	struct dlfs_pack_opts o;
	struct dlfs_err err = {0};
	dlfs_pack_opts_init(&o);
	o.chunk_size = CS;
	o.container_size = 5 * CS;
	const char *srcs[] = {src};
	CHECK(dlfs_pack(srcs, 1, out, &o, &err) == 0);
	*src_out = src;
	return out;
}

/* The raw index, read-only or for writing. */
struct raw {
	MDB_env *env;
	MDB_txn *t;
	MDB_dbi meta, inodes, dirents, containers;
	char *seal; /* the dataset's index.sum */
	uint64_t features;
};

static void raw_open(struct raw *r, const char *ds, int write)
{
	char *ip;
	if (asprintf(&ip, "%s/index", ds) < 0 ||
	    asprintf(&r->seal, "%s/index.sum", ds) < 0)
		abort();
	CHECK(mdb_env_create(&r->env) == 0);
	mdb_env_set_maxdbs(r->env, 8);
	CHECK(mdb_env_open(r->env, ip,
			   MDB_NOSUBDIR | MDB_NOLOCK |
				   (write ? 0 : MDB_RDONLY),
			   0600) == 0);
	CHECK(mdb_txn_begin(r->env, NULL, write ? 0 : MDB_RDONLY, &r->t) ==
	      0);
	CHECK(mdb_dbi_open(r->t, DLFS_DB_META, 0, &r->meta) == 0);
	/* The inodes database's name follows the superblock's features. */
	MDB_val sk = {strlen(DLFS_META_SUPER), DLFS_META_SUPER}, sv;
	struct dlfs_super_rec sup;
	CHECK(mdb_get(r->t, r->meta, &sk, &sv) == 0);
	CHECK(dlfs_super_decode(sv.mv_data, sv.mv_size, &sup) == 0);
	r->features = sup.features;
	CHECK(mdb_dbi_open(r->t, dlfs_inodes_db(sup.features), 0,
			   &r->inodes) == 0);
	CHECK(mdb_dbi_open(r->t, DLFS_DB_DIRENTS, 0, &r->dirents) == 0);
	CHECK(mdb_dbi_open(r->t, DLFS_DB_CONTAINERS, 0, &r->containers) ==
	      0);
	free(ip);
}

/* An index changed here no longer matches its seal: these tests are of
 * the records' own checks, so the dataset becomes an unsealed one. */
static void raw_close(struct raw *r, int commit)
{
	if (commit) {
		CHECK(mdb_txn_commit(r->t) == 0);
		unlink(r->seal);
	} else {
		mdb_txn_abort(r->t);
	}
	mdb_env_close(r->env);
	free(r->seal);
}

static MDB_val get(struct raw *r, MDB_dbi dbi, const void *key, size_t klen)
{
	MDB_val k = {klen, (void *)key}, v = {0, NULL};
	CHECK(mdb_get(r->t, dbi, &k, &v) == 0);
	return v;
}

static void check_super(struct raw *r, struct dlfs_super_rec *s)
{
	MDB_val v = get(r, r->meta, DLFS_META_SUPER, strlen(DLFS_META_SUPER));
	CHECK_EQ(v.mv_size, DLFS_SUPER_REC_SIZE);
	CHECK(dlfs_super_decode(v.mv_data, v.mv_size, s) == 0);
	CHECK(s->format_minor == 1 && s->features == DLFS_FEATURE(PATH_BOUND));
	CHECK(dlfs_super_check(s) == 0);
	struct dlfs_super_rec b = *s;
	b.chunk_size = 4095;
	CHECK(dlfs_super_check(&b) == -EUCLEAN);
	b = *s;
	b.chunk_size = UINT64_C(1) << 32; /* more than a u32 length */
	CHECK(dlfs_super_check(&b) == -EUCLEAN);
	b.chunk_size = UINT64_MAX - 4095; /* wraps the container checks */
	CHECK(dlfs_super_check(&b) == -EUCLEAN);
	b.chunk_size = (UINT64_C(1) << 32) - 4096;
	CHECK(dlfs_super_check(&b) == 0);
	b = *s;
	b.n_dirs = UINT64_MAX; /* the sums wrap to what n_inodes says */
	b.n_symlinks = 2;
	b.n_files = 0;
	b.n_inodes = 1;
	b.first_file_ino = 2;
	CHECK(dlfs_super_check(&b) == -EUCLEAN);
	b = *s; /* found by the fuzzer: 1 + n_dirs wraps to 0 */
	b.n_inodes = b.n_dirs = UINT64_MAX;
	b.n_symlinks = b.n_files = b.first_file_ino = 0;
	CHECK(dlfs_super_check(&b) == -EUCLEAN);
	b = *s;
	b.n_files++;
	CHECK(dlfs_super_check(&b) == -EUCLEAN);
	b = *s;
	b.n_dirs = 0;
	CHECK(dlfs_super_check(&b) == -EUCLEAN);
	b = *s;
	b.n_containers = DLFS_MAX_CONTAINERS + 1;
	CHECK(dlfs_super_check(&b) == -EUCLEAN);
}

/* The table as the index builds it; checks each real record and damage. */
static struct dlfs_container *check_containers(struct raw *r,
					       const struct dlfs_super_rec *s)
{
	struct dlfs_container *t = calloc(s->n_containers, sizeof(*t));
	uint64_t g = 0;
	for (uint32_t c = 0; c < s->n_containers; c++) {
		uint8_t kb[4];
		dlfs_put_be32(kb, c);
		MDB_val v = get(r, r->containers, kb, 4);
		CHECK(dlfs_container_entry(s, v.mv_data, v.mv_size, g,
					   &t[c]) == 0);
		CHECK_EQ(t[c].first_chunk, g);
		CHECK(t[c].n_chunks > 0);
		g += t[c].n_chunks;

		struct dlfs_container_rec cr, bad;
		struct dlfs_container x;
		uint8_t b[DLFS_CONTAINER_REC_SIZE];
		dlfs_container_rec_decode(v.mv_data, &cr);
		CHECK(dlfs_container_entry(s, NULL, 0, g, &x) == -EUCLEAN);
		CHECK(x.n_chunks == 0 && x.data_size == 0 && x.first_chunk == g);
		CHECK(dlfs_container_entry(s, v.mv_data, v.mv_size - 1, g,
					   &x) == -EUCLEAN);
		bad = cr;
		bad.n_chunks = 0; /* issue 11 item 7 */
		dlfs_container_rec_encode(&bad, b);
		CHECK(dlfs_container_entry(s, b, sizeof(b), g, &x) == -EUCLEAN);
		CHECK_EQ(x.n_chunks, 0);
		bad = cr;
		bad.n_chunks++;
		dlfs_container_rec_encode(&bad, b);
		CHECK(dlfs_container_entry(s, b, sizeof(b), g, &x) == -EUCLEAN);
		bad = cr;
		bad.data_size = UINT64_MAX - 10;
		bad.n_chunks = 1;
		dlfs_container_rec_encode(&bad, b);
		CHECK(dlfs_container_entry(s, b, sizeof(b), g, &x) == -EUCLEAN);
		bad = cr;
		bad.file_size = CS + cr.data_size; /* no room for a footer */
		dlfs_container_rec_encode(&bad, b);
		CHECK(dlfs_container_entry(s, b, sizeof(b), g, &x) == -EUCLEAN);
		bad = cr;
		bad.first_ino = s->n_inodes + 2;
		dlfs_container_rec_encode(&bad, b);
		CHECK(dlfs_container_entry(s, b, sizeof(b), g, &x) == -EUCLEAN);
		bad = cr;
		bad.n_files = UINT64_MAX;
		dlfs_container_rec_encode(&bad, b);
		CHECK(dlfs_container_entry(s, b, sizeof(b), g, &x) == -EUCLEAN);
	}
	return t;
}

/* Encode one record into a copy of its block and check it. */
static int inode_with(const struct dlfs_super_rec *s,
		      const struct dlfs_container *t, const MDB_val *blk,
		      uint64_t ino, const struct dlfs_inode_rec *rec,
		      struct dlfs_err *err)
{
	uint8_t b[DLFS_INODES_PER_BLOCK * DLFS_INODE_REC_SIZE];
	struct dlfs_inode in;
	const size_t rs = dlfs_inode_rec_size(s->features);
	memcpy(b, blk->mv_data, blk->mv_size);
	dlfs_inode_encode(rec, s->features,
			  b + (ino - 1) % DLFS_INODES_PER_BLOCK * rs);
	return dlfs_inode_rec_check(s, t, "DS", ino, b, blk->mv_size, &in,
				    err);
}

static void check_inodes(struct raw *r, const struct dlfs_super_rec *s,
			 struct dlfs_container *t)
{
	struct dlfs_err err = {0};
	const uint64_t base = DLFS_DATA_OFFSET(s->chunk_size);
	for (uint64_t ino = 1; ino <= s->n_inodes; ino++) {
		uint8_t kb[8];
		dlfs_put_be64(kb, (ino - 1) / DLFS_INODES_PER_BLOCK);
		MDB_val v = get(r, r->inodes, kb, 8);
		struct dlfs_inode in;
		CHECK(dlfs_inode_rec_check(s, t, "DS", ino, v.mv_data,
					   v.mv_size, &in, &err) == 0);
		CHECK_EQ(in.ino, ino);
		CHECK(in.target == NULL);
		uint64_t slot = (ino - 1) % DLFS_INODES_PER_BLOCK;
		const size_t rs = dlfs_inode_rec_size(s->features);
		CHECK(dlfs_inode_rec_check(s, t, "DS", ino, v.mv_data,
					   slot * rs + rs - 1, &in,
					   &err) == -EUCLEAN);
		struct dlfs_inode_rec rec, bad;
		dlfs_inode_decode((const uint8_t *)v.mv_data + slot * rs,
				  s->features, &rec);
		CHECK((rec.mode & S_IFMT) == dlfs_ino_type(s, ino));
		bad = rec;
		bad.mode = S_IFCHR | 0644;
		CHECK(inode_with(s, t, &v, ino, &bad, &err) == -EUCLEAN);
		/* Each type in the range of another. */
		const uint32_t types[] = {S_IFDIR, S_IFLNK, S_IFREG};
		for (int i = 0; i < 3; i++) {
			if (types[i] == (rec.mode & S_IFMT))
				continue;
			bad = rec;
			bad.mode = types[i] | 0755;
			CHECK(inode_with(s, t, &v, ino, &bad, &err) == -EUCLEAN);
		}
		if (S_ISREG(rec.mode) && rec.size == 0) {
			CHECK(rec.xxh3 == XXH3_64bits(NULL, 0));
			bad = rec;
			bad.xxh3 ^= 1;
			CHECK(inode_with(s, t, &v, ino, &bad, &err) == -EUCLEAN);
		}
		if (!S_ISREG(rec.mode) || rec.size == 0)
			continue;
		uint64_t c = rec.loc >> DLFS_LOC_CONTAINER_SHIFT;
		uint64_t off = rec.loc & DLFS_LOC_OFFSET_MASK;
		CHECK(off >= base && off + rec.size <= base + t[c].data_size);
		/* Container out of range (issue 11 item 6). */
		bad = rec;
		bad.loc = (s->n_containers << DLFS_LOC_CONTAINER_SHIFT) | off;
		CHECK(inode_with(s, t, &v, ino, &bad, &err) == -EUCLEAN);
		/* Offset before the data region, or past its end. */
		bad = rec;
		bad.loc = (c << DLFS_LOC_CONTAINER_SHIFT) | (base - 1);
		CHECK(inode_with(s, t, &v, ino, &bad, &err) == -EUCLEAN);
		bad = rec;
		bad.loc = (c << DLFS_LOC_CONTAINER_SHIFT) |
			  (base + t[c].data_size - rec.size + 1);
		CHECK(inode_with(s, t, &v, ino, &bad, &err) == -EUCLEAN);
		bad = rec;
		bad.loc = (c << DLFS_LOC_CONTAINER_SHIFT) | DLFS_LOC_OFFSET_MASK;
		CHECK(inode_with(s, t, &v, ino, &bad, &err) == -EUCLEAN);
		bad = rec;
		bad.size = UINT64_MAX;
		CHECK(inode_with(s, t, &v, ino, &bad, &err) == -EUCLEAN);
		/* The last byte of the data region is still inside. */
		bad = rec;
		bad.loc = (c << DLFS_LOC_CONTAINER_SHIFT) |
			  (base + t[c].data_size - rec.size);
		CHECK(inode_with(s, t, &v, ino, &bad, &err) == 0);
		/* A container whose inode range leaves the file out. */
		struct dlfs_container keep0 = t[c];
		t[c].n_files = ino - t[c].first_ino;
		CHECK(inode_with(s, t, &v, ino, &rec, &err) == -EUCLEAN);
		t[c] = keep0;
		t[c].first_ino = ino + 1;
		t[c].n_files = 1;
		CHECK(inode_with(s, t, &v, ino, &rec, &err) == -EUCLEAN);
		t[c] = keep0;
		/* A damaged container record makes its files damaged. */
		struct dlfs_container keep = t[c];
		t[c].bad = -EUCLEAN;
		CHECK(inode_with(s, t, &v, ino, &rec, &err) == -EUCLEAN);
		CHECK(strstr(err.msg, "record of its container") != NULL);
		t[c] = keep;
	}
}

static void check_dirents(struct raw *r, const struct dlfs_super_rec *s)
{
	MDB_cursor *cur;
	MDB_val k, v;
	int n = 0;
	CHECK(mdb_cursor_open(r->t, r->dirents, &cur) == 0);
	for (int rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); !rc;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		struct dlfs_dirent d;
		CHECK(dlfs_dirent_decode(s, k.mv_data, k.mv_size, v.mv_data,
					 v.mv_size, &d) == 0);
		CHECK(d.name_len == k.mv_size - 8 && d.name_len >= 1);
		CHECK(d.type == S_IFDIR || d.type == S_IFREG ||
		      d.type == S_IFLNK);
		CHECK(d.type == dlfs_ino_type(s, d.ino));
		CHECK(dlfs_dirent_decode(s, k.mv_data, 8, v.mv_data, v.mv_size,
					 &d) == -EUCLEAN);
		CHECK(dlfs_dirent_decode(s, k.mv_data, k.mv_size, v.mv_data, 7,
					 &d) == -EUCLEAN);
		n++;
	}
	CHECK(n > 40);
	mdb_cursor_close(cur);

	/* Names the format forbids (issue 11 item 5, and names that would
	 * lead extract out of its directory). */
	uint8_t key[8 + 300], val[8];
	const uint64_t f = s->first_file_ino;
	dlfs_put_le64(val, (UINT64_C(8) << DLFS_DIRENT_TYPE_SHIFT) | f);
	struct {
		const char *name;
		size_t len;
		int ok;
	} names[] = {
		{"a", 1, 1}, {"..a", 3, 1}, {".", 1, 0}, {"..", 2, 0},
		{"a/b", 3, 0}, {"../../etc/passwd", 16, 0}, {"a\0b", 3, 0},
		{NULL, 255, 1}, {NULL, 256, 0}, {NULL, 300, 0},
	};
	for (size_t i = 0; i < sizeof(names) / sizeof(*names); i++) {
		struct dlfs_dirent d;
		dlfs_put_be64(key, 2);
		if (names[i].name)
			memcpy(key + 8, names[i].name, names[i].len);
		else
			memset(key + 8, 'x', names[i].len);
		int ret = dlfs_dirent_decode(s, key, 8 + names[i].len, val, 8,
					     &d);
		CHECK(ret == (names[i].ok ? 0 : -EUCLEAN));
		if (ret != (names[i].ok ? 0 : -EUCLEAN))
			fprintf(stderr, "  name %zu (%zu bytes)\n", i,
				names[i].len);
		if (!ret) {
			CHECK_EQ(d.ino, f);
			CHECK_EQ(d.type, S_IFREG);
			CHECK_EQ(d.name_len, names[i].len);
		}
	}

	/* Values that name no inode, the root, or give the wrong type. */
	struct {
		uint64_t ino, type;
		int ok;
	} vals[] = {
		{f, 8, 1}, {0, 8, 0}, {1, 4, 0}, {s->n_inodes + 1, 8, 0},
		{DLFS_DIRENT_INO_MASK, 8, 0}, {f, 4, 0}, {f, 10, 0}, {f, 0, 0},
		{2, 4, 1}, {2, 8, 0}, {s->n_dirs + 1, 10, 1},
		{s->n_dirs + 1, 8, 0},
	};
	for (size_t i = 0; i < sizeof(vals) / sizeof(*vals); i++) {
		uint64_t ino;
		uint32_t type;
		dlfs_put_le64(val, vals[i].type << DLFS_DIRENT_TYPE_SHIFT |
					   vals[i].ino);
		int ret = dlfs_dirent_val_decode(s, val, 8, &ino, &type);
		CHECK(ret == (vals[i].ok ? 0 : -EUCLEAN));
		if (ret != (vals[i].ok ? 0 : -EUCLEAN))
			fprintf(stderr, "  value %zu\n", i);
	}
}

static uint8_t *read_file(const char *ds, uint32_t c, size_t *len)
{
	char *p, name[DLFS_CONTAINER_NAME_MAX];
	dlfs_container_name(c, name);
	if (asprintf(&p, "%s/%s", ds, name) < 0)
		abort();
	uint8_t *b = t_read(p, len);
	free(p);
	return b;
}

static void check_container_files(const char *ds,
				  const struct dlfs_super_rec *s,
				  const struct dlfs_container *t)
{
	struct dlfs_info info = {.super = *s};
	struct dlfs_err err = {0};
	for (uint32_t c = 0; c < s->n_containers; c++) {
		size_t len;
		uint8_t *b = read_file(ds, c, &len);
		CHECK_EQ(len, t[c].file_size);
		CHECK(dlfs_header_check(b, len, &info, c, &t[c], "C", &err) ==
		      0);
		CHECK(dlfs_header_check(b, 71, &info, c, &t[c], "C", &err) ==
		      -EUCLEAN);
		CHECK(dlfs_header_check(b, len, &info, c + 1, &t[c], "C",
					&err) == -EUCLEAN);
		for (int i = 0; i < DLFS_CONTAINER_HEADER_REC_SIZE; i++) {
			b[i] ^= 0x10;
			int ret = dlfs_header_check(b, len, &info, c, &t[c],
						    "C", &err);
			CHECK(ret == -EUCLEAN ||
			      (ret == -EPROTONOSUPPORT && i >= 8 && i < 12));
			b[i] ^= 0x10;
		}
		uint8_t *f = b + len - DLFS_FOOTER_SIZE;
		CHECK(dlfs_footer_check(f, DLFS_FOOTER_SIZE, &t[c], "C",
					&err) == 0);
		CHECK(dlfs_footer_check(f, DLFS_FOOTER_SIZE - 1, &t[c], "C",
					&err) == -EUCLEAN);
		f[3] ^= 1;
		CHECK(dlfs_footer_check(f, DLFS_FOOTER_SIZE, &t[c], "C",
					&err) == -EUCLEAN);
		f[3] ^= 1;

		/* Walk the trailer: whole, then with every cut short. */
		struct dlfs_container_footer ft;
		dlfs_footer_decode(f, &ft);
		const uint8_t *tr = b + ft.trailer_offset;
		size_t at = 0;
		uint64_t nrec = 0;
		while (at < ft.trailer_size) {
			struct dlfs_trailer_item it;
			size_t left = (size_t)ft.trailer_size - at;
			int ret = dlfs_trailer_next(tr + at, left, s->chunk_size,
						    t[c].data_size, &it);
			CHECK(ret == 0);
			if (ret)
				break;
			CHECK(it.len <= left && it.path == tr + at + 48);
			for (size_t cut = 0; cut < it.len; cut += 7) {
				struct dlfs_trailer_item p;
				CHECK(dlfs_trailer_next(tr + at, cut,
							s->chunk_size,
							t[c].data_size,
							&p) == -EAGAIN);
				CHECK(p.len == (cut < 48 ? 48 : it.len));
			}
			struct dlfs_trailer_rec bad = it.rec;
			uint8_t rb[DLFS_TRAILER_REC_SIZE];
			struct dlfs_trailer_item p;
			bad.mode = S_IFIFO | 0644;
			dlfs_trailer_rec_encode(&bad, rb);
			CHECK(dlfs_trailer_next(rb, sizeof(rb), s->chunk_size,
						t[c].data_size,
						&p) == -EUCLEAN);
			bad = it.rec;
			bad.offset = S_ISREG(bad.mode) ? 1 : 4096;
			bad.size = S_ISREG(bad.mode) ? 1 : bad.size;
			dlfs_trailer_rec_encode(&bad, rb);
			CHECK(dlfs_trailer_next(rb, sizeof(rb), s->chunk_size,
						t[c].data_size,
						&p) == -EUCLEAN);
			bad = it.rec;
			bad.path_len = (uint32_t)DLFS_TRAILER_REC_MAX;
			dlfs_trailer_rec_encode(&bad, rb);
			CHECK(dlfs_trailer_next(rb, sizeof(rb), s->chunk_size,
						t[c].data_size,
						&p) == -EUCLEAN);
			at += it.len;
			nrec++;
		}
		CHECK_EQ(at, ft.trailer_size);
		CHECK_EQ(nrec, ft.n_records);
		CHECK(dlfs_trailer_pos_check(&ft, len) == 0);
		struct dlfs_container_footer fb = ft;
		fb.trailer_offset = UINT64_MAX - 50; /* wraps to file_size */
		fb.trailer_size = len - DLFS_FOOTER_SIZE + 51;
		CHECK(dlfs_trailer_pos_check(&fb, len) == -EUCLEAN);

		/* The same walk fed in pieces, as verify reads it. */
		size_t pieces[] = {1, 7, 48, 100, 4096};
		for (size_t i = 0; i < sizeof(pieces) / sizeof(*pieces); i++) {
			struct dlfs_trailer_walk w = {
				.chunk_size = s->chunk_size,
				.data_size = t[c].data_size};
			uint8_t *carry = malloc(ft.trailer_size);
			size_t have = 0;
			for (size_t a = 0; a < ft.trailer_size;) {
				size_t n = ft.trailer_size - a < pieces[i]
						   ? ft.trailer_size - a
						   : pieces[i];
				memcpy(carry + have, tr + a, n);
				a += n;
				have += n;
				size_t used = dlfs_trailer_walk(&w, carry, have);
				memmove(carry, carry + used, have - used);
				have -= used;
			}
			CHECK(w.bad == 0 && have == 0);
			CHECK_EQ(w.n_records, ft.n_records);
			free(carry);
		}
		free(b);
	}
}

static int n_reports;
static char last_report[512];
static void on_bad(void *arg, const char *path, const char *msg)
{
	(void)arg;
	n_reports++;
	snprintf(last_report, sizeof(last_report), "%s: %s", path, msg);
}

/* Feature flags: known bits pass, the lowest unknown one is named. */
static void check_features(void)
{
	struct dlfs_super_rec s = {.features = DLFS_FEATURE(PATH_BOUND)};
	struct dlfs_err err = {0};
	CHECK_EQ(dlfs_super_features_check(&s, "DS", &err), 0);
	s.features |= UINT64_C(1) << 63 | UINT64_C(1) << 5;
	CHECK_EQ(dlfs_super_features_check(&s, "DS", &err), -EPROTONOSUPPORT);
	CHECK(!strcmp(err.msg, "DS: feature bit 5 (0x20) is not known to this "
			       "dlfs: a newer dlfs-pack made it"));
	s.features = UINT64_C(1) << 63;
	CHECK_EQ(dlfs_super_features_check(&s, "DS", &err), -EPROTONOSUPPORT);
	CHECK(strstr(err.msg, "bit 63 (0x8000000000000000)") != NULL);
}

/*
 * Format 1.1's path binding, through the library: an entry pointed at
 * another file's inode is refused by lookup, stat through the entry and
 * verify (by path); the file itself and its own entry stay readable. A
 * feature bit the library does not know stops the open.
 */
static void check_path_bound(const char *ds)
{
	struct raw r;
	raw_open(&r, ds, 1);
	/* Two regular files' entries: a is made to lead to b's inode. */
	MDB_cursor *cur;
	MDB_val k, v;
	uint8_t ka[8 + DLFS_NAME_MAX], va[8], vb[8];
	size_t kal = 0;
	uint64_t pb = 0, ia = 0, ib = 0;
	char nb[DLFS_NAME_MAX + 1] = "";
	CHECK(mdb_cursor_open(r.t, r.dirents, &cur) == 0);
	for (int rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); !rc && !ib;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		uint64_t val = dlfs_get_le64(v.mv_data);
		if (val >> DLFS_DIRENT_TYPE_SHIFT != 8)
			continue;
		if (!ia) {
			kal = k.mv_size;
			memcpy(ka, k.mv_data, kal);
			memcpy(va, v.mv_data, 8);
			ia = val & DLFS_DIRENT_INO_MASK;
		} else {
			pb = dlfs_get_be64(k.mv_data);
			memcpy(nb, (char *)k.mv_data + 8, k.mv_size - 8);
			memcpy(vb, v.mv_data, 8);
			ib = val & DLFS_DIRENT_INO_MASK;
		}
	}
	mdb_cursor_close(cur);
	CHECK(ia && ib && ia != ib);
	MDB_val key = {kal, ka}, nv = {8, vb};
	CHECK(mdb_put(r.t, r.dirents, &key, &nv, 0) == 0);
	raw_close(&r, 1);

	uint64_t pa = dlfs_get_be64(ka);
	const char *na = (const char *)ka + 8;
	size_t nal = kal - 8;
	struct dlfs_ds *d;
	struct dlfs_txn *t;
	struct dlfs_err err = {0};
	struct dlfs_inode in;
	uint64_t ino = 0;
	char want[128];
	snprintf(want, sizeof(want), "leads to inode %llu, whose record is "
		 "another name's", (unsigned long long)ib);
	CHECK(dlfs_ds_open(ds, &d, &err) == 0);
	CHECK(dlfs_txn_begin(d, &t, &err) == 0);
	CHECK_EQ(dlfs_lookup(t, pa, na, nal, &ino, &err), -EUCLEAN);
	CHECK(strstr(err.msg, want) != NULL);
	CHECK_EQ(dlfs_lookup_stat(t, pa, na, nal, &in, &err), -EUCLEAN);
	CHECK_EQ(dlfs_stat_entry(t, pa, na, nal, ib, &in, &err), -EUCLEAN);
	/* b, by its own entry and by number. */
	CHECK_EQ(dlfs_lookup(t, pb, nb, strlen(nb), &ino, &err), 0);
	CHECK_EQ(ino, ib);
	CHECK_EQ(dlfs_lookup_stat(t, pb, nb, strlen(nb), &in, &err), 0);
	CHECK(in.ino == ib && in.path_hash == dlfs_path_hash(pb, nb, strlen(nb)));
	CHECK_EQ(dlfs_stat_entry(t, pb, nb, strlen(nb), ib, &in, &err), 0);
	CHECK_EQ(dlfs_stat(t, ib, &in, &err), 0);
	/* a's own inode is intact, only unnamed. */
	CHECK_EQ(dlfs_stat(t, ia, &in, &err), 0);
	CHECK(in.path_hash == dlfs_path_hash(pa, na, nal));
	dlfs_txn_end(t);
	struct dlfs_verify_report rep;
	n_reports = 0;
	CHECK(dlfs_verify(d, on_bad, NULL, &rep, &err) == 0);
	CHECK_EQ(rep.bad_names, 1);
	CHECK_EQ(rep.bad_files, 0);
	CHECK_EQ(n_reports, 1);
	CHECK(strstr(last_report, want) != NULL);
	dlfs_ds_close(d);

	/* Restored, then an unknown feature bit. */
	raw_open(&r, ds, 1);
	MDB_val ov = {8, va};
	CHECK(mdb_put(r.t, r.dirents, &key, &ov, 0) == 0);
	MDB_val sv = get(&r, r.meta, DLFS_META_SUPER, strlen(DLFS_META_SUPER));
	uint8_t sb[DLFS_SUPER_REC_SIZE], sb0[DLFS_SUPER_REC_SIZE];
	CHECK_EQ(sv.mv_size, DLFS_SUPER_REC_SIZE);
	memcpy(sb0, sv.mv_data, sizeof(sb0));
	memcpy(sb, sv.mv_data, sizeof(sb));
	sb[112] |= 0x80;
	MDB_val sk = {strlen(DLFS_META_SUPER), DLFS_META_SUPER},
		snv = {sizeof(sb), sb};
	CHECK(mdb_put(r.t, r.meta, &sk, &snv, 0) == 0);
	raw_close(&r, 1);
	CHECK_EQ(dlfs_ds_open(ds, &d, &err), -EPROTONOSUPPORT);
	CHECK(strstr(err.msg, "feature bit 7 (0x80) is not known") != NULL);
	raw_open(&r, ds, 1);
	snv.mv_data = sb0;
	CHECK(mdb_put(r.t, r.meta, &sk, &snv, 0) == 0);
	raw_close(&r, 1);
	CHECK(dlfs_ds_open(ds, &d, &err) == 0);
	n_reports = 0;
	CHECK(dlfs_verify(d, on_bad, NULL, &rep, &err) == 0);
	CHECK(rep.bad_names == 0 && n_reports == 0);
	dlfs_ds_close(d);
}

/*
 * A footer that says one record more than its trailer holds, with the
 * footer checksum and the index's copy of it updated to match: only the
 * trailer walk notices.
 */
static void check_verify_walk(const char *ds)
{
	size_t len;
	uint8_t *b = read_file(ds, 1, &len);
	uint8_t *f = b + len - DLFS_FOOTER_SIZE;
	struct dlfs_container_footer ft;
	dlfs_footer_decode(f, &ft);
	ft.n_records++;
	dlfs_footer_encode(&ft, f);
	char *p, name[DLFS_CONTAINER_NAME_MAX];
	dlfs_container_name(1, name);
	if (asprintf(&p, "%s/%s", ds, name) < 0)
		abort();
	int fd = open(p, O_WRONLY);
	CHECK(fd >= 0 && pwrite(fd, f, DLFS_FOOTER_SIZE,
				(off_t)(len - DLFS_FOOTER_SIZE)) ==
				 DLFS_FOOTER_SIZE);
	close(fd);
	free(p);
	free(b);

	struct raw r;
	raw_open(&r, ds, 1);
	uint8_t kb[4];
	dlfs_put_be32(kb, 1);
	MDB_val v = get(&r, r.containers, kb, 4);
	struct dlfs_container_rec cr;
	dlfs_container_rec_decode(v.mv_data, &cr);
	cr.footer_xxh3 = ft.footer_xxh3;
	uint8_t vb[DLFS_CONTAINER_REC_SIZE];
	dlfs_container_rec_encode(&cr, vb);
	MDB_val k = {4, kb}, nv = {sizeof(vb), vb};
	CHECK(mdb_put(r.t, r.containers, &k, &nv, 0) == 0);
	raw_close(&r, 1);

	struct dlfs_ds *d;
	struct dlfs_err err = {0};
	struct dlfs_verify_report rep;
	CHECK(dlfs_ds_open(ds, &d, &err) == 0);
	n_reports = 0;
	CHECK(dlfs_verify(d, on_bad, NULL, &rep, &err) == 0);
	CHECK_EQ(rep.bad_containers, 1);
	CHECK_EQ(rep.bad_files, 0);
	CHECK_EQ(n_reports, 1);
	CHECK(strstr(last_report, "000001.dlc: trailer records are damaged") !=
	      NULL);
	if (n_reports != 1 || !strstr(last_report, "trailer records"))
		fprintf(stderr, "verify said: %s\n", last_report);
	dlfs_ds_close(d);
}

/*
 * The packer gathers a container's trailer records in a 1 MiB buffer
 * (TRAILER_BUF in src/pack/container.c) and flushes it only when the next
 * record would not fit, so the last records can end right at its end;
 * the footer is then encoded after them in the same buffer. Before
 * 0c904df the buffer had no room for it, and the footer's 72 bytes went
 * past the block: ASan reports it; without ASan it may pass unseen
 * (dlfs-pack's datasets came out right) or break the heap. The records
 * here end exactly at 1 MiB, so the whole footer is past the end.
 */
#define PACK_TRAILER_BUF (1u << 20)
#define FULL_NAME_LEN 200 /* well under NAME_MAX; 4,228 files suffice */

/* A record is DLFS_TRAILER_REC_SIZE bytes and its path (container.c's
 * trailer_add); container 0 holds the root's (path "") and then, with
 * every file empty and at the root, one per file with its name as path.
 * So n names of FULL_NAME_LEN and one shorter name fill the buffer:
 * 48 + 4227 * (48 + 200) + (48 + 184) = 1 MiB. @return the file count,
 * 0 if the sizes no longer allow it. */
static unsigned fill_trailer_tree(const char *src)
{
	size_t rec = DLFS_TRAILER_REC_SIZE, left = PACK_TRAILER_BUF - rec;
	unsigned n = (unsigned)(left / (rec + FULL_NAME_LEN));
	size_t last = left - n * (rec + FULL_NAME_LEN) - rec;
	if (last < 8 || last > FULL_NAME_LEN) { /* room for the number */
		fprintf(stderr, "no last name fills the trailer (%zu)\n", last);
		t_failures++;
		return 0;
	}
	char name[FULL_NAME_LEN + 1];
	for (unsigned i = 0; i <= n; i++) {
		/* Unique: a number, padded to the length wanted. */
		size_t len = i < n ? FULL_NAME_LEN : last;
		int k = snprintf(name, sizeof(name), "%07u", i);
		memset(name + k, 'x', len - (size_t)k);
		name[len] = '\0';
		t_write(src, name, 0, i);
	}
	return n + 1;
}

/* The container is the one meant, so the test still tests something if
 * record sizes change: 1 MiB of records (the root's and one per file),
 * then the footer. */
static void check_full_container(const char *ds, unsigned files)
{
	size_t len;
	uint8_t *b = read_file(ds, 0, &len);
	CHECK(b && len >= DLFS_FOOTER_SIZE);
	struct dlfs_container_footer ft = {0};
	if (b && len >= DLFS_FOOTER_SIZE)
		dlfs_footer_decode(b + len - DLFS_FOOTER_SIZE, &ft);
	CHECK_EQ(ft.trailer_size, PACK_TRAILER_BUF);
	CHECK_EQ(ft.n_records, files + 1);
	CHECK(dlfs_trailer_pos_check(&ft, len) == 0);
	free(b);
}

/* The dataset opens and verifies: footer, trailer and every file. */
static void check_full_verify(const char *ds, unsigned files)
{
	struct dlfs_ds *d;
	struct dlfs_err err = {0};
	struct dlfs_verify_report rep = {0};
	if (dlfs_ds_open(ds, &d, &err)) {
		fprintf(stderr, "open %s: %s\n", ds, err.msg);
		t_failures++;
		return;
	}
	n_reports = 0;
	CHECK(dlfs_verify(d, on_bad, NULL, &rep, &err) == 0);
	CHECK_EQ(rep.containers, 1);
	CHECK_EQ(rep.files, files);
	CHECK_EQ(rep.bad_containers + rep.bad_files, 0);
	CHECK_EQ(n_reports, 0);
	if (n_reports)
		fprintf(stderr, "verify said: %s\n", last_report);
	dlfs_ds_close(d);
}

/* Pack that tree, the footer going right after 1 MiB of records. */
static void check_full_trailer(void)
{
	char *src = t_tmpdir(), *ds;
	if (asprintf(&ds, "%s.dlfs", src) < 0)
		abort();
	unsigned files = fill_trailer_tree(src);
	struct dlfs_pack_opts o;
	struct dlfs_err err = {0};
	dlfs_pack_opts_init(&o);
	o.threads = 2;
	const char *srcs[] = {src};
	int ret = files ? dlfs_pack(srcs, 1, ds, &o, &err) : -EINVAL;
	CHECK_EQ(ret, 0);
	if (ret) {
		fprintf(stderr, "pack %s: %s\n", src, err.msg);
	} else {
		check_full_container(ds, files);
		check_full_verify(ds, files);
	}
	t_rmrf(ds);
	t_rmrf(src);
	free(ds);
	free(src);
}

/* dlfs_chunk_rec_check of an in-place dataset's records (format.h):
 * runs of any length up to the chunk size (exactly the rest for the
 * last), stored anywhere inside the archive, raw or deflate; each
 * damage refused. Mutations caught: the length test made "== want" (the
 * short run refused), the extent test dropped (past the end accepted),
 * DEFLATE or ZSTD let through where they do not belong. */
static void check_in_place_recs(void)
{
	struct dlfs_super_rec s = {.chunk_size = 4 * CS,
				   .features = DLFS_FEATURE(IN_PLACE)};
	/* An archive of 10 CS whose logical stream is 2 chunks: a short run,
	 * then a last chunk of 100 bytes. */
	struct dlfs_container x = {.file_size = 10 * CS,
				   .data_size = 4 * CS + 100, .n_chunks = 2};
	struct dlfs_chunk_rec r, out;
	struct dlfs_err err;
	uint8_t b[DLFS_CHUNK_REC_SIZE];
	struct {
		uint64_t k;
		uint32_t length, stored, flags;
		uint64_t at, sum;
		int ok;
	} cases[] = {
		{0, 3 * CS + 5, 3 * CS + 5, 0, 517, 7, 1},   /* a short run */
		{0, 4 * CS, 4 * CS, 0, 6 * CS, 7, 1},          /* a full one */
		{0, 4 * CS + 1, 4 * CS + 1, 0, 0, 7, 0},       /* too long */
		{1, 100, 100, 0, 10 * CS - 100, 7, 1},         /* the last */
		{1, 99, 99, 0, 0, 7, 0},        /* the last, cut short */
		{0, 100, 100, 0, 10 * CS - 99, 7, 0},  /* past the archive */
		{0, 100, 100, 0, UINT64_MAX - 50, 7, 0},      /* wraps */
		{0, 100, 101, 0, 0, 7, 0},        /* raw of another size */
		{0, 100, 100, 0, 0, 8, 0},        /* raw, sum is not xxh3 */
		{0, 100, 60, DLFS_CHUNK_DEFLATE, 0, 8, 1}, /* deflated */
		{0, 100, 60, DLFS_CHUNK_ZSTD, 0, 8, 0},    /* zstd: never */
		{0, 100, 60, 4, 0, 8, 0},                  /* unknown */
		{0, 0, 0, 0, 0, 7, 0},                     /* empty */
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		r = (struct dlfs_chunk_rec){.xxh3 = 7,
					    .length = cases[i].length,
					    .stored_length = cases[i].stored,
					    .stored_offset = cases[i].at,
					    .flags = cases[i].flags,
					    .sum = cases[i].sum};
		dlfs_chunk_encode(&r, s.features, b);
		int ret = dlfs_chunk_rec_check(&s, &x, "ds", 3, cases[i].k, b,
					       40, &out, &err);
		if (ret != (cases[i].ok ? 0 : -EUCLEAN))
			fprintf(stderr, "in-place case %zu\n", i);
		CHECK_EQ(ret, cases[i].ok ? 0 : -EUCLEAN);
		if (!ret)
			CHECK(!memcmp(&out, &r, sizeof(r)));
		else
			CHECK(strstr(err.msg, "archive 3"));
	}
	/* A compressed dataset never takes the deflate codec. */
	s.features = DLFS_FEATURE(COMPRESSED);
	struct dlfs_container y = {.file_size = 20 * CS,
				   .data_size = 4 * CS, .n_chunks = 1};
	r = (struct dlfs_chunk_rec){.xxh3 = 7, .length = 4 * CS,
				    .stored_length = 100,
				    .stored_offset = DLFS_DATA_OFFSET(4 * CS),
				    .flags = DLFS_CHUNK_DEFLATE, .sum = 8};
	dlfs_chunk_encode(&r, s.features, b);
	CHECK(dlfs_chunk_rec_check(&s, &y, "ds", 0, 0, b, 40, &out, &err) ==
	      -EUCLEAN);
	/* The archive record's codec. */
	struct dlfs_archive_rec a = {.size = 1ull << 40, .mtime_sec = -3,
				     .mtime_nsec = 999999999,
				     .kind = DLFS_ARCHIVE_ZIP, .path_len = 9},
				ad;
	uint8_t ab[DLFS_ARCHIVE_REC_SIZE];
	dlfs_archive_rec_encode(&a, ab);
	dlfs_archive_rec_decode(ab, &ad);
	CHECK(!memcmp(&a, &ad, sizeof(a)));
	CHECK(dlfs_get_le64(ab) == 1ull << 40 && dlfs_get_le32(ab + 20) == 2);
}

/* dlfs_chunk_rec_check: both layouts, and each damage to a compressed
 * record's stored extent, flags and lengths. */
static void check_chunk_recs(void)
{
	struct dlfs_super_rec s = {.chunk_size = 4 * CS};
	struct dlfs_container x = {.file_size = 4 * CS + 10 * CS,
				   .data_size = 4 * CS + 100, .n_chunks = 2};
	struct dlfs_chunk_rec r, out;
	struct dlfs_err err;
	uint8_t b[DLFS_CHUNK_REC_SIZE];
	uint64_t d0 = DLFS_DATA_OFFSET(4 * CS);

	/* Without the feature: 16 bytes, the length checked. */
	r = (struct dlfs_chunk_rec){.xxh3 = 1, .length = 4 * CS};
	dlfs_chunk_encode(&r, 0, b);
	CHECK(dlfs_chunk_rec_check(&s, &x, "ds", 0, 0, b, 16, &out, &err) == 0);
	CHECK(out.stored_length == 4 * CS && out.flags == 0 && out.sum == 1);
	CHECK(dlfs_chunk_rec_check(&s, &x, "ds", 0, 0, b, 40, &out, &err) ==
	      -EUCLEAN);
	CHECK(dlfs_chunk_rec_check(&s, &x, "ds", 0, 1, b, 16, &out, &err) ==
	      -EUCLEAN); /* chunk 1 is the 100-byte last one */

	s.features = DLFS_FEATURE(COMPRESSED);
	struct {
		uint64_t k;
		uint32_t length, stored, flags;
		uint64_t at;
		int ok;
		uint64_t sum;
	} cases[] = {
		{0, 4 * CS, 100, DLFS_CHUNK_ZSTD, d0, 1, 8},
		{1, 100, 100, 0, d0 + CS, 0, 8},   /* raw, sum is not xxh3 */
		{1, 100, 100, 0, d0 + CS, 1, 7}, /* raw last chunk */
		{1, 100, 99, 0, d0 + CS, 0, 7}, /* raw but shorter */
		{0, 4 * CS, 4 * CS, DLFS_CHUNK_ZSTD, d0, 0, 8}, /* no gain */
		{0, 4 * CS, 100, 2, d0, 0, 8},             /* unknown flag */
		{0, 4 * CS, 100, DLFS_CHUNK_ZSTD, d0 + 1, 0, 8}, /* unaligned */
		{0, 4 * CS, 100, DLFS_CHUNK_ZSTD, d0 - CS, 0, 8}, /* in header */
		/* ends in the footer; then just before it */
		{0, 4 * CS, CS - DLFS_FOOTER_SIZE + 1, DLFS_CHUNK_ZSTD,
		 x.file_size - CS, 0, 8},
		{0, 4 * CS, CS - DLFS_FOOTER_SIZE, DLFS_CHUNK_ZSTD,
		 x.file_size - CS, 1, 8},
		{0, 4 * CS, 100, DLFS_CHUNK_ZSTD, UINT64_MAX - 4095, 0, 8},
		{0, 4 * CS - 1, 100, DLFS_CHUNK_ZSTD, d0, 0, 8}, /* bad length */
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		r = (struct dlfs_chunk_rec){.xxh3 = 7,
					    .length = cases[i].length,
					    .stored_length = cases[i].stored,
					    .stored_offset = cases[i].at,
					    .flags = cases[i].flags,
					    .sum = cases[i].sum};
		dlfs_chunk_encode(&r, s.features, b);
		int ret = dlfs_chunk_rec_check(&s, &x, "ds", 3, cases[i].k, b,
					       40, &out, &err);
		CHECK_EQ(ret, cases[i].ok ? 0 : -EUCLEAN);
		if (!ret)
			CHECK(!memcmp(&out, &r, sizeof(r)));
		else
			CHECK(strstr(err.msg, "chunk") &&
			      strstr(err.msg, "container 3"));
	}
	CHECK(dlfs_chunk_rec_check(&s, &x, "ds", 0, 0, b, 16, &out, &err) ==
	      -EUCLEAN); /* a 1.0-sized record in a compressed dataset */
	CHECK(dlfs_chunk_rec_check(&s, &x, "ds", 0, 0, b, 32, &out, &err) ==
	      -EUCLEAN); /* the 32-byte record without sum */
	check_in_place_recs();
}

int main(void)
{
	check_chunk_recs();
	char *src, *ds = pack_tree(&src);
	struct raw r;
	struct dlfs_super_rec s;
	raw_open(&r, ds, 0);
	check_super(&r, &s);
	CHECK(s.n_containers >= 3);
	struct dlfs_container *t = check_containers(&r, &s);
	check_inodes(&r, &s, t);
	check_dirents(&r, &s);
	raw_close(&r, 0);
	check_features();
	check_path_bound(ds);
	check_container_files(ds, &s, t);
	check_verify_walk(ds);
	check_full_trailer();
	free(t);
	t_rmrf(ds);
	t_rmrf(src);
	free(ds);
	free(src);
	return t_done("test_records");
}
