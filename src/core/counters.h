/*
 * The one table of a mount's counters, which both renderings read: the
 * JSON of /.dlfs/stats (stats_json.h) and the Prometheus text of
 * /.dlfs/metrics (metrics.h). A row names a value once: where it comes
 * from (a field of struct dlfs_stats or of the tiers' snapshot, or a
 * function), its key in the JSON and its series in the metrics. A new
 * counter is one row, and the two renderings cannot drift apart.
 *
 * Rows are in the JSON's order; a row's Prometheus series is rendered
 * with the other samples of its family, in the families' order
 * (enum dlfs_family) and then in the rows' order. A row may be in one
 * rendering only (json NULL, or fam DLFS_F_NONE).
 *
 * Everything here is constant: safe from any thread.
 */
#ifndef DLFS_COUNTERS_H
#define DLFS_COUNTERS_H

#include <stddef.h>
#include <stdint.h>

#include "stats.h"

/* A bounded output buffer that counts what would not fit: the renderers'.
 * at may exceed len; buf is then cut short but always NUL-terminated
 * (when len > 0). */
struct dlfs_out {
	char *buf;
	size_t len, at;
};
void dlfs_out_put(struct dlfs_out *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* The Prometheus families, in the order of the text. */
enum dlfs_family {
	DLFS_F_NONE, /* not in the metrics */
	DLFS_F_INFO, DLFS_F_UPTIME, DLFS_F_EPOCH,
	DLFS_F_OPS, DLFS_F_SERVED_BYTES, DLFS_F_FILES_READ,
	DLFS_F_FILES_CHECKED, DLFS_F_DECOMPRESSED,
	DLFS_F_TIER_HITS, DLFS_F_TIER_MISSES, DLFS_F_TIER_READ_BYTES,
	DLFS_F_TIER_READ_SECONDS,
	DLFS_F_PFS_READS, DLFS_F_PFS_IN_FLIGHT, DLFS_F_PFS_READ_SIZE,
	DLFS_F_PFS_WHY,
	DLFS_F_RAM_CAPACITY, DLFS_F_RAM_USED, DLFS_F_RAM_ENTRIES,
	DLFS_F_RAM_HELD, DLFS_F_RAM_UNCACHED, DLFS_F_RAM_EVICTED,
	DLFS_F_RAM_EVICTED_UNUSED,
	DLFS_F_NVME_ENABLED, DLFS_F_NVME_CAPACITY, DLFS_F_NVME_USED,
	DLFS_F_NVME_CHUNKS, DLFS_F_NVME_WRITTEN_CHUNKS,
	DLFS_F_NVME_WRITTEN_BYTES, DLFS_F_NVME_WRITE_DROPPED,
	DLFS_F_NVME_EVICTED, DLFS_F_NVME_CORRUPT,
	DLFS_F_DIRECT_READS, DLFS_F_DIRECT_READ_BYTES,
	DLFS_F_DIRECT_CHECKED, DLFS_F_DIRECT_FOLLOWED,
	DLFS_F_PF_ISSUED, DLFS_F_PF_USED, DLFS_F_PF_WASTED, DLFS_F_PF_PENDING,
	DLFS_F_FILL_DEPTH, DLFS_F_FILL_CHUNKS, DLFS_F_FILL_BYTES,
	DLFS_F_FILL_FROM_RAM, DLFS_F_FILL_HELD, DLFS_F_FILL_YIELDS,
	DLFS_F_STAGE_DONE,
	DLFS_F_RU_FILE, DLFS_F_RU_SWITCHES, DLFS_F_RU_FILE_READS,
	DLFS_F_RU_GHOST_LOADED, DLFS_F_RU_GHOST_UNUSED,
	DLFS_F_PEER_REQUESTS, DLFS_F_PEER_FAILURES, DLFS_F_PEER_BACK,
	DLFS_F_PEER_REROUTED, DLFS_F_PEER_HB_SENT, DLFS_F_PEER_HB_HEARD,
	DLFS_F_PEER_MPI_LAG, DLFS_F_PEER_SERVED, DLFS_F_PEER_SERVED_BYTES,
	DLFS_F_PEER_LATENCY_MAX,
	DLFS_F_ERRORS,
	DLFS_F_INDEX_BYTES, DLFS_F_INDEX_PFS_BYTES, DLFS_F_INDEX_SECONDS,
	DLFS_F_COUNT
};

/* A family's header: name without the dlfs_ prefix, TYPE and HELP. */
struct dlfs_family_def {
	const char *name, *type, *help;
};
extern const struct dlfs_family_def dlfs_families[DLFS_F_COUNT];

/* What a row's value is. */
enum dlfs_val_kind {
	DLFS_VAL_NONE, /* absent from both renderings (no read_unit) */
	DLFS_VAL_NULL, /* JSON null, absent from the metrics */
	DLFS_VAL_U64,
	DLFS_VAL_INT,
	DLFS_VAL_DBL,  /* printed with the row's fmt */
	DLFS_VAL_STR,  /* JSON only */
	DLFS_VAL_HIST  /* buckets; fmt prints the sum */
};

/* The upper bounds of a histogram's buckets (the last: all above). */
enum dlfs_bounds {
	DLFS_BOUNDS_TIME, /* 1 us << b; not in the JSON */
	DLFS_BOUNDS_PEER, /* 16 us << b; a JSON array */
	DLFS_BOUNDS_SIZE  /* 4 KiB << b; a JSON object "4K": ... ">32M" */
};

#define DLFS_VAL_BUCKETS 24
struct dlfs_val {
	enum dlfs_val_kind kind;
	uint64_t u;
	int64_t i;
	double d;
	const char *s;
	uint64_t n[DLFS_VAL_BUCKETS]; /* DLFS_VAL_HIST: counts per bucket */
	unsigned nb;
	double sum;
};

/* Where a row's value is read. */
enum dlfs_src {
	DLFS_SRC_STATS,  /* an _Atomic uint64_t of struct dlfs_stats */
	DLFS_SRC_SNAP,   /* a field of struct dlfs_tier_snap */
	DLFS_SRC_RAM,    /* of t->ram */
	DLFS_SRC_NVME,   /* of t->nvme */
	DLFS_SRC_DIRECT, /* of t->direct */
	DLFS_SRC_PEER,   /* of t->peer */
	DLFS_SRC_FILL,   /* of *t->fill (zero without) */
	DLFS_SRC_GRAIN,  /* of *t->grain (absent without) */
	DLFS_SRC_FN      /* computed by fn */
};

/* A field's C type, for reading it at its offset. */
enum dlfs_ctype {
	DLFS_CT_ATOMIC, DLFS_CT_U64, DLFS_CT_UINT, DLFS_CT_INT, DLFS_CT_DBL,
	DLFS_CT_STR
};

struct dlfs_counter;
typedef void (*dlfs_counter_fn)(const struct dlfs_counter *c,
				const struct dlfs_stats *s,
				const struct dlfs_tier_snap *t,
				struct dlfs_val *v);

struct dlfs_counter {
	const char *json;      /* dotted path: "tiers.ram.hits"; NULL none */
	enum dlfs_family fam;  /* DLFS_F_NONE: not in the metrics */
	const char *labels;    /* the sample's labels but mount, or NULL */
	enum dlfs_src src;
	size_t off;            /* of the field in its struct */
	enum dlfs_ctype type;
	const char *dflt;      /* a NULL string's stand-in */
	dlfs_counter_fn fn;    /* DLFS_SRC_FN */
	int arg;               /* fn's own (a tier, a bucket set) */
	const char *fmt;       /* a double's (or a histogram sum's) format */
	int us_as_s;           /* metrics: microseconds shown as seconds */
	int needs_grain;       /* absent without t->grain */
	enum dlfs_bounds bounds; /* DLFS_VAL_HIST */
};

extern const struct dlfs_counter dlfs_counters[];
extern const size_t dlfs_n_counters;

/* Read row c's value from s and t into *v. */
void dlfs_counter_value(const struct dlfs_counter *c,
			const struct dlfs_stats *s,
			const struct dlfs_tier_snap *t, struct dlfs_val *v);

/* The JSON objects whose members go one a line (the others are one
 * line each): the root and these dotted paths. */
int dlfs_counters_json_multiline(const char *path, size_t len);

#endif
