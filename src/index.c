/* Index lookups: see include/dlfs/dataset.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ds_priv.h"
#include "util.h"

int dlfs_txn_begin(struct dlfs_ds *ds, struct dlfs_txn **out,
		   struct dlfs_err *err)
{
	struct dlfs_txn *t = calloc(1, sizeof(*t));
	if (!t)
		return dlfs_err_set(err, -ENOMEM, "%s: out of memory",
				    ds->path);
	t->ds = ds;
	int rc = mdb_txn_begin(ds->env, NULL, MDB_RDONLY, &t->txn);
	if (!rc)
		rc = mdb_cursor_open(t->txn, ds->dbi_dirents, &t->dirents);
	if (rc) {
		if (t->txn)
			mdb_txn_abort(t->txn);
		free(t);
		return dlfs_err_set(err, dlfs_mdb_errno(rc),
				    "%s/index: %s", ds->path,
				    mdb_strerror(rc));
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


int dlfs_stat(struct dlfs_txn *txn, uint64_t ino, struct dlfs_inode *out,
	      struct dlfs_err *err)
{
	struct dlfs_ds *ds = txn->ds;
	if (ino < 1 || ino > ds->info.super.n_inodes)
		return dlfs_err_set(err, -ENOENT, "%s: no inode %llu",
				    ds->path, (unsigned long long)ino);
	uint8_t kb[8];
	uint64_t slot = (ino - 1) % DLFS_INODES_PER_BLOCK;
	dlfs_put_be64(kb, (ino - 1) / DLFS_INODES_PER_BLOCK);
	MDB_val k = {8, kb}, v;
	int rc = mdb_get(txn->txn, ds->dbi_inodes, &k, &v);
	if (rc)
		return dlfs_err_set(err,
				    rc == MDB_NOTFOUND ? -DLFS_ECORRUPT
						       : dlfs_mdb_errno(rc),
				    "%s/index: inode %llu: %s", ds->path,
				    (unsigned long long)ino, mdb_strerror(rc));
	struct dlfs_inode_rec r;
	if (v.mv_size < (slot + 1) * DLFS_INODE_REC_SIZE)
		goto bad;
	dlfs_inode_decode((const uint8_t *)v.mv_data +
				  slot * DLFS_INODE_REC_SIZE,
			  &r);
	out->ino = ino;
	out->mode = r.mode;
	out->mtime_sec = r.mtime_sec;
	out->mtime_nsec = r.mtime_nsec;
	out->size = r.size;
	out->container = (uint32_t)(r.loc >> DLFS_LOC_CONTAINER_SHIFT);
	out->offset = r.loc & DLFS_LOC_OFFSET_MASK;
	out->xxh3 = r.xxh3;
	out->target = NULL;
	if (S_ISLNK(r.mode)) {
		dlfs_put_be64(kb, ino);
		rc = mdb_get(txn->txn, ds->dbi_symlinks, &k, &v);
		if (rc || v.mv_size != r.size)
			goto bad;
		out->target = v.mv_data;
	} else if (S_ISREG(r.mode)) {
		if (out->container >= ds->info.super.n_containers &&
		    r.size > 0)
			goto bad;
	} else if (!S_ISDIR(r.mode)) {
		goto bad;
	}
	return 0;
bad:
	return dlfs_err_set(err, -DLFS_ECORRUPT,
			    "%s/index: inode %llu is damaged", ds->path,
			    (unsigned long long)ino);
}

int dlfs_lookup(struct dlfs_txn *txn, uint64_t parent, const char *name,
		size_t len, uint64_t *ino, struct dlfs_err *err)
{
	struct dlfs_ds *ds = txn->ds;
	uint8_t kb[8 + DLFS_NAME_MAX];
	if (len > DLFS_NAME_MAX)
		return dlfs_err_set(err, -ENAMETOOLONG, "name too long");
	dlfs_put_be64(kb, parent);
	memcpy(kb + 8, name, len);
	MDB_val k = {8 + len, kb}, v;
	int rc = mdb_get(txn->txn, ds->dbi_dirents, &k, &v);
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
				    "%s/index: %s", ds->path,
				    mdb_strerror(rc));
	if (v.mv_size != 8)
		return dlfs_err_set(err, -DLFS_ECORRUPT,
				    "%s/index: damaged directory entry",
				    ds->path);
	*ino = dlfs_get_le64(v.mv_data) & DLFS_DIRENT_INO_MASK;
	return 0;
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

/* Remember where a readdir stopped, keyed by the position after it. */
static void rd_remember(struct dlfs_ds *ds, uint64_t dir, uint64_t pos,
			const MDB_val *key)
{
	if (key->mv_size > sizeof(ds->rd[0].key))
		return;
	size_t slot = (size_t)((dir * 0x9E3779B97F4A7C15ULL + pos) >> 58) %
		      DLFS_RD_SLOTS;
	pthread_mutex_lock(&ds->rd_lock);
	struct dlfs_rd_slot *s = &ds->rd[slot];
	s->dir = dir;
	s->pos = pos;
	s->key_len = key->mv_size;
	memcpy(s->key, key->mv_data, key->mv_size);
	pthread_mutex_unlock(&ds->rd_lock);
}

static int rd_recall(struct dlfs_ds *ds, uint64_t dir, uint64_t pos,
		     uint8_t *key, size_t *key_len)
{
	size_t slot = (size_t)((dir * 0x9E3779B97F4A7C15ULL + pos) >> 58) %
		      DLFS_RD_SLOTS;
	int hit = 0;
	pthread_mutex_lock(&ds->rd_lock);
	struct dlfs_rd_slot *s = &ds->rd[slot];
	if (s->pos == pos && s->dir == dir && pos) {
		memcpy(key, s->key, s->key_len);
		*key_len = s->key_len;
		hit = 1;
	}
	pthread_mutex_unlock(&ds->rd_lock);
	return hit;
}

int dlfs_readdir(struct dlfs_txn *txn, uint64_t dir, uint64_t cookie,
		 dlfs_dir_cb cb, void *arg, struct dlfs_err *err)
{
	struct dlfs_ds *ds = txn->ds;
	uint8_t kb[8 + DLFS_NAME_MAX];
	size_t klen = 8;
	MDB_cursor *c = txn->dirents;
	MDB_val k, v;
	int rc, ret = 0;
	uint64_t pos = 0;

	dlfs_put_be64(kb, dir);
	if (cookie && rd_recall(ds, dir, cookie, kb, &klen)) {
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
		       dlfs_get_be64(k.mv_data) == dir) {
			pos++;
			rc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
		}
	}
	MDB_val last = {0, NULL};
	for (; !rc; rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
		if (k.mv_size < 8 || dlfs_get_be64(k.mv_data) != dir)
			break;
		if (v.mv_size != 8 || k.mv_size == 8)
			return dlfs_err_set(err, -DLFS_ECORRUPT,
					    "%s/index: damaged directory "
					    "entry in inode %llu",
					    ds->path,
					    (unsigned long long)dir);
		uint64_t val = dlfs_get_le64(v.mv_data);
		struct dlfs_dirent d = {
			.ino = val & DLFS_DIRENT_INO_MASK,
			.type = (uint32_t)(val >> DLFS_DIRENT_TYPE_SHIFT) << 12,
			.name = (const char *)k.mv_data + 8,
			.name_len = k.mv_size - 8,
			.cookie = pos + 1,
		};
		ret = cb(arg, &d);
		if (ret)
			break;
		pos++;
		last = k;
	}
	if (rc && rc != MDB_NOTFOUND)
		return dlfs_err_set(err, dlfs_mdb_errno(rc), "%s/index: %s",
				    ds->path, mdb_strerror(rc));
	if (last.mv_data && ret == 1)
		rd_remember(ds, dir, pos, &last);
	return ret < 0 ? dlfs_err_set(err, ret, "readdir of inode %llu",
				      (unsigned long long)dir)
		       : 0;
}

int dlfs_chunk_get(struct dlfs_txn *txn, uint32_t c, uint64_t k,
		   struct dlfs_chunk_rec *out, struct dlfs_err *err)
{
	uint8_t kb[8];
	dlfs_put_be32(kb, c);
	dlfs_put_be32(kb + 4, (uint32_t)k);
	MDB_val key = {8, kb}, v;
	int rc = mdb_get(txn->txn, txn->ds->dbi_chunks, &key, &v);
	if (rc || v.mv_size != DLFS_CHUNK_REC_SIZE || k > UINT32_MAX)
		return dlfs_err_set(err, rc ? dlfs_mdb_errno(rc)
					    : -DLFS_ECORRUPT,
				    "%s/index: chunk %llu of container %u: %s",
				    txn->ds->path, (unsigned long long)k, c,
				    rc ? mdb_strerror(rc) : "damaged");
	dlfs_chunk_decode(v.mv_data, out);
	return 0;
}

int dlfs_container_get(struct dlfs_txn *txn, uint32_t c,
		       struct dlfs_container_rec *out, struct dlfs_err *err)
{
	uint8_t kb[4];
	dlfs_put_be32(kb, c);
	MDB_val key = {4, kb}, v;
	int rc = mdb_get(txn->txn, txn->ds->dbi_containers, &key, &v);
	if (rc || v.mv_size != DLFS_CONTAINER_REC_SIZE)
		return dlfs_err_set(err, rc ? dlfs_mdb_errno(rc)
					    : -DLFS_ECORRUPT,
				    "%s/index: container %u: %s",
				    txn->ds->path, c,
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
		if (v.mv_size == 8 && k.mv_size > 8 &&
		    (dlfs_get_le64(v.mv_data) & DLFS_DIRENT_INO_MASK) == ino) {
			*parent = dlfs_get_be64(k.mv_data);
			name->mv_size = k.mv_size - 8;
			name->mv_data = (uint8_t *)k.mv_data + 8;
			return 0;
		}
	}
	return rc == MDB_NOTFOUND ? -ENOENT : dlfs_mdb_errno(rc);
}

int dlfs_path_of(struct dlfs_txn *txn, uint64_t ino, char *buf, size_t len,
		 struct dlfs_err *err)
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
					    txn->ds->path,
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
