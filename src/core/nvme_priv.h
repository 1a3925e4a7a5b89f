/*
 * The NVMe tier's insides, shared by its four files (nvme.h is the
 * contract): nvme.c, the API (reads, opening, closing, counters);
 * nvme_map.c, the chunks' states, the map file that keeps them, CLOCK
 * eviction and the log of the tier's faults; nvme_trust.c, which files
 * and directories the tier may trust; nvme_writer.c, the write queue and
 * its thread. The map's calls and the chunks' geometry, which the others
 * stand on: nvme_map.h. Not for other modules.
 *
 * Locking: n->mu guards the queue, the map's counts and state changes;
 * a chunk's state byte is read without it (atomics).
 */
#ifndef DLFS_NVME_PRIV_H
#define DLFS_NVME_PRIV_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/stat.h>

#include "dlfs/format.h"
#include "nvme.h"
#include "shm.h"
#include "util.h"

/* Per-chunk state bits. Only PRESENT is persisted (in the map file), and
 * readers in other processes see it (the state bytes are shm.h's). */
#define ST_PRESENT DLFS_SHM_NV_PRESENT
#define ST_VERIFIED 2u /* checked against the index since the tier opened */
#define ST_REF 4u      /* CLOCK's referenced bit */
#define ST_QUEUED 8u   /* in the write queue or being written */
_Static_assert(!(ST_PRESENT & (ST_VERIFIED | ST_REF | ST_QUEUED)) &&
		       ((ST_PRESENT | ST_VERIFIED | ST_REF | ST_QUEUED) &
			~0xffu) == 0,
	       "the state bits are distinct and fit the shared state byte");

#define MAP_MAGIC "DLFSNVM1"
#define MAP_VERSION 1
#define MAP_HEADER 64
#define POOL_BYTES (UINT64_C(64) << 20)
#define MAX_CORRUPT_LOGS 10
#define TURNED_Q 256 /* chunks turned away for want of room, newest kept */

/* Faults logged once each. */
enum { LOG_ENOSPC = 1, LOG_WRITE = 2, LOG_READ = 4, LOG_GONE = 8, LOG_MAP = 16 };

struct wbuf {
	uint32_t c;
	uint64_t k;
	size_t len;
	uint8_t *buf;
};

struct dlfs_nvme {
	char *path; /* DIR/<id> */
	int dirfd, lock_fd, map_fd;
	uint64_t cs, capacity;
	int short_chunks; /* dlfs_nvme_conf's */
	enum dlfs_nvme_policy policy;
	uint32_t n_containers;
	const struct dlfs_container *cont; /* the container table, borrowed */
	uint64_t n_chunks;
	_Atomic uint8_t *st;
	_Atomic int *fd; /* per container: -1 not open yet */
	uint8_t *direct; /* per container: fd has O_DIRECT */

	pthread_mutex_t mu; /* guards everything below and state changes */
	pthread_cond_t work, idle, room;
	struct wbuf *pool;
	unsigned pool_n, n_free, q_head, q_len;
	unsigned *free_idx, *queue;
	int writing, stop, writer_started, paused;
	unsigned writing_i; /* the pool entry being written, when writing */
	int gone; /* the cache directory was removed: write nothing more */
	uint64_t turned[TURNED_Q]; /* global chunks, a ring */
	unsigned t_head, t_len;
	int was_open; /* the directory was not private when opened */
	pthread_t writer;
	uint64_t used, present, hand;
	unsigned logged, corrupt_logs;

	_Atomic uint64_t *evict_seq; /* evict_own, or the shared counter */
	_Atomic uint64_t evict_own;
	int st_placed; /* st is the shared states' memory */
	_Atomic uint64_t hits, misses, bytes, written_chunks, written_bytes;
	_Atomic uint64_t write_dropped, evicted, corrupt, errors;

	dlfs_log_fn log;
	void *log_arg;
};

/* nvme_trust.c */
int nv_own_stat(const struct stat *st);
int nv_own_file(int fd);
int nv_cfd(struct dlfs_nvme *n, uint32_t c, int create);
int nv_wipe(struct dlfs_nvme *n, int all, struct dlfs_err *err);
int nv_audit(struct dlfs_nvme *n, struct dlfs_err *err);
int nv_open_tier_dir(struct dlfs_nvme *n, const char *dir, const char *id,
		     struct dlfs_err *err);

/* nvme_writer.c */
void *nv_writer_main(void *arg);

#endif
