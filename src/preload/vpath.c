/*
 * vpath: the walk of a path through the prefix (see vpath.h).
 *
 * The walk keeps three things: out, the absolute path of where it is
 * (canonical: no ".", "..", "//" or symlink in it); rest, what is left to
 * walk (a symlink's target is put in front of it), with p at its next
 * component; and, inside the dataset, the node at out. ".." inside the
 * dataset finds the parent by walking out's canonical path again from the
 * root (the lookups are cached), so the walk keeps no stack of nodes.
 *
 * Each step returns 0 (go on), STOP (the answer is known: what is left
 * goes to the kernel as it is), or a negative errno.
 */
#include "vpath.h"

#include <errno.h>
#include <string.h>

#define STOP 1

struct walk {
	const struct dlfs_vp_root *root;
	const struct dlfs_vp_ops *ops;
	int flags;
	char *out; /* res->path */
	size_t out_len;
	char *rest; /* REST_CAP bytes */
	char *p;    /* the next component in rest */
	int links;
	int in_ds;   /* out is the prefix or under it */
	int entered; /* the walk has been in the dataset */
	int have_root;
	uint64_t root_ino;
	struct stat root_st;
	uint64_t ino; /* inside: the node at out, its attributes, and */
	struct stat st;
	int vol;      /* what its lookup said: volatile (vpath.h) */
	char target[PATH_MAX]; /* a symlink's */
};

#define REST_CAP (2 * PATH_MAX)

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

/* Has s a ".." component? */
static int has_dotdot(const char *s)
{
	while (*s) {
		const char *e = strchrnul(s, '/');
		if (is_dotdot(s, (size_t)(e - s)))
			return 1;
		s = *e ? e + 1 : e;
	}
	return 0;
}

/* Is out "/" or a directory above the prefix, from where a walk that only
 * goes down can still reach it? */
static int above_prefix(const struct walk *w)
{
	const struct dlfs_vp_root *r = w->root;
	return w->out_len == 1 ||
	       (w->out_len < r->prefix_len &&
		!memcmp(r->prefix, w->out, w->out_len) &&
		r->prefix[w->out_len] == '/');
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

static void out_reset(struct walk *w)
{
	strcpy(w->out, "/");
	w->out_len = 1;
}

static int get_root(struct walk *w)
{
	if (w->have_root)
		return 0;
	int ret = w->ops->root(w->ops->ctx, &w->root_ino, &w->root_st);
	w->have_root = !ret;
	return ret;
}

/* out has just become the prefix. */
static int enter_root(struct walk *w)
{
	int ret = get_root(w);
	if (ret)
		return ret;
	w->in_ds = 1;
	w->entered = 1;
	w->ino = w->root_ino;
	w->st = w->root_st;
	w->vol = 0;
	return 0;
}

/* Put target (len bytes) in front of tail (which is in rest):
 * rest = target "/" tail (target alone when tail is empty: the rest may
 * go to the kernel as it is, where a slash would ask for a directory),
 * and the walk goes on from its start. */
static int splice(struct walk *w, const char *target, size_t len,
		  const char *tail)
{
	size_t tl = strlen(tail), sep = tl > 0;
	if (len + sep + tl + 1 > REST_CAP)
		return -ENAMETOOLONG;
	memmove(w->rest + len + sep, tail, tl + 1);
	memcpy(w->rest, target, len);
	if (sep)
		w->rest[len] = '/';
	w->p = w->rest;
	if (target[0] == '/') {
		out_reset(w);
		w->in_ds = 0;
	}
	return 0;
}

/* The answer is a real path: out, then the rest from p as it is (the
 * kernel folds its "." and "..", and follows its symlinks). A walk that
 * never entered the dataset is PASS: the caller's own path is the same
 * file. */
static int hand_over(struct walk *w, struct dlfs_vp_res *res)
{
	if (!w->entered)
		return STOP;
	while (*w->p == '/')
		w->p++;
	if (*w->p && out_push(w, w->p, strlen(w->p)))
		return -ENAMETOOLONG;
	res->kind = DLFS_VP_REAL;
	return STOP;
}

/* A canonical virtual path (no symlinks in it) to its node, into the
 * walk's node. */
static int walk_canonical(struct walk *w, const char *path)
{
	int ret = get_root(w);
	if (ret)
		return ret;
	const char *p = path + w->root->prefix_len;
	w->ino = w->root_ino;
	w->st = w->root_st;
	w->vol = 0;
	while (*p) {
		while (*p == '/')
			p++;
		const char *e = strchrnul(p, '/');
		if (e == p)
			break;
		ret = w->ops->lookup(w->ops->ctx, w->ino, w->vol, p,
				     (size_t)(e - p), &w->ino, &w->st, &w->vol);
		if (ret)
			return ret;
		p = e;
	}
	return 0;
}

/* ".." inside the dataset: the parent node, or out of the dataset's root
 * to the real directory that holds PREFIX. */
static int up_inside(struct walk *w)
{
	int at_root = w->out_len == w->root->prefix_len;
	out_pop(w);
	if (at_root) {
		w->in_ds = 0;
		return 0;
	}
	return walk_canonical(w, w->out);
}

/* ".." outside the dataset. Before the walk has entered it, lexical (the
 * prefix is a name, not a directory on disk). After, out is a real path
 * and its parent is the kernel's: a real symlink at out is followed
 * first, and a file or a missing name is the kernel's to answer. */
static int up_outside(struct walk *w, char *e, struct dlfs_vp_res *res)
{
	long n = 0;
	if (w->entered && w->out_len > 1)
		n = w->ops->real_link(w->ops->ctx, w->out, w->target,
				      sizeof(w->target));
	if (n < 0 || (size_t)n >= sizeof(w->target))
		return hand_over(w, res);
	out_pop(w); /* a symlink's relative target is relative to here */
	if (n == 0) {
		w->p = e;
		return 0;
	}
	if (++w->links > DLFS_VP_MAX_LINKS)
		return -ELOOP;
	return splice(w, w->target, (size_t)n, w->p); /* the ".." stays */
}

/* A name outside the dataset: lexical, until it cannot lead back to the
 * prefix (out is not above it and no ".." is left). */
static int down_outside(struct walk *w, const char *c, size_t n,
			struct dlfs_vp_res *res)
{
	if (!above_prefix(w) && !has_dotdot(c))
		return hand_over(w, res);
	int ret = out_push(w, c, n);
	if (ret)
		return ret;
	w->p = (char *)c + n;
	if (w->out_len == w->root->prefix_len &&
	    !memcmp(w->out, w->root->prefix, w->out_len))
		return enter_root(w);
	return 0;
}

/* A name inside the dataset: its node, or the symlink's target in front
 * of the rest. */
static int down_inside(struct walk *w, const char *c, size_t n, int follow)
{
	uint64_t ino;
	struct stat st;
	int vol = 0;
	int ret = w->ops->lookup(w->ops->ctx, w->ino, w->vol, c, n, &ino, &st,
				 &vol);
	if (ret)
		return ret;
	if (S_ISLNK(st.st_mode) && follow) {
		if (++w->links > DLFS_VP_MAX_LINKS)
			return -ELOOP;
		long tl = w->ops->readlink(w->ops->ctx, ino, w->target,
					   sizeof(w->target));
		if (tl < 0)
			return (int)tl;
		if (tl == 0)
			return -ENOENT;
		/* The trailing slash of "link/" stays with the rest. */
		return splice(w, w->target, (size_t)tl, c + n);
	}
	if ((ret = out_push(w, c, n)))
		return ret;
	w->ino = ino;
	w->st = st;
	w->vol = vol;
	w->p = (char *)c + n;
	return 0;
}

/* One component, c (n bytes) at w->p. */
static int step(struct walk *w, struct dlfs_vp_res *res)
{
	char *c = w->p;
	char *e = strchrnul(c, '/');
	size_t n = (size_t)(e - c);
	const char *after = e;
	while (*after == '/')
		after++;
	int last = !*after, trail = last && *e == '/';

	if (w->in_ds && !S_ISDIR(w->st.st_mode))
		return -ENOTDIR;
	if (is_dot(c, n)) {
		w->p = e;
		return 0;
	}
	if (is_dotdot(c, n)) {
		if (!w->in_ds)
			return up_outside(w, e, res);
		w->p = e;
		return up_inside(w);
	}
	if (!w->in_ds)
		return down_outside(w, c, n, res);
	return down_inside(w, c, n,
			   !last || trail || !(w->flags & DLFS_VP_NOFOLLOW));
}

/* Where the walk starts: "/", or the base of a relative path.
 * @return 0, STOP (relative to an unknown cwd: PASS), or -errno. */
static int start(struct walk *w, const struct dlfs_vp_base *base,
		 const char *path)
{
	size_t plen = strlen(path);
	if (!plen)
		return -ENOENT;
	if (plen >= PATH_MAX)
		return -ENAMETOOLONG;
	memcpy(w->rest, path, plen + 1);
	w->p = w->rest;
	out_reset(w);
	if (path[0] == '/')
		return 0;
	if (!base)
		return STOP;
	size_t bl = strlen(base->path);
	if (bl >= PATH_MAX)
		return -ENAMETOOLONG;
	memcpy(w->out, base->path, bl + 1);
	w->out_len = bl;
	if (base->ino) {
		w->in_ds = w->entered = 1;
		w->ino = base->ino;
		w->st = base->st;
		w->vol = base->vol;
	}
	return 0;
}

/* The walk is over: the node, or the real path it left the dataset for. */
static int finish(struct walk *w, const char *path, struct dlfs_vp_res *res)
{
	size_t plen = strlen(path);
	int trail = plen > 0 && path[plen - 1] == '/';
	if (w->in_ds) {
		/* "file/" names a directory that is not there. */
		if (trail && !S_ISDIR(w->st.st_mode))
			return -ENOTDIR;
		res->kind = DLFS_VP_OURS;
		res->ino = w->ino;
		res->st = w->st;
		res->vol = w->vol;
		return 0;
	}
	if (w->entered) {
		if (trail && w->out_len > 1) {
			int ret = out_push(w, "", 0);
			if (ret)
				return ret;
		}
		res->kind = DLFS_VP_REAL;
	}
	return 0;
}

int dlfs_vp_resolve(const struct dlfs_vp_root *root,
		    const struct dlfs_vp_ops *ops,
		    const struct dlfs_vp_base *base, const char *path,
		    int flags, struct dlfs_vp_res *res)
{
	char rest[REST_CAP];
	struct walk w = {.root = root, .ops = ops, .flags = flags,
			 .out = res->path, .rest = rest};
	res->kind = DLFS_VP_PASS;
	res->vol = 0;
	int ret = start(&w, base, path);
	while (!ret) {
		while (*w.p == '/')
			w.p++;
		if (!*w.p)
			return finish(&w, path, res);
		ret = step(&w, res);
	}
	return ret < 0 ? ret : 0;
}
