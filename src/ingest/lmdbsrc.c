/* LMDB environments as sources: see lmdbsrc.h. */
#include <fcntl.h>
#include <lmdb.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "dlfs/format.h"
#include "lmdbsrc.h"
#include "util.h"

int pk_lmdb_data_path(const char *path, int subdir, char **out)
{
	if (subdir)
		return asprintf(out, "%s/data.mdb", path) < 0 ? -ENOMEM : 0;
	*out = strdup(path);
	return *out ? 0 : -ENOMEM;
}

static int good_name(const unsigned char *k, size_t n)
{
	if (n < 1 || n > DLFS_NAME_MAX || k[0] == '.' || k[0] == '%')
		return 0;
	for (size_t i = 0; i < n; i++)
		if (k[i] < 0x20 || k[i] == 0x7f || k[i] == '/')
			return 0;
	return dlfs_utf8_valid(k, n);
}

void pk_lmdb_name(const void *key, size_t len, char *out)
{
	if (good_name(key, len)) {
		memcpy(out, key, len);
		out[len] = '\0';
	} else if (len <= (DLFS_NAME_MAX - 1) / 2) {
		out[0] = '%';
		dlfs_hex(key, len, out + 1);
	} else {
		XXH128_canonical_t c;
		XXH128_canonicalFromHash(&c, XXH3_128bits(key, len));
		out[0] = out[1] = '%';
		dlfs_hex(c.digest, sizeof(c.digest), out + 2);
	}
}

static int mdb_fail(struct dlfs_err *err, int rc, const char *path,
		    const char *what)
{
	if (rc == MDB_INVALID || rc == MDB_VERSION_MISMATCH)
		return dlfs_err_set(err, dlfs_mdb_errno(rc),
				    "%s: not an LMDB environment this build "
				    "can read (%s)",
				    path, mdb_strerror(rc));
	return dlfs_err_set(err, dlfs_mdb_errno(rc), "%s: %s: %s", path, what,
			    mdb_strerror(rc));
}

/*
 * Where a value lies in the data file. LMDB gives a pointer into its map
 * and no map address, but every page starts with its own page number
 * (mp_pgno, 8 bytes on 64-bit builds; the on-disk format of LMDB 0.9)
 * and the map is page-aligned: the page holding the value, minus its
 * number times the page size, is the map's start. Every value must give
 * the same start, which checks the reasoning as we go.
 */
static int value_offset(const MDB_val *v, size_t psize, uintptr_t *base,
			uint64_t *off)
{
	uintptr_t p = (uintptr_t)v->mv_data, page = p & ~(uintptr_t)(psize - 1);
	uint64_t pgno;
	memcpy(&pgno, (const void *)page, sizeof(pgno));
	uintptr_t b = page - (uintptr_t)(pgno * psize);
	if (!*base)
		*base = b;
	if (b != *base || p < b)
		return -DLFS_ECORRUPT;
	*off = p - b;
	return 0;
}

/* A key whose 48-byte value opens as a database names a sub-database. */
static int named_db(MDB_txn *t, const MDB_val *k, const MDB_val *v,
		    const char *path, struct dlfs_err *err)
{
	char name[512];
	if (v->mv_size != 48 || k->mv_size >= sizeof(name) ||
	    memchr(k->mv_data, 0, k->mv_size))
		return 0;
	memcpy(name, k->mv_data, k->mv_size);
	name[k->mv_size] = '\0';
	MDB_dbi sub;
	int rc = mdb_dbi_open(t, name, 0, &sub);
	if (rc == MDB_INCOMPATIBLE || rc == MDB_NOTFOUND)
		return 0;
	if (rc)
		return mdb_fail(err, rc, path, "checking for named databases");
	char q[128];
	dlfs_quote(name, strlen(name), q, sizeof(q));
	return dlfs_err_set(err, -ENOTSUP,
			    "%s: holds named databases ('%s'): only "
			    "environments with just the main database can be "
			    "packed",
			    path, q);
}

int pk_lmdb_ingest(const char *path, int subdir, const char *top,
		   struct pk_sink *sink, struct dlfs_err *err)
{
	MDB_env *env = NULL;
	MDB_txn *t = NULL;
	MDB_cursor *cur = NULL;
	MDB_dbi dbi;
	MDB_stat ms;
	MDB_val k, v;
	uintptr_t base = 0;
	char *dpath = NULL, *fpath = NULL, *line = NULL;
	struct stat st;
	int rc, ret = 0;
	size_t top_len = strlen(top);

	if (pk_lmdb_data_path(path, subdir, &dpath) ||
	    !(fpath = malloc(top_len + DLFS_NAME_MAX + 8)) ||
	    !(line = malloc(DLFS_NAME_MAX + 2 * 512 + 4))) {
		ret = dlfs_err_set(err, -ENOMEM, "out of memory");
		goto out;
	}
	if (stat(dpath, &st) < 0) {
		ret = dlfs_err_sys(err, -errno, "%s", dpath);
		goto out;
	}
	rc = mdb_env_create(&env);
	if (!rc)
		rc = mdb_env_set_maxdbs(env, 1);
	if (!rc)
		rc = mdb_env_open(env, path,
				  MDB_RDONLY | MDB_NOLOCK |
					  (subdir ? 0 : MDB_NOSUBDIR),
				  0);
	if (rc) {
		ret = mdb_fail(err, rc, path, "opening");
		goto out;
	}
	rc = mdb_env_stat(env, &ms);
	if (!rc && (ms.ms_psize < 512 || (ms.ms_psize & (ms.ms_psize - 1))))
		rc = MDB_CORRUPTED;
	if (!rc)
		rc = mdb_txn_begin(env, NULL, MDB_RDONLY, &t);
	if (!rc)
		rc = mdb_dbi_open(t, NULL, 0, &dbi);
	unsigned flags = 0;
	if (!rc)
		rc = mdb_dbi_flags(t, dbi, &flags);
	if (rc) {
		ret = mdb_fail(err, rc, path, "reading the main database");
		goto out;
	}
	if (flags & MDB_DUPSORT) {
		ret = dlfs_err_set(err, -ENOTSUP,
				   "%s: has duplicate keys (MDB_DUPSORT): one "
				   "file per key cannot hold them",
				   path);
		goto out;
	}
	rc = mdb_cursor_open(t, dbi, &cur);
	if (rc) {
		ret = mdb_fail(err, rc, path, "reading the main database");
		goto out;
	}
	pk_sink_stream_begin(sink);
	uint64_t nkeys = 0;
	while (!(rc = mdb_cursor_get(cur, &k, &v, nkeys ? MDB_NEXT
							  : MDB_FIRST))) {
		if ((nkeys & 4095) == 0 &&
		    (ret = pk_sink_cancelled(sink, err)))
			goto out;
		ret = named_db(t, &k, &v, path, err);
		if (ret)
			goto out;
		uint64_t off = 0;
		if ((v.mv_size &&
		     value_offset(&v, ms.ms_psize, &base, &off)) ||
		    off + v.mv_size > (uint64_t)st.st_size) {
			ret = dlfs_err_set(err, -DLFS_ECORRUPT,
					   "%s: the value of key %llu lies "
					   "outside %s",
					   path, (unsigned long long)nkeys,
					   dpath);
			goto out;
		}
		char name[DLFS_NAME_MAX + 1];
		pk_lmdb_name(k.mv_data, k.mv_size, name);
		snprintf(fpath, top_len + DLFS_NAME_MAX + 8, "%s/%s", top,
			 name);
		ret = pk_sink_ref(sink, fpath, v.mv_size, off, err);
		if (ret)
			goto out;
		size_t nl = strlen(name);
		memcpy(line, name, nl);
		line[nl] = '\t';
		dlfs_hex(k.mv_data, k.mv_size, line + nl + 1);
		nl += 1 + 2 * k.mv_size;
		line[nl++] = '\n';
		ret = pk_sink_stream(sink, line, nl, err);
		if (ret)
			goto out;
		nkeys++;
	}
	if (rc != MDB_NOTFOUND) {
		ret = mdb_fail(err, rc, path, "reading keys");
		goto out;
	}
	snprintf(fpath, top_len + DLFS_NAME_MAX + 8, "%s/.keys", top);
	ret = pk_sink_stream_end(sink, fpath, err);
out:
	if (cur)
		mdb_cursor_close(cur);
	if (t)
		mdb_txn_abort(t);
	if (env)
		mdb_env_close(env);
	free(dpath);
	free(fpath);
	free(line);
	return ret;
}
