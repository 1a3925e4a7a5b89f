/*
 * The index's lookups (index.h; the calls: include/dlfs/dataset.h):
 * inodes, names, paths, chunk and container records, each decoded and
 * checked where it is read, and each public call run inside the fault
 * guard (guard.h). Directory listing is index_readdir.c's.
 */
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

static int do_stat(void *v)
{
	struct dlfs_ix_call *c = v;
	return stat_in(c->txn, c->a, c->out, c->err);
}

static int do_stat_range(void *v)
{
	struct dlfs_ix_call *c = v;
	return stat_range_in(c->txn, c->a, c->b, c->icb, c->arg, c->err);
}

static int do_lookup(void *v)
{
	struct dlfs_ix_call *c = v;
	return lookup_bound_in(c->txn, c->a, c->p, c->n, c->out, c->err);
}

static int do_lookup_stat(void *v)
{
	struct dlfs_ix_call *c = v;
	return lookup_stat_in(c->txn, c->a, c->p, c->n, c->out, c->err);
}

static int do_stat_entry(void *v)
{
	struct dlfs_ix_call *c = v;
	return stat_entry_in(c->txn, c->a, c->p, c->n, c->b, c->out, c->err);
}


static int do_chunk_get(void *v)
{
	struct dlfs_ix_call *c = v;
	return chunk_get_in(c->txn, (uint32_t)c->a, c->b, c->out, c->err);
}

static int do_container_get(void *v)
{
	struct dlfs_ix_call *c = v;
	return container_get_in(c->txn, (uint32_t)c->a, c->out, c->err);
}

static int do_path_of(void *v)
{
	struct dlfs_ix_call *c = v;
	return path_of_in(c->txn, c->a, c->out, c->n, c->err);
}

int dlfs_stat(struct dlfs_txn *txn, uint64_t ino, struct dlfs_inode *out,
	      struct dlfs_err *err)
{
	struct dlfs_ix_call c = {.txn = txn, .a = ino, .out = out, .err = err};
	return dlfs_guard_run(txn->ix->path, err, do_stat, &c);
}

int dlfs_stat_range(struct dlfs_txn *txn, uint64_t first, uint64_t n,
		    dlfs_inode_cb cb, void *arg, struct dlfs_err *err)
{
	struct dlfs_ix_call c = {.txn = txn, .a = first, .b = n, .icb = cb,
			 .arg = arg, .err = err};
	return dlfs_guard_run(txn->ix->path, err, do_stat_range, &c);
}

int dlfs_lookup(struct dlfs_txn *txn, uint64_t parent, const char *name,
		size_t len, uint64_t *ino, struct dlfs_err *err)
{
	struct dlfs_ix_call c = {.txn = txn, .a = parent, .p = name, .n = len,
			 .out = ino, .err = err};
	return dlfs_guard_run(txn->ix->path, err, do_lookup, &c);
}

int dlfs_lookup_stat(struct dlfs_txn *txn, uint64_t parent, const char *name,
		     size_t len, struct dlfs_inode *out, struct dlfs_err *err)
{
	struct dlfs_ix_call c = {.txn = txn, .a = parent, .p = name, .n = len,
			 .out = out, .err = err};
	return dlfs_guard_run(txn->ix->path, err, do_lookup_stat, &c);
}

int dlfs_stat_entry(struct dlfs_txn *txn, uint64_t parent, const char *name,
		    size_t len, uint64_t ino, struct dlfs_inode *out,
		    struct dlfs_err *err)
{
	struct dlfs_ix_call c = {.txn = txn, .a = parent, .b = ino, .p = name,
			 .n = len, .out = out, .err = err};
	return dlfs_guard_run(txn->ix->path, err, do_stat_entry, &c);
}


int dlfs_chunk_get(struct dlfs_txn *txn, uint32_t c, uint64_t k,
		   struct dlfs_chunk_rec *out, struct dlfs_err *err)
{
	struct dlfs_ix_call x = {.txn = txn, .a = c, .b = k, .out = out, .err = err};
	return dlfs_guard_run(txn->ix->path, err, do_chunk_get, &x);
}

int dlfs_container_get(struct dlfs_txn *txn, uint32_t c,
		       struct dlfs_container_rec *out, struct dlfs_err *err)
{
	struct dlfs_ix_call x = {.txn = txn, .a = c, .out = out, .err = err};
	return dlfs_guard_run(txn->ix->path, err, do_container_get, &x);
}

int dlfs_path_of(struct dlfs_txn *txn, uint64_t ino, char *buf, size_t len,
		 struct dlfs_err *err)
{
	struct dlfs_ix_call c = {.txn = txn, .a = ino, .out = buf, .n = len,
			 .err = err};
	return dlfs_guard_run(txn->ix->path, err, do_path_of, &c);
}
