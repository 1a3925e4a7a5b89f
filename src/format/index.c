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

int dlfs_mdb_errno(int rc)
{
	switch (rc) {
	case MDB_SUCCESS:
		return 0;
	case MDB_NOTFOUND:
		return -ENOENT;
	case MDB_MAP_FULL:
		return -ENOSPC;
	case MDB_CORRUPTED:
	case MDB_PAGE_NOTFOUND:
	case MDB_INVALID:
	case MDB_VERSION_MISMATCH:
	case MDB_BAD_VALSIZE:
	case MDB_INCOMPATIBLE:
		return -DLFS_ECORRUPT;
	default:
		return rc > 0 ? -rc : -EIO;
	}
}

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


static int stat_in(struct dlfs_txn *txn, uint64_t ino, struct dlfs_inode *out,
		   struct dlfs_err *err)
{
	struct dlfs_index *ix = txn->ix;
	if (ino < 1 || ino > ix->info.super.n_inodes)
		return dlfs_err_set(err, -ENOENT, "%s: no inode %llu",
				    ix->path, (unsigned long long)ino);
	uint8_t kb[8];
	bytes_put_be64(kb, (ino - 1) / DLFS_INODES_PER_BLOCK);
	MDB_val k = {8, kb}, v;
	int rc = mdb_get(txn->txn, ix->dbi_inodes, &k, &v);
	if (rc)
		return dlfs_err_set(err,
				    rc == MDB_NOTFOUND ? -DLFS_ECORRUPT
						       : dlfs_mdb_errno(rc),
				    "%s/index: inode %llu: %s", ix->path,
				    (unsigned long long)ino, mdb_strerror(rc));
	int ret = dlfs_inode_rec_check(&ix->info.super, ix->cont, ix->path, ino,
				       v.mv_data, v.mv_size, out, err);
	if (ret || !S_ISLNK(out->mode))
		return ret;
	bytes_put_be64(kb, ino);
	rc = mdb_get(txn->txn, ix->dbi_symlinks, &k, &v);
	if (rc || v.mv_size != out->size)
		return dlfs_err_set(err, -DLFS_ECORRUPT,
				    "%s/index: inode %llu is damaged",
				    ix->path, (unsigned long long)ino);
	out->target = v.mv_data;
	/* Callers read the target outside any guard: fault here if its
	 * last byte lies past the end of the file. */
	if (out->size)
		(void)*(volatile const char *)(out->target + out->size - 1);
	return 0;
}

/* Inodes first .. first + n - 1: one lookup a block of them. */
static int stat_range_in(struct dlfs_txn *txn, uint64_t first, uint64_t n,
			 dlfs_inode_cb cb, void *arg, struct dlfs_err *err)
{
	struct dlfs_index *ix = txn->ix;
	if (first < 1 || n > ix->info.super.n_inodes ||
	    first - 1 > ix->info.super.n_inodes - n)
		return dlfs_err_set(err, -ENOENT, "%s: no inodes %llu .. %llu",
				    ix->path, (unsigned long long)first,
				    (unsigned long long)(first + n - 1));
	MDB_val v = {0, NULL};
	uint64_t block = UINT64_MAX;
	for (uint64_t ino = first; ino < first + n; ino++) {
		struct dlfs_inode in;
		int ret;
		if ((ino - 1) / DLFS_INODES_PER_BLOCK != block) {
			block = (ino - 1) / DLFS_INODES_PER_BLOCK;
			uint8_t kb[8];
			bytes_put_be64(kb, block);
			MDB_val k = {8, kb};
			int rc = mdb_get(txn->txn, ix->dbi_inodes, &k, &v);
			if (rc)
				return dlfs_err_set(
					err,
					rc == MDB_NOTFOUND ? -DLFS_ECORRUPT
							   : dlfs_mdb_errno(rc),
					"%s/index: inode %llu: %s", ix->path,
					(unsigned long long)ino,
					mdb_strerror(rc));
		}
		ret = dlfs_inode_rec_check(&ix->info.super, ix->cont, ix->path,
					   ino, v.mv_data, v.mv_size, &in, err);
		/* A symlink's target is a lookup of its own. */
		if (!ret && S_ISLNK(in.mode))
			ret = stat_in(txn, ino, &in, err);
		if (!ret)
			ret = cb(arg, &in);
		if (ret)
			return ret;
	}
	return 0;
}

static int lookup_in(struct dlfs_txn *txn, uint64_t parent, const char *name,
		     size_t len, uint64_t *ino, struct dlfs_err *err)
{
	struct dlfs_index *ix = txn->ix;
	uint8_t kb[8 + DLFS_NAME_MAX];
	if (len > DLFS_NAME_MAX)
		return dlfs_err_set(err, -ENAMETOOLONG, "name too long");
	bytes_put_be64(kb, parent);
	memcpy(kb + 8, name, len);
	MDB_val k = {8 + len, kb}, v;
	int rc = mdb_get(txn->txn, ix->dbi_dirents, &k, &v);
	if (rc == MDB_NOTFOUND) {
		/* Only pay for the parent check on the failure path. */
		struct dlfs_inode p;
		if (dlfs_stat(txn, parent, &p, NULL) == 0 &&
		    !S_ISDIR(p.mode))
			return dlfs_err_sys(err, -ENOTDIR, "inode %llu",
					    (unsigned long long)parent);
		return dlfs_err_sys(err, -ENOENT, "'%.*s'", (int)len, name);
	}
	if (rc)
		return dlfs_err_set(err, dlfs_mdb_errno(rc),
				    "%s/index: %s", ix->path,
				    mdb_strerror(rc));
	uint32_t type;
	if (dlfs_dirent_val_decode(&ix->info.super, v.mv_data, v.mv_size, ino,
				   &type)) {
		char q[4 * DLFS_NAME_MAX + 1];
		dlfs_quote(name, len, q, sizeof(q));
		return dlfs_err_set(err, -DLFS_ECORRUPT,
				    "%s/index: damaged directory entry '%s'",
				    ix->path, q);
	}
	return 0;
}

/* Inode ino, reached through entry name of directory parent: decoded,
 * checked, and bound to that entry (dlfs_inode_bound_check). */
static int stat_entry_in(struct dlfs_txn *txn, uint64_t parent,
			 const char *name, size_t len, uint64_t ino,
			 struct dlfs_inode *out, struct dlfs_err *err)
{
	int ret = stat_in(txn, ino, out, err);
	if (!ret)
		ret = dlfs_inode_bound_check(&txn->ix->info.super,
					     txn->ix->path, parent, name, len,
					     out, err);
	return ret;
}

static int lookup_stat_in(struct dlfs_txn *txn, uint64_t parent,
			  const char *name, size_t len, struct dlfs_inode *out,
			  struct dlfs_err *err)
{
	uint64_t ino;
	int ret = lookup_in(txn, parent, name, len, &ino, err);
	return ret ? ret : stat_entry_in(txn, parent, name, len, ino, out, err);
}

/* A lookup alone: only a path-bound dataset pays for the record, which
 * is what proves the entry leads to its own inode. */
static int lookup_bound_in(struct dlfs_txn *txn, uint64_t parent,
			   const char *name, size_t len, uint64_t *ino,
			   struct dlfs_err *err)
{
	if (!(txn->ix->info.super.features & DLFS_FEATURE(PATH_BOUND)))
		return lookup_in(txn, parent, name, len, ino, err);
	struct dlfs_inode in;
	int ret = lookup_stat_in(txn, parent, name, len, &in, err);
	if (!ret)
		*ino = in.ino;
	return ret;
}

int dlfs_resolve(struct dlfs_txn *txn, const char *path, uint64_t *ino,
		 struct dlfs_err *err)
{
	uint64_t cur = DLFS_ROOT_INO;
	const char *p = path;
	while (*p) {
		while (*p == '/')
			p++;
		const char *end = strchrnul(p, '/');
		size_t len = (size_t)(end - p);
		if (len == 0)
			break;
		if (len == 1 && p[0] == '.') {
			p = end;
			continue;
		}
		if (len == 2 && p[0] == '.' && p[1] == '.')
			return dlfs_err_set(err, -EINVAL,
					    "%s: '..' is not supported", path);
		int ret = dlfs_lookup(txn, cur, p, len, &cur, err);
		if (ret)
			return dlfs_err_prefix(err, "%s", path);
		p = end;
	}
	*ino = cur;
	return 0;
}

/*
 * The resume slots are found by search, not by hash: there are few, and a
 * search under the lock costs nothing next to a cursor seek. A call that
 * resumed from a slot stores its new stop in that same slot, so each
 * lister of a directory keeps its own slot while it goes on, and several
 * listers of one large directory never evict each other (a slot chosen by
 * a hash of the directory alone would be shared by all of them, each
 * would then skip from the start on every call, and n entries would cost
 * O(n^2)). A new lister takes an empty slot, else the one unused longest.
 */
static int rd_recall(struct dlfs_index *ix, uint64_t dir, uint64_t pos,
		     uint8_t *key, size_t *key_len)
{
	int hit = -1;
	pthread_mutex_lock(&ix->rd_lock);
	for (int i = 0; i < DLFS_RD_SLOTS && pos; i++) {
		struct dlfs_rd_slot *s = &ix->rd[i];
		if (s->pos == pos && s->dir == dir) {
			memcpy(key, s->key, s->key_len);
			*key_len = s->key_len;
			s->used = ++ix->rd_clock;
			hit = i;
			break;
		}
	}
	pthread_mutex_unlock(&ix->rd_lock);
	return hit;
}

/* Remember where a readdir of dir stopped (pos entries consumed, the last
 * one's key); slot is the one it resumed from, or -1. */
static void rd_remember(struct dlfs_index *ix, uint64_t dir, uint64_t pos,
			const MDB_val *key, int slot)
{
	if (key->mv_size > sizeof(ix->rd[0].key))
		return;
	pthread_mutex_lock(&ix->rd_lock);
	if (slot < 0 || ix->rd[slot].dir != dir) {
		slot = 0;
		for (int i = 0; i < DLFS_RD_SLOTS; i++) {
			if (!ix->rd[i].pos) {
				slot = i;
				break;
			}
			if (ix->rd[i].used < ix->rd[slot].used)
				slot = i;
		}
	}
	struct dlfs_rd_slot *s = &ix->rd[slot];
	s->dir = dir;
	s->pos = pos;
	s->used = ++ix->rd_clock;
	s->key_len = key->mv_size;
	memcpy(s->key, key->mv_data, key->mv_size);
	pthread_mutex_unlock(&ix->rd_lock);
}

static int readdir_in(struct dlfs_txn *txn, uint64_t dir, uint64_t cookie,
		      dlfs_dir_cb cb, void *arg, struct dlfs_err *err)
{
	struct dlfs_index *ix = txn->ix;
	uint8_t kb[8 + DLFS_NAME_MAX];
	size_t klen = 8;
	MDB_cursor *c = txn->dirents;
	MDB_val k, v;
	int rc, ret = 0;
	uint64_t pos = 0;
	int slot = -1;

	bytes_put_be64(kb, dir);
	if (cookie && (slot = rd_recall(ix, dir, cookie, kb, &klen)) >= 0) {
		k.mv_size = klen;
		k.mv_data = kb;
		rc = mdb_cursor_get(c, &k, &v, MDB_SET);
		if (!rc)
			rc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
		pos = cookie;
	} else {
		k.mv_size = 8;
		k.mv_data = kb;
		rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE);
		/* Skip to the cookie: a cold resume, correct but O(cookie). */
		while (!rc && pos < cookie && k.mv_size >= 8 &&
		       bytes_get_be64(k.mv_data) == dir) {
			pos++;
			rc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
		}
		atomic_fetch_add_explicit(&ix->rd_skipped, pos,
					  memory_order_relaxed);
	}
	MDB_val last = {0, NULL};
	for (; !rc; rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
		if (k.mv_size < 8 || bytes_get_be64(k.mv_data) != dir)
			break;
		struct dlfs_dirent d;
		if (dlfs_dirent_decode(&ix->info.super, k.mv_data, k.mv_size,
				       v.mv_data, v.mv_size, &d))
			return dlfs_err_set(err, -DLFS_ECORRUPT,
					    "%s/index: damaged directory "
					    "entry at position %llu of "
					    "directory inode %llu",
					    ix->path, (unsigned long long)pos,
					    (unsigned long long)dir);
		d.cookie = pos + 1;
		ret = cb(arg, &d);
		if (ret)
			break;
		pos++;
		last = k;
	}
	if (rc && rc != MDB_NOTFOUND)
		return dlfs_err_set(err, dlfs_mdb_errno(rc), "%s/index: %s",
				    ix->path, mdb_strerror(rc));
	/* Also at the end: a lister's next call (FUSE's, which finds the
	 * end) then costs one seek too. */
	if (last.mv_data && ret >= 0 && last.mv_size <= sizeof(kb)) {
		/* A copy: rd_remember holds a lock, and a map access must
		 * not fault under one (guard.h). */
		memcpy(kb, last.mv_data, last.mv_size);
		last.mv_data = kb;
		rd_remember(ix, dir, pos, &last, slot);
	}
	if (ret >= 0)
		return 0;
	/* A callback's own error (its code in err) keeps its words. */
	if (err && err->code == ret)
		return dlfs_err_prefix(err, "readdir of inode %llu",
				       (unsigned long long)dir);
	return dlfs_err_set(err, ret, "readdir of inode %llu",
			    (unsigned long long)dir);
}

/*
 * A chunk record is checked against the container table as it is read:
 * chunk k exists, and its length is the one the table implies (the chunk
 * size, or what is left of the data region for the last chunk). Every
 * reader sizes its buffers by the chunk size, so a longer record would
 * overflow them.
 */
static int chunk_get_in(struct dlfs_txn *txn, uint32_t c, uint64_t k,
			struct dlfs_chunk_rec *out, struct dlfs_err *err)
{
	const struct dlfs_index *ix = txn->ix;
	if (c >= ix->info.super.n_containers || ix->cont[c].bad ||
	    k >= ix->cont[c].n_chunks)
		return dlfs_err_set(err,
				    c < ix->info.super.n_containers &&
						    ix->cont[c].bad
					    ? -DLFS_ECORRUPT
					    : -ENOENT,
				    "%s/index: chunk %llu of container %u: %s",
				    ix->path, (unsigned long long)k, c,
				    c < ix->info.super.n_containers &&
						    ix->cont[c].bad
					    ? "the container's record is "
					      "damaged"
					    : "no such chunk");
	uint8_t kb[8];
	bytes_put_be32(kb, c);
	bytes_put_be32(kb + 4, (uint32_t)k);
	MDB_val key = {8, kb}, v;
	int rc = mdb_get(txn->txn, ix->dbi_chunks, &key, &v);
	if (rc == MDB_NOTFOUND)
		rc = MDB_CORRUPTED; /* the table says it exists */
	if (rc)
		return dlfs_err_set(err, dlfs_mdb_errno(rc),
				    "%s/index: chunk %llu of container %u: %s",
				    ix->path, (unsigned long long)k, c,
				    mdb_strerror(rc));
	return dlfs_chunk_rec_check(&ix->info.super, &ix->cont[c], ix->path,
				    c, k, v.mv_data, v.mv_size, out, err);
}

static int container_get_in(struct dlfs_txn *txn, uint32_t c,
			    struct dlfs_container_rec *out,
			    struct dlfs_err *err)
{
	uint8_t kb[4];
	bytes_put_be32(kb, c);
	MDB_val key = {4, kb}, v;
	int rc = mdb_get(txn->txn, txn->ix->dbi_containers, &key, &v);
	if (rc || v.mv_size != DLFS_CONTAINER_REC_SIZE)
		return dlfs_err_set(err, rc ? dlfs_mdb_errno(rc)
					    : -DLFS_ECORRUPT,
				    "%s/index: container %u: %s",
				    txn->ix->path, c,
				    rc ? mdb_strerror(rc) : "damaged");
	dlfs_container_rec_decode(v.mv_data, out);
	return 0;
}

/* Find the directory entry that names ino: one full scan. */
static int find_parent(struct dlfs_txn *txn, uint64_t ino, uint64_t *parent,
		       MDB_val *name)
{
	MDB_cursor *c = txn->dirents;
	MDB_val k, v;
	int rc = mdb_cursor_get(c, &k, &v, MDB_FIRST);
	for (; !rc; rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
		struct dlfs_dirent d;
		if (!dlfs_dirent_decode(&txn->ix->info.super, k.mv_data,
					k.mv_size, v.mv_data, v.mv_size, &d) &&
		    d.ino == ino) {
			*parent = bytes_get_be64(k.mv_data);
			name->mv_size = k.mv_size - 8;
			name->mv_data = (uint8_t *)k.mv_data + 8;
			return 0;
		}
	}
	return rc == MDB_NOTFOUND ? -ENOENT : dlfs_mdb_errno(rc);
}

static int path_of_in(struct dlfs_txn *txn, uint64_t ino, char *buf,
		      size_t len, struct dlfs_err *err)
{
	/* Build right to left at the end of buf, then move to the front. */
	if (len == 0)
		return dlfs_err_set(err, -ENAMETOOLONG, "no room for a path");
	size_t at = len - 1;
	buf[at] = '\0';
	unsigned depth = 0;
	while (ino != DLFS_ROOT_INO) {
		uint64_t parent = 0;
		MDB_val name = {0, NULL};
		int ret = find_parent(txn, ino, &parent, &name);
		if (ret)
			return dlfs_err_set(err, ret,
					    "%s/index: no entry names inode "
					    "%llu",
					    txn->ix->path,
					    (unsigned long long)ino);
		size_t need = name.mv_size + (at < len - 1 ? 1 : 0);
		if (need > at || ++depth > 4096)
			return dlfs_err_set(err, -ENAMETOOLONG,
					    "path of inode %llu too long",
					    (unsigned long long)ino);
		if (at < len - 1)
			buf[--at] = '/';
		at -= name.mv_size;
		memcpy(buf + at, name.mv_data, name.mv_size);
		ino = parent;
	}
	memmove(buf, buf + at, len - at);
	return 0;
}

/* ---- the public calls: each inside a guard (guard.h) ---- */

struct call {
	struct dlfs_txn *txn;
	uint64_t a, b;
	const void *p;
	size_t n;
	void *out, *arg;
	dlfs_dir_cb cb;
	dlfs_inode_cb icb;
	struct dlfs_err *err;
};

static int do_stat(void *v)
{
	struct call *c = v;
	return stat_in(c->txn, c->a, c->out, c->err);
}

static int do_stat_range(void *v)
{
	struct call *c = v;
	return stat_range_in(c->txn, c->a, c->b, c->icb, c->arg, c->err);
}

static int do_lookup(void *v)
{
	struct call *c = v;
	return lookup_bound_in(c->txn, c->a, c->p, c->n, c->out, c->err);
}

static int do_lookup_stat(void *v)
{
	struct call *c = v;
	return lookup_stat_in(c->txn, c->a, c->p, c->n, c->out, c->err);
}

static int do_stat_entry(void *v)
{
	struct call *c = v;
	return stat_entry_in(c->txn, c->a, c->p, c->n, c->b, c->out, c->err);
}

static int do_readdir(void *v)
{
	struct call *c = v;
	return readdir_in(c->txn, c->a, c->b, c->cb, c->arg, c->err);
}

static int do_chunk_get(void *v)
{
	struct call *c = v;
	return chunk_get_in(c->txn, (uint32_t)c->a, c->b, c->out, c->err);
}

static int do_container_get(void *v)
{
	struct call *c = v;
	return container_get_in(c->txn, (uint32_t)c->a, c->out, c->err);
}

static int do_path_of(void *v)
{
	struct call *c = v;
	return path_of_in(c->txn, c->a, c->out, c->n, c->err);
}

int dlfs_stat(struct dlfs_txn *txn, uint64_t ino, struct dlfs_inode *out,
	      struct dlfs_err *err)
{
	struct call c = {.txn = txn, .a = ino, .out = out, .err = err};
	return dlfs_guard_run(txn->ix->path, err, do_stat, &c);
}

int dlfs_stat_range(struct dlfs_txn *txn, uint64_t first, uint64_t n,
		    dlfs_inode_cb cb, void *arg, struct dlfs_err *err)
{
	struct call c = {.txn = txn, .a = first, .b = n, .icb = cb,
			 .arg = arg, .err = err};
	return dlfs_guard_run(txn->ix->path, err, do_stat_range, &c);
}

int dlfs_lookup(struct dlfs_txn *txn, uint64_t parent, const char *name,
		size_t len, uint64_t *ino, struct dlfs_err *err)
{
	struct call c = {.txn = txn, .a = parent, .p = name, .n = len,
			 .out = ino, .err = err};
	return dlfs_guard_run(txn->ix->path, err, do_lookup, &c);
}

int dlfs_lookup_stat(struct dlfs_txn *txn, uint64_t parent, const char *name,
		     size_t len, struct dlfs_inode *out, struct dlfs_err *err)
{
	struct call c = {.txn = txn, .a = parent, .p = name, .n = len,
			 .out = out, .err = err};
	return dlfs_guard_run(txn->ix->path, err, do_lookup_stat, &c);
}

int dlfs_stat_entry(struct dlfs_txn *txn, uint64_t parent, const char *name,
		    size_t len, uint64_t ino, struct dlfs_inode *out,
		    struct dlfs_err *err)
{
	struct call c = {.txn = txn, .a = parent, .b = ino, .p = name,
			 .n = len, .out = out, .err = err};
	return dlfs_guard_run(txn->ix->path, err, do_stat_entry, &c);
}

int dlfs_readdir(struct dlfs_txn *txn, uint64_t dir, uint64_t cookie,
		 dlfs_dir_cb cb, void *arg, struct dlfs_err *err)
{
	struct call c = {.txn = txn, .a = dir, .b = cookie, .cb = cb,
			 .arg = arg, .err = err};
	return dlfs_guard_run(txn->ix->path, err, do_readdir, &c);
}

int dlfs_chunk_get(struct dlfs_txn *txn, uint32_t c, uint64_t k,
		   struct dlfs_chunk_rec *out, struct dlfs_err *err)
{
	struct call x = {.txn = txn, .a = c, .b = k, .out = out, .err = err};
	return dlfs_guard_run(txn->ix->path, err, do_chunk_get, &x);
}

int dlfs_container_get(struct dlfs_txn *txn, uint32_t c,
		       struct dlfs_container_rec *out, struct dlfs_err *err)
{
	struct call x = {.txn = txn, .a = c, .out = out, .err = err};
	return dlfs_guard_run(txn->ix->path, err, do_container_get, &x);
}

int dlfs_path_of(struct dlfs_txn *txn, uint64_t ino, char *buf, size_t len,
		 struct dlfs_err *err)
{
	struct call c = {.txn = txn, .a = ino, .out = buf, .n = len,
			 .err = err};
	return dlfs_guard_run(txn->ix->path, err, do_path_of, &c);
}
