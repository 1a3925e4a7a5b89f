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
#include <xxhash.h>

#include "ingest.h"
#include "pack_priv.h"
#include "util.h"

void pk_tree_init(struct pk_tree *t)
{
	memset(t, 0, sizeof(*t));
	t->spool_fd = -1;
}

#define SLAB (1u << 20)

char *pk_tree_strdup(struct pk_tree *t, const char *p, size_t n)
{
	char *s;
	if (t->n_slabs == t->slabs_cap) {
		uint64_t cap = t->slabs_cap ? t->slabs_cap * 2 : 64;
		char **a = realloc(t->slabs, cap * sizeof(*a));
		if (!a)
			return NULL;
		t->slabs = a;
		t->slabs_cap = cap;
	}
	if (n + 1 > SLAB / 4) {
		/* A long path has a slab of its own, before the last one,
		 * which stays the one being filled. */
		if (!(s = malloc(n + 1)))
			return NULL;
		if (t->n_slabs) {
			t->slabs[t->n_slabs] = t->slabs[t->n_slabs - 1];
			t->slabs[t->n_slabs - 1] = s;
		} else {
			t->slabs[0] = s;
			t->slab_used = SLAB; /* full: the next path opens one */
		}
		t->n_slabs++;
	} else {
		if (!t->n_slabs || SLAB - t->slab_used < n + 1) {
			if (!(s = malloc(SLAB)))
				return NULL;
			t->slabs[t->n_slabs++] = s;
			t->slab_used = 0;
		}
		s = t->slabs[t->n_slabs - 1] + t->slab_used;
		t->slab_used += n + 1;
	}
	memcpy(s, p, n);
	s[n] = '\0';
	return s;
}

void pk_tree_free(struct pk_tree *t)
{
	for (uint64_t i = 0; i < t->n; i++)
		free(t->e[i].target);
	for (uint64_t i = 0; i < t->n_slabs; i++)
		free(t->slabs[i]);
	free(t->slabs);
	free(t->e);
	free(t->map);
	pk_tree_data_free(t);
	if (t->spool_fd >= 0)
		close(t->spool_fd);
	free(t->spool_path);
	pk_tree_init(t);
}

int pk_pathcmp(const char *a, size_t alen, const char *b, size_t blen)
{
	size_t n = alen < blen ? alen : blen;
	for (size_t i = 0; i < n; i++) {
		int ca = a[i] == '/' ? 0 : (unsigned char)a[i] + 1;
		int cb = b[i] == '/' ? 0 : (unsigned char)b[i] + 1;
		if (ca != cb)
			return ca - cb;
	}
	return alen < blen ? -1 : alen > blen;
}

static uint64_t path_hash(const char *p, size_t n)
{
	return XXH3_64bits(p, n);
}

static int map_grow(struct pk_tree *t)
{
	uint64_t cap = t->map_cap ? t->map_cap * 2 : 1024;
	uint32_t *m = calloc(cap, sizeof(*m));
	if (!m)
		return -ENOMEM;
	for (uint64_t i = 0; i < t->n; i++) {
		uint64_t h = path_hash(t->e[i].path, t->e[i].path_len);
		while (m[h & (cap - 1)])
			h++;
		m[h & (cap - 1)] = (uint32_t)(i + 1);
	}
	free(t->map);
	t->map = m;
	t->map_cap = cap;
	return 0;
}

/* @return the entry index of path, or -1. */
static int64_t map_find(const struct pk_tree *t, const char *p, size_t n)
{
	if (!t->map_cap)
		return -1;
	uint64_t h = path_hash(p, n);
	for (;; h++) {
		uint32_t v = t->map[h & (t->map_cap - 1)];
		if (!v)
			return -1;
		const struct pk_entry *e = &t->e[v - 1];
		if (e->path_len == n && !memcmp(e->path, p, n))
			return (int64_t)v - 1;
	}
}

/* Append an entry (taking a copy of path) and index it. */
static int add_entry(struct pk_tree *t, const char *p, size_t n,
		     struct pk_entry **out)
{
	if (t->n >= UINT32_MAX - 1)
		return -EFBIG;
	if (t->n == t->cap) {
		uint64_t cap = t->cap ? t->cap * 2 : 4096;
		struct pk_entry *e = realloc(t->e, cap * sizeof(*e));
		if (!e)
			return -ENOMEM;
		t->e = e;
		t->cap = cap;
	}
	if ((t->n + 1) * 2 > t->map_cap && map_grow(t))
		return -ENOMEM;
	struct pk_entry *e = &t->e[t->n];
	memset(e, 0, sizeof(*e));
	e->path = pk_tree_strdup(t, p, n);
	if (!e->path)
		return -ENOMEM;
	e->path_len = (uint32_t)n;
	e->seq = (uint32_t)t->n;
	uint64_t h = path_hash(p, n);
	while (t->map[h & (t->map_cap - 1)])
		h++;
	t->map[h & (t->map_cap - 1)] = (uint32_t)(t->n + 1);
	t->n++;
	*out = e;
	return 0;
}

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
		int64_t k = map_find(t, p, i);
		if (k >= 0) {
			if (!S_ISDIR(t->e[k].mode))
				return dlfs_err_set(err, -EEXIST,
						    "%s: '%.*s' is both a "
						    "directory and a file",
						    where, (int)i, p);
			continue;
		}
		struct pk_entry *e;
		if (add_entry(t, p, i, &e))
			return dlfs_err_set(err, -ENOMEM, "out of memory");
		e->mode = S_IFDIR | 0755;
		e->mtime_sec = mtime;
		e->src = src;
		e->implicit = 1;
	}
	return 0;
}

/*
 * Add or merge an entry from a source. Directories merge; an implied
 * directory takes the attributes of a later real one. @return 0 with *out
 * set (NULL when merged into an existing directory), or -EINVAL on a
 * duplicate.
 */
static int put_entry(struct pk_tree *t, const char *p, size_t n,
		     uint32_t mode, uint32_t src, const char *where,
		     struct pk_entry **out, struct dlfs_err *err)
{
	*out = NULL;
	int64_t k = map_find(t, p, n);
	if (k >= 0) {
		struct pk_entry *old = &t->e[k];
		if (S_ISDIR(old->mode) && S_ISDIR(mode)) {
			if (old->implicit) {
				old->implicit = 0;
				old->mode = mode;
				*out = old;
			}
			return 0;
		}
		char q[512];
		dlfs_quote(p, n, q, sizeof(q));
		return dlfs_err_set(err, -EINVAL,
				    "%s: duplicate path '%s' (also given "
				    "by an earlier source or member)",
				    where, q);
	}
	int ret = add_entry(t, p, n, out);
	if (ret)
		return dlfs_err_set(err, ret, "out of memory");
	(*out)->mode = mode;
	(*out)->src = src;
	return 0;
}

int pk_tree_put(struct pk_tree *t, const char *p, size_t n, uint32_t mode,
		uint32_t src, const char *where, struct pk_entry **out,
		struct dlfs_err *err)
{
	return put_entry(t, p, n, mode, src, where, out, err);
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

/* Walk directory rel (relative to the source root; "" for the root). */
static int walk_dir(struct walk *w, const char *rel, size_t rlen)
{
	const char *full;
	int ret = walk_path(w, rel, rlen, &full);
	if (ret)
		return dlfs_err_set(w->err, ret, "out of memory");
	int dfd = dlfs_open_long(full,
				 O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW,
				 0);
	if (dfd < 0) {
		ret = dfd;
		if (w->o->skip_errors) {
			warn(w->o, "warning: skipping %s: %s", full,
			     strerror(-ret));
			return 0;
		}
		return dlfs_err_sys(w->err, ret, "%s", full);
	}
	DIR *d = fdopendir(dfd);
	if (!d) {
		ret = dlfs_err_sys(w->err, -errno, "%s", full);
		close(dfd);
		return ret;
	}
	char **names = NULL;
	size_t nn = 0, ncap = 0;
	struct dirent *de;
	errno = 0;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (nn == ncap) {
			ncap = ncap ? ncap * 2 : 64;
			char **nb = realloc(names, ncap * sizeof(*nb));
			if (!nb) {
				ret = dlfs_err_set(w->err, -ENOMEM,
						   "out of memory");
				goto out;
			}
			names = nb;
		}
		if (!(names[nn] = strdup(de->d_name))) {
			ret = dlfs_err_set(w->err, -ENOMEM, "out of memory");
			goto out;
		}
		nn++;
	}
	if (errno) {
		ret = dlfs_err_sys(w->err, -errno, "%s: readdir", full);
		goto out;
	}
	/* Sorted, so that discovery order does not depend on the fs. */
	if (nn)
		qsort(names, nn, sizeof(*names), name_cmp);

	char *sub = NULL;
	size_t subcap = 0;
	for (size_t i = 0; i < nn && !ret; i++) {
		if (w->o->cancel && *w->o->cancel) {
			ret = dlfs_err_set(w->err, -ECANCELED, "cancelled");
			break;
		}
		size_t len = strlen(names[i]);
		size_t slen = rlen + (rlen ? 1 : 0) + len;
		if (slen + 1 > subcap) {
			subcap = (slen + 1) * 2;
			char *s2 = realloc(sub, subcap);
			if (!s2) {
				ret = dlfs_err_set(w->err, -ENOMEM,
						   "out of memory");
				break;
			}
			sub = s2;
		}
		memcpy(sub, rel, rlen);
		if (rlen)
			sub[rlen] = '/';
		memcpy(sub + slen - len, names[i], len);
		sub[slen] = '\0';

		struct stat st;
		if (fstatat(dfd, names[i], &st, AT_SYMLINK_NOFOLLOW) < 0) {
			walk_path(w, sub, slen, &full);
			if (w->o->skip_errors) {
				warn(w->o, "warning: skipping %s: %s", full,
				     strerror(errno));
				continue;
			}
			ret = dlfs_err_sys(w->err, -errno, "%s", full);
			break;
		}
		if (len > DLFS_NAME_MAX) {
			walk_path(w, sub, slen, &full);
			ret = check_names(names[i], len, full, w->err);
			break;
		}
		if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode) &&
		    !S_ISLNK(st.st_mode)) {
			walk_path(w, sub, slen, &full);
			warn(w->o, "warning: skipping %s: %s", full,
			     special_kind(st.st_mode));
			continue;
		}
		if (S_ISREG(st.st_mode) && w->o->skip_errors) {
			int fd = openat(dfd, names[i],
					O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
			if (fd < 0) {
				walk_path(w, sub, slen, &full);
				warn(w->o, "warning: skipping %s: %s", full,
				     strerror(errno));
				continue;
			}
			close(fd);
		}
		struct pk_entry *e;
		walk_path(w, sub, slen, &full);
		note_hdf5(w, dfd, names[i], &st, full);
		ret = put_entry(w->t, sub, slen, st.st_mode, w->src, full, &e,
				w->err);
		if (ret || !e)
			goto recurse;
		e->mtime_sec = st.st_mtim.tv_sec;
		e->mtime_nsec = (uint32_t)st.st_mtim.tv_nsec;
		if (S_ISREG(st.st_mode)) {
			e->size = (uint64_t)st.st_size;
		} else if (S_ISLNK(st.st_mode)) {
			char *tg = malloc((size_t)st.st_size + 1);
			ssize_t n = tg ? readlinkat(dfd, names[i], tg,
						    (size_t)st.st_size + 1)
				       : -1;
			if (n < 0 || n > st.st_size) {
				free(tg);
				ret = dlfs_err_sys(w->err,
						   n < 0 ? -errno : -EAGAIN,
						   "%s: readlink", full);
				break;
			}
			e->target = tg;
			e->size = (uint64_t)n;
		}
	recurse:
		if (!ret && S_ISDIR(st.st_mode))
			ret = walk_dir(w, sub, slen);
	}
	free(sub);
out:
	for (size_t i = 0; i < nn; i++)
		free(names[i]);
	free(names);
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
		t->e[0].mode = S_IFDIR | (st.st_mode & 07777);
		t->e[0].mtime_sec = st.st_mtim.tv_sec;
		t->e[0].mtime_nsec = (uint32_t)st.st_mtim.tv_nsec;
		t->e[0].src = src;
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
			struct pk_entry *e, const char *where,
			struct dlfs_err *err)
{
	const void *buf;
	size_t len;
	la_int64_t off;
	uint64_t base = t->spool_size, got = 0;
	int rc;
	e->spool_off = base;
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
		     const char *hl, uint32_t src, const char *spool_path,
		     const char *where, struct dlfs_err *err)
{
	char hn[8192];
	ssize_t hlen = normalise(hl, hn, sizeof(hn));
	int64_t k = hlen < 0 ? -1 : map_find(t, hn, (size_t)hlen);
	if (k < 0 || !S_ISREG(t->e[k].mode))
		return dlfs_err_set(err, -EINVAL,
				    "%s: hard link to a missing or hostile "
				    "member",
				    where);
	if (t->e[k].data_from)
		k = t->e[k].data_from - 1; /* the group's first entry */
	int64_t sz = archive_entry_size_is_set(ae) ? archive_entry_size(ae)
						   : 0;
	if (sz > 0) {
		e->size = (uint64_t)sz;
		int ret = spool_open(t, spool_path, err);
		if (!ret)
			ret = spool_member(t, a, e, where, err);
		if (ret)
			return ret;
		struct pk_entry *first = &t->e[k];
		if (first->src == src && !first->data_from) {
			first->size = e->size;
			first->spool_off = e->spool_off;
		}
		return 0;
	}
	e->data_from = (uint32_t)(k + 1);
	return 0;
}

static int scan_archive(struct pk_tree *t, uint32_t src, const char *path,
			const char *spool_path, const struct dlfs_pack_opts *o,
			struct dlfs_err *err)
{
	struct archive *a = archive_read_new();
	struct archive_entry *ae;
	int ret = 0, rc;
	char norm[8192], where[8192 + 512];

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
		int e = archive_errno(a);
		ret = dlfs_err_set(err, e > 0 ? -e : -EINVAL, "%s: %s", path,
				   archive_error_string(a));
		goto out;
	}
	while ((rc = archive_read_next_header(a, &ae)) == ARCHIVE_OK ||
	       rc == ARCHIVE_WARN) {
		if (o->cancel && *o->cancel) {
			ret = dlfs_err_set(err, -ECANCELED, "cancelled");
			goto out;
		}
		const char *name = archive_entry_pathname(ae);
		if (!name) {
			ret = dlfs_err_set(err, -EINVAL,
					   "%s: member without a name", path);
			goto out;
		}
		ssize_t n = normalise(name, norm, sizeof(norm));
		char q[1024];
		dlfs_quote(name, strlen(name), q, sizeof(q));
		snprintf(where, sizeof(where), "%s: member '%s'", path, q);
		if (n == -EPERM) {
			ret = dlfs_err_set(err, -EINVAL,
					   "%s: refusing a hostile path "
					   "(absolute or with '..')",
					   where);
			goto out;
		}
		if (n < 0) {
			ret = dlfs_err_set(err, (int)n, "%s: path too long",
					   where);
			goto out;
		}
		ret = check_names(norm, (size_t)n, where, err);
		if (ret)
			goto out;
		mode_t type = archive_entry_filetype(ae);
		const char *hl = archive_entry_hardlink(ae);
		if (hl)
			type = AE_IFREG;
		if (type != AE_IFREG && type != AE_IFDIR && type != AE_IFLNK) {
			warn(o, "warning: skipping %s: %s", where,
			     special_kind(type));
			continue;
		}
		int64_t mt = archive_entry_mtime(ae);
		if (n == 0) { /* "./": the root, if no directory source */
			if (type == AE_IFDIR && !t->root_set &&
			    !t->root_from_dir) {
				t->e[0].mode =
					S_IFDIR | (archive_entry_perm(ae));
				t->e[0].mtime_sec = mt;
				t->e[0].mtime_nsec =
					(uint32_t)archive_entry_mtime_nsec(ae);
				t->root_set = 1;
			}
			continue;
		}
		ret = ensure_parents(t, norm, (size_t)n, src, mt, err, where);
		if (ret)
			goto out;
		struct pk_entry *e;
		ret = put_entry(t, norm, (size_t)n,
				(uint32_t)(type | archive_entry_perm(ae)), src,
				where, &e, err);
		if (ret)
			goto out;
		if (!e)
			continue;
		e->mtime_sec = mt;
		e->mtime_nsec = (uint32_t)archive_entry_mtime_nsec(ae);
		if (type == AE_IFLNK) {
			const char *tg = archive_entry_symlink(ae);
			e->size = tg ? strlen(tg) : 0;
			e->target = strdup(tg ? tg : "");
			if (!e->target) {
				ret = dlfs_err_set(err, -ENOMEM,
						   "out of memory");
				goto out;
			}
		} else if (hl) {
			ret = hard_link(t, a, ae, e, hl, src, spool_path,
					where, err);
			if (ret)
				goto out;
		} else if (type == AE_IFREG) {
			int64_t sz = archive_entry_size(ae);
			e->size = sz > 0 ? (uint64_t)sz : 0;
			ret = spool_open(t, spool_path, err);
			if (!ret)
				ret = spool_member(t, a, e, where, err);
			if (ret)
				goto out;
		}
	}
	if (rc != ARCHIVE_EOF) {
		int e = archive_errno(a);
		ret = dlfs_err_set(err, e > 0 ? -e : -EINVAL, "%s: %s", path,
				   archive_error_string(a));
	}
out:
	archive_read_free(a);
	return ret;
}

int pk_scan(struct pk_tree *t, const struct pk_source *src, unsigned n_src,
	    const char *spool_path, const struct dlfs_pack_opts *opts,
	    struct dlfs_err *err)
{
	struct pk_entry *root;
	int ret = add_entry(t, "", 0, &root);
	if (ret)
		return dlfs_err_set(err, ret, "out of memory");
	root->mode = S_IFDIR | 0755;
	for (unsigned i = 0; i < n_src; i++)
		if (src[i].kind == PK_SRC_DIR)
			t->root_from_dir = 1;
	for (unsigned i = 0; i < n_src; i++) {
		if (src[i].kind == PK_SRC_DIR)
			ret = scan_dir(t, i, src[i].path, opts, err);
		else if (src[i].kind == PK_SRC_ARCHIVE)
			ret = scan_archive(t, i, src[i].path, spool_path, opts,
					   err);
		else /* ingested by workers already (ingest.h) */
			ret = pk_ingest_put(t, &src[i], i, opts, err);
		if (ret)
			return ret;
	}
	/* A mount shows its control directory at the root as ".dlfs"
	 * (dlfs(1)); a dataset entry of that name needs -o ctl_dir. */
	if (map_find(t, ".dlfs", 5) >= 0)
		warn(opts,
		     "warning: the dataset has an entry '.dlfs' at its root, "
		     "the name of a mount's control directory: mount it with "
		     "-o ctl_dir=NAME to give the control directory another "
		     "name (dlfs refuses to mount it without)");
	/* Hard links take their group's content as it ended up. */
	for (uint64_t i = 0; i < t->n; i++) {
		struct pk_entry *e = &t->e[i];
		if (e->data_from)
			e->size = t->e[e->data_from - 1].size;
	}
	return 0;
}
