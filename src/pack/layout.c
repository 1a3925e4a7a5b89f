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

static int sort_group(struct pk_tree *t, struct sort_item *it, uint64_t n,
		      enum dlfs_order ord, uint64_t seed)
{
	char *pb = NULL;
	size_t pcap = 0, plen;
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
	qsort_r(it, n, sizeof(*it), ord == DLFS_ORDER_SORTED ? by_path : by_key,
		t);
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

static int reorder_attrs(struct pk_tree *t, struct pk_layout *l,
			 struct dlfs_err *err)
{
	const uint64_t bucket = t->bucket ? t->bucket : UINT64_C(1) << 20;
	uint64_t n = t->n, nb = (n + bucket - 1) / bucket;
	int ret = 0, sfd = -1, ofd = -1;
	char *spath = NULL, *opath = NULL;
	struct pk_attr *in = malloc(BLOCK * sizeof(*in));
	struct brec *bb = calloc(nb * BLOCK, sizeof(*bb)); /* bucket buffers */
	uint64_t *fill = calloc(nb, sizeof(*fill));	   /* buffered */
	uint64_t *done = calloc(nb, sizeof(*done));	   /* written */
	struct pk_attr *out = NULL;
	if (!in || !bb || !fill || !done ||
	    asprintf(&spath, "%s.sort", t->attr_path) < 0 ||
	    asprintf(&opath, "%s.ino", t->attr_path) < 0) {
		spath = opath = NULL;
		ret = dlfs_err_set(err, -ENOMEM, "out of memory");
		goto out;
	}
	sfd = open(spath, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (sfd < 0 || unlink(spath) < 0) {
		ret = dlfs_err_sys(err, -errno, "%s", spath);
		goto out;
	}
	ofd = open(opath, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (ofd < 0 || unlink(opath) < 0) {
		ret = dlfs_err_sys(err, -errno, "%s", opath);
		goto out;
	}
	int64_t max = INT64_MIN;
	for (uint64_t j = 0; j < n && !ret; j += BLOCK) {
		uint64_t m = n - j < BLOCK ? n - j : BLOCK;
		if ((ret = pk_attr_read(t, j, m, in, err)))
			break;
		for (uint64_t i = 0; i < m && !ret; i++) {
			struct pk_attr *a = &in[i];
			if (j + i == 0) {
				if (t->root_set)
					max = a->mtime_sec;
			} else if (!a->implicit && a->mtime_sec > max) {
				max = a->mtime_sec;
			}
			if (a->data_from)
				a->data_from = t->e[a->data_from - 1].ino;
			uint64_t to = t->e[j + i].ino - 1, k = to / bucket;
			bb[k * BLOCK + fill[k]++] = (struct brec){to, *a};
			if (fill[k] < BLOCK)
				continue;
			off_t at = (off_t)((k * bucket + done[k]) * sizeof(*bb));
			ret = dlfs_pwrite_full(sfd, bb + k * BLOCK,
					       BLOCK * sizeof(*bb), at);
			if (ret)
				ret = dlfs_err_sys(err, ret, "%s: write", spath);
			done[k] += BLOCK;
			fill[k] = 0;
		}
	}
	for (uint64_t k = 0; k < nb && !ret; k++) {
		if (!fill[k])
			continue;
		off_t at = (off_t)((k * bucket + done[k]) * sizeof(*bb));
		ret = dlfs_pwrite_full(sfd, bb + k * BLOCK,
				       fill[k] * sizeof(*bb), at);
		if (ret)
			ret = dlfs_err_sys(err, ret, "%s: write", spath);
		done[k] += fill[k];
	}
	free(bb);
	bb = NULL;
	if (!ret && !(bb = malloc(BLOCK * sizeof(*bb))))
		ret = dlfs_err_set(err, -ENOMEM, "out of memory");
	if (!ret && !(out = malloc((n < bucket ? n : bucket) * sizeof(*out))))
		ret = dlfs_err_set(err, -ENOMEM, "out of memory");
	for (uint64_t k = 0; k < nb && !ret; k++) {
		uint64_t first = k * bucket;
		uint64_t m = n - first < bucket ? n - first : bucket;
		for (uint64_t r = 0; r < done[k] && !ret; r += BLOCK) {
			uint64_t c = done[k] - r < BLOCK ? done[k] - r : BLOCK;
			off_t at = (off_t)((first + r) * sizeof(*bb));
			ssize_t got = dlfs_pread_full(sfd, bb, c * sizeof(*bb),
						      at);
			if (got != (ssize_t)(c * sizeof(*bb))) {
				ret = dlfs_err_sys(err, got < 0 ? (int)got
								: -EIO,
						   "%s: read", spath);
				break;
			}
			for (uint64_t i = 0; i < c; i++)
				out[bb[i].to - first] = bb[i].a;
		}
		if (!ret && done[k] != m)
			ret = dlfs_err_set(err, -EIO, "%s: bucket %llu holds "
					   "%llu records, not %llu", spath,
					   (unsigned long long)k,
					   (unsigned long long)done[k],
					   (unsigned long long)m);
		if (!ret &&
		    (ret = dlfs_pwrite_full(ofd, out, m * sizeof(*out),
					    (off_t)(first * sizeof(*out)))))
			ret = dlfs_err_sys(err, ret, "%s: write", opath);
	}
	if (!ret) {
		close(t->attr_fd);
		t->attr_fd = ofd;
		ofd = -1;
		l->max_mtime = max == INT64_MIN ? 0 : max;
	}
out:
	if (sfd >= 0)
		close(sfd);
	if (ofd >= 0)
		close(ofd);
	free(spath);
	free(opath);
	free(in);
	free(bb);
	free(fill);
	free(done);
	free(out);
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

int pk_layout(struct pk_tree *t, const struct dlfs_pack_opts *o,
	      struct pk_layout *l, struct dlfs_err *err)
{
	memset(l, 0, sizeof(*l));
	int ret = pk_attr_flush(t, err);
	if (ret)
		return ret;
	/* The path map goes (4 bytes a slot, two slots an entry) before
	 * the sort takes its room: parents are entry indices already. */
	free(t->map);
	t->map = NULL;
	t->map_cap = 0;
	struct sort_item *it = malloc((t->n ? t->n : 1) * sizeof(*it));
	if (!it)
		return dlfs_err_set(err, -ENOMEM, "out of memory");

	/* Three groups, each sorted: dirs (by path), symlinks, files. */
	uint64_t n = 0;
	for (int pass = 0; pass < 3; pass++) {
		uint64_t m = 0;
		for (uint64_t i = 0; i < t->n; i++) {
			mode_t md = t->e[i].mode;
			if ((pass == 0 && S_ISDIR(md)) ||
			    (pass == 1 && S_ISLNK(md)) ||
			    (pass == 2 && S_ISREG(md)))
				it[m++].e = &t->e[i];
		}
		if (sort_group(t, it, m,
			       pass == 2 ? o->order : DLFS_ORDER_SORTED,
			       o->seed)) {
			free(it);
			return dlfs_err_set(err, -ENOMEM, "out of memory");
		}
		for (uint64_t i = 0; i < m; i++)
			it[i].e->ino = (uint32_t)(n + i + 1);
		n += m;
		if (pass == 0)
			l->n_dirs = m;
		else if (pass == 1)
			l->n_symlinks = m;
		else
			l->n_files = m;
	}
	free(it);
	if (n != t->n)
		return dlfs_err_set(err, -EINVAL, "%llu entries of no known "
				    "type", (unsigned long long)(t->n - n));

	/* A directory's size is its number of entries. */
	for (uint64_t i = 0; i < n; i++)
		if (S_ISDIR(t->e[i].mode))
			t->e[i].size = 0;
	for (uint64_t i = 1; i < n; i++)
		t->e[t->e[i].parent].size++;

	if ((ret = reorder_attrs(t, l, err)))
		return ret;
	reorder_entries(t);
	if ((ret = date_dirs(t, l, err)))
		return ret;

	/*
	 * Placement. A file that fits in a chunk never straddles a chunk
	 * boundary; a larger one starts where it is. A container is closed
	 * when the next file would take it past container_size. Container
	 * arrays are sized for the worst case of one file each.
	 */
	uint64_t cap = 1 + l->n_files;
	l->loc = calloc(n + 1, sizeof(uint64_t));
	l->xxh3 = calloc(n + 1, sizeof(uint64_t));
	l->data_size = calloc(cap, sizeof(uint64_t));
	l->first_chunk = calloc(cap, sizeof(uint64_t));
	l->first_file = calloc(cap, sizeof(uint64_t));
	l->n_cfiles = calloc(cap, sizeof(uint64_t));
	if (!l->loc || !l->xxh3 || !l->data_size || !l->first_chunk ||
	    !l->first_file || !l->n_cfiles)
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	const uint64_t cs = o->chunk_size;
	uint64_t c = 0, pos = 0;
	uint64_t first = l->n_dirs + l->n_symlinks;
	l->first_file[0] = first;
	for (uint64_t i = first; i < n; i++) {
		uint64_t s = t->e[i].size;
		uint64_t p = dlfs_roundup(pos, o->align);
		if (s > 0 && s <= cs && p / cs != (p + s - 1) / cs)
			p = dlfs_roundup(p, cs);
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
	for (uint64_t k = 0; k < l->n_containers; k++) {
		l->first_chunk[k] = l->n_chunks;
		l->n_chunks += (l->data_size[k] + cs - 1) / cs;
	}
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
