/*
 * What a mount answers (src/daemon/ops.c, with fs.c, opts.c and ixsrc.c
 * compiled in), called as both front ends call it, over a small packed
 * dataset and without FUSE: lookups of the dataset and of /.dlfs (whose
 * live files are never cached), readlink, listings that resume at any
 * offset and never show the control directory, plus listings with every
 * attribute, reads of files across chunks and of control files, statfs,
 * xattrs, and the op counters each call adds to.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ops.h"
#include "tutil.h"

#define CS 65536
#define BIG (3 * CS + 123) /* four chunks */

static struct dlfs_fs fs;
static char *src;

static uint64_t ops_count(enum dlfs_op op)
{
	return atomic_load(&fs.reader->stats.ops[op]);
}

static uint64_t lookup(uint64_t parent, const char *name, struct stat *st,
		       double *tmo)
{
	uint64_t ino = 0;
	CHECK_EQ(dlfs_ops_lookup(&fs, parent, name, &ino, st, tmo), 0);
	CHECK_EQ(st->st_ino, ino);
	return ino;
}

static void test_lookup(void)
{
	struct stat st;
	double tmo = -1;
	uint64_t before = ops_count(DLFS_OP_LOOKUP);
	uint64_t d = lookup(DLFS_ROOT_INO, "d", &st, &tmo);
	CHECK(S_ISDIR(st.st_mode));
	CHECK(tmo == fs.timeout);
	uint64_t f = lookup(d, "big.bin", &st, &tmo);
	CHECK(S_ISREG(st.st_mode));
	CHECK_EQ(st.st_size, BIG);
	CHECK_EQ(ops_count(DLFS_OP_LOOKUP), before + 2);
	uint64_t ino;
	CHECK_EQ(dlfs_ops_lookup(&fs, d, "nothing", &ino, &st, &tmo), -ENOENT);
	/* The control directory, at the root only. */
	uint64_t c = lookup(DLFS_ROOT_INO, ".dlfs", &st, &tmo);
	CHECK_EQ(c, DLFS_CTL_DIR);
	CHECK_EQ(dlfs_ops_lookup(&fs, d, ".dlfs", &ino, &st, &tmo), -ENOENT);
	/* Its live files are never cached, the rest for good. */
	lookup(c, "stats", &st, &tmo);
	CHECK(tmo == 0);
	lookup(c, "info", &st, &tmo);
	CHECK(tmo == fs.timeout);
	CHECK_EQ(dlfs_ops_getattr(&fs, f, &st, &tmo), 0);
	CHECK_EQ(st.st_size, BIG);
	CHECK_EQ(dlfs_ops_getattr(&fs, DLFS_CTL_METRICS, &st, &tmo), 0);
	CHECK(tmo == 0);
}

static void test_readlink(void)
{
	struct stat st;
	double tmo;
	char buf[PATH_MAX + 1];
	uint64_t l = lookup(DLFS_ROOT_INO, "link", &st, &tmo);
	CHECK(S_ISLNK(st.st_mode));
	CHECK_EQ(dlfs_ops_readlink(&fs, l, buf), 9);
	CHECK(!strcmp(buf, "d/big.bin"));
	uint64_t d = lookup(DLFS_ROOT_INO, "d", &st, &tmo);
	CHECK_EQ(dlfs_ops_readlink(&fs, d, buf), -EINVAL);
	CHECK_EQ(dlfs_ops_readlink(&fs, DLFS_CTL_INFO, buf), -EINVAL);
}

/* A listing: names joined by '/', each entry's offset and attributes. */
struct listing {
	char names[1024];
	uint64_t next[32];
	off_t size[32];
	int attrs[32];
	int n, room;
};

static int list_fn(void *arg, const char *name, size_t len,
		   const struct stat *st, int attrs, uint64_t next)
{
	struct listing *l = arg;
	if (l->n >= l->room)
		return 1;
	size_t o = strlen(l->names);
	snprintf(l->names + o, sizeof(l->names) - o, "%s%.*s", o ? "/" : "",
		 (int)len, name);
	l->size[l->n] = st->st_size;
	l->attrs[l->n] = attrs;
	l->next[l->n++] = next;
	return 0;
}

static void list(uint64_t ino, uint64_t off, int plus, int room,
		 struct listing *l)
{
	memset(l, 0, sizeof(*l));
	l->room = room;
	CHECK_EQ(dlfs_ops_readdir(&fs, ino, off, plus, list_fn, l), 0);
}

static void test_readdir(void)
{
	struct listing l;
	uint64_t plain = ops_count(DLFS_OP_READDIR);
	uint64_t plus = ops_count(DLFS_OP_READDIRPLUS);
	/* The root never shows the control directory. */
	list(DLFS_ROOT_INO, 0, 0, 32, &l);
	CHECK(!strcmp(l.names, "./../d/link/top.txt"));
	for (int i = 0; i < l.n; i++)
		CHECK_EQ(l.next[i], i + 1);
	/* Resumed where a full reply stopped, with nothing twice. */
	list(DLFS_ROOT_INO, 0, 0, 3, &l);
	CHECK(!strcmp(l.names, "./../d"));
	list(DLFS_ROOT_INO, l.next[l.n - 1], 0, 32, &l);
	CHECK(!strcmp(l.names, "link/top.txt"));
	/* A plus listing carries every attribute. */
	struct stat st;
	double tmo;
	uint64_t d = lookup(DLFS_ROOT_INO, "d", &st, &tmo);
	list(d, 2, 1, 32, &l);
	CHECK(!strcmp(l.names, "big.bin/small.bin"));
	CHECK(l.attrs[0] && l.attrs[1]);
	CHECK_EQ(l.size[0], BIG);
	CHECK_EQ(l.size[1], 1000);
	CHECK_EQ(ops_count(DLFS_OP_READDIR), plain + 3);
	CHECK_EQ(ops_count(DLFS_OP_READDIRPLUS), plus + 1);
	uint64_t f = lookup(d, "small.bin", &st, &tmo);
	CHECK_EQ(dlfs_ops_readdir(&fs, f, 0, 0, list_fn, &l), -ENOTDIR);
	/* The control directory lists as a directory of the mount. */
	list(DLFS_CTL_DIR, 2, 0, 32, &l);
	CHECK(!strcmp(l.names, "info/stats/metrics/epochs"));
}

/* Read ino from off, size bytes, into a buffer of the bytes given. */
static size_t read_all(struct dlfs_reader_ctx *x, uint64_t ino, uint64_t off,
		       size_t size, uint8_t *buf, int *ret)
{
	struct dlfs_ops_read r;
	size_t o = 0;
	*ret = dlfs_ops_read(&fs, x, ino, off, size, &r);
	for (int i = 0; !*ret && i < r.iovcnt; i++) {
		memcpy(buf + o, r.iov[i].iov_base, r.iov[i].iov_len);
		o += r.iov[i].iov_len;
	}
	CHECK(*ret || o == r.len);
	dlfs_ops_read_done(x, &r);
	return o;
}

static void test_read(void)
{
	struct dlfs_reader_ctx *x;
	struct stat st;
	double tmo;
	int ret;
	CHECK_EQ(dlfs_fs_ctx(&fs, &x), 0);
	uint64_t d = lookup(DLFS_ROOT_INO, "d", &st, &tmo);
	uint64_t f = lookup(d, "big.bin", &st, &tmo);
	size_t len;
	char *path = t_path(src, "d/big.bin");
	uint8_t *want = t_read(path, &len);
	uint8_t *buf = malloc(BIG + 100);
	/* Across chunks, and short only at the end. */
	CHECK_EQ(read_all(x, f, CS - 10, 2 * CS, buf, &ret), 2 * CS);
	CHECK_EQ(ret, 0);
	CHECK(!memcmp(buf, want + CS - 10, 2 * CS));
	CHECK_EQ(read_all(x, f, BIG - 23, 100, buf, &ret), 23);
	CHECK(!memcmp(buf, want + BIG - 23, 23));
	CHECK_EQ(read_all(x, f, BIG, 100, buf, &ret), 0);
	CHECK_EQ(ret, 0);
	/* A control file: its bytes, as many as asked up to its end. */
	CHECK_EQ(dlfs_ops_getattr(&fs, DLFS_CTL_INFO, &st, &tmo), 0);
	uint64_t control = ops_count(DLFS_OP_CONTROL);
	CHECK_EQ(read_all(x, DLFS_CTL_INFO, 0, BIG, buf, &ret), st.st_size);
	CHECK_EQ(ret, 0);
	CHECK_EQ(buf[0], '{');
	CHECK_EQ(ops_count(DLFS_OP_CONTROL), control + 1);
	read_all(x, DLFS_CTL_DIR, 0, 10, buf, &ret);
	CHECK_EQ(ret, -EISDIR);
	free(buf);
	free(want);
	free(path);
}

static void test_statfs_xattr(void)
{
	struct statvfs sv;
	struct stat st;
	double tmo;
	dlfs_ops_statfs(&fs, &sv);
	const struct dlfs_info *in = dlfs_ds_info(fs.ds);
	CHECK_EQ(sv.f_files, in->super.n_inodes);
	CHECK(sv.f_flag & ST_RDONLY);
	CHECK(sv.f_blocks * 4096 >= in->super.total_file_bytes);
	uint64_t d = lookup(DLFS_ROOT_INO, "d", &st, &tmo);
	uint64_t f = lookup(d, "small.bin", &st, &tmo);
	char buf[64];
	int is_file = 0;
	CHECK_EQ(dlfs_ops_xattr(&fs, f, NULL, buf, sizeof(buf), &is_file), 0);
	CHECK_EQ(is_file, 1);
	CHECK_EQ(dlfs_ops_xattr(&fs, f, "user.dlfs.xxh3", buf, sizeof(buf),
				&is_file),
		 16);
	struct dlfs_txn *t;
	struct dlfs_inode ino;
	struct dlfs_err err = {0};
	char want[32];
	CHECK_EQ(dlfs_txn_begin(fs.ds, &t, &err), 0);
	CHECK_EQ(dlfs_stat(t, f, &ino, &err), 0);
	dlfs_txn_end(t);
	snprintf(want, sizeof(want), "%016llx", (unsigned long long)ino.xxh3);
	CHECK(!strcmp(buf, want));
	CHECK_EQ(dlfs_ops_xattr(&fs, f, "user.other", buf, sizeof(buf),
				&is_file),
		 -ENODATA);
	CHECK_EQ(dlfs_ops_xattr(&fs, d, NULL, buf, sizeof(buf), &is_file),
		 -ENODATA);
	CHECK_EQ(is_file, 0);
	CHECK_EQ(dlfs_ops_xattr(&fs, DLFS_CTL_INFO, "user.dlfs.xxh3", buf,
				sizeof(buf), &is_file),
		 -ENODATA);
}

int main(void)
{
	char *dir = t_tmpdir();
	src = t_path(dir, "src");
	char *out = t_path(dir, "ds.dlfs");
	char *link = t_path(src, "link");
	t_write(src, "d/big.bin", BIG, 1);
	t_write(src, "d/small.bin", 1000, 2);
	t_write(src, "top.txt", 10, 3);
	if (symlink("d/big.bin", link))
		abort();
	char *argv[] = {"dlfs", out, "/mnt", NULL};
	struct fuse_args args = FUSE_ARGS_INIT(3, argv);
	struct dlfs_opts o;
	struct dlfs_ds *ds = NULL;
	struct dlfs_err err = {0};
	if (t_pack(src, out, CS, 1 << 20, 0) || dlfs_opts_parse(&args, &o) ||
	    dlfs_ds_open(out, &ds, &err) ||
	    dlfs_fs_init(&fs, ds, &o, "/mnt", 1, &err) ||
	    dlfs_fs_start(&fs, &err)) {
		fprintf(stderr, "setup: %s\n", err.msg);
		return 1;
	}
	test_lookup();
	test_readlink();
	test_readdir();
	test_read();
	test_statfs_xattr();
	dlfs_fs_destroy(&fs);
	dlfs_ds_close(ds);
	dlfs_opts_free(&o);
	fuse_opt_free_args(&args);
	t_rmrf(dir);
	free(link);
	free(out);
	free(src);
	free(dir);
	return t_done("test_ops");
}
