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

/* An environment being read (pk_lmdb_ingest): LMDB's handles, and the
 * buffers each key's file and .keys line are built in. */
struct lsrc {
	const char *path;  /* the environment, for messages */
	char *dpath;       /* its data file */
	uint64_t dsize;    /* the data file's size */
	MDB_env *env;
	MDB_txn *t;
	MDB_cursor *cur;
	size_t psize;      /* LMDB's page size */
	uintptr_t base;    /* the map's start (value_offset) */
	const char *top;
	size_t top_len;
	char *fpath;       /* TOP/NAME; fcap bytes */
	size_t fcap;
	char *line;        /* a line of .keys */
	struct pk_sink *sink;
	struct dlfs_err *err;
};

/* Open the environment read-only, without its lock file. */
static int open_env(struct lsrc *l, int subdir)
{
	int rc = mdb_env_create(&l->env);
	if (!rc)
		rc = mdb_env_set_maxdbs(l->env, 1);
	if (!rc)
		rc = mdb_env_open(l->env, l->path,
				  MDB_RDONLY | MDB_NOLOCK |
					  (subdir ? 0 : MDB_NOSUBDIR),
				  0);
	if (rc)
		return mdb_fail(l->err, rc, l->path, "opening");
	return 0;
}

/*
 * The data file must hold every page the environment says it uses: LMDB
 * reads through a map, and a page past the end of a truncated file would
 * be SIGBUS, not an error. @return 0, an MDB code, or -EIO with err set.
 */
static int check_length(struct lsrc *l, unsigned psize)
{
	MDB_envinfo info;
	mdb_filehandle_t fd;
	struct stat st;
	int rc = mdb_env_info(l->env, &info);
	if (!rc)
		rc = mdb_env_get_fd(l->env, &fd);
	if (rc)
		return rc;
	if (fstat(fd, &st))
		return dlfs_err_sys(l->err, -errno, "%s: fstat", l->path);
	uint64_t need = ((uint64_t)info.me_last_pgno + 1) * psize;
	if ((uint64_t)st.st_size < need)
		return dlfs_err_set(l->err, -EIO,
				    "%s: the data file is %lld bytes, shorter "
				    "than the %llu its pages need: truncated",
				    l->path, (long long)st.st_size,
				    (unsigned long long)need);
	return 0;
}

/* A cursor on the main database, which must have single keys. */
static int open_main(struct lsrc *l)
{
	MDB_stat ms;
	MDB_dbi dbi;
	unsigned flags = 0;
	int rc = mdb_env_stat(l->env, &ms);
	if (!rc && (ms.ms_psize < 512 || (ms.ms_psize & (ms.ms_psize - 1))))
		rc = MDB_CORRUPTED;
	if (!rc)
		rc = check_length(l, ms.ms_psize);
	if (rc < 0)
		return rc;
	if (!rc)
		rc = mdb_txn_begin(l->env, NULL, MDB_RDONLY, &l->t);
	if (!rc)
		rc = mdb_dbi_open(l->t, NULL, 0, &dbi);
	if (!rc)
		rc = mdb_dbi_flags(l->t, dbi, &flags);
	if (rc)
		return mdb_fail(l->err, rc, l->path,
				"reading the main database");
	if (flags & MDB_DUPSORT)
		return dlfs_err_set(l->err, -ENOTSUP,
				    "%s: has duplicate keys (MDB_DUPSORT): one "
				    "file per key cannot hold them",
				    l->path);
	l->psize = ms.ms_psize;
	rc = mdb_cursor_open(l->t, dbi, &l->cur);
	if (rc)
		return mdb_fail(l->err, rc, l->path,
				"reading the main database");
	return 0;
}

/* Key number nkeys: its value as a range of the data file, its name
 * and key on a line of .keys. */
static int record_key(struct lsrc *l, const MDB_val *k, const MDB_val *v,
		      uint64_t nkeys)
{
	int ret = named_db(l->t, k, v, l->path, l->err);
	if (ret)
		return ret;
	uint64_t off = 0;
	if ((v->mv_size && value_offset(v, l->psize, &l->base, &off)) ||
	    off + v->mv_size > l->dsize)
		return dlfs_err_set(l->err, -DLFS_ECORRUPT,
				    "%s: the value of key %llu lies outside %s",
				    l->path, (unsigned long long)nkeys,
				    l->dpath);
	char name[DLFS_NAME_MAX + 1];
	pk_lmdb_name(k->mv_data, k->mv_size, name);
	snprintf(l->fpath, l->fcap, "%s/%s", l->top, name);
	ret = pk_sink_ref(l->sink, l->fpath, v->mv_size, off, l->err);
	if (ret)
		return ret;
	size_t nl = strlen(name);
	memcpy(l->line, name, nl);
	l->line[nl] = '\t';
	dlfs_hex(k->mv_data, k->mv_size, l->line + nl + 1);
	nl += 1 + 2 * k->mv_size;
	l->line[nl++] = '\n';
	return pk_sink_stream(l->sink, l->line, nl, l->err);
}

/* Every key, in key order, checking for a cancel every 4096. */
static int record_keys(struct lsrc *l)
{
	MDB_val k, v;
	uint64_t nkeys = 0;
	int rc, ret;
	while (!(rc = mdb_cursor_get(l->cur, &k, &v,
				     nkeys ? MDB_NEXT : MDB_FIRST))) {
		if ((nkeys & 4095) == 0 &&
		    (ret = pk_sink_cancelled(l->sink, l->err)))
			return ret;
		ret = record_key(l, &k, &v, nkeys);
		if (ret)
			return ret;
		nkeys++;
	}
	if (rc != MDB_NOTFOUND)
		return mdb_fail(l->err, rc, l->path, "reading keys");
	return 0;
}

int pk_lmdb_ingest(const char *path, int subdir, const char *top,
		   struct pk_sink *sink, struct dlfs_err *err)
{
	struct lsrc l = {.path = path, .top = top, .top_len = strlen(top),
			 .sink = sink, .err = err};
	struct stat st;
	int ret;
	l.fcap = l.top_len + DLFS_NAME_MAX + 8;
	if (pk_lmdb_data_path(path, subdir, &l.dpath) ||
	    !(l.fpath = malloc(l.fcap)) ||
	    !(l.line = malloc(DLFS_NAME_MAX + 2 * 512 + 4))) {
		ret = dlfs_err_set(err, -ENOMEM, "out of memory");
		goto out;
	}
	if (stat(l.dpath, &st) < 0) {
		ret = dlfs_err_sys(err, -errno, "%s", l.dpath);
		goto out;
	}
	l.dsize = (uint64_t)st.st_size;
	ret = open_env(&l, subdir);
	if (!ret)
		ret = open_main(&l);
	if (ret)
		goto out;
	pk_sink_stream_begin(sink);
	ret = record_keys(&l);
	if (ret)
		goto out;
	snprintf(l.fpath, l.fcap, "%s/.keys", top);
	ret = pk_sink_stream_end(sink, l.fpath, err);
out:
	if (l.cur)
		mdb_cursor_close(l.cur);
	if (l.t)
		mdb_txn_abort(l.t);
	if (l.env)
		mdb_env_close(l.env);
	free(l.dpath);
	free(l.fpath);
	free(l.line);
	return ret;
}
