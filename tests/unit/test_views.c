/*
 * Epoch views (views.c) over a real dataset, for the shuffle modes: the
 * planner gives each chunk of the current epoch's share exactly once per
 * epoch, in order of first use along the share, from the reader's
 * position on, with uses = the share's files in it; the reader moves by
 * note_read and marked samples, never back; a new epoch restarts the
 * plan. Also: the shares of all ranks are every file once, a share's
 * list is its files in order (also a list long enough to be rendered in
 * parts), and sample names parse back.
 *
 * What the plan should be is worked out here from the share as the views
 * show it (dlfs_views_sample, unmarked) and the chunks of each file.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "order.h"
#include "tree.h"
#include "tutil.h"
#include "views.h"

#define CS 16384u
#define N_FILES 300
#define RANKS 3
#define RANK 1

static struct dlfs_ds *ds;
static uint32_t ranks = RANKS; /* of the views test_plan makes */
static uint32_t piece;          /* paths a piece of a list: 0 default */
static struct dlfs_txn *txn;
static uint64_t n_chunks;

struct plan {
	uint64_t n;
	uint64_t g[4096];
	uint32_t uses[4096];
	uint64_t j[4096]; /* the share position that first used it */
};

static void make_tree(const char *d)
{
	static const char *ext[] = {".jpg", ".tar.gz", "", ".npy", ""};
	for (int i = 0; i < N_FILES; i++) {
		char n[64];
		/* A few hidden files: their '.' is not an extension. */
		if (i % 50 == 7)
			snprintf(n, sizeof(n), "d%d/.h%03d", i % 4, i);
		else
			snprintf(n, sizeof(n), "d%d/f%03d%s", i % 4, i,
				 ext[i % 5]);
		size_t size = i % 23 == 5	? 3 * CS /* 3 or 4 chunks */
			      : i % 41 == 9 ? 0		  /* no chunk */
					    : (size_t)(200 + (i * 977) % 6000);
		t_write(d, n, size, (uint32_t)i + 1);
	}
}

static struct dlfs_views *new_views(enum dlfs_shuffle mode, uint32_t rank)
{
	struct dlfs_views_conf conf = {
		.ds = ds, .mode = mode, .seed = 42, .rank = rank,
		.size = ranks, .window = 4, .piece = piece,
	};
	struct dlfs_views *v = NULL;
	struct dlfs_err err = {0};
	CHECK_EQ(dlfs_views_new(&conf, &v, &err), 0);
	return v;
}

static uint64_t share_len(struct dlfs_views *v, uint64_t e)
{
	uint64_t len = 0;
	struct dlfs_err err = {0};
	CHECK_EQ(dlfs_views_share_len(v, txn, e, &len, &err), 0);
	return len;
}

/* The file at share position j of epoch e, without moving the reader. */
static uint64_t sample(struct dlfs_views *v, uint64_t e, uint64_t j)
{
	uint64_t ino = 0;
	struct dlfs_err err = {0};
	CHECK_EQ(dlfs_views_sample(v, txn, e, j, 0, &ino, &err), 0);
	return ino;
}

/* Global chunks [*g0, *g1) of file ino. */
static void chunks_of(uint64_t ino, uint64_t *g0, uint64_t *g1)
{
	struct dlfs_inode in;
	uint64_t k0, k1;
	*g0 = *g1 = 0;
	if (dlfs_stat(txn, ino, &in, NULL))
		abort();
	if (!in.size)
		return;
	dlfs_file_chunks(CS, &in, 0, in.size, &k0, &k1);
	uint64_t base = dlfs_ds_container(ds, in.container)->first_chunk;
	*g0 = base + k0;
	*g1 = base + k1 + 1;
}

/* The plan of epoch e from share position from on, leaving out the
 * chunks already given (given[g] set). */
static void expected(struct dlfs_views *v, uint64_t e, uint64_t from,
		     const uint8_t *given, struct plan *p)
{
	uint32_t *uses = calloc(n_chunks, sizeof(*uses));
	uint8_t *seen = calloc(n_chunks, 1);
	uint64_t len = share_len(v, e), g0, g1;
	p->n = 0;
	for (uint64_t j = 0; j < len; j++) {
		chunks_of(sample(v, e, j), &g0, &g1);
		for (uint64_t g = g0; g < g1; g++)
			uses[g]++;
	}
	for (uint64_t j = from; j < len; j++) {
		chunks_of(sample(v, e, j), &g0, &g1);
		for (uint64_t g = g0; g < g1; g++) {
			if (seen[g] || (given && given[g]))
				continue;
			seen[g] = 1;
			p->g[p->n] = g;
			p->j[p->n] = j;
			p->uses[p->n++] = uses[g];
		}
	}
	free(uses);
	free(seen);
}

/* Take up to max chunks from the planner. */
static void take(struct dlfs_views *v, uint64_t max, struct plan *p)
{
	p->n = 0;
	while (p->n < max && p->n < 4096) {
		uint64_t g = UINT64_MAX;
		uint32_t uses = 0;
		if (!dlfs_views_plan_next(v, txn, &g, &uses))
			break;
		p->g[p->n] = g;
		p->uses[p->n++] = uses;
	}
}

/* got is want[off..], the whole of it, or (prefix set) its first
 * got->n items. */
static void same_plan(const struct plan *got, const struct plan *want,
		      uint64_t off, int prefix, int line)
{
	if (prefix ? got->n > want->n - off : got->n != want->n - off) {
		fprintf(stderr, "line %d: plan of %llu chunks, want %llu\n",
			line, (unsigned long long)got->n,
			(unsigned long long)(want->n - off));
		t_failures++;
		return;
	}
	for (uint64_t i = 0; i < got->n; i++)
		if (got->g[i] != want->g[off + i] ||
		    got->uses[i] != want->uses[off + i]) {
			fprintf(stderr,
				"line %d: plan item %llu: chunk %llu (%u uses), "
				"want %llu (%u uses)\n",
				line, (unsigned long long)i,
				(unsigned long long)got->g[i], got->uses[i],
				(unsigned long long)want->g[off + i],
				want->uses[off + i]);
			t_failures++;
			return;
		}
}

static void mark_given(uint8_t *given, const struct plan *p)
{
	for (uint64_t i = 0; i < p->n; i++)
		given[p->g[i]] = 1;
}

/* Make e current through its file list, and check the list: read whole
 * in odd-sized reads, and again from a few offsets inside it. */
/* Paths of files by inode (ref[ino - first file]), for lists too long to
 * check with dlfs_path_of (a scan of the parent a file). */
static char **ref;
static uint64_t ref_first;

struct ref_walk {
	const char *dir; /* "" for the root */
	uint64_t subdirs[512];
	char names[512][256];
	int n_sub;
};

static int ref_add(void *arg, const struct dlfs_dirent *d)
{
	struct ref_walk *w = arg;
	char path[256];
	snprintf(path, sizeof(path), "%s%s%.*s", w->dir, *w->dir ? "/" : "",
		 (int)d->name_len, d->name);
	if (d->type == S_IFDIR) {
		if (w->n_sub < 512) {
			w->subdirs[w->n_sub] = d->ino;
			snprintf(w->names[w->n_sub++], 256, "%s", path);
		}
	} else if (d->ino >= ref_first) {
		ref[d->ino - ref_first] = strdup(path);
	}
	return 0;
}

/* ref for a tree of one level of directories. */
static void ref_build(uint64_t n_files)
{
	ref_first = dlfs_ds_info(ds)->super.first_file_ino;
	ref = calloc(n_files, sizeof(*ref));
	struct ref_walk *root = calloc(1, sizeof(*root)), sub;
	root->dir = "";
	CHECK_EQ(dlfs_readdir(txn, 1, 0, ref_add, root, NULL), 0);
	for (int i = 0; i < root->n_sub; i++) {
		sub.dir = root->names[i];
		sub.n_sub = 0;
		CHECK_EQ(dlfs_readdir(txn, root->subdirs[i], 0, ref_add, &sub,
				      NULL),
			 0);
		CHECK_EQ(sub.n_sub, 0);
	}
	free(root);
}

static void ref_free(uint64_t n_files)
{
	for (uint64_t i = 0; i < n_files; i++)
		free(ref[i]);
	free(ref);
	ref = NULL;
}

static void open_list(struct dlfs_views *v, uint64_t e)
{
	struct dlfs_err err = {0};
	uint64_t size = 0;
	CHECK_EQ(dlfs_views_files_size(v, txn, e, &size, &err), 0);
	CHECK_EQ(dlfs_views_current(v), e);
	char *data = malloc(size + 1);
	size_t have = 0, got;
	do {
		int r = dlfs_views_files_read(v, txn, e, have, data + have,
					      4093, &got, &err);
		if (r)
			fprintf(stderr, "epoch %llu list at %zu: %s\n",
				(unsigned long long)e, have, err.msg);
		CHECK_EQ(r, 0);
		have += got;
	} while (got && have <= size);
	CHECK_EQ(have, size);
	uint64_t len = share_len(v, e), j = 0;
	const char *p = data, *end = data + have;
	for (; p < end && j < len; j++) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		char want[1024];
		CHECK(nl != NULL);
		if (!nl)
			break;
		uint64_t ino = sample(v, e, j);
		if (ref)
			snprintf(want, sizeof(want), "%s",
				 ino >= ref_first && ref[ino - ref_first]
					 ? ref[ino - ref_first]
					 : "?");
		else
			CHECK_EQ(dlfs_path_of(txn, ino, want, sizeof(want),
					      NULL),
				 0);
		CHECK((size_t)(nl - p) == strlen(want) &&
		      !memcmp(p, want, strlen(want)));
		p = nl + 1;
	}
	CHECK_EQ(j, len);
	CHECK(p == end);
	/* Reads from the end backwards, across pieces: the same bytes. */
	char piece[777];
	for (uint64_t at = size; at > 0;) {
		at = at > 50000 ? at - 50000 : 0;
		CHECK_EQ(dlfs_views_files_read(v, txn, e, at, piece,
					       sizeof(piece), &got, &err),
			 0);
		CHECK_EQ(got, size - at < sizeof(piece) ? size - at
							 : sizeof(piece));
		CHECK(!memcmp(piece, data + at, got));
	}
	CHECK_EQ(dlfs_views_files_read(v, txn, e, size, piece, sizeof(piece),
				       &got, &err),
		 0);
	CHECK_EQ(got, 0);
	free(data);
}

static void test_plan(enum dlfs_shuffle mode)
{
	struct dlfs_views *v = new_views(mode, ranks > RANK ? RANK : 0);
	struct plan *want = malloc(sizeof(*want)), *got = malloc(sizeof(*got));
	uint8_t *given = calloc(n_chunks, 1);
	uint64_t g;
	uint32_t uses;
	struct dlfs_err err = {0};
	uint64_t ino;

	/* Nothing read yet: nothing planned. */
	CHECK_EQ(dlfs_views_current(v), UINT64_MAX);
	CHECK_EQ(dlfs_views_plan_next(v, txn, &g, &uses), 0);

	/* An epoch's list makes it current: its share's chunks, each once,
	 * in order of first use, with their uses. */
	open_list(v, 3);
	expected(v, 3, 0, NULL, want);
	CHECK(want->n > 10);
	take(v, 4096, got);
	same_plan(got, want, 0, 0, __LINE__);
	CHECK_EQ(dlfs_views_plan_next(v, txn, &g, &uses), 0);
	CHECK_EQ(dlfs_views_plan_next(v, txn, &g, NULL), 0);
	/* The same epoch again: nothing new. */
	open_list(v, 3);
	CHECK_EQ(dlfs_views_plan_next(v, txn, &g, &uses), 0);

	/* Another epoch restarts the plan; the reader moves it on. */
	open_list(v, 4);
	expected(v, 4, 0, NULL, want);
	/* Stop inside a file that brings three new chunks. */
	uint64_t len = share_len(v, 4), stop = 0;
	while (stop + 2 < want->n && want->j[stop] != want->j[stop + 2])
		stop++;
	CHECK(stop + 2 < want->n);
	/* The reader goes half way from there to the end. */
	uint64_t half = (want->j[stop] + len) / 2;
	CHECK(half > want->j[stop] && half < len);
	stop++;
	take(v, stop, got);
	CHECK_EQ(got->n, stop);
	same_plan(got, want, 0, 1, __LINE__);
	memset(given, 0, n_chunks);
	mark_given(given, got);
	/* A file not in the share: nothing moves. */
	uint64_t outside = 0;
	const struct dlfs_info *info = dlfs_ds_info(ds);
	for (ino = info->super.first_file_ino; !outside; ino++) {
		int in_share = 0;
		for (uint64_t j = 0; j < len && !in_share; j++)
			in_share = sample(v, 4, j) == ino;
		if (!in_share)
			outside = ino;
	}
	dlfs_views_note_read(v, txn, outside);
	dlfs_views_note_read(v, txn, 1); /* the root: not a file */
	take(v, 1, got);
	CHECK_EQ(got->n, 1);
	CHECK(got->n && got->g[0] == want->g[stop]);
	given[got->g[0]] = 1;
	/* The reader is further on: the plan skips what is behind
	 * it (the big file's third chunk too, unless a file ahead needs
	 * it), and gives nothing twice. */
	dlfs_views_note_read(v, txn, sample(v, 4, half));
	dlfs_views_note_read(v, txn, sample(v, 4, 2)); /* never back */
	expected(v, 4, half, given, want);
	take(v, 4096, got);
	same_plan(got, want, 0, 0, __LINE__);
	CHECK_EQ(dlfs_views_plan_next(v, txn, &g, &uses), 0);

	/* A marked sample of another epoch: current, the plan from there. */
	uint64_t third = share_len(v, 5) / 3;
	CHECK_EQ(dlfs_views_sample(v, txn, 5, third, 1, &ino, &err), 0);
	CHECK_EQ(ino, sample(v, 5, third));
	CHECK_EQ(dlfs_views_current(v), 5);
	expected(v, 5, third, NULL, want);
	take(v, 4096, got);
	same_plan(got, want, 0, 0, __LINE__);

	/* A marked sample in the current epoch moves the reader. */
	open_list(v, 6);
	expected(v, 6, 0, NULL, want);
	take(v, 3, got);
	CHECK_EQ(got->n, 3);
	same_plan(got, want, 0, 1, __LINE__);
	memset(given, 0, n_chunks);
	mark_given(given, got);
	uint64_t q = 2 * share_len(v, 6) / 3;
	CHECK_EQ(dlfs_views_sample(v, txn, 6, q, 1, &ino, &err), 0);
	expected(v, 6, q, given, want);
	take(v, 4096, got);
	same_plan(got, want, 0, 0, __LINE__);

	/* Back to an old epoch: a new pass, all of it. */
	open_list(v, 3);
	expected(v, 3, 0, NULL, want);
	take(v, 4096, got);
	same_plan(got, want, 0, 0, __LINE__);

	free(want);
	free(got);
	free(given);
	dlfs_views_free(v);
}

/* The shares of all ranks are every file once; GLOBAL follows the
 * epoch's order. */
static void test_shares(enum dlfs_shuffle mode)
{
	const struct dlfs_info *info = dlfs_ds_info(ds);
	uint8_t *seen = calloc(N_FILES, 1);
	int dup = 0;
	for (uint32_t r = 0; r < RANKS; r++) {
		struct dlfs_views *v = new_views(mode, r);
		uint64_t len = share_len(v, 7);
		for (uint64_t j = 0; j < len; j++) {
			uint64_t f = sample(v, 7, j) - info->super.first_file_ino;
			if (f >= N_FILES || seen[f]++)
				dup++;
		}
		CHECK_EQ(dlfs_views_current(v), UINT64_MAX); /* unmarked */
		dlfs_views_free(v);
	}
	CHECK_EQ(dup, 0);
	for (int f = 0; f < N_FILES; f++)
		CHECK_EQ(seen[f], 1);
	free(seen);
	if (mode != DLFS_SHUFFLE_GLOBAL)
		return;
	struct dlfs_epoch_conf oc = {
		.n_files = N_FILES, .mode = mode, .seed = 42, .rank = RANK,
		.size = RANKS, .window = 4,
	};
	struct dlfs_epoch *o;
	CHECK_EQ(dlfs_epoch_new(&oc, 7, &o), 0);
	struct dlfs_views *v = new_views(mode, RANK);
	CHECK_EQ(share_len(v, 7), dlfs_epoch_share_len(o));
	for (uint64_t j = 0; j < dlfs_epoch_share_len(o); j++)
		CHECK_EQ(sample(v, 7, j),
			 info->super.first_file_ino +
				 dlfs_epoch_at(o, dlfs_epoch_share_start(o) + j));
	dlfs_epoch_free(o);
	dlfs_views_free(v);
}

static unsigned digits(uint64_t n)
{
	unsigned d = 1;
	while (n >= 10) {
		n /= 10;
		d++;
	}
	return d;
}

static void test_names(void)
{
	struct dlfs_views *v = new_views(DLFS_SHUFFLE_GLOBAL, RANK);
	struct dlfs_err err = {0};
	char name[256], path[1024];
	uint64_t len = share_len(v, 2), j2;
	int with_ext = 0, without = 0;
	for (uint64_t j = 0; j < len; j++) {
		int n = dlfs_views_sample_name(v, txn, 2, j, name, sizeof(name),
					       &err);
		CHECK(n > 0 && (size_t)n == strlen(name));
		/* The position, zero-padded to the last one's width... */
		char want[64];
		snprintf(want, sizeof(want), "%0*llu", (int)digits(len - 1),
			 (unsigned long long)j);
		CHECK(!strncmp(name, want, strlen(want)));
		/* ... then the file's extension, from its last '.'. */
		CHECK_EQ(dlfs_path_of(txn, sample(v, 2, j), path, sizeof(path),
				      NULL),
			 0);
		const char *base = strrchr(path, '/') + 1;
		const char *dot = strrchr(base, '.');
		const char *ext = dot && dot != base ? dot : "";
		CHECK(!strcmp(name + strlen(want), ext));
		if (*ext)
			with_ext++;
		else
			without++;
		j2 = UINT64_MAX;
		CHECK_EQ(dlfs_views_parse_name(v, txn, 2, name, &j2, &err), 0);
		CHECK_EQ(j2, j);
		/* Other spellings of it are not names. */
		if (*ext) {
			name[strlen(want)] = '\0';
			CHECK_EQ(dlfs_views_parse_name(v, txn, 2, name, &j2,
						       &err),
				 -ENOENT);
		}
		snprintf(name, sizeof(name), "0%s%s", want, ext);
		CHECK_EQ(dlfs_views_parse_name(v, txn, 2, name, &j2, &err),
			 -ENOENT);
	}
	CHECK(with_ext > 0 && without > 0);
	CHECK_EQ(dlfs_views_sample_name(v, txn, 2, len, name, sizeof(name),
					&err),
		 -ENOENT);
	snprintf(name, sizeof(name), "%llu", (unsigned long long)len);
	CHECK_EQ(dlfs_views_parse_name(v, txn, 2, name, &j2, &err), -ENOENT);
	CHECK_EQ(dlfs_views_parse_name(v, txn, 2, "x01", &j2, &err), -ENOENT);
	CHECK_EQ(dlfs_views_parse_name(v, txn, 2, "", &j2, &err), -ENOENT);
	CHECK_EQ(dlfs_views_parse_name(v, txn, 2, "99999999999999999999999",
				       &j2, &err),
		 -ENOENT);
	uint64_t ino;
	CHECK_EQ(dlfs_views_sample(v, txn, 2, len, 1, &ino, &err), -ENOENT);
	CHECK_EQ(dlfs_views_current(v), UINT64_MAX); /* no such sample */
	/* Too small a buffer. */
	CHECK_EQ(dlfs_views_sample_name(v, txn, 2, 0, name, 2, &err),
		 -ENAMETOOLONG);
	dlfs_views_free(v);
}

/*
 * A list of several pieces, each rendered in parts by the views' helper
 * threads (on a machine with more than one CPU), and of one: the same
 * bytes as the paths one by one, in every mode, for one rank and for a
 * share.
 */
#define LONG_FILES 20000
static void test_long_list(void)
{
	struct dlfs_err err = {0};
	char *src = t_tmpdir(), *dir = t_tmpdir();
	char *out = t_path(dir, "long.dlfs");
	for (int i = 0; i < LONG_FILES; i++) {
		char n[64];
		/* The first file is empty: chunk 0's run must hold it too
		 * (order.h). */
		snprintf(n, sizeof(n), "c%02d/s%05d%s", i % 37, i,
			 i % 3 ? ".bin" : "");
		t_write(src, n, (size_t)(i % 5), (uint32_t)i + 1);
	}
	struct dlfs_ds *keep_ds = ds;
	struct dlfs_txn *keep_txn = txn;
	uint32_t keep_ranks = ranks;
	if (t_pack(src, out, CS, 16 * CS, 0) || dlfs_ds_open(out, &ds, &err) ||
	    dlfs_txn_begin(ds, &txn, &err)) {
		fprintf(stderr, "long list: %s\n", err.msg);
		t_failures++;
	} else {
		ref_build(LONG_FILES);
		enum dlfs_shuffle modes[] = {DLFS_SHUFFLE_GLOBAL,
					     DLFS_SHUFFLE_CHUNKED,
					     DLFS_SHUFFLE_LOCAL};
		/* Pieces of 4,096 paths (five, the last short), and of the
		 * default size (one). */
		for (int m = 0; m < 3; m++)
			for (ranks = 1; ranks <= 2; ranks++)
				for (int k = 0; k < 2; k++) {
					piece = k ? 0 : 4096;
					struct dlfs_views *v =
						new_views(modes[m], ranks - 1);
					open_list(v, 3);
					dlfs_views_free(v);
				}
		piece = 0;
		ref_free(LONG_FILES);
		dlfs_txn_end(txn);
		dlfs_ds_close(ds);
	}
	ds = keep_ds;
	txn = keep_txn;
	ranks = keep_ranks;
	t_rmrf(src);
	t_rmrf(dir);
	free(src);
	free(dir);
	free(out);
}

/* Every rank's tree of epochs 0 and 1, read a piece of each directory at
 * a time across both epochs (10 listings: more than the tree keeps). */
static void test_tree(enum dlfs_shuffle mode)
{
	struct dlfs_err err = {0};
	uint64_t n_dirs = dlfs_ds_info(ds)->super.n_dirs;
	CHECK_EQ(n_dirs, 5); /* the root and d0 .. d3 */
	char *all = calloc(N_FILES, 1);
	for (uint32_t r = 0; r < RANKS; r++) {
		struct dlfs_views *v = new_views(mode, r);
		struct dlfs_tree *t = NULL;
		CHECK_EQ(dlfs_tree_new(v, &t), 0);
		for (uint64_t e = 0; e < 2; e++) {
			uint64_t len = share_len(v, e), got = 0;
			char *seen = calloc(len ? len : 1, 1);
			uint64_t last[5];
			int done[5] = {0};
			for (uint64_t d = 0; d < n_dirs; d++)
				last[d] = UINT64_MAX;
			for (uint64_t i = 0; i < 200; i++) {
				for (uint64_t d = 1; d <= n_dirs; d++) {
					struct dlfs_tree_ent ent;
					if (done[d - 1])
						continue;
					int ret = dlfs_tree_entry(t, txn, e, d, i,
								  &ent, &err);
					CHECK(ret == 0 || ret == 1);
					if (ret) {
						done[d - 1] = 1;
						continue;
					}
					if (ent.dir) {
						/* Only the root has them. */
						CHECK_EQ(d, 1);
						CHECK(ent.name[0] == 'd' &&
						      ent.name[2] == '\0');
						continue;
					}
					uint64_t ino = sample(v, e, ent.j);
					char path[64];
					const struct dlfs_paths *p;
					CHECK_EQ(dlfs_views_paths(v, txn, &p,
								  &err), 0);
					CHECK(dlfs_paths_get(p, ino, path,
							     sizeof(path)) > 0);
					/* d - 2 is "dK": directories in order. */
					CHECK(d >= 2 && path[1] == (char)('0' + d - 2));
					CHECK(ent.j < len && !seen[ent.j]++);
					CHECK(last[d - 1] == UINT64_MAX ||
					      ent.j > last[d - 1]);
					last[d - 1] = ent.j;
					CHECK_EQ(dlfs_tree_holds(t, txn, e, d,
								 ent.j, &err), 0);
					CHECK_EQ(dlfs_tree_holds(t, txn, e,
								 d == 2 ? 3 : 2,
								 ent.j, &err),
						 -ENOENT);
					uint64_t up = 0;
					CHECK_EQ(dlfs_tree_parent(t, txn, d, &up,
								  &err), 0);
					CHECK_EQ(up, 1);
					if (e == 0)
						all[ino - dlfs_ds_info(ds)
								  ->super.first_file_ino]++;
					got++;
				}
			}
			CHECK_EQ(got, len);
			free(seen);
		}
		struct dlfs_tree_ent ent;
		CHECK_EQ(dlfs_tree_entry(t, txn, 0,
					 dlfs_ds_info(ds)->super.first_file_ino, 0,
					 &ent, &err),
			 -ENOTDIR);
		dlfs_tree_free(t);
		dlfs_views_free(v);
	}
	for (int f = 0; f < N_FILES; f++)
		CHECK_EQ(all[f], 1);
	free(all);
}

int main(void)
{
	struct dlfs_err err = {0};
	char *src = t_tmpdir(), *dir = t_tmpdir();
	char *out = t_path(dir, "ds.dlfs");
	make_tree(src);
	if (t_pack(src, out, CS, 16 * CS, 0))
		return 1;
	if (dlfs_ds_open(out, &ds, &err) || dlfs_txn_begin(ds, &txn, &err)) {
		fprintf(stderr, "open: %s\n", err.msg);
		return 1;
	}
	n_chunks = dlfs_ds_n_chunks(ds);
	CHECK_EQ(dlfs_ds_info(ds)->super.n_files, N_FILES);
	CHECK(dlfs_ds_info(ds)->super.n_containers > 2);

	enum dlfs_shuffle modes[] = {DLFS_SHUFFLE_GLOBAL, DLFS_SHUFFLE_CHUNKED,
				     DLFS_SHUFFLE_LOCAL};
	for (int m = 0; m < 3; m++) {
		test_shares(modes[m]);
		test_tree(modes[m]);
		test_plan(modes[m]);
		/* One rank: its uses come from the chunk map alone. */
		ranks = 1;
		test_plan(modes[m]);
		ranks = RANKS;
	}
	test_names();
	test_long_list();

	dlfs_txn_end(txn);
	dlfs_ds_close(ds);
	t_rmrf(src);
	t_rmrf(dir);
	free(src);
	free(dir);
	free(out);
	return t_done("test_views");
}
