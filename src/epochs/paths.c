/* Inode paths: see paths.h. */
#include "paths.h"

#include <stdlib.h>
#include <string.h>

struct ent {
	const char *name;
	uint32_t len;
	uint32_t parent; /* a directory: inodes 1 .. n_dirs */
};

struct dlfs_paths {
	uint64_t n_dirs, first_file, n_inodes;
	struct ent *dirs;  /* [ino - 1], ino <= n_dirs */
	struct ent *files; /* [ino - first_file] */
	uint8_t *search;   /* [ino - 1]: SEARCH_* classes, see search_of */
	unsigned all;      /* classes that may search every file's parent */
};

/* search[d]: the S_IX* bits of every directory from the root to d, ANDed;
 * UNKNOWN while the walk has not reached d, CYCLE while it is on it. */
#define UNKNOWN 0x80
#define CYCLE 0x20 /* neither is an S_IX* bit (0111 is 0x49) */

static struct ent *slot(struct dlfs_paths *p, uint64_t ino)
{
	if (ino >= 1 && ino <= p->n_dirs)
		return &p->dirs[ino - 1];
	if (ino >= p->first_file && ino <= p->n_inodes)
		return &p->files[ino - p->first_file];
	return NULL; /* a symlink, or out of range */
}

struct walk {
	struct dlfs_paths *p;
	uint64_t dir;
};

static int add(void *arg, const struct dlfs_dirent *d)
{
	struct walk *w = arg;
	struct ent *e = slot(w->p, d->ino);
	if (e) {
		e->name = d->name;
		e->len = (uint32_t)d->name_len;
		e->parent = (uint32_t)w->dir;
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
		uint64_t up = p->dirs[at - 1].parent;
		if (at == 1) {
			acc = 0111;
			break;
		}
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

int dlfs_paths_build(struct dlfs_txn *txn, const struct dlfs_info *info,
		     struct dlfs_paths **out, struct dlfs_err *err)
{
	const struct dlfs_super_rec *s = &info->super;
	*out = NULL;
	if (s->n_dirs > UINT32_MAX)
		return dlfs_err_set(err, -EOVERFLOW, "too many directories");
	struct dlfs_paths *p = calloc(1, sizeof(*p));
	if (!p)
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	p->n_dirs = s->n_dirs;
	p->first_file = s->first_file_ino;
	p->n_inodes = s->n_inodes;
	p->dirs = calloc(s->n_dirs ? s->n_dirs : 1, sizeof(*p->dirs));
	p->files = calloc(s->n_files ? s->n_files : 1, sizeof(*p->files));
	p->search = malloc(s->n_dirs ? s->n_dirs : 1);
	if (!p->dirs || !p->files || !p->search) {
		dlfs_paths_free(p);
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	}
	for (uint64_t d = 1; d <= s->n_dirs; d++) {
		struct walk w = {p, d};
		int ret = dlfs_readdir(txn, d, 0, add, &w, err);
		if (!ret)
			ret = own_search(txn, p, d, err);
		if (ret) {
			dlfs_paths_free(p);
			return ret;
		}
	}
	uint32_t *chain = malloc((s->n_dirs ? s->n_dirs : 1) * sizeof(*chain));
	if (!chain) {
		dlfs_paths_free(p);
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	}
	for (uint64_t d = 1; d <= s->n_dirs; d++)
		inherit_search(p, d, chain);
	free(chain);
	p->all = 0111;
	for (uint64_t f = 0; f < s->n_files; f++)
		if (p->files[f].name)
			p->all &= p->search[p->files[f].parent - 1];
	*out = p;
	return 0;
}

void dlfs_paths_free(struct dlfs_paths *p)
{
	if (!p)
		return;
	free(p->dirs);
	free(p->files);
	free(p->search);
	free(p);
}

const char *dlfs_paths_name(const struct dlfs_paths *p, uint64_t ino,
			    size_t *len)
{
	const struct ent *e = slot((struct dlfs_paths *)p, ino);
	if (!e || !e->name)
		return NULL;
	*len = e->len;
	return e->name;
}

int dlfs_paths_get(const struct dlfs_paths *p, uint64_t ino, char *buf,
		   size_t len)
{
	/* Fill from the end, then move the path to the front. */
	size_t at = len;
	if (!len)
		return -ENAMETOOLONG;
	buf[--at] = '\0';
	for (int depth = 0; ino != 1; depth++) {
		const struct ent *e = slot((struct dlfs_paths *)p, ino);
		if (!e || !e->name || depth > 4096)
			return -ENOENT;
		if (at < e->len + (at < len - 1 ? 1u : 0u))
			return -ENAMETOOLONG;
		if (at < len - 1)
			buf[--at] = '/';
		at -= e->len;
		memcpy(buf + at, e->name, e->len);
		ino = e->parent;
	}
	size_t n = len - 1 - at;
	memmove(buf, buf + at, n + 1);
	return (int)n;
}

unsigned dlfs_paths_search(const struct dlfs_paths *p, uint64_t ino)
{
	if (ino == 0)
		return p->all;
	const struct ent *e = slot((struct dlfs_paths *)p, ino);
	if (!e || !e->name || e->parent < 1 || e->parent > p->n_dirs)
		return 0;
	return p->search[e->parent - 1];
}
