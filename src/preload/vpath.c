/*
 * vpath: the walk of a path through the prefix (see vpath.h).
 *
 * The walk keeps three things: out, the absolute path of where it is
 * (canonical: no ".", "..", "//" or symlink in it); rest, what is left to
 * walk (a symlink's target is put in front of it); and, inside the
 * dataset, the stack of nodes from the dataset's root (or from the base
 * directory, when the walk started there) to where it is.
 */
#include "vpath.h"

#include <errno.h>
#include <string.h>

#define MAX_DEPTH 1024 /* nodes deep inside the dataset */

struct walk {
	const struct dlfs_vp_root *root;
	const struct dlfs_vp_ops *ops;
	char *out; /* res->path */
	size_t out_len;
	int in_ds;   /* out is the prefix or under it */
	int entered; /* the walk has been in the dataset */
	int partial; /* stack[0] is the base directory, not the root */
	int depth;
	int st_valid; /* st is the attributes of stack[depth - 1] */
	uint64_t stack[MAX_DEPTH];
	struct stat st;
};

static int is_dot(const char *c, size_t n)
{
	return n == 1 && c[0] == '.';
}

static int is_dotdot(const char *c, size_t n)
{
	return n == 2 && c[0] == '.' && c[1] == '.';
}

int dlfs_vp_maybe_ours(const struct dlfs_vp_root *root, const char *path)
{
	if (path[0] == '/' && !strncmp(path, root->prefix, root->prefix_len) &&
	    (path[root->prefix_len] == '/' || !path[root->prefix_len]))
		return 1;
	int abs = path[0] == '/';
	for (const char *p = path; *p;) {
		const char *e = strchrnul(p, '/');
		size_t n = (size_t)(e - p);
		if (is_dotdot(p, n) || (abs && (is_dot(p, n) ||
						 (n == 0 && p != path))))
			return 1;
		p = *e ? e + 1 : e;
	}
	return 0;
}

/* out without its last component ("/" stays "/"). */
static void out_pop(struct walk *w)
{
	while (w->out_len > 1 && w->out[w->out_len - 1] != '/')
		w->out_len--;
	if (w->out_len > 1)
		w->out_len--;
	w->out[w->out_len] = '\0';
}

static int out_push(struct walk *w, const char *c, size_t n)
{
	size_t sep = w->out_len > 1;
	if (w->out_len + sep + n >= PATH_MAX)
		return -ENAMETOOLONG;
	if (sep)
		w->out[w->out_len++] = '/';
	memcpy(w->out + w->out_len, c, n);
	w->out_len += n;
	w->out[w->out_len] = '\0';
	return 0;
}

static void enter_root(struct walk *w)
{
	w->in_ds = 1;
	w->entered = 1;
	w->partial = 0;
	w->depth = 1;
	w->stack[0] = w->root->ino;
	w->st = w->root->st;
	w->st_valid = 1;
}

/* A canonical virtual path (no symlinks in it) to its node, for ".."
 * above the base directory. */
static int walk_canonical(struct walk *w, const char *path, uint64_t *ino,
			  struct stat *st)
{
	const char *p = path + w->root->prefix_len;
	*ino = w->root->ino;
	*st = w->root->st;
	while (*p) {
		while (*p == '/')
			p++;
		const char *e = strchrnul(p, '/');
		if (e == p)
			break;
		int ret = w->ops->lookup(w->ops->ctx, *ino, p, (size_t)(e - p),
					 ino, st);
		if (ret)
			return ret;
		p = e;
	}
	return 0;
}

/* ".." inside the dataset. */
static int up(struct walk *w)
{
	if (w->depth == 1 && !w->partial) {
		w->in_ds = 0; /* out of the dataset's root */
		out_pop(w);
		return 0;
	}
	out_pop(w);
	if (w->depth > 1) {
		w->depth--;
		w->st_valid = 0;
		return 0;
	}
	/* Above the base directory: find the parent from the root. */
	uint64_t ino;
	int ret = walk_canonical(w, w->out, &ino, &w->st);
	if (ret)
		return ret;
	w->stack[0] = ino;
	w->st_valid = 1;
	w->partial = ino != w->root->ino;
	return 0;
}

static int cur_stat(struct walk *w)
{
	if (w->st_valid)
		return 0;
	if (w->stack[w->depth - 1] == w->root->ino) {
		w->st = w->root->st;
		w->st_valid = 1;
		return 0;
	}
	int ret = w->ops->getattr(w->ops->ctx, w->stack[w->depth - 1], &w->st);
	w->st_valid = !ret;
	return ret;
}

/* Put target (len bytes) in front of the rest after the current
 * component: rest = target "/" tail. */
static int splice(char *rest, size_t cap, const char *target, size_t len,
		  const char *tail)
{
	size_t tl = strlen(tail);
	if (len + 1 + tl + 1 > cap)
		return -ENAMETOOLONG;
	memmove(rest + len + 1, tail, tl + 1);
	memcpy(rest, target, len);
	rest[len] = '/';
	return 0;
}

int dlfs_vp_resolve(const struct dlfs_vp_root *root,
		    const struct dlfs_vp_ops *ops,
		    const struct dlfs_vp_base *base, const char *path,
		    int flags, struct dlfs_vp_res *res)
{
	struct walk w = {.root = root, .ops = ops, .out = res->path};
	char rest[2 * PATH_MAX], target[PATH_MAX];
	int links = 0, ret = 0;
	size_t plen = strlen(path);

	if (!plen)
		return -ENOENT;
	if (plen >= PATH_MAX)
		return -ENAMETOOLONG;
	res->kind = DLFS_VP_PASS;
	memcpy(rest, path, plen + 1);
	strcpy(w.out, "/");
	w.out_len = 1;
	if (path[0] != '/') {
		if (!base)
			return 0; /* relative to an unknown cwd: PASS */
		size_t bl = strlen(base->path);
		if (bl >= PATH_MAX)
			return -ENAMETOOLONG;
		memcpy(w.out, base->path, bl + 1);
		w.out_len = bl;
		if (base->ino) {
			w.in_ds = w.entered = 1;
			w.depth = 1;
			w.stack[0] = base->ino;
			w.st = base->st;
			w.st_valid = 1;
			w.partial = base->ino != root->ino;
		}
	}

	char *p = rest;
	for (;;) {
		while (*p == '/')
			p++;
		if (!*p)
			break;
		char *e = strchrnul(p, '/');
		size_t n = (size_t)(e - p);
		const char *after = e;
		while (*after == '/')
			after++;
		int last = !*after, trail = last && *e == '/';

		if (w.in_ds) {
			if ((ret = cur_stat(&w)))
				return ret;
			if (!S_ISDIR(w.st.st_mode))
				return -ENOTDIR;
		}
		if (is_dot(p, n)) {
			p = e;
			continue;
		}
		if (is_dotdot(p, n)) {
			if (w.in_ds) {
				if ((ret = up(&w)))
					return ret;
			} else {
				out_pop(&w);
			}
			p = e;
			continue;
		}
		if (!w.in_ds) {
			if ((ret = out_push(&w, p, n)))
				return ret;
			if (w.out_len == root->prefix_len &&
			    !memcmp(w.out, root->prefix, w.out_len))
				enter_root(&w);
			p = e;
			continue;
		}
		uint64_t ino;
		struct stat st;
		if ((ret = ops->lookup(ops->ctx, w.stack[w.depth - 1], p, n,
				       &ino, &st)))
			return ret;
		if (S_ISLNK(st.st_mode) &&
		    (!last || trail || !(flags & DLFS_VP_NOFOLLOW))) {
			if (++links > DLFS_VP_MAX_LINKS)
				return -ELOOP;
			long tl = ops->readlink(ops->ctx, ino, target,
						sizeof(target));
			if (tl < 0)
				return (int)tl;
			if (tl == 0)
				return -ENOENT;
			/* The target goes in front of what follows the link;
			 * the trailing slash of "link/" stays with it. */
			if ((ret = splice(rest, sizeof(rest), target,
					  (size_t)tl, e)))
				return ret;
			p = rest;
			if (target[0] == '/') {
				strcpy(w.out, "/");
				w.out_len = 1;
				w.in_ds = 0;
			}
			continue;
		}
		if (w.depth == MAX_DEPTH)
			return -ENAMETOOLONG;
		if ((ret = out_push(&w, p, n)))
			return ret;
		w.stack[w.depth++] = ino;
		w.st = st;
		w.st_valid = 1;
		p = e;
	}

	int trail = plen > 0 && path[plen - 1] == '/';
	if (w.in_ds) {
		if ((ret = cur_stat(&w)))
			return ret;
		/* "file/" names a directory that is not there. */
		if (trail && !S_ISDIR(w.st.st_mode))
			return -ENOTDIR;
		res->kind = DLFS_VP_OURS;
		res->ino = w.stack[w.depth - 1];
		res->st = w.st;
		return 0;
	}
	if (w.entered) {
		if (trail && w.out_len > 1) {
			if ((ret = out_push(&w, "", 0)))
				return ret;
		}
		res->kind = DLFS_VP_REAL;
	}
	return 0;
}
