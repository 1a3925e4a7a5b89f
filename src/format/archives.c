/*
 * The archive table of an in-place dataset (format.h, DLFS_DB_ARCHIVES):
 * loaded with the container table when the index opens, each record
 * checked against itself; and the check a mount makes of every archive
 * before it serves one byte (dlfs_ds_check_archives).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bytes.h"
#include "ds_priv.h"
#include "index.h"
#include "util.h"

/* Record c of the table, or bad when missing or damaged. */
static int load_one(struct dlfs_index *ix, MDB_txn *t, MDB_dbi dbi,
		    uint32_t c, struct dlfs_archive *a)
{
	uint8_t kb[4];
	bytes_put_be32(kb, c);
	MDB_val k = {4, kb}, v;
	int rc = mdb_get(t, dbi, &k, &v);
	if (rc && rc != MDB_NOTFOUND)
		return dlfs_mdb_errno(rc);
	a->bad = -DLFS_ECORRUPT;
	if (rc || v.mv_size < DLFS_ARCHIVE_REC_SIZE)
		return 0;
	struct dlfs_archive_rec r;
	dlfs_archive_rec_decode(v.mv_data, &r);
	const char *p = (const char *)v.mv_data + DLFS_ARCHIVE_REC_SIZE;
	if (r.path_len == 0 || r.path_len > DLFS_ARCHIVE_PATH_MAX ||
	    v.mv_size != DLFS_ARCHIVE_REC_SIZE + r.path_len ||
	    memchr(p, '\0', r.path_len) ||
	    (r.kind != DLFS_ARCHIVE_TAR && r.kind != DLFS_ARCHIVE_ZIP) ||
	    r.size != ix->cont[c].file_size || r.mtime_nsec >= 1000000000u)
		return 0;
	if (!(a->path = strndup(p, r.path_len)))
		return -ENOMEM;
	a->size = r.size;
	a->mtime_sec = r.mtime_sec;
	a->mtime_nsec = r.mtime_nsec;
	a->kind = r.kind;
	a->bad = 0;
	return 0;
}

int dlfs_archives_load(struct dlfs_index *ix, MDB_txn *t,
		       struct dlfs_err *err)
{
	const struct dlfs_super_rec *s = &ix->info.super;
	if (!(s->features & DLFS_FEATURE(IN_PLACE)))
		return 0;
	MDB_dbi dbi;
	int rc = mdb_dbi_open(t, DLFS_DB_ARCHIVES, 0, &dbi);
	if (rc)
		return dlfs_err_set(err, -DLFS_ECORRUPT,
				    "%s: an in-place dataset without its "
				    "archive table (%s): damaged",
				    ix->path, mdb_strerror(rc));
	uint64_t nc = s->n_containers;
	ix->arc = calloc(nc ? nc : 1, sizeof(*ix->arc));
	if (!ix->arc)
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	for (uint32_t c = 0; c < nc; c++) {
		int ret = load_one(ix, t, dbi, c, &ix->arc[c]);
		if (ret)
			return dlfs_err_sys(err, ret,
					    "%s: reading archive record %u",
					    ix->path, c);
		/* A damaged archive record makes its container unusable, as
		 * a damaged container record does. */
		if (ix->arc[c].bad && !ix->cont[c].bad) {
			ix->cont[c].bad = ix->arc[c].bad;
			ix->cont[c].n_chunks = 0;
			ix->cont[c].data_size = 0;
		}
	}
	return 0;
}

void dlfs_archives_free(struct dlfs_index *ix)
{
	if (ix->arc)
		for (uint64_t c = 0; c < ix->info.super.n_containers; c++)
			free(ix->arc[c].path);
	free(ix->arc);
	ix->arc = NULL;
}

const struct dlfs_archive *dlfs_ds_archive(const struct dlfs_ds *ds,
					   uint32_t c)
{
	if (!ds->ix.arc || c >= ds->ix.info.super.n_containers)
		return NULL;
	return &ds->ix.arc[c];
}

int dlfs_archive_path(const struct dlfs_ds *ds, uint32_t c, char **out)
{
	const struct dlfs_archive *a = dlfs_ds_archive(ds, c);
	*out = NULL;
	if (!a || !a->path)
		return -ENOENT;
	int n = a->path[0] == '/' ? asprintf(out, "%s", a->path)
				  : asprintf(out, "%s/%s", ds->path, a->path);
	if (n < 0) {
		*out = NULL;
		return -ENOMEM;
	}
	return 0;
}

/* Is the archive at cpath the one record a describes? */
static int same_archive(const struct dlfs_archive *a, const char *cpath,
			const struct stat *st, struct dlfs_err *err)
{
	if ((uint64_t)st->st_size != a->size)
		return dlfs_err_set(err, -DLFS_ECORRUPT,
				    "%s: the archive changed since it was "
				    "indexed: %llu bytes, the index says %llu "
				    "(index it again: dlfs-pack --in-place)",
				    cpath, (unsigned long long)st->st_size,
				    (unsigned long long)a->size);
	if (st->st_mtim.tv_sec != a->mtime_sec ||
	    (uint32_t)st->st_mtim.tv_nsec != a->mtime_nsec)
		return dlfs_err_set(err, -DLFS_ECORRUPT,
				    "%s: the archive changed since it was "
				    "indexed: modified at %lld.%09ld, the "
				    "index says %lld.%09u (index it again: "
				    "dlfs-pack --in-place)",
				    cpath, (long long)st->st_mtim.tv_sec,
				    (long)st->st_mtim.tv_nsec,
				    (long long)a->mtime_sec, a->mtime_nsec);
	return 0;
}

int dlfs_archive_check_fd(const struct dlfs_ds *ds, uint32_t c, int fd,
			  const char *cpath, struct dlfs_err *err)
{
	const struct dlfs_archive *a = dlfs_ds_archive(ds, c);
	struct stat st;
	if (!a || a->bad)
		return dlfs_err_set(err, -DLFS_ECORRUPT,
				    "%s/index: the record of archive %u is "
				    "damaged",
				    ds->path, c);
	if (fstat(fd, &st) < 0)
		return dlfs_err_sys(err, -errno, "%s", cpath);
	return same_archive(a, cpath, &st, err);
}

int dlfs_ds_check_archives(struct dlfs_ds *ds, struct dlfs_err *err)
{
	uint64_t nc = ds->ix.info.super.n_containers;
	if (!ds->ix.arc)
		return 0;
	for (uint32_t c = 0; c < nc; c++) {
		const struct dlfs_archive *a = &ds->ix.arc[c];
		char *cpath = NULL;
		struct stat st;
		if (a->bad)
			return dlfs_err_set(err, -DLFS_ECORRUPT,
					    "%s/index: the record of archive "
					    "%u is damaged",
					    ds->path, c);
		if (dlfs_archive_path(ds, c, &cpath))
			return dlfs_err_set(err, -ENOMEM, "out of memory");
		int ret = 0;
		if (stat(cpath, &st) < 0)
			ret = dlfs_err_sys(err, -errno,
					   "%s: an archive of the in-place "
					   "dataset %s",
					   cpath, ds->path);
		else if (!S_ISREG(st.st_mode))
			ret = dlfs_err_set(err, -DLFS_ECORRUPT,
					   "%s: an archive of the in-place "
					   "dataset %s is not a regular file",
					   cpath, ds->path);
		else
			ret = same_archive(a, cpath, &st, err);
		free(cpath);
		if (ret)
			return ret;
	}
	return 0;
}
