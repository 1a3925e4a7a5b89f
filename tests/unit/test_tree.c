/*
 * The packer's tree (src/pack/tree.c) and its layout (layout.c): entries
 * kept as names under their parent, their attributes in a file, and both
 * put in ino order by pk_layout, whatever the order, through more than
 * one bucket of the reorder.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "layout.h"
#include "tutil.h"

static struct dlfs_err err;

static void open_tree(struct pk_tree *t, const char *dir, int n)
{
	char p[4096];
	pk_tree_init(t);
	snprintf(p, sizeof(p), "%s/attrs.%d", dir, n);
	CHECK(pk_tree_open_attrs(t, p, &err) == 0);
	struct pk_entry *e;
	struct pk_attr *a;
	CHECK(pk_tree_root(t, &e, &a, &err) == 0);
}

/* A put that must work; returns the entry's index. */
static uint64_t put(struct pk_tree *t, const char *p, uint32_t mode,
		    struct pk_attr **a)
{
	struct pk_entry *e = NULL;
	struct pk_attr *at = NULL;
	int rc = pk_tree_put(t, p, strlen(p), mode, 0, "test", &e, &at, &err);
	if (rc || !e) {
		fprintf(stderr, "put %s: %d %s\n", p, rc, err.msg);
		CHECK(0);
		return 0;
	}
	if (a)
		*a = at;
	return (uint64_t)(e - t->e);
}

static char *path_of(const struct pk_tree *t, const struct pk_entry *e)
{
	char *b = NULL;
	size_t cap = 0, len;
	CHECK(pk_entry_path(t, e, &b, &cap, &len) == 0);
	CHECK(len == strlen(b));
	CHECK(len == pk_entry_path_len(t, e));
	return b;
}

/* Entries compare as their whole paths do, '/' below every byte. */
static void test_cmp(const char *dir)
{
	static const char *dirs[] = {"a", "a/b", "a/b/c", "a-b", "ab", "a/b-"};
	static const char *files[] = {"f",     "a/f",   "a/b/f", "a/b/c/f",
				      "a-b/f", "a/bb",  "a/b.t", "a/b-/x",
				      "a/b!",  "ab/zz", "a0"};
	struct pk_tree t;
	open_tree(&t, dir, 0);
	for (size_t i = 0; i < sizeof(dirs) / sizeof(*dirs); i++)
		put(&t, dirs[i], S_IFDIR | 0755, NULL);
	for (size_t i = 0; i < sizeof(files) / sizeof(*files); i++)
		put(&t, files[i], S_IFREG | 0644, NULL);
	int bad = 0;
	for (uint64_t i = 0; i < t.n; i++) {
		char *x = path_of(&t, &t.e[i]);
		int64_t k = pk_tree_find(&t, x, strlen(x));
		bad += k != (int64_t)i;
		for (uint64_t j = 0; j < t.n; j++) {
			char *y = path_of(&t, &t.e[j]);
			int want = pk_pathcmp(x, strlen(x), y, strlen(y));
			int got = pk_entry_cmp(&t, &t.e[i], &t.e[j]);
			if ((want > 0) != (got > 0) || (want < 0) != (got < 0)) {
				fprintf(stderr, "cmp '%s' '%s': %d, want %d\n",
					x, y, got, want);
				bad++;
			}
			free(y);
		}
		free(x);
	}
	CHECK_EQ(bad, 0);
	/* Names: a directory's last component, a file's own. */
	size_t nl;
	const char *nm = pk_entry_name(&t.e[pk_tree_find(&t, "a/b/c", 5)], &nl);
	CHECK(nl == 1 && !memcmp(nm, "c", 1));
	nm = pk_entry_name(&t.e[pk_tree_find(&t, "a/b.t", 5)], &nl);
	CHECK(nl == 3 && !memcmp(nm, "b.t", 3));
	CHECK(pk_tree_find(&t, "a/b/g", 5) == -1);
	CHECK(pk_tree_find(&t, "a/b/", 4) == -1);
	/* A duplicate is refused; a directory given again merges. */
	struct pk_entry *e;
	struct pk_attr *a;
	CHECK(pk_tree_put(&t, "a/f", 3, S_IFREG | 0644, 0, "w", &e, &a,
			  &err) == -EINVAL);
	CHECK(strstr(err.msg, "duplicate path 'a/f'") != NULL);
	CHECK(pk_tree_put(&t, "a/b", 3, S_IFDIR | 0700, 0, "w", &e, &a,
			  &err) == 0);
	CHECK(e == NULL);
	/* No parent: refused, not guessed. */
	CHECK(pk_tree_put(&t, "q/r", 3, S_IFREG | 0644, 0, "w", &e, &a,
			  &err) == -EINVAL);
	pk_tree_free(&t);
}

/* Records written, changed behind the buffer and in it, read back. */
static void test_attrs(const char *dir)
{
	struct pk_tree t;
	open_tree(&t, dir, 1);
	enum { N = 20000 };
	put(&t, "d", S_IFDIR | 0755, NULL);
	for (int i = 0; i < N; i++) {
		char p[64];
		struct pk_attr *a;
		snprintf(p, sizeof(p), "d/f%06d", i);
		uint64_t k = put(&t, p, S_IFREG | 0644, &a);
		a->mtime_sec = (int64_t)k * 3;
		a->spool_off = k;
		if (i == N / 2) {
			/* An early record (in the file) and the current one. */
			struct pk_attr x;
			CHECK(pk_attr_get(&t, 5, &x, &err) == 0);
			CHECK_EQ(x.spool_off, 5);
			x.mtime_nsec = 77;
			CHECK(pk_attr_set(&t, 5, &x, &err) == 0);
			CHECK(pk_attr_get(&t, k, &x, &err) == 0);
			CHECK_EQ(x.spool_off, k);
		}
	}
	CHECK(pk_attr_flush(&t, &err) == 0);
	struct pk_attr *all = calloc(t.n, sizeof(*all));
	CHECK(pk_attr_read(&t, 0, t.n, all, &err) == 0);
	int bad = 0;
	for (uint64_t k = 2; k < t.n; k++)
		bad += all[k].spool_off != k || all[k].mtime_sec != (int64_t)k * 3 ||
		       all[k].mtime_nsec != (k == 5 ? 77u : 0u);
	CHECK_EQ(bad, 0);
	/* Past the end: a short read is an error, never zeros. */
	CHECK(pk_attr_read(&t, t.n, 1, all, &err) == -EIO);
	free(all);
	pk_tree_free(&t);
}

/* A random tree, laid out in each order through buckets of 97. */
static void test_layout(const char *dir, enum dlfs_order ord, int n)
{
	struct pk_tree t;
	open_tree(&t, dir, n + 2);
	t.bucket = 97;
	srand(7 + n);
	/* Directories, some only implied (as archive members imply). */
	uint64_t ndirs = 0;
	char dpath[60][64];
	for (int i = 0; i < 60; i++) {
		if (i < 6 || rand() % 3)
			snprintf(dpath[i], 64, "d%02d", i);
		else
			snprintf(dpath[i], 64, "%s/s%02d", dpath[rand() % i],
				 i);
		struct pk_attr *a;
		uint64_t k = put(&t, dpath[i], S_IFDIR | 0755, &a);
		a->implicit = i % 4 == 0;
		a->mtime_sec = 500 + (int64_t)k;
		a->spool_off = k;
		ndirs++;
	}
	/* Files, symlinks and hard links, attributes naming their entry. */
	uint64_t links[40][2], nl = 0;
	uint64_t first_file = 0;
	for (int i = 0; i < 3000; i++) {
		char p[128];
		snprintf(p, sizeof(p), "%s/f%05d", dpath[rand() % 60],
			 rand() % 100000 * 10 + i % 10);
		if (pk_tree_find(&t, p, strlen(p)) >= 0)
			continue;
		int sl = i % 50 == 3;
		struct pk_attr *a;
		uint64_t k = put(&t, p, (sl ? S_IFLNK : S_IFREG) | 0644, &a);
		if (!first_file)
			first_file = k;
		a->mtime_sec = 1000 + (int64_t)k;
		a->mtime_nsec = (uint32_t)k;
		a->spool_off = k;
		if (sl) {
			char tg[32];
			snprintf(tg, sizeof(tg), "target-%llu",
				 (unsigned long long)k);
			CHECK(pk_tree_set_target(&t, &t.e[k], tg, strlen(tg),
						 &err) == 0);
		} else {
			t.e[k].size = (uint64_t)(rand() % 5000);
			if (i % 77 == 5 && nl < 40 && first_file < k) {
				a->data_from = (uint32_t)first_file + 1;
				links[nl][0] = k;
				links[nl++][1] = first_file;
				CHECK(pk_tree_add_link(&t, k, &err) == 0);
			}
		}
	}
	uint64_t n0 = t.n;
	/* Whole paths before, to check every entry after. */
	char **before = calloc(n0, sizeof(*before));
	for (uint64_t k = 0; k < n0; k++)
		before[k] = path_of(&t, &t.e[k]);

	struct dlfs_pack_opts o;
	dlfs_pack_opts_init(&o);
	o.order = ord;
	o.seed = 99;
	o.chunk_size = 4096;
	o.container_size = 1 << 20;
	struct pk_layout l;
	CHECK(pk_layout(&t, &o, &l, &err) == 0);
	CHECK_EQ(t.n, n0);
	CHECK_EQ(l.n_dirs, ndirs + 1);
	struct pk_attr *a = calloc(t.n, sizeof(*a));
	CHECK(pk_attr_read(&t, 0, t.n, a, &err) == 0);
	int bad = 0;
	int64_t max = INT64_MIN;
	uint64_t *kids = calloc(t.n, sizeof(*kids));
	for (uint64_t i = 0; i < t.n; i++) {
		struct pk_entry *e = &t.e[i];
		uint64_t k = a[i].spool_off; /* its index before */
		char *p = path_of(&t, e);
		bad += e->ino != i + 1;
		bad += k >= n0 || strcmp(p, before[k]) != 0;
		if (i && !a[i].implicit && a[i].mtime_sec > max)
			max = a[i].mtime_sec;
		if (i) {
			char *pp = path_of(&t, &t.e[e->parent]);
			size_t ppl = strlen(pp);
			bad += !S_ISDIR(t.e[e->parent].mode);
			bad += ppl ? strncmp(p, pp, ppl) || p[ppl] != '/'
				   : strchr(p, '/') != NULL;
			free(pp);
			kids[e->parent]++;
		}
		if (i && !a[i].implicit)
			bad += a[i].mtime_sec != (S_ISDIR(e->mode) ? 500 : 1000) +
						     (int64_t)k;
		if (S_ISLNK(e->mode)) {
			char tg[32];
			snprintf(tg, sizeof(tg), "target-%llu",
				 (unsigned long long)k);
			bad += e->size != strlen(tg) ||
			       memcmp(pk_target(e), tg, e->size);
		}
		free(p);
	}
	CHECK_EQ(bad, 0);
	CHECK_EQ(l.max_mtime, max);
	/* Implied directories and a root no source gave: the newest mtime. */
	for (uint64_t i = 0; i < l.n_dirs; i++) {
		bad += t.e[i].size != kids[i];
		if (a[i].implicit || i == 0)
			bad += a[i].mtime_sec != max || a[i].mtime_nsec;
	}
	CHECK_EQ(bad, 0);
	/* Hard links point at their group's first entry, renumbered. */
	for (uint64_t j = 0; j < nl; j++) {
		uint64_t found = 0;
		for (uint64_t i = 0; i < t.n; i++)
			if (a[i].spool_off == links[j][0]) {
				found = 1;
				bad += !a[i].data_from ||
				       a[a[i].data_from - 1].spool_off !=
					       links[j][1];
			}
		bad += !found;
	}
	CHECK_EQ(bad, 0);
	/* Groups, and each in its order. */
	uint64_t f = l.n_dirs + l.n_symlinks;
	for (uint64_t i = 1; i < t.n; i++) {
		const struct pk_entry *x = &t.e[i - 1], *y = &t.e[i];
		int gx = S_ISDIR(x->mode) ? 0 : S_ISLNK(x->mode) ? 1 : 2;
		int gy = S_ISDIR(y->mode) ? 0 : S_ISLNK(y->mode) ? 1 : 2;
		bad += gx > gy;
		if (gx != gy)
			continue;
		if (gx < 2 || ord == DLFS_ORDER_SORTED)
			bad += pk_entry_cmp(&t, x, y) >= 0;
		else if (ord == DLFS_ORDER_INPUT)
			bad += a[i - 1].spool_off >= a[i].spool_off;
		else if (ord == DLFS_ORDER_SIZE)
			bad += x->size > y->size;
	}
	CHECK_EQ(bad, 0);
	/* Placement: in order, inside the data, past the previous file. */
	uint64_t prev_end = 0;
	uint32_t prev_c = 0;
	for (uint64_t i = f; i < t.n; i++) {
		uint32_t c = pk_loc_container(l.loc[i]);
		uint64_t off = pk_loc_offset(l.loc[i]);
		if (c != prev_c)
			prev_end = 0;
		bad += c < prev_c || off < DLFS_DATA_OFFSET(o.chunk_size) ||
		       off - DLFS_DATA_OFFSET(o.chunk_size) < prev_end;
		prev_c = c;
		prev_end = off - DLFS_DATA_OFFSET(o.chunk_size) + t.e[i].size;
	}
	CHECK_EQ(bad, 0);
	CHECK(l.n_containers > 1);
	for (uint64_t k = 0; k < n0; k++)
		free(before[k]);
	free(before);
	free(kids);
	free(a);
	pk_layout_free(&l);
	pk_tree_free(&t);
}

int main(void)
{
	char *dir = t_tmpdir();
	test_cmp(dir);
	test_attrs(dir);
	test_layout(dir, DLFS_ORDER_SORTED, 0);
	test_layout(dir, DLFS_ORDER_INPUT, 1);
	test_layout(dir, DLFS_ORDER_SIZE, 2);
	test_layout(dir, DLFS_ORDER_SHUFFLE, 3);
	t_rmrf(dir);
	free(dir);
	return t_done("test_tree");
}
