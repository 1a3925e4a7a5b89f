/*
 * The writer and the reader together: pack trees with libdlfs, then check
 * the layout rules, lookups, readdir resumption, reads at every kind of
 * offset, verify and container validation.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "dlfs/check.h"
#include "dlfs/dataset.h"
#include "dlfs/pack.h"
#include "ds_priv.h"
#include "tutil.h"

#define CS 65536

static char *tree(void)
{
	char *d = t_tmpdir();
	t_write(d, "a/one", 10, 1);
	t_write(d, "a/two", CS - 100, 2);  /* nearly a chunk */
	t_write(d, "a/three", 200, 3);     /* would straddle: moved on */
	t_write(d, "b/big", 3 * CS + 7, 4); /* larger than a chunk */
	t_write(d, "b/empty", 0, 5);
	t_write(d, "c", 5000, 6);
	for (int i = 0; i < 300; i++) {
		char n[64];
		snprintf(n, sizeof(n), "many/f%04d", i);
		t_write(d, n, (size_t)(i * 37 % 3000), (uint32_t)(100 + i));
	}
	char *p;
	if (asprintf(&p, "%s/emptydir", d) < 0)
		abort();
	mkdir(p, 0700);
	free(p);
	if (asprintf(&p, "%s/link", d) < 0)
		abort();
	if (symlink("a/one", p) < 0)
		abort();
	free(p);
	return d;
}

static int pack(const char *src, const char *out, enum dlfs_order ord,
		unsigned threads, uint64_t container_size, struct dlfs_err *err)
{
	struct dlfs_pack_opts o;
	dlfs_pack_opts_init(&o);
	o.chunk_size = CS;
	o.container_size = container_size;
	o.order = ord;
	o.threads = threads;
	const char *srcs[] = {src};
	return dlfs_pack(srcs, 1, out, &o, err);
}

/* Every file fits its chunk unless larger; inode order is layout order. */
static void check_layout(struct dlfs_ds *ds)
{
	const struct dlfs_info *info = dlfs_ds_info(ds);
	struct dlfs_txn *t;
	struct dlfs_err err = {0};
	CHECK(dlfs_txn_begin(ds, &t, &err) == 0);
	uint32_t prev_c = 0;
	uint64_t prev_end = 0;
	for (uint64_t ino = info->super.first_file_ino;
	     ino <= info->super.n_inodes; ino++) {
		struct dlfs_inode in;
		CHECK(dlfs_stat(t, ino, &in, &err) == 0);
		CHECK(S_ISREG(in.mode));
		uint64_t d = in.offset - CS; /* data region starts at CS */
		CHECK(in.offset >= CS);
		if (in.size && in.size <= CS)
			CHECK_EQ(d / CS, (d + in.size - 1) / CS);
		if (in.container == prev_c)
			CHECK(in.offset >= prev_end);
		else
			CHECK(in.container == prev_c + 1);
		prev_c = in.container;
		prev_end = in.offset + in.size;
	}
	dlfs_txn_end(t);
}

/* dlfs_stat_range: every range, across block edges and with the
 * symlink, gives what dlfs_stat gives, in order; a stop ends it; a range
 * past the last inode is refused. */
struct range_seen {
	struct dlfs_txn *t;
	uint64_t next, stop_at;
	int bad;
};

static int range_cb(void *arg, const struct dlfs_inode *in)
{
	struct range_seen *r = arg;
	struct dlfs_inode want;
	struct dlfs_err err = {0};
	if (in->ino != r->next || dlfs_stat(r->t, r->next, &want, &err) ||
	    want.mode != in->mode || want.size != in->size ||
	    want.offset != in->offset || want.container != in->container ||
	    want.xxh3 != in->xxh3 || want.mtime_sec != in->mtime_sec ||
	    (S_ISLNK(in->mode) && memcmp(want.target, in->target, in->size)))
		r->bad++;
	r->next++;
	return r->next == r->stop_at ? 7 : 0;
}

static void check_stat_range(struct dlfs_ds *ds)
{
	const struct dlfs_info *info = dlfs_ds_info(ds);
	uint64_t n = info->super.n_inodes;
	struct dlfs_txn *t;
	struct dlfs_err err = {0};
	CHECK(dlfs_txn_begin(ds, &t, &err) == 0);
	const uint64_t starts[] = {1, 2, 15, 16, 17, 33, n - 17, n};
	for (size_t i = 0; i < sizeof(starts) / sizeof(starts[0]); i++)
		for (uint64_t len = 0; len <= n - starts[i] + 1;
		     len += 1 + len * 2) {
			struct range_seen r = {t, starts[i], 0, 0};
			CHECK_EQ(dlfs_stat_range(t, starts[i], len, range_cb,
						 &r, &err),
				 0);
			CHECK_EQ(r.bad, 0);
			CHECK_EQ(r.next, starts[i] + len);
		}
	struct range_seen r = {t, 1, 40, 0};
	CHECK_EQ(dlfs_stat_range(t, 1, n, range_cb, &r, &err), 7);
	CHECK_EQ(r.next, 40);
	CHECK_EQ(dlfs_stat_range(t, 2, n, range_cb, &r, &err), -ENOENT);
	CHECK_EQ(dlfs_stat_range(t, 0, 1, range_cb, &r, &err), -ENOENT);
	dlfs_txn_end(t);
}

static void check_content(struct dlfs_ds *ds, const char *src)
{
	struct dlfs_txn *t;
	struct dlfs_err err = {0};
	CHECK(dlfs_txn_begin(ds, &t, &err) == 0);
	const char *paths[] = {"a/one", "a/two", "a/three", "b/big", "b/empty",
			       "c", "many/f0123"};
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		uint64_t ino;
		struct dlfs_inode in;
		CHECK(dlfs_resolve(t, paths[i], &ino, &err) == 0);
		CHECK(dlfs_stat(t, ino, &in, &err) == 0);
		char *sp;
		if (asprintf(&sp, "%s/%s", src, paths[i]) < 0)
			abort();
		size_t len;
		uint8_t *want = t_read(sp, &len);
		CHECK(want != NULL);
		CHECK_EQ(in.size, len);
		CHECK(in.xxh3 == XXH3_64bits(want, len));
		/* Reads at the start, inside, across chunks, at and past EOF */
		uint64_t offs[] = {0, 1, len / 2, CS - 1, CS, len ? len - 1 : 0,
				   len, len + 10};
		uint8_t buf[CS + 100];
		for (size_t k = 0; k < sizeof(offs) / sizeof(offs[0]); k++) {
			size_t got = 99;
			CHECK(dlfs_file_pread(ds, &in, buf, sizeof(buf), offs[k],
					      &got, &err) == 0);
			size_t exp = offs[k] >= len ? 0 : len - offs[k];
			if (exp > sizeof(buf))
				exp = sizeof(buf);
			CHECK_EQ(got, exp);
			CHECK(!got || !memcmp(buf, want + offs[k], got));
		}
		free(want);
		free(sp);
	}
	/* Lookups that fail. */
	uint64_t ino;
	CHECK(dlfs_resolve(t, "a/nope", &ino, &err) == -ENOENT);
	CHECK(strstr(err.msg, "a/nope") != NULL);
	CHECK(dlfs_resolve(t, "c/x", &ino, &err) == -ENOTDIR);
	CHECK(dlfs_resolve(t, "../etc", &ino, &err) == -EINVAL);
	CHECK(dlfs_resolve(t, "/", &ino, &err) == 0 && ino == DLFS_ROOT_INO);
	/* Symlinks keep their target; directories count their entries. */
	struct dlfs_inode in;
	CHECK(dlfs_resolve(t, "link", &ino, &err) == 0);
	CHECK(dlfs_stat(t, ino, &in, &err) == 0);
	CHECK(S_ISLNK(in.mode) && in.size == 5 &&
	      !memcmp(in.target, "a/one", 5));
	CHECK(dlfs_resolve(t, "many", &ino, &err) == 0);
	CHECK(dlfs_stat(t, ino, &in, &err) == 0);
	CHECK(S_ISDIR(in.mode) && in.size == 300);
	CHECK(dlfs_resolve(t, "emptydir", &ino, &err) == 0);
	CHECK(dlfs_stat(t, ino, &in, &err) == 0);
	CHECK(S_ISDIR(in.mode) && in.size == 0 && (in.mode & 07777) == 0700);
	/* path_of inverts resolve. */
	char path[256];
	CHECK(dlfs_resolve(t, "many/f0042", &ino, &err) == 0);
	CHECK(dlfs_path_of(t, ino, path, sizeof(path), &err) == 0);
	CHECK(!strcmp(path, "many/f0042"));
	dlfs_txn_end(t);
}

struct rd {
	int stop_every, seen_in_call;
	char names[400][16];
	uint64_t cookies[400];
	int n;
};

static int rd_cb(void *arg, const struct dlfs_dirent *d)
{
	struct rd *r = arg;
	if (r->stop_every && r->seen_in_call == r->stop_every)
		return 1;
	r->seen_in_call++;
	snprintf(r->names[r->n], 16, "%.*s", (int)d->name_len, d->name);
	r->cookies[r->n] = d->cookie;
	r->n++;
	return 0;
}

/* Readdir resumed from cookies sees every entry once, in order. */
static void check_readdir(struct dlfs_ds *ds)
{
	struct dlfs_txn *t;
	struct dlfs_err err = {0};
	uint64_t dir;
	CHECK(dlfs_txn_begin(ds, &t, &err) == 0);
	CHECK(dlfs_resolve(t, "many", &dir, &err) == 0);
	struct rd all = {0};
	CHECK(dlfs_readdir(t, dir, 0, rd_cb, &all, &err) == 0);
	CHECK_EQ(all.n, 300);
	CHECK(!strcmp(all.names[0], "f0000") && !strcmp(all.names[299], "f0299"));
	for (int step = 1; step <= 64; step *= 7) {
		struct rd part = {.stop_every = step};
		uint64_t cookie = 0;
		for (int guard = 0; guard < 400; guard++) {
			part.seen_in_call = 0;
			int before = part.n;
			CHECK(dlfs_readdir(t, dir, cookie, rd_cb, &part, &err) ==
			      0);
			if (part.n == before)
				break;
			cookie = part.cookies[part.n - 1];
		}
		CHECK_EQ(part.n, 300);
		for (int i = 0; i < part.n && i < 300; i++)
			CHECK(!strcmp(part.names[i], all.names[i]));
	}
	/* A cookie nobody stopped at (a cold resume) is still right. */
	struct rd cold = {0};
	CHECK(dlfs_readdir(t, dir, 123, rd_cb, &cold, &err) == 0);
	CHECK_EQ(cold.n, 300 - 123);
	CHECK(!strcmp(cold.names[0], all.names[123]));
	dlfs_txn_end(t);
}

/*
 * Listers of one directory, interleaved (as concurrent ls of a large
 * directory are): each must resume where it stopped with a seek, never by
 * skipping from the start, or n entries cost O(n^2).
 */
static void check_readdir_interleaved(struct dlfs_ds *ds)
{
	enum { LISTERS = 4 };
	struct dlfs_txn *t[LISTERS];
	struct rd r[LISTERS];
	uint64_t cookie[LISTERS] = {0};
	struct dlfs_err err = {0};
	uint64_t dir;
	memset(r, 0, sizeof(r));
	for (int i = 0; i < LISTERS; i++) {
		CHECK(dlfs_txn_begin(ds, &t[i], &err) == 0);
		r[i].stop_every = 5 + i; /* they drift apart */
	}
	CHECK(dlfs_resolve(t[0], "many", &dir, &err) == 0);
	uint64_t skipped0 = atomic_load(&ds->ix.rd_skipped);
	for (int done = 0, guard = 0; done < LISTERS && guard < 1000; guard++) {
		done = 0;
		for (int i = 0; i < LISTERS; i++) {
			int before = r[i].n;
			r[i].seen_in_call = 0;
			CHECK(dlfs_readdir(t[i], dir, cookie[i], rd_cb, &r[i],
					   &err) == 0);
			if (r[i].n == before)
				done++;
			else
				cookie[i] = r[i].cookies[r[i].n - 1];
		}
	}
	for (int i = 0; i < LISTERS; i++) {
		CHECK_EQ(r[i].n, 300);
		CHECK(!strcmp(r[i].names[299], "f0299"));
		dlfs_txn_end(t[i]);
	}
	CHECK_EQ(atomic_load(&ds->ix.rd_skipped) - skipped0, 0);
}

static int count_bad;
static char bad_path[256];
static void on_bad(void *arg, const char *path, const char *msg)
{
	(void)arg;
	(void)msg;
	count_bad++;
	snprintf(bad_path, sizeof(bad_path), "%s", path);
}

static void check_corruption(const char *out)
{
	struct dlfs_ds *ds;
	struct dlfs_err err = {0};
	CHECK(dlfs_ds_open(out, &ds, &err) == 0);
	struct dlfs_txn *t;
	CHECK(dlfs_txn_begin(ds, &t, &err) == 0);
	uint64_t ino;
	struct dlfs_inode in;
	CHECK(dlfs_resolve(t, "many/f0200", &ino, &err) == 0);
	CHECK(dlfs_stat(t, ino, &in, &err) == 0);
	dlfs_txn_end(t);
	dlfs_ds_close(ds);

	/* Flip one byte inside that file. */
	char cpath[600];
	snprintf(cpath, sizeof(cpath), "%s/%06u.dlc", out, in.container);
	int fd = open(cpath, O_RDWR);
	uint8_t b;
	CHECK(pread(fd, &b, 1, (off_t)in.offset + 3) == 1);
	b ^= 0x40;
	CHECK(pwrite(fd, &b, 1, (off_t)in.offset + 3) == 1);
	close(fd);

	struct dlfs_verify_report rep;
	CHECK(dlfs_ds_open(out, &ds, &err) == 0);
	count_bad = 0;
	CHECK(dlfs_verify(ds, on_bad, NULL, &rep, &err) == 0);
	CHECK_EQ(rep.bad_files, 1);
	CHECK_EQ(rep.bad_chunks, 1);
	CHECK_EQ(count_bad, 1);
	CHECK(!strcmp(bad_path, "many/f0200"));
	dlfs_ds_close(ds);

	/* Truncate the container: opening it fails, naming it. */
	CHECK(truncate(cpath, (off_t)in.offset) == 0);
	CHECK(dlfs_ds_open(out, &ds, &err) == 0);
	uint8_t buf[16];
	size_t got;
	CHECK(dlfs_file_pread(ds, &in, buf, sizeof(buf), 0, &got, &err) ==
	      -EUCLEAN);
	CHECK(strstr(err.msg, "truncated") && strstr(err.msg, ".dlc"));
	dlfs_ds_close(ds);

	/* Remove it: ENOENT naming the file. */
	CHECK(unlink(cpath) == 0);
	CHECK(dlfs_ds_open(out, &ds, &err) == 0);
	CHECK(dlfs_file_pread(ds, &in, buf, sizeof(buf), 0, &got, &err) ==
	      -ENOENT);
	CHECK(strstr(err.msg, ".dlc") != NULL);
	count_bad = 0;
	CHECK(dlfs_verify(ds, on_bad, NULL, &rep, &err) == 0);
	CHECK(rep.bad_containers >= 1 && count_bad >= 1);
	dlfs_ds_close(ds);
}

/* ---- a container cut short: the copy of a dataset interrupted ---- */

/* Text that compresses (a zstd dataset's chunks become frames), len
 * bytes of words picked from seed. */
static void write_text(const char *dir, const char *rel, size_t len,
		       uint32_t seed)
{
	static const char *words[] = {"alpha ", "beta ", "gamma ", "delta ",
				      "epsilon ", "zeta ", "eta\n"};
	char *p = t_path(dir, rel);
	FILE *f = fopen(p, "w");
	if (!f)
		abort();
	for (size_t n = 0; n < len;) {
		seed = seed * 1103515245u + 12345u;
		const char *w = words[(seed >> 16) % 7];
		size_t l = strlen(w) < len - n ? strlen(w) : len - n;
		fwrite(w, 1, l, f);
		n += l;
	}
	fclose(f);
	free(p);
}

static char *cut_tree(void)
{
	char *d = t_tmpdir();
	char *sub = t_path(d, "t");
	mkdir(sub, 0755);
	free(sub);
	for (int i = 0; i < 160; i++) {
		char n[64];
		snprintf(n, sizeof(n), "t/f%03d", i);
		/* Some files of a chunk, now and then one over several, and
		 * empty ones, which read as empty wherever they sit. */
		size_t len = (size_t)(200 + i * 2711 % 14000);
		if (i % 37 == 5)
			len = 2 * CS + 999;
		else if (i % 23 == 7)
			len = 0;
		write_text(d, n, len, (uint32_t)i + 1);
	}
	return d;
}

/* What verify names: file paths, and whether the container was named
 * as truncated with both sizes. */
struct named {
	char paths[200][32];
	int n, container;
	char cname[DLFS_CONTAINER_NAME_MAX], sizes[2][24];
};

static void on_named(void *arg, const char *path, const char *msg)
{
	struct named *nm = arg;
	if (!strcmp(path, nm->cname)) {
		nm->container |= strstr(msg, "truncated") &&
				 strstr(msg, nm->sizes[0]) &&
				 strstr(msg, nm->sizes[1]);
		return;
	}
	if (nm->n < 200)
		snprintf(nm->paths[nm->n], sizeof(nm->paths[0]), "%s", path);
	nm->n++;
}

static int was_named(const struct named *nm, const char *path)
{
	int n = 0;
	for (int i = 0; i < nm->n && i < 200; i++)
		n += !strcmp(nm->paths[i], path);
	return n;
}

/* The expected fate of each file of container c once it is cut inside
 * chunk kc: a file with bytes in chunk kc or after it gives -EUCLEAN
 * (its chunk cannot be read whole, nor checked), the others read right.
 * @return how many fail; bad[i] for file first_ino + i. */
static int cut_fates(struct dlfs_ds *ds, uint32_t c, uint64_t kc, int *bad,
		     int *before_in_kc, uint64_t cut)
{
	const struct dlfs_container *rec = dlfs_ds_container(ds, c);
	struct dlfs_txn *t;
	struct dlfs_err err = {0};
	int n = 0;
	*before_in_kc = 0;
	CHECK(dlfs_txn_begin(ds, &t, &err) == 0);
	for (uint64_t i = 0; i < rec->n_files; i++) {
		struct dlfs_inode in;
		CHECK(dlfs_stat(t, rec->first_ino + i, &in, &err) == 0);
		uint64_t end = in.offset + in.size;
		uint64_t k1 = in.size ? dlfs_chunk_at(CS, end - 1) : 0;
		bad[i] = in.size && k1 >= kc;
		n += bad[i];
		*before_in_kc += bad[i] && k1 == kc && end <= cut;
	}
	dlfs_txn_end(t);
	return n;
}

/* Every file of the dataset read whole at the format level: those of
 * container c that bad[] names fail naming the container and both
 * sizes, every other gives its source's bytes. */
static void cut_reads(struct dlfs_ds *ds, const char *src, uint32_t c,
		      const int *bad, const struct named *nm)
{
	const struct dlfs_info *info = dlfs_ds_info(ds);
	const struct dlfs_container *rec = dlfs_ds_container(ds, c);
	struct dlfs_txn *t;
	struct dlfs_err err = {0};
	CHECK(dlfs_txn_begin(ds, &t, &err) == 0);
	for (uint64_t ino = info->super.first_file_ino;
	     ino <= info->super.n_inodes; ino++) {
		struct dlfs_inode in;
		char path[256];
		size_t len, got = 0;
		CHECK(dlfs_stat(t, ino, &in, &err) == 0);
		CHECK(dlfs_path_of(t, ino, path, sizeof(path), &err) == 0);
		char *sp = t_path(src, path);
		uint8_t *want = t_read(sp, &len);
		uint8_t *buf = malloc(len + 1);
		int ret = dlfs_file_pread(ds, &in, buf, len, 0, &got, &err);
		if (in.container == c && bad[ino - rec->first_ino]) {
			CHECK_EQ(ret, -EUCLEAN);
			CHECK(strstr(err.msg, nm->cname) &&
			      strstr(err.msg, "truncated") &&
			      strstr(err.msg, nm->sizes[0]) &&
			      strstr(err.msg, nm->sizes[1]));
		} else {
			CHECK_EQ(ret, 0);
			CHECK(got == len && !memcmp(buf, want, len));
			if (ret || got != len || memcmp(buf, want, len))
				fprintf(stderr, "%s: %s\n", path, err.msg);
		}
		free(buf);
		free(want);
		free(sp);
	}
	dlfs_txn_end(t);
}

/*
 * extract into x (a new directory) of a dataset whose container c is cut:
 * it writes in container order, so it fails with -EIO at the first file
 * bad[] names, err naming that file and the cut, after writing every
 * file of the containers before c as it was.
 */
static void cut_extract(struct dlfs_ds *ds, const char *src, const char *x,
			uint32_t c, const int *bad, const struct named *nm)
{
	const struct dlfs_info *info = dlfs_ds_info(ds);
	const struct dlfs_container *rec = dlfs_ds_container(ds, c);
	struct dlfs_txn *t;
	struct dlfs_err err = {0};
	char first[256] = "", path[256];
	int written = 0;
	CHECK(dlfs_txn_begin(ds, &t, &err) == 0);
	for (uint64_t i = 0; i < rec->n_files && !first[0]; i++)
		if (bad[i])
			CHECK(dlfs_path_of(t, rec->first_ino + i, first,
					   sizeof(first), &err) == 0);
	CHECK_EQ(dlfs_extract(ds, x, &err), -EIO);
	CHECK(first[0] && strstr(err.msg, first) &&
	      strstr(err.msg, "truncated") && strstr(err.msg, nm->cname));
	fprintf(stderr, "cut extract: %s\n", err.msg);
	for (uint64_t ino = info->super.first_file_ino;
	     ino <= info->super.n_inodes; ino++) {
		struct dlfs_inode in;
		size_t len, got;
		CHECK(dlfs_stat(t, ino, &in, &err) == 0);
		if (!S_ISREG(in.mode) || in.container >= c)
			continue;
		CHECK(dlfs_path_of(t, ino, path, sizeof(path), &err) == 0);
		char *sp = t_path(src, path), *xp = t_path(x, path);
		uint8_t *want = t_read(sp, &len), *have = t_read(xp, &got);
		CHECK(got == len && !memcmp(have, want, len));
		written++;
		free(want);
		free(have);
		free(sp);
		free(xp);
	}
	dlfs_txn_end(t);
	CHECK(written > 0);
}

/*
 * Cut container 1 of a dataset (zstd or not) in the middle of the stored
 * bytes of one of its chunks: the files of the chunks before the cut read
 * right, the rest fail, chunk by chunk; verify names exactly those files
 * and the container. Then a container cut inside its header stays
 * unusable, as a missing one.
 */
static void check_cut(const char *src, const char *dir, int zstd)
{
	struct dlfs_pack_opts o;
	struct dlfs_err err = {0};
	struct dlfs_ds *ds;
	struct dlfs_txn *t;
	struct dlfs_chunk_rec cr;
	char out[512], cpath[600];
	const char *srcs[] = {src};
	dlfs_pack_opts_init(&o);
	o.chunk_size = CS;
	o.container_size = 6 * CS;
	o.compress = zstd ? DLFS_COMPRESS_ZSTD : DLFS_COMPRESS_NONE;
	snprintf(out, sizeof(out), "%s/cut%d.dlfs", dir, zstd);
	CHECK(dlfs_pack(srcs, 1, out, &o, &err) == 0);
	CHECK(dlfs_ds_open(out, &ds, &err) == 0);
	CHECK(dlfs_ds_info(ds)->super.n_containers >= 3);
	const uint32_t c = 1;
	/* A copy: the table goes with the dataset closed below. */
	const struct dlfs_container r = *dlfs_ds_container(ds, c), *rec = &r;
	const uint64_t kc = rec->n_chunks / 2, n_chunks = rec->n_chunks;
	CHECK(kc >= 2);
	CHECK(dlfs_txn_begin(ds, &t, &err) == 0);
	CHECK(dlfs_chunk_get(t, c, kc, &cr, &err) == 0);
	dlfs_txn_end(t);
	CHECK(!zstd || (cr.flags & DLFS_CHUNK_ZSTD));
	uint64_t at = zstd ? cr.stored_offset : dlfs_chunk_start(CS, kc);
	uint64_t cut = at + (zstd ? cr.stored_length : cr.length) / 2;
	struct named nm = {0};
	dlfs_container_name(c, nm.cname);
	snprintf(nm.sizes[0], sizeof(nm.sizes[0]), "%llu",
		 (unsigned long long)cut);
	snprintf(nm.sizes[1], sizeof(nm.sizes[1]), "%llu",
		 (unsigned long long)rec->file_size);
	int bad[200] = {0}, before;
	CHECK(rec->n_files <= 200);
	int n_bad = cut_fates(ds, c, kc, bad, &before, zstd ? 0 : cut);
	CHECK(n_bad > 0 && n_bad < (int)rec->n_files);
	/* The chunk is the unit: files wholly before the cut in its chunk
	 * fail too (uncompressed, where files have a place in the file). */
	CHECK(zstd || before > 0);
	fprintf(stderr,
		"cut %s: container %s cut at %llu of %llu bytes, in chunk "
		"%llu of %llu: %d of its %llu files to fail",
		zstd ? "zstd" : "plain", nm.cname, (unsigned long long)cut,
		(unsigned long long)rec->file_size, (unsigned long long)kc,
		(unsigned long long)n_chunks, n_bad,
		(unsigned long long)rec->n_files);
	if (!zstd)
		fprintf(stderr, " (%d wholly before the cut)", before);
	fprintf(stderr, "\n");
	dlfs_ds_close(ds);

	snprintf(cpath, sizeof(cpath), "%s/%s", out, nm.cname);
	CHECK(truncate(cpath, (off_t)cut) == 0);
	CHECK(dlfs_ds_open(out, &ds, &err) == 0);
	uint64_t size = 0;
	int fd;
	CHECK(dlfs_ds_container_fd(ds, c, &fd, &err) == 0);
	CHECK(dlfs_ds_container_cut(ds, c, &size) == 1 && size == cut);
	CHECK(dlfs_ds_container_fd(ds, 0, &fd, &err) == 0);
	CHECK(dlfs_ds_container_cut(ds, 0, &size) == 0);
	cut_reads(ds, src, c, bad, &nm);
	/* Chunk by chunk: before the cut's chunk read and checked. */
	uint8_t *chunk = NULL;
	CHECK(posix_memalign((void **)&chunk, 4096, CS) == 0);
	CHECK(dlfs_txn_begin(ds, &t, &err) == 0);
	for (uint64_t k = 0; k < n_chunks; k++) {
		size_t len;
		CHECK_EQ(dlfs_chunk_read(ds, t, c, k, chunk, CS, &len, &err),
			 k < kc ? 0 : -EUCLEAN);
	}
	dlfs_txn_end(t);
	free(chunk);
	struct dlfs_verify_report rep;
	CHECK(dlfs_verify(ds, on_named, &nm, &rep, &err) == 0);
	CHECK_EQ(rep.bad_files, n_bad);
	CHECK_EQ(rep.bad_chunks, n_chunks - kc);
	CHECK_EQ(rep.bad_containers, 1);
	CHECK(nm.container);
	CHECK_EQ(nm.n, n_bad);
	CHECK(dlfs_txn_begin(ds, &t, &err) == 0);
	for (uint64_t i = 0; i < rec->n_files; i++) {
		char path[256];
		CHECK(dlfs_path_of(t, rec->first_ino + i, path, sizeof(path),
				   &err) == 0);
		CHECK_EQ(was_named(&nm, path), bad[i]);
	}
	dlfs_txn_end(t);
	snprintf(cpath, sizeof(cpath), "%s/cutx%d", dir, zstd);
	cut_extract(ds, src, cpath, c, bad, &nm);
	snprintf(cpath, sizeof(cpath), "%s/%s", out, nm.cname);
	dlfs_ds_close(ds);

	/* Cut inside its header: unusable, every file of it fails. */
	CHECK(truncate(cpath, 40) == 0);
	CHECK(dlfs_ds_open(out, &ds, &err) == 0);
	CHECK_EQ(dlfs_ds_container_fd(ds, c, &fd, &err), -EUCLEAN);
	CHECK(strstr(err.msg, "truncated header") != NULL);
	memset(&nm.paths, 0, sizeof(nm.paths));
	nm.n = 0;
	CHECK(dlfs_verify(ds, on_named, &nm, &rep, &err) == 0);
	CHECK_EQ(rep.bad_files, rec->n_files);
	CHECK_EQ(nm.n, (int)rec->n_files);
	dlfs_ds_close(ds);
}

/* A container from another dataset is refused by its id. */
static void check_foreign_container(const char *src, const char *dir)
{
	char a[512], b[512], ca[600], cb[600];
	struct dlfs_err err = {0};
	snprintf(a, sizeof(a), "%s/a.dlfs", dir);
	snprintf(b, sizeof(b), "%s/b.dlfs", dir);
	CHECK(pack(src, a, DLFS_ORDER_SORTED, 2, 1 << 30, &err) == 0);
	CHECK(pack(src, b, DLFS_ORDER_SIZE, 2, 1 << 30, &err) == 0);
	snprintf(ca, sizeof(ca), "%s/000000.dlc", a);
	snprintf(cb, sizeof(cb), "%s/000000.dlc", b);
	CHECK(rename(cb, ca) == 0);
	struct dlfs_ds *ds;
	int fd;
	CHECK(dlfs_ds_open(a, &ds, &err) == 0);
	int ret = dlfs_ds_container_fd(ds, 0, &fd, &err);
	CHECK(ret == -EUCLEAN);
	CHECK(strstr(err.msg, "dataset id") != NULL);
	dlfs_ds_close(ds);
}

static void check_errors(const char *src, const char *dir)
{
	struct dlfs_err err = {0};
	char out[512];
	snprintf(out, sizeof(out), "%s/x.dlfs", dir);
	CHECK(pack("/nonexistent/dlfs-src", out, DLFS_ORDER_SORTED, 1, 1 << 30,
		   &err) == -ENOENT);
	CHECK(strstr(err.msg, "/nonexistent/dlfs-src") != NULL);
	CHECK(access(out, F_OK) < 0);
	CHECK(pack(src, out, DLFS_ORDER_SORTED, 1, 1 << 30, &err) == 0);
	CHECK(pack(src, out, DLFS_ORDER_SORTED, 1, 1 << 30, &err) == -EEXIST);
	/* Two sources giving the same file path. */
	struct dlfs_pack_opts o;
	dlfs_pack_opts_init(&o);
	const char *two[] = {src, src};
	char out2[512];
	snprintf(out2, sizeof(out2), "%s/y.dlfs", dir);
	CHECK(dlfs_pack(two, 2, out2, &o, &err) == -EINVAL);
	CHECK(strstr(err.msg, "duplicate path") != NULL);
	CHECK(access(out2, F_OK) < 0);
	/* Opening things that are not datasets. */
	struct dlfs_ds *ds;
	CHECK(dlfs_ds_open(src, &ds, &err) == -ENOENT);
	CHECK(strstr(err.msg, "not a dlfs dataset") != NULL);
	CHECK(dlfs_ds_open("/nonexistent.dlfs", &ds, &err) == -ENOENT);
}

int main(void)
{
	char *src = tree();
	char *dir = t_tmpdir();
	char out[512], out2[512];
	struct dlfs_err err = {0};

	snprintf(out, sizeof(out), "%s/ds.dlfs", dir);
	int ret = pack(src, out, DLFS_ORDER_SORTED, 4, 4 * CS, &err);
	if (ret)
		fprintf(stderr, "pack: %s\n", err.msg);
	CHECK(ret == 0);
	struct dlfs_ds *ds;
	CHECK(dlfs_ds_open(out, &ds, &err) == 0);
	const struct dlfs_info *info = dlfs_ds_info(ds);
	CHECK_EQ(info->super.n_files, 306);
	CHECK_EQ(info->super.n_symlinks, 1);
	CHECK_EQ(info->super.n_dirs, 5); /* root a b many emptydir */
	CHECK(info->super.n_containers > 1);
	check_layout(ds);
	check_stat_range(ds);
	check_content(ds, src);
	check_readdir(ds);
	check_readdir_interleaved(ds);
	struct dlfs_verify_report rep;
	CHECK(dlfs_verify(ds, NULL, NULL, &rep, &err) == 0);
	CHECK(rep.bad_files == 0 && rep.bad_chunks == 0 &&
	      rep.bad_containers == 0 && rep.files == 306);
	dlfs_ds_close(ds);

	/* Reproducible: another thread count gives the same bytes. */
	snprintf(out2, sizeof(out2), "%s/ds2.dlfs", dir);
	CHECK(pack(src, out2, DLFS_ORDER_SORTED, 1, 4 * CS, &err) == 0);
	const char *files[] = {"index", "000000.dlc", "000001.dlc"};
	for (size_t i = 0; i < 3; i++) {
		char a[600], b[600];
		snprintf(a, sizeof(a), "%s/%s", out, files[i]);
		snprintf(b, sizeof(b), "%s/%s", out2, files[i]);
		CHECK(t_same_file(a, b));
	}

	/* Every order packs the same files, and inode order is layout. */
	enum dlfs_order orders[] = {DLFS_ORDER_INPUT, DLFS_ORDER_SIZE,
				    DLFS_ORDER_SHUFFLE};
	for (size_t i = 0; i < 3; i++) {
		char o[600];
		snprintf(o, sizeof(o), "%s/o%zu.dlfs", dir, i);
		CHECK(pack(src, o, orders[i], 3, 4 * CS, &err) == 0);
		CHECK(dlfs_ds_open(o, &ds, &err) == 0);
		check_layout(ds);
		check_content(ds, src);
		dlfs_ds_close(ds);
	}

	check_corruption(out);
	char *cut_src = cut_tree();
	check_cut(cut_src, dir, 0);
	check_cut(cut_src, dir, 1);
	t_rmrf(cut_src);
	free(cut_src);
	check_foreign_container(src, dir);
	check_errors(src, dir);

	t_rmrf(src);
	t_rmrf(dir);
	free(src);
	free(dir);
	return t_done("test_dataset");
}
