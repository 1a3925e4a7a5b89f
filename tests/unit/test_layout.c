/*
 * The layout (src/pack/layout.c, through layout.h): where each file's
 * bytes go. The rules are those of dlfs-pack(1) LAYOUT and
 * dlfs-format(5): files back to back in the chosen order, each at a
 * multiple of align from the start of the data region, none across a
 * chunk boundary unless it is larger than a chunk, and a new container
 * when the next file would take the current one past container_size.
 *
 * Small trees are checked against places worked out by hand; random
 * trees, in every order and under several sizes, against the rules as
 * invariants (every file placed once, in order, no overlap, each at the
 * first place the rules allow, containers within their size unless one
 * file alone is larger, the per-container tables adding up). Then the
 * orders themselves, the shuffle's seed, and the errors: an entry of no
 * known type, more containers than the format has, an offset past 2^48.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "layout.h"
#include "tutil.h"

static char *dir; /* the attribute files */
static int n_trees;
static struct dlfs_err err;

static void tree_open(struct pk_tree *t)
{
	char p[4096];
	struct pk_entry *e;
	struct pk_attr *a;
	pk_tree_init(t);
	snprintf(p, sizeof(p), "%s/attrs.%d", dir, n_trees++);
	CHECK_EQ(pk_tree_open_attrs(t, p, &err), 0);
	CHECK_EQ(pk_tree_root(t, &e, &a, &err), 0);
}

/* Put path p (a file of size bytes, a directory, a symlink or anything
 * else by mode) as source src gives it. Its attributes remember the
 * order of the puts (spool_off), to follow it through the layout. */
static void add(struct pk_tree *t, const char *p, uint32_t mode, uint32_t src,
		uint64_t size)
{
	struct pk_entry *e = NULL;
	struct pk_attr *a = NULL;
	int rc = pk_tree_put(t, p, strlen(p), mode, src, "test", &e, &a, &err);
	if (rc || !e) {
		fprintf(stderr, "put %s: %d %s\n", p, rc, err.msg);
		t_failures++;
		return;
	}
	a->spool_off = (uint64_t)(e - t->e);
	if (S_ISLNK(mode))
		CHECK_EQ(pk_tree_set_target(t, e, "target", 6, &err), 0);
	else if (S_ISREG(mode))
		e->size = size;
}

static void add_file(struct pk_tree *t, const char *p, uint64_t size)
{
	add(t, p, S_IFREG | 0644, 0, size);
}

static struct dlfs_pack_opts opts_of(uint64_t cs, uint64_t container,
				     uint64_t align, enum dlfs_order order,
				     uint64_t seed)
{
	struct dlfs_pack_opts o;
	dlfs_pack_opts_init(&o);
	o.chunk_size = cs;
	o.container_size = container;
	o.align = align;
	o.order = order;
	o.seed = seed;
	return o;
}

/* Lay t out, which must work. */
static void lay(struct pk_tree *t, const struct dlfs_pack_opts *o,
		struct pk_layout *l)
{
	int rc = pk_layout(t, o, l, &err);
	if (rc) {
		fprintf(stderr, "pk_layout: %d %s\n", rc, err.msg);
		t_failures++;
	}
}

/* The whole path of entry i (in ino order once laid out), malloc'd. */
static char *path_at(const struct pk_tree *t, uint64_t i)
{
	char *b = NULL;
	size_t cap = 0, len;
	CHECK_EQ(pk_entry_path(t, &t->e[i], &b, &cap, &len), 0);
	return b;
}

/* ---- places worked out by hand ---- */

/* A file as it should be placed: off is from the start of the data
 * region. */
struct want {
	const char *path;
	uint64_t size;
	uint32_t c;
	uint64_t off;
};

/* Files in the order given (which is the layout's), then laid out: each
 * where w says. */
static void check_places(const struct want *w, size_t n,
			 const struct dlfs_pack_opts *o, struct pk_layout *l,
			 struct pk_tree *t)
{
	tree_open(t);
	for (size_t i = 0; i < n; i++)
		add_file(t, w[i].path, w[i].size);
	lay(t, o, l);
	CHECK_EQ(l->n_files, n);
	const uint64_t first = l->n_dirs + l->n_symlinks;
	for (size_t i = 0; i < n && first + i < t->n; i++) {
		uint64_t loc = l->loc[first + i];
		char *p = path_at(t, first + i);
		uint64_t off = pk_loc_offset(loc) - DLFS_DATA_OFFSET(o->chunk_size);
		if (strcmp(p, w[i].path) || pk_loc_container(loc) != w[i].c ||
		    off != w[i].off) {
			fprintf(stderr, "file %zu: %s in %u at %llu, want %s in "
					"%u at %llu\n",
				i, p, pk_loc_container(loc),
				(unsigned long long)off, w[i].path, w[i].c,
				(unsigned long long)w[i].off);
			t_failures++;
		}
		free(p);
	}
}

/* Chunks of 4 KiB, containers of 16 KiB, files back to back. */
static void test_by_hand(void)
{
	static const struct want w[] = {
		{"a", 1000, 0, 0},
		{"b", 3000, 0, 1000}, /* ends at 4000, inside chunk 0 */
		{"c", 200, 0, 4096},  /* would cross 4096: to chunk 1 */
		{"d", 0, 0, 4296},    /* empty: where it is */
		{"e", 5000, 0, 4296}, /* larger than a chunk: where it is */
		{"f", 4096, 0, 12288}, /* a whole chunk: at a boundary, and
					* ends at the container's size */
		{"g", 1, 1, 0},       /* past 16384: a new container */
		{"h", 0, 1, 1},
		{"i", 20000, 2, 0},   /* larger than a container: one alone */
		{"j", 10, 3, 0},
		{"k", 4090, 3, 4096},
	};
	struct dlfs_pack_opts o = opts_of(4096, 16384, 1, DLFS_ORDER_SORTED, 0);
	struct pk_tree t;
	struct pk_layout l;
	check_places(w, sizeof(w) / sizeof(*w), &o, &l, &t);
	CHECK_EQ(l.n_dirs, 1);
	CHECK_EQ(l.n_symlinks, 0);
	CHECK_EQ(l.n_containers, 4);
	static const uint64_t size[] = {16384, 1, 20000, 8186};
	static const uint64_t files[] = {6, 2, 1, 2};
	static const uint64_t first[] = {1, 7, 9, 10};
	static const uint64_t chunk[] = {0, 4, 5, 10};
	for (uint32_t c = 0; c < 4 && c < l.n_containers; c++) {
		CHECK_EQ(l.data_size[c], size[c]);
		CHECK_EQ(l.n_cfiles[c], files[c]);
		CHECK_EQ(l.first_file[c], first[c]);
		CHECK_EQ(l.first_chunk[c], chunk[c]);
	}
	CHECK_EQ(l.n_chunks, 12);
	CHECK_EQ(l.total_bytes, 37397);
	pk_layout_free(&l);
	pk_tree_free(&t);
}

/* align 512: every file at a multiple of 512, empty ones too. */
static void test_align(void)
{
	static const struct want w[] = {
		{"a", 100, 0, 0},
		{"b", 0, 0, 512},
		{"c", 0, 0, 512},  /* nothing since b: the same place */
		{"d", 600, 0, 512},
		{"e", 3000, 0, 4096}, /* 1536 would cross 4096 */
		{"f", 5000, 0, 7168}, /* larger than a chunk: aligned only */
		{"g", 4096, 0, 12288},
	};
	struct dlfs_pack_opts o =
		opts_of(4096, 1 << 20, 512, DLFS_ORDER_SORTED, 0);
	struct pk_tree t;
	struct pk_layout l;
	check_places(w, sizeof(w) / sizeof(*w), &o, &l, &t);
	CHECK_EQ(l.n_containers, 1);
	CHECK_EQ(l.data_size[0], 16384);
	CHECK_EQ(l.n_chunks, 4);
	pk_layout_free(&l);
	pk_tree_free(&t);

	/* align of a whole container: an empty file at its very end stays
	 * (it takes the container past nothing); a byte more does not. */
	static const struct want v[] = {
		{"a", 100, 0, 0},
		{"b", 0, 0, 4096},
		{"c", 1, 1, 0},
	};
	o = opts_of(4096, 4096, 4096, DLFS_ORDER_SORTED, 0);
	check_places(v, sizeof(v) / sizeof(*v), &o, &l, &t);
	CHECK_EQ(l.n_containers, 2);
	pk_layout_free(&l);
	pk_tree_free(&t);
}

/* No files, and only empty ones: one container, no chunks. */
static void test_empty(void)
{
	struct dlfs_pack_opts o = opts_of(4096, 8192, 1, DLFS_ORDER_SORTED, 0);
	struct pk_tree t;
	struct pk_layout l;
	tree_open(&t);
	add(&t, "d", S_IFDIR | 0755, 0, 0);
	add(&t, "d/l", S_IFLNK | 0777, 0, 0);
	lay(&t, &o, &l);
	CHECK_EQ(l.n_dirs, 2);
	CHECK_EQ(l.n_symlinks, 1);
	CHECK_EQ(l.n_files, 0);
	CHECK_EQ(l.n_containers, 1);
	CHECK_EQ(l.data_size[0], 0);
	CHECK_EQ(l.n_cfiles[0], 0);
	CHECK_EQ(l.first_file[0], 3);
	CHECK_EQ(l.n_chunks, 0);
	CHECK_EQ(l.total_bytes, 0);
	pk_layout_free(&l);
	pk_tree_free(&t);

	static const struct want w[] = {
		{"a", 0, 0, 0}, {"b", 0, 0, 0}, {"c", 0, 0, 0},
	};
	check_places(w, 3, &o, &l, &t);
	CHECK_EQ(l.n_containers, 1);
	CHECK_EQ(l.data_size[0], 0);
	CHECK_EQ(l.n_chunks, 0);
	pk_layout_free(&l);
	pk_tree_free(&t);

	/* A container with no bytes yet takes any file, however large:
	 * empty files before a file larger than a container share it. */
	static const struct want v[] = {
		{"a", 0, 0, 0}, {"b", 20000, 0, 0}, {"c", 0, 1, 0},
		{"d", 1, 1, 0},
	};
	check_places(v, 4, &o, &l, &t);
	CHECK_EQ(l.n_containers, 2);
	CHECK_EQ(l.data_size[0], 20000);
	CHECK_EQ(l.n_chunks, 6);
	pk_layout_free(&l);
	pk_tree_free(&t);
}

/* ---- the orders ---- */

/* By size, ties by path; directories and symlinks by path in every
 * order, before the files. */
static void test_size_order(void)
{
	struct dlfs_pack_opts o = opts_of(4096, 1 << 20, 1, DLFS_ORDER_SIZE, 0);
	struct pk_tree t;
	struct pk_layout l;
	tree_open(&t);
	add_file(&t, "z", 10);
	add_file(&t, "a", 30);
	add(&t, "s2", S_IFLNK | 0777, 0, 0);
	add_file(&t, "m", 10);
	add(&t, "b", S_IFDIR | 0755, 0, 0);
	add_file(&t, "b/x", 20);
	add(&t, "s1", S_IFLNK | 0777, 0, 0);
	add_file(&t, "c", 0);
	lay(&t, &o, &l);
	static const char *order[] = {"", "b", "s1", "s2", "c",
				      "m", "z", "b/x", "a"};
	static const uint64_t off[] = {0, 0, 10, 20, 40};
	CHECK_EQ(t.n, 9);
	for (uint64_t i = 0; i < 9 && i < t.n; i++) {
		char *p = path_at(&t, i);
		if (strcmp(p, order[i])) {
			fprintf(stderr, "ino %llu: %s, want %s\n",
				(unsigned long long)i + 1, p, order[i]);
			t_failures++;
		}
		if (i >= 4)
			CHECK_EQ(pk_loc_offset(l.loc[i]) - 4096, off[i - 4]);
		free(p);
	}
	pk_layout_free(&l);
	pk_tree_free(&t);
}

/* Input: sources in their order, each source's entries as it gave them
 * (not by path). */
static void test_input_order(void)
{
	struct dlfs_pack_opts o = opts_of(4096, 1 << 20, 1, DLFS_ORDER_INPUT, 0);
	struct pk_tree t;
	struct pk_layout l;
	tree_open(&t);
	add(&t, "q", S_IFREG | 0644, 1, 5);
	add(&t, "p", S_IFREG | 0644, 1, 5);
	add(&t, "z", S_IFREG | 0644, 0, 5);
	add(&t, "a", S_IFDIR | 0755, 0, 0);
	add(&t, "a/y", S_IFREG | 0644, 0, 5);
	add(&t, "a/b", S_IFREG | 0644, 2, 5);
	lay(&t, &o, &l);
	static const char *order[] = {"z", "a/y", "q", "p", "a/b"};
	CHECK_EQ(l.n_files, 5);
	for (uint64_t i = 0; i < 5 && i < l.n_files; i++) {
		char *p = path_at(&t, l.n_dirs + i);
		if (strcmp(p, order[i])) {
			fprintf(stderr, "file %llu: %s, want %s\n",
				(unsigned long long)i, p, order[i]);
			t_failures++;
		}
		CHECK_EQ(pk_loc_offset(l.loc[l.n_dirs + i]) - 4096, 5 * i);
		free(p);
	}
	pk_layout_free(&l);
	pk_tree_free(&t);
}

/* The paths of the files of a shuffle of n files, put in reverse or
 * not, joined in layout order. */
static char *shuffled(int n, int reverse, uint64_t seed)
{
	struct dlfs_pack_opts o =
		opts_of(4096, 1 << 20, 1, DLFS_ORDER_SHUFFLE, seed);
	struct pk_tree t;
	struct pk_layout l;
	tree_open(&t);
	add(&t, "d", S_IFDIR | 0755, 0, 0);
	for (int i = 0; i < n; i++) {
		char p[32];
		int k = reverse ? n - 1 - i : i;
		snprintf(p, sizeof(p), k % 3 ? "f%04d" : "d/f%04d", k);
		add_file(&t, p, (uint64_t)k % 7);
	}
	lay(&t, &o, &l);
	size_t len = 0;
	char *all = calloc((size_t)n, 16);
	for (uint64_t i = l.n_dirs; i < t.n; i++) {
		char *p = path_at(&t, i);
		len += (size_t)sprintf(all + len, "%s,", p);
		free(p);
	}
	pk_layout_free(&l);
	pk_tree_free(&t);
	return all;
}

/* The same seed and paths give the same order, whatever order the
 * sources gave them in; another seed another; and it is no sort. */
static void test_shuffle(void)
{
	char *a = shuffled(300, 0, 42), *b = shuffled(300, 1, 42);
	char *c = shuffled(300, 0, 43), *s = shuffled(300, 0, 0);
	CHECK(strcmp(a, b) == 0);
	CHECK(strcmp(a, c) != 0);
	CHECK(strcmp(s, a) != 0 && strcmp(s, c) != 0);
	/* Not sorted: some path comes after a greater one. */
	int falls = 0;
	char prev[32] = "";
	for (char *p = a, *q; (q = strchr(p, ',')); p = q + 1) {
		*q = '\0';
		falls += strcmp(p, prev) < 0;
		snprintf(prev, sizeof(prev), "%s", p);
	}
	CHECK(falls > 50);
	free(a);
	free(b);
	free(c);
	free(s);
}

/* ---- random trees against the rules ---- */

/* Where a file of size s goes after a container's data ends at pos, by
 * the rules; *fresh set when it needs a new container. */
static uint64_t first_place(const struct dlfs_pack_opts *o, uint64_t pos,
			    uint64_t s, int *fresh)
{
	const uint64_t cs = o->chunk_size;
	uint64_t p = (pos + o->align - 1) / o->align * o->align;
	if (s > 0 && s <= cs && p / cs != (p + s - 1) / cs)
		p = (p / cs + 1) * cs;
	*fresh = pos > 0 && p + s > o->container_size;
	return *fresh ? 0 : p;
}

/* Every file in order, each at the first place the rules allow, none
 * across a chunk unless larger, none overlapping the one before. */
static int check_files(const struct pk_tree *t, const struct pk_layout *l,
		       const struct dlfs_pack_opts *o)
{
	const uint64_t cs = o->chunk_size, first = l->n_dirs + l->n_symlinks;
	uint64_t pos = 0;
	uint32_t c = 0;
	int bad = 0;
	for (uint64_t i = first; i < t->n; i++) {
		uint64_t s = t->e[i].size, loc = l->loc[i];
		uint64_t off = pk_loc_offset(loc) - DLFS_DATA_OFFSET(cs);
		int fresh;
		uint64_t want = first_place(o, pos, s, &fresh);
		bad += pk_loc_container(loc) != c + (uint32_t)fresh ||
		       off != want || off % o->align ||
		       (s && s <= cs && off / cs != (off + s - 1) / cs) ||
		       (!fresh && off < pos);
		c = pk_loc_container(loc);
		pos = off + s;
	}
	return bad;
}

/* The per-container tables: contiguous runs of files that add up, data
 * sizes that end at their last file, within container_size unless one
 * file alone is larger (empty files may come before it: a container
 * with no bytes yet takes any file), and chunks that cover them. */
static int check_containers(const struct pk_tree *t, const struct pk_layout *l,
			    const struct dlfs_pack_opts *o)
{
	const uint64_t cs = o->chunk_size;
	uint64_t next = l->n_dirs + l->n_symlinks, chunks = 0, bytes = 0;
	int bad = 0;
	for (uint64_t c = 0; c < l->n_containers; c++) {
		uint64_t n = l->n_cfiles[c], end = 0, full = 0;
		bad += l->first_file[c] != next || (c && !n);
		for (uint64_t i = next; i < next + n && i < t->n; i++) {
			bad += pk_loc_container(l->loc[i]) != c;
			end = pk_loc_offset(l->loc[i]) - DLFS_DATA_OFFSET(cs) +
			      t->e[i].size;
			bytes += t->e[i].size;
			full += t->e[i].size > 0;
		}
		bad += l->data_size[c] != end;
		bad += l->data_size[c] > o->container_size && full != 1;
		bad += l->first_chunk[c] != chunks;
		chunks += (l->data_size[c] + cs - 1) / cs;
		next += n;
	}
	bad += next != t->n || l->n_chunks != chunks || l->total_bytes != bytes;
	return bad;
}

/* Each entry once after the layout: the marks of the puts (spool_off)
 * are a permutation, and each file has the size it was put with. */
static int check_once(struct pk_tree *t, const uint64_t *size)
{
	struct pk_attr *a = calloc(t->n, sizeof(*a));
	char *seen = calloc(t->n, 1);
	int bad = pk_attr_read(t, 0, t->n, a, &err) != 0;
	for (uint64_t i = 1; !bad && i < t->n; i++) {
		uint64_t k = a[i].spool_off;
		bad += k == 0 || k >= t->n || seen[k]++ || t->e[i].ino != i + 1;
		if (k < t->n && S_ISREG(t->e[i].mode))
			bad += t->e[i].size != size[k];
	}
	free(seen);
	free(a);
	return bad;
}

/* Sizes that meet every rule: empty, small, about a chunk, more than a
 * chunk, more than a container. */
static uint64_t random_size(uint64_t cs, uint64_t container)
{
	switch (rand() % 10) {
	case 0:
		return 0;
	case 1:
		return cs - (uint64_t)(rand() % 3);
	case 2:
		return cs + (uint64_t)(rand() % (int)cs);
	case 3:
		return container + (uint64_t)(rand() % 5000);
	default:
		return (uint64_t)(rand() % (int)(cs / 2)) + 1;
	}
}

static void test_random(enum dlfs_order ord, uint64_t cs, uint64_t container,
			uint64_t align, unsigned seed)
{
	struct dlfs_pack_opts o = opts_of(cs, container, align, ord, seed);
	struct pk_tree t;
	struct pk_layout l;
	enum { N = 2000 };
	uint64_t *size = calloc(N + 20, sizeof(*size));
	srand(seed);
	tree_open(&t);
	for (int i = 0; i < 8; i++) {
		char p[16];
		snprintf(p, sizeof(p), "d%d", i);
		add(&t, p, S_IFDIR | 0755, 0, 0);
	}
	for (int i = 0; i < N; i++) {
		char p[32];
		uint64_t k = t.n;
		snprintf(p, sizeof(p), "d%d/f%05d", rand() % 8, i);
		size[k] = random_size(cs, container);
		add(&t, p, (i % 97 == 5 ? S_IFLNK : S_IFREG) | 0644,
		    (uint32_t)(rand() % 3), size[k]);
	}
	t.bucket = 300; /* the reorder in several buckets */
	lay(&t, &o, &l);
	int bad = check_once(&t, size);
	bad += check_files(&t, &l, &o) + check_containers(&t, &l, &o);
	if (bad)
		fprintf(stderr, "order %d, chunk %llu, container %llu, align "
				"%llu: %d wrong\n",
			(int)ord, (unsigned long long)cs,
			(unsigned long long)container,
			(unsigned long long)align, bad);
	CHECK_EQ(bad, 0);
	CHECK(l.n_containers > 2);
	free(size);
	pk_layout_free(&l);
	pk_tree_free(&t);
}

/* ---- errors ---- */

/* A fifo or a device has no place in a dataset: the scan never puts
 * one, and the layout refuses it rather than drop it. */
static void test_unknown_type(void)
{
	struct dlfs_pack_opts o = opts_of(4096, 8192, 1, DLFS_ORDER_SORTED, 0);
	struct pk_tree t;
	struct pk_layout l;
	tree_open(&t);
	add_file(&t, "a", 10);
	add(&t, "p", S_IFIFO | 0644, 0, 0);
	add(&t, "q", S_IFCHR | 0644, 0, 0);
	memset(&err, 0, sizeof(err));
	CHECK_EQ(pk_layout(&t, &o, &l, &err), -EINVAL);
	CHECK(strstr(err.msg, "2 entries of no known type") != NULL);
	pk_layout_free(&l);
	pk_tree_free(&t);
}

/* One file of size s at the start of a container whose data starts at
 * chunk cs: the last byte of a location is 2^48 - 1. */
static int lay_one(uint64_t cs, uint64_t s)
{
	struct dlfs_pack_opts o = opts_of(cs, UINT64_MAX, 1, DLFS_ORDER_SORTED, 0);
	struct pk_tree t;
	struct pk_layout l;
	tree_open(&t);
	add_file(&t, "huge", s);
	memset(&err, 0, sizeof(err));
	int rc = pk_layout(&t, &o, &l, &err);
	if (!rc)
		CHECK_EQ(pk_loc_offset(l.loc[1]), cs);
	pk_layout_free(&l);
	pk_tree_free(&t);
	return rc;
}

/* n one-byte files with containers of one byte: n containers. */
static int lay_containers(uint64_t n, uint64_t *got)
{
	struct dlfs_pack_opts o = opts_of(4096, 1, 1, DLFS_ORDER_SORTED, 0);
	struct pk_tree t;
	struct pk_layout l;
	tree_open(&t);
	for (uint64_t i = 0; i < n; i++) {
		char p[32];
		snprintf(p, sizeof(p), "f%06llu", (unsigned long long)i);
		add_file(&t, p, 1);
	}
	memset(&err, 0, sizeof(err));
	int rc = pk_layout(&t, &o, &l, &err);
	*got = l.n_containers;
	if (!rc)
		CHECK_EQ(pk_loc_container(l.loc[t.n - 1]), n - 1);
	pk_layout_free(&l);
	pk_tree_free(&t);
	return rc;
}

static void test_too_big(void)
{
	const uint64_t cs = 4096, last = DLFS_LOC_OFFSET_MASK - cs;
	CHECK_EQ(lay_one(cs, last), 0);
	CHECK_EQ(lay_one(cs, last + 1), -EFBIG);
	CHECK(strstr(err.msg, "too much data") != NULL);
	CHECK_EQ(lay_one(cs, UINT64_C(1) << 50), -EFBIG);

	uint64_t n;
	CHECK_EQ(lay_containers(DLFS_MAX_CONTAINERS, &n), 0);
	CHECK_EQ(n, DLFS_MAX_CONTAINERS);
	CHECK_EQ(lay_containers(DLFS_MAX_CONTAINERS + 1, &n), -EFBIG);
	CHECK(strstr(err.msg, "more than 65536 containers; raise "
			      "--container-size") != NULL);
}

int main(void)
{
	dir = t_tmpdir();
	test_by_hand();
	test_align();
	test_empty();
	test_size_order();
	test_input_order();
	test_shuffle();
	for (int ord = DLFS_ORDER_SORTED; ord <= DLFS_ORDER_SHUFFLE; ord++) {
		test_random((enum dlfs_order)ord, 4096, 65536, 1, 1 + ord);
		test_random((enum dlfs_order)ord, 8192, 40000, 512, 11 + ord);
		test_random((enum dlfs_order)ord, 65536, 65536, 4096, 21 + ord);
	}
	test_unknown_type();
	test_too_big();
	t_rmrf(dir);
	free(dir);
	return t_done("test_layout");
}
