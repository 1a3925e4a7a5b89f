/*
 * The inode-to-path table and the epoch lists rendered from it, on a tree
 * big enough for many blocks of front-coded names and many pieces of a
 * list: every path, name and length against the index's own dlfs_path_of;
 * the lists read whole, in pieces, backwards and past their end, for one
 * rank (whose size is the walk's sum) and for one of two and of three
 * (measured).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dlfs/dataset.h"
#include "dlfs/format.h"
#include "paths.h"
#include "tutil.h"
#include "views.h"

#define N_FILES 20000

static struct dlfs_ds *ds;
static struct dlfs_txn *txn;
static char **path_of; /* [ino]: dlfs_path_of's answer, the reference */

/* Names that share prefixes, suffixes, both and neither; a few long ones,
 * a deep chain, empty directories, and files in the root. */
static void make_tree(const char *d)
{
	static const char *ext[] = {".jpg", ".JPEG", "", ".tar.gz", ".npy"};
	char n[1024], deep[900] = "";
	for (int i = 0; i < 30; i++)
		strcat(deep, i ? "/lvl" : "lvl");
	for (int i = 0; i < N_FILES; i++) {
		if (i % 997 == 3) {
			char longname[DLFS_NAME_MAX + 1];
			memset(longname, 'a' + i % 26, DLFS_NAME_MAX);
			longname[DLFS_NAME_MAX] = '\0';
			longname[i % 200] = 'Z';
			snprintf(n, sizeof(n), "long/%s", longname);
		} else if (i % 501 == 5) {
			snprintf(n, sizeof(n), "%s/x%d", deep, i);
		} else if (i % 89 == 1) {
			snprintf(n, sizeof(n), "top%d%s", i, ext[i % 5]);
		} else {
			snprintf(n, sizeof(n), "c%02d/n%05d_%d%s", i % 37, i,
				 i % 7 == 0 ? i * 31 : 7, ext[i % 5]);
		}
		t_write(d, n, (size_t)(i % 300), (uint32_t)i + 1);
	}
	char *e1 = t_path(d, "empty"), *e2 = t_path(d, "c05/empty2");
	char cmd[4096];
	snprintf(cmd, sizeof(cmd), "mkdir -p '%s' '%s'", e1, e2);
	CHECK_EQ(system(cmd), 0);
	free(e1);
	free(e2);
}

/* dpath_max: 64 MiB keeps every directory's path (a file's path is its
 * directory's and its name), 0 none (every path walked up name by name),
 * 500 bytes some (then none: all or nothing). */
static void test_table(uint64_t dpath_max)
{
	struct dlfs_paths *p = NULL;
	struct dlfs_err err = {0};
	const struct dlfs_info *info = dlfs_ds_info(ds);
	CHECK_EQ(dlfs_paths_build_max(txn, info, dpath_max, &p, &err), 0);
	if (!p)
		return;
	int64_t all = 0;
	char got[8192], want[8192], name[DLFS_NAME_MAX + 1];
	for (uint64_t ino = 2; ino <= info->super.n_inodes; ino++) {
		int is_file = ino >= info->super.first_file_ino;
		int is_dir = ino <= info->super.n_dirs;
		if (!is_file && !is_dir)
			continue;
		if (!path_of[ino]) {
			CHECK_EQ(dlfs_path_of(txn, ino, want, sizeof(want),
					      &err),
				 0);
			path_of[ino] = strdup(want);
		}
		snprintf(want, sizeof(want), "%s", path_of[ino]);
		int n = dlfs_paths_get(p, ino, got, sizeof(got));
		CHECK_EQ(n, (int)strlen(want));
		CHECK(n >= 0 && !strcmp(got, want));
		CHECK_EQ(dlfs_paths_len(p, ino), (int64_t)strlen(want));
		/* Too small by one: no partial path. */
		CHECK_EQ(dlfs_paths_get(p, ino, got, strlen(want)),
			 -ENAMETOOLONG);
		const char *base = strrchr(want, '/');
		base = base ? base + 1 : want;
		CHECK_EQ(dlfs_paths_name(p, ino, name), (int)strlen(base));
		CHECK(!strcmp(name, base));
		if (is_file)
			all += (int64_t)strlen(want) + 1;
	}
	CHECK_EQ(dlfs_paths_all_len(p), all);
	/* The root, and inodes past the end, have no path here. */
	CHECK_EQ(dlfs_paths_name(p, 1, name), -ENOENT);
	CHECK_EQ(dlfs_paths_get(p, info->super.n_inodes + 1, got, sizeof(got)),
		 -ENOENT);
	CHECK_EQ(dlfs_paths_len(p, 0), -ENOENT);
	/* Front coding keeps names well under their plain size. */
	CHECK(dlfs_paths_bytes(p) < (size_t)all * 2 + (4u << 20));
	dlfs_paths_free(p);
}

/* Epoch e's list for rank of size, read in steps of step bytes, against
 * the paths of its samples. */
static void test_list(uint32_t rank, uint32_t size, uint64_t e, size_t step)
{
	struct dlfs_views_conf conf = {.ds = ds, .mode = DLFS_SHUFFLE_GLOBAL,
				       .seed = 7, .rank = rank, .size = size};
	struct dlfs_views *v = NULL;
	struct dlfs_err err = {0};
	CHECK_EQ(dlfs_views_new(&conf, &v, &err), 0);
	if (!v)
		return;
	uint64_t len = 0, bytes = 0;
	CHECK_EQ(dlfs_views_share_len(v, txn, e, &len, &err), 0);
	char *want = NULL;
	size_t wlen = 0;
	FILE *m = open_memstream(&want, &wlen);
	for (uint64_t j = 0; j < len; j++) {
		uint64_t ino = 0;
		CHECK_EQ(dlfs_views_sample(v, txn, e, j, 0, &ino, &err), 0);
		fprintf(m, "%s\n", path_of[ino]);
	}
	fclose(m);
	/* Far ahead first: the pieces before it are found on the way. */
	char *got = malloc(wlen + step + 1);
	size_t n = 0, have = 0;
	if (wlen > 100) {
		CHECK_EQ(dlfs_views_files_read(v, txn, e, wlen - 100, got, 1000,
					       &n, &err),
			 0);
		CHECK_EQ(n, 100);
		CHECK(!memcmp(got, want + wlen - 100, 100));
	}
	CHECK_EQ(dlfs_views_files_size(v, txn, e, &bytes, &err), 0);
	CHECK_EQ(bytes, wlen);
	do {
		CHECK_EQ(dlfs_views_files_read(v, txn, e, have, got + have,
					       step, &n, &err),
			 0);
		have += n;
	} while (n && have <= wlen);
	CHECK_EQ(have, wlen);
	CHECK(have == wlen && !memcmp(got, want, wlen));
	/* Backwards, across pieces, and past the end. */
	for (size_t at = wlen; at > 0;) {
		at = at > 70001 ? at - 70001 : 0;
		CHECK_EQ(dlfs_views_files_read(v, txn, e, at, got, 3000, &n,
					       &err),
			 0);
		CHECK_EQ(n, wlen - at < 3000 ? wlen - at : 3000);
		CHECK(!memcmp(got, want + at, n));
	}
	CHECK_EQ(dlfs_views_files_read(v, txn, e, wlen + 5, got, 10, &n, &err),
		 0);
	CHECK_EQ(n, 0);
	/* Another epoch in between, then this one again: the same bytes. */
	CHECK_EQ(dlfs_views_files_size(v, txn, e + 1, &bytes, &err), 0);
	CHECK_EQ(dlfs_views_files_size(v, txn, e + 2, &bytes, &err), 0);
	CHECK_EQ(dlfs_views_files_read(v, txn, e + 2, 0, got, 10, &n, &err),
		 0);
	have = 0;
	do {
		CHECK_EQ(dlfs_views_files_read(v, txn, e, have, got + have,
					       131072, &n, &err),
			 0);
		have += n;
	} while (n && have <= wlen);
	CHECK(have == wlen && !memcmp(got, want, wlen));
	free(got);
	free(want);
	dlfs_views_free(v);
}

int main(void)
{
	struct dlfs_err err = {0};
	char *src = t_tmpdir(), *dir = t_tmpdir();
	char *out = t_path(dir, "ds.dlfs");
	make_tree(src);
	if (t_pack(src, out, 65536, 1u << 20, 0))
		return 1;
	if (dlfs_ds_open(out, &ds, &err) || dlfs_txn_begin(ds, &txn, &err)) {
		fprintf(stderr, "open: %s\n", err.msg);
		return 1;
	}
	uint64_t n_inodes = dlfs_ds_info(ds)->super.n_inodes;
	CHECK_EQ(dlfs_ds_info(ds)->super.n_files, N_FILES);
	path_of = calloc(n_inodes + 1, sizeof(*path_of));
	test_table(UINT64_C(64) << 20);
	test_table(0);
	test_table(500);
	test_list(0, 1, 1, 131072);
	test_list(0, 1, 4, 4093);
	test_list(1, 2, 2, 65536); /* 10,000 paths: more than a piece */
	test_list(2, 3, 3, 65536);
	for (uint64_t i = 0; i <= n_inodes; i++)
		free(path_of[i]);
	free(path_of);
	dlfs_txn_end(txn);
	dlfs_ds_close(ds);
	t_rmrf(src);
	t_rmrf(dir);
	free(src);
	free(dir);
	free(out);
	return t_done("test_paths");
}
