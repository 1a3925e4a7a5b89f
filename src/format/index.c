/* The index: see index.h; lookups: include/dlfs/dataset.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "index.h"

#include "bytes.h"
#include "guard.h"
#include "records.h"
#include "util.h"

static int meta_string(MDB_txn *t, MDB_dbi dbi, const char *key, char *out,
		       size_t outlen)
{
	MDB_val k = {strlen(key), (void *)key}, v;
	int rc = mdb_get(t, dbi, &k, &v);
	if (rc) {
		out[0] = '\0';
		return rc == MDB_NOTFOUND ? 0 : dlfs_mdb_errno(rc);
	}
	size_t n = v.mv_size < outlen - 1 ? v.mv_size : outlen - 1;
	memcpy(out, v.mv_data, n);
	out[n] = '\0';
	return 0;
}

/* The meta database and its superblock: a dlfs index of a major
 * version this dlfs reads, whose features it knows, consistent. */
static int read_super(struct dlfs_index *ix, MDB_txn *t, const char *ipath,
		      struct dlfs_err *err)
{
	int rc = mdb_dbi_open(t, DLFS_DB_META, 0, &ix->dbi_meta);
	if (rc)
		return dlfs_err_set(err, -DLFS_ECORRUPT,
				    "%s: not a dlfs index (database '%s': %s)",
				    ipath, DLFS_DB_META, mdb_strerror(rc));
	MDB_val k = {strlen(DLFS_META_SUPER), DLFS_META_SUPER}, v;
	rc = mdb_get(t, ix->dbi_meta, &k, &v);
	if (rc || v.mv_size < 8)
		return dlfs_err_set(err, -DLFS_ECORRUPT,
				    "%s: not a dlfs index (no superblock)",
				    ipath);
	uint32_t major = bytes_get_le32(v.mv_data);
	uint32_t minor = bytes_get_le32((uint8_t *)v.mv_data + 4);
	if (major != DLFS_FORMAT_MAJOR)
		return dlfs_err_set(err, -EPROTONOSUPPORT,
				    "%s: unsupported format version %u.%u "
				    "(this dlfs reads version %u)",
				    ipath, major, minor, DLFS_FORMAT_MAJOR);
	struct dlfs_super_rec *s = &ix->info.super;
	if (v.mv_size < DLFS_SUPER_REC_SIZE_10 ||
	    dlfs_super_decode(v.mv_data, v.mv_size, s))
		return dlfs_err_set(err, -DLFS_ECORRUPT,
				    "%s: superblock of format %u.%u is %zu "
				    "bytes, too short",
				    ipath, major, minor, v.mv_size);
	/* Before anything else is read: an unknown feature may change what
	 * any other record means. */
	int ret = dlfs_super_features_check(s, ix->path, err);
	if (ret)
		return ret;
	if (dlfs_super_check(s))
		return dlfs_err_set(err, -DLFS_ECORRUPT,
				    "%s: superblock is inconsistent", ipath);
	return 0;
}

/* The other databases, as the superblock's features name them. */
static int open_tables(struct dlfs_index *ix, MDB_txn *t, const char *ipath,
		       struct dlfs_err *err)
{
	struct {
		const char *name;
		MDB_dbi *dbi;
	} dbs[] = {
		{dlfs_inodes_db(ix->info.super.features), &ix->dbi_inodes},
		{DLFS_DB_SYMLINKS, &ix->dbi_symlinks},
		{DLFS_DB_DIRENTS, &ix->dbi_dirents},
		{DLFS_DB_CHUNKS, &ix->dbi_chunks},
		{DLFS_DB_CONTAINERS, &ix->dbi_containers},
	};
	for (size_t i = 0; i < sizeof(dbs) / sizeof(dbs[0]); i++) {
		int rc = mdb_dbi_open(t, dbs[i].name, 0, dbs[i].dbi);
		if (rc)
			return dlfs_err_set(err, -DLFS_ECORRUPT,
					    "%s: not a dlfs index (database "
					    "'%s': %s)",
					    ipath, dbs[i].name,
					    mdb_strerror(rc));
	}
	return 0;
}

/* The dataset id in hex, and the creator, order and codec strings. */
static int read_meta(struct dlfs_index *ix, MDB_txn *t, const char *ipath,
		     struct dlfs_err *err)
{
	dlfs_hex(ix->info.super.dataset_id, DLFS_ID_SIZE,
		 ix->info.dataset_id_hex);
	int ret = meta_string(t, ix->dbi_meta, DLFS_META_CREATOR,
			      ix->info.creator, sizeof(ix->info.creator));
	if (!ret)
		ret = meta_string(t, ix->dbi_meta, DLFS_META_ORDER,
				  ix->info.order, sizeof(ix->info.order));
	if (!ret)
		ret = meta_string(t, ix->dbi_meta, DLFS_META_COMPRESS,
				  ix->info.compress, sizeof(ix->info.compress));
	if (ret)
		return dlfs_err_set(err, ret, "%s: cannot read metadata",
				    ipath);
	return 0;
}

/* In one read transaction: the superblock, the databases' handles and
 * the metadata; committed, so that the handles stay open. */
static int open_dbis(struct dlfs_index *ix, const char *ipath,
		     struct dlfs_err *err)
{
	MDB_txn *t = NULL;
	int rc = mdb_txn_begin(ix->env, NULL, MDB_RDONLY, &t);
	if (rc)
		return dlfs_err_set(err, dlfs_mdb_errno(rc), "%s: %s", ipath,
				    mdb_strerror(rc));
	MDB_stat st;
	if (!(rc = mdb_env_get_fd(ix->env, &ix->fd)) &&
	    !(rc = mdb_env_stat(ix->env, &st)))
		ix->psize = st.ms_psize;
	if (rc) {
		mdb_txn_abort(t);
		return dlfs_err_set(err, dlfs_mdb_errno(rc), "%s: %s", ipath,
				    mdb_strerror(rc));
	}
	int ret = read_super(ix, t, ipath, err);
	if (!ret)
		ret = open_tables(ix, t, ipath, err);
	if (!ret)
		ret = read_meta(ix, t, ipath, err);
	if (ret)
		goto out_txn;
	/* Committing (not aborting) keeps the database handles open. */
	rc = mdb_txn_commit(t);
	if (rc)
		return dlfs_err_set(err, dlfs_mdb_errno(rc), "%s: %s", ipath,
				    mdb_strerror(rc));
	return 0;
out_txn:
	mdb_txn_abort(t);
	return ret;
}

/*
 * Load the container table and check each record against the superblock
 * and itself. A damaged or missing record does not fail the open: the
 * container is marked bad and emptied (no data, no chunks), so its files
 * fail their dlfs_stat with -EUCLEAN and nothing downstream meets
 * impossible numbers.
 */
static int load_containers(struct dlfs_index *ix, MDB_txn *t)
{
	const struct dlfs_super_rec *s = &ix->info.super;
	uint64_t nc = s->n_containers;
	ix->cont = calloc(nc ? nc : 1, sizeof(*ix->cont));
	if (!ix->cont)
		return -ENOMEM;
	uint64_t g = 0;
	for (uint32_t c = 0; c < nc; c++) {
		uint8_t kb[4];
		bytes_put_be32(kb, c);
		MDB_val k = {4, kb}, v;
		int rc = mdb_get(t, ix->dbi_containers, &k, &v);
		if (rc && rc != MDB_NOTFOUND)
			return dlfs_mdb_errno(rc);
		dlfs_container_entry(s, rc ? NULL : v.mv_data,
				     rc ? 0 : v.mv_size, g, &ix->cont[c]);
		g += ix->cont[c].n_chunks;
	}
	ix->n_chunks = g;
	return 0;
}

int dlfs_index_open(struct dlfs_index *ix, const char *dir,
		    const char *index_path, struct dlfs_err *err)
{
	struct stat st;
	char *ipath = NULL;
	int ret, rc;
	MDB_txn *t = NULL;

	memset(ix, 0, sizeof(*ix));
	ix->path = dir;
	pthread_mutex_init(&ix->rd_lock, NULL);
	if (index_path ? !(ipath = strdup(index_path))
		       : asprintf(&ipath, "%s/%s", dir, DLFS_INDEX_NAME) < 0)
		return dlfs_err_set(err, -ENOMEM, "%s: out of memory", dir);
	if (stat(ipath, &st) < 0) {
		ret = dlfs_err_sys(err, -errno, "%s: not a dlfs dataset: %s",
				   dir, ipath);
		goto out;
	}
	ix->info.index_bytes = (uint64_t)st.st_size;
	rc = mdb_env_create(&ix->env);
	if (!rc)
		rc = mdb_env_set_maxdbs(ix->env, 8);
	/*
	 * No MDB_NORDAHEAD: its MADV_RANDOM makes every page fault one 4 KiB
	 * read, and on a parallel file system each is an I/O operation
	 * against its IOPS limit (a cold `find` or epoch walked the index a
	 * page at a time). The index is ~80 bytes per file, small beside the
	 * data, so the kernel's read-around of the faulting page is cheap.
	 */
	if (!rc)
		rc = mdb_env_open(ix->env, ipath,
				  MDB_RDONLY | MDB_NOLOCK | MDB_NOSUBDIR |
					  MDB_NOTLS,
				  0);
	if (rc) {
		ret = dlfs_err_set(err, dlfs_mdb_errno(rc),
				   "%s: cannot open index: %s", ipath,
				   mdb_strerror(rc));
		if (rc == MDB_INVALID || rc == MDB_VERSION_MISMATCH)
			dlfs_err_prefix(err, "not a dlfs dataset");
		goto out;
	}
	/*
	 * A truncated index would map pages past the end of the file and
	 * fault on first touch: refuse it while that is one comparison.
	 */
	MDB_envinfo ei;
	MDB_stat es;
	if (!mdb_env_info(ix->env, &ei) && !mdb_env_stat(ix->env, &es) &&
	    (uint64_t)st.st_size < ((uint64_t)ei.me_last_pgno + 1) * es.ms_psize) {
		ret = dlfs_err_set(err, -DLFS_ECORRUPT,
				   "%s: index is truncated: %llu bytes, its "
				   "pages need %llu",
				   ipath, (unsigned long long)st.st_size,
				   ((unsigned long long)ei.me_last_pgno + 1) *
					   es.ms_psize);
		goto out;
	}
	ret = open_dbis(ix, ipath, err);
	if (ret)
		goto out;
	rc = mdb_txn_begin(ix->env, NULL, MDB_RDONLY, &t);
	ret = rc ? dlfs_mdb_errno(rc) : load_containers(ix, t);
	if (ret)
		dlfs_err_sys(err, ret, "%s: reading the container records",
			     ipath);
	else
		ret = dlfs_archives_load(ix, t, err);
	if (t)
		mdb_txn_abort(t);
out:
	free(ipath);
	return ret;
}

void dlfs_index_close(struct dlfs_index *ix)
{
	if (ix->env)
		mdb_env_close(ix->env);
	ix->env = NULL;
	dlfs_archives_free(ix);
	free(ix->cont);
	ix->cont = NULL;
	pthread_mutex_destroy(&ix->rd_lock);
}

/*
 * Begin t's transaction and open its dirents cursor, inside a guard.
 * mdb_txn_begin reads the meta pages, and the first use of a named
 * database reads the main database's root page to find its record: on a
 * damaged or truncated index either can fault. The record is loaded by
 * mdb_stat on a cursor of LMDB's own stack first, so that a fault cannot
 * strand the cursor mdb_cursor_open would have allocated; that call then
 * touches no page.
 */
static int txn_begin_in(void *v)
{
	struct dlfs_txn *t = v;
	MDB_stat st;
	int rc = mdb_txn_begin(t->ix->env, NULL, MDB_RDONLY, &t->txn);
	if (!rc)
		rc = mdb_stat(t->txn, t->ix->dbi_dirents, &st);
	if (!rc)
		rc = mdb_cursor_open(t->txn, t->ix->dbi_dirents, &t->dirents);
	return rc ? dlfs_err_set(t->err, dlfs_mdb_errno(rc), "%s/index: %s",
				 t->ix->path, mdb_strerror(rc))
		  : 0;
}

int dlfs_index_txn_begin(struct dlfs_index *ix, struct dlfs_txn **out,
			 struct dlfs_err *err)
{
	struct dlfs_txn *t = calloc(1, sizeof(*t));
	if (!t)
		return dlfs_err_set(err, -ENOMEM, "%s: out of memory",
				    ix->path);
	t->ix = ix;
	/* A read transaction begins with the two meta pages: if a truncated
	 * index lost them, LMDB would fault inside mdb_txn_begin and leave
	 * its half-begun transaction behind. (One call per worker thread.) */
	struct stat st;
	if (fstat(ix->fd, &st) == 0 && (uint64_t)st.st_size < 2 * ix->psize) {
		free(t);
		return dlfs_err_set(err, -DLFS_ECORRUPT,
				    "%s/index: %lld bytes, shorter than its "
				    "meta pages: truncated",
				    ix->path, (long long)st.st_size);
	}
	t->err = err;
	int ret = dlfs_guard_run(ix->path, err, txn_begin_in, t);
	t->err = NULL;
	if (ret) {
		if (t->txn)
			mdb_txn_abort(t->txn);
		free(t);
		return ret;
	}
	*out = t;
	return 0;
}

void dlfs_txn_end(struct dlfs_txn *txn)
{
	if (!txn)
		return;
	mdb_cursor_close(txn->dirents);
	mdb_txn_abort(txn->txn);
	free(txn);
}
