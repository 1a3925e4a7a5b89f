/*
 * Live counters of a mount, rendered as the JSON of /.dlfs/stats.
 *
 * Counters are relaxed atomics: each update is one atomic add, no lock,
 * and a reader sees each counter exactly though not all at one instant.
 * The struct is owned by the daemon's context; nothing here is global.
 */
#ifndef DLFS_STATS_H
#define DLFS_STATS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "cache.h"
#include "nvme.h"
#include "shm.h"

struct dlfs_fill_stats;
struct dlfs_grain_stats;

enum dlfs_op {
	DLFS_OP_LOOKUP,
	DLFS_OP_GETATTR,
	DLFS_OP_READDIR,
	DLFS_OP_READDIRPLUS,
	DLFS_OP_READ,
	DLFS_OP_READLINK,
	DLFS_OP_STATFS,
	DLFS_OP_GETXATTR,
	DLFS_OP_LISTXATTR,
	DLFS_OP_CONTROL,
	DLFS_OP_COUNT
};

/* PFS read sizes, by powers of two from 4 KiB to 64 MiB and more. */
#define DLFS_HIST_BUCKETS 15

struct dlfs_stats {
	double start; /* CLOCK_MONOTONIC seconds at mount */
	_Atomic uint64_t ops[DLFS_OP_COUNT];
	_Atomic uint64_t bytes_served;
	_Atomic uint64_t pfs_reads, pfs_bytes;
	_Atomic uint64_t pfs_hist[DLFS_HIST_BUCKETS];
	_Atomic uint64_t err_checksum, err_container, err_io, err_peer;
	_Atomic uint64_t err_index;    /* damaged index records met */
	_Atomic uint64_t files_checked; /* files checked against their XXH3 */
};

void dlfs_stats_init(struct dlfs_stats *s);

static inline void dlfs_stats_add(_Atomic uint64_t *c, uint64_t v)
{
	atomic_fetch_add_explicit(c, v, memory_order_relaxed);
}

/* Count one read of len bytes from a container. */
void dlfs_stats_pfs_read(struct dlfs_stats *s, uint64_t len);

/* The MPI peers' counters, as the daemon copies them in. lat_hist[b]
 * counts answers within 16 << b microseconds (the last: all longer). */
#define DLFS_LAT_BUCKETS 20
struct dlfs_peer_snap {
	uint64_t requests, hits, bytes, timeouts, lost, errors;
	uint64_t latency_us_sum, latency_us_max;
	uint64_t served, served_bytes;
	uint64_t lat_hist[DLFS_LAT_BUCKETS];
};

/* A snapshot of the tiers' own counters, rendered with the stats. */
struct dlfs_tier_snap {
	struct dlfs_cache_stats ram;
	int nvme_enabled;
	const char *nvme_policy;
	struct dlfs_nvme_stats nvme;
	int pf_enabled;
	uint64_t pf_window_max;
	const struct dlfs_fill_stats *fill;   /* NULL: none */
	const struct dlfs_grain_stats *grain;
	const char *read_unit;                /* the option */
	uint64_t epoch; /* current epoch of the views, UINT64_MAX none */
	int peer_enabled;
	unsigned rank, ranks;
	struct dlfs_peer_snap peer;
	const char *stage;
	/* Where the index came from (the daemon's ixsrc.h); NULL: unknown. */
	const char *index_source, *index_where;
	int index_sealed;
	uint64_t index_bytes, index_pfs_bytes;
	double index_seconds;
	/* Reads served by readers in other processes without this one
	 * (conf.share: dlfs-run's clients). */
	int direct_enabled;
	struct dlfs_shm_count direct;
	uint64_t direct_seen; /* their reads from a file's start handed on */
};

/*
 * Render the stats and the tiers' as JSON into buf, NUL-terminated.
 * @return the length, or the length it would need if len is too small.
 */
size_t dlfs_stats_json(const struct dlfs_stats *s,
		       const struct dlfs_tier_snap *t, char *buf, size_t len);

#endif
