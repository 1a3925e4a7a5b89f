/*
 * vpath: the walk of a path through the prefix, against a fake dataset:
 *
 *   /ds (prefix, ino 1)
 *     a/ (2)  a/f (3, file)  a/up -> ".." (4)  a/abs -> "/etc" (5)
 *     a/self -> "f" (6)  loop -> "loop" (7)  b/ (8)  b/c/ (9)
 *     b/c/back -> "../../a/f" (10)  out -> "../x/y" (11)
 *     in -> "/ds/a" (12)  m -> "/home/u/cur/../w.bin" (13)
 *     r -> "/home/u/rel/../z" (14)  pf -> "/etc/passwd/../x" (15)
 *     pd -> "/etc/passwd/." (16)  gone -> "/nope/../etc" (17)
 *     v/ (18)  v/w/ (19)  v/w/s (20, file)  v/up -> "../a" (21)
 *     v/w/top -> "/ds" (22): the server calls these volatile (its flag
 *     on their lookups)
 *
 * and a fake real file system for what is outside it:
 *
 *   /home/u/cur -> "/x/y"  /home/u/rel -> "sub/y"  /etc/passwd (a file)
 *   /nope (missing); every other path is a directory
 *
 * The volatile flag's way through the walk: each lookup must be told the
 * flag of the lookup that found its directory (the fake counts the walks
 * that tell it wrong), and the answer carries the flag of the node it
 * ends at, or of the base it stayed at. Mutations of vpath.c this
 * catches: down_inside telling the lookup 0 instead of w->vol (a wrong
 * parent flag), start() not taking base->vol ("." from a volatile base),
 * walk_canonical not carrying the flag (".." back into a volatile
 * directory), enter_root keeping the flag of where the walk was.
 */
#include <errno.h>
#include <string.h>

#include "tutil.h"

int t_failures;
#include "vpath.h"

struct node {
	uint64_t ino, parent;
	const char *name;
	mode_t type;
	const char *target;
	int vol;
};

static const struct node tree[] = {
	{2, 1, "a", S_IFDIR, NULL, 0},	    {3, 2, "f", S_IFREG, NULL, 0},
	{4, 2, "up", S_IFLNK, "..", 0},	    {5, 2, "abs", S_IFLNK, "/etc", 0},
	{6, 2, "self", S_IFLNK, "f", 0},	    {7, 1, "loop", S_IFLNK, "loop", 0},
	{8, 1, "b", S_IFDIR, NULL, 0},	    {9, 8, "c", S_IFDIR, NULL, 0},
	{10, 9, "back", S_IFLNK, "../../a/f", 0},
	{11, 1, "out", S_IFLNK, "../x/y", 0}, {12, 1, "in", S_IFLNK, "/ds/a", 0},
	{13, 1, "m", S_IFLNK, "/home/u/cur/../w.bin", 0},
	{14, 1, "r", S_IFLNK, "/home/u/rel/../z", 0},
	{15, 1, "pf", S_IFLNK, "/etc/passwd/../x", 0},
	{16, 1, "pd", S_IFLNK, "/etc/passwd/.", 0},
	{17, 1, "gone", S_IFLNK, "/nope/../etc", 0},
	{18, 1, "v", S_IFDIR, NULL, 1},	    {19, 18, "w", S_IFDIR, NULL, 1},
	{20, 19, "s", S_IFREG, NULL, 1},   {21, 18, "up", S_IFLNK, "../a", 1},
	{22, 19, "top", S_IFLNK, "/ds", 1},
};
#define N_NODES (sizeof(tree) / sizeof(tree[0]))

static int lookups, wrong_vol;

/* The server's flag of a directory (the root's is 0). */
static int vol_of(uint64_t ino)
{
	for (size_t i = 0; i < N_NODES; i++)
		if (tree[i].ino == ino)
			return tree[i].vol;
	return 0;
}

static void fill(const struct node *n, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = n->ino;
	st->st_mode = n->type | 0755;
}

static int f_lookup(void *ctx, uint64_t parent, int parent_vol,
		    const char *name, size_t len, uint64_t *ino,
		    struct stat *st, int *vol)
{
	(void)ctx;
	lookups++;
	if (parent_vol != vol_of(parent)) {
		fprintf(stderr, "lookup of %.*s in %llu told vol %d\n",
			(int)len, name, (unsigned long long)parent,
			parent_vol);
		wrong_vol++;
	}
	*vol = 0;
	for (size_t i = 0; i < N_NODES; i++)
		if (tree[i].parent == parent && strlen(tree[i].name) == len &&
		    !memcmp(tree[i].name, name, len)) {
			*ino = tree[i].ino;
			*vol = tree[i].vol;
			fill(&tree[i], st);
			return 0;
		}
	return -ENOENT;
}

static long f_readlink(void *ctx, uint64_t ino, char *buf, size_t size)
{
	(void)ctx;
	for (size_t i = 0; i < N_NODES; i++)
		if (tree[i].ino == ino && tree[i].target) {
			size_t n = strlen(tree[i].target);
			if (n > size)
				return -ENAMETOOLONG;
			memcpy(buf, tree[i].target, n);
			return (long)n;
		}
	return -EINVAL;
}

static int roots, root_err;

static int f_root(void *ctx, uint64_t *ino, struct stat *st)
{
	(void)ctx;
	roots++;
	if (root_err)
		return root_err;
	*ino = 1;
	memset(st, 0, sizeof(*st));
	st->st_ino = 1;
	st->st_mode = S_IFDIR | 0755;
	return 0;
}

static int real_calls;

static long f_real_link(void *ctx, const char *path, char *buf, size_t size)
{
	static const struct {
		const char *path, *target;
		long ret;
	} fs[] = {
		{"/home/u/cur", "/x/y", 0},
		{"/home/u/rel", "sub/y", 0},
		{"/etc/passwd", NULL, -ENOTDIR},
		{"/nope", NULL, -ENOENT},
	};
	(void)ctx;
	real_calls++;
	for (size_t i = 0; i < sizeof(fs) / sizeof(fs[0]); i++) {
		if (strcmp(fs[i].path, path))
			continue;
		if (!fs[i].target)
			return fs[i].ret;
		size_t n = strlen(fs[i].target);
		if (n > size)
			return -ENAMETOOLONG;
		memcpy(buf, fs[i].target, n);
		return (long)n;
	}
	return 0; /* a directory */
}

static const struct dlfs_vp_ops ops = {NULL, f_root, f_lookup, f_readlink,
				       f_real_link};
static struct dlfs_vp_root root = {"/ds", 3};
static struct dlfs_vp_res res;

static int resolve(const char *path, int flags)
{
	return dlfs_vp_resolve(&root, &ops, NULL, path, flags, &res);
}

/* path resolves to ino (ours), with res.path == vpath. */
static void ours(const char *path, int flags, uint64_t ino, const char *vpath)
{
	int ret = resolve(path, flags);
	if (ret || res.kind != DLFS_VP_OURS || res.ino != ino ||
	    strcmp(res.path, vpath)) {
		fprintf(stderr, "%s: ret %d kind %d ino %llu path %s\n", path,
			ret, res.kind, (unsigned long long)res.ino, res.path);
		t_failures++;
	}
}

static void real(const char *path, int flags, const char *rpath)
{
	int ret = resolve(path, flags);
	int want = rpath ? DLFS_VP_REAL : DLFS_VP_PASS;
	if (ret || res.kind != (enum dlfs_vp_kind)want ||
	    (rpath && strcmp(res.path, rpath))) {
		fprintf(stderr, "%s: ret %d kind %d path %s\n", path, ret,
			res.kind, res.path);
		t_failures++;
	}
}

/* The server's flag goes from each lookup to the next one's directory,
 * and to the answer; the walk never makes one up. */
static void volatile_flag(void)
{
	ours("/ds/v/w/s", 0, 20, "/ds/v/w/s");
	CHECK(res.vol);
	ours("/ds/a/f", 0, 3, "/ds/a/f");
	CHECK(!res.vol);
	ours("/ds/v/w/..", 0, 18, "/ds/v");
	CHECK(res.vol);
	ours("/ds/v/..", 0, 1, "/ds");
	CHECK(!res.vol);
	ours("/ds/v/up/f", 0, 3, "/ds/a/f");
	CHECK(!res.vol);
	ours("/ds/v/w/../../v/w/../../a/../v/w/../up", DLFS_VP_NOFOLLOW,
	     21, "/ds/v/up");
	CHECK(res.vol);
	/* ".." out of the dataset from a volatile directory and back in:
	 * the root again, which is not. */
	ours("/ds/v/../../ds", 0, 1, "/ds");
	CHECK(!res.vol);
	ours("/ds/v/w/top", 0, 1, "/ds");
	CHECK(!res.vol);
	ours("/ds/v/w/top/v/w/top/a", 0, 2, "/ds/a");
	CHECK(!res.vol);
	/* Relative to a volatile directory (an fd, the cwd). */
	struct dlfs_vp_base vb = {.path = "/ds/v/w", .ino = 19, .vol = 1};
	vb.st.st_mode = S_IFDIR | 0755;
	int r = dlfs_vp_resolve(&root, &ops, &vb, ".", 0, &res);
	CHECK(!r && res.kind == DLFS_VP_OURS && res.ino == 19 && res.vol);
	r = dlfs_vp_resolve(&root, &ops, &vb, "s", 0, &res);
	CHECK(!r && res.kind == DLFS_VP_OURS && res.ino == 20 && res.vol);
	r = dlfs_vp_resolve(&root, &ops, &vb, "../../a", 0, &res);
	CHECK(!r && res.kind == DLFS_VP_OURS && res.ino == 2 && !res.vol);
	CHECK_EQ(resolve("/ds/v/nope", 0), -ENOENT);
	CHECK(!res.vol);
	CHECK_EQ(wrong_vol, 0);
}

int main(void)
{
	/* Outside: untouched, and cheap. */
	real("/etc/passwd", 0, NULL);
	real("/dsx/a", 0, NULL);
	real("relative/a", 0, NULL);
	CHECK(!dlfs_vp_maybe_ours(&root, "/dsx/a"));
	CHECK(!dlfs_vp_maybe_ours(&root, "rel/a"));
	CHECK(!dlfs_vp_maybe_ours(&root, "/etc/passwd"));
	CHECK(dlfs_vp_maybe_ours(&root, "/ds"));
	CHECK(dlfs_vp_maybe_ours(&root, "/ds/a"));
	CHECK(dlfs_vp_maybe_ours(&root, "../ds"));
	CHECK(dlfs_vp_maybe_ours(&root, "/x/../ds"));
	CHECK(dlfs_vp_maybe_ours(&root, "//ds"));

	/* Plain names, ".", "..", extra slashes. */
	ours("/ds", 0, 1, "/ds");
	ours("/ds/", 0, 1, "/ds");
	ours("/ds/a/f", 0, 3, "/ds/a/f");
	ours("//ds//a/./f", 0, 3, "/ds/a/f");
	ours("/x/../ds/a", 0, 2, "/ds/a");
	ours("/ds/b/c/../../a", 0, 2, "/ds/a");
	real("/ds/..", 0, "/");
	real("/ds/../etc", 0, "/etc");
	ours("/ds/../ds/a", 0, 2, "/ds/a");
	CHECK_EQ(resolve("/ds/nope", 0), -ENOENT);
	CHECK_EQ(resolve("/ds/a/f/g", 0), -ENOTDIR);
	CHECK_EQ(resolve("/ds/a/f/", 0), -ENOTDIR);
	CHECK_EQ(resolve("/ds/a/f/.", 0), -ENOTDIR);

	/* Symlinks: followed, or not in the last component. */
	ours("/ds/a/self", 0, 3, "/ds/a/f");
	ours("/ds/a/self", DLFS_VP_NOFOLLOW, 6, "/ds/a/self");
	ours("/ds/a/up", 0, 1, "/ds");
	ours("/ds/a/up/b/c", DLFS_VP_NOFOLLOW, 9, "/ds/b/c");
	ours("/ds/b/c/back", 0, 3, "/ds/a/f");
	ours("/ds/in/f", 0, 3, "/ds/a/f");
	ours("/ds/in/", DLFS_VP_NOFOLLOW, 2, "/ds/a");
	real("/ds/a/abs", 0, "/etc");
	real("/ds/a/abs/passwd", 0, "/etc/passwd");
	ours("/ds/a/abs", DLFS_VP_NOFOLLOW, 5, "/ds/a/abs");
	real("/ds/out", 0, "/x/y");
	CHECK_EQ(resolve("/ds/loop", 0), -ELOOP);
	ours("/ds/loop", DLFS_VP_NOFOLLOW, 7, "/ds/loop");
	CHECK_EQ(resolve("/ds/loop/x", DLFS_VP_NOFOLLOW), -ELOOP);

	/* Relative to one of our directories, and to a real one. */
	struct dlfs_vp_base b = {.path = "/ds/b/c", .ino = 9};
	b.st.st_mode = S_IFDIR | 0755;
	int r = dlfs_vp_resolve(&root, &ops, &b, "../../a/f", 0, &res);
	CHECK(!r && res.kind == DLFS_VP_OURS && res.ino == 3 &&
	      !strcmp(res.path, "/ds/a/f"));
	r = dlfs_vp_resolve(&root, &ops, &b, "../../..", 0, &res);
	CHECK(!r && res.kind == DLFS_VP_REAL && !strcmp(res.path, "/"));
	r = dlfs_vp_resolve(&root, &ops, &b, "back", 0, &res);
	CHECK(!r && res.kind == DLFS_VP_OURS && res.ino == 3);
	struct dlfs_vp_base rb = {.path = "/x"};
	r = dlfs_vp_resolve(&root, &ops, &rb, "../ds/a", 0, &res);
	CHECK(!r && res.kind == DLFS_VP_OURS && res.ino == 2);
	r = dlfs_vp_resolve(&root, &ops, &rb, "y", 0, &res);
	CHECK(!r && res.kind == DLFS_VP_PASS);

	/* Too long. */
	char longp[PATH_MAX + 10];
	memset(longp, 'a', sizeof(longp) - 1);
	longp[0] = '/';
	longp[sizeof(longp) - 1] = '\0';
	CHECK_EQ(resolve(longp, 0), -ENAMETOOLONG);

	/* Lookups happen only inside the dataset. */
	lookups = 0;
	real("/etc/x/../y", 0, NULL);
	CHECK_EQ(lookups, 0);

	/* No server: a path that does not reach the prefix never asks for
	 * the root (so it needs none), one that does gets its error. */
	root_err = -EIO;
	roots = 0;
	real("/home/u/proj/src/../lib/x.py", 0, NULL);
	real("/x/./y//z", 0, NULL);
	r = dlfs_vp_resolve(&root, &ops, &rb, "../y/../z", 0, &res);
	CHECK(!r && res.kind == DLFS_VP_PASS);
	CHECK_EQ(roots, 0);
	CHECK_EQ(resolve("/ds/a", 0), -EIO);
	CHECK_EQ(resolve("/x/../ds", 0), -EIO);
	CHECK_EQ(resolve("/x/../ds/../y", 0), -EIO);
	root_err = 0;
	roots = 0;
	ours("/ds/b/c/../../a/up/a/f", 0, 3, "/ds/a/f");
	CHECK_EQ(roots, 1); /* once per walk */

	/* Out of the dataset, what is left is a real path: "..", is the
	 * kernel's (a real symlink is followed first; a file or a missing
	 * directory is the kernel's to answer), and the rest goes to it as
	 * it is once it cannot lead back to the prefix. */
	real("/ds/m", 0, "/x/w.bin");
	real("/ds/r", 0, "/home/u/sub/z");
	real("/ds/pf", 0, "/etc/passwd/../x");
	real("/ds/pd", 0, "/etc/passwd/.");
	real("/ds/gone", 0, "/nope/../etc");
	real("/ds/a/abs/./x//y/", 0, "/etc/x//y/");
	real("/ds/../x/../ds/../y", 0, "/y");
	/* Before the walk reaches the prefix it is lexical, and asks the
	 * real file system nothing. */
	real_calls = 0;
	real("/home/u/cur/../w.bin", 0, NULL);
	ours("/home/u/cur/../../../ds/a", 0, 2, "/ds/a");
	CHECK_EQ(real_calls, 0);

	volatile_flag();
	CHECK_EQ(wrong_vol, 0); /* nor in any walk above */
	return t_failures ? 1 : 0;
}
