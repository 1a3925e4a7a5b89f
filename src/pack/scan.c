/*
 * Sources to entries: a directory walk, or one pass over an archive with
 * libarchive. Paths are normalised, hostile archive members refused,
 * directories given twice merged, anything else given twice refused.
 */
#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ingest.h"
#include "scan.h"
#include "util.h"

static int check_names(const char *p, size_t n, const char *where,
		       struct dlfs_err *err)
{
	const char *s = p, *end = p + n;
	while (s < end) {
		const char *slash = memchr(s, '/', (size_t)(end - s));
		size_t len = (size_t)((slash ? slash : end) - s);
		if (len > DLFS_NAME_MAX) {
			char q[96];
			dlfs_quote(s, 40, q, sizeof(q));
			return dlfs_err_set(err, -ENAMETOOLONG,
					    "%s: name '%s...' is %zu bytes, "
					    "more than %d",
					    where, q, len, DLFS_NAME_MAX);
		}
		s += len + 1;
	}
	return 0;
}

/*
 * Make sure every ancestor of path exists as a directory, creating implied
 * ones with the given mtime. @return 0, or -EEXIST if an ancestor is not a
 * directory.
 */
static int ensure_parents(struct pk_tree *t, const char *p, size_t n,
			  uint32_t src, int64_t mtime, struct dlfs_err *err,
			  const char *where)
{
	for (size_t i = 0; i < n; i++) {
		if (p[i] != '/')
			continue;
		int64_t k = pk_tree_find(t, p, i);
		if (k >= 0) {
			if (!S_ISDIR(t->e[k].mode))
				return dlfs_err_set(err, -EEXIST,
						    "%s: '%.*s' is both a "
						    "directory and a file",
						    where, (int)i, p);
			continue;
		}
		struct pk_entry *e;
		struct pk_attr *a;
		int ret = pk_tree_put(t, p, i, S_IFDIR | 0755, src, where, &e,
				      &a, err);
		if (ret)
			return ret;
		a->mtime_sec = mtime;
		a->implicit = 1;
	}
	return 0;
}

static void warn(const struct dlfs_pack_opts *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void warn(const struct dlfs_pack_opts *o, const char *fmt, ...)
{
	if (!o->warn)
		return;
	/* Whole, however long the path: its reason is at the end. */
	char *msg = NULL;
	va_list ap;
	va_start(ap, fmt);
	int n = vasprintf(&msg, fmt, ap);
	va_end(ap);
	o->warn(o->cb_arg, n < 0 ? "warning: (out of memory for a warning)"
				 : msg);
	if (n >= 0)
		free(msg);
}

static const char *special_kind(mode_t m)
{
	if (S_ISFIFO(m))
		return "fifo";
	if (S_ISSOCK(m))
		return "socket";
	if (S_ISCHR(m))
		return "character device";
	if (S_ISBLK(m))
		return "block device";
	return "special file";
}

/* ---- directory sources ---- */

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
			warn(w->o, "warning: skipping %s: %s", full,
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
	warn(w->o, "warning: skipping %s: %s", full, strerror(errno));
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
			warn(w->o, "warning: skipping %s: %s", full,
			     strerror(errno));
			return 0;
		}
		return dlfs_err_sys(w->err, -errno, "%s", full);
	}
	if (len > DLFS_NAME_MAX) {
		walk_path(w, sub, slen, &full);
		return check_names(name, len, full, w->err);
	}
	if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode) &&
	    !S_ISLNK(st.st_mode)) {
		walk_path(w, sub, slen, &full);
		warn(w->o, "warning: skipping %s: %s", full,
		     special_kind(st.st_mode));
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

static int scan_dir(struct pk_tree *t, uint32_t src, const char *root,
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
		warn(o,
		     "warning: %s holds %llu HDF5 file%s (%s%s), packed "
		     "whole: --split-hdf5 splits the HDF5 files given as "
		     "sources, not those inside a directory source; to split "
		     "them, give them as sources and leave them out of the "
		     "directory",
		     root, (unsigned long long)w.h5_whole,
		     w.h5_whole > 1 ? "s" : "", w.h5_whole > 1 ? "first: " : "",
		     w.h5_first ? w.h5_first : "?");
	free(w.h5_first);
	free(w.buf);
	return ret;
}

/* ---- archive sources ---- */

/*
 * Normalise an archive member name into out: drop leading "./", repeated
 * and trailing slashes and "." components. Refuse absolute names and any
 * ".." component. @return the length, or a negative errno.
 */
static ssize_t normalise(const char *name, char *out, size_t cap)
{
	if (name[0] == '/')
		return -EPERM;
	size_t o = 0;
	const char *s = name;
	while (*s) {
		while (*s == '/')
			s++;
		if (!*s)
			break;
		const char *end = strchrnul(s, '/');
		size_t len = (size_t)(end - s);
		if (len == 1 && s[0] == '.') {
			s = end;
			continue;
		}
		if (len == 2 && s[0] == '.' && s[1] == '.')
			return -EPERM;
		if (o + len + 2 > cap)
			return -ENAMETOOLONG;
		if (o)
			out[o++] = '/';
		memcpy(out + o, s, len);
		o += len;
		s = end;
	}
	out[o] = '\0';
	return (ssize_t)o;
}

static int spool_open(struct pk_tree *t, const char *spool_path,
		      struct dlfs_err *err)
{
	if (t->spool_fd >= 0)
		return 0;
	t->spool_path = strdup(spool_path);
	if (!t->spool_path)
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	t->spool_fd = open(spool_path,
			   O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (t->spool_fd < 0)
		return dlfs_err_sys(err, -errno, "%s", spool_path);
	return 0;
}

static int spool_member(struct pk_tree *t, struct archive *a,
			struct pk_entry *e, struct pk_attr *at,
			const char *where, struct dlfs_err *err)
{
	const void *buf;
	size_t len;
	la_int64_t off;
	uint64_t base = t->spool_size, got = 0;
	int rc;
	at->spool_off = base;
	while ((rc = archive_read_data_block(a, &buf, &len, &off)) ==
	       ARCHIVE_OK) {
		/* Sparse members give holes as jumps in off. */
		if (off < 0 || (uint64_t)off + len > e->size)
			return dlfs_err_set(err, -DLFS_ECORRUPT,
					    "%s: member data beyond its size",
					    where);
		int ret = dlfs_pwrite_full(t->spool_fd, buf, len,
					   base + (uint64_t)off);
		if (ret)
			return dlfs_err_sys(err, ret, "%s: spooling to %s",
					    where, t->spool_path);
		if ((uint64_t)off + len > got)
			got = (uint64_t)off + len;
	}
	if (rc != ARCHIVE_EOF)
		return dlfs_err_set(err, -EIO, "%s: %s", where,
				    archive_error_string(a));
	t->spool_size = base + e->size;
	if (got < e->size && ftruncate(t->spool_fd, (off_t)t->spool_size) < 0)
		return dlfs_err_sys(err, -errno, "%s", t->spool_path);
	return 0;
}

/*
 * A hard link member e, to the earlier entry named hl. Links share one
 * content, which may come with any member of the group: tar puts it with
 * the first (the others are empty), cpio newc with the last (the earlier
 * ones are empty and carry no link). A member with data of its own
 * spools it, and gives it to the group's first entry when that came from
 * this archive; one without data reads the first entry's bytes, from
 * wherever they are (spool or a directory source: data_from), which
 * pk_scan settles once every source is read.
 */
static int hard_link(struct pk_tree *t, struct archive *a,
		     struct archive_entry *ae, struct pk_entry *e,
		     struct pk_attr *at, const char *hl, uint32_t src,
		     const char *spool_path, const char *where,
		     struct dlfs_err *err)
{
	char hn[8192];
	struct pk_attr ka;
	ssize_t hlen = normalise(hl, hn, sizeof(hn));
	int64_t k = hlen < 0 ? -1 : pk_tree_find(t, hn, (size_t)hlen);
	if (k < 0 || !S_ISREG(t->e[k].mode))
		return dlfs_err_set(err, -EINVAL,
				    "%s: hard link to a missing or hostile "
				    "member",
				    where);
	int ret = pk_attr_get(t, (uint64_t)k, &ka, err);
	if (ret)
		return ret;
	if (ka.data_from) {
		k = ka.data_from - 1; /* the group's first entry */
		if ((ret = pk_attr_get(t, (uint64_t)k, &ka, err)))
			return ret;
	}
	int64_t sz = archive_entry_size_is_set(ae) ? archive_entry_size(ae)
						   : 0;
	if (sz > 0) {
		e->size = (uint64_t)sz;
		ret = spool_open(t, spool_path, err);
		if (!ret)
			ret = spool_member(t, a, e, at, where, err);
		if (ret)
			return ret;
		struct pk_entry *first = &t->e[k];
		if (first->src == src && !ka.data_from) {
			first->size = e->size;
			ka.spool_off = at->spool_off;
			ret = pk_attr_set(t, (uint64_t)k, &ka, err);
		}
		return ret;
	}
	at->data_from = (uint32_t)(k + 1);
	return pk_tree_add_link(t, (uint64_t)(e - t->e), err);
}

/* One archive source being read (scan_archive). */
struct arc {
	struct pk_tree *t;
	struct archive *a;
	const struct dlfs_pack_opts *o;
	uint32_t src;
	const char *path;       /* the archive, for messages */
	const char *spool_path; /* where members' bytes go (spool_open) */
	struct dlfs_err *err;
};

/* libarchive's error on a, as err. */
static int archive_fail(struct archive *a, const char *path,
			struct dlfs_err *err)
{
	int e = archive_errno(a);
	return dlfs_err_set(err, e > 0 ? -e : -EINVAL, "%s: %s", path,
			    archive_error_string(a));
}

/* Open path for reading in *out, with every filter and format it might
 * be in. @return 0 or a negative errno with err naming path. */
static int open_archive(const char *path, struct archive **out,
			struct dlfs_err *err)
{
	struct archive *a = archive_read_new();
	if (!a)
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	/*
	 * Every archive format but mtree and raw: mtree's text detection
	 * takes ordinary text files for manifests, and raw takes anything.
	 */
	archive_read_support_filter_all(a);
	archive_read_support_format_7zip(a);
	archive_read_support_format_ar(a);
	archive_read_support_format_cab(a);
	archive_read_support_format_cpio(a);
	archive_read_support_format_iso9660(a);
	archive_read_support_format_lha(a);
	archive_read_support_format_rar(a);
	archive_read_support_format_rar5(a);
	archive_read_support_format_tar(a);
	archive_read_support_format_warc(a);
	archive_read_support_format_xar(a);
	archive_read_support_format_zip(a);
	if (archive_read_open_filename(a, path, 1 << 20) != ARCHIVE_OK) {
		int ret = archive_fail(a, path, err);
		archive_read_free(a);
		return ret;
	}
	*out = a;
	return 0;
}

/*
 * The member's name, normalised into norm[ncap], and "ARCHIVE: member
 * 'NAME'" for messages into where[wcap]. @return the normalised length,
 * or a negative errno with err set: a member without a name, a hostile
 * one (absolute or with ".."), one too long.
 */
static ssize_t member_name(const struct arc *r, struct archive_entry *ae,
			   char *norm, size_t ncap, char *where, size_t wcap)
{
	const char *name = archive_entry_pathname(ae);
	if (!name)
		return dlfs_err_set(r->err, -EINVAL,
				    "%s: member without a name", r->path);
	ssize_t n = normalise(name, norm, ncap);
	char q[1024];
	dlfs_quote(name, strlen(name), q, sizeof(q));
	snprintf(where, wcap, "%s: member '%s'", r->path, q);
	if (n == -EPERM)
		return dlfs_err_set(r->err, -EINVAL,
				    "%s: refusing a hostile path "
				    "(absolute or with '..')",
				    where);
	if (n < 0)
		return dlfs_err_set(r->err, (int)n, "%s: path too long", where);
	int ret = check_names(norm, (size_t)n, where, r->err);
	return ret ? ret : n;
}

/* The member "./": the root's mode and mtime, when it is a directory and
 * neither a directory source nor an earlier member gave them. */
static int archive_root(struct pk_tree *t, struct archive_entry *ae,
			mode_t type, struct dlfs_err *err)
{
	if (type != AE_IFDIR || t->root_set || t->root_from_dir)
		return 0;
	struct pk_attr ra;
	int ret = pk_attr_get(t, 0, &ra, err);
	if (ret)
		return ret;
	t->e[0].mode = S_IFDIR | (archive_entry_perm(ae));
	ra.mtime_sec = archive_entry_mtime(ae);
	ra.mtime_nsec = (uint32_t)archive_entry_mtime_nsec(ae);
	if ((ret = pk_attr_set(t, 0, &ra, err)))
		return ret;
	t->root_set = 1;
	return 0;
}

/* What member e holds: a symlink's target, a hard link's share of its
 * group (hl names the earlier member), a file's bytes in the spool. */
static int member_content(const struct arc *r, struct archive_entry *ae,
			  mode_t type, const char *hl, struct pk_entry *e,
			  struct pk_attr *at, const char *where)
{
	if (type == AE_IFLNK) {
		const char *tg = archive_entry_symlink(ae);
		return pk_tree_set_target(r->t, e, tg ? tg : "",
					  tg ? strlen(tg) : 0, r->err);
	}
	if (hl)
		return hard_link(r->t, r->a, ae, e, at, hl, r->src,
				 r->spool_path, where, r->err);
	if (type != AE_IFREG)
		return 0;
	int64_t sz = archive_entry_size(ae);
	e->size = sz > 0 ? (uint64_t)sz : 0;
	int ret = spool_open(r->t, r->spool_path, r->err);
	if (!ret)
		ret = spool_member(r->t, r->a, e, at, where, r->err);
	return ret;
}

/*
 * One member into the tree: its name checked, the directories it implies
 * made, its content read. Special files are skipped with a warning.
 */
static int scan_member(const struct arc *r, struct archive_entry *ae)
{
	char norm[8192], where[8192 + 512];
	ssize_t n = member_name(r, ae, norm, sizeof(norm), where,
				sizeof(where));
	if (n < 0)
		return (int)n;
	mode_t type = archive_entry_filetype(ae);
	const char *hl = archive_entry_hardlink(ae);
	if (hl)
		type = AE_IFREG;
	if (type != AE_IFREG && type != AE_IFDIR && type != AE_IFLNK) {
		warn(r->o, "warning: skipping %s: %s", where,
		     special_kind(type));
		return 0;
	}
	if (n == 0) /* "./": the root, if no directory source */
		return archive_root(r->t, ae, type, r->err);
	int64_t mt = archive_entry_mtime(ae);
	int ret = ensure_parents(r->t, norm, (size_t)n, r->src, mt, r->err,
				 where);
	if (ret)
		return ret;
	struct pk_entry *e;
	struct pk_attr *at;
	ret = pk_tree_put(r->t, norm, (size_t)n,
			  (uint32_t)(type | archive_entry_perm(ae)), r->src,
			  where, &e, &at, r->err);
	if (ret || !e)
		return ret; /* or a directory merged into one put before */
	at->mtime_sec = mt;
	at->mtime_nsec = (uint32_t)archive_entry_mtime_nsec(ae);
	return member_content(r, ae, type, hl, e, at, where);
}

static int scan_archive(struct pk_tree *t, uint32_t src, const char *path,
			const char *spool_path, const struct dlfs_pack_opts *o,
			struct dlfs_err *err)
{
	struct arc r = {.t = t, .o = o, .src = src, .path = path,
			.spool_path = spool_path, .err = err};
	struct archive_entry *ae;
	int rc = ARCHIVE_EOF;
	int ret = open_archive(path, &r.a, err);
	if (ret)
		return ret;
	while (!ret && ((rc = archive_read_next_header(r.a, &ae)) ==
				ARCHIVE_OK ||
			rc == ARCHIVE_WARN)) {
		if (o->cancel && *o->cancel)
			ret = dlfs_err_set(err, -ECANCELED, "cancelled");
		else
			ret = scan_member(&r, ae);
	}
	if (!ret && rc != ARCHIVE_EOF)
		ret = archive_fail(r.a, path, err);
	archive_read_free(r.a);
	return ret;
}

/* The ingest's entries into the tree (ingest.h, struct pk_ingest_to). */
static int ingest_data(void *arg, const char *path, uint32_t *idx,
		       struct dlfs_err *err)
{
	return pk_tree_data_add(arg, path, idx, err);
}

static int ingest_put(void *arg, const struct pk_ingest_entry *x,
		      struct dlfs_err *err)
{
	struct pk_entry *e;
	struct pk_attr *a;
	int ret = pk_tree_put(arg, x->path, x->len, x->mode, x->src, x->where,
			      &e, &a, err);
	if (ret || !e)
		return ret; /* or a directory merged into one put before */
	a->mtime_sec = x->sec;
	a->mtime_nsec = x->nsec;
	if (S_ISREG(x->mode)) {
		e->size = x->size;
		a->spool_off = x->off;
		a->data = x->data;
	}
	return 0;
}

int pk_scan(struct pk_tree *t, const struct pk_source *src, unsigned n_src,
	    const char *spool_path, const struct dlfs_pack_opts *opts,
	    struct dlfs_err *err)
{
	struct pk_entry *root;
	struct pk_attr *ra;
	int ret = pk_tree_root(t, &root, &ra, err);
	if (ret)
		return ret;
	for (unsigned i = 0; i < n_src; i++)
		if (src[i].kind == PK_SRC_DIR)
			t->root_from_dir = 1;
	const struct pk_ingest_to to = {t, ingest_data, ingest_put};
	for (unsigned i = 0; i < n_src; i++) {
		if (src[i].kind == PK_SRC_DIR)
			ret = scan_dir(t, i, src[i].path, opts, err);
		else if (src[i].kind == PK_SRC_ARCHIVE)
			ret = scan_archive(t, i, src[i].path, spool_path, opts,
					   err);
		else /* ingested by workers already (ingest.h) */
			ret = pk_ingest_put(&to, &src[i], i, opts, err);
		if (ret)
			return ret;
	}
	/* A mount shows its control directory at the root as ".dlfs"
	 * (dlfs(1)); a dataset entry of that name needs -o ctl_dir. */
	if (pk_tree_find(t, ".dlfs", 5) >= 0)
		warn(opts,
		     "warning: the dataset has an entry '.dlfs' at its root, "
		     "the name of a mount's control directory: mount it with "
		     "-o ctl_dir=NAME to give the control directory another "
		     "name (dlfs refuses to mount it without)");
	/* Hard links take their group's content as it ended up. */
	for (uint64_t i = 0; i < t->n_links; i++) {
		struct pk_attr a;
		struct pk_entry *e = &t->e[t->links[i]];
		if ((ret = pk_attr_get(t, t->links[i], &a, err)))
			return ret;
		e->size = t->e[a.data_from - 1].size;
	}
	return pk_attr_flush(t, err);
}
