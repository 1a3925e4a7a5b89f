/*
 * The index of a dataset: its LMDB environment, superblock and container
 * table, and the read transactions that look things up in it. Private to
 * libdlfs (dataset.c builds a struct dlfs_ds around one). Not installed.
 *
 * The index is data: everything decoded from it is checked where it is
 * decoded, once. The superblock and the container table are checked when
 * the index opens; an inode record when dlfs_stat decodes it (its extent
 * must lie inside its container's data region); a directory entry when
 * lookup or readdir meets it. Callers may then trust what they are given.
 *
 * Thread-safety: after dlfs_index_open the struct is read-only except for
 * the readdir resume slots, which rd_lock guards (a leaf lock). A txn
 * belongs to one thread at a time.
 */
#ifndef DLFS_INDEX_H
#define DLFS_INDEX_H

#include <lmdb.h>
#include <pthread.h>
#include <stdatomic.h>

#include "dlfs/dataset.h"

/*
 * Where recent readdir calls stopped: directory cookies are positions,
 * and this lets the next call resume with one cursor seek instead of
 * skipping from the start. A miss is only slower, never wrong.
 */
#define DLFS_RD_SLOTS 64
struct dlfs_rd_slot {
	uint64_t dir, pos; /* pos entries of dir consumed; 0 = empty slot */
	uint64_t used;     /* rd_clock when last stored or recalled */
	size_t key_len;
	uint8_t key[8 + DLFS_NAME_MAX];
};

struct dlfs_index {
	const char *path; /* the dataset directory, for messages (borrowed) */
	MDB_env *env;
	MDB_dbi dbi_meta, dbi_inodes, dbi_symlinks, dbi_dirents, dbi_chunks;
	MDB_dbi dbi_containers;
	int fd;       /* LMDB's descriptor of the index */
	size_t psize; /* its page size */
	struct dlfs_info info;
	struct dlfs_container *cont; /* n_containers entries, checked */
	struct dlfs_archive *arc;    /* in-place: n_containers; else NULL */
	uint64_t n_chunks;           /* across all containers */
	pthread_mutex_t rd_lock;     /* guards rd and rd_clock */
	struct dlfs_rd_slot rd[DLFS_RD_SLOTS];
	uint64_t rd_clock;
	/* Entries stepped over by resumes that missed the slots: what a
	 * miss costs, for tests. */
	_Atomic uint64_t rd_skipped;
};

struct dlfs_txn {
	struct dlfs_index *ix;
	MDB_txn *txn;
	MDB_cursor *dirents; /* reused by readdir */
	struct dlfs_err *err; /* only while it begins */
};

/*
 * Open the index of the dataset directory dir (which ix->path borrows),
 * from index_path when not NULL (a local copy), else dir/index:
 * map it, check its version and superblock, load and check the container
 * table. @return 0, or as dlfs_ds_open.
 */
int dlfs_index_open(struct dlfs_index *ix, const char *dir,
		    const char *index_path, struct dlfs_err *err);
/* Release what dlfs_index_open took; safe on a zeroed struct. */
void dlfs_index_close(struct dlfs_index *ix);

/* An in-place dataset's archive table into ix->arc (archives.c), after
 * the container table; nothing for other datasets. A damaged record
 * marks its container bad. @return 0 or a negative errno with err set. */
int dlfs_archives_load(struct dlfs_index *ix, MDB_txn *t,
		       struct dlfs_err *err);
void dlfs_archives_free(struct dlfs_index *ix);

/* The arguments of a lookup run inside the fault guard (guard.h): the
 * public calls of index_lookup.c and index_readdir.c pack theirs in one. */
struct dlfs_ix_call {
	struct dlfs_txn *txn;
	uint64_t a, b;
	const void *p;
	size_t n;
	void *out, *arg;
	dlfs_dir_cb cb;
	dlfs_inode_cb icb;
	struct dlfs_err *err;
};

int dlfs_index_txn_begin(struct dlfs_index *ix, struct dlfs_txn **out,
			 struct dlfs_err *err);


#endif
