/*
 * Directory listing (dlfs_readdir, include/dlfs/dataset.h): a cursor
 * over a directory's entries, resumed from the slots of index.h where a
 * recent call stopped, inside the fault guard.
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

static int do_readdir(void *v)
{
	struct dlfs_ix_call *c = v;
	return readdir_in(c->txn, c->a, c->b, c->cb, c->arg, c->err);
}

int dlfs_readdir(struct dlfs_txn *txn, uint64_t dir, uint64_t cookie,
		 dlfs_dir_cb cb, void *arg, struct dlfs_err *err)
{
	struct dlfs_ix_call c = {.txn = txn, .a = dir, .b = cookie, .cb = cb,
			 .arg = arg, .err = err};
	return dlfs_guard_run(txn->ix->path, err, do_readdir, &c);
}
