/*
 * Sources to entries (scan.h): each source read by its kind (scan_kind.h:
 * a directory walk, scan_dir.c; an archive, scan_archive.c), or its
 * entries taken from the ingest; then what holds across sources.
 * Directories given twice are merged, anything else given twice refused.
 */
#include <sys/stat.h>

#include "ingest.h"
#include "scan.h"
#include "scan_kind.h"
#include "util.h"

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
