/* Mount statistics: see stats.h. */
#include "stats.h"

#include "fill.h"
#include "grain.h"
#include "metrics.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

void dlfs_stats_init(struct dlfs_stats *s)
{
	memset(s, 0, sizeof(*s));
	s->start = now();
}

const char *const dlfs_pfs_why_names[DLFS_PFS_WHY_COUNT] = {
	"home", "miss", "substitute", "gone", "error",
};

void dlfs_stats_pfs_read(struct dlfs_stats *s, uint64_t len)
{
	unsigned b = 0;
	while (b + 1 < DLFS_HIST_BUCKETS && len > (UINT64_C(4096) << b))
		b++;
	dlfs_stats_add(&s->pfs_reads, 1);
	dlfs_stats_add(&s->pfs_bytes, len);
	dlfs_stats_add(&s->pfs_hist[b], 1);
}

uint64_t dlfs_stats_clock(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void dlfs_stats_time_ns(struct dlfs_stats *s, enum dlfs_tier tier,
			uint64_t ns)
{
	struct dlfs_time_hist *h = &s->lat[tier];
	unsigned b = 0;
	while (b + 1 < DLFS_TIME_BUCKETS && ns > (UINT64_C(1000) << b))
		b++;
	dlfs_stats_add(&h->b[b], 1);
	dlfs_stats_add(&h->sum_ns, ns);
}

void dlfs_stats_time(struct dlfs_stats *s, enum dlfs_tier tier, uint64_t t0)
{
	uint64_t t1 = dlfs_stats_clock();
	dlfs_stats_time_ns(s, tier, t1 > t0 ? t1 - t0 : 0);
}

size_t dlfs_stats_render(enum dlfs_stats_fmt f, const struct dlfs_stats *s,
			 const struct dlfs_tier_snap *t, char *buf,
			 size_t len)
{
	return f == DLFS_STATS_PROMETHEUS ? dlfs_metrics_text(s, t, buf, len)
					  : dlfs_stats_json(s, t, buf, len);
}

double dlfs_stats_uptime(const struct dlfs_stats *s)
{
	return now() - s->start;
}

static const char *op_names[DLFS_OP_COUNT] = {
	"lookup",  "getattr",  "readdir",  "readdirplus", "read",
	"readlink", "statfs", "getxattr", "listxattr",   "control",
};

static unsigned long long ld(const _Atomic uint64_t *c)
{
	return (unsigned long long)atomic_load_explicit(c, memory_order_relaxed);
}

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

#define U(x) ((unsigned long long)(x))

/* The mean of a latency histogram, in microseconds (0 when empty). */
static uint64_t lat_avg_us(const struct dlfs_time_hist *h)
{
	uint64_t n = 0;
	for (int b = 0; b < DLFS_TIME_BUCKETS; b++)
		n += atomic_load_explicit(&h->b[b], memory_order_relaxed);
	return n ? atomic_load_explicit(&h->sum_ns, memory_order_relaxed) /
			   n / 1000
		 : 0;
}

size_t dlfs_stats_json(const struct dlfs_stats *s,
		       const struct dlfs_tier_snap *t, char *buf, size_t len)
{
	const struct dlfs_cache_stats *ram = &t->ram;
	const struct dlfs_nvme_stats *nv = &t->nvme;
	struct dlfs_out o = {buf, len, 0};
	dlfs_out_put(&o, "{\n  \"uptime_s\": %.3f,\n  \"ops\": {",
		     dlfs_stats_uptime(s));
	for (int i = 0; i < DLFS_OP_COUNT; i++)
		dlfs_out_put(&o, "%s\"%s\": %llu", i ? ", " : "", op_names[i],
		    ld(&s->ops[i]));
	dlfs_out_put(&o, "},\n  \"bytes_served\": %llu,\n  \"tiers\": {\n",
	    ld(&s->bytes_served));
	dlfs_out_put(&o,
	    "    \"ram\": {\"hits\": %llu, \"misses\": %llu, \"bytes\": %llu, "
	    "\"capacity_bytes\": %llu, \"used_bytes\": %llu, \"chunks\": "
	    "%llu, \"uncached_loads\": %llu, \"evicted_bytes\": %llu, "
	    "\"evicted_unused_bytes\": %llu, \"held\": %llu, "
	    "\"served_bytes\": %llu, \"latency_us_avg\": %llu},\n",
	    (unsigned long long)ram->hits, (unsigned long long)ram->misses,
	    (unsigned long long)ram->used_bytes,
	    (unsigned long long)ram->capacity_bytes,
	    (unsigned long long)ram->used_bytes,
	    (unsigned long long)ram->chunks, (unsigned long long)ram->bypass,
	    U(ram->evicted_bytes), U(ram->evicted_unused_bytes), U(ram->held),
	    ld(&s->ram_bytes), U(lat_avg_us(&s->lat[DLFS_TIER_RAM])));
	dlfs_out_put(&o,
	    "    \"nvme\": {\"enabled\": %d, \"policy\": \"%s\", \"hits\": %llu, "
	    "\"misses\": %llu, \"bytes\": %llu, \"capacity_bytes\": %llu, "
	    "\"used_bytes\": %llu, \"chunks\": %llu, \"written_chunks\": "
	    "%llu, \"written_bytes\": %llu, \"write_dropped\": %llu, "
	    "\"evicted\": %llu, \"corrupt\": %llu, \"errors\": %llu, "
	    "\"latency_us_avg\": %llu},\n",
	    t->nvme_enabled, t->nvme_policy ? t->nvme_policy : "none",
	    U(nv->hits), U(nv->misses), U(nv->bytes), U(nv->capacity_bytes),
	    U(nv->used_bytes), U(nv->chunks), U(nv->written_chunks),
	    U(nv->written_bytes), U(nv->write_dropped), U(nv->evicted),
	    U(nv->corrupt), U(nv->errors),
	    U(lat_avg_us(&s->lat[DLFS_TIER_NVME])));
	dlfs_out_put(&o,
	    "    \"direct\": {\"enabled\": %d, \"reads\": %llu, \"bytes\": "
	    "%llu, \"ram\": %llu, \"nvme\": %llu, \"checked\": %llu, "
	    "\"seen\": %llu, \"ram_bytes\": %llu},\n",
	    t->direct_enabled, U(t->direct.reads), U(t->direct.bytes),
	    U(t->direct.ram), U(t->direct.nvme), U(t->direct.checked),
	    U(t->direct_seen), U(t->direct.ram_bytes));
	dlfs_out_put(&o, "    \"pfs\": {\"reads\": %llu, \"bytes\": %llu, "
		"\"in_flight\": %u, \"latency_us_avg\": %llu, "
		"\"read_size_hist\": {",
	    ld(&s->pfs_reads), ld(&s->pfs_bytes), t->pfs_inflight,
	    U(lat_avg_us(&s->lat[DLFS_TIER_PFS])));
	/* Bucket b counts reads of at most 4K << b; the last, the rest. */
	for (int b = 0; b < DLFS_HIST_BUCKETS; b++) {
		int last = b == DLFS_HIST_BUCKETS - 1;
		uint64_t kib = UINT64_C(4) << (last ? b - 1 : b);
		char label[16];
		if (kib >= 1024)
			snprintf(label, sizeof(label), "%lluM",
				 (unsigned long long)(kib / 1024));
		else
			snprintf(label, sizeof(label), "%lluK",
				 (unsigned long long)kib);
		dlfs_out_put(&o, "%s\"%s%s\": %llu", b ? ", " : "",
		    last ? ">" : "", label,
		    ld(&s->pfs_hist[b]));
	}
	dlfs_out_put(&o, "}, \"why\": {");
	for (int w = 0; w < DLFS_PFS_WHY_COUNT; w++)
		dlfs_out_put(&o, "%s\"%s\": %llu", w ? ", " : "",
			     dlfs_pfs_why_names[w], ld(&s->pfs_why[w]));
	dlfs_out_put(&o, "}}\n  },\n");
	const struct dlfs_fill_stats *fs = t->fill;
	struct dlfs_fill_stats none = {0};
	if (!fs)
		fs = &none;
	dlfs_out_put(&o,
	    "  \"prefetch\": {\"enabled\": %d, \"window_max_bytes\": %llu, "
	    "\"issued\": %llu, \"used\": %llu, \"wasted\": %llu, "
	    "\"pending\": %llu, \"planned\": %llu, \"streamed\": %llu},\n",
	    t->pf_enabled, U(t->pf_window_max), U(ram->pf_issued),
	    U(ram->pf_used), U(ram->pf_wasted), U(ram->pf_pending),
	    U(fs->planned), U(fs->streamed));
	dlfs_out_put(&o,
	    "  \"fill\": {\"depth\": %u, \"planned\": %llu, \"streamed\": "
	    "%llu, \"swept\": %llu, \"from_ram\": %llu, \"bytes\": %llu, "
	    "\"held\": %llu, \"yields\": %llu, \"sweeping\": %d, "
	    "\"swept_all\": %d},\n",
	    fs->depth, U(fs->planned), U(fs->streamed), U(fs->swept),
	    U(fs->from_ram), U(fs->bytes), U(fs->held), U(fs->waits),
	    fs->sweeping,
	    fs->swept_all);
	if (t->grain)
		dlfs_out_put(&o,
		    "  \"read_unit\": {\"option\": \"%s\", \"now\": \"%s\", "
		    "\"switches\": %llu, \"file_reads\": %llu, "
		    "\"ghost_loaded\": %llu, \"ghost_unused\": %llu},\n",
		    t->read_unit ? t->read_unit : "auto",
		    t->grain->file_mode ? "file" : "chunk",
		    U(t->grain->switches), U(t->grain->file_reads),
		    U(t->grain->ghost_loaded), U(t->grain->ghost_unused));
	const struct dlfs_peer_snap *ps = &t->peer;
	dlfs_out_put(&o,
	    "  \"peer\": {\"enabled\": %d, \"rank\": %u, \"ranks\": %u, "
	    "\"requests\": %llu, \"hits\": %llu, \"bytes\": %llu, "
	    "\"timeouts\": %llu, \"lost\": %llu, \"back\": %llu, "
	    "\"errors\": %llu, \"rerouted\": %llu, \"latency_us_avg\": %llu, "
	    "\"latency_us_max\": %llu, \"served\": %llu, \"served_bytes\": "
	    "%llu, \"heartbeats_sent\": %llu, \"heartbeats_heard\": %llu, "
	    "\"mpi_lag_us_avg\": %llu, \"mpi_lag_us_max\": %llu, "
	    "\"latency_us_hist\": [",
	    t->peer_enabled, t->rank, t->ranks, U(ps->requests), U(ps->hits),
	    U(ps->bytes), U(ps->timeouts), U(ps->lost), U(ps->back),
	    U(ps->errors), U(ps->rerouted),
	    U(ps->hits ? ps->latency_us_sum / ps->hits : 0),
	    U(ps->latency_us_max), U(ps->served), U(ps->served_bytes),
	    U(ps->heartbeats_sent), U(ps->heartbeats_heard),
	    U(ps->mpi_waits ? ps->mpi_lag_us_sum / ps->mpi_waits : 0),
	    U(ps->mpi_lag_us_max));
	for (int b = 0; b < DLFS_LAT_BUCKETS; b++)
		dlfs_out_put(&o, "%s%llu", b ? ", " : "", U(ps->lat_hist[b]));
	dlfs_out_put(&o, "]},\n");
	dlfs_out_put(&o,
	    "  \"stage\": {\"mode\": \"%s\", \"chunks\": %llu, \"done\": "
	    "%d},\n",
	    t->stage ? t->stage : "none", U(fs->swept), fs->swept_all);
	dlfs_out_put(&o,
	    "  \"index\": {\"source\": \"%s\", \"where\": \"%s\", "
	    "\"sealed\": %d, \"bytes\": %llu, \"pfs_bytes\": %llu, "
	    "\"seconds\": %.3f},\n",
	    t->index_source ? t->index_source : "pfs",
	    t->index_where ? t->index_where : "pfs", t->index_sealed,
	    U(t->index_bytes), U(t->index_pfs_bytes), t->index_seconds);
	if (t->epoch == UINT64_MAX)
		dlfs_out_put(&o, "  \"epoch\": null,\n");
	else
		dlfs_out_put(&o, "  \"epoch\": %llu,\n", U(t->epoch));
	dlfs_out_put(&o,
	    "  \"decompressed\": {\"decode_threads\": %llu, \"background\": "
	    "%llu, \"caller\": %llu},\n",
	    ld(&s->unz[DLFS_UNZ_DECODE]), ld(&s->unz[DLFS_UNZ_FILL]),
	    ld(&s->unz[DLFS_UNZ_CALLER]));
	dlfs_out_put(&o, "  \"files_checked\": %llu,\n", ld(&s->files_checked));
	dlfs_out_put(&o, "  \"files_read\": %llu,\n", ld(&s->files_read));
	dlfs_out_put(&o, "  \"errors\": {\"checksum\": %llu, \"container\": "
		"%llu, \"io\": %llu, \"nvme\": %llu, \"peer\": %llu, "
		"\"index\": %llu}\n}\n",
	    ld(&s->err_checksum), ld(&s->err_container), ld(&s->err_io),
	    U(nv->errors), ld(&s->err_peer), ld(&s->err_index));
	return o.at;
}
