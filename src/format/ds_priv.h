/*
 * Private layout of struct dlfs_ds: the index (index.h) and the container
 * files. dataset.c owns it; verify.c and extract.c read it. Not installed.
 *
 * Locking: container opens take ds->open_lock; once a container's state
 * is set (ok or failed) it never changes, and readers check it with an
 * acquire load, so the read path takes no lock.
 */
#ifndef DLFS_DS_PRIV_H
#define DLFS_DS_PRIV_H

#include <pthread.h>
#include <stdatomic.h>

#include "dlfs/dataset.h"
#include "index.h"

struct dlfs_container_slot {
	_Atomic int state; /* 0 not tried, 1 open, < 0 failed with that errno */
	int fd;
	int dfd; /* the same file for chunk reads (RANDOM, DIRECT), or -1 */
	int dfd_direct; /* dfd has O_DIRECT */
	char *msg; /* why it failed, when state < 0 */
};

struct dlfs_ds {
	char *path;
	struct dlfs_index ix;
	pthread_mutex_t open_lock;
	struct dlfs_container_slot *containers; /* n_containers slots */
	enum dlfs_chunk_io chunk_io; /* dlfs_ds_set_chunk_io */
};

#endif
