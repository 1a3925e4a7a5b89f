/* The table of a mount's counters: see counters.h. */
#include "counters.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "fill.h"
#include "grain.h"

void dlfs_out_put(struct dlfs_out *o, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	size_t room = o->at < o->len ? o->len - o->at : 0;
	int n = vsnprintf(room ? o->buf + o->at : NULL, room, fmt, ap);
	va_end(ap);
	if (n > 0)
		o->at += (size_t)n;
}

static uint64_t ld(const _Atomic uint64_t *c)
{
	return atomic_load_explicit(c, memory_order_relaxed);
}

static void put_u64(struct dlfs_val *v, uint64_t u)
{
	v->kind = DLFS_VAL_U64;
	v->u = u;
}

/* ---- the computed values ---- */

static void uptime(const struct dlfs_counter *c, const struct dlfs_stats *s,
		   const struct dlfs_tier_snap *t, struct dlfs_val *v)
{
	(void)c, (void)t;
	v->kind = DLFS_VAL_DBL;
	v->d = dlfs_stats_uptime(s);
}

static void one(const struct dlfs_counter *c, const struct dlfs_stats *s,
		const struct dlfs_tier_snap *t, struct dlfs_val *v)
{
	(void)c, (void)s, (void)t;
	put_u64(v, 1);
}

static void epoch(const struct dlfs_counter *c, const struct dlfs_stats *s,
		  const struct dlfs_tier_snap *t, struct dlfs_val *v)
{
	(void)c, (void)s;
	if (t->epoch == UINT64_MAX)
		v->kind = DLFS_VAL_NULL;
	else
		put_u64(v, t->epoch);
}

/* The mean of tier c->arg's latencies, in microseconds (0 when none). */
static void lat_avg_us(const struct dlfs_counter *c,
		       const struct dlfs_stats *s,
		       const struct dlfs_tier_snap *t, struct dlfs_val *v)
{
	const struct dlfs_time_hist *h = &s->lat[c->arg];
	uint64_t n = 0;
	(void)t;
	for (int b = 0; b < DLFS_TIME_BUCKETS; b++)
		n += ld(&h->b[b]);
	put_u64(v, n ? ld(&h->sum_ns) / n / 1000 : 0);
}

/* Tier c->arg's latencies; the sum in seconds. */
static void lat_hist(const struct dlfs_counter *c, const struct dlfs_stats *s,
		     const struct dlfs_tier_snap *t, struct dlfs_val *v)
{
	const struct dlfs_time_hist *h = &s->lat[c->arg];
	(void)t;
	v->kind = DLFS_VAL_HIST;
	v->nb = DLFS_TIME_BUCKETS;
	for (unsigned b = 0; b < v->nb; b++)
		v->n[b] = ld(&h->b[b]);
	v->sum = (double)ld(&h->sum_ns) / 1e9;
}

/* The peers' answers; the sum in seconds. */
static void peer_hist(const struct dlfs_counter *c,
		      const struct dlfs_stats *s,
		      const struct dlfs_tier_snap *t, struct dlfs_val *v)
{
	(void)c, (void)s;
	v->kind = DLFS_VAL_HIST;
	v->nb = DLFS_LAT_BUCKETS;
	for (unsigned b = 0; b < v->nb; b++)
		v->n[b] = t->peer.lat_hist[b];
	v->sum = (double)t->peer.latency_us_sum / 1e6;
}

/* The sizes of the PFS reads; the sum in bytes. */
static void size_hist(const struct dlfs_counter *c,
		      const struct dlfs_stats *s,
		      const struct dlfs_tier_snap *t, struct dlfs_val *v)
{
	(void)c, (void)t;
	v->kind = DLFS_VAL_HIST;
	v->nb = DLFS_HIST_BUCKETS;
	for (unsigned b = 0; b < v->nb; b++)
		v->n[b] = ld(&s->pfs_hist[b]);
	v->sum = (double)ld(&s->pfs_bytes);
}

static void peer_misses(const struct dlfs_counter *c,
			const struct dlfs_stats *s,
			const struct dlfs_tier_snap *t, struct dlfs_val *v)
{
	const struct dlfs_peer_snap *p = &t->peer;
	(void)c, (void)s;
	put_u64(v, p->requests > p->hits ? p->requests - p->hits : 0);
}

static void peer_lat_avg(const struct dlfs_counter *c,
			 const struct dlfs_stats *s,
			 const struct dlfs_tier_snap *t, struct dlfs_val *v)
{
	const struct dlfs_peer_snap *p = &t->peer;
	(void)c, (void)s;
	put_u64(v, p->hits ? p->latency_us_sum / p->hits : 0);
}

static void mpi_lag_avg(const struct dlfs_counter *c,
			const struct dlfs_stats *s,
			const struct dlfs_tier_snap *t, struct dlfs_val *v)
{
	const struct dlfs_peer_snap *p = &t->peer;
	(void)c, (void)s;
	put_u64(v, p->mpi_waits ? p->mpi_lag_us_sum / p->mpi_waits : 0);
}

/* What dlfs-run's readers read from the NVMe tier themselves. */
static void direct_nvme_bytes(const struct dlfs_counter *c,
			      const struct dlfs_stats *s,
			      const struct dlfs_tier_snap *t,
			      struct dlfs_val *v)
{
	const struct dlfs_shm_count *d = &t->direct;
	(void)c, (void)s;
	put_u64(v, d->bytes > d->ram_bytes ? d->bytes - d->ram_bytes : 0);
}

static void unit_now(const struct dlfs_counter *c, const struct dlfs_stats *s,
		     const struct dlfs_tier_snap *t, struct dlfs_val *v)
{
	(void)c, (void)s;
	v->kind = DLFS_VAL_STR;
	v->s = t->grain->file_mode ? "file" : "chunk";
}

/* ---- the table ---- */

/* A field's C type, known from the struct. */
#define CTYPE(T, f)                                                         \
	_Generic(((T *)0)->f, uint64_t: DLFS_CT_U64, unsigned: DLFS_CT_UINT, \
		 int: DLFS_CT_INT, double: DLFS_CT_DBL,                      \
		 const char *: DLFS_CT_STR)
#define FIELD(S, T, f) .src = S, .off = offsetof(T, f), .type = CTYPE(T, f)

#define STATS(f)                                                            \
	.src = DLFS_SRC_STATS, .off = offsetof(struct dlfs_stats, f),       \
	.type = DLFS_CT_ATOMIC
#define SNAP(f) FIELD(DLFS_SRC_SNAP, struct dlfs_tier_snap, f)
#define RAM(f) FIELD(DLFS_SRC_RAM, struct dlfs_cache_stats, f)
#define NVME(f) FIELD(DLFS_SRC_NVME, struct dlfs_nvme_stats, f)
#define DIRECT(f) FIELD(DLFS_SRC_DIRECT, struct dlfs_shm_count, f)
#define PEER(f) FIELD(DLFS_SRC_PEER, struct dlfs_peer_snap, f)
#define FILL(f) FIELD(DLFS_SRC_FILL, struct dlfs_fill_stats, f)
#define GRAIN(f) FIELD(DLFS_SRC_GRAIN, struct dlfs_grain_stats, f)
#define FN(f) .src = DLFS_SRC_FN, .fn = f

#define T_RAM "tier=\"ram\""
#define T_NVME "tier=\"nvme\""
#define T_PEER "tier=\"peer\""
#define T_PFS "tier=\"pfs\""

const struct dlfs_counter dlfs_counters[] = {
	{NULL, DLFS_F_INFO, NULL, FN(one)},
	{"uptime_s", DLFS_F_UPTIME, NULL, FN(uptime), .fmt = "%.3f"},
	{"ops.lookup", DLFS_F_OPS, "op=\"lookup\"", STATS(ops[DLFS_OP_LOOKUP])},
	{"ops.getattr", DLFS_F_OPS, "op=\"getattr\"",
	 STATS(ops[DLFS_OP_GETATTR])},
	{"ops.readdir", DLFS_F_OPS, "op=\"readdir\"",
	 STATS(ops[DLFS_OP_READDIR])},
	{"ops.readdirplus", DLFS_F_OPS, "op=\"readdirplus\"",
	 STATS(ops[DLFS_OP_READDIRPLUS])},
	{"ops.read", DLFS_F_OPS, "op=\"read\"", STATS(ops[DLFS_OP_READ])},
	{"ops.readlink", DLFS_F_OPS, "op=\"readlink\"",
	 STATS(ops[DLFS_OP_READLINK])},
	{"ops.statfs", DLFS_F_OPS, "op=\"statfs\"", STATS(ops[DLFS_OP_STATFS])},
	{"ops.getxattr", DLFS_F_OPS, "op=\"getxattr\"",
	 STATS(ops[DLFS_OP_GETXATTR])},
	{"ops.listxattr", DLFS_F_OPS, "op=\"listxattr\"",
	 STATS(ops[DLFS_OP_LISTXATTR])},
	{"ops.control", DLFS_F_OPS, "op=\"control\"",
	 STATS(ops[DLFS_OP_CONTROL])},
	{"bytes_served", DLFS_F_SERVED_BYTES, NULL, STATS(bytes_served)},

	{"tiers.ram.hits", DLFS_F_TIER_HITS, T_RAM, RAM(hits)},
	{"tiers.ram.misses", DLFS_F_TIER_MISSES, T_RAM, RAM(misses)},
	{"tiers.ram.bytes", DLFS_F_NONE, NULL, RAM(used_bytes)},
	{"tiers.ram.capacity_bytes", DLFS_F_RAM_CAPACITY, NULL,
	 RAM(capacity_bytes)},
	{"tiers.ram.used_bytes", DLFS_F_RAM_USED, NULL, RAM(used_bytes)},
	{"tiers.ram.chunks", DLFS_F_RAM_ENTRIES, NULL, RAM(chunks)},
	{"tiers.ram.uncached_loads", DLFS_F_RAM_UNCACHED, NULL, RAM(bypass)},
	{"tiers.ram.evicted_bytes", DLFS_F_RAM_EVICTED, NULL,
	 RAM(evicted_bytes)},
	{"tiers.ram.evicted_unused_bytes", DLFS_F_RAM_EVICTED_UNUSED, NULL,
	 RAM(evicted_unused_bytes)},
	{"tiers.ram.held", DLFS_F_RAM_HELD, NULL, RAM(held)},
	{"tiers.ram.served_bytes", DLFS_F_TIER_READ_BYTES, T_RAM,
	 STATS(ram_bytes)},
	{"tiers.ram.latency_us_avg", DLFS_F_NONE, NULL, FN(lat_avg_us),
	 .arg = DLFS_TIER_RAM},
	{NULL, DLFS_F_TIER_READ_SECONDS, T_RAM, FN(lat_hist),
	 .arg = DLFS_TIER_RAM, .fmt = "%.9f", .bounds = DLFS_BOUNDS_TIME},

	{"tiers.nvme.enabled", DLFS_F_NVME_ENABLED, NULL, SNAP(nvme_enabled)},
	{"tiers.nvme.policy", DLFS_F_NONE, NULL, SNAP(nvme_policy),
	 .dflt = "none"},
	{"tiers.nvme.hits", DLFS_F_TIER_HITS, T_NVME, NVME(hits)},
	{"tiers.nvme.misses", DLFS_F_TIER_MISSES, T_NVME, NVME(misses)},
	{"tiers.nvme.bytes", DLFS_F_TIER_READ_BYTES, T_NVME, NVME(bytes)},
	{"tiers.nvme.capacity_bytes", DLFS_F_NVME_CAPACITY, NULL,
	 NVME(capacity_bytes)},
	{"tiers.nvme.used_bytes", DLFS_F_NVME_USED, NULL, NVME(used_bytes)},
	{"tiers.nvme.chunks", DLFS_F_NVME_CHUNKS, NULL, NVME(chunks)},
	{"tiers.nvme.written_chunks", DLFS_F_NVME_WRITTEN_CHUNKS, NULL,
	 NVME(written_chunks)},
	{"tiers.nvme.written_bytes", DLFS_F_NVME_WRITTEN_BYTES, NULL,
	 NVME(written_bytes)},
	{"tiers.nvme.write_dropped", DLFS_F_NVME_WRITE_DROPPED, NULL,
	 NVME(write_dropped)},
	{"tiers.nvme.evicted", DLFS_F_NVME_EVICTED, NULL, NVME(evicted)},
	{"tiers.nvme.corrupt", DLFS_F_NVME_CORRUPT, NULL, NVME(corrupt)},
	{"tiers.nvme.errors", DLFS_F_NONE, NULL, NVME(errors)},
	{"tiers.nvme.latency_us_avg", DLFS_F_NONE, NULL, FN(lat_avg_us),
	 .arg = DLFS_TIER_NVME},
	{NULL, DLFS_F_TIER_READ_SECONDS, T_NVME, FN(lat_hist),
	 .arg = DLFS_TIER_NVME, .fmt = "%.9f", .bounds = DLFS_BOUNDS_TIME},

	{"tiers.direct.enabled", DLFS_F_NONE, NULL, SNAP(direct_enabled)},
	{"tiers.direct.reads", DLFS_F_NONE, NULL, DIRECT(reads)},
	{"tiers.direct.bytes", DLFS_F_NONE, NULL, DIRECT(bytes)},
	{"tiers.direct.ram", DLFS_F_DIRECT_READS, T_RAM, DIRECT(ram)},
	{"tiers.direct.nvme", DLFS_F_DIRECT_READS, T_NVME, DIRECT(nvme)},
	{"tiers.direct.checked", DLFS_F_DIRECT_CHECKED, NULL, DIRECT(checked)},
	{"tiers.direct.seen", DLFS_F_DIRECT_FOLLOWED, NULL, SNAP(direct_seen)},
	{"tiers.direct.ram_bytes", DLFS_F_DIRECT_READ_BYTES, T_RAM,
	 DIRECT(ram_bytes)},
	{NULL, DLFS_F_DIRECT_READ_BYTES, T_NVME, FN(direct_nvme_bytes)},

	{"tiers.pfs.reads", DLFS_F_PFS_READS, NULL, STATS(pfs_reads)},
	{"tiers.pfs.bytes", DLFS_F_NONE, NULL, STATS(pfs_bytes)},
	{"tiers.pfs.in_flight", DLFS_F_PFS_IN_FLIGHT, NULL,
	 SNAP(pfs_inflight)},
	{"tiers.pfs.latency_us_avg", DLFS_F_NONE, NULL, FN(lat_avg_us),
	 .arg = DLFS_TIER_PFS},
	{NULL, DLFS_F_TIER_READ_SECONDS, T_PFS, FN(lat_hist),
	 .arg = DLFS_TIER_PFS, .fmt = "%.9f", .bounds = DLFS_BOUNDS_TIME},
	{"tiers.pfs.read_size_hist", DLFS_F_PFS_READ_SIZE, NULL,
	 FN(size_hist), .fmt = "%.0f", .bounds = DLFS_BOUNDS_SIZE},
	{"tiers.pfs.why.home", DLFS_F_PFS_WHY, "why=\"home\"",
	 STATS(pfs_why[DLFS_PFS_HOME])},
	{"tiers.pfs.why.miss", DLFS_F_PFS_WHY, "why=\"miss\"",
	 STATS(pfs_why[DLFS_PFS_MISS])},
	{"tiers.pfs.why.substitute", DLFS_F_PFS_WHY, "why=\"substitute\"",
	 STATS(pfs_why[DLFS_PFS_SUBSTITUTE])},
	{"tiers.pfs.why.gone", DLFS_F_PFS_WHY, "why=\"gone\"",
	 STATS(pfs_why[DLFS_PFS_GONE])},
	{"tiers.pfs.why.error", DLFS_F_PFS_WHY, "why=\"error\"",
	 STATS(pfs_why[DLFS_PFS_ERROR])},

	{"prefetch.enabled", DLFS_F_NONE, NULL, SNAP(pf_enabled)},
	{"prefetch.window_max_bytes", DLFS_F_NONE, NULL, SNAP(pf_window_max)},
	{"prefetch.issued", DLFS_F_PF_ISSUED, NULL, RAM(pf_issued)},
	{"prefetch.used", DLFS_F_PF_USED, NULL, RAM(pf_used)},
	{"prefetch.wasted", DLFS_F_PF_WASTED, NULL, RAM(pf_wasted)},
	{"prefetch.pending", DLFS_F_PF_PENDING, NULL, RAM(pf_pending)},
	{"prefetch.planned", DLFS_F_NONE, NULL, FILL(planned)},
	{"prefetch.streamed", DLFS_F_NONE, NULL, FILL(streamed)},

	{"fill.depth", DLFS_F_FILL_DEPTH, NULL, FILL(depth)},
	{"fill.planned", DLFS_F_FILL_CHUNKS, "kind=\"planned\"", FILL(planned)},
	{"fill.streamed", DLFS_F_FILL_CHUNKS, "kind=\"streamed\"",
	 FILL(streamed)},
	{"fill.swept", DLFS_F_FILL_CHUNKS, "kind=\"swept\"", FILL(swept)},
	{"fill.from_ram", DLFS_F_FILL_FROM_RAM, NULL, FILL(from_ram)},
	{"fill.bytes", DLFS_F_FILL_BYTES, NULL, FILL(bytes)},
	{"fill.held", DLFS_F_FILL_HELD, NULL, FILL(held)},
	{"fill.yields", DLFS_F_FILL_YIELDS, NULL, FILL(waits)},
	{"fill.sweeping", DLFS_F_NONE, NULL, FILL(sweeping)},
	{"fill.swept_all", DLFS_F_NONE, NULL, FILL(swept_all)},
	{"fill.bags.loaded", DLFS_F_NONE, NULL, FILL(bags.bags)},
	{"fill.bags.files", DLFS_F_NONE, NULL, FILL(bags.files)},
	{"fill.bags.runs", DLFS_F_NONE, NULL, FILL(bags.runs)},
	{"fill.bags.bytes", DLFS_F_NONE, NULL, FILL(bags.bytes)},
	{"fill.bags.hits", DLFS_F_NONE, NULL, FILL(bags.hits)},
	{"fill.bags.unread", DLFS_F_NONE, NULL, FILL(bags.unread)},
	{"fill.bags.bad", DLFS_F_NONE, NULL, FILL(bags.bad)},
	{"fill.bags.live", DLFS_F_NONE, NULL, FILL(bags.live)},

	{"read_unit.option", DLFS_F_NONE, NULL, SNAP(read_unit),
	 .dflt = "auto", .needs_grain = 1},
	{"read_unit.now", DLFS_F_NONE, NULL, FN(unit_now), .needs_grain = 1},
	{NULL, DLFS_F_RU_FILE, NULL, GRAIN(file_mode)},
	{"read_unit.switches", DLFS_F_RU_SWITCHES, NULL, GRAIN(switches)},
	{"read_unit.file_reads", DLFS_F_RU_FILE_READS, NULL,
	 GRAIN(file_reads)},
	{"read_unit.ghost_loaded", DLFS_F_RU_GHOST_LOADED, NULL,
	 GRAIN(ghost_loaded)},
	{"read_unit.ghost_unused", DLFS_F_RU_GHOST_UNUSED, NULL,
	 GRAIN(ghost_unused)},

	{"peer.enabled", DLFS_F_NONE, NULL, SNAP(peer_enabled)},
	{"peer.rank", DLFS_F_NONE, NULL, SNAP(rank)},
	{"peer.ranks", DLFS_F_NONE, NULL, SNAP(ranks)},
	{"peer.requests", DLFS_F_PEER_REQUESTS, NULL, PEER(requests)},
	{"peer.hits", DLFS_F_TIER_HITS, T_PEER, PEER(hits)},
	{NULL, DLFS_F_TIER_MISSES, T_PEER, FN(peer_misses)},
	{"peer.bytes", DLFS_F_TIER_READ_BYTES, T_PEER, PEER(bytes)},
	{NULL, DLFS_F_TIER_READ_BYTES, T_PFS, STATS(pfs_bytes)},
	{"peer.timeouts", DLFS_F_PEER_FAILURES, "reason=\"timeout\"",
	 PEER(timeouts)},
	{"peer.lost", DLFS_F_PEER_FAILURES, "reason=\"lost\"", PEER(lost)},
	{"peer.back", DLFS_F_PEER_BACK, NULL, PEER(back)},
	{"peer.errors", DLFS_F_PEER_FAILURES, "reason=\"error\"",
	 PEER(errors)},
	{"peer.rerouted", DLFS_F_PEER_REROUTED, NULL, PEER(rerouted)},
	{"peer.latency_us_avg", DLFS_F_NONE, NULL, FN(peer_lat_avg)},
	{"peer.latency_us_max", DLFS_F_PEER_LATENCY_MAX, NULL,
	 PEER(latency_us_max), .us_as_s = 1},
	{"peer.served", DLFS_F_PEER_SERVED, NULL, PEER(served)},
	{"peer.served_bytes", DLFS_F_PEER_SERVED_BYTES, NULL,
	 PEER(served_bytes)},
	{"peer.heartbeats_sent", DLFS_F_PEER_HB_SENT, NULL,
	 PEER(heartbeats_sent)},
	{"peer.heartbeats_heard", DLFS_F_PEER_HB_HEARD, NULL,
	 PEER(heartbeats_heard)},
	{"peer.mpi_lag_us_avg", DLFS_F_NONE, NULL, FN(mpi_lag_avg)},
	{"peer.mpi_lag_us_max", DLFS_F_PEER_MPI_LAG, NULL,
	 PEER(mpi_lag_us_max), .us_as_s = 1},
	{"peer.latency_us_hist", DLFS_F_TIER_READ_SECONDS, T_PEER,
	 FN(peer_hist), .fmt = "%.6f", .bounds = DLFS_BOUNDS_PEER},

	{"stage.mode", DLFS_F_NONE, NULL, SNAP(stage), .dflt = "none"},
	{"stage.chunks", DLFS_F_NONE, NULL, FILL(swept)},
	{"stage.done", DLFS_F_STAGE_DONE, NULL, FILL(swept_all)},

	{"index.source", DLFS_F_NONE, NULL, SNAP(index_source), .dflt = "pfs"},
	{"index.where", DLFS_F_NONE, NULL, SNAP(index_where), .dflt = "pfs"},
	{"index.sealed", DLFS_F_NONE, NULL, SNAP(index_sealed)},
	{"index.bytes", DLFS_F_INDEX_BYTES, NULL, SNAP(index_bytes)},
	{"index.pfs_bytes", DLFS_F_INDEX_PFS_BYTES, NULL,
	 SNAP(index_pfs_bytes)},
	{"index.seconds", DLFS_F_INDEX_SECONDS, NULL, SNAP(index_seconds),
	 .fmt = "%.3f"},

	{"epoch", DLFS_F_EPOCH, NULL, FN(epoch)},
	{"decompressed.decode_threads", DLFS_F_DECOMPRESSED,
	 "thread=\"decode\"", STATS(unz[DLFS_UNZ_DECODE])},
	{"decompressed.background", DLFS_F_DECOMPRESSED,
	 "thread=\"background\"", STATS(unz[DLFS_UNZ_FILL])},
	{"decompressed.caller", DLFS_F_DECOMPRESSED, "thread=\"caller\"",
	 STATS(unz[DLFS_UNZ_CALLER])},
	{"files_checked", DLFS_F_FILES_CHECKED, NULL, STATS(files_checked)},
	{"files_read", DLFS_F_FILES_READ, NULL, STATS(files_read)},
	{"errors.checksum", DLFS_F_ERRORS, "kind=\"checksum\"",
	 STATS(err_checksum)},
	{"errors.container", DLFS_F_ERRORS, "kind=\"container\"",
	 STATS(err_container)},
	{"errors.io", DLFS_F_ERRORS, "kind=\"io\"", STATS(err_io)},
	{"errors.nvme", DLFS_F_ERRORS, "kind=\"nvme\"", NVME(errors)},
	{"errors.peer", DLFS_F_ERRORS, "kind=\"peer\"", STATS(err_peer)},
	{"errors.index", DLFS_F_ERRORS, "kind=\"index\"", STATS(err_index)},
};
const size_t dlfs_n_counters = sizeof(dlfs_counters) / sizeof(dlfs_counters[0]);

#define C "counter"
#define G "gauge"
#define H "histogram"

const struct dlfs_family_def dlfs_families[DLFS_F_COUNT] = {
	[DLFS_F_INFO] = {"info", G,
		"Who this mount is: dataset id and path, mountpoint (empty "
		"for dlfs --serve), front end, MPI rank; always 1."},
	[DLFS_F_UPTIME] = {"uptime_seconds", G,
		"Seconds since the mount started."},
	[DLFS_F_EPOCH] = {"epoch", G,
		"The epoch the epoch views follow now (absent before any is "
		"read)."},
	[DLFS_F_OPS] = {"ops_total", C,
		"Requests of the front end, by operation."},
	[DLFS_F_SERVED_BYTES] = {"served_bytes_total", C,
		"Bytes returned to readers by this process's reads."},
	[DLFS_F_FILES_READ] = {"files_read_total", C,
		"Reads from a file's first byte: files read by this process."},
	[DLFS_F_FILES_CHECKED] = {"files_checked_total", C,
		"Files checked whole against their own checksum."},
	[DLFS_F_DECOMPRESSED] = {"chunks_decompressed_total", C,
		"Compressed chunks decompressed, by the threads that did it."},
	[DLFS_F_TIER_HITS] = {"tier_hits_total", C,
		"Lookups of a chunk or file that a tier answered."},
	[DLFS_F_TIER_MISSES] = {"tier_misses_total", C,
		"Lookups of a chunk or file that a tier could not answer."},
	[DLFS_F_TIER_READ_BYTES] = {"tier_read_bytes_total", C,
		"Bytes read from each tier: ram, those of reads served from "
		"the RAM tier without a load; nvme, peer and pfs, those read "
		"from the NVMe cache, received from peers, read from "
		"containers."},
	[DLFS_F_TIER_READ_SECONDS] = {"tier_read_seconds", H,
		"Latency of reads by tier: ram, a read served from the RAM "
		"tier; nvme, one read of an NVMe cache file; pfs, one read of "
		"a container; peer, one chunk from a peer."},
	[DLFS_F_PFS_READS] = {"pfs_reads_total", C, "Reads of containers."},
	[DLFS_F_PFS_IN_FLIGHT] = {"pfs_reads_in_flight", G,
		"Reads of containers in flight now."},
	[DLFS_F_PFS_READ_SIZE] = {"pfs_read_size_bytes", H,
		"Sizes of the reads of containers."},
	[DLFS_F_PFS_WHY] = {"pfs_reads_why_total", C,
		"Reads of containers by why: home (this node is the chunk's "
		"home), miss (no peer asked), substitute (for a gone home), "
		"gone (no peer could answer), error (a peer's answer failed)."},
	[DLFS_F_RAM_CAPACITY] = {"ram_capacity_bytes", G,
		"Bytes the RAM tier may hold."},
	[DLFS_F_RAM_USED] = {"ram_used_bytes", G, "Bytes the RAM tier holds."},
	[DLFS_F_RAM_ENTRIES] = {"ram_entries", G,
		"Chunks and files the RAM tier holds."},
	[DLFS_F_RAM_HELD] = {"ram_held_entries", G,
		"Entries of the RAM tier pinned now."},
	[DLFS_F_RAM_UNCACHED] = {"ram_uncached_loads_total", C,
		"Loads served from a private buffer: every entry was pinned."},
	[DLFS_F_RAM_EVICTED] = {"ram_evicted_bytes_total", C,
		"Bytes evicted from the RAM tier."},
	[DLFS_F_RAM_EVICTED_UNUSED] = {"ram_evicted_unused_bytes_total", C,
		"Bytes evicted from the RAM tier never served nor kept "
		"elsewhere."},
	[DLFS_F_NVME_ENABLED] = {"nvme_enabled", G,
		"1 when the NVMe tier (cache_dir) is in use."},
	[DLFS_F_NVME_CAPACITY] = {"nvme_capacity_bytes", G,
		"Bytes the NVMe tier may hold."},
	[DLFS_F_NVME_USED] = {"nvme_used_bytes", G,
		"Bytes the NVMe tier holds."},
	[DLFS_F_NVME_CHUNKS] = {"nvme_chunks", G,
		"Chunks the NVMe tier holds."},
	[DLFS_F_NVME_WRITTEN_CHUNKS] = {"nvme_written_chunks_total", C,
		"Chunks written to the NVMe tier."},
	[DLFS_F_NVME_WRITTEN_BYTES] = {"nvme_written_bytes_total", C,
		"Bytes written to the NVMe tier."},
	[DLFS_F_NVME_WRITE_DROPPED] = {"nvme_write_dropped_total", C,
		"Chunks not written to the NVMe tier: its queue was full."},
	[DLFS_F_NVME_EVICTED] = {"nvme_evicted_chunks_total", C,
		"Chunks evicted from the NVMe tier."},
	[DLFS_F_NVME_CORRUPT] = {"nvme_corrupt_chunks_total", C,
		"Chunks of the NVMe tier found damaged and dropped."},
	[DLFS_F_DIRECT_READS] = {"direct_reads_total", C,
		"Reads that dlfs-run's readers served from the shared tiers "
		"without this process."},
	[DLFS_F_DIRECT_READ_BYTES] = {"direct_read_bytes_total", C,
		"Bytes of the reads dlfs-run's readers served themselves."},
	[DLFS_F_DIRECT_CHECKED] = {"direct_files_checked_total", C,
		"Files dlfs-run's readers checked whole themselves."},
	[DLFS_F_DIRECT_FOLLOWED] = {"direct_reads_followed_total", C,
		"Their reads from a file's start handed on to the epoch views "
		"and staging."},
	[DLFS_F_PF_ISSUED] = {"prefetch_issued_total", C,
		"Chunks read ahead."},
	[DLFS_F_PF_USED] = {"prefetch_used_total", C,
		"Chunks read ahead and then used."},
	[DLFS_F_PF_WASTED] = {"prefetch_wasted_total", C,
		"Chunks read ahead and evicted unused."},
	[DLFS_F_PF_PENDING] = {"prefetch_pending_chunks", G,
		"Chunks read ahead not used yet."},
	[DLFS_F_FILL_DEPTH] = {"fill_depth", G,
		"Background reads of containers allowed in flight "
		"(pfs_depth)."},
	[DLFS_F_FILL_CHUNKS] = {"fill_chunks_total", C,
		"Chunks the background reads loaded, by why: planned (the "
		"epoch order), streamed (sequential read-ahead), swept "
		"(staging)."},
	[DLFS_F_FILL_BYTES] = {"fill_bytes_total", C,
		"Bytes the background reads loaded."},
	[DLFS_F_FILL_FROM_RAM] = {"fill_from_ram_chunks_total", C,
		"Chunks the background put in the NVMe tier from RAM."},
	[DLFS_F_FILL_HELD] = {"fill_held_chunks", G,
		"Planned chunks held in RAM now."},
	[DLFS_F_FILL_YIELDS] = {"fill_yields_total", C,
		"Times the background reads yielded to demand reads."},
	[DLFS_F_STAGE_DONE] = {"stage_done", G,
		"1 once staging has swept every chunk."},
	[DLFS_F_RU_FILE] = {"read_unit_file", G,
		"1 while misses read files alone, 0 while whole chunks."},
	[DLFS_F_RU_SWITCHES] = {"read_unit_switches_total", C,
		"Switches between chunk and file reads."},
	[DLFS_F_RU_FILE_READS] = {"read_unit_file_reads_total", C,
		"Files read alone from containers."},
	[DLFS_F_RU_GHOST_LOADED] = {"read_unit_ghost_loaded_bytes_total", C,
		"Bytes whole-chunk reads would have loaded (the ghost RAM "
		"tier that decides the read unit)."},
	[DLFS_F_RU_GHOST_UNUSED] = {"read_unit_ghost_unused_bytes_total", C,
		"Bytes of those that would have gone unused."},
	[DLFS_F_PEER_REQUESTS] = {"peer_requests_total", C,
		"Chunks asked of their home node."},
	[DLFS_F_PEER_FAILURES] = {"peer_failures_total", C,
		"Peer failures: timeout and lost, peers found gone by their "
		"silence or by MPI's report (their chunks then go to a "
		"substitute); error, answers that were an error."},
	[DLFS_F_PEER_BACK] = {"peer_back_total", C,
		"Peers found gone, heard from again."},
	[DLFS_F_PEER_REROUTED] = {"peer_rerouted_total", C,
		"Chunks asked of a gone home's substitute."},
	[DLFS_F_PEER_HB_SENT] = {"peer_heartbeats_sent_total", C,
		"Heartbeats sent to peers waiting on this node."},
	[DLFS_F_PEER_HB_HEARD] = {"peer_heartbeats_heard_total", C,
		"Heartbeats from the peers this node waited on."},
	[DLFS_F_PEER_MPI_LAG] = {"peer_mpi_lag_max_seconds", G,
		"The latest the MPI thread woke from an idle wait."},
	[DLFS_F_PEER_SERVED] = {"peer_served_total", C,
		"Chunks served to other nodes."},
	[DLFS_F_PEER_SERVED_BYTES] = {"peer_served_bytes_total", C,
		"Bytes served to other nodes."},
	[DLFS_F_PEER_LATENCY_MAX] = {"peer_latency_max_seconds", G,
		"The longest a peer took to answer."},
	[DLFS_F_ERRORS] = {"errors_total", C,
		"Failures, by kind: checksum (damaged data), container "
		"(unusable), io, nvme (the NVMe tier's), peer (bad bytes from "
		"a peer), index (damaged records)."},
	[DLFS_F_INDEX_BYTES] = {"index_bytes", G,
		"Bytes of the dataset's index."},
	[DLFS_F_INDEX_PFS_BYTES] = {"index_pfs_bytes", G,
		"Bytes of the index this node read from the PFS."},
	[DLFS_F_INDEX_SECONDS] = {"index_load_seconds", G,
		"Seconds it took to have the index at mount."},
};

/* The struct a row's field is in; NULL: the value is absent. */
static const void *src_base(const struct dlfs_counter *c,
			    const struct dlfs_stats *s,
			    const struct dlfs_tier_snap *t)
{
	static const struct dlfs_fill_stats no_fill;
	switch (c->src) {
	case DLFS_SRC_STATS: return s;
	case DLFS_SRC_SNAP: return t;
	case DLFS_SRC_RAM: return &t->ram;
	case DLFS_SRC_NVME: return &t->nvme;
	case DLFS_SRC_DIRECT: return &t->direct;
	case DLFS_SRC_PEER: return &t->peer;
	case DLFS_SRC_FILL: return t->fill ? (const void *)t->fill : &no_fill;
	case DLFS_SRC_GRAIN: return t->grain;
	case DLFS_SRC_FN: break;
	}
	return NULL;
}

/* Read the field at p, of type c->type. */
static void read_field(const struct dlfs_counter *c, const char *p,
		       struct dlfs_val *v)
{
	switch (c->type) {
	case DLFS_CT_ATOMIC: put_u64(v, ld((const _Atomic uint64_t *)p)); break;
	case DLFS_CT_U64: put_u64(v, *(const uint64_t *)p); break;
	case DLFS_CT_UINT: put_u64(v, *(const unsigned *)p); break;
	case DLFS_CT_INT:
		v->kind = DLFS_VAL_INT;
		v->i = *(const int *)p;
		break;
	case DLFS_CT_DBL:
		v->kind = DLFS_VAL_DBL;
		v->d = *(const double *)p;
		break;
	case DLFS_CT_STR:
		v->kind = DLFS_VAL_STR;
		v->s = *(const char *const *)p;
		if (!v->s)
			v->s = c->dflt;
		break;
	}
}

void dlfs_counter_value(const struct dlfs_counter *c,
			const struct dlfs_stats *s,
			const struct dlfs_tier_snap *t, struct dlfs_val *v)
{
	v->kind = DLFS_VAL_NONE;
	if (c->needs_grain && !t->grain)
		return;
	if (c->src == DLFS_SRC_FN) {
		c->fn(c, s, t, v);
		return;
	}
	const char *base = src_base(c, s, t);
	if (base)
		read_field(c, base + c->off, v);
}

int dlfs_counters_json_multiline(const char *path, size_t len)
{
	return len == 0 || (len == 5 && !memcmp(path, "tiers", 5));
}
