/*
 * Archive sources (scan_kind.h): one pass over the archive with
 * libarchive, every member's name normalised and hostile ones refused,
 * its bytes copied to the spool, where the pipeline reads them.
 */
#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "scan_kind.h"
#include "util.h"

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
	ssize_t hlen = pk_scan_normalise(hl, hn, sizeof(hn));
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
	ssize_t n = pk_scan_normalise(name, norm, ncap);
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
	int ret = pk_scan_check_names(norm, (size_t)n, where, r->err);
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
		pk_scan_warn(r->o, "warning: skipping %s: %s", where,
			     pk_scan_special_kind(type));
		return 0;
	}
	if (n == 0) /* "./": the root, if no directory source */
		return archive_root(r->t, ae, type, r->err);
	int64_t mt = archive_entry_mtime(ae);
	int ret = pk_scan_parents(r->t, norm, (size_t)n, r->src, mt, r->err,
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

int pk_scan_archive(struct pk_tree *t, uint32_t src, const char *path,
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
