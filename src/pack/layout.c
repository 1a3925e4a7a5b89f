/*
 * Layout: the order of files in the containers, inode numbers, and the
 * placement rule. Inodes are numbered root, directories, symlinks, then
 * files in data order, so inode order is container order: readers walk
 * containers front to back by walking inodes.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "inplace.h"
#include "layout.h"
#include "util.h"

struct sort_item {
	struct pk_entry *e;
	uint64_t key;
};

static int by_path(const void *a, const void *b, void *t)
{
	return pk_entry_cmp(t, ((const struct sort_item *)a)->e,
			    ((const struct sort_item *)b)->e);
}

/* key first, path to break ties: used by input, size and shuffle. */
static int by_key(const void *a, const void *b, void *t)
{
	const struct sort_item *x = a, *y = b;
	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return by_path(a, b, t);
}

/*
 * it[0..n) sorted by cmp. Entries often come nearly in order (in-place
 * files in archive order but for hard links and empty files;
 * directories as archives list them), and those are sorted in place by
 * insertion; past n moves, qsort_r sorts the rest, whose merge sort
 * takes a copy of the array (16 bytes an entry, at the layout's peak of
 * memory). Paths differ, so the order is total and both give the same.
 */
static void sort_items(struct sort_item *it, uint64_t n,
		       int (*cmp)(const void *, const void *, void *),
		       struct pk_tree *t)
{
	uint64_t moves = 0;
	for (uint64_t i = 1; i < n; i++) {
		struct sort_item x = it[i];
		uint64_t j = i;
		for (; j > 0 && cmp(&it[j - 1], &x, t) > 0; j--) {
			if (++moves > n) {
				it[j] = x; /* it stays a permutation */
				qsort_r(it, n, sizeof(*it), cmp, t);
				return;
			}
			it[j] = it[j - 1];
		}
		it[j] = x;
	}
}

/* Sort the n entries of it in order ord; with keys (in-place files),
 * by keys[entry index] instead. */
static int sort_group(struct pk_tree *t, struct sort_item *it, uint64_t n,
		      enum dlfs_order ord, uint64_t seed, const uint64_t *keys)
{
	char *pb = NULL;
	size_t pcap = 0, plen;
	if (keys) {
		for (uint64_t i = 0; i < n; i++)
			it[i].key = keys[it[i].e - t->e];
		sort_items(it, n, by_key, t);
		return 0;
	}
	for (uint64_t i = 0; i < n; i++) {
		struct pk_entry *e = it[i].e;
		switch (ord) {
		case DLFS_ORDER_SORTED:
			it[i].key = 0;
			break;
		case DLFS_ORDER_INPUT: /* an entry's index is its discovery */
			it[i].key = ((uint64_t)e->src << 40) |
				    (uint64_t)(e - t->e);
			break;
		case DLFS_ORDER_SIZE:
			it[i].key = e->size;
			break;
		case DLFS_ORDER_SHUFFLE:
			if (pk_entry_path(t, e, &pb, &pcap, &plen)) {
				free(pb);
				return -ENOMEM;
			}
			it[i].key = XXH3_64bits_withSeed(pb, plen, seed);
			break;
		}
	}
	free(pb);
	sort_items(it, n, ord == DLFS_ORDER_SORTED ? by_path : by_key, t);
	return 0;
}

/*
 * The attribute file in ino order, in two passes that read and write
 * front to back: records go to buckets of t->bucket inos in a scratch
 * file, then each bucket is put in order in memory and written. data_from
 * becomes the new index; max_mtime is found on the way.
 */
#define BLOCK 4096

struct brec {
	uint64_t to;
	struct pk_attr a;
};

/* The two passes' state. Bucket k's records start at record k * bucket
 * of the scratch file. */
struct reorder {
	struct pk_tree *t;
	uint64_t n, bucket, nb; /* records, inos a bucket, buckets */
	char *spath, *opath;    /* the scratch file, the file in ino order */
	int sfd, ofd;
	struct brec *bb; /* pass 1: BLOCK records a bucket; pass 2: BLOCK */
	uint64_t *fill;  /* per bucket: buffered */
	uint64_t *done;  /* per bucket: written to the scratch file */
};

/* A scratch file named attr_path + suffix, unlinked at once so that
 * nothing is left behind whatever happens. */
static int open_scratch(const char *attr_path, const char *suffix,
			char **path, int *fd, struct dlfs_err *err)
{
	if (asprintf(path, "%s%s", attr_path, suffix) < 0) {
		*path = NULL;
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	}
	*fd = open(*path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (*fd < 0 || unlink(*path) < 0)
		return dlfs_err_sys(err, -errno, "%s", *path);
	return 0;
}

/* Bucket k's buffered records to the end of its part of the scratch
 * file. */
static int flush_bucket(struct reorder *r, uint64_t k, struct dlfs_err *err)
{
	off_t at = (off_t)((k * r->bucket + r->done[k]) * sizeof(*r->bb));
	int ret = dlfs_pwrite_full(r->sfd, r->bb + k * BLOCK,
				   r->fill[k] * sizeof(*r->bb), at);
	if (ret)
		return dlfs_err_sys(err, ret, "%s: write", r->spath);
	r->done[k] += r->fill[k];
	r->fill[k] = 0;
	return 0;
}

/* What pass 1 does to every record k: data_from made an ino, and the
 * newest mtime to *max. The root counts only if a source described it,
 * and implied directories never do. */
static void prepare_rec(const struct pk_tree *t, uint64_t k, struct pk_attr *a,
			int64_t *max)
{
	if (k == 0) {
		if (t->root_set)
			*max = a->mtime_sec;
	} else if (!a->implicit && a->mtime_sec > *max) {
		*max = a->mtime_sec;
	}
	if (a->data_from)
		a->data_from = t->e[a->data_from - 1].ino;
}

/* Pass 1: each record, prepared, to its bucket, read BLOCK at a time
 * into in. */
static int bucket_attrs(struct reorder *r, struct pk_attr *in, int64_t *max,
			struct dlfs_err *err)
{
	struct pk_tree *t = r->t;
	int ret = 0;
	for (uint64_t j = 0; j < r->n && !ret; j += BLOCK) {
		uint64_t m = r->n - j < BLOCK ? r->n - j : BLOCK;
		if ((ret = pk_attr_read(t, j, m, in, err)))
			break;
		for (uint64_t i = 0; i < m && !ret; i++) {
			struct pk_attr *a = &in[i];
			prepare_rec(t, j + i, a, max);
			uint64_t to = t->e[j + i].ino - 1, k = to / r->bucket;
			r->bb[k * BLOCK + r->fill[k]++] = (struct brec){to, *a};
			if (r->fill[k] == BLOCK)
				ret = flush_bucket(r, k, err);
		}
	}
	for (uint64_t k = 0; k < r->nb && !ret; k++)
		if (r->fill[k])
			ret = flush_bucket(r, k, err);
	return ret;
}

/* Pass 2, bucket k: its records read back BLOCK at a time into r->bb,
 * put in ino order in out, and written at their place in the output. */
static int order_bucket(struct reorder *r, uint64_t k, struct pk_attr *out,
			struct dlfs_err *err)
{
	uint64_t first = k * r->bucket;
	uint64_t m = r->n - first < r->bucket ? r->n - first : r->bucket;
	for (uint64_t j = 0; j < r->done[k]; j += BLOCK) {
		uint64_t c = r->done[k] - j < BLOCK ? r->done[k] - j : BLOCK;
		off_t at = (off_t)((first + j) * sizeof(*r->bb));
		ssize_t got = dlfs_pread_full(r->sfd, r->bb,
					      c * sizeof(*r->bb), at);
		if (got != (ssize_t)(c * sizeof(*r->bb)))
			return dlfs_err_sys(err, got < 0 ? (int)got : -EIO,
					    "%s: read", r->spath);
		for (uint64_t i = 0; i < c; i++)
			out[r->bb[i].to - first] = r->bb[i].a;
	}
	if (r->done[k] != m)
		return dlfs_err_set(err, -EIO, "%s: bucket %llu holds "
				    "%llu records, not %llu", r->spath,
				    (unsigned long long)k,
				    (unsigned long long)r->done[k],
				    (unsigned long long)m);
	int ret = dlfs_pwrite_full(r->ofd, out, m * sizeof(*out),
				   (off_t)(first * sizeof(*out)));
	return ret ? dlfs_err_sys(err, ret, "%s: write", r->opath) : 0;
}

/* Pass 2: every bucket in turn. The bucket buffers of pass 1 give way to
 * one block and one bucket's records. */
static int order_buckets(struct reorder *r, struct dlfs_err *err)
{
	struct pk_attr *out = NULL;
	int ret = 0;
	free(r->bb);
	r->bb = malloc(BLOCK * sizeof(*r->bb));
	if (r->bb)
		out = malloc((r->n < r->bucket ? r->n : r->bucket) *
			     sizeof(*out));
	if (!r->bb || !out)
		ret = dlfs_err_set(err, -ENOMEM, "out of memory");
	for (uint64_t k = 0; k < r->nb && !ret; k++)
		ret = order_bucket(r, k, out, err);
	free(out);
	return ret;
}

/* Inos a bucket for n records: pass 1 holds BLOCK records a bucket
 * (n / bucket buckets), pass 2 one bucket's records, so memory is least
 * near sqrt(n * BLOCK): a power of two, 64K for 1M records (3.5 MiB
 * each pass, where one bucket of 1M took 48 MiB at the layout's peak). */
static uint64_t reorder_bucket(uint64_t n)
{
	uint64_t b = BLOCK;
	while (b * b < n * BLOCK)
		b *= 2;
	return b;
}

/* The two passes, their buffers and scratch file made here. */
static int reorder_by_buckets(struct reorder *r, struct pk_attr *in,
			      int64_t *max, struct dlfs_err *err)
{
	r->bucket = r->t->bucket ? r->t->bucket : reorder_bucket(r->n);
	r->nb = (r->n + r->bucket - 1) / r->bucket;
	r->bb = calloc(r->nb * BLOCK, sizeof(*r->bb));
	r->fill = calloc(r->nb, sizeof(*r->fill));
	r->done = calloc(r->nb, sizeof(*r->done));
	if (!r->bb || !r->fill || !r->done)
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	int ret = open_scratch(r->t->attr_path, ".sort", &r->spath, &r->sfd,
			       err);
	if (!ret)
		ret = bucket_attrs(r, in, max, err);
	return ret ? ret : order_buckets(r, err);
}

/* Runs of consecutive inos among the entries, in entry order. */
static uint64_t count_runs(const struct pk_tree *t)
{
	uint64_t runs = t->n ? 1 : 0;
	for (uint64_t i = 1; i < t->n; i++)
		runs += t->e[i].ino != t->e[i - 1].ino + 1;
	return runs;
}

/* out's m records, inos first + 1 on, where they go. */
static int write_run(struct reorder *r, const struct pk_attr *out,
		     uint64_t first, uint64_t m, struct dlfs_err *err)
{
	int ret = dlfs_pwrite_full(r->ofd, out, m * sizeof(*out),
				   (off_t)(first * sizeof(*out)));
	return ret ? dlfs_err_sys(err, ret, "%s: write", r->opath) : 0;
}

/*
 * One pass, for entries that come in long runs of consecutive inos
 * (in-place files in archive order, between their directories): each
 * record, prepared, joins its run in out (BLOCK records), and a run is
 * written where it goes. The file is read and written once, where the
 * buckets read and write it twice.
 */
static int reorder_by_runs(struct reorder *r, struct pk_attr *in, int64_t *max,
			   struct dlfs_err *err)
{
	struct pk_tree *t = r->t;
	struct pk_attr *out = malloc(BLOCK * sizeof(*out));
	uint64_t first = 0, m = 0; /* out holds inos first + 1 .. + m */
	int ret = out ? 0 : dlfs_err_set(err, -ENOMEM, "out of memory");
	for (uint64_t j = 0; j < r->n && !ret; j += BLOCK) {
		uint64_t c = r->n - j < BLOCK ? r->n - j : BLOCK;
		if ((ret = pk_attr_read(t, j, c, in, err)))
			break;
		for (uint64_t i = 0; i < c && !ret; i++) {
			uint64_t to = t->e[j + i].ino - 1;
			prepare_rec(t, j + i, &in[i], max);
			if (m && (to != first + m || m == BLOCK)) {
				ret = write_run(r, out, first, m, err);
				m = 0;
			}
			if (!m)
				first = to;
			out[m++] = in[i];
		}
	}
	if (!ret && m)
		ret = write_run(r, out, first, m, err);
	free(out);
	return ret;
}

/* t's attribute file replaced by one in ino order, in runs when the
 * entries come in runs of 64 records or more on average, else through
 * the two passes above; l->max_mtime set. */
static int reorder_attrs(struct pk_tree *t, struct pk_layout *l,
			 struct dlfs_err *err)
{
	struct reorder r = {.t = t, .n = t->n, .sfd = -1, .ofd = -1};
	struct pk_attr *in = malloc(BLOCK * sizeof(*in));
	int64_t max = INT64_MIN;
	int ret = in ? 0 : dlfs_err_set(err, -ENOMEM, "out of memory");
	if (!ret)
		ret = open_scratch(t->attr_path, ".ino", &r.opath, &r.ofd, err);
	if (!ret)
		ret = !t->bucket && count_runs(t) * 64 <= r.n
			      ? reorder_by_runs(&r, in, &max, err)
			      : reorder_by_buckets(&r, in, &max, err);
	if (!ret) {
		close(t->attr_fd);
		t->attr_fd = r.ofd;
		r.ofd = -1;
		l->max_mtime = max == INT64_MIN ? 0 : max;
	}
	if (r.sfd >= 0)
		close(r.sfd);
	if (r.ofd >= 0)
		close(r.ofd);
	free(r.spath);
	free(r.opath);
	free(in);
	free(r.bb);
	free(r.fill);
	free(r.done);
	return ret;
}

/* Entries in ino order, in place: e[i] goes to e[e[i].ino - 1]. */
static void reorder_entries(struct pk_tree *t)
{
	for (uint64_t i = 0; i < t->n; i++)
		t->e[i].parent = t->e[t->e[i].parent].ino - 1;
	for (uint64_t i = 0; i < t->n; i++) {
		while (t->e[i].ino - 1 != i) {
			uint64_t j = t->e[i].ino - 1;
			struct pk_entry x = t->e[j];
			t->e[j] = t->e[i];
			t->e[i] = x;
		}
	}
}

/* Directories that no source described (implied by archive members, or
 * a root only archives gave) take the newest mtime of the tree. */
static int date_dirs(struct pk_tree *t, const struct pk_layout *l,
		     struct dlfs_err *err)
{
	struct pk_attr a[256];
	for (uint64_t j = 0; j < l->n_dirs; j += 256) {
		uint64_t m = l->n_dirs - j < 256 ? l->n_dirs - j : 256;
		int ret = pk_attr_read(t, j, m, a, err);
		if (ret)
			return ret;
		for (uint64_t i = 0; i < m; i++) {
			if (j + i == 0 && !t->root_set)
				a[i].mtime_sec = l->max_mtime;
			if (a[i].implicit) {
				a[i].mtime_sec = l->max_mtime;
				a[i].mtime_nsec = 0;
			}
		}
		ret = dlfs_pwrite_full(t->attr_fd, a, m * sizeof(*a),
				       (off_t)(j * sizeof(*a)));
		if (ret)
			return dlfs_err_sys(err, ret, "%s: write",
					    t->attr_path);
	}
	return 0;
}

/* The entries of group g (0 directories, 1 symlinks, 2 regular files)
 * into it. @return how many. */
static uint64_t collect_group(struct pk_tree *t, int g, struct sort_item *it)
{
	uint64_t m = 0;
	for (uint64_t i = 0; i < t->n; i++) {
		mode_t md = t->e[i].mode;
		if ((g == 0 && S_ISDIR(md)) || (g == 1 && S_ISLNK(md)) ||
		    (g == 2 && S_ISREG(md)))
			it[m++].e = &t->e[i];
	}
	return m;
}

/* Inode numbers, in three groups, each sorted: directories (by path),
 * symlinks (by path), then files (in o's order). */
static int number_entries(struct pk_tree *t, const struct dlfs_pack_opts *o,
			  const uint64_t *keys, struct pk_layout *l,
			  struct dlfs_err *err)
{
	uint64_t *count[] = {&l->n_dirs, &l->n_symlinks, &l->n_files};
	struct sort_item *it = malloc((t->n ? t->n : 1) * sizeof(*it));
	if (!it)
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	uint64_t n = 0;
	for (int g = 0; g < 3; g++) {
		uint64_t m = collect_group(t, g, it);
		if (sort_group(t, it, m, g == 2 ? o->order : DLFS_ORDER_SORTED,
			       o->seed, g == 2 ? keys : NULL)) {
			free(it);
			return dlfs_err_set(err, -ENOMEM, "out of memory");
		}
		for (uint64_t i = 0; i < m; i++)
			it[i].e->ino = (uint32_t)(n + i + 1);
		n += m;
		*count[g] = m;
	}
	free(it);
	if (n != t->n)
		return dlfs_err_set(err, -EINVAL, "%llu entries of no known "
				    "type", (unsigned long long)(t->n - n));
	return 0;
}

/* A directory's size is its number of entries. */
static void size_dirs(struct pk_tree *t)
{
	for (uint64_t i = 0; i < t->n; i++)
		if (S_ISDIR(t->e[i].mode))
			t->e[i].size = 0;
	for (uint64_t i = 1; i < t->n; i++)
		t->e[t->e[i].parent].size++;
}

/* The placement arrays: per container for the worst case of one file
 * each, and, unless in place, per entry. */
static int alloc_placement(struct pk_layout *l, uint64_t n, uint64_t cap,
			   int in_place, struct dlfs_err *err)
{
	if (!in_place) {
		l->loc = calloc(n + 1, sizeof(uint64_t));
		l->xxh3 = calloc(n + 1, sizeof(uint64_t));
	}
	l->data_size = calloc(cap, sizeof(uint64_t));
	l->first_chunk = calloc(cap, sizeof(uint64_t));
	l->first_file = calloc(cap, sizeof(uint64_t));
	l->n_cfiles = calloc(cap, sizeof(uint64_t));
	if ((!in_place && (!l->loc || !l->xxh3)) || !l->data_size ||
	    !l->first_chunk || !l->first_file || !l->n_cfiles)
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	return 0;
}

/* Where a file of s bytes goes in a container filled up to pos: aligned,
 * and, if it fits in a chunk, not straddling a chunk boundary (a larger
 * one starts where it is). */
static uint64_t file_offset(uint64_t pos, uint64_t s,
			    const struct dlfs_pack_opts *o)
{
	const uint64_t cs = o->chunk_size;
	uint64_t p = dlfs_roundup(pos, o->align);
	if (s > 0 && s <= cs && p / cs != (p + s - 1) / cs)
		p = dlfs_roundup(p, cs);
	return p;
}

/* Each container's first chunk, and the chunks in all. */
static void number_chunks(struct pk_layout *l, uint64_t cs)
{
	for (uint64_t k = 0; k < l->n_containers; k++) {
		l->first_chunk[k] = l->n_chunks;
		l->n_chunks += (l->data_size[k] + cs - 1) / cs;
	}
}

/* Placement: each file in data order at file_offset in the current
 * container, which is closed when the next file would take it past
 * container_size. */
static int place_files(const struct pk_tree *t,
		       const struct dlfs_pack_opts *o, struct pk_layout *l,
		       struct dlfs_err *err)
{
	int ret = alloc_placement(l, t->n, 1 + l->n_files, 0, err);
	if (ret)
		return ret;
	const uint64_t cs = o->chunk_size;
	uint64_t c = 0, pos = 0;
	uint64_t first = l->n_dirs + l->n_symlinks;
	l->first_file[0] = first;
	for (uint64_t i = first; i < t->n; i++) {
		uint64_t s = t->e[i].size;
		uint64_t p = file_offset(pos, s, o);
		if (pos > 0 && p + s > o->container_size) {
			l->data_size[c] = pos;
			c++;
			l->first_file[c] = i;
			p = 0;
		}
		if (c >= DLFS_MAX_CONTAINERS ||
		    DLFS_DATA_OFFSET(cs) + p + s > DLFS_LOC_OFFSET_MASK)
			return dlfs_err_set(err, -EFBIG,
					    "too much data: more than %d "
					    "containers; raise "
					    "--container-size",
					    DLFS_MAX_CONTAINERS);
		l->loc[i] = ((uint64_t)c << DLFS_LOC_CONTAINER_SHIFT) |
			    (DLFS_DATA_OFFSET(cs) + p);
		l->n_cfiles[c]++;
		pos = p + s;
		l->total_bytes += s;
	}
	l->data_size[c] = pos;
	l->n_containers = c + 1;
	number_chunks(l, cs);
	return 0;
}

/* After numbering: directory sizes, the attributes and entries in ino
 * order, directory dates. */
static int finish_order(struct pk_tree *t, struct pk_layout *l,
			struct dlfs_err *err)
{
	size_dirs(t);
	int ret = reorder_attrs(t, l, err);
	if (ret)
		return ret;
	reorder_entries(t);
	return date_dirs(t, l, err);
}

/* Before numbering: the last attributes written, and the path map gone
 * (4 bytes a slot, two slots an entry) before the sort takes its room:
 * parents are entry indices already. */
static int begin_layout(struct pk_tree *t, struct pk_layout *l,
			struct dlfs_err *err)
{
	memset(l, 0, sizeof(*l));
	int ret = pk_attr_flush(t, err);
	if (ret)
		return ret;
	free(t->map);
	t->map = NULL;
	t->map_cap = 0;
	return 0;
}

int pk_layout(struct pk_tree *t, const struct dlfs_pack_opts *o,
	      struct pk_layout *l, struct dlfs_err *err)
{
	int ret = begin_layout(t, l, err);
	if (ret)
		return ret;
	if ((ret = number_entries(t, o, NULL, l, err)) ||
	    (ret = finish_order(t, l, err)))
		return ret;
	return place_files(t, o, l, err);
}

/* In-place files' order: archive, then place in it (a hard link right
 * after the member whose bytes it shares); read from the attributes,
 * which are in entry order still. */
static int in_place_keys(struct pk_tree *t, uint64_t **keys,
			 struct dlfs_err *err)
{
	enum { AB = 1024 };
	struct pk_attr a[AB];
	uint64_t *k = malloc((t->n ? t->n : 1) * sizeof(*k));
	if (!k)
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	for (uint64_t i = 0; i < t->n; i += AB) {
		uint64_t m = t->n - i < AB ? t->n - i : AB;
		int ret = pk_attr_read(t, i, m, a, err);
		if (ret) {
			free(k);
			return ret;
		}
		for (uint64_t j = 0; j < m; j++)
			k[i + j] = (uint64_t)t->e[i + j].src
					   << DLFS_LOC_CONTAINER_SHIFT |
				   a[j].spool_off;
	}
	*keys = k;
	return 0;
}

/* Each file where its archive has it: container = source, offset = its
 * logical place (pk_file_loc). */
static int place_in_place(struct pk_tree *t, const struct pk_inplace *ip,
			  uint64_t cs, struct pk_layout *l,
			  struct dlfs_err *err)
{
	uint64_t first = l->n_dirs + l->n_symlinks, cc = 0;
	int ret = alloc_placement(l, t->n, 1 + ip->n, 1, err);
	if (ret)
		return ret;
	for (uint64_t i = first; i < t->n; i++) {
		uint32_t c = t->e[i].src;
		while (cc <= c)
			l->first_file[cc++] = i;
		l->n_cfiles[c]++;
		l->total_bytes += t->e[i].size;
	}
	while (cc < ip->n)
		l->first_file[cc++] = t->n;
	l->n_containers = ip->n;
	for (uint32_t c = 0; c < ip->n; c++)
		l->data_size[c] = ip->arc[c].data_size;
	number_chunks(l, cs);
	return 0;
}

int pk_layout_in_place(struct pk_tree *t, const struct dlfs_pack_opts *o,
		       const struct pk_inplace *ip, struct pk_layout *l,
		       struct dlfs_err *err)
{
	uint64_t *keys = NULL;
	int ret = begin_layout(t, l, err);
	if (!ret)
		ret = in_place_keys(t, &keys, err);
	if (!ret)
		ret = number_entries(t, o, keys, l, err);
	free(keys);
	if (!ret)
		ret = finish_order(t, l, err);
	if (!ret)
		ret = place_in_place(t, ip, o->chunk_size, l, err);
	if (ret)
		return ret;
	for (uint32_t c = 0; c < ip->n; c++)
		if (l->first_chunk[c] != ip->arc[c].first_chunk)
			return dlfs_err_set(err, -EIO,
					    "archive %u: chunks numbered %llu, "
					    "the layout says %llu (a bug)",
					    c,
					    (unsigned long long)
						    ip->arc[c].first_chunk,
					    (unsigned long long)
						    l->first_chunk[c]);
	return 0;
}

void pk_layout_free(struct pk_layout *l)
{
	free(l->loc);
	free(l->xxh3);
	free(l->data_size);
	free(l->first_chunk);
	free(l->first_file);
	free(l->n_cfiles);
	memset(l, 0, sizeof(*l));
}
