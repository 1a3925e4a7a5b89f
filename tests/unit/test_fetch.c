/*
 * The loader of the RAM tier (fetch.c) over a real dataset: chunks from
 * the PFS, verified; a damaged chunk (-EBADMSG) and its salvage file by
 * file; files read alone (their pages only, their own checksum, the
 * verified bit) and damaged index records; the NVMe tier (chunks put to
 * it, then read from it; its file path); and a fake MPI peer whose bytes
 * are checked like the PFS's.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <xxhash.h>

#include "dlfs/dataset.h"
#include "fetch.h"
#include "tutil.h"

#define CS 65536u
#define CONTAINER (4 * CS)
#define MAX_CHUNKS 64

static char *src_dir;
static struct dlfs_ds *ds;
static struct dlfs_txn *txn;
static uint64_t n_chunks;
/* Every chunk as the PFS holds it, read once through the loader. */
static uint8_t *chunk_bytes[MAX_CHUNKS];
static size_t chunk_lens[MAX_CHUNKS];

static uint8_t *aligned(size_t n)
{
	void *p = NULL;
	if (posix_memalign(&p, 4096, n))
		abort();
	return p;
}

static void make_tree(const char *d)
{
	/* Small files, several per chunk, then one over three chunks, then
	 * more small ones. */
	for (int i = 0; i < 60; i++) {
		char n[32];
		snprintf(n, sizeof(n), "s/f%02d", i);
		t_write(d, n, (size_t)(700 + (i * 1543) % 9000), (uint32_t)i + 1);
	}
	t_write(d, "t/big", 3 * CS + 77, 999);
	for (int i = 0; i < 20; i++) {
		char n[32];
		snprintf(n, sizeof(n), "u/g%02d", i);
		t_write(d, n, (size_t)(3000 + i * 211), (uint32_t)i + 500);
	}
}

/* The source bytes of file ino: malloc'd, *len set. */
static uint8_t *source_of(uint64_t ino, size_t *len)
{
	char rel[1024];
	struct dlfs_err err = {0};
	if (dlfs_path_of(txn, ino, rel, sizeof(rel), &err))
		abort();
	char *p = t_path(src_dir, rel);
	uint8_t *b = t_read(p, len);
	free(p);
	return b;
}

static struct dlfs_inode stat_of(uint64_t ino)
{
	struct dlfs_inode in;
	if (dlfs_stat(txn, ino, &in, NULL))
		abort();
	return in;
}

static uint64_t first_file(void)
{
	return dlfs_ds_info(ds)->super.first_file_ino;
}

static uint64_t last_file(void)
{
	return dlfs_ds_info(ds)->super.n_inodes;
}

static uint64_t global_of(uint32_t c, uint64_t k)
{
	return dlfs_ds_container(ds, c)->first_chunk + k;
}

static size_t chunk_len(uint32_t c, uint64_t k)
{
	uint64_t left = dlfs_ds_container(ds, c)->data_size - k * CS;
	return left < CS ? (size_t)left : CS;
}

static uint64_t pfs_bytes(struct dlfs_stats *s)
{
	return atomic_load(&s->pfs_bytes);
}

/* A load of key into a fresh buffer, as the cache would do it. */
struct load {
	uint8_t *buf;
	struct dlfs_load l;
	struct dlfs_err err;
};

static int load(struct dlfs_fetch *f, struct load *ld, uint64_t key,
		const void *what)
{
	memset(ld, 0, sizeof(*ld));
	ld->buf = aligned(CS);
	memset(ld->buf, 0xee, CS);
	ld->l.buf = ld->buf;
	ld->l.cap = CS;
	ld->l.err = &ld->err;
	return dlfs_fetch_load(f, txn, key, what, &ld->l);
}

static const uint8_t *load_data(const struct load *ld)
{
	return ld->buf + ld->l.off;
}

/* Does the loaded chunk (c, k) hold the source bytes of every file in
 * it? @return the number of files checked in it, -1 on a mismatch. */
static int chunk_matches(uint32_t c, uint64_t k, const uint8_t *data,
			 size_t len)
{
	uint64_t start = dlfs_chunk_start(CS, k);
	int n = 0;
	for (uint64_t ino = first_file(); ino <= last_file(); ino++) {
		struct dlfs_inode in = stat_of(ino);
		if (in.container != c || !in.size)
			continue;
		uint64_t lo = in.offset > start ? in.offset : start;
		uint64_t hi = in.offset + in.size < start + len
				      ? in.offset + in.size
				      : start + len;
		if (lo >= hi)
			continue;
		size_t slen;
		uint8_t *src = source_of(ino, &slen);
		int same = slen == in.size &&
			   !memcmp(data + (lo - start), src + (lo - in.offset),
				   hi - lo);
		free(src);
		if (!same)
			return -1;
		n++;
	}
	return n;
}

static void test_chunks(void)
{
	struct dlfs_stats st;
	struct dlfs_fetch f;
	struct load ld;
	dlfs_stats_init(&st);
	CHECK_EQ(dlfs_fetch_init(&f, ds, &st), 0);
	uint64_t total = 0, files = 0;
	uint32_t nc = (uint32_t)dlfs_ds_info(ds)->super.n_containers;
	for (uint32_t c = 0; c < nc; c++) {
		for (uint64_t k = 0; k < dlfs_ds_container(ds, c)->n_chunks;
		     k++) {
			uint64_t g = global_of(c, k);
			int ret = load(&f, &ld, dlfs_cache_chunk_key(c, k),
				       NULL);
			CHECK_EQ(ret, 0);
			CHECK_EQ(ld.l.len, chunk_len(c, k));
			CHECK_EQ(ld.l.off, 0);
			CHECK_EQ(ld.l.kept, 0);
			int n = chunk_matches(c, k, load_data(&ld), ld.l.len);
			CHECK(n > 0);
			files += n > 0 ? (uint64_t)n : 0;
			total += ld.l.len;
			if (g < MAX_CHUNKS && !ret) {
				chunk_bytes[g] = ld.buf;
				chunk_lens[g] = ld.l.len;
			} else {
				free(ld.buf);
			}
		}
	}
	uint64_t data = 0;
	for (uint32_t c = 0; c < nc; c++)
		data += dlfs_ds_container(ds, c)->data_size;
	CHECK_EQ(total, data);
	CHECK_EQ(pfs_bytes(&st), data);
	CHECK_EQ(atomic_load(&st.pfs_reads), n_chunks);
	CHECK_EQ(atomic_load(&f.pfs_inflight), 0);
	CHECK(files >= 81); /* every file, big's three chunks more */
	dlfs_fetch_destroy(&f);
}

/* A chunk of several files, and one in its middle. */
static void pick_victim(uint32_t *c, uint64_t *k, uint64_t *victim,
			uint64_t *lo, uint64_t *hi)
{
	for (uint64_t ino = first_file() + 1; ino < last_file(); ino++) {
		struct dlfs_inode a = stat_of(ino - 1), b = stat_of(ino),
				  n = stat_of(ino + 1);
		uint64_t kb = dlfs_chunk_at(CS, b.offset);
		if (a.container == b.container && n.container == b.container &&
		    a.size && n.size && b.size && b.size < CS &&
		    dlfs_chunk_at(CS, a.offset) == kb &&
		    dlfs_chunk_at(CS, n.offset + n.size - 1) == kb) {
			*c = b.container;
			*k = kb;
			*victim = ino;
			*lo = *hi = ino;
			while (*lo > first_file()) {
				struct dlfs_inode p = stat_of(*lo - 1);
				if (p.container != *c || !p.size ||
				    dlfs_chunk_at(CS, p.offset) != kb ||
				    dlfs_chunk_at(CS, p.offset + p.size - 1) !=
					    kb)
					break;
				(*lo)--;
			}
			while (*hi < last_file()) {
				struct dlfs_inode p = stat_of(*hi + 1);
				if (p.container != *c ||
				    dlfs_chunk_at(CS, p.offset) != kb)
					break;
				(*hi)++;
			}
			return;
		}
	}
	abort();
}

static void test_damaged_chunk(const char *dspath)
{
	struct dlfs_stats st;
	struct dlfs_fetch f;
	struct load ld;
	struct dlfs_err err = {0};
	uint32_t c;
	uint64_t k, victim, lo, hi;
	dlfs_stats_init(&st);
	CHECK_EQ(dlfs_fetch_init(&f, ds, &st), 0);
	pick_victim(&c, &k, &victim, &lo, &hi);
	CHECK(hi - lo >= 2);
	struct dlfs_inode vin = stat_of(victim);
	char name[DLFS_CONTAINER_NAME_MAX], rel[64];
	dlfs_container_name(c, name);
	snprintf(rel, sizeof(rel), "%s", name);
	char *cpath = t_path(dspath, rel);
	t_flip(cpath, vin.offset + vin.size / 2);

	CHECK_EQ(load(&f, &ld, dlfs_cache_chunk_key(c, k), NULL), -EBADMSG);
	CHECK_EQ(ld.err.code, -EBADMSG);
	CHECK(strstr(ld.err.msg, name) != NULL);
	free(ld.buf);
	CHECK_EQ(atomic_load(&f.pfs_inflight), 0);

	/* Salvage: the file alone, against its own checksum. */
	uint8_t *buf = NULL;
	size_t cap = 0;
	for (uint64_t ino = lo; ino <= hi; ino++) {
		struct dlfs_inode in = stat_of(ino);
		int ret = dlfs_fetch_salvage(&f, &in, &buf, &cap, &err);
		if (ino == victim) {
			CHECK_EQ(ret, -EIO);
			CHECK(!dlfs_fetch_file_known(&f, ino));
			continue;
		}
		CHECK_EQ(ret, 0);
		size_t slen;
		uint8_t *src = source_of(ino, &slen);
		CHECK(ret || (slen == in.size && !memcmp(buf, src, slen)));
		CHECK(dlfs_fetch_file_known(&f, ino));
		free(src);
	}
	free(buf);
	CHECK_EQ(atomic_load(&f.pfs_inflight), 0);

	/* Repaired, the chunk loads again: nothing was remembered. */
	t_flip(cpath, vin.offset + vin.size / 2);
	CHECK_EQ(load(&f, &ld, dlfs_cache_chunk_key(c, k), NULL), 0);
	free(ld.buf);
	free(cpath);
	dlfs_fetch_destroy(&f);
}

/* Files read alone: their pages, their checksum, the verified bit. */
static void test_files(void)
{
	struct dlfs_stats st;
	struct dlfs_fetch f;
	struct load ld;
	dlfs_stats_init(&st);
	CHECK_EQ(dlfs_fetch_init(&f, ds, &st), 0);
	int n = 0;
	for (uint64_t ino = first_file(); ino <= last_file(); ino++) {
		struct dlfs_inode in = stat_of(ino);
		if (!in.size || in.size + 8192 > CS)
			continue;
		CHECK(!dlfs_fetch_file_known(&f, ino));
		uint64_t before = pfs_bytes(&st);
		int ret = load(&f, &ld, dlfs_cache_file_key(ino), &in);
		CHECK_EQ(ret, 0);
		CHECK_EQ(ld.l.len, in.size);
		CHECK_EQ(ld.l.off, in.offset % 4096);
		CHECK_EQ(ld.l.kept, 0);
		size_t slen;
		uint8_t *src = source_of(ino, &slen);
		CHECK(!ret && slen == ld.l.len &&
		      !memcmp(load_data(&ld), src, slen));
		free(src);
		/* The 4 KiB pages around the file, nothing more. */
		uint64_t pages = (in.offset + in.size + 4095) / 4096 * 4096 -
				 in.offset / 4096 * 4096;
		CHECK_EQ(pfs_bytes(&st) - before, pages);
		CHECK(dlfs_fetch_file_known(&f, ino));
		free(ld.buf);
		n++;
	}
	CHECK(n >= 70);
	CHECK_EQ(atomic_load(&st.pfs_reads), n);

	/* Too large to be read alone into a chunk's buffer. */
	uint64_t big;
	CHECK_EQ(dlfs_resolve(txn, "t/big", &big, NULL), 0);
	struct dlfs_inode bin = stat_of(big);
	CHECK_EQ(load(&f, &ld, dlfs_cache_file_key(big), &bin), -EINVAL);
	free(ld.buf);

	/* Damaged records: a wrong checksum, a wrong offset. The bytes
	 * read are not served, and the file is not known good any more. */
	uint64_t ino = first_file() + 5;
	struct dlfs_inode in = stat_of(ino), bad = in;
	CHECK(dlfs_fetch_file_known(&f, ino));
	bad.xxh3 ^= 1;
	CHECK_EQ(load(&f, &ld, dlfs_cache_file_key(ino), &bad), -EBADMSG);
	CHECK_EQ(ld.err.code, -EBADMSG);
	CHECK(strstr(ld.err.msg, "checksum") != NULL);
	CHECK(!dlfs_fetch_file_known(&f, ino));
	free(ld.buf);
	bad = in;
	bad.offset += 1;
	CHECK_EQ(load(&f, &ld, dlfs_cache_file_key(ino), &bad), -EBADMSG);
	free(ld.buf);
	bad = in;
	bad.offset -= 4096; /* whole pages away: another file's bytes */
	CHECK_EQ(load(&f, &ld, dlfs_cache_file_key(ino), &bad), -EBADMSG);
	free(ld.buf);
	CHECK(!dlfs_fetch_file_known(&f, ino));
	/* The record put right: served and known again. */
	CHECK_EQ(load(&f, &ld, dlfs_cache_file_key(ino), &in), 0);
	CHECK(dlfs_fetch_file_known(&f, ino));
	free(ld.buf);
	CHECK_EQ(atomic_load(&f.pfs_inflight), 0);
	dlfs_fetch_destroy(&f);
}

static struct dlfs_nvme *open_nvme(const char *dir)
{
	const struct dlfs_info *info = dlfs_ds_info(ds);
	struct dlfs_nvme_conf conf = {
		.dir = dir,
		.capacity = 64 * (uint64_t)CS,
		.policy = DLFS_NVME_KEEP,
		.dataset_id_hex = info->dataset_id_hex,
		.chunk_size = CS,
		.n_containers = (uint32_t)info->super.n_containers,
		.containers = dlfs_ds_container(ds, 0),
	};
	struct dlfs_nvme *n = NULL;
	struct dlfs_err err = {0};
	int ret = dlfs_nvme_open(&conf, &n, &err);
	if (!ret)
		ret = dlfs_nvme_start(n, &err);
	if (ret) {
		fprintf(stderr, "nvme: %s\n", err.msg);
		abort();
	}
	return n;
}

/* The first file wholly inside chunk (c, k) after ino from, or 0. */
static uint64_t file_in(uint32_t c, uint64_t k, uint64_t from)
{
	for (uint64_t ino = from; ino <= last_file(); ino++) {
		struct dlfs_inode in = stat_of(ino);
		if (in.container == c && in.size &&
		    dlfs_chunk_at(CS, in.offset) == k &&
		    dlfs_chunk_at(CS, in.offset + in.size - 1) == k)
			return ino;
	}
	return 0;
}

static void test_nvme(void)
{
	struct dlfs_stats st;
	struct dlfs_fetch f;
	struct load ld;
	struct dlfs_nvme_stats ns;
	char *dir = t_tmpdir();
	dlfs_stats_init(&st);
	CHECK_EQ(dlfs_fetch_init(&f, ds, &st), 0);
	f.nvme = open_nvme(dir);

	/* From the PFS, then handed to the tier. */
	uint32_t c = 0;
	uint64_t k = 1, key = dlfs_cache_chunk_key(c, k);
	CHECK(!dlfs_nvme_has(f.nvme, c, k));
	CHECK_EQ(load(&f, &ld, key, NULL), 0);
	CHECK_EQ(ld.l.kept, 1);
	CHECK_EQ(pfs_bytes(&st), chunk_len(c, k));
	free(ld.buf);
	dlfs_nvme_flush(f.nvme);
	CHECK(dlfs_nvme_has(f.nvme, c, k));
	/* Then from the tier: no PFS read. */
	dlfs_nvme_get_stats(f.nvme, &ns);
	uint64_t hits = ns.hits;
	CHECK_EQ(load(&f, &ld, key, NULL), 0);
	CHECK_EQ(ld.l.kept, 1);
	CHECK_EQ(ld.l.len, chunk_len(c, k));
	CHECK(ld.l.len == chunk_lens[global_of(c, k)] &&
	      !memcmp(load_data(&ld), chunk_bytes[global_of(c, k)], ld.l.len));
	free(ld.buf);
	CHECK_EQ(pfs_bytes(&st), chunk_len(c, k));
	dlfs_nvme_get_stats(f.nvme, &ns);
	CHECK_EQ(ns.hits, hits + 1);

	/* The small-file path: served from the tier once checked. */
	uint64_t a = file_in(c, k, first_file());
	uint64_t b = file_in(c, k, a + 1);
	uint64_t z = file_in(c, k, b + 1);
	CHECK(a && b && z);
	struct dlfs_inode in = stat_of(a);
	uint8_t *buf = aligned(DLFS_FETCH_BUF_SIZE);
	const uint8_t *data = NULL;
	size_t slen;
	uint8_t *src = source_of(a, &slen);
	CHECK(!dlfs_fetch_file_known(&f, a));
	CHECK_EQ(dlfs_fetch_file_nvme(&f, &in, 0, slen, buf, &data), 0);
	CHECK(data && !memcmp(data, src, slen));
	CHECK(dlfs_fetch_file_known(&f, a));
	CHECK_EQ(dlfs_fetch_file_nvme(&f, &in, 10, 100, buf, &data), 0);
	CHECK(data && !memcmp(data, src + 10, 100));
	CHECK_EQ(dlfs_fetch_file_nvme(&f, &in, slen, 1, buf, &data), -ENOENT);
	free(src);
	/* A damaged record of a file not checked yet: not served, and the
	 * chunk leaves the tier (the chunk path reads it again). */
	struct dlfs_inode bad = stat_of(b);
	bad.xxh3 ^= 1;
	CHECK_EQ(dlfs_fetch_file_nvme(&f, &bad, 0, 10, buf, &data), -ENOENT);
	CHECK(!dlfs_fetch_file_known(&f, b));
	CHECK(!dlfs_nvme_has(f.nvme, c, k));
	dlfs_nvme_get_stats(f.nvme, &ns);
	CHECK_EQ(ns.corrupt, 1);
	/* Not in the tier: the chunk path. */
	in = stat_of(z);
	CHECK_EQ(dlfs_fetch_file_nvme(&f, &in, 0, 10, buf, &data), -ENOENT);
	CHECK_EQ(pfs_bytes(&st), chunk_len(c, k));

	/* A file key whose chunks are in the tier comes from it. */
	CHECK_EQ(load(&f, &ld, key, NULL), 0);
	free(ld.buf);
	dlfs_nvme_flush(f.nvme);
	uint64_t before = pfs_bytes(&st);
	CHECK_EQ(load(&f, &ld, dlfs_cache_file_key(z), &in), 0);
	CHECK_EQ(ld.l.kept, 1);
	src = source_of(z, &slen);
	CHECK(ld.l.len == slen && !memcmp(load_data(&ld), src, slen));
	free(src);
	free(ld.buf);
	CHECK_EQ(pfs_bytes(&st), before);
	CHECK(dlfs_fetch_file_known(&f, z));

	/* Bad bytes in the tier under a file read alone: not served; the
	 * chunk leaves the tier and the PFS gives the file. */
	uint64_t y = file_in(c, k, z + 1);
	CHECK(y != 0);
	in = stat_of(y);
	char cache_rel[128];
	snprintf(cache_rel, sizeof(cache_rel), "%s/%06u.cache",
		 dlfs_ds_info(ds)->dataset_id_hex, in.container);
	char *cache_file = t_path(dir, cache_rel);
	t_flip(cache_file, in.offset + 1);
	CHECK_EQ(load(&f, &ld, dlfs_cache_file_key(y), &in), 0);
	CHECK_EQ(ld.l.kept, 0);
	src = source_of(y, &slen);
	CHECK(ld.l.len == slen && !memcmp(load_data(&ld), src, slen));
	free(src);
	free(ld.buf);
	CHECK(pfs_bytes(&st) > before);
	CHECK(!dlfs_nvme_has(f.nvme, c, k));
	free(cache_file);

	/* A file over several chunks, all in the tier. */
	uint64_t big;
	CHECK_EQ(dlfs_resolve(txn, "t/big", &big, NULL), 0);
	struct dlfs_inode bin = stat_of(big);
	uint64_t k0, k1;
	dlfs_file_chunks(CS, &bin, 0, bin.size, &k0, &k1);
	CHECK(k1 > k0);
	for (uint64_t kk = k0; kk <= k1; kk++) {
		CHECK_EQ(load(&f, &ld, dlfs_cache_chunk_key(bin.container, kk),
			      NULL),
			 0);
		free(ld.buf);
	}
	dlfs_nvme_flush(f.nvme);
	src = source_of(big, &slen);
	CHECK_EQ(dlfs_fetch_file_nvme(&f, &bin, 0, slen, buf, &data), 0);
	CHECK(data && !memcmp(data, src, slen));
	free(src);
	free(buf);
	CHECK_EQ(atomic_load(&f.pfs_inflight), 0);
	dlfs_nvme_close(f.nvme);
	dlfs_fetch_destroy(&f);
	t_rmrf(dir);
	free(dir);
}

/* ---- a fake peer ---- */

enum peer_mode { PEER_GOOD, PEER_BAD, PEER_SHORT, PEER_FAIL };

struct fake_peer {
	enum peer_mode mode;
	unsigned asked;
	uint64_t last;
};

/* Odd chunks live on rank 1, even ones here (rank 0). */
static unsigned peer_home(void *arg, uint64_t g)
{
	(void)arg;
	return (unsigned)(g % 2);
}

static int peer_get(void *arg, uint64_t g, void *buf, size_t cap,
		    size_t *len)
{
	struct fake_peer *p = arg;
	p->asked++;
	p->last = g;
	if (p->mode == PEER_FAIL || g >= MAX_CHUNKS || !chunk_bytes[g])
		return -EIO;
	CHECK(cap >= chunk_lens[g]);
	memcpy(buf, chunk_bytes[g], chunk_lens[g]);
	*len = chunk_lens[g];
	if (p->mode == PEER_BAD)
		((uint8_t *)buf)[*len / 3] ^= 0x20;
	if (p->mode == PEER_SHORT)
		(*len)--;
	return 0;
}

static void test_peer(void)
{
	struct dlfs_stats st;
	struct dlfs_fetch f;
	struct load ld;
	struct fake_peer fp = {0};
	struct dlfs_fetch_peer peer = {
		.rank = 0, .home = peer_home, .get = peer_get, .arg = &fp,
	};
	dlfs_stats_init(&st);
	CHECK_EQ(dlfs_fetch_init(&f, ds, &st), 0);
	f.peer = &peer;
	/* Chunk (0, 1) is global 1: rank 1's. */
	uint32_t c = 0;
	uint64_t k = 1, g = global_of(c, k), key = dlfs_cache_chunk_key(c, k);
	CHECK_EQ(g % 2, 1);

	CHECK_EQ(load(&f, &ld, key, NULL), 0);
	CHECK_EQ(fp.asked, 1);
	CHECK_EQ(fp.last, g);
	CHECK_EQ(pfs_bytes(&st), 0);
	CHECK(ld.l.len == chunk_lens[g] &&
	      !memcmp(load_data(&ld), chunk_bytes[g], ld.l.len));
	CHECK_EQ(ld.l.kept, 0);
	free(ld.buf);

	/* This rank's own chunk: the PFS, the peer is not asked. */
	CHECK_EQ(load(&f, &ld, dlfs_cache_chunk_key(c, 0), NULL), 0);
	CHECK_EQ(fp.asked, 1);
	CHECK_EQ(pfs_bytes(&st), chunk_len(c, 0));
	free(ld.buf);

	/* Bad or short bytes from the peer: rejected, counted, read from
	 * the PFS instead. */
	uint64_t err_peer = 0;
	enum peer_mode bad_modes[] = {PEER_BAD, PEER_SHORT};
	for (int i = 0; i < 2; i++) {
		fp.mode = bad_modes[i];
		uint64_t before = pfs_bytes(&st);
		CHECK_EQ(load(&f, &ld, key, NULL), 0);
		CHECK_EQ(atomic_load(&st.err_peer), ++err_peer);
		CHECK_EQ(pfs_bytes(&st) - before, chunk_lens[g]);
		CHECK(ld.l.len == chunk_lens[g] &&
		      !memcmp(load_data(&ld), chunk_bytes[g], ld.l.len));
		free(ld.buf);
	}
	CHECK_EQ(fp.asked, 3);
	/* A peer that fails: the PFS, no bad bytes to count. */
	fp.mode = PEER_FAIL;
	uint64_t before = pfs_bytes(&st);
	CHECK_EQ(load(&f, &ld, key, NULL), 0);
	CHECK_EQ(fp.asked, 4);
	CHECK_EQ(atomic_load(&st.err_peer), err_peer);
	CHECK_EQ(pfs_bytes(&st) - before, chunk_lens[g]);
	CHECK(!memcmp(load_data(&ld), chunk_bytes[g], ld.l.len));
	free(ld.buf);

	/* With an NVMe tier, a peer's chunk is kept there too. */
	char *dir = t_tmpdir();
	f.nvme = open_nvme(dir);
	fp.mode = PEER_GOOD;
	uint64_t k3 = 3, g3 = global_of(c, k3);
	CHECK_EQ(g3 % 2, 1);
	before = pfs_bytes(&st);
	CHECK_EQ(load(&f, &ld, dlfs_cache_chunk_key(c, k3), NULL), 0);
	CHECK_EQ(ld.l.kept, 1);
	CHECK_EQ(fp.last, g3);
	CHECK_EQ(pfs_bytes(&st), before);
	free(ld.buf);
	dlfs_nvme_flush(f.nvme);
	CHECK(dlfs_nvme_has(f.nvme, c, k3));
	/* Once there, neither the peer nor the PFS is asked. */
	unsigned asked = fp.asked;
	CHECK_EQ(load(&f, &ld, dlfs_cache_chunk_key(c, k3), NULL), 0);
	CHECK_EQ(fp.asked, asked);
	CHECK_EQ(pfs_bytes(&st), before);
	CHECK(!memcmp(load_data(&ld), chunk_bytes[g3], ld.l.len));
	free(ld.buf);
	CHECK_EQ(atomic_load(&f.pfs_inflight), 0);
	dlfs_nvme_close(f.nvme);
	t_rmrf(dir);
	free(dir);
	dlfs_fetch_destroy(&f);
}

int main(void)
{
	struct dlfs_err err = {0};
	src_dir = t_tmpdir();
	char *dir = t_tmpdir();
	char *out = t_path(dir, "ds.dlfs");
	make_tree(src_dir);
	if (t_pack(src_dir, out, CS, CONTAINER, 0))
		return 1;
	if (dlfs_ds_open(out, &ds, &err) || dlfs_txn_begin(ds, &txn, &err)) {
		fprintf(stderr, "open: %s\n", err.msg);
		return 1;
	}
	n_chunks = dlfs_ds_n_chunks(ds);
	CHECK(dlfs_ds_info(ds)->super.n_containers >= 3);
	CHECK(n_chunks >= 8 && n_chunks <= MAX_CHUNKS);

	test_chunks();
	test_damaged_chunk(out);
	test_files();
	test_nvme();
	test_peer();

	for (int g = 0; g < MAX_CHUNKS; g++)
		free(chunk_bytes[g]);
	dlfs_txn_end(txn);
	dlfs_ds_close(ds);
	t_rmrf(src_dir);
	t_rmrf(dir);
	free(src_dir);
	free(dir);
	free(out);
	return t_done("test_fetch");
}
