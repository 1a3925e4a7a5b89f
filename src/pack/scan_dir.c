/*
 * Directory sources (scan_kind.h): a walk of the tree under the source,
 * in sorted name order, every entry into the packer's tree with what
 * lstat says of it; the files' bytes stay where they are, read later by
 * the pipeline.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ingest.h"
#include "scan_kind.h"
#include "util.h"

struct walk {
	struct pk_tree *t;
	const struct dlfs_pack_opts *o;
	uint32_t src;
	const char *root;
	char *buf; /* root "/" relative path, grown as needed */
	size_t cap;
	struct dlfs_err *err;
	/* With split_hdf5: the HDF5 files met, packed whole. */
	uint64_t h5_whole;
	char *h5_first;
};

/*
 * --split-hdf5 splits the HDF5 files given as sources; those met inside a
 * directory source are packed whole, as the files they are. Say so: a user
 * who gave the option expected them split. The name is the cheap test, so
 * only files named like HDF5 cost an open.
 */
static void note_hdf5(struct walk *w, int dfd, const char *name,
		      const struct stat *st, const char *full)
{
	if (!w->o->split_hdf5 || !S_ISREG(st->st_mode) || !pk_hdf5_name(name))
		return;
	int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return; /* the pack itself will say why it cannot read it */
	int h5 = pk_hdf5_signature(fd, (uint64_t)st->st_size);
	close(fd);
	if (h5 && !w->h5_whole++)
		w->h5_first = strdup(full);
}

static int walk_path(struct walk *w, const char *rel, size_t rlen,
		     const char **full)
{
	size_t rootlen = strlen(w->root);
	size_t need = rootlen + 1 + rlen + 1;
	if (need > w->cap) {
		char *b = realloc(w->buf, need * 2);
		if (!b)
			return -ENOMEM;
		w->buf = b;
		w->cap = need * 2;
	}
	memcpy(w->buf, w->root, rootlen);
	w->buf[rootlen] = '/';
	memcpy(w->buf + rootlen + 1, rel, rlen);
	w->buf[rootlen + 1 + rlen] = '\0';
	*full = w->buf;
	return 0;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A directory's names, each malloc'd; names_free releases them. */
struct names {
	char **v;
	size_t n, cap;
};

static int names_add(struct names *nm, const char *name)
{
	if (nm->n == nm->cap) {
		size_t cap = nm->cap ? nm->cap * 2 : 64;
		char **v = realloc(nm->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		nm->v = v;
		nm->cap = cap;
	}
	if (!(nm->v[nm->n] = strdup(name)))
		return -ENOMEM;
	nm->n++;
	return 0;
}

static void names_free(struct names *nm)
{
	for (size_t i = 0; i < nm->n; i++)
		free(nm->v[i]);
	free(nm->v);
}

/*
 * Open the directory at full. One that cannot be opened is skipped with a
 * warning under skip_errors: then 0 with *d NULL.
 */
static int open_dir(struct walk *w, const char *full, DIR **d)
{
	*d = NULL;
	int dfd = dlfs_open_long(full,
				 O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW,
				 0);
	if (dfd < 0) {
		if (w->o->skip_errors) {
			pk_scan_warn(w->o, "warning: skipping %s: %s", full,
				     strerror(-dfd));
			return 0;
		}
		return dlfs_err_sys(w->err, dfd, "%s", full);
	}
	*d = fdopendir(dfd);
	if (!*d) {
		int ret = dlfs_err_sys(w->err, -errno, "%s", full);
		close(dfd);
		return ret;
	}
	return 0;
}

/* The names in d but "." and "..", sorted, so that discovery order does
 * not depend on the fs. */
static int read_names(struct walk *w, DIR *d, const char *full,
		      struct names *nm)
{
	struct dirent *de;
	errno = 0;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (names_add(nm, de->d_name))
			return dlfs_err_set(w->err, -ENOMEM, "out of memory");
	}
	if (errno)
		return dlfs_err_sys(w->err, -errno, "%s: readdir", full);
	if (nm->n)
		qsort(nm->v, nm->n, sizeof(*nm->v), name_cmp);
	return 0;
}

/* rel/name (name alone when rel is the root's "") into *sub, grown as
 * needed; *slen is its length. @return 0 or -ENOMEM. */
static int child_path(char **sub, size_t *cap, const char *rel, size_t rlen,
		      const char *name, size_t *slen)
{
	size_t len = strlen(name);
	*slen = rlen + (rlen ? 1 : 0) + len;
	if (*slen + 1 > *cap) {
		size_t c = (*slen + 1) * 2;
		char *s = realloc(*sub, c);
		if (!s)
			return -ENOMEM;
		*sub = s;
		*cap = c;
	}
	memcpy(*sub, rel, rlen);
	if (rlen)
		(*sub)[rlen] = '/';
	memcpy(*sub + *slen - len, name, len);
	(*sub)[*slen] = '\0';
	return 0;
}

/*
 * Under skip_errors, a file this process cannot open is skipped here,
 * with a warning, rather than failing the pack when it comes to be read.
 * @return 1 if skipped.
 */
static int skip_unreadable(struct walk *w, int dfd, const char *name,
			   const char *sub, size_t slen)
{
	const char *full = w->buf;
	int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd >= 0) {
		close(fd);
		return 0;
	}
	walk_path(w, sub, slen, &full);
	pk_scan_warn(w->o, "warning: skipping %s: %s", full, strerror(errno));
	return 1;
}

/* Symlink name's target into e, read at the length lstat gave: one that
 * changed since is -EAGAIN. */
static int put_target(struct walk *w, int dfd, const char *name,
		      const struct stat *st, struct pk_entry *e,
		      const char *full)
{
	char *tg = malloc((size_t)st->st_size + 1);
	ssize_t n = tg ? readlinkat(dfd, name, tg, (size_t)st->st_size + 1)
		       : -1;
	if (n < 0 || n > st->st_size) {
		free(tg);
		return dlfs_err_sys(w->err, n < 0 ? -errno : -EAGAIN,
				    "%s: readlink", full);
	}
	int ret = pk_tree_set_target(w->t, e, tg, (size_t)n, w->err);
	free(tg);
	return ret;
}

/* Entry sub (name in dfd) into the tree, with what st says of it. */
static int put_entry(struct walk *w, int dfd, const char *name,
		     const struct stat *st, const char *sub, size_t slen)
{
	const char *full = w->buf;
	struct pk_entry *e;
	struct pk_attr *a;
	walk_path(w, sub, slen, &full);
	note_hdf5(w, dfd, name, st, full);
	int ret = pk_tree_put(w->t, sub, slen, st->st_mode, w->src, full, &e,
			      &a, w->err);
	if (ret || !e)
		return ret; /* or a directory merged into one put before */
	a->mtime_sec = st->st_mtim.tv_sec;
	a->mtime_nsec = (uint32_t)st->st_mtim.tv_nsec;
	if (S_ISREG(st->st_mode))
		e->size = (uint64_t)st->st_size;
	else if (S_ISLNK(st->st_mode))
		ret = put_target(w, dfd, name, st, e, full);
	return ret;
}

static int walk_dir(struct walk *w, const char *rel, size_t rlen);

/*
 * One entry of a directory, sub relative to the source root: checked,
 * put into the tree, and walked when a directory. What cannot be packed
 * (a special file; under skip_errors, what cannot be read) is skipped
 * with a warning.
 */
static int walk_entry(struct walk *w, int dfd, const char *name,
		      const char *sub, size_t slen)
{
	const char *full = w->buf;
	size_t len = strlen(name);
	struct stat st;
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		walk_path(w, sub, slen, &full);
		if (w->o->skip_errors) {
			pk_scan_warn(w->o, "warning: skipping %s: %s", full,
				     strerror(errno));
			return 0;
		}
		return dlfs_err_sys(w->err, -errno, "%s", full);
	}
	if (len > DLFS_NAME_MAX) {
		walk_path(w, sub, slen, &full);
		return pk_scan_check_names(name, len, full, w->err);
	}
	if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode) &&
	    !S_ISLNK(st.st_mode)) {
		walk_path(w, sub, slen, &full);
		pk_scan_warn(w->o, "warning: skipping %s: %s", full,
			     pk_scan_special_kind(st.st_mode));
		return 0;
	}
	if (S_ISREG(st.st_mode) && w->o->skip_errors &&
	    skip_unreadable(w, dfd, name, sub, slen))
		return 0;
	int ret = put_entry(w, dfd, name, &st, sub, slen);
	if (!ret && S_ISDIR(st.st_mode))
		ret = walk_dir(w, sub, slen);
	return ret;
}

/* The entries named in nm, in order, until one fails or the pack is
 * cancelled. */
static int walk_names(struct walk *w, int dfd, const char *rel, size_t rlen,
		      const struct names *nm)
{
	char *sub = NULL;
	size_t subcap = 0, slen;
	int ret = 0;
	for (size_t i = 0; i < nm->n && !ret; i++) {
		if (w->o->cancel && *w->o->cancel)
			ret = dlfs_err_set(w->err, -ECANCELED, "cancelled");
		else if (child_path(&sub, &subcap, rel, rlen, nm->v[i], &slen))
			ret = dlfs_err_set(w->err, -ENOMEM, "out of memory");
		else
			ret = walk_entry(w, dfd, nm->v[i], sub, slen);
	}
	free(sub);
	return ret;
}

/* Walk directory rel (relative to the source root; "" for the root). */
static int walk_dir(struct walk *w, const char *rel, size_t rlen)
{
	const char *full;
	struct names nm = {0};
	DIR *d;
	int ret = walk_path(w, rel, rlen, &full);
	if (ret)
		return dlfs_err_set(w->err, ret, "out of memory");
	ret = open_dir(w, full, &d);
	if (ret || !d)
		return ret; /* or skipped */
	ret = read_names(w, d, full, &nm);
	if (!ret)
		ret = walk_names(w, dirfd(d), rel, rlen, &nm);
	names_free(&nm);
	closedir(d);
	return ret;
}

int pk_scan_dir(struct pk_tree *t, uint32_t src, const char *root,
		const struct dlfs_pack_opts *o, struct dlfs_err *err)
{
	struct stat st;
	if (stat(root, &st) < 0)
		return dlfs_err_sys(err, -errno, "%s", root);
	if (!t->root_set || t->root_from_dir == 1) {
		t->root_from_dir = 2; /* the first directory source won */
		struct pk_attr a;
		int ret = pk_attr_get(t, 0, &a, err);
		if (ret)
			return ret;
		t->e[0].mode = S_IFDIR | (st.st_mode & 07777);
		t->e[0].src = src;
		a.mtime_sec = st.st_mtim.tv_sec;
		a.mtime_nsec = (uint32_t)st.st_mtim.tv_nsec;
		if ((ret = pk_attr_set(t, 0, &a, err)))
			return ret;
		t->root_set = 1;
	}
	struct walk w = {.t = t, .o = o, .src = src, .root = root, .err = err};
	int ret = walk_dir(&w, "", 0);
	if (!ret && w.h5_whole)
		pk_scan_warn(o,
			     "warning: %s holds %llu HDF5 file%s (%s%s), "
			     "packed whole: --split-hdf5 splits the HDF5 files "
			     "given as sources, not those inside a directory "
			     "source; to split them, give them as sources and "
			     "leave them out of the directory",
			     root, (unsigned long long)w.h5_whole,
			     w.h5_whole > 1 ? "s" : "",
			     w.h5_whole > 1 ? "first: " : "",
			     w.h5_first ? w.h5_first : "?");
	free(w.h5_first);
	free(w.buf);
	return ret;
}
