/* The counters as Prometheus text: see metrics.h. */
#include "metrics.h"

#include <stdio.h>
#include <string.h>

#include "fill.h"
#include "grain.h"
#include "util.h"

#define U(x) ((unsigned long long)(x))

static uint64_t ld(const _Atomic uint64_t *c)
{
	return atomic_load_explicit(c, memory_order_relaxed);
}

/* A family's header. name is without the dlfs_ prefix. */
static void family(struct dlfs_out *o, const char *name, const char *type,
		   const char *help)
{
	dlfs_out_put(o, "# HELP dlfs_%s %s\n# TYPE dlfs_%s %s\n", name, help,
		     name, type);
}

/*
 * The renderers' output: the buffer, and the mount label every series
 * carries (mount="MOUNTPOINT", or --serve's socket), so that two mounts
 * on one node never give the same series. The renderers take the
 * struct dlfs_out at its start.
 */
struct mout {
	struct dlfs_out o;
	char mount[4096]; /* the label's value, escaped */
};

/* A series' name and labels, without the value: dlfs_NAME{mount="...",
 * labels}. labels is "" or more label pairs. */
static void series(struct dlfs_out *o, const char *name, const char *labels)
{
	const struct mout *m = (const struct mout *)o;
	dlfs_out_put(o, "dlfs_%s{mount=\"%s\"%s%s}", name, m->mount,
		     *labels ? "," : "", labels);
}

/* One sample; labels is "" or more label pairs. */
static void sample(struct dlfs_out *o, const char *name, const char *labels,
		   uint64_t v)
{
	series(o, name, labels);
	dlfs_out_put(o, " %llu\n", U(v));
}

/* One sample of a value in seconds (or another fraction). */
static void sample_f(struct dlfs_out *o, const char *name, const char *fmt,
		     double v)
{
	series(o, name, "");
	dlfs_out_put(o, " ");
	dlfs_out_put(o, fmt, v);
	dlfs_out_put(o, "\n");
}

static void counter(struct dlfs_out *o, const char *name, const char *help,
		    uint64_t v)
{
	family(o, name, "counter", help);
	sample(o, name, "", v);
}

static void gauge(struct dlfs_out *o, const char *name, const char *help,
		  uint64_t v)
{
	family(o, name, "gauge", help);
	sample(o, name, "", v);
}

/* A label value: backslash, double quote and newline escaped, as the
 * format wants, and bytes that are not UTF-8 (a path is any bytes, the
 * format is UTF-8) each replaced by U+FFFD, so Prometheus takes the
 * page whatever the paths. */
static void label_value(const char *in, char *out, size_t len)
{
	const unsigned char *p = (const unsigned char *)(in ? in : "");
	size_t n = strlen((const char *)p), o = 0;
	while (n) {
		size_t k = dlfs_utf8_seq(p, n);
		const char *put = (const char *)p;
		size_t w = k;
		if (!k) {
			put = "\xef\xbf\xbd";
			w = 3;
			k = 1;
		} else if (*p == '\\' || *p == '"' || *p == '\n') {
			put = *p == '\n' ? "\\n" : *p == '"' ? "\\\"" : "\\\\";
			w = 2;
		}
		if (o + w >= len)
			break;
		memcpy(out + o, put, w);
		o += w;
		p += k;
		n -= k;
	}
	out[o] = '\0';
}

/* The upper bound of bucket b, as le="..." spells it. */
typedef void (*le_fn)(unsigned b, char *out, size_t len);

/* The read core's: 1 us << b, in seconds. */
static void le_time(unsigned b, char *out, size_t len)
{
	snprintf(out, len, "%.6f", (double)(UINT64_C(1) << b) / 1e6);
}

/* The peers': 16 us << b, in seconds. */
static void le_peer(unsigned b, char *out, size_t len)
{
	snprintf(out, len, "%.6f", (double)(UINT64_C(16) << b) / 1e6);
}

/* PFS read sizes: 4 KiB << b. */
static void le_size(unsigned b, char *out, size_t len)
{
	snprintf(out, len, "%llu", U(UINT64_C(4096) << b));
}

/*
 * One histogram series: n[b] counts what fell in bucket b (the last: all
 * above the one before), rendered cumulative; _count is their total, so
 * it always equals the +Inf bucket. sum is in the family's unit, printed
 * with sum_fmt.
 */
static void histogram(struct dlfs_out *o, const char *name,
		      const char *labels, const uint64_t *n, unsigned nb,
		      le_fn le, const char *sum_fmt, double sum)
{
	const char *sep = *labels ? "," : "";
	char bound[32], lb[256], nm[96];
	uint64_t acc = 0;
	snprintf(nm, sizeof(nm), "%s_bucket", name);
	for (unsigned b = 0; b < nb; b++) {
		acc += n[b];
		if (b + 1 < nb)
			le(b, bound, sizeof(bound));
		else
			snprintf(bound, sizeof(bound), "+Inf");
		snprintf(lb, sizeof(lb), "%s%sle=\"%s\"", labels, sep, bound);
		sample(o, nm, lb, acc);
	}
	snprintf(nm, sizeof(nm), "%s_sum", name);
	series(o, nm, labels);
	dlfs_out_put(o, " ");
	dlfs_out_put(o, sum_fmt, sum);
	dlfs_out_put(o, "\n");
	snprintf(nm, sizeof(nm), "%s_count", name);
	sample(o, nm, labels, acc);
}

static const char *const op_names[DLFS_OP_COUNT] = {
	"lookup",  "getattr",  "readdir",  "readdirplus", "read",
	"readlink", "statfs", "getxattr", "listxattr",   "control",
};

static void identity(struct dlfs_out *o, const struct dlfs_stats *s,
		     const struct dlfs_tier_snap *t)
{
	char id[128], ds[4096], mnt[4096], fe[64];
	label_value(t->dataset_id, id, sizeof(id));
	label_value(t->dataset_path, ds, sizeof(ds));
	label_value(t->mountpoint, mnt, sizeof(mnt));
	label_value(t->front_end, fe, sizeof(fe));
	family(o, "info", "gauge",
	       "Who this mount is: dataset id and path, mountpoint (empty "
	       "for dlfs --serve), front end, MPI rank; always 1.");
	char lb[sizeof(id) + sizeof(ds) + sizeof(mnt) + sizeof(fe) + 128];
	snprintf(lb, sizeof(lb),
		 "dataset_id=\"%s\",dataset=\"%s\",mountpoint=\"%s\","
		 "front_end=\"%s\",rank=\"%u\",ranks=\"%u\"",
		 id, ds, mnt, fe, t->rank, t->ranks ? t->ranks : 1);
	sample(o, "info", lb, 1);
	family(o, "uptime_seconds", "gauge", "Seconds since the mount started.");
	sample_f(o, "uptime_seconds", "%.3f", dlfs_stats_uptime(s));
	if (t->epoch != UINT64_MAX)
		gauge(o, "epoch",
		      "The epoch the epoch views follow now (absent before "
		      "any is read).",
		      t->epoch);
}

static void reads(struct dlfs_out *o, const struct dlfs_stats *s)
{
	char lb[32];
	family(o, "ops_total", "counter",
	       "Requests of the front end, by operation.");
	for (int i = 0; i < DLFS_OP_COUNT; i++) {
		snprintf(lb, sizeof(lb), "op=\"%s\"", op_names[i]);
		sample(o, "ops_total", lb, ld(&s->ops[i]));
	}
	counter(o, "served_bytes_total",
		"Bytes returned to readers by this process's reads.",
		ld(&s->bytes_served));
	counter(o, "files_read_total",
		"Reads from a file's first byte: files read by this process.",
		ld(&s->files_read));
	counter(o, "files_checked_total",
		"Files checked whole against their own checksum.",
		ld(&s->files_checked));
	static const char *const unz[DLFS_UNZ_COUNT] = {
		[DLFS_UNZ_DECODE] = "decode", [DLFS_UNZ_FILL] = "background",
		[DLFS_UNZ_CALLER] = "caller"};
	family(o, "chunks_decompressed_total", "counter",
	       "Compressed chunks decompressed, by the threads that did it.");
	for (int i = 0; i < DLFS_UNZ_COUNT; i++) {
		snprintf(lb, sizeof(lb), "thread=\"%s\"", unz[i]);
		sample(o, "chunks_decompressed_total", lb, ld(&s->unz[i]));
	}
}

/* Hits, misses, bytes and latency of each tier. */
static void tiers(struct dlfs_out *o, const struct dlfs_stats *s,
		  const struct dlfs_tier_snap *t)
{
	const struct dlfs_peer_snap *ps = &t->peer;
	static const char *const tier_names[DLFS_TIER_COUNT] = {"ram", "nvme",
								"pfs"};
	uint64_t n[DLFS_TIME_BUCKETS + 1];
	char lb[32];
	family(o, "tier_hits_total", "counter",
	       "Lookups of a chunk or file that a tier answered.");
	sample(o, "tier_hits_total", "tier=\"ram\"", t->ram.hits);
	sample(o, "tier_hits_total", "tier=\"nvme\"", t->nvme.hits);
	sample(o, "tier_hits_total", "tier=\"peer\"", ps->hits);
	family(o, "tier_misses_total", "counter",
	       "Lookups of a chunk or file that a tier could not answer.");
	sample(o, "tier_misses_total", "tier=\"ram\"", t->ram.misses);
	sample(o, "tier_misses_total", "tier=\"nvme\"", t->nvme.misses);
	sample(o, "tier_misses_total", "tier=\"peer\"",
	       ps->requests > ps->hits ? ps->requests - ps->hits : 0);
	family(o, "tier_read_bytes_total", "counter",
	       "Bytes read from each tier: ram, those of reads served from "
	       "the RAM tier without a load; nvme, peer and pfs, those read "
	       "from the NVMe cache, received from peers, read from "
	       "containers.");
	sample(o, "tier_read_bytes_total", "tier=\"ram\"", ld(&s->ram_bytes));
	sample(o, "tier_read_bytes_total", "tier=\"nvme\"", t->nvme.bytes);
	sample(o, "tier_read_bytes_total", "tier=\"peer\"", ps->bytes);
	sample(o, "tier_read_bytes_total", "tier=\"pfs\"", ld(&s->pfs_bytes));
	family(o, "tier_read_seconds", "histogram",
	       "Latency of reads by tier: ram, a read served from the RAM "
	       "tier; nvme, one read of an NVMe cache file; pfs, one read of "
	       "a container; peer, one chunk from a peer.");
	for (int i = 0; i < DLFS_TIER_COUNT; i++) {
		const struct dlfs_time_hist *h = &s->lat[i];
		for (int b = 0; b < DLFS_TIME_BUCKETS; b++)
			n[b] = ld(&h->b[b]);
		snprintf(lb, sizeof(lb), "tier=\"%s\"", tier_names[i]);
		histogram(o, "tier_read_seconds", lb, n, DLFS_TIME_BUCKETS,
			  le_time, "%.9f", (double)ld(&h->sum_ns) / 1e9);
	}
	histogram(o, "tier_read_seconds", "tier=\"peer\"", ps->lat_hist,
		  DLFS_LAT_BUCKETS, le_peer, "%.6f",
		  (double)ps->latency_us_sum / 1e6);
}

static void pfs(struct dlfs_out *o, const struct dlfs_stats *s,
		const struct dlfs_tier_snap *t)
{
	uint64_t n[DLFS_HIST_BUCKETS];
	counter(o, "pfs_reads_total", "Reads of containers.",
		ld(&s->pfs_reads));
	gauge(o, "pfs_reads_in_flight", "Reads of containers in flight now.",
	      t->pfs_inflight);
	family(o, "pfs_read_size_bytes", "histogram",
	       "Sizes of the reads of containers.");
	for (int b = 0; b < DLFS_HIST_BUCKETS; b++)
		n[b] = ld(&s->pfs_hist[b]);
	histogram(o, "pfs_read_size_bytes", "", n, DLFS_HIST_BUCKETS, le_size,
		  "%.0f", (double)ld(&s->pfs_bytes));
	family(o, "pfs_reads_why_total", "counter",
	       "Reads of containers by why: home (this node is the chunk's "
	       "home), miss (no peer asked), substitute (for a gone home), "
	       "gone (no peer could answer), error (a peer's answer failed).");
	for (int w = 0; w < DLFS_PFS_WHY_COUNT; w++) {
		char lb[32];
		snprintf(lb, sizeof(lb), "why=\"%s\"", dlfs_pfs_why_names[w]);
		sample(o, "pfs_reads_why_total", lb, ld(&s->pfs_why[w]));
	}
}

static void ram(struct dlfs_out *o, const struct dlfs_cache_stats *r)
{
	gauge(o, "ram_capacity_bytes", "Bytes the RAM tier may hold.",
	      r->capacity_bytes);
	gauge(o, "ram_used_bytes", "Bytes the RAM tier holds.", r->used_bytes);
	gauge(o, "ram_entries", "Chunks and files the RAM tier holds.",
	      r->chunks);
	gauge(o, "ram_held_entries", "Entries of the RAM tier pinned now.",
	      r->held);
	counter(o, "ram_uncached_loads_total",
		"Loads served from a private buffer: every entry was pinned.",
		r->bypass);
	counter(o, "ram_evicted_bytes_total", "Bytes evicted from the RAM tier.",
		r->evicted_bytes);
	counter(o, "ram_evicted_unused_bytes_total",
		"Bytes evicted from the RAM tier never served nor kept "
		"elsewhere.",
		r->evicted_unused_bytes);
}

static void nvme(struct dlfs_out *o, const struct dlfs_tier_snap *t)
{
	const struct dlfs_nvme_stats *n = &t->nvme;
	gauge(o, "nvme_enabled", "1 when the NVMe tier (cache_dir) is in use.",
	      (uint64_t)t->nvme_enabled);
	gauge(o, "nvme_capacity_bytes", "Bytes the NVMe tier may hold.",
	      n->capacity_bytes);
	gauge(o, "nvme_used_bytes", "Bytes the NVMe tier holds.",
	      n->used_bytes);
	gauge(o, "nvme_chunks", "Chunks the NVMe tier holds.", n->chunks);
	counter(o, "nvme_written_chunks_total", "Chunks written to the NVMe tier.",
		n->written_chunks);
	counter(o, "nvme_written_bytes_total", "Bytes written to the NVMe tier.",
		n->written_bytes);
	counter(o, "nvme_write_dropped_total",
		"Chunks not written to the NVMe tier: its queue was full.",
		n->write_dropped);
	counter(o, "nvme_evicted_chunks_total",
		"Chunks evicted from the NVMe tier.", n->evicted);
	counter(o, "nvme_corrupt_chunks_total",
		"Chunks of the NVMe tier found damaged and dropped.",
		n->corrupt);
}

/* Reads served by readers in other processes (dlfs-run's), from the
 * tiers in shared memory. */
static void direct(struct dlfs_out *o, const struct dlfs_tier_snap *t)
{
	family(o, "direct_reads_total", "counter",
	       "Reads that dlfs-run's readers served from the shared tiers "
	       "without this process.");
	sample(o, "direct_reads_total", "tier=\"ram\"", t->direct.ram);
	sample(o, "direct_reads_total", "tier=\"nvme\"", t->direct.nvme);
	family(o, "direct_read_bytes_total", "counter",
	       "Bytes of the reads dlfs-run's readers served themselves.");
	sample(o, "direct_read_bytes_total", "tier=\"ram\"",
	       t->direct.ram_bytes);
	sample(o, "direct_read_bytes_total", "tier=\"nvme\"",
	       t->direct.bytes > t->direct.ram_bytes
		       ? t->direct.bytes - t->direct.ram_bytes
		       : 0);
	counter(o, "direct_files_checked_total",
		"Files dlfs-run's readers checked whole themselves.",
		t->direct.checked);
	counter(o, "direct_reads_followed_total",
		"Their reads from a file's start handed on to the epoch views "
		"and staging.",
		t->direct_seen);
}

static void background(struct dlfs_out *o, const struct dlfs_tier_snap *t)
{
	const struct dlfs_cache_stats *r = &t->ram;
	const struct dlfs_fill_stats *f = t->fill;
	struct dlfs_fill_stats none = {0};
	if (!f)
		f = &none;
	counter(o, "prefetch_issued_total", "Chunks read ahead.",
		r->pf_issued);
	counter(o, "prefetch_used_total", "Chunks read ahead and then used.",
		r->pf_used);
	counter(o, "prefetch_wasted_total",
		"Chunks read ahead and evicted unused.", r->pf_wasted);
	gauge(o, "prefetch_pending_chunks",
	      "Chunks read ahead not used yet.", r->pf_pending);
	gauge(o, "fill_depth", "Background reads of containers allowed in "
			       "flight (pfs_depth).",
	      f->depth);
	family(o, "fill_chunks_total", "counter",
	       "Chunks the background reads loaded, by why: planned (the "
	       "epoch order), streamed (sequential read-ahead), swept "
	       "(staging).");
	sample(o, "fill_chunks_total", "kind=\"planned\"", f->planned);
	sample(o, "fill_chunks_total", "kind=\"streamed\"", f->streamed);
	sample(o, "fill_chunks_total", "kind=\"swept\"", f->swept);
	counter(o, "fill_bytes_total", "Bytes the background reads loaded.",
		f->bytes);
	counter(o, "fill_from_ram_chunks_total",
		"Chunks the background put in the NVMe tier from RAM.",
		f->from_ram);
	gauge(o, "fill_held_chunks", "Planned chunks held in RAM now.",
	      f->held);
	counter(o, "fill_yields_total",
		"Times the background reads yielded to demand reads.",
		f->waits);
	gauge(o, "stage_done", "1 once staging has swept every chunk.",
	      (uint64_t)f->swept_all);
	if (t->grain) {
		gauge(o, "read_unit_file",
		      "1 while misses read files alone, 0 while whole chunks.",
		      (uint64_t)t->grain->file_mode);
		counter(o, "read_unit_switches_total",
			"Switches between chunk and file reads.",
			t->grain->switches);
		counter(o, "read_unit_file_reads_total",
			"Files read alone from containers.",
			t->grain->file_reads);
		counter(o, "read_unit_ghost_loaded_bytes_total",
			"Bytes whole-chunk reads would have loaded (the "
			"ghost RAM tier that decides the read unit).",
			t->grain->ghost_loaded);
		counter(o, "read_unit_ghost_unused_bytes_total",
			"Bytes of those that would have gone unused.",
			t->grain->ghost_unused);
	}
}

static void peer(struct dlfs_out *o, const struct dlfs_tier_snap *t)
{
	const struct dlfs_peer_snap *p = &t->peer;
	counter(o, "peer_requests_total", "Chunks asked of their home node.",
		p->requests);
	family(o, "peer_failures_total", "counter",
	       "Peer failures: timeout and lost, peers found gone by their "
	       "silence or by MPI's report (their chunks then go to a "
	       "substitute); error, answers that were an error.");
	sample(o, "peer_failures_total", "reason=\"timeout\"", p->timeouts);
	sample(o, "peer_failures_total", "reason=\"lost\"", p->lost);
	sample(o, "peer_failures_total", "reason=\"error\"", p->errors);
	counter(o, "peer_back_total", "Peers found gone, heard from again.",
		p->back);
	counter(o, "peer_rerouted_total",
		"Chunks asked of a gone home's substitute.", p->rerouted);
	counter(o, "peer_heartbeats_sent_total",
		"Heartbeats sent to peers waiting on this node.",
		p->heartbeats_sent);
	counter(o, "peer_heartbeats_heard_total",
		"Heartbeats from the peers this node waited on.",
		p->heartbeats_heard);
	family(o, "peer_mpi_lag_max_seconds", "gauge",
	       "The latest the MPI thread woke from an idle wait.");
	sample_f(o, "peer_mpi_lag_max_seconds", "%.6f",
		 p->mpi_lag_us_max / 1e6);
	counter(o, "peer_served_total", "Chunks served to other nodes.",
		p->served);
	counter(o, "peer_served_bytes_total", "Bytes served to other nodes.",
		p->served_bytes);
	family(o, "peer_latency_max_seconds", "gauge",
	       "The longest a peer took to answer.");
	sample_f(o, "peer_latency_max_seconds", "%.6f",
		 (double)p->latency_us_max / 1e6);
}

static void errors(struct dlfs_out *o, const struct dlfs_stats *s,
		   const struct dlfs_tier_snap *t)
{
	family(o, "errors_total", "counter",
	       "Failures, by kind: checksum (damaged data), container "
	       "(unusable), io, nvme (the NVMe tier's), peer (bad bytes from "
	       "a peer), index (damaged records).");
	sample(o, "errors_total", "kind=\"checksum\"", ld(&s->err_checksum));
	sample(o, "errors_total", "kind=\"container\"", ld(&s->err_container));
	sample(o, "errors_total", "kind=\"io\"", ld(&s->err_io));
	sample(o, "errors_total", "kind=\"nvme\"", t->nvme.errors);
	sample(o, "errors_total", "kind=\"peer\"", ld(&s->err_peer));
	sample(o, "errors_total", "kind=\"index\"", ld(&s->err_index));
}

static void index_(struct dlfs_out *o, const struct dlfs_tier_snap *t)
{
	gauge(o, "index_bytes", "Bytes of the dataset's index.", t->index_bytes);
	gauge(o, "index_pfs_bytes",
	      "Bytes of the index this node read from the PFS.",
	      t->index_pfs_bytes);
	family(o, "index_load_seconds", "gauge",
	       "Seconds it took to have the index at mount.");
	sample_f(o, "index_load_seconds", "%.3f", t->index_seconds);
}

size_t dlfs_metrics_text(const struct dlfs_stats *s,
			 const struct dlfs_tier_snap *t, char *buf, size_t len)
{
	struct mout m = {{buf, len, 0}, ""};
	struct dlfs_out *o = &m.o;
	if (len)
		buf[0] = '\0';
	label_value(t->mount ? t->mount : t->mountpoint, m.mount,
		    sizeof(m.mount));
	identity(o, s, t);
	reads(o, s);
	tiers(o, s, t);
	pfs(o, s, t);
	ram(o, &t->ram);
	nvme(o, t);
	direct(o, t);
	background(o, t);
	peer(o, t);
	errors(o, s, t);
	index_(o, t);
	return o->at;
}
