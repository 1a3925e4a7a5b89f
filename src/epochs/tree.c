/* The tree view of an epoch: see tree.h. */
#include "tree.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util.h"

/* One directory's view in one epoch. */
struct listing {
	uint64_t e, d, tick; /* tick 0: unused */
	uint64_t *sub;       /* subdirectories, in index order */
	uint32_t *name_off;  /* [k] .. [k + 1]: sub[k]'s name in names */
	char *names;
	size_t n_sub, cap_sub, cap_off, names_len, names_cap;
	int full; /* the collector ran out of memory */
	uint64_t *file; /* while building: the files it lists */
	size_t n_file, cap_file;
	uint64_t *j;    /* its samples' positions, ascending */
	size_t n_j;
	const struct dlfs_paths *paths; /* while building */
};

struct dlfs_tree {
	struct dlfs_views *views;
	pthread_mutex_t mu; /* guards the listings */
	struct listing l[DLFS_TREE_KEEP];
	uint64_t tick;
};

int dlfs_tree_new(struct dlfs_views *views, struct dlfs_tree **out)
{
	struct dlfs_tree *t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->views = views;
	pthread_mutex_init(&t->mu, NULL);
	*out = t;
	return 0;
}

static void listing_clear(struct listing *l)
{
	free(l->sub);
	free(l->name_off);
	free(l->names);
	free(l->file);
	free(l->j);
	memset(l, 0, sizeof(*l));
}

void dlfs_tree_free(struct dlfs_tree *t)
{
	if (!t)
		return;
	for (unsigned i = 0; i < DLFS_TREE_KEEP; i++)
		listing_clear(&t->l[i]);
	pthread_mutex_destroy(&t->mu);
	free(t);
}

/* An entry the paths table gives its inode: the table skipped entries
 * whose inode's record is another name's (dlfs_paths_build), and keeps
 * one name an inode, so a damaged entry never lists an inode twice or
 * under a name not its own. */
static int named_here(const struct listing *l, const struct dlfs_dirent *de)
{
	char nm[DLFS_NAME_MAX + 1];
	return dlfs_paths_parent(l->paths, de->ino) == l->d &&
	       dlfs_paths_name(l->paths, de->ino, nm) == (int)de->name_len &&
	       !memcmp(nm, de->name, de->name_len);
}

/* A dlfs_dir_cb: subdirectories with their names, and files. */
static int collect(void *arg, const struct dlfs_dirent *de)
{
	struct listing *l = arg;
	if (!named_here(l, de))
		return 0;
	if (de->type == S_IFDIR) {
		if (dlfs_grow((void **)&l->sub, &l->cap_sub, l->n_sub + 1,
			 sizeof(*l->sub)) ||
		    dlfs_grow((void **)&l->name_off, &l->cap_off, l->n_sub + 2,
			 sizeof(*l->name_off)) ||
		    dlfs_grow((void **)&l->names, &l->names_cap,
			 l->names_len + de->name_len, 1))
			return l->full = 1;
		if (!l->n_sub)
			l->name_off[0] = 0;
		memcpy(l->names + l->names_len, de->name, de->name_len);
		l->names_len += de->name_len;
		l->sub[l->n_sub++] = de->ino;
		l->name_off[l->n_sub] = (uint32_t)l->names_len;
	} else if (de->type == S_IFREG) {
		if (dlfs_grow((void **)&l->file, &l->cap_file, l->n_file + 1,
			 sizeof(*l->file)))
			return l->full = 1;
		l->file[l->n_file++] = de->ino;
	}
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

static int is_dir(struct dlfs_txn *txn, uint64_t d, struct dlfs_err *err)
{
	struct dlfs_inode in;
	int ret = dlfs_stat(txn, d, &in, err);
	if (ret)
		return ret;
	return S_ISDIR(in.mode) ? 0 : -ENOTDIR;
}

/* Build l as directory d's view in epoch e (caller holds mu). */
static int build(struct dlfs_tree *t, struct dlfs_txn *txn, uint64_t e,
		 uint64_t d, struct listing *l, struct dlfs_err *err)
{
	const struct dlfs_paths *paths;
	int ret = is_dir(txn, d, err);
	if (!ret)
		ret = dlfs_views_paths(t->views, txn, &paths, err);
	if (ret)
		return ret;
	l->e = e;
	l->d = d;
	l->paths = paths;
	ret = dlfs_readdir(txn, d, 0, collect, l, err);
	if (!ret && (l->full || l->names_len > UINT32_MAX))
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	if (ret)
		return ret;
	size_t n = l->n_file; /* collect kept each under its one name */
	if (n && !(l->j = malloc(n * sizeof(*l->j))))
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	if (n && (ret = dlfs_views_positions(t->views, txn, e, l->file, n,
					     l->j, err)))
		return ret;
	if (n)
		qsort(l->j, n, sizeof(*l->j), cmp_u64);
	while (n && l->j[n - 1] == UINT64_MAX) /* not in the share: last */
		n--;
	l->n_j = n;
	free(l->file);
	l->file = NULL;
	l->n_file = l->cap_file = 0;
	return 0;
}

/* The listing of (e, d), built if not kept (caller holds mu). */
static int listing_of(struct dlfs_tree *t, struct dlfs_txn *txn, uint64_t e,
		      uint64_t d, struct listing **out, struct dlfs_err *err)
{
	struct listing *old = &t->l[0];
	for (unsigned i = 0; i < DLFS_TREE_KEEP; i++) {
		struct listing *l = &t->l[i];
		if (l->tick && l->e == e && l->d == d) {
			l->tick = ++t->tick;
			*out = l;
			return 0;
		}
		if (l->tick < old->tick)
			old = l;
	}
	listing_clear(old);
	int ret = build(t, txn, e, d, old, err);
	if (ret) {
		listing_clear(old);
		return ret;
	}
	old->tick = ++t->tick;
	*out = old;
	return 0;
}

int dlfs_tree_entry(struct dlfs_tree *t, struct dlfs_txn *txn, uint64_t e,
		    uint64_t d, uint64_t i, struct dlfs_tree_ent *out,
		    struct dlfs_err *err)
{
	struct listing *l;
	/* A kept listing is of a directory: only a new one is checked. */
	pthread_mutex_lock(&t->mu);
	int ret = listing_of(t, txn, e, d, &l, err);
	if (!ret && i < l->n_sub) {
		size_t a = l->name_off[i], b = l->name_off[i + 1];
		out->dir = 1;
		out->ino = l->sub[i];
		out->j = 0;
		memcpy(out->name, l->names + a, b - a);
		out->name[b - a] = '\0';
	} else if (!ret && i - l->n_sub < l->n_j) {
		out->dir = 0;
		out->ino = 0;
		out->j = l->j[i - l->n_sub];
		out->name[0] = '\0';
	} else if (!ret) {
		ret = 1;
	}
	pthread_mutex_unlock(&t->mu);
	return ret;
}

int dlfs_tree_holds(struct dlfs_tree *t, struct dlfs_txn *txn, uint64_t e,
		    uint64_t d, uint64_t j, struct dlfs_err *err)
{
	const struct dlfs_paths *paths;
	uint64_t ino;
	int ret = dlfs_views_sample(t->views, txn, e, j, 0, &ino, err);
	if (!ret)
		ret = dlfs_views_paths(t->views, txn, &paths, err);
	if (ret)
		return ret;
	return dlfs_paths_parent(paths, ino) == d ? 0 : -ENOENT;
}

int dlfs_tree_parent(struct dlfs_tree *t, struct dlfs_txn *txn, uint64_t d,
		     uint64_t *parent, struct dlfs_err *err)
{
	const struct dlfs_paths *paths;
	int ret = dlfs_views_paths(t->views, txn, &paths, err);
	if (ret)
		return ret;
	*parent = dlfs_paths_parent(paths, d);
	return *parent ? 0 : -ENOENT;
}
