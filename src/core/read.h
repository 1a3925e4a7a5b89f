/*
 * The read core's insides, for the daemon that assembles a mount around
 * it (peers, staging, stats rendering): the public contract is
 * src/core/reader.h. Not for tools.
 *
 * Lock order: the reader's log lock is a leaf; every tier has its own.
 */
#ifndef DLFS_READ_H
#define DLFS_READ_H

#include <pthread.h>
#include <stdatomic.h>

#include "cache.h"
#include "reader.h"
#include "fetch.h"
#include "fill.h"
#include "grain.h"
#include "nvme.h"
#include "prefetch.h"
#include "outside.h"
#include "share.h"
#include "stats.h"

/* Pieces of one read; more chunks than this are gathered into a copy. */
#define DLFS_READ_IOV 32

struct dlfs_reader {
	struct dlfs_ds *ds;
	struct dlfs_reader_conf conf;
	char *cache_dir;        /* conf.cache_dir's copy */
	uint64_t chunk_size;
	uint64_t data_bytes;    /* all containers' data */
	struct dlfs_stats stats;
	struct dlfs_cache *cache;
	struct dlfs_nvme *nvme; /* NULL without a usable cache_dir */
	struct dlfs_share *share; /* NULL without conf.share */
	struct dlfs_outside *outside;     /* following readers outside */
	struct dlfs_reader_ctx *seen_ctx; /* its context */
	_Atomic uint64_t seen;            /* reads it handed on */
	struct dlfs_fetch fetch;
	struct dlfs_grain *grain;
	struct dlfs_fill *fill;           /* NULL until started, or none */
	struct dlfs_decode *decode;       /* compressed: NULL until started */
	struct dlfs_prefetch *prefetch;   /* NULL without read-ahead */
	dlfs_read_observer_fn observer;
	void *observer_arg;
	dlfs_plan_next_fn planner;
	void *planner_arg;
	dlfs_plan_files_fn file_planner;
	void *file_planner_arg;
	uint64_t home_lo, home_hi;        /* this rank's chunks */
	pthread_mutex_t log_lock;         /* guards logged, logged_key */
	uint64_t logged[64];              /* inodes already named */
	unsigned n_logged;
	uint64_t logged_key[64];          /* index damage already logged */
	unsigned n_logged_key;
};

/* A reading thread's context (reader.h): made and freed by read.c, read
 * through by read_path.c, told of failures by read_errors.c. It belongs
 * to the one thread that made it; its pins (refs) hold cache entries
 * until dlfs_read_done. It takes no lock of its own. */
struct dlfs_reader_ctx {
	struct dlfs_reader *r;
	struct dlfs_txn *txn;
	uint8_t *buf;          /* DLFS_FETCH_BUF_SIZE, aligned: NVMe reads */
	uint8_t *copy;         /* gathers and salvages, grown once */
	size_t copy_cap;
	struct dlfs_chunk_ref refs[DLFS_READ_IOV];
	size_t served[DLFS_READ_IOV];
	unsigned n_refs;
	struct iovec iov[DLFS_READ_IOV];
	int cause; /* behind the last EIO given (dlfs_reader_ctx_cause) */
};

/* Fetch chunks from peers (before dlfs_reader_start; p is borrowed), with
 * this rank's home range [lo, hi) of global chunks for the fill modes. */
void dlfs_reader_set_peer(struct dlfs_reader *r,
			  const struct dlfs_fetch_peer *p, uint64_t home_lo,
			  uint64_t home_hi);

/* Stop the background reads (before the peers leave: they use them).
 * Reads still work, without them. */
void dlfs_reader_stop(struct dlfs_reader *r);

/* Fill the tiers' part of a stats snapshot (ram, nvme, prefetch, fill,
 * read unit); fill and grain point into the caller's buffers. */
void dlfs_reader_snapshot(struct dlfs_reader *r, struct dlfs_tier_snap *t,
			  struct dlfs_fill_stats *fill,
			  struct dlfs_grain_stats *grain);

#endif
