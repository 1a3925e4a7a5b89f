/*
 * Live counters of a mount, and the snapshot of the tiers rendered with
 * them. The table of counters (counters.h) says how each is rendered, as
 * the JSON of /.dlfs/stats (stats_json.h) and as the Prometheus text of
 * /.dlfs/metrics (metrics.h).
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

/* The tiers whose reads the read core times (the peers time their own:
 * struct dlfs_peer_snap). */
enum dlfs_tier {
	DLFS_TIER_RAM,  /* a read() served from the RAM tier, no load */
	DLFS_TIER_NVME, /* one read of an NVMe cache file */
	DLFS_TIER_PFS,  /* one read of a container */
	DLFS_TIER_COUNT
};

/* Read latencies: bucket b counts reads of at most 1 us << b (the last:
 * all longer, so 1 us to 4.2 s and more); sum_ns is their total. */
#define DLFS_TIME_BUCKETS 24
struct dlfs_time_hist {
	_Atomic uint64_t b[DLFS_TIME_BUCKETS];
	_Atomic uint64_t sum_ns;
};

/* Where a compressed dataset's zstd chunks were decompressed. */
enum dlfs_unz {
	DLFS_UNZ_DECODE, /* the decode threads, for a demand miss (decode.h) */
	DLFS_UNZ_FILL,   /* the background reads, in their own threads */
	DLFS_UNZ_CALLER, /* the reader's own thread: no decode threads */
	DLFS_UNZ_COUNT
};

/* Why a container was read from the PFS: with peers, each chunk should
 * be read once per job, by its home. */
enum dlfs_pfs_why {
	DLFS_PFS_HOME,       /* this node is the chunk's home */
	DLFS_PFS_MISS,       /* a miss read here, no peer asked: a node
			      * alone, or a file read alone (read_unit) */
	DLFS_PFS_SUBSTITUTE, /* this node stands in for the chunk's gone home */
	DLFS_PFS_GONE,       /* no peer could answer: the job is ending */
	DLFS_PFS_ERROR,      /* a peer's answer was an error or failed its
			      * checksum, or a damaged chunk's file was
			      * read again alone */
	DLFS_PFS_WHY_COUNT
};

struct dlfs_stats {
	double start; /* CLOCK_MONOTONIC seconds at mount */
	_Atomic uint64_t ops[DLFS_OP_COUNT];
	_Atomic uint64_t bytes_served;
	_Atomic uint64_t pfs_reads, pfs_bytes;
	_Atomic uint64_t pfs_hist[DLFS_HIST_BUCKETS];
	_Atomic uint64_t pfs_why[DLFS_PFS_WHY_COUNT];
	_Atomic uint64_t err_checksum, err_container, err_io, err_peer;
	_Atomic uint64_t err_index;    /* damaged index records met */
	_Atomic uint64_t files_checked; /* files checked against their XXH3 */
	_Atomic uint64_t files_read;    /* reads from a file's first byte */
	_Atomic uint64_t ram_bytes;     /* bytes of reads served from RAM */
	_Atomic uint64_t unz[DLFS_UNZ_COUNT]; /* zstd chunks decompressed */
	struct dlfs_time_hist lat[DLFS_TIER_COUNT];
};

void dlfs_stats_init(struct dlfs_stats *s);

static inline void dlfs_stats_add(_Atomic uint64_t *c, uint64_t v)
{
	atomic_fetch_add_explicit(c, v, memory_order_relaxed);
}

/* Count one read of len bytes from a container. */
void dlfs_stats_pfs_read(struct dlfs_stats *s, uint64_t len);

/* CLOCK_MONOTONIC in nanoseconds: the start of a timed read. One vDSO
 * call, some 20-30 ns. */
uint64_t dlfs_stats_clock(void);

/* Count one read of tier that started at t0 (dlfs_stats_clock) and
 * ended now. */
void dlfs_stats_time(struct dlfs_stats *s, enum dlfs_tier tier, uint64_t t0);

/* Count one read of tier that took ns nanoseconds. */
void dlfs_stats_time_ns(struct dlfs_stats *s, enum dlfs_tier tier,
			uint64_t ns);

/* The MPI peers' counters, as the daemon copies them in. lat_hist[b]
 * counts answers within 16 << b microseconds (the last: all longer). */
#define DLFS_LAT_BUCKETS 20
struct dlfs_peer_snap {
	uint64_t requests, hits, bytes, timeouts, lost, errors;
	uint64_t back, rerouted;
	uint64_t latency_us_sum, latency_us_max;
	uint64_t served, served_bytes;
	uint64_t heartbeats_sent, heartbeats_heard;
	uint64_t mpi_waits, mpi_lag_us_sum, mpi_lag_us_max;
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
	unsigned pfs_inflight; /* container reads in flight now */
	/* Who the mount is, for the metrics' dlfs_info (NULL: unknown). */
	const char *dataset_id, *dataset_path, *mountpoint, *front_end;
	/* The mount label of every metrics series: the mountpoint, or the
	 * socket of dlfs --serve (NULL: the mountpoint). */
	const char *mount;
};

/* Seconds since s was initialised. */
double dlfs_stats_uptime(const struct dlfs_stats *s);

#endif
