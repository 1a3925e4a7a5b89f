/*
 * Private layout of struct dlfs_ds and struct dlfs_txn, shared by
 * dataset.c (open, containers) and index.c (lookups). Not installed.
 *
 * Locking: container opens take ds->open_lock; once a container's state
 * is set (ok or failed) it never changes, and readers check it with an
 * acquire load, so the read path takes no lock.
 */
#ifndef DLFS_DS_PRIV_H
#define DLFS_DS_PRIV_H

#include <lmdb.h>
#include <pthread.h>
#include <stdatomic.h>

#include "dlfs/dataset.h"

struct dlfs_container_slot {
	_Atomic int state; /* 0 not tried, 1 open, < 0 failed with that errno */
	int fd;
	int dfd; /* the same file for chunk reads (RANDOM, DIRECT), or -1 */
	int dfd_direct; /* dfd has O_DIRECT */
	char *msg; /* why it failed, when state < 0 */
};

/*
 * Where recent readdir calls stopped: directory cookies are positions,
 * and this lets the next call resume with one cursor seek instead of
 * skipping from the start. A miss is only slower, never wrong.
 */
#define DLFS_RD_SLOTS 64
struct dlfs_rd_slot {
	uint64_t dir, pos; /* pos entries of dir consumed; 0 = empty slot */
	size_t key_len;
	uint8_t key[8 + DLFS_NAME_MAX];
};

struct dlfs_ds {
	char *path;
	MDB_env *env;
	MDB_dbi dbi_meta, dbi_inodes, dbi_symlinks, dbi_dirents, dbi_chunks;
	MDB_dbi dbi_containers;
	struct dlfs_info info;
	pthread_mutex_t open_lock;
	struct dlfs_container_slot *containers; /* n_containers slots */
	enum dlfs_chunk_io chunk_io; /* dlfs_ds_set_chunk_io */
	pthread_mutex_t rd_lock; /* guards rd; never held with open_lock */
	struct dlfs_rd_slot rd[DLFS_RD_SLOTS];
};

struct dlfs_txn {
	struct dlfs_ds *ds;
	MDB_txn *txn;
	MDB_cursor *dirents; /* reused by readdir */
};

/* Translate an LMDB return code into a negative errno. */
int dlfs_mdb_errno(int rc);

#endif
