/*
 * The read core through its public API (src/core/reader.h) over real
 * datasets: every file read whole and in pieces (across chunks, at and
 * past the end, empty reads, 32 chunks in place and more gathered), from
 * several threads; the unit of a miss (files alone read about the data
 * once with a small RAM tier, whole chunks read many times that); a
 * flipped container byte (that file -EIO, its chunk's neighbours
 * salvaged); damaged index records (that file -EIO, every other file
 * right); a container cut short (the files of its chunks past the cut
 * -EIO, every other file right); and the NVMe tier filled by the sweep
 * from one PFS read per chunk, then serving a second pass alone.
 *
 * The counters come from the reader's insides (read.h).
 */
#include <lmdb.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dlfs/format.h"
#include "read.h"
#include "tutil.h"

/* ---- datasets and their sources ---- */

struct file {
	uint64_t ino;
	char path[256];
	uint8_t *data;
	size_t size;
	struct dlfs_inode in;
	int damaged; /* its index record fails dlfs_stat */
};

struct dataset {
	char *src, *dir, *path;
	uint64_t cs;
	struct dlfs_ds *ds;
	struct file *files;
	size_t n_files;
	uint64_t data_bytes; /* the containers' data regions */
	int resized_ok; /* records may give sizes other than the source's */
};

/* Open d->path and pair every file with its source. */
static void ds_open(struct dataset *d)
{
	struct dlfs_err err = {0};
	struct dlfs_txn *txn;
	if (dlfs_ds_open(d->path, &d->ds, &err) ||
	    dlfs_txn_begin(d->ds, &txn, &err)) {
		fprintf(stderr, "open %s: %s\n", d->path, err.msg);
		exit(1);
	}
	const struct dlfs_info *info = dlfs_ds_info(d->ds);
	d->cs = info->super.chunk_size;
	d->n_files = info->super.n_files;
	d->files = calloc(d->n_files, sizeof(*d->files));
	d->data_bytes = 0;
	for (uint32_t c = 0; c < info->super.n_containers; c++)
		d->data_bytes += dlfs_ds_container(d->ds, c)->data_size;
	for (size_t i = 0; i < d->n_files; i++) {
		struct file *f = &d->files[i];
		f->ino = info->super.first_file_ino + i;
		int ret = dlfs_path_of(txn, f->ino, f->path, sizeof(f->path),
				       &err);
		if (!ret) {
			ret = dlfs_stat(txn, f->ino, &f->in, &err);
			f->damaged = ret == -DLFS_ECORRUPT;
			if (f->damaged)
				ret = 0;
		}
		if (ret) {
			fprintf(stderr, "inode %llu: %s\n",
				(unsigned long long)f->ino, err.msg);
			exit(1);
		}
		char *p = t_path(d->src, f->path);
		f->data = t_read(p, &f->size);
		free(p);
		if (!f->data || (!f->damaged && !d->resized_ok &&
				 f->size != f->in.size))
			exit(1);
	}
	dlfs_txn_end(txn);
}

static void ds_close(struct dataset *d)
{
	for (size_t i = 0; i < d->n_files; i++)
		free(d->files[i].data);
	free(d->files);
	d->files = NULL;
	dlfs_ds_close(d->ds);
	d->ds = NULL;
}

static void ds_pack(struct dataset *d, uint64_t cs, uint64_t container,
		    uint64_t align)
{
	d->dir = t_tmpdir();
	d->path = t_path(d->dir, "ds.dlfs");
	if (t_pack(d->src, d->path, cs, container, align))
		exit(1);
	ds_open(d);
}

static void ds_free(struct dataset *d)
{
	ds_close(d);
	t_rmrf(d->src);
	t_rmrf(d->dir);
	free(d->src);
	free(d->dir);
	free(d->path);
}

static struct file *by_path(struct dataset *d, const char *path)
{
	for (size_t i = 0; i < d->n_files; i++)
		if (!strcmp(d->files[i].path, path))
			return &d->files[i];
	abort();
}

/* ---- readers ---- */

static unsigned n_logged;
static char last_log[2048];
static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;

static void log_fn(void *arg, int prio, const char *msg)
{
	(void)arg;
	(void)prio;
	pthread_mutex_lock(&log_mu);
	n_logged++;
	snprintf(last_log, sizeof(last_log), "%s", msg);
	pthread_mutex_unlock(&log_mu);
}

static struct dlfs_reader_conf conf_of(uint64_t ram, enum dlfs_read_unit u)
{
	return (struct dlfs_reader_conf){
		.ram_cache = ram, .read_unit = u, .log = log_fn,
	};
}

static struct dlfs_reader *reader_open(struct dataset *d,
				       const struct dlfs_reader_conf *conf,
				       struct dlfs_reader_ctx **ctx)
{
	struct dlfs_reader *r = NULL;
	struct dlfs_err err = {0};
	if (dlfs_reader_open(d->ds, conf, &r, &err) ||
	    dlfs_reader_start(r, &err) || dlfs_reader_ctx_new(r, ctx, &err)) {
		fprintf(stderr, "reader: %s\n", err.msg);
		exit(1);
	}
	return r;
}

static void reader_close(struct dlfs_reader *r, struct dlfs_reader_ctx *ctx)
{
	dlfs_reader_ctx_free(ctx);
	dlfs_reader_close(r);
}

static uint64_t pfs_bytes(struct dlfs_reader *r)
{
	return atomic_load(&r->stats.pfs_bytes);
}

/* Read [off, off + size) of ino into buf (size bytes at least).
 * @return dlfs_read's code; *len the bytes, *iovcnt the pieces. */
static int read_into(struct dlfs_reader_ctx *ctx, uint64_t ino, uint64_t off,
		     size_t size, uint8_t *buf, size_t *len, int *iovcnt)
{
	struct dlfs_read_out out;
	int ret = dlfs_read(ctx, ino, off, size, &out);
	size_t n = 0;
	for (int i = 0; !ret && i < out.iovcnt; i++) {
		memcpy(buf + n, out.iov[i].iov_base, out.iov[i].iov_len);
		n += out.iov[i].iov_len;
	}
	if (!ret && n != out.len) {
		fprintf(stderr, "iov lengths %zu, len %zu\n", n, out.len);
		t_failures++;
	}
	*len = ret ? 0 : out.len;
	if (iovcnt)
		*iovcnt = ret ? 0 : out.iovcnt;
	dlfs_read_done(ctx);
	return ret;
}

/* Does a read of f at off of size bytes give the source's? */
static int read_ok(struct dlfs_reader_ctx *ctx, const struct file *f,
		   uint64_t off, size_t size)
{
	size_t want = off >= f->size ? 0
		      : f->size - off < size ? f->size - off
					     : size;
	uint8_t *buf = malloc(want + 1);
	size_t len;
	int ret = read_into(ctx, f->ino, off, size, buf, &len, NULL);
	int ok = !ret && len == want && !memcmp(buf, f->data + off, want);
	if (!ok)
		fprintf(stderr, "read of %s at %llu, %zu bytes: ret %d, %zu "
				"bytes%s\n",
			f->path, (unsigned long long)off, size, ret, len,
			ret || len != want ? "" : ", wrong bytes");
	free(buf);
	return ok;
}

/* ---- whole files and pieces ---- */

static void make_tree_a(const char *d)
{
	const size_t cs = 16384;
	static const size_t sizes[] = {0, 1, 4095, 4096, 4097, 8192, 16383,
				       16384, 100, 2000};
	for (int i = 0; i < 150; i++) {
		char n[64];
		snprintf(n, sizeof(n), "small/f%03d", i);
		size_t size = i < 10 ? sizes[i] : (size_t)(300 + (i * 2749) % 9000);
		t_write(d, n, size, (uint32_t)i + 1);
	}
	for (int i = 0; i < 6; i++) {
		char n[64];
		snprintf(n, sizeof(n), "mid/m%d", i);
		t_write(d, n, 2 * cs + 1000 * (size_t)i + 7, (uint32_t)i + 300);
	}
	t_write(d, "huge", 40 * cs + 123, 777); /* more than 32 chunks */
	for (int i = 0; i < 30; i++) {
		char n[64];
		snprintf(n, sizeof(n), "tail/t%02d", i);
		t_write(d, n, (size_t)(1000 + i * 97), (uint32_t)i + 900);
	}
	char *link = t_path(d, "link");
	if (symlink("huge", link))
		abort();
	free(link);
}

static void test_pieces(struct dataset *d)
{
	struct dlfs_reader_ctx *ctx;
	struct dlfs_reader_conf conf = conf_of(8 * d->cs, DLFS_UNIT_AUTO);
	struct dlfs_reader *r = reader_open(d, &conf, &ctx);
	const uint64_t cs = d->cs;
	int bad = 0;
	for (size_t i = 0; i < d->n_files; i++) {
		const struct file *f = &d->files[i];
		bad += !read_ok(ctx, f, 0, f->size + 10);
		/* Offsets: the ends, the middle, and around every chunk
		 * boundary inside the file. */
		uint64_t offs[64];
		unsigned n = 0;
		uint64_t sz = f->size;
		offs[n++] = 0;
		offs[n++] = 1;
		offs[n++] = sz / 2;
		offs[n++] = sz ? sz - 1 : 0;
		offs[n++] = sz;
		offs[n++] = sz + 5;
		uint64_t into = (f->in.offset - cs) % cs; /* in its chunk */
		for (uint64_t b = cs - into; b < sz && n + 3 <= 64; b += cs) {
			offs[n++] = b - 1;
			offs[n++] = b;
			offs[n++] = b + 1;
		}
		static const size_t lens[] = {0, 1, 100, 4096, 16383, 16385,
					      2 * 16384 + 3};
		for (unsigned o = 0; o < n; o++)
			for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]);
			     l++)
				bad += !read_ok(ctx, f, offs[o], lens[l]);
	}
	CHECK_EQ(bad, 0);

	/* 32 chunks in place, 33 gathered into one piece. */
	struct file *huge = by_path(d, "huge");
	uint64_t b = cs - (huge->in.offset - cs) % cs;
	uint8_t *buf = malloc(huge->size + 1);
	size_t len;
	int iovcnt;
	CHECK_EQ(read_into(ctx, huge->ino, b, 32 * cs, buf, &len, &iovcnt), 0);
	CHECK_EQ(len, 32 * cs);
	CHECK_EQ(iovcnt, 32);
	CHECK(!memcmp(buf, huge->data + b, len));
	CHECK_EQ(read_into(ctx, huge->ino, b, 32 * cs + 1, buf, &len, &iovcnt),
		 0);
	CHECK_EQ(len, 32 * cs + 1);
	CHECK_EQ(iovcnt, 1);
	CHECK(!memcmp(buf, huge->data + b, len));
	CHECK_EQ(read_into(ctx, huge->ino, 0, huge->size, buf, &len, &iovcnt),
		 0);
	CHECK_EQ(len, huge->size);
	CHECK_EQ(iovcnt, 1);
	CHECK(!memcmp(buf, huge->data, len));
	free(buf);

	/* What is not a regular file. */
	uint64_t ino;
	struct dlfs_read_out out;
	CHECK_EQ(dlfs_resolve(dlfs_reader_ctx_txn(ctx), "link", &ino, NULL), 0);
	CHECK_EQ(dlfs_read(ctx, ino, 0, 10, &out), -EINVAL);
	dlfs_read_done(ctx);
	CHECK_EQ(dlfs_read(ctx, DLFS_ROOT_INO, 0, 10, &out), -EISDIR);
	dlfs_read_done(ctx);
	CHECK_EQ(dlfs_read(ctx, dlfs_ds_info(d->ds)->super.n_inodes + 1, 0, 10,
			   &out),
		 -ENOENT);
	dlfs_read_done(ctx);

	/* Nothing failed, nothing stays pinned. */
	CHECK_EQ(atomic_load(&r->stats.err_checksum) +
			 atomic_load(&r->stats.err_io) +
			 atomic_load(&r->stats.err_container),
		 0);
	struct dlfs_cache_stats cs_st;
	dlfs_cache_get_stats(r->cache, &cs_st);
	CHECK(cs_st.chunks <= 8);
	reader_close(r, ctx);
}

/* Threads with their own contexts, random pieces of random files. */
struct worker {
	struct dlfs_reader *r;
	struct dataset *d;
	uint32_t seed;
	int bad;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct dlfs_reader_ctx *ctx;
	struct dlfs_err err = {0};
	uint32_t x = w->seed;
	if (dlfs_reader_ctx_new(w->r, &ctx, &err)) {
		w->bad++;
		return NULL;
	}
	for (int i = 0; i < 1500; i++) {
		x = x * 1103515245u + 12345;
		const struct file *f = &w->d->files[(x >> 8) % w->d->n_files];
		x = x * 1103515245u + 12345;
		uint64_t off = f->size ? (x >> 4) % (f->size + 1) : 0;
		x = x * 1103515245u + 12345;
		size_t size = (x >> 4) % (3 * w->d->cs);
		w->bad += !read_ok(ctx, f, i % 3 ? off : 0, size);
	}
	dlfs_reader_ctx_free(ctx);
	return NULL;
}

static void test_threads(struct dataset *d, enum dlfs_read_unit unit)
{
	struct dlfs_reader_ctx *ctx;
	struct dlfs_reader_conf conf = conf_of(4 * d->cs, unit);
	struct dlfs_reader *r = reader_open(d, &conf, &ctx);
	pthread_t th[4];
	struct worker w[4];
	for (int i = 0; i < 4; i++) {
		w[i] = (struct worker){r, d, (uint32_t)i * 7919 + 1, 0};
		if (pthread_create(&th[i], NULL, worker_main, &w[i]))
			abort();
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		CHECK_EQ(w[i].bad, 0);
	}
	reader_close(r, ctx);
}

/* ---- the unit of a miss ---- */

static void shuffle(size_t *a, size_t n, uint32_t seed)
{
	uint32_t x = seed;
	for (size_t i = n; i > 1; i--) {
		x = x * 1103515245u + 12345;
		size_t j = (x >> 8) % i;
		size_t t = a[i - 1];
		a[i - 1] = a[j];
		a[j] = t;
	}
}

/* Read every file whole once, in a seeded random order. */
static int read_all_random(struct dlfs_reader_ctx *ctx, struct dataset *d,
			   uint32_t seed)
{
	size_t *order = malloc(d->n_files * sizeof(*order));
	int bad = 0;
	for (size_t i = 0; i < d->n_files; i++)
		order[i] = i;
	shuffle(order, d->n_files, seed);
	for (size_t i = 0; i < d->n_files; i++) {
		const struct file *f = &d->files[order[i]];
		bad += !read_ok(ctx, f, 0, f->size);
	}
	free(order);
	return bad;
}

static void test_units(void)
{
	struct dataset d = {.src = t_tmpdir()};
	const uint64_t cs = 128 * 1024;
	uint64_t sum = 0;
	/* Files of 40 to 64 KiB (at most half a chunk: they may be read
	 * alone), about a hundred chunks. */
	for (int i = 0; i < 240; i++) {
		char n[32];
		size_t size = 4096 * (10 + (size_t)(i * 7919 % 7)) - 100;
		snprintf(n, sizeof(n), "f%02d", i);
		t_write(d.src, n, size, (uint32_t)i + 1);
		sum += size;
	}
	/* Files on page boundaries: a file read alone reads its own
	 * pages. */
	ds_pack(&d, cs, 1024 * cs, 4096);
	struct dlfs_reader_ctx *ctx;
	struct dlfs_reader_conf conf = conf_of(4 * cs, DLFS_UNIT_FILE);
	struct dlfs_reader *r;
	struct dlfs_tier_snap t;
	struct dlfs_fill_stats fs;
	struct dlfs_grain_stats gs;
	CHECK(d.data_bytes > 4 * 4 * cs); /* RAM is far smaller */

	/* Files alone: about the data, once. */
	r = reader_open(&d, &conf, &ctx);
	CHECK_EQ(read_all_random(ctx, &d, 1), 0);
	uint64_t got = pfs_bytes(r);
	CHECK(got >= sum);
	CHECK(got * 100 <= sum * 105);
	memset(&t, 0, sizeof(t));
	dlfs_reader_snapshot(r, &t, &fs, &gs);
	/* (A file in the chunk of the file read just before is read with
	 * its chunk: it may be a sequential reader.) */
	CHECK(gs.file_reads >= d.n_files * 9 / 10);
	fprintf(stderr, "files alone: %.3fx the data, %llu of %zu files "
			"alone\n",
		(double)got / (double)sum, (unsigned long long)gs.file_reads,
		d.n_files);
	reader_close(r, ctx);

	/* Whole chunks with the same RAM: every chunk load is a PFS read
	 * of the chunk, and most of each is wasted. */
	conf = conf_of(4 * cs, DLFS_UNIT_CHUNK);
	r = reader_open(&d, &conf, &ctx);
	CHECK_EQ(read_all_random(ctx, &d, 1), 0);
	memset(&t, 0, sizeof(t));
	dlfs_reader_snapshot(r, &t, &fs, &gs);
	CHECK_EQ(gs.file_reads, 0);
	CHECK_EQ(atomic_load(&r->stats.pfs_reads), t.ram.misses);
	CHECK(t.ram.misses > dlfs_ds_n_chunks(d.ds));
	CHECK(2 * pfs_bytes(r) > 3 * d.data_bytes);
	CHECK(pfs_bytes(r) <= t.ram.misses * cs);
	reader_close(r, ctx);

	/* Whole chunks and RAM for all of them: each chunk once. */
	conf = conf_of(d.data_bytes + cs, DLFS_UNIT_CHUNK);
	r = reader_open(&d, &conf, &ctx);
	CHECK_EQ(read_all_random(ctx, &d, 1), 0);
	CHECK_EQ(read_all_random(ctx, &d, 2), 0);
	CHECK_EQ(pfs_bytes(r), d.data_bytes);
	CHECK_EQ(atomic_load(&r->stats.pfs_reads), dlfs_ds_n_chunks(d.ds));
	reader_close(r, ctx);
	ds_free(&d);
}

/* ---- damage ---- */

static uint64_t file_reads(struct dlfs_reader *r)
{
	struct dlfs_tier_snap t;
	struct dlfs_fill_stats fs;
	struct dlfs_grain_stats gs;
	memset(&t, 0, sizeof(t));
	dlfs_reader_snapshot(r, &t, &fs, &gs);
	return gs.file_reads;
}

static uint64_t errors(struct dlfs_reader *r)
{
	return atomic_load(&r->stats.err_checksum) +
	       atomic_load(&r->stats.err_io) +
	       atomic_load(&r->stats.err_container) +
	       atomic_load(&r->stats.err_index);
}

/* A small file (one that may be read alone: at most half a chunk) with
 * neighbours before and after it in its chunk. */
static size_t pick_victim(struct dataset *d, size_t from)
{
	for (size_t i = from + 1; i + 1 < d->n_files; i++) {
		const struct dlfs_inode *a = &d->files[i - 1].in,
					*b = &d->files[i].in,
					*n = &d->files[i + 1].in;
		uint64_t kb = dlfs_chunk_at(d->cs, b->offset);
		if (a->size && b->size > 16 && n->size &&
		    b->size <= d->cs / 2 &&
		    a->container == b->container &&
		    n->container == b->container &&
		    dlfs_chunk_at(d->cs, a->offset) == kb &&
		    dlfs_chunk_at(d->cs, n->offset + n->size - 1) == kb)
			return i;
	}
	abort();
}

/* Files [*lo, *hi] all in the chunk of file i. */
static void chunk_mates(struct dataset *d, size_t i, size_t *lo, size_t *hi)
{
	uint64_t k = dlfs_chunk_at(d->cs, d->files[i].in.offset);
	uint32_t c = d->files[i].in.container;
	*lo = *hi = i;
	while (*lo > 0 && d->files[*lo - 1].in.container == c &&
	       d->files[*lo - 1].in.size &&
	       dlfs_chunk_at(d->cs, d->files[*lo - 1].in.offset) == k)
		(*lo)--;
	while (*hi + 1 < d->n_files && d->files[*hi + 1].in.container == c &&
	       d->files[*hi + 1].in.size &&
	       dlfs_chunk_at(d->cs, d->files[*hi + 1].in.offset) == k)
		(*hi)++;
}

static void test_flipped(struct dataset *d, enum dlfs_read_unit unit)
{
	size_t v = pick_victim(d, 20), lo, hi;
	chunk_mates(d, v, &lo, &hi);
	CHECK(hi - lo >= 2);
	const struct file *vf = &d->files[v];
	char name[DLFS_CONTAINER_NAME_MAX];
	dlfs_container_name(vf->in.container, name);
	char *cpath = t_path(d->path, name);
	t_flip(cpath, vf->in.offset + vf->size / 2);

	struct dlfs_reader_ctx *ctx;
	struct dlfs_reader_conf conf = conf_of(4 * d->cs, unit);
	struct dlfs_reader *r = reader_open(d, &conf, &ctx);
	uint8_t *buf = malloc(d->cs);
	size_t len;
	n_logged = 0;
	/* The damaged file fails, again and again: nothing bad is kept;
	 * its neighbours are right, before and after. */
	CHECK_EQ(read_into(ctx, vf->ino, 0, vf->size, buf, &len, NULL), -EIO);
	for (size_t i = lo; i <= hi; i++)
		if (i != v)
			CHECK(read_ok(ctx, &d->files[i], 0, d->files[i].size));
	CHECK_EQ(read_into(ctx, vf->ino, 0, vf->size, buf, &len, NULL), -EIO);
	CHECK_EQ(read_into(ctx, vf->ino, 10, 5, buf, &len, NULL), -EIO);
	for (size_t i = lo; i <= hi; i++)
		if (i != v)
			CHECK(read_ok(ctx, &d->files[i], 1, d->files[i].size));
	/* Damaged data is a checksum error, whether the file was read
	 * alone (the first time, in file mode) or with its chunk. */
	CHECK_EQ(file_reads(r) > 0, unit == DLFS_UNIT_FILE);
	CHECK_EQ(atomic_load(&r->stats.err_checksum), 3);
	CHECK_EQ(errors(r), 3);
	/* Logged once, naming it. */
	CHECK_EQ(n_logged, 1);
	CHECK(strstr(last_log, vf->path) != NULL);
	free(buf);
	reader_close(r, ctx);
	t_flip(cpath, vf->in.offset + vf->size / 2);
	free(cpath);
}

/* Rewrite the index record of file ino: its offset, size and checksum. */
static void damage_record(const char *dspath, uint64_t ino, uint64_t offset,
			  uint64_t size, uint64_t xxh3)
{
	MDB_env *env = NULL;
	MDB_txn *txn = NULL;
	MDB_dbi dbi;
	uint8_t kb[8], block[DLFS_INODES_PER_BLOCK * DLFS_INODE_REC_SIZE];
	MDB_val k = {8, kb}, v;
	char *ipath = t_path(dspath, DLFS_INDEX_NAME);
	/* dlfs-pack writes path-bound records (format 1.1). */
	const uint64_t pb = DLFS_FEATURE(PATH_BOUND);
	const size_t rs = dlfs_inode_rec_size(pb);
	int rc = mdb_env_create(&env);
	if (!rc)
		rc = mdb_env_set_maxdbs(env, 8);
	if (!rc)
		rc = mdb_env_set_mapsize(env, (size_t)1 << 30);
	if (!rc)
		rc = mdb_env_open(env, ipath, MDB_NOSUBDIR | MDB_NOLOCK, 0644);
	if (!rc)
		rc = mdb_txn_begin(env, NULL, 0, &txn);
	if (!rc)
		rc = mdb_dbi_open(txn, dlfs_inodes_db(pb), 0, &dbi);
	dlfs_put_be64(kb, (ino - 1) / DLFS_INODES_PER_BLOCK);
	if (!rc)
		rc = mdb_get(txn, dbi, &k, &v);
	if (!rc && v.mv_size <= sizeof(block)) {
		struct dlfs_inode_rec rec;
		size_t slot = (ino - 1) % DLFS_INODES_PER_BLOCK;
		memcpy(block, v.mv_data, v.mv_size);
		dlfs_inode_decode(block + slot * rs, pb, &rec);
		rec.loc = (rec.loc & ~DLFS_LOC_OFFSET_MASK) | offset;
		rec.size = size;
		rec.xxh3 = xxh3;
		dlfs_inode_encode(&rec, pb, block + slot * rs);
		v.mv_data = block;
		rc = mdb_put(txn, dbi, &k, &v, 0);
	}
	if (!rc) {
		rc = mdb_txn_commit(txn);
		txn = NULL;
	}
	if (rc) {
		fprintf(stderr, "damage %s: %s\n", ipath, mdb_strerror(rc));
		abort();
	}
	mdb_txn_abort(txn);
	mdb_env_close(env);
	free(ipath);
}

static void test_bad_records(enum dlfs_read_unit unit)
{
	struct dataset d = {.src = t_tmpdir()};
	make_tree_a(d.src);
	ds_pack(&d, 16384, 256 * 1024, 0);
	const uint64_t cs = d.cs;
	/* Three small files, each with room after it in its chunk. */
	size_t x1 = pick_victim(&d, 10), x2 = pick_victim(&d, x1 + 2),
	       x3 = pick_victim(&d, x2 + 2);
	struct dlfs_inode i1 = d.files[x1].in, i2 = d.files[x2].in,
			  i3 = d.files[x3].in;
	ds_close(&d);
	/* x1: a wrong checksum; x2: one byte further on, in its chunk;
	 * x3: moved to straddle the next chunk boundary. */
	damage_record(d.path, i1.ino, i1.offset, i1.size, i1.xxh3 ^ 1);
	damage_record(d.path, i2.ino, i2.offset + 1, i2.size, i2.xxh3);
	uint64_t next = dlfs_chunk_start(cs, dlfs_chunk_at(cs, i3.offset) + 1);
	damage_record(d.path, i3.ino, next - i3.size / 2, i3.size, i3.xxh3);
	ds_open(&d);
	CHECK_EQ(d.files[x1].in.xxh3, i1.xxh3 ^ 1);
	CHECK_EQ(d.files[x2].in.offset, i2.offset + 1);
	/* Such a record is refused as soon as it is decoded. */
	CHECK(d.files[x3].damaged);
	CHECK(!d.files[x1].damaged && !d.files[x2].damaged);

	struct dlfs_reader_ctx *ctx;
	struct dlfs_reader_conf conf = conf_of(4 * cs, unit);
	struct dlfs_reader *r = reader_open(&d, &conf, &ctx);
	uint8_t *buf = malloc(cs);
	size_t len, victims[] = {x1, x2, x3};
	for (int pass = 0; pass < 2; pass++) {
		for (int i = 0; i < 3; i++) {
			const struct file *f = &d.files[victims[i]];
			int ret = read_into(ctx, f->ino, 0, f->size, buf, &len,
					    NULL);
			if (ret != -EIO)
				fprintf(stderr,
					"damaged record of %s (%s mode): %d\n",
					f->path,
					unit == DLFS_UNIT_FILE ? "file"
							       : "chunk",
					ret);
			CHECK_EQ(ret, -EIO);
		}
		int bad = 0;
		for (size_t i = 0; i < d.n_files; i++)
			if (i != x1 && i != x2 && i != x3)
				bad += !read_ok(ctx, &d.files[i], 0,
						d.files[i].size);
		CHECK_EQ(bad, 0);
	}
	CHECK_EQ(errors(r), 6);
	/* In file mode the first reads of x1 and x2 were alone. */
	CHECK(unit == DLFS_UNIT_FILE ? file_reads(r) >= 2 : !file_reads(r));
	free(buf);
	reader_close(r, ctx);
	ds_free(&d);
}

/* A file over several chunks followed by another in its container. */
static size_t pick_multi(struct dataset *d, size_t from)
{
	for (size_t i = from + 1; i + 1 < d->n_files; i++) {
		const struct dlfs_inode *b = &d->files[i].in,
					*n = &d->files[i + 1].in;
		if (b->size > d->cs && b->size < 8 * d->cs && n->size &&
		    n->container == b->container)
			return i;
	}
	abort();
}

/*
 * Records of files over several chunks, damaged so that every chunk they
 * touch is intact: one byte longer (read whole in one request), one byte
 * shorter (read in 4 KiB pieces, the first from the middle), moved one
 * byte on (read from its end). Each must give EIO, not a neighbour's
 * bytes; before the file's own checksum was checked for such files, all
 * three were served.
 */
static void test_bad_sizes(enum dlfs_read_unit unit)
{
	struct dataset d = {.src = t_tmpdir()};
	make_tree_a(d.src);
	ds_pack(&d, 16384, 256 * 1024, 0);
	size_t x[3];
	x[0] = pick_multi(&d, 0);
	x[1] = pick_multi(&d, x[0] + 1);
	x[2] = pick_multi(&d, x[1] + 1);
	struct dlfs_inode in[3];
	for (int i = 0; i < 3; i++)
		in[i] = d.files[x[i]].in;
	ds_close(&d);
	damage_record(d.path, in[0].ino, in[0].offset, in[0].size + 1,
		      in[0].xxh3);
	damage_record(d.path, in[1].ino, in[1].offset, in[1].size - 1,
		      in[1].xxh3);
	damage_record(d.path, in[2].ino, in[2].offset + 1, in[2].size,
		      in[2].xxh3);
	d.resized_ok = 1;
	ds_open(&d);
	for (int i = 0; i < 3; i++)
		CHECK(!d.files[x[i]].damaged);
	CHECK_EQ(d.files[x[0]].in.size, in[0].size + 1);

	struct dlfs_reader_ctx *ctx;
	struct dlfs_reader_conf conf = conf_of(8 * d.cs, unit);
	struct dlfs_reader *r = reader_open(&d, &conf, &ctx);
	uint8_t *buf = malloc(16 * d.cs);
	size_t len;
	for (int pass = 0; pass < 2; pass++) {
		uint64_t s0 = d.files[x[0]].in.size, s1 = d.files[x[1]].in.size,
			 s2 = d.files[x[2]].in.size;
		int ret[3];
		ret[0] = read_into(ctx, d.files[x[0]].ino, 0, s0, buf, &len,
				   NULL);
		ret[1] = read_into(ctx, d.files[x[1]].ino, s1 / 2, 4096, buf,
				   &len, NULL);
		for (uint64_t o = 0; !ret[1] && o < s1; o += 4096)
			ret[1] = read_into(ctx, d.files[x[1]].ino, o, 4096,
					   buf, &len, NULL);
		ret[2] = read_into(ctx, d.files[x[2]].ino, s2 - 100, 100, buf,
				   &len, NULL);
		for (int i = 0; i < 3; i++) {
			if (ret[i] != -EIO)
				fprintf(stderr,
					"damaged size/offset of %s, pass %d "
					"(%s mode): %d\n",
					d.files[x[i]].path, pass,
					unit == DLFS_UNIT_FILE ? "file"
							       : "chunk",
					ret[i]);
			CHECK_EQ(ret[i], -EIO);
		}
	}
	int bad = 0;
	for (size_t i = 0; i < d.n_files; i++)
		if (i != x[0] && i != x[1] && i != x[2])
			bad += !read_ok(ctx, &d.files[i], 0, d.files[i].size);
	CHECK_EQ(bad, 0);
	free(buf);
	reader_close(r, ctx);
	ds_free(&d);
}

/*
 * A container cut short, as a copy of the dataset interrupted: cut in
 * the middle of a chunk, the files of the chunks before it read right
 * and each of the others gives -EIO, again on a second read, logged once
 * naming the file, the container and both sizes; cut right at the end
 * of its data (its trailer lost), every file reads right. Container
 * reads go through O_DIRECT where the file system has it, and the last
 * chunk's pages then pass the cut, which is not aligned.
 */
static void test_cut(enum dlfs_read_unit unit)
{
	struct dataset d = {.src = t_tmpdir()};
	make_tree_a(d.src);
	ds_pack(&d, 16384, 256 * 1024, 0);
	const uint32_t c = 1;
	const struct dlfs_container rec = *dlfs_ds_container(d.ds, c);
	const uint64_t kc = rec.n_chunks / 2;
	/* The longer first: a cut is not undone. At the end of the data,
	 * unaligned: the last chunk ends at the cut, and is whole. */
	const uint64_t cuts[2] = {dlfs_chunk_start(d.cs, 0) + rec.data_size,
				  dlfs_chunk_start(d.cs, kc) + d.cs / 2 + 100};
	char name[DLFS_CONTAINER_NAME_MAX], sizes[2][24];
	dlfs_container_name(c, name);
	char *cpath = t_path(d.path, name);
	uint8_t *buf = malloc(64 * d.cs);
	CHECK(kc >= 2 && rec.data_size % 4096);
	for (int i = 0; i < 2; i++) {
		ds_close(&d);
		CHECK(truncate(cpath, (off_t)cuts[i]) == 0);
		ds_open(&d);
		dlfs_ds_set_chunk_io(d.ds, DLFS_CHUNK_IO_DIRECT);
		snprintf(sizes[0], sizeof(sizes[0]), "%llu",
			 (unsigned long long)cuts[i]);
		snprintf(sizes[1], sizeof(sizes[1]), "%llu",
			 (unsigned long long)rec.file_size);
		struct dlfs_reader_ctx *ctx;
		struct dlfs_reader_conf conf = conf_of(4 * d.cs, unit);
		struct dlfs_reader *r = reader_open(&d, &conf, &ctx);
		unsigned n_bad = 0, n_ok = 0;
		size_t len;
		n_logged = 0;
		for (size_t j = 0; j < d.n_files; j++) {
			const struct file *f = &d.files[j];
			uint64_t end = f->in.offset + f->size;
			if (f->in.container != c || !f->size || i == 0 ||
			    dlfs_chunk_at(d.cs, end - 1) < kc) {
				n_ok += read_ok(ctx, f, 0, f->size);
				continue;
			}
			n_bad++;
			CHECK_EQ(read_into(ctx, f->ino, 0, f->size, buf, &len,
					   NULL),
				 -EIO);
			pthread_mutex_lock(&log_mu);
			CHECK(strstr(last_log, f->path) &&
			      strstr(last_log, name) &&
			      strstr(last_log, "truncated") &&
			      strstr(last_log, sizes[0]) &&
			      strstr(last_log, sizes[1]));
			pthread_mutex_unlock(&log_mu);
			CHECK_EQ(read_into(ctx, f->ino, 0, f->size, buf, &len,
					   NULL),
				 -EIO);
		}
		CHECK_EQ(n_ok + n_bad, d.n_files);
		CHECK_EQ(n_logged, n_bad);
		CHECK_EQ(atomic_load(&r->stats.err_container), 2 * n_bad);
		CHECK_EQ(errors(r), 2 * n_bad);
		CHECK(i == 0 ? n_bad == 0 : n_bad > 0 && n_bad < rec.n_files);
		fprintf(stderr,
			"cut %s at %s of %s bytes (%s mode): %u files right, "
			"%u EIO, of %zu\n",
			name, sizes[0], sizes[1],
			unit == DLFS_UNIT_FILE ? "file" : "chunk", n_ok, n_bad,
			d.n_files);
		reader_close(r, ctx);
	}
	free(buf);
	free(cpath);
	ds_free(&d);
}

/* ---- the NVMe tier and the sweep ---- */

/* Wait (up to 30 s) for the sweep to be over; fs: the fill's stats then. */
static void wait_swept(struct dlfs_reader *r, struct dlfs_fill_stats *fs)
{
	uint64_t t0 = t_ms();
	do {
		t_sleep_ms(2);
		dlfs_fill_get_stats(r->fill, fs);
	} while (!fs->swept_all && t_ms() - t0 < 30000);
	CHECK(fs->swept_all);
}

/* Let the sweep end: then every chunk is in the tier, each read from the
 * PFS once, and nothing failed. */
static void swept_once(struct dataset *d, struct dlfs_reader *r,
		       struct dlfs_fill_stats *fs)
{
	wait_swept(r, fs);
	dlfs_nvme_flush(r->nvme);
	struct dlfs_nvme_stats ns;
	dlfs_nvme_get_stats(r->nvme, &ns);
	CHECK_EQ(ns.chunks, dlfs_ds_n_chunks(d->ds));
	CHECK_EQ(pfs_bytes(r), d->data_bytes);
	CHECK_EQ(errors(r), 0);
}

static void test_sweep(struct dataset *d)
{
	char *cache = t_tmpdir();
	struct dlfs_reader_ctx *ctx;
	struct dlfs_reader_conf conf = conf_of(4 * d->cs, DLFS_UNIT_AUTO);
	conf.cache_dir = cache;
	conf.pfs_depth = 2;
	conf.fill = DLFS_FILL_AUTO;
	struct dlfs_reader *r = reader_open(d, &conf, &ctx);
	struct dlfs_fill_stats fs;
	CHECK(r->nvme != NULL && r->fill != NULL);
	if (!r->nvme || !r->fill)
		goto out;
	/* Nothing happens before the first read. */
	dlfs_fill_get_stats(r->fill, &fs);
	CHECK(!fs.sweeping);
	/* One file from the middle of the dataset. */
	CHECK(read_ok(ctx, &d->files[d->n_files / 2], 0,
		      d->files[d->n_files / 2].size));
	swept_once(d, r, &fs);
	/* Everything again: nothing from the PFS. */
	int bad = 0;
	for (size_t i = 0; i < d->n_files; i++)
		bad += !read_ok(ctx, &d->files[i], 0, d->files[i].size);
	CHECK_EQ(bad, 0);
	CHECK_EQ(pfs_bytes(r), d->data_bytes);
	CHECK_EQ(errors(r), 0);
out:
	reader_close(r, ctx);
	t_rmrf(cache);
	free(cache);
}

/* A reader with an NVMe tier in cache and the sweep of stage=all (depth
 * threads), not started: the tests below act before its writer and its
 * fill run. */
static struct dlfs_reader *unstarted(struct dataset *d, uint64_t ram,
				     unsigned depth, const char *cache,
				     struct dlfs_reader_ctx **ctx)
{
	struct dlfs_reader_conf conf = conf_of(ram, DLFS_UNIT_CHUNK);
	conf.cache_dir = cache;
	conf.pfs_depth = depth;
	conf.fill = DLFS_FILL_ALL;
	struct dlfs_reader *r = NULL;
	struct dlfs_err err = {0};
	if (dlfs_reader_open(d->ds, &conf, &r, &err) ||
	    dlfs_reader_ctx_new(r, ctx, &err)) {
		fprintf(stderr, "reader: %s\n", err.msg);
		exit(1);
	}
	CHECK(r->nvme != NULL);
	return r;
}

static void start(struct dlfs_reader *r)
{
	struct dlfs_err err = {0};
	if (dlfs_reader_start(r, &err)) {
		fprintf(stderr, "reader start: %s\n", err.msg);
		exit(1);
	}
}

/*
 * A chunk a demand read loaded while the NVMe tier could not take it (its
 * write queue full; here: the tier's writer not started yet) sits in RAM
 * only. The sweep must queue it for the tier from RAM: skipped, it would
 * be read from the PFS again once RAM let it go.
 */
static void test_sweep_from_ram(struct dataset *d)
{
	char *cache = t_tmpdir();
	struct dlfs_reader_ctx *ctx = NULL;
	struct dlfs_reader *r =
		unstarted(d, d->data_bytes + 8 * d->cs, 2, cache, &ctx);
	if (!r->nvme)
		goto out;
	/* Every file, before the tier's writer runs: each chunk is loaded
	 * into RAM and its tier write is dropped. */
	int bad = 0;
	for (size_t i = 0; i < d->n_files; i++)
		bad += !read_ok(ctx, &d->files[i], 0, d->files[i].size);
	CHECK_EQ(bad, 0);
	CHECK_EQ(pfs_bytes(r), d->data_bytes);
	struct dlfs_nvme_stats ns;
	dlfs_nvme_get_stats(r->nvme, &ns);
	const uint64_t n_chunks = dlfs_ds_n_chunks(d->ds);
	CHECK_EQ(ns.write_dropped, n_chunks);
	CHECK_EQ(ns.chunks, 0);

	start(r);
	struct dlfs_fill_stats fs;
	swept_once(d, r, &fs);
	/* All of them written from RAM, none read from the PFS again. */
	CHECK_EQ(fs.from_ram, n_chunks);
	/* Not a use of the RAM entries: one hit per file read, no more. */
	struct dlfs_cache_stats cst;
	dlfs_cache_get_stats(r->cache, &cst);
	CHECK_EQ(cst.misses, n_chunks);
out:
	reader_close(r, ctx);
	t_rmrf(cache);
	free(cache);
}

/*
 * A chunk the tier turned away stays in RAM only; with a RAM tier smaller
 * than the dataset, the sweep's own loads would push it out before the
 * sweep reaches it, and it would be read from the PFS again. The fill
 * queues such chunks for the tier first. (Here the chunks are turned away
 * because the writer has not started; a full write queue takes the same
 * path, dlfs_nvme_next_turned_away.)
 */
static void test_turned_away(struct dataset *d)
{
	const unsigned last = 8; /* chunks, and the RAM tier's slots */
	char *cache = t_tmpdir();
	struct dlfs_reader_ctx *ctx = NULL;
	/* One fill thread: its order is the test's. */
	struct dlfs_reader *r = unstarted(d, last * d->cs, 1, cache, &ctx);
	if (!r->nvme)
		goto out;
	/* Every file in the last chunks, before the tier's writer runs. */
	const uint64_t n_chunks = dlfs_ds_n_chunks(d->ds);
	uint64_t first = n_chunks - last, loaded = 0;
	int bad = 0;
	for (uint32_t c = 0; c < dlfs_ds_info(d->ds)->super.n_containers; c++) {
		const struct dlfs_container *ct = dlfs_ds_container(d->ds, c);
		if (ct->first_chunk + ct->n_chunks > first)
			loaded += ct->data_size -
				  (first > ct->first_chunk
					   ? (first - ct->first_chunk) * d->cs
					   : 0);
	}
	for (size_t i = 0; i < d->n_files; i++) {
		const struct file *f = &d->files[i];
		uint64_t k0, k1;
		if (f->damaged || !f->size)
			continue;
		dlfs_file_chunks(d->cs, &f->in, 0, f->size, &k0, &k1);
		if (dlfs_ds_container(d->ds, f->in.container)->first_chunk +
			    k0 >= first)
			bad += !read_ok(ctx, f, 0, f->size);
	}
	CHECK_EQ(bad, 0);
	CHECK_EQ(pfs_bytes(r), loaded);
	struct dlfs_nvme_stats ns;
	dlfs_nvme_get_stats(r->nvme, &ns);
	CHECK_EQ(ns.write_dropped, last);

	start(r);
	struct dlfs_fill_stats fs;
	/* Written from RAM before the sweep's loads pushed them out: every
	 * chunk read from the PFS once. */
	swept_once(d, r, &fs);
	CHECK_EQ(fs.from_ram, last);
out:
	reader_close(r, ctx);
	t_rmrf(cache);
	free(cache);
}

/*
 * A tier disk that does not keep up must slow the fill, not the readers of
 * what it loaded: a chunk the fill read is in RAM for readers while its
 * thread waits for room in the tier's write queue. (It used to wait inside
 * the load, and readers of that chunk waited for the tier's disk.)
 */
static void test_slow_tier(struct dataset *d)
{
	char *cache = t_tmpdir();
	struct dlfs_reader_ctx *ctx = NULL;
	struct dlfs_reader *r =
		unstarted(d, d->data_bytes + 8 * d->cs, 2, cache, &ctx);
	if (!r->nvme)
		goto out;
	const uint64_t n_chunks = dlfs_ds_n_chunks(d->ds);
	start(r);
	dlfs_nvme_pause(r->nvme, 1);
	/* The sweep fills the write queue, then its threads wait for room,
	 * each with a chunk it loaded: in RAM, not in the tier. */
	uint32_t c = 0;
	uint64_t k = 0;
	int found = 0;
	for (uint64_t t0 = t_ms(); !found && t_ms() - t0 < 10000;) {
		for (uint64_t g = 0; !found && g < n_chunks; g++) {
			if (dlfs_ds_chunk_locate(d->ds, g, &c, &k))
				break;
			found = dlfs_cache_contains(r->cache,
						    dlfs_cache_chunk_key(c, k)) &&
				!dlfs_nvme_holds(r->nvme, c, k);
		}
		if (!found)
			t_sleep_ms(2);
	}
	CHECK(found);
	/* Readers of that chunk are served, with the writer still held
	 * (from RAM; any other chunk of theirs by a demand load, which never
	 * waits for the tier). */
	int served = 0;
	for (size_t i = 0; found && i < d->n_files; i++) {
		const struct file *f = &d->files[i];
		uint64_t k0, k1;
		if (f->damaged || !f->size || f->in.container != c)
			continue;
		dlfs_file_chunks(d->cs, &f->in, 0, f->size, &k0, &k1);
		if (k0 <= k && k <= k1)
			served += read_ok(ctx, f, 0, f->size);
	}
	CHECK(!found || served > 0);
	dlfs_nvme_pause(r->nvme, 0);
	struct dlfs_fill_stats fs;
	swept_once(d, r, &fs);
out:
	reader_close(r, ctx);
	t_rmrf(cache);
	free(cache);
}

int main(void)
{
	struct dataset a = {.src = t_tmpdir()};
	make_tree_a(a.src);
	ds_pack(&a, 16384, 256 * 1024, 0);
	CHECK(dlfs_ds_info(a.ds)->super.n_containers >= 3);

	test_pieces(&a);
	test_threads(&a, DLFS_UNIT_AUTO);
	test_threads(&a, DLFS_UNIT_FILE);
	test_units();
	test_flipped(&a, DLFS_UNIT_CHUNK);
	test_flipped(&a, DLFS_UNIT_FILE);
	test_bad_records(DLFS_UNIT_CHUNK);
	test_bad_records(DLFS_UNIT_FILE);
	test_bad_sizes(DLFS_UNIT_CHUNK);
	test_bad_sizes(DLFS_UNIT_FILE);
	test_cut(DLFS_UNIT_CHUNK);
	test_cut(DLFS_UNIT_FILE);
	test_sweep(&a);
	test_sweep_from_ram(&a);
	test_turned_away(&a);
	test_slow_tier(&a);

	ds_free(&a);
	return t_done("test_read");
}
