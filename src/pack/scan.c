/*
 * Sources to entries (scan.h): each source read by its kind (scan_kind.h:
 * a directory walk, scan_dir.c; an archive, scan_archive.c), or its
 * entries taken from the ingest; then what holds across sources. Also
 * the helpers the kinds share: names checked, implied directories made,
 * warnings. Directories given twice are merged, anything else given
 * twice refused.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ingest.h"
#include "scan.h"
#include "scan_kind.h"
#include "util.h"

int pk_scan_check_names(const char *p, size_t n, const char *where,
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

int pk_scan_parents(struct pk_tree *t, const char *p, size_t n, uint32_t src,
		    int64_t mtime, struct dlfs_err *err, const char *where)
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

void pk_scan_warn(const struct dlfs_pack_opts *o, const char *fmt, ...)
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

const char *pk_scan_special_kind(mode_t m)
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
			ret = pk_scan_dir(t, i, src[i].path, opts, err);
		else if (src[i].kind == PK_SRC_ARCHIVE)
			ret = pk_scan_archive(t, i, src[i].path, spool_path,
					      opts, err);
		else /* ingested by workers already (ingest.h) */
			ret = pk_ingest_put(&to, &src[i], i, opts, err);
		if (ret)
			return ret;
	}
	/* A mount shows its control directory at the root as ".dlfs"
	 * (dlfs(1)); a dataset entry of that name needs -o ctl_dir. */
	if (pk_tree_find(t, ".dlfs", 5) >= 0)
		pk_scan_warn(opts,
			     "warning: the dataset has an entry '.dlfs' at its "
			     "root, the name of a mount's control directory: "
			     "mount it with -o ctl_dir=NAME to give the "
			     "control directory another name (dlfs refuses to "
			     "mount it without)");
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
