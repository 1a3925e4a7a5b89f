/*
 * vpath: is a path under PREFIX, and if so which node of the dataset does
 * it name? A pure module: it walks the path component by component through
 * the callbacks it is given (the library's are ns.c's LOOKUP and READLINK
 * with their cache, and lstat/readlink of real paths; the unit test's are
 * a fake tree), so it never does I/O of its own and is safe to call from
 * any thread. It needs the dataset's root only when a walk reaches
 * PREFIX: a path that never does is answered without the server.
 *
 * Until a walk reaches PREFIX it is lexical ("." and ".." are folded as
 * strings, real symlinks are not looked at: the prefix does not exist on
 * disk, so a path can only reach it by naming it). Inside the dataset it
 * is exact: ".." goes to the parent node, ".." at the dataset's root leaves
 * it for the real directory that holds PREFIX, a symlink is followed
 * unless the caller says not to (relative targets stay where they are,
 * absolute ones restart the walk, maybe outside the prefix), ELOOP after
 * DLFS_VP_MAX_LINKS links. Once a walk has left the dataset, what is left
 * of the path names a real file, and is resolved as the kernel would: a
 * ".." looks at the real directory first (a real symlink is followed, a
 * file or a missing name stops the walk), and as soon as the rest cannot
 * come back to PREFIX it is handed to the kernel as it is.
 */
#ifndef DLFS_VPATH_H
#define DLFS_VPATH_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#define DLFS_VP_MAX_LINKS 40

struct dlfs_vp_ops {
	void *ctx;
	/* The dataset's root node, asked once per walk, when the walk first
	 * reaches PREFIX (the library connects to the server then).
	 * @return 0 or -errno (-EIO: the server is gone). */
	int (*root)(void *ctx, uint64_t *ino, struct stat *st);
	/* The entry name (len bytes, not NUL-ended) in directory parent;
	 * parent_vol is what the lookup that found parent said of it (0
	 * for the root). *vol: whether the dataset's answers about the
	 * entry change as the run goes on (the server's flag, which the
	 * walk only carries: it never decides it).
	 * @return 0, -ENOENT, -ENOTDIR or another -errno. */
	int (*lookup)(void *ctx, uint64_t parent, int parent_vol,
		      const char *name, size_t len, uint64_t *ino,
		      struct stat *st, int *vol);
	/* A symlink's target into buf (not NUL-ended).
	 * @return its length (<= size) or -errno. */
	long (*readlink)(void *ctx, uint64_t ino, char *buf, size_t size);
	/* What the real path (absolute, NUL-ended) is, not following a
	 * symlink in its last component: a symlink (its target into buf,
	 * not NUL-ended: @return its length, > 0), a directory (@return 0),
	 * or neither (@return -ENOTDIR, -ENOENT, -EACCES, ...). */
	long (*real_link)(void *ctx, const char *path, char *buf, size_t size);
};

/* What a relative path is relative to: an absolute path (real, or the
 * canonical virtual path of one of our directories, then with its
 * node). */
struct dlfs_vp_base {
	const char *path;
	uint64_t ino; /* 0: path is not ours */
	struct stat st;
	int vol; /* ours: the lookup that found it said volatile */
};

/* Where the dataset is. prefix is absolute, with no trailing slash and no
 * "." or ".." components. */
struct dlfs_vp_root {
	const char *prefix;
	size_t prefix_len;
};

enum dlfs_vp_kind {
	DLFS_VP_PASS = 0, /* not ours: use the caller's path as it is */
	DLFS_VP_REAL = 1, /* not ours, but the walk went through the dataset
			   * and out: use res->path (absolute) instead */
	DLFS_VP_OURS = 2, /* res->ino, res->st; res->path is its virtual
			   * absolute path */
};

/* Flags of dlfs_vp_resolve. */
#define DLFS_VP_NOFOLLOW 1 /* a symlink in the last component is the
			    * answer (lstat, O_NOFOLLOW, AT_SYMLINK_NOFOLLOW) */

struct dlfs_vp_res {
	enum dlfs_vp_kind kind;
	uint64_t ino;
	struct stat st;
	int vol; /* OURS: the lookup that found it said volatile (the
		  * base's flag when the walk stayed at the base) */
	char path[PATH_MAX];
};

/*
 * Resolve path. base is what a relative path is relative to, or NULL when
 * it is the process's real cwd and unknown: then a relative path is PASS
 * unless it has a ".." component, and the caller must give a base for
 * those (dlfs_vp_maybe_ours tells).
 *
 * @return 0 (res filled), or a -errno the call must fail with: -ENOENT,
 * -ENOTDIR, -ELOOP, -ENAMETOOLONG, or what the dataset's callbacks
 * returned (-EIO from root: the path reached PREFIX with no server). The
 * real_link callback's errors are never returned: the kernel gives them
 * (the walk answers DLFS_VP_REAL with the rest of the path).
 */
int dlfs_vp_resolve(const struct dlfs_vp_root *root,
		    const struct dlfs_vp_ops *ops,
		    const struct dlfs_vp_base *base,
		    const char *path, int flags, struct dlfs_vp_res *res);

/* Can path (resolved against a base the walk is not told) reach the
 * prefix? 0 when it certainly cannot: it is relative with no ".."
 * component, or absolute and neither under the prefix nor with a ".."
 * or "." component. Cheap: one pass over the string, no calls. */
int dlfs_vp_maybe_ours(const struct dlfs_vp_root *root, const char *path);

#endif
