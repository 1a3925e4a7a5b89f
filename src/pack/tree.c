/*
 * The packer's tree: entries in memory (32 bytes each, names in slabs),
 * the path map that finds them while sources are read, and the attribute
 * file that holds the rest of each entry on disk.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "tree.h"
#include "util.h"

#define SLAB (1u << 20)
#define ABUF 4096 /* attribute records buffered before a write */

void pk_tree_init(struct pk_tree *t)
{
	memset(t, 0, sizeof(*t));
	t->spool_fd = -1;
	t->attr_fd = -1;
}

void pk_tree_free(struct pk_tree *t)
{
	for (uint64_t i = 0; i < t->n_slabs; i++)
		free(t->slabs[i]);
	free(t->slabs);
	free(t->e);
	free(t->map);
	free(t->abuf);
	free(t->links);
	if (t->attr_fd >= 0)
		close(t->attr_fd);
	free(t->attr_path);
	pk_tree_data_free(t);
	if (t->spool_fd >= 0)
		close(t->spool_fd);
	free(t->spool_path);
	pk_tree_init(t);
}

/* Room in array *a (*cap elements of size bytes) for one more after n,
 * doubling from first. @return 0 or -ENOMEM. */
static int room_for_one(void **a, uint64_t *cap, uint64_t n, size_t size,
			uint64_t first)
{
	if (n < *cap)
		return 0;
	uint64_t c = *cap ? *cap * 2 : first;
	void *na = realloc(*a, c * size);
	if (!na)
		return -ENOMEM;
	*a = na;
	*cap = c;
	return 0;
}

/* Room for n + 1 bytes that lives as long as t. */
static char *slab_alloc(struct pk_tree *t, size_t n)
{
	char *s;
	if (room_for_one((void **)&t->slabs, &t->slabs_cap, t->n_slabs,
			 sizeof(*t->slabs), 64))
		return NULL;
	if (n + 1 > SLAB / 4) {
		/* A long string has a slab of its own, before the last one,
		 * which stays the one being filled. */
		if (!(s = malloc(n + 1)))
			return NULL;
		if (t->n_slabs) {
			t->slabs[t->n_slabs] = t->slabs[t->n_slabs - 1];
			t->slabs[t->n_slabs - 1] = s;
		} else {
			t->slabs[0] = s;
			t->slab_used = SLAB; /* full: the next string opens one */
		}
		t->n_slabs++;
	} else {
		if (!t->n_slabs || SLAB - t->slab_used < n + 1) {
			if (!(s = malloc(SLAB)))
				return NULL;
			t->slabs[t->n_slabs++] = s;
			t->slab_used = 0;
		}
		s = t->slabs[t->n_slabs - 1] + t->slab_used;
		t->slab_used += n + 1;
	}
	return s;
}

char *pk_tree_strdup(struct pk_tree *t, const char *p, size_t n)
{
	char *s = slab_alloc(t, n);
	if (!s)
		return NULL;
	memcpy(s, p, n);
	s[n] = '\0';
	return s;
}

int pk_pathcmp(const char *a, size_t alen, const char *b, size_t blen)
{
	size_t n = alen < blen ? alen : blen;
	for (size_t i = 0; i < n; i++) {
		int ca = a[i] == '/' ? 0 : (unsigned char)a[i] + 1;
		int cb = b[i] == '/' ? 0 : (unsigned char)b[i] + 1;
		if (ca != cb)
			return ca - cb;
	}
	return alen < blen ? -1 : alen > blen;
}

/* ---- whole paths ---- */

/* An entry's whole path as up to two pieces: dir "/" name, or one. */
struct pieces {
	const char *a, *b;
	size_t an, bn; /* b == NULL: the path is a alone */
};

static void pieces_of(const struct pk_tree *t, const struct pk_entry *e,
		      struct pieces *p)
{
	p->a = e->name;
	p->an = strlen(e->name);
	p->b = NULL;
	p->bn = 0;
	if (S_ISDIR(e->mode) || e->parent == PK_WHOLE)
		return;
	const char *d = t->e[e->parent].name;
	if (!*d)
		return; /* a child of the root */
	p->b = p->a;
	p->bn = p->an;
	p->a = d;
	p->an = strlen(d);
}

static size_t pieces_len(const struct pieces *p)
{
	return p->b ? p->an + 1 + p->bn : p->an;
}

static int piece_byte(const struct pieces *p, size_t i)
{
	int c;
	if (i < p->an)
		c = (unsigned char)p->a[i];
	else if (i == p->an)
		c = '/';
	else
		c = (unsigned char)p->b[i - p->an - 1];
	return c == '/' ? 0 : c + 1;
}

int pk_entry_path(const struct pk_tree *t, const struct pk_entry *e,
		  char **buf, size_t *cap, size_t *len)
{
	struct pieces p;
	pieces_of(t, e, &p);
	size_t n = pieces_len(&p);
	if (n + 1 > *cap) {
		char *b = realloc(*buf, n + 64);
		if (!b)
			return -ENOMEM;
		*buf = b;
		*cap = n + 64;
	}
	memcpy(*buf, p.a, p.an);
	if (p.b) {
		(*buf)[p.an] = '/';
		memcpy(*buf + p.an + 1, p.b, p.bn);
	}
	(*buf)[n] = '\0';
	*len = n;
	return 0;
}

size_t pk_entry_path_len(const struct pk_tree *t, const struct pk_entry *e)
{
	struct pieces p;
	pieces_of(t, e, &p);
	return pieces_len(&p);
}

const char *pk_entry_name(const struct pk_entry *e, size_t *len)
{
	const char *nm = e->name;
	if (S_ISDIR(e->mode) || e->parent == PK_WHOLE) {
		const char *s = strrchr(nm, '/');
		if (s)
			nm = s + 1;
	}
	*len = strlen(nm);
	return nm;
}

int pk_entry_cmp(const struct pk_tree *t, const struct pk_entry *a,
		 const struct pk_entry *b)
{
	if (a->parent == b->parent && a->parent != PK_WHOLE &&
	    !S_ISDIR(a->mode) && !S_ISDIR(b->mode))
		return pk_pathcmp(a->name, strlen(a->name), b->name,
				  strlen(b->name));
	struct pieces x, y;
	pieces_of(t, a, &x);
	pieces_of(t, b, &y);
	size_t xl = pieces_len(&x), yl = pieces_len(&y);
	size_t n = xl < yl ? xl : yl;
	for (size_t i = 0; i < n; i++) {
		int cx = piece_byte(&x, i), cy = piece_byte(&y, i);
		if (cx != cy)
			return cx - cy;
	}
	return xl < yl ? -1 : xl > yl;
}

/* ---- the path map ---- */

/* The hash of a path: its name's, seeded with its directory's. An entry
 * hashes without its path spelled out. */
static uint64_t path_hash(const char *p, size_t n)
{
	const char *s = memrchr(p, '/', n);
	size_t d = s ? (size_t)(s - p) : 0;
	uint64_t h = XXH3_64bits(p, d);
	return XXH3_64bits_withSeed(s ? s + 1 : p, n - (s ? d + 1 : 0), h);
}

static uint64_t entry_hash(const struct pk_tree *t, const struct pk_entry *e)
{
	if (S_ISDIR(e->mode) || e->parent == PK_WHOLE)
		return path_hash(e->name, strlen(e->name));
	const char *d = t->e[e->parent].name;
	return XXH3_64bits_withSeed(e->name, strlen(e->name),
				    XXH3_64bits(d, strlen(d)));
}

static int entry_is(const struct pk_tree *t, const struct pk_entry *e,
		    const char *p, size_t n)
{
	struct pieces x;
	pieces_of(t, e, &x);
	if (pieces_len(&x) != n || memcmp(x.a, p, x.an))
		return 0;
	return !x.b || (p[x.an] == '/' && !memcmp(x.b, p + x.an + 1, x.bn));
}

static int map_grow(struct pk_tree *t)
{
	uint64_t cap = t->map_cap ? t->map_cap * 2 : 1024;
	uint32_t *m = calloc(cap, sizeof(*m));
	if (!m)
		return -ENOMEM;
	for (uint64_t i = 0; i < t->n; i++) {
		uint64_t h = entry_hash(t, &t->e[i]);
		while (m[h & (cap - 1)])
			h++;
		m[h & (cap - 1)] = (uint32_t)(i + 1);
	}
	free(t->map);
	t->map = m;
	t->map_cap = cap;
	return 0;
}

int64_t pk_tree_find(const struct pk_tree *t, const char *p, size_t n)
{
	if (!t->map_cap)
		return -1;
	if (t->last_dir && n == t->last_dir_len &&
	    !memcmp(t->e[t->last_dir - 1].name, p, n))
		return (int64_t)t->last_dir - 1;
	uint64_t h = path_hash(p, n);
	for (;; h++) {
		uint32_t v = t->map[h & (t->map_cap - 1)];
		if (!v)
			return -1;
		if (entry_is(t, &t->e[v - 1], p, n))
			return (int64_t)v - 1;
	}
}

/* ---- the attribute file ---- */

int pk_tree_open_attrs(struct pk_tree *t, const char *path,
		       struct dlfs_err *err)
{
	if (!(t->attr_path = strdup(path)) ||
	    !(t->abuf = malloc(ABUF * sizeof(*t->abuf))))
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	t->attr_fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (t->attr_fd < 0)
		return dlfs_err_sys(err, -errno, "%s", path);
	if (unlink(path) < 0)
		return dlfs_err_sys(err, -errno, "%s: unlink", path);
	return 0;
}

static int attr_io(const struct pk_tree *t, int wr, uint64_t k, uint64_t n,
		   struct pk_attr *a, struct dlfs_err *err)
{
	if (t->attr_fd < 0)
		return dlfs_err_set(err, -EBADF, "no attribute file");
	size_t len = n * sizeof(*a);
	off_t off = (off_t)(k * sizeof(*a));
	ssize_t got = wr ? (ssize_t)dlfs_pwrite_full(t->attr_fd, a, len, off)
			 : dlfs_pread_full(t->attr_fd, a, len, off);
	if (wr && got == 0)
		return 0;
	if (got < 0)
		return dlfs_err_sys(err, (int)got, "%s: %s at offset %llu",
				    t->attr_path, wr ? "write" : "read",
				    (unsigned long long)off);
	if ((size_t)got < len)
		return dlfs_err_set(err, -EIO, "%s: short read at offset %llu",
				    t->attr_path, (unsigned long long)off);
	return 0;
}

/* Write the buffered records. */
static int attr_drain(struct pk_tree *t, struct dlfs_err *err)
{
	if (!t->n_buf)
		return 0;
	int ret = attr_io(t, 1, t->n_done, t->n_buf, t->abuf, err);
	if (!ret) {
		t->n_done += t->n_buf;
		t->n_buf = 0;
	}
	return ret;
}

/* Put the current record where it belongs. */
static int attr_commit(struct pk_tree *t, struct dlfs_err *err)
{
	if (!t->cur_set)
		return 0;
	t->cur_set = 0;
	if (t->cur_idx == t->n_done + t->n_buf) {
		if (t->n_buf == ABUF) {
			int ret = attr_drain(t, err);
			if (ret)
				return ret;
		}
		t->abuf[t->n_buf++] = t->cur;
		return 0;
	}
	return pk_attr_set(t, t->cur_idx, &t->cur, err);
}

int pk_attr_get(struct pk_tree *t, uint64_t k, struct pk_attr *a,
		struct dlfs_err *err)
{
	if (t->cur_set && k == t->cur_idx)
		*a = t->cur;
	else if (k >= t->n_done && k < t->n_done + t->n_buf)
		*a = t->abuf[k - t->n_done];
	else
		return attr_io(t, 0, k, 1, a, err);
	return 0;
}

int pk_attr_set(struct pk_tree *t, uint64_t k, const struct pk_attr *a,
		struct dlfs_err *err)
{
	if (t->cur_set && k == t->cur_idx)
		t->cur = *a;
	else if (k >= t->n_done && k < t->n_done + t->n_buf)
		t->abuf[k - t->n_done] = *a;
	else
		return attr_io(t, 1, k, 1, (struct pk_attr *)a, err);
	return 0;
}

int pk_attr_flush(struct pk_tree *t, struct dlfs_err *err)
{
	int ret = attr_commit(t, err);
	return ret ? ret : attr_drain(t, err);
}

int pk_attr_read(const struct pk_tree *t, uint64_t k, uint64_t n,
		 struct pk_attr *a, struct dlfs_err *err)
{
	return attr_io(t, 0, k, n, a, err);
}

/* ---- entries ---- */

int pk_tree_append(struct pk_tree *t, const char *name, size_t n,
		   uint32_t parent, struct pk_entry **out, struct pk_attr **a,
		   struct dlfs_err *err)
{
	int ret = attr_commit(t, err);
	if (ret)
		return ret;
	if (t->n >= UINT32_MAX - 1)
		return dlfs_err_set(err, -EFBIG, "more than %u entries",
				    UINT32_MAX - 2);
	if (room_for_one((void **)&t->e, &t->cap, t->n, sizeof(*t->e), 4096))
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	struct pk_entry *e = &t->e[t->n];
	memset(e, 0, sizeof(*e));
	if (!(e->name = pk_tree_strdup(t, name, n)))
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	e->parent = parent;
	memset(&t->cur, 0, sizeof(t->cur));
	t->cur_idx = t->n;
	t->cur_set = 1;
	t->n++;
	*out = e;
	*a = &t->cur;
	return 0;
}

/* Append the entry at path p[0..n) of the given type, and index it. */
static int add_entry(struct pk_tree *t, const char *p, size_t n,
		     uint32_t mode, struct pk_entry **out, struct pk_attr **a,
		     struct dlfs_err *err)
{
	const char *s = memrchr(p, '/', n);
	size_t d = s ? (size_t)(s - p) : 0;
	int64_t parent = pk_tree_find(t, p, d);
	if (parent < 0 || !S_ISDIR(t->e[parent].mode))
		return dlfs_err_set(err, -EINVAL, "'%.*s': no parent directory",
				    (int)n, p);
	t->last_dir = (uint64_t)parent + 1;
	t->last_dir_len = d;
	if ((t->n + 1) * 2 > t->map_cap && map_grow(t))
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	const char *nm = S_ISDIR(mode) || !s ? p : s + 1;
	int ret = pk_tree_append(t, nm, n - (size_t)(nm - p),
				 (uint32_t)parent, out, a, err);
	if (ret)
		return ret;
	(*out)->mode = mode;
	uint64_t h = entry_hash(t, *out);
	while (t->map[h & (t->map_cap - 1)])
		h++;
	t->map[h & (t->map_cap - 1)] = (uint32_t)t->n;
	return 0;
}

int pk_tree_root(struct pk_tree *t, struct pk_entry **out,
		 struct pk_attr **a, struct dlfs_err *err)
{
	if (t->n)
		return dlfs_err_set(err, -EINVAL, "the tree has a root");
	if (map_grow(t))
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	int ret = pk_tree_append(t, "", 0, 0, out, a, err);
	if (ret)
		return ret;
	(*out)->mode = S_IFDIR | 0755;
	uint64_t h = entry_hash(t, *out);
	t->map[h & (t->map_cap - 1)] = 1;
	return 0;
}

int pk_tree_put(struct pk_tree *t, const char *p, size_t n, uint32_t mode,
		uint32_t src, const char *where, struct pk_entry **out,
		struct pk_attr **attr, struct dlfs_err *err)
{
	*out = NULL;
	*attr = NULL;
	if (!t->n)
		return dlfs_err_set(err, -EINVAL, "%s: the tree has no root",
				    where);
	int64_t k = pk_tree_find(t, p, n);
	if (k >= 0) {
		struct pk_entry *old = &t->e[k];
		if (S_ISDIR(old->mode) && S_ISDIR(mode)) {
			struct pk_attr a;
			int ret = attr_commit(t, err);
			if (!ret)
				ret = pk_attr_get(t, (uint64_t)k, &a, err);
			if (ret)
				return ret;
			if (a.implicit) {
				a.implicit = 0;
				old->mode = mode;
				t->cur = a;
				t->cur_idx = (uint64_t)k;
				t->cur_set = 1;
				*out = old;
				*attr = &t->cur;
			}
			return 0;
		}
		char q[512];
		dlfs_quote(p, n, q, sizeof(q));
		return dlfs_err_set(err, -EINVAL,
				    "%s: duplicate path '%s' (also given "
				    "by an earlier source or member)",
				    where, q);
	}
	int ret = add_entry(t, p, n, mode, out, attr, err);
	if (ret)
		return ret;
	(*out)->src = src;
	return 0;
}

int pk_tree_set_target(struct pk_tree *t, struct pk_entry *e, const char *tg,
		       size_t n, struct dlfs_err *err)
{
	size_t nl = strlen(e->name);
	char *s = slab_alloc(t, nl + 1 + n);
	if (!s)
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	memcpy(s, e->name, nl + 1);
	memcpy(s + nl + 1, tg, n);
	s[nl + 1 + n] = '\0';
	e->name = s;
	e->size = n;
	return 0;
}

int pk_tree_add_link(struct pk_tree *t, uint64_t k, struct dlfs_err *err)
{
	if (room_for_one((void **)&t->links, &t->links_cap, t->n_links,
			 sizeof(*t->links), 64))
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	t->links[t->n_links++] = (uint32_t)k;
	return 0;
}

int pk_tree_data_add(struct pk_tree *t, const char *path, uint32_t *idx,
		     struct dlfs_err *err)
{
	for (uint32_t k = 0; k < t->n_data; k++)
		if (!strcmp(t->data[k].path, path)) {
			*idx = k + 1;
			return 0;
		}
	if (room_for_one((void **)&t->data, &t->data_cap, t->n_data,
			 sizeof(*t->data), 8))
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	struct pk_data *d = &t->data[t->n_data];
	d->path = strdup(path);
	if (!d->path)
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	d->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (d->fd < 0) {
		int ret = dlfs_err_sys(err, -errno, "%s", path);
		free(d->path);
		return ret;
	}
	*idx = ++t->n_data;
	return 0;
}

void pk_tree_data_free(struct pk_tree *t)
{
	for (uint32_t k = 0; k < t->n_data; k++) {
		if (t->data[k].fd >= 0)
			close(t->data[k].fd);
		free(t->data[k].path);
	}
	free(t->data);
	t->data = NULL;
	t->n_data = t->data_cap = 0;
}
