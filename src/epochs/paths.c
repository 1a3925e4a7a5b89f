/* Inode paths: see paths.h. */
#include "paths.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dlfs/format.h"
#include "util.h"

#define NB DLFS_PATHS_BLOCK
#define NONE UINT32_MAX
#define SLAB (UINT32_C(1) << 20)
/* Room a block of NB names may need: the first whole, each other one a
 * 3-byte header and at most a whole name; and the 16 bytes past its end
 * that names_get may read (it copies short pieces 16 bytes at a time). */
#define BLOCK_ROOM (NB * (3 + DLFS_NAME_MAX) + 16)
/* A name as names_get decodes it: room for those 16-byte copies. */
#define NAME_BUF (DLFS_NAME_MAX + 32)
/* Ordinals per entry of the table that narrows parent_of's search. */
#define RADIX_BITS 10

/* Names in walk order, front-coded: see paths.h. A block starts with
 * [len][name]; each other entry is [lcp][lcs][mid][mid bytes], the name
 * being the previous one's first lcp bytes, mid, then its last lcs bytes.
 * A block lies inside one slab; block[b] is (slab << 32) | offset. */
struct names {
	uint8_t **slabs;
	size_t n_slabs, cap_slabs;
	uint32_t used; /* bytes of the last slab */
	uint64_t *block;
	size_t cap_blocks;
	uint64_t n;
	uint8_t prev[DLFS_NAME_MAX];
	size_t prev_len;
};

struct dlfs_paths {
	uint64_t n_dirs, first_file, n_inodes, n_files;
	struct names names;
	uint32_t *dir_ord;    /* [d - 1]: the ordinal of d's name */
	uint32_t *dir_parent; /* [d - 1] */
	uint32_t *dstart;     /* [d - 1]: the ordinal of d's first entry */
	uint32_t *radix;      /* [ord >> RADIX_BITS]: parent_of(that) - 1 */
	uint32_t *ford;       /* [ino - first_file]: the file's name */
	uint8_t *search;      /* [d - 1]: SEARCH_* classes, see search_of */
	char *dpath;          /* every directory's path, back to back, or NULL */
	uint64_t *doff;       /* [d - 1] .. [d]: where d's path lies in dpath */
	unsigned all;         /* classes that may search every file's parent */
	int64_t all_len;
	uint64_t unbound;     /* entries skipped: their inode is another name's */
	char unbound_msg[DLFS_ERR_MSG_MAX]; /* the first one's error */
};

/* search[d]: the S_IX* bits of every directory from the root to d, ANDed;
 * UNKNOWN while the walk has not reached d, CYCLE while it is on it. */
#define UNKNOWN 0x80
#define CYCLE 0x20 /* neither is an S_IX* bit (0111 is 0x49) */

static int names_add(struct names *s, const uint8_t *name, size_t len)
{
	uint8_t *q;
	if (s->n % NB == 0) {
		if (!s->n_slabs || SLAB - s->used < BLOCK_ROOM + 1) {
			if (dlfs_grow((void **)&s->slabs, &s->cap_slabs,
				 s->n_slabs + 1, sizeof(*s->slabs)))
				return -ENOMEM;
			if (!(s->slabs[s->n_slabs] = malloc(SLAB)))
				return -ENOMEM;
			s->n_slabs++;
			s->used = 0;
		}
		if (dlfs_grow((void **)&s->block, &s->cap_blocks, s->n / NB + 1,
			 sizeof(*s->block)))
			return -ENOMEM;
		s->block[s->n / NB] =
			((uint64_t)(s->n_slabs - 1) << 32) | s->used;
		q = s->slabs[s->n_slabs - 1] + s->used;
		*q++ = (uint8_t)len;
		memcpy(q, name, len);
		s->used += (uint32_t)(1 + len);
	} else {
		size_t most = len < s->prev_len ? len : s->prev_len;
		size_t lcp = 0, lcs = 0;
		while (lcp < most && name[lcp] == s->prev[lcp])
			lcp++;
		while (lcs < most - lcp &&
		       name[len - 1 - lcs] == s->prev[s->prev_len - 1 - lcs])
			lcs++;
		size_t mid = len - lcp - lcs;
		q = s->slabs[s->n_slabs - 1] + s->used;
		q[0] = (uint8_t)lcp;
		q[1] = (uint8_t)lcs;
		q[2] = (uint8_t)mid;
		memcpy(q + 3, name + lcp, mid);
		s->used += (uint32_t)(3 + mid);
	}
	memcpy(s->prev, name, len);
	s->prev_len = len;
	s->n++;
	return 0;
}

/* Copy n bytes, as one 16-byte move when n is at most 16 (both ends have
 * room for it): names are short, and a call per piece costs more. */
static inline void copy(uint8_t *d, const uint8_t *s, size_t n)
{
	if (n <= 16)
		memcpy(d, s, 16);
	else
		memcpy(d, s, n);
}

/* Name k into out (NAME_BUF bytes). @return its length. */
static size_t names_get(const struct names *s, uint64_t k, uint8_t *out)
{
	uint64_t b = s->block[k / NB];
	const uint8_t *q = s->slabs[b >> 32] + (uint32_t)b;
	size_t len = *q++;
	copy(out, q, len);
	q += len;
	uint8_t tail[NAME_BUF];
	for (unsigned i = (unsigned)(k % NB); i; i--) {
		size_t lcp = q[0], lcs = q[1], mid = q[2];
		copy(tail, out + len - lcs, lcs);
		copy(out + lcp, q + 3, mid);
		copy(out + lcp + mid, tail, lcs);
		q += 3 + mid;
		len = lcp + mid + lcs;
	}
	return len;
}

static void names_free(struct names *s)
{
	for (size_t i = 0; i < s->n_slabs; i++)
		free(s->slabs[i]);
	free(s->slabs);
	free(s->block);
}

/* The directory whose entries hold ordinal ord: the last d whose first
 * entry is at or before it (an empty directory shares its start with the
 * next one, which is the one that holds ord). */
static uint32_t parent_in(const struct dlfs_paths *p, uint32_t ord,
			  uint64_t lo, uint64_t hi)
{
	while (hi - lo > 1) {
		uint64_t mid = lo + (hi - lo) / 2;
		if (p->dstart[mid] <= ord)
			lo = mid;
		else
			hi = mid;
	}
	return (uint32_t)(lo + 1);
}

/* The same, searching only between the directories of the radix entries
 * around ord. */
static uint32_t parent_of(const struct dlfs_paths *p, uint32_t ord)
{
	uint32_t r = ord >> RADIX_BITS;
	return parent_in(p, ord, p->radix[r], (uint64_t)p->radix[r + 1] + 1);
}

/* The ordinal of ino's name and its parent. @return 0 or -ENOENT. */
static int locate(const struct dlfs_paths *p, uint64_t ino, uint32_t *ord,
		  uint64_t *parent)
{
	if (ino >= 2 && ino <= p->n_dirs) {
		*ord = p->dir_ord[ino - 1];
		*parent = p->dir_parent[ino - 1];
	} else if (ino >= p->first_file && ino <= p->n_inodes) {
		*ord = p->ford[ino - p->first_file];
		if (*ord != NONE)
			*parent = parent_of(p, *ord);
	} else {
		return -ENOENT; /* the root, a symlink, or out of range */
	}
	return *ord == NONE ? -ENOENT : 0;
}

struct walk {
	struct dlfs_paths *p;
	struct dlfs_txn *txn;
	int bound; /* records are bound to their entries (path_bound) */
	uint64_t dir;
	uint64_t *files, *name_sum; /* [d - 1]: for all_len */
	int ret;
};

static int add(void *arg, const struct dlfs_dirent *d)
{
	struct walk *w = arg;
	struct dlfs_paths *p = w->p;
	if (d->name_len < 1 || d->name_len > DLFS_NAME_MAX) {
		w->ret = -EUCLEAN;
		return 1;
	}
	if (p->names.n >= NONE) {
		w->ret = -EOVERFLOW;
		return 1;
	}
	uint32_t ord = (uint32_t)p->names.n;
	if (names_add(&p->names, (const uint8_t *)d->name, d->name_len)) {
		w->ret = -ENOMEM;
		return 1;
	}
	/* An entry whose inode record is another name's (a damaged entry,
	 * format 1.1) is skipped, so that no inode is listed under a name
	 * that is not its own; it is counted and the first one kept. A
	 * record that is damaged itself is left to whoever reads it. */
	struct dlfs_inode in;
	struct dlfs_err e = {0};
	int ret = w->bound ? dlfs_stat_entry(w->txn, w->dir, d->name,
					     d->name_len, d->ino, &in, &e)
			   : 0;
	if (ret == -DLFS_ECORRUPT &&
	    dlfs_stat(w->txn, d->ino, &in, NULL) == 0) { /* sound, not ours */
		if (!p->unbound++)
			snprintf(p->unbound_msg, sizeof(p->unbound_msg), "%s",
				 e.msg);
		return 0;
	}
	if (d->ino >= 2 && d->ino <= p->n_dirs &&
	    p->dir_ord[d->ino - 1] == NONE) {
		p->dir_ord[d->ino - 1] = ord;
		p->dir_parent[d->ino - 1] = (uint32_t)w->dir;
	} else if (d->ino >= p->first_file && d->ino <= p->n_inodes &&
		   p->ford[d->ino - p->first_file] == NONE) {
		/* A file with several names keeps its first. */
		p->ford[d->ino - p->first_file] = ord;
		w->files[w->dir - 1]++;
		w->name_sum[w->dir - 1] += d->name_len + 1;
	}
	return 0;
}

/* A directory's own search bits, before its ancestors are ANDed in. */
static int own_search(struct dlfs_txn *txn, struct dlfs_paths *p, uint64_t d,
		      struct dlfs_err *err)
{
	struct dlfs_inode in;
	int ret = dlfs_stat(txn, d, &in, err);
	if (ret)
		return ret;
	p->search[d - 1] = (uint8_t)(UNKNOWN | (in.mode & 0111));
	return 0;
}

/*
 * AND the bits of d's ancestors into d's own: walk up to the first
 * directory already done (or the root), then fill the chain downwards.
 * A chain that loops or leaves the table (a damaged index) may be
 * searched by nobody, so its files are served to root only. chain has
 * room for every directory.
 */
static void inherit_search(struct dlfs_paths *p, uint64_t d, uint32_t *chain)
{
	uint64_t at = d, n = 0;
	unsigned acc;
	for (;;) {
		uint8_t v = p->search[at - 1];
		if (!(v & UNKNOWN)) {
			acc = v;
			break;
		}
		if (v & CYCLE) {
			acc = 0;
			break;
		}
		p->search[at - 1] |= CYCLE;
		chain[n++] = (uint32_t)at;
		if (at == 1) {
			acc = 0111;
			break;
		}
		uint64_t up = p->dir_ord[at - 1] == NONE ? 0
							 : p->dir_parent[at - 1];
		if (up < 1 || up > p->n_dirs) {
			acc = 0;
			break;
		}
		at = up;
	}
	while (n--) {
		uint8_t *v = &p->search[chain[n] - 1];
		acc &= *v & 0111u;
		*v = (uint8_t)acc;
	}
}

/* The bytes of the list of every file's path, from the walk's sums. */
static int64_t sum_all(const struct dlfs_paths *p, const struct walk *w)
{
	int64_t total = 0;
	for (uint64_t f = 0; f < p->n_files; f++)
		if (p->ford[f] == NONE)
			return -ENOENT;
	for (uint64_t d = 1; d <= p->n_dirs; d++) {
		if (!w->files[d - 1])
			continue;
		int64_t dl = 0;
		if (d != 1 && (dl = dlfs_paths_len(p, d)) < 0)
			return -ENOENT;
		/* "dir/" before each name; the root's files have none. */
		total += (int64_t)w->files[d - 1] * (d == 1 ? 0 : dl + 1) +
			 (int64_t)w->name_sum[d - 1];
	}
	return total;
}

/*
 * Every directory's path, rendered once, so that a file's path is its
 * directory's and its own name: one name decoded a file, not one a level.
 * Kept only while they are few (dpath_max bytes in all, 64 MiB from
 * dlfs_paths_build); without them a
 * path is walked up name by name. A directory the walk missed has none.
 */
static void dir_paths(struct dlfs_paths *p, uint64_t dpath_max)
{
	uint64_t total = 0;
	for (uint64_t d = 2; d <= p->n_dirs; d++) {
		int64_t n = dlfs_paths_len(p, d);
		total += n > 0 ? (uint64_t)n : 0;
		if (total > dpath_max)
			return;
	}
	p->dpath = malloc(total ? total + 1 : 1);
	p->doff = malloc((p->n_dirs + 1) * sizeof(*p->doff));
	if (!p->dpath || !p->doff) {
		free(p->dpath);
		free(p->doff);
		p->dpath = NULL;
		p->doff = NULL;
		return;
	}
	uint64_t at = 0;
	p->doff[0] = 0; /* the root: "" */
	for (uint64_t d = 2; d <= p->n_dirs; d++) {
		p->doff[d - 1] = at;
		/* One byte more than the path: dlfs_paths_get ends it with a
		 * NUL, which the next path overwrites. */
		int n = dlfs_paths_get(p, d, p->dpath + at, total + 1 - at);
		at += n > 0 ? (uint64_t)n : 0;
	}
	p->doff[p->n_dirs] = at;
	if (!p->n_dirs)
		p->doff[0] = 0;
}

static int build(struct dlfs_txn *txn, struct dlfs_paths *p, struct walk *w,
		 uint64_t dpath_max, struct dlfs_err *err)
{
	for (uint64_t d = 1; d <= p->n_dirs; d++) {
		p->dstart[d - 1] = (uint32_t)p->names.n;
		w->dir = d;
		int ret = dlfs_readdir(txn, d, 0, add, w, err);
		if (!ret && w->ret)
			ret = w->ret == -ENOMEM
				      ? dlfs_err_set(err, -ENOMEM,
						     "out of memory")
				      : dlfs_err_set(err, w->ret,
						     "directory %llu: %s",
						     (unsigned long long)d,
						     w->ret == -EOVERFLOW
							     ? "too many entries"
							     : "a damaged name");
		if (!ret)
			ret = own_search(txn, p, d, err);
		if (ret)
			return ret;
	}
	size_t nr = (p->names.n >> RADIX_BITS) + 2;
	if (!(p->radix = malloc(nr * sizeof(*p->radix))))
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	for (size_t r = 0; r < nr; r++) {
		uint64_t ord = (uint64_t)r << RADIX_BITS;
		p->radix[r] = ord >= p->names.n
				      ? (uint32_t)(p->n_dirs ? p->n_dirs - 1 : 0)
				      : parent_in(p, (uint32_t)ord, 0,
						  p->n_dirs) - 1;
	}
	uint32_t *chain = malloc((p->n_dirs ? p->n_dirs : 1) * sizeof(*chain));
	if (!chain)
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	for (uint64_t d = 1; d <= p->n_dirs; d++)
		inherit_search(p, d, chain);
	free(chain);
	p->all = 0111;
	for (uint64_t f = 0; f < p->n_files; f++)
		if (p->ford[f] != NONE)
			p->all &= p->search[parent_of(p, p->ford[f]) - 1];
	p->all_len = sum_all(p, w);
	dir_paths(p, dpath_max);
	return 0;
}

int dlfs_paths_build(struct dlfs_txn *txn, const struct dlfs_info *info,
		     struct dlfs_paths **out, struct dlfs_err *err)
{
	return dlfs_paths_build_max(txn, info, UINT64_C(64) << 20, out, err);
}

int dlfs_paths_build_max(struct dlfs_txn *txn, const struct dlfs_info *info,
			 uint64_t dpath_max, struct dlfs_paths **out,
			 struct dlfs_err *err)
{
	const struct dlfs_super_rec *s = &info->super;
	*out = NULL;
	if (s->n_dirs >= NONE || s->n_files >= NONE)
		return dlfs_err_set(err, -EOVERFLOW, "too many inodes");
	struct dlfs_paths *p = calloc(1, sizeof(*p));
	if (!p)
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	p->n_dirs = s->n_dirs;
	p->first_file = s->first_file_ino;
	p->n_inodes = s->n_inodes;
	p->n_files = s->n_files;
	size_t nd = s->n_dirs ? s->n_dirs : 1, nf = s->n_files ? s->n_files : 1;
	p->dir_ord = malloc(nd * sizeof(*p->dir_ord));
	p->dir_parent = calloc(nd, sizeof(*p->dir_parent));
	p->dstart = calloc(nd, sizeof(*p->dstart));
	p->ford = malloc(nf * sizeof(*p->ford));
	p->search = malloc(nd);
	struct walk w = {.p = p, .txn = txn,
			 .bound = !!(s->features & DLFS_FEATURE(PATH_BOUND)),
			 .files = calloc(nd, sizeof(uint64_t)),
			 .name_sum = calloc(nd, sizeof(uint64_t))};
	int ret;
	if (!p->dir_ord || !p->dir_parent || !p->dstart || !p->ford ||
	    !p->search || !w.files || !w.name_sum) {
		ret = dlfs_err_set(err, -ENOMEM, "out of memory");
	} else {
		memset(p->dir_ord, 0xff, nd * sizeof(*p->dir_ord));
		memset(p->ford, 0xff, nf * sizeof(*p->ford));
		ret = build(txn, p, &w, dpath_max, err);
	}
	free(w.files);
	free(w.name_sum);
	if (ret) {
		dlfs_paths_free(p);
		return ret;
	}
	*out = p;
	return 0;
}

void dlfs_paths_free(struct dlfs_paths *p)
{
	if (!p)
		return;
	names_free(&p->names);
	free(p->dir_ord);
	free(p->dir_parent);
	free(p->dstart);
	free(p->radix);
	free(p->dpath);
	free(p->doff);
	free(p->ford);
	free(p->search);
	free(p);
}

uint64_t dlfs_paths_unbound(const struct dlfs_paths *p, const char **msg)
{
	*msg = p->unbound_msg;
	return p->unbound;
}

int dlfs_paths_name(const struct dlfs_paths *p, uint64_t ino, char *buf)
{
	uint32_t ord;
	uint64_t parent;
	if (locate(p, ino, &ord, &parent))
		return -ENOENT;
	uint8_t name[NAME_BUF];
	size_t n = names_get(&p->names, ord, name);
	memcpy(buf, name, n);
	buf[n] = '\0';
	return (int)n;
}

uint64_t dlfs_paths_parent(const struct dlfs_paths *p, uint64_t ino)
{
	uint32_t ord;
	uint64_t parent;
	return locate(p, ino, &ord, &parent) ? 0 : parent;
}

int dlfs_paths_get(const struct dlfs_paths *p, uint64_t ino, char *buf,
		   size_t len)
{
	uint8_t name[NAME_BUF];
	if (!len)
		return -ENAMETOOLONG;
	if (p->dpath && ino >= p->first_file && ino <= p->n_inodes) {
		/* A file: its directory's path, then its name. */
		uint32_t ord = p->ford[ino - p->first_file];
		if (ord == NONE)
			return -ENOENT;
		uint64_t d = parent_of(p, ord);
		size_t dl = (size_t)(p->doff[d] - p->doff[d - 1]);
		size_t n = names_get(&p->names, ord, name);
		size_t need = dl + (d != 1) + n;
		if (d != 1 && !dl)
			return -ENOENT; /* the walk missed the directory */
		if (need + 1 > len)
			return -ENAMETOOLONG;
		memcpy(buf, p->dpath + p->doff[d - 1], dl);
		if (d != 1)
			buf[dl++] = '/';
		memcpy(buf + dl, name, n);
		buf[need] = '\0';
		return (int)need;
	}
	/* Fill from the end, then move the path to the front. */
	size_t at = len;
	buf[--at] = '\0';
	for (int depth = 0; ino != 1; depth++) {
		uint32_t ord;
		if (depth > 4096 || locate(p, ino, &ord, &ino))
			return -ENOENT;
		size_t n = names_get(&p->names, ord, name);
		if (at < n + (at < len - 1 ? 1u : 0u))
			return -ENAMETOOLONG;
		if (at < len - 1)
			buf[--at] = '/';
		at -= n;
		memcpy(buf + at, name, n);
	}
	size_t n = len - 1 - at;
	memmove(buf, buf + at, n + 1);
	return (int)n;
}

/*
 * Rendering a list is a walk of random files over tables far bigger than
 * the CPU's caches: each path is three dependent loads (the file's
 * ordinal, its block, the block's bytes), each a miss. Done a batch at a
 * time, stage by stage with prefetches, the misses of a batch overlap
 * instead of following one another.
 */
#define BATCH 32

int dlfs_paths_lines(const struct dlfs_paths *p, const uint64_t *ino,
		     size_t n, char *buf, size_t cap, size_t *len)
{
	size_t at = 0;
	for (size_t i0 = 0; i0 < n; i0 += BATCH) {
		size_t m = n - i0 < BATCH ? n - i0 : BATCH;
		const uint64_t *in = ino + i0;
		for (size_t i = 0; i < m; i++)
			if (in[i] >= p->first_file && in[i] <= p->n_inodes)
				__builtin_prefetch(&p->ford[in[i] - p->first_file]);
		for (size_t i = 0; i < m; i++)
			if (in[i] >= p->first_file && in[i] <= p->n_inodes) {
				uint32_t o = p->ford[in[i] - p->first_file];
				if (o != NONE)
					__builtin_prefetch(&p->names.block[o / NB]);
			}
		for (size_t i = 0; i < m; i++)
			if (in[i] >= p->first_file && in[i] <= p->n_inodes) {
				uint32_t o = p->ford[in[i] - p->first_file];
				if (o == NONE)
					continue;
				uint64_t b = p->names.block[o / NB];
				const uint8_t *q =
					p->names.slabs[b >> 32] + (uint32_t)b;
				__builtin_prefetch(q);
				__builtin_prefetch(q + 64);
			}
		for (size_t i = 0; i < m; i++) {
			int k = dlfs_paths_get(p, in[i], buf + at, cap - at);
			if (k < 0)
				return k;
			buf[at + (size_t)k] = '\n';
			at += (size_t)k + 1;
		}
	}
	*len = at;
	return 0;
}

int64_t dlfs_paths_len(const struct dlfs_paths *p, uint64_t ino)
{
	uint8_t name[NAME_BUF];
	int64_t total = 0;
	for (int depth = 0; ino != 1; depth++) {
		uint32_t ord;
		if (depth > 4096 || locate(p, ino, &ord, &ino))
			return -ENOENT;
		total += (int64_t)names_get(&p->names, ord, name) +
			 (depth ? 1 : 0);
	}
	return total;
}

int64_t dlfs_paths_all_len(const struct dlfs_paths *p)
{
	return p->all_len;
}

unsigned dlfs_paths_search(const struct dlfs_paths *p, uint64_t ino)
{
	if (ino == 0)
		return p->all;
	uint32_t ord;
	uint64_t parent;
	if (locate(p, ino, &ord, &parent) || parent < 1 ||
	    parent > p->n_dirs)
		return 0;
	return p->search[parent - 1];
}

size_t dlfs_paths_bytes(const struct dlfs_paths *p)
{
	size_t nd = p->n_dirs ? p->n_dirs : 1;
	return sizeof(*p) + p->names.n_slabs * (size_t)SLAB +
	       p->names.cap_slabs * sizeof(uint8_t *) +
	       p->names.cap_blocks * sizeof(uint64_t) + nd * 13 +
	       ((p->names.n >> RADIX_BITS) + 2) * sizeof(uint32_t) +
	       (p->dpath ? p->doff[p->n_dirs] + 1 +
				   (p->n_dirs + 1) * sizeof(uint64_t)
			 : 0) +
	       (p->n_files ? p->n_files : 1) * sizeof(uint32_t);
}
