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
};

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
	if (!p->dirs || !p->files) {
		dlfs_paths_free(p);
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	}
	for (uint64_t d = 1; d <= s->n_dirs; d++) {
		struct walk w = {p, d};
		int ret = dlfs_readdir(txn, d, 0, add, &w, err);
		if (ret) {
			dlfs_paths_free(p);
			return ret;
		}
	}
	*out = p;
	return 0;
}

void dlfs_paths_free(struct dlfs_paths *p)
{
	if (!p)
		return;
	free(p->dirs);
	free(p->files);
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
