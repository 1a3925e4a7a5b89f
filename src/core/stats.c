/* Mount statistics: see stats.h. */
#include "stats.h"

#include "fill.h"
#include "grain.h"

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

void dlfs_stats_pfs_read(struct dlfs_stats *s, uint64_t len)
{
	unsigned b = 0;
	while (b + 1 < DLFS_HIST_BUCKETS && len > (UINT64_C(4096) << b))
		b++;
	dlfs_stats_add(&s->pfs_reads, 1);
	dlfs_stats_add(&s->pfs_bytes, len);
	dlfs_stats_add(&s->pfs_hist[b], 1);
}

static const char *op_names[DLFS_OP_COUNT] = {
	"lookup",  "getattr",  "readdir",  "readdirplus", "read",
	"readlink", "statfs", "getxattr", "listxattr",   "control",
};

static unsigned long long ld(const _Atomic uint64_t *c)
{
	return (unsigned long long)atomic_load_explicit(c, memory_order_relaxed);
}

/* Appends to a bounded buffer, counting what would not fit. */
struct out {
	char *buf;
	size_t len, at;
};

static void put(struct out *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void put(struct out *o, const char *fmt, ...)
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

size_t dlfs_stats_json(const struct dlfs_stats *s,
		       const struct dlfs_tier_snap *t, char *buf, size_t len)
{
	const struct dlfs_cache_stats *ram = &t->ram;
	const struct dlfs_nvme_stats *nv = &t->nvme;
	struct out o = {buf, len, 0};
	put(&o, "{\n  \"uptime_s\": %.3f,\n  \"ops\": {", now() - s->start);
	for (int i = 0; i < DLFS_OP_COUNT; i++)
		put(&o, "%s\"%s\": %llu", i ? ", " : "", op_names[i],
		    ld(&s->ops[i]));
	put(&o, "},\n  \"bytes_served\": %llu,\n  \"tiers\": {\n",
	    ld(&s->bytes_served));
	put(&o,
	    "    \"ram\": {\"hits\": %llu, \"misses\": %llu, \"bytes\": %llu, "
	    "\"capacity_bytes\": %llu, \"used_bytes\": %llu, \"chunks\": "
	    "%llu, \"uncached_loads\": %llu, \"evicted_bytes\": %llu, "
	    "\"evicted_unused_bytes\": %llu, \"held\": %llu},\n",
	    (unsigned long long)ram->hits, (unsigned long long)ram->misses,
	    (unsigned long long)ram->used_bytes,
	    (unsigned long long)ram->capacity_bytes,
	    (unsigned long long)ram->used_bytes,
	    (unsigned long long)ram->chunks, (unsigned long long)ram->bypass,
	    U(ram->evicted_bytes), U(ram->evicted_unused_bytes), U(ram->held));
	put(&o,
	    "    \"nvme\": {\"enabled\": %d, \"policy\": \"%s\", \"hits\": %llu, "
	    "\"misses\": %llu, \"bytes\": %llu, \"capacity_bytes\": %llu, "
	    "\"used_bytes\": %llu, \"chunks\": %llu, \"written_chunks\": "
	    "%llu, \"written_bytes\": %llu, \"write_dropped\": %llu, "
	    "\"evicted\": %llu, \"corrupt\": %llu, \"errors\": %llu},\n",
	    t->nvme_enabled, t->nvme_policy ? t->nvme_policy : "none",
	    U(nv->hits), U(nv->misses), U(nv->bytes), U(nv->capacity_bytes),
	    U(nv->used_bytes), U(nv->chunks), U(nv->written_chunks),
	    U(nv->written_bytes), U(nv->write_dropped), U(nv->evicted),
	    U(nv->corrupt), U(nv->errors));
	put(&o,
	    "    \"direct\": {\"enabled\": %d, \"reads\": %llu, \"bytes\": "
	    "%llu, \"ram\": %llu, \"nvme\": %llu, \"checked\": %llu, "
	    "\"seen\": %llu},\n",
	    t->direct_enabled, U(t->direct.reads), U(t->direct.bytes),
	    U(t->direct.ram), U(t->direct.nvme), U(t->direct.checked),
	    U(t->direct_seen));
	put(&o, "    \"pfs\": {\"reads\": %llu, \"bytes\": %llu, "
		"\"read_size_hist\": {",
	    ld(&s->pfs_reads), ld(&s->pfs_bytes));
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
		put(&o, "%s\"%s%s\": %llu", b ? ", " : "",
		    last ? ">" : "", label,
		    ld(&s->pfs_hist[b]));
	}
	put(&o, "}}\n  },\n");
	const struct dlfs_fill_stats *fs = t->fill;
	struct dlfs_fill_stats none = {0};
	if (!fs)
		fs = &none;
	put(&o,
	    "  \"prefetch\": {\"enabled\": %d, \"window_max_bytes\": %llu, "
	    "\"issued\": %llu, \"used\": %llu, \"wasted\": %llu, "
	    "\"pending\": %llu, \"planned\": %llu, \"streamed\": %llu},\n",
	    t->pf_enabled, U(t->pf_window_max), U(ram->pf_issued),
	    U(ram->pf_used), U(ram->pf_wasted), U(ram->pf_pending),
	    U(fs->planned), U(fs->streamed));
	put(&o,
	    "  \"fill\": {\"depth\": %u, \"planned\": %llu, \"streamed\": "
	    "%llu, \"swept\": %llu, \"from_ram\": %llu, \"bytes\": %llu, "
	    "\"held\": %llu, \"yields\": %llu, \"sweeping\": %d, "
	    "\"swept_all\": %d},\n",
	    fs->depth, U(fs->planned), U(fs->streamed), U(fs->swept),
	    U(fs->from_ram), U(fs->bytes), U(fs->held), U(fs->waits),
	    fs->sweeping,
	    fs->swept_all);
	if (t->grain)
		put(&o,
		    "  \"read_unit\": {\"option\": \"%s\", \"now\": \"%s\", "
		    "\"switches\": %llu, \"file_reads\": %llu, "
		    "\"ghost_loaded\": %llu, \"ghost_unused\": %llu},\n",
		    t->read_unit ? t->read_unit : "auto",
		    t->grain->file_mode ? "file" : "chunk",
		    U(t->grain->switches), U(t->grain->file_reads),
		    U(t->grain->ghost_loaded), U(t->grain->ghost_unused));
	const struct dlfs_peer_snap *ps = &t->peer;
	put(&o,
	    "  \"peer\": {\"enabled\": %d, \"rank\": %u, \"ranks\": %u, "
	    "\"requests\": %llu, \"hits\": %llu, \"bytes\": %llu, "
	    "\"timeouts\": %llu, \"lost\": %llu, \"errors\": %llu, \"latency_us_avg\": %llu, "
	    "\"latency_us_max\": %llu, \"served\": %llu, \"served_bytes\": "
	    "%llu, \"latency_us_hist\": [",
	    t->peer_enabled, t->rank, t->ranks, U(ps->requests), U(ps->hits),
	    U(ps->bytes), U(ps->timeouts), U(ps->lost), U(ps->errors),
	    U(ps->hits ? ps->latency_us_sum / ps->hits : 0),
	    U(ps->latency_us_max), U(ps->served), U(ps->served_bytes));
	for (int b = 0; b < DLFS_LAT_BUCKETS; b++)
		put(&o, "%s%llu", b ? ", " : "", U(ps->lat_hist[b]));
	put(&o, "]},\n");
	put(&o,
	    "  \"stage\": {\"mode\": \"%s\", \"chunks\": %llu, \"done\": "
	    "%d},\n",
	    t->stage ? t->stage : "none", U(fs->swept), fs->swept_all);
	put(&o,
	    "  \"index\": {\"source\": \"%s\", \"where\": \"%s\", "
	    "\"sealed\": %d, \"bytes\": %llu, \"pfs_bytes\": %llu, "
	    "\"seconds\": %.3f},\n",
	    t->index_source ? t->index_source : "pfs",
	    t->index_where ? t->index_where : "pfs", t->index_sealed,
	    U(t->index_bytes), U(t->index_pfs_bytes), t->index_seconds);
	if (t->epoch == UINT64_MAX)
		put(&o, "  \"epoch\": null,\n");
	else
		put(&o, "  \"epoch\": %llu,\n", U(t->epoch));
	put(&o, "  \"files_checked\": %llu,\n", ld(&s->files_checked));
	put(&o, "  \"errors\": {\"checksum\": %llu, \"container\": "
		"%llu, \"io\": %llu, \"nvme\": %llu, \"peer\": %llu, "
		"\"index\": %llu}\n}\n",
	    ld(&s->err_checksum), ld(&s->err_container), ld(&s->err_io),
	    U(nv->errors), ld(&s->err_peer), ld(&s->err_index));
	return o.at;
}
