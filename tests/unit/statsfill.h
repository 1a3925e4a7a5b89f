/*
 * What test_stats (the JSON) and test_metrics (the Prometheus text)
 * share: a snapshot of the counters with every field set to its own
 * value, so that a renderer is seen to render each from its own field,
 * and the checks common to both renderers.
 */
#ifndef DLFS_TEST_STATSFILL_H
#define DLFS_TEST_STATSFILL_H

#include <stdlib.h>
#include <string.h>

#include "fill.h"
#include "grain.h"
#include "stats.h"
#include "tutil.h"

/* dlfs_stats_json and dlfs_metrics_text. */
typedef size_t (*stats_render_fn)(const struct dlfs_stats *s,
				  const struct dlfs_tier_snap *t, char *buf,
				  size_t len);

/* Render into a buffer of the size it asks for. Caller frees. */
static inline char *stats_render(stats_render_fn fn,
				 const struct dlfs_stats *s,
				 const struct dlfs_tier_snap *t)
{
	size_t n = fn(s, t, NULL, 0);
	char *b = malloc(n + 1);
	CHECK_EQ(fn(s, t, b, n + 1), n);
	CHECK_EQ(strlen(b), n);
	return b;
}

/*
 * Too small a buffer, every length up to 200 and some above: the length
 * it needs is returned, the text is a NUL-terminated prefix of the whole
 * and nothing is written past the buffer. The uptime's digits change
 * between renders, its length does not (under 10 s): the text is
 * compared from marker on. @return how many checks failed.
 */
static inline int stats_short_wrong(stats_render_fn fn,
				    const struct dlfs_stats *s,
				    const struct dlfs_tier_snap *t,
				    const char *marker)
{
	char *full = stats_render(fn, s, t);
	size_t n = strlen(full);
	const char *rest = strstr(full, marker);
	size_t from = rest ? (size_t)(rest - full) : n;
	char *b = malloc(n + 1);
	int bad = !rest;
	for (size_t len = 1; len <= n; len += len < 200 ? 1 : 97) {
		memset(b, 'x', n + 1);
		bad += fn(s, t, b, len) != n;
		bad += strlen(b) != len - 1;
		if (len - 1 > from)
			bad += memcmp(b + from, full + from, len - 1 - from) != 0;
		bad += b[len] != 'x';
	}
	free(b);
	free(full);
	return bad;
}

/* Every counter set to its own value; the dataset path has a quote, a
 * backslash and a newline. */
static inline void stats_fill(struct dlfs_stats *s,
			      struct dlfs_tier_snap *t,
			      struct dlfs_fill_stats *fs,
			      struct dlfs_grain_stats *gs)
{
	dlfs_stats_init(s);
	for (int i = 0; i < DLFS_OP_COUNT; i++)
		atomic_store(&s->ops[i], 100 + i);
	atomic_store(&s->bytes_served, 1001);
	dlfs_stats_pfs_read(s, 4096);
	dlfs_stats_pfs_read(s, 5000);
	dlfs_stats_pfs_read(s, UINT64_C(1) << 30);
	atomic_store(&s->err_checksum, 1002);
	atomic_store(&s->err_container, 1003);
	atomic_store(&s->err_io, 1004);
	atomic_store(&s->err_peer, 1005);
	atomic_store(&s->err_index, 1006);
	atomic_store(&s->files_checked, 1007);
	atomic_store(&s->ram_bytes, 1008);
	atomic_store(&s->files_read, 1009);
	atomic_store(&s->unz[DLFS_UNZ_DECODE], 1010);
	atomic_store(&s->unz[DLFS_UNZ_FILL], 1011);
	atomic_store(&s->unz[DLFS_UNZ_CALLER], 1012);
	/* Latencies: RAM 0.5 and 1.5 us, NVMe 100 us, PFS 2 ms and 10 s. */
	dlfs_stats_time_ns(s, DLFS_TIER_RAM, 500);
	dlfs_stats_time_ns(s, DLFS_TIER_RAM, 1500);
	dlfs_stats_time_ns(s, DLFS_TIER_NVME, 100000);
	dlfs_stats_time_ns(s, DLFS_TIER_PFS, 2000000);
	dlfs_stats_time_ns(s, DLFS_TIER_PFS, UINT64_C(10000000000));
	memset(t, 0, sizeof(*t));
	t->ram = (struct dlfs_cache_stats){
		.hits = 2001, .misses = 2002, .bypass = 2003,
		.capacity_bytes = 2004, .used_bytes = 2005, .chunks = 2006,
		.pf_issued = 2007, .pf_used = 2008, .pf_wasted = 2009,
		.pf_pending = 2010, .evicted_bytes = 2011,
		.evicted_unused_bytes = 2012, .held = 2013};
	t->nvme_enabled = 1;
	t->nvme_policy = "lru";
	t->nvme = (struct dlfs_nvme_stats){
		.hits = 3001, .misses = 3002, .bytes = 3003,
		.capacity_bytes = 3004, .used_bytes = 3005, .chunks = 3006,
		.written_chunks = 3007, .written_bytes = 3008,
		.write_dropped = 3009, .evicted = 3010, .corrupt = 3011,
		.errors = 3012};
	t->direct_enabled = 1;
	t->direct = (struct dlfs_shm_count){.reads = 3101, .bytes = 3102,
					    .ram = 3103, .nvme = 3104,
					    .checked = 3105,
					    .ram_bytes = 3100};
	t->direct_seen = 3106;
	t->pf_enabled = 1;
	t->pf_window_max = 4001;
	*fs = (struct dlfs_fill_stats){
		.planned = 5001, .streamed = 5002, .swept = 5003, .bytes = 5004,
		.from_ram = 5005, .held = 5006, .waits = 5007, .sweeping = 1,
		.swept_all = 1, .depth = 5008};
	t->fill = fs;
	*gs = (struct dlfs_grain_stats){.file_mode = 1, .switches = 6001,
					.file_reads = 6002,
					.ghost_loaded = 6003,
					.ghost_unused = 6004};
	t->grain = gs;
	t->read_unit = "auto";
	t->epoch = 7001;
	t->peer_enabled = 1;
	t->rank = 3;
	t->ranks = 8;
	t->peer = (struct dlfs_peer_snap){
		.requests = 8001, .hits = 8, .bytes = 8002, .timeouts = 8003,
		.lost = 8004, .errors = 8005, .latency_us_sum = 8000,
		.latency_us_max = 8006, .served = 8007, .served_bytes = 8008};
	for (int b = 0; b < DLFS_LAT_BUCKETS; b++)
		t->peer.lat_hist[b] = 8100 + (uint64_t)b;
	t->stage = "home";
	t->index_source = "copied";
	t->index_where = "cache_dir";
	t->index_sealed = 1;
	t->index_bytes = 9001;
	t->index_pfs_bytes = 9002;
	t->index_seconds = 1.25;
	t->pfs_inflight = 1010;
	t->dataset_id = "0123abcd";
	t->dataset_path = "/pfs/a \"b\"\\c\nd.dlfs";
	t->mountpoint = "/mnt/x";
	t->front_end = "fuse";
}

#endif
