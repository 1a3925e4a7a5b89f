/*
 * The counters as Prometheus text (metrics.c, through metrics.h), as
 * /.dlfs/metrics serves it. A checker here reads the text exposition
 * format 0.0.4 strictly: every family has # HELP then # TYPE before its
 * samples and appears once; counters end in _total and nothing else
 * does; names and labels have the format's syntax, label values its
 * escapes; every value is a number; a histogram's buckets are cumulative
 * with rising bounds up to le="+Inf", which equals its _count. Then:
 * the text of a snapshot with every field set to its own value passes,
 * each series renders its own field (the same values test_stats sees in
 * the JSON), the latency histograms put each read in its bucket, the
 * dataset path is escaped; a zero snapshot passes and has no epoch; a
 * short buffer gets the length needed and a NUL-terminated prefix. The
 * mount tests run promtool over a live mount's.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"
#include "statsfill.h"
#include "tutil.h"

/* ---- a checker of the text format ---- */

struct series {
	char key[640]; /* name{labels} as rendered, without mount */
	double v;
};

struct expo {
	char fam[64][64]; /* the families seen, in order */
	int nfam;
	struct series s[600];
	int n;
	const char *why; /* the first error, or NULL */
	int line;
	char mount[256]; /* the series' mount label, as rendered */
	int n_lines, n_mount; /* sample lines; those with the mount label */
};

static int bad(struct expo *e, const char *why)
{
	if (!e->why)
		e->why = why;
	return -1;
}

static int ends_with(const char *s, const char *tail)
{
	size_t a = strlen(s), b = strlen(tail);
	return a >= b && !strcmp(s + a - b, tail);
}

/* A metric or label name at p: its length, 0 if none. */
static size_t name_len(const char *p, int metric)
{
	size_t n = 0;
	if (!(isalpha((unsigned char)p[0]) || p[0] == '_' ||
	      (metric && p[0] == ':')))
		return 0;
	while (isalnum((unsigned char)p[n]) || p[n] == '_' ||
	       (metric && p[n] == ':'))
		n++;
	return n;
}

/* Labels at p, after '{': name="value" pairs, up to '}'. le's value is
 * copied out. @return the length up to and with '}', or -1. */
static int labels(struct expo *e, const char *p, char *le, size_t le_cap)
{
	const char *q = p;
	le[0] = '\0';
	for (int first = 1; *q != '}'; first = 0) {
		if (!first && *q++ != ',')
			return bad(e, "labels must be separated by ','");
		size_t n = name_len(q, 0);
		if (!n || q[n] != '=' || q[n + 1] != '"')
			return bad(e, "a label must be name=\"value\"");
		int is_le = n == 2 && !strncmp(q, "le", 2);
		q += n + 2;
		size_t o = 0;
		for (; *q != '"'; q++) {
			if (!*q || *q == '\n')
				return bad(e, "an unterminated label value");
			if (*q == '\\') {
				q++;
				if (*q != '\\' && *q != '"' && *q != 'n')
					return bad(e, "a bad escape in a label");
			}
			if (is_le && o + 1 < le_cap)
				le[o++] = *q;
		}
		if (is_le)
			le[o] = '\0';
		q++;
	}
	return (int)(q - p) + 1;
}

/* The state of the histogram series being read. */
struct hstate {
	char base[512]; /* its key without le */
	double last_le, last_count;
	int inf;        /* +Inf seen, with this count: */
	double inf_count;
};

static int sample_line(struct expo *e, char *line, const char *fam,
		       const char *type, struct hstate *h)
{
	size_t n = name_len(line, 1);
	char name[96], le[32] = "", key[640];
	if (!n || n >= sizeof(name))
		return bad(e, "a sample line must start with a name");
	memcpy(name, line, n);
	name[n] = '\0';
	const char *p = line + n;
	char lab[512] = "";
	if (*p == '{') {
		int l = labels(e, p + 1, le, sizeof(le));
		if (l < 0)
			return -1;
		if ((size_t)l >= sizeof(lab))
			return bad(e, "labels too long for the checker");
		memcpy(lab, p + 1, (size_t)l - 1);
		lab[l - 1] = '\0';
		p += l + 1;
	}
	/* dlfs's series carry the mount label first, the same in all
	 * (counted: the callers check every sample had it); the keys below
	 * leave it out. */
	e->n_lines++;
	size_t q = 7;
	if (strncmp(lab, "mount=\"", 7))
		goto keyed;
	while (lab[q] && lab[q] != '"')
		q += lab[q] == '\\' && lab[q + 1] ? 2 : 1;
	if (q - 7 >= sizeof(e->mount))
		return bad(e, "a mount label too long for the checker");
	if (!e->mount[0] && !e->n)
		snprintf(e->mount, sizeof(e->mount), "%.*s", (int)(q - 7), lab + 7);
	else if (strlen(e->mount) != q - 7 || strncmp(e->mount, lab + 7, q - 7))
		return bad(e, "series with different mount labels");
	memmove(lab, lab + q + 1 + (lab[q + 1] == ','),
		strlen(lab + q + 1 + (lab[q + 1] == ',')) + 1);
	e->n_mount++;
keyed:
	if (*p++ != ' ')
		return bad(e, "a single space must separate the value");
	char *end;
	double v = strtod(p, &end);
	if (end == p || *end)
		return bad(e, "the value is not a number");
	int hist = !strcmp(type, "histogram");
	if (!hist && strcmp(name, fam))
		return bad(e, "a sample of another family than its TYPE's");
	if (hist) {
		const char *sfx = name + strlen(fam);
		if (strncmp(name, fam, strlen(fam)) ||
		    (strcmp(sfx, "_bucket") && strcmp(sfx, "_sum") &&
		     strcmp(sfx, "_count")))
			return bad(e, "a histogram's sample is not _bucket, "
				      "_sum or _count");
		/* The series without le: where its labels were. */
		char base[512];
		snprintf(base, sizeof(base), "%s", lab);
		char *lp = strstr(base, "le=\"");
		if (lp) {
			if (lp > base && lp[-1] == ',')
				lp--;
			*lp = '\0';
		}
		if (!strcmp(sfx, "_bucket")) {
			if (!le[0])
				return bad(e, "a bucket without le");
			if (strcmp(h->base, base) || h->inf) {
				/* A new series starts. */
				if (h->base[0] && !h->inf)
					return bad(e, "a series without +Inf");
				snprintf(h->base, sizeof(h->base), "%s", base);
				h->last_le = -1;
				h->last_count = 0;
				h->inf = 0;
			}
			double b = strcmp(le, "+Inf") ? strtod(le, &end) : 1e308;
			if (b <= h->last_le)
				return bad(e, "bucket bounds must rise");
			if (v < h->last_count)
				return bad(e, "buckets must be cumulative");
			h->last_le = b;
			h->last_count = v;
			if (!strcmp(le, "+Inf")) {
				h->inf = 1;
				h->inf_count = v;
			}
		} else {
			if (!h->inf || strcmp(h->base, base))
				return bad(e, "_sum or _count before +Inf");
			if (!strcmp(sfx, "_count") && v != h->inf_count)
				return bad(e, "_count is not the +Inf bucket");
		}
	}
	snprintf(key, sizeof(key), "%s%s%s%s", name, lab[0] ? "{" : "", lab,
		 lab[0] ? "}" : "");
	for (int i = 0; i < e->n; i++)
		if (!strcmp(e->s[i].key, key))
			return bad(e, "a series twice");
	if (e->n == (int)(sizeof(e->s) / sizeof(*e->s)))
		return bad(e, "too many series for the checker");
	snprintf(e->s[e->n].key, sizeof(e->s[0].key), "%s", key);
	e->s[e->n++].v = v;
	return 0;
}

/* Check text as a whole. @return 0, or -1 with e->why and e->line. */
static int check(struct expo *e, const char *text)
{
	char fam[64] = "", type[16] = "";
	int samples = 1, help = 0;
	struct hstate h = {0};
	memset(e, 0, sizeof(*e));
	char *copy = strdup(text), *save = NULL;
	int ret = 0;
	if (!*text || text[strlen(text) - 1] != '\n')
		ret = bad(e, "the text must end with a newline");
	for (char *line = strtok_r(copy, "\n", &save); line && !ret;
	     line = strtok_r(NULL, "\n", &save)) {
		e->line++;
		if (!strncmp(line, "# HELP ", 7)) {
			size_t n = name_len(line + 7, 1);
			if (!samples)
				ret = bad(e, "a family without samples");
			else if (!n || n >= sizeof(fam) || line[7 + n] != ' ' ||
				 !line[8 + n])
				ret = bad(e, "# HELP name text");
			if (ret)
				break;
			memcpy(fam, line + 7, n);
			fam[n] = '\0';
			for (int i = 0; i < e->nfam; i++)
				if (!strcmp(e->fam[i], fam))
					ret = bad(e, "a family twice");
			if (e->nfam < 64)
				snprintf(e->fam[e->nfam++], 64, "%s", fam);
			help = 1;
			samples = 0;
			type[0] = '\0';
		} else if (!strncmp(line, "# TYPE ", 7)) {
			size_t n = strlen(fam);
			const char *t = line + 8 + n;
			if (!help || strncmp(line + 7, fam, n) || line[7 + n] != ' ')
				ret = bad(e, "# TYPE must follow its # HELP");
			else if (strcmp(t, "counter") && strcmp(t, "gauge") &&
				 strcmp(t, "histogram"))
				ret = bad(e, "an unknown type");
			else if ((strcmp(t, "counter") == 0) !=
				 ends_with(fam, "_total"))
				ret = bad(e, "_total, and only on counters");
			else
				snprintf(type, sizeof(type), "%s", t);
			help = 0;
		} else if (line[0] == '#') {
			ret = bad(e, "a comment that is not HELP or TYPE");
		} else if (!type[0]) {
			ret = bad(e, "a sample before its family's TYPE");
		} else {
			ret = sample_line(e, line, fam, type, &h);
			samples++;
		}
	}
	if (!ret && !samples)
		ret = bad(e, "a family without samples");
	if (!ret && h.base[0] && !h.inf)
		ret = bad(e, "a series without +Inf");
	free(copy);
	if (ret)
		fprintf(stderr, "line %d: %s\n", e->line, e->why);
	return ret ? -1 : 0;
}

/* The value of series key, or -1 when absent. */
static double get(const struct expo *e, const char *key)
{
	for (int i = 0; i < e->n; i++)
		if (!strcmp(e->s[i].key, key))
			return e->s[i].v;
	fprintf(stderr, "no series %s\n", key);
	return -1;
}

static int has(const struct expo *e, const char *key, double want)
{
	double v = get(e, key);
	if (v != want)
		fprintf(stderr, "%s = %.17g, want %.17g\n", key, v, want);
	return v == want;
}

static void test_checker(void)
{
	static const char *const wrong[] = {
		"",
		"dlfs_x 1\n",
		"# HELP dlfs_x x\ndlfs_x 1\n",
		"# HELP dlfs_x x\n# TYPE dlfs_x counter\ndlfs_x 1\n",
		"# HELP dlfs_x_total x\n# TYPE dlfs_x_total gauge\n"
		"dlfs_x_total 1\n",
		"# HELP dlfs_x x\n# TYPE dlfs_x gauge\ndlfs_x one\n",
		"# HELP dlfs_x x\n# TYPE dlfs_x gauge\ndlfs_x{a=\"1} 1\n",
		"# HELP dlfs_x x\n# TYPE dlfs_x gauge\ndlfs_x{a=\"\\q\"} 1\n",
		"# HELP dlfs_x x\n# TYPE dlfs_x gauge\ndlfs_x 1\n"
		"# HELP dlfs_x x\n# TYPE dlfs_x gauge\ndlfs_x 2\n",
		"# HELP dlfs_x x\n# TYPE dlfs_x gauge\ndlfs_y 1\n",
		"# HELP dlfs_x x\n# TYPE dlfs_x gauge\n# HELP dlfs_y y\n"
		"# TYPE dlfs_y gauge\ndlfs_y 1\n",
		"# HELP dlfs_x x\n# TYPE dlfs_x gauge\ndlfs_x 1",
		"# HELP dlfs_h h\n# TYPE dlfs_h histogram\n"
		"dlfs_h_bucket{le=\"1\"} 2\ndlfs_h_bucket{le=\"+Inf\"} 1\n"
		"dlfs_h_sum 1\ndlfs_h_count 1\n",
		"# HELP dlfs_h h\n# TYPE dlfs_h histogram\n"
		"dlfs_h_bucket{le=\"2\"} 1\ndlfs_h_bucket{le=\"1\"} 1\n"
		"dlfs_h_bucket{le=\"+Inf\"} 1\ndlfs_h_sum 1\ndlfs_h_count 1\n",
		"# HELP dlfs_h h\n# TYPE dlfs_h histogram\n"
		"dlfs_h_bucket{le=\"+Inf\"} 3\ndlfs_h_sum 1\ndlfs_h_count 2\n",
		"# HELP dlfs_h h\n# TYPE dlfs_h histogram\n"
		"dlfs_h_bucket{le=\"1\"} 3\ndlfs_h_sum 1\ndlfs_h_count 3\n",
	};
	struct expo *e = malloc(sizeof(*e));
	for (size_t i = 0; i < sizeof(wrong) / sizeof(*wrong); i++)
		if (check(e, wrong[i]) == 0) {
			fprintf(stderr, "accepted: %s\n", wrong[i]);
			t_failures++;
		}
	CHECK(check(e, "# HELP dlfs_h h\n# TYPE dlfs_h histogram\n"
		       "dlfs_h_bucket{t=\"a\",le=\"1\"} 1\n"
		       "dlfs_h_bucket{t=\"a\",le=\"+Inf\"} 2\n"
		       "dlfs_h_sum{t=\"a\"} 1.5\ndlfs_h_count{t=\"a\"} 2\n"
		       "dlfs_h_bucket{t=\"b\",le=\"1\"} 0\n"
		       "dlfs_h_bucket{t=\"b\",le=\"+Inf\"} 0\n"
		       "dlfs_h_sum{t=\"b\"} 0\ndlfs_h_count{t=\"b\"} 0\n"
		       "# HELP dlfs_x_total x\n# TYPE dlfs_x_total counter\n"
		       "dlfs_x_total{a=\"q\\\"\\\\\\n\"} 7\n") == 0);
	CHECK(has(e, "dlfs_h_count{t=\"a\"}", 2));
	CHECK(has(e, "dlfs_x_total{a=\"q\\\"\\\\\\n\"}", 7));
	free(e);
}

/* ---- the text ---- */

static char *render(const struct dlfs_stats *s, const struct dlfs_tier_snap *t)
{
	return stats_render(dlfs_metrics_text, s, t);
}

/* Each series renders its own field of stats_fill's snapshot. */
static int check_values(const struct expo *e)
{
	static const struct {
		const char *key;
		double v;
	} want[] = {
		{"dlfs_ops_total{op=\"lookup\"}", 100},
		{"dlfs_ops_total{op=\"control\"}", 109},
		{"dlfs_served_bytes_total", 1001},
		{"dlfs_files_read_total", 1009},
		{"dlfs_files_checked_total", 1007},
		{"dlfs_chunks_decompressed_total{thread=\"decode\"}", 1010},
		{"dlfs_chunks_decompressed_total{thread=\"background\"}", 1011},
		{"dlfs_chunks_decompressed_total{thread=\"caller\"}", 1012},
		{"dlfs_tier_hits_total{tier=\"ram\"}", 2001},
		{"dlfs_tier_hits_total{tier=\"nvme\"}", 3001},
		{"dlfs_tier_hits_total{tier=\"peer\"}", 8},
		{"dlfs_tier_misses_total{tier=\"ram\"}", 2002},
		{"dlfs_tier_misses_total{tier=\"nvme\"}", 3002},
		{"dlfs_tier_misses_total{tier=\"peer\"}", 8001 - 8},
		{"dlfs_tier_read_bytes_total{tier=\"ram\"}", 1008},
		{"dlfs_tier_read_bytes_total{tier=\"nvme\"}", 3003},
		{"dlfs_tier_read_bytes_total{tier=\"peer\"}", 8002},
		{"dlfs_tier_read_bytes_total{tier=\"pfs\"}",
		 4096 + 5000 + (double)(UINT64_C(1) << 30)},
		/* RAM 0.5 and 1.5 us: one at 1 us, both by 2 us. */
		{"dlfs_tier_read_seconds_bucket{tier=\"ram\",le=\"0.000001\"}", 1},
		{"dlfs_tier_read_seconds_bucket{tier=\"ram\",le=\"0.000002\"}", 2},
		{"dlfs_tier_read_seconds_bucket{tier=\"ram\",le=\"+Inf\"}", 2},
		{"dlfs_tier_read_seconds_sum{tier=\"ram\"}", 0.000002},
		{"dlfs_tier_read_seconds_count{tier=\"ram\"}", 2},
		{"dlfs_tier_read_seconds_bucket{tier=\"nvme\",le=\"0.000064\"}", 0},
		{"dlfs_tier_read_seconds_bucket{tier=\"nvme\",le=\"0.000128\"}", 1},
		/* PFS 2 ms and 10 s: the second only in +Inf. */
		{"dlfs_tier_read_seconds_bucket{tier=\"pfs\",le=\"0.002048\"}", 1},
		{"dlfs_tier_read_seconds_bucket{tier=\"pfs\",le=\"4.194304\"}", 1},
		{"dlfs_tier_read_seconds_bucket{tier=\"pfs\",le=\"+Inf\"}", 2},
		{"dlfs_tier_read_seconds_sum{tier=\"pfs\"}", 10.002},
		/* The peers' buckets start at 16 us: 8100 + b in bucket b. */
		{"dlfs_tier_read_seconds_bucket{tier=\"peer\",le=\"0.000016\"}",
		 8100},
		{"dlfs_tier_read_seconds_bucket{tier=\"peer\",le=\"0.000032\"}",
		 8100 + 8101},
		{"dlfs_tier_read_seconds_count{tier=\"peer\"}",
		 20 * 8100 + 190},
		{"dlfs_tier_read_seconds_sum{tier=\"peer\"}", 0.008},
		{"dlfs_pfs_reads_total", 3},
		{"dlfs_pfs_reads_in_flight", 1010},
		{"dlfs_pfs_read_size_bytes_bucket{le=\"4096\"}", 1},
		{"dlfs_pfs_read_size_bytes_bucket{le=\"8192\"}", 2},
		{"dlfs_pfs_read_size_bytes_bucket{le=\"33554432\"}", 2},
		{"dlfs_pfs_read_size_bytes_bucket{le=\"+Inf\"}", 3},
		{"dlfs_pfs_read_size_bytes_count", 3},
		{"dlfs_ram_capacity_bytes", 2004},
		{"dlfs_ram_used_bytes", 2005},
		{"dlfs_ram_entries", 2006},
		{"dlfs_ram_held_entries", 2013},
		{"dlfs_ram_uncached_loads_total", 2003},
		{"dlfs_ram_evicted_bytes_total", 2011},
		{"dlfs_ram_evicted_unused_bytes_total", 2012},
		{"dlfs_nvme_enabled", 1},
		{"dlfs_nvme_capacity_bytes", 3004},
		{"dlfs_nvme_used_bytes", 3005},
		{"dlfs_nvme_chunks", 3006},
		{"dlfs_nvme_written_chunks_total", 3007},
		{"dlfs_nvme_written_bytes_total", 3008},
		{"dlfs_nvme_write_dropped_total", 3009},
		{"dlfs_nvme_evicted_chunks_total", 3010},
		{"dlfs_nvme_corrupt_chunks_total", 3011},
		{"dlfs_direct_reads_total{tier=\"ram\"}", 3103},
		{"dlfs_direct_reads_total{tier=\"nvme\"}", 3104},
		{"dlfs_direct_read_bytes_total{tier=\"ram\"}", 3100},
		{"dlfs_direct_read_bytes_total{tier=\"nvme\"}", 3102 - 3100},
		{"dlfs_direct_files_checked_total", 3105},
		{"dlfs_direct_reads_followed_total", 3106},
		{"dlfs_prefetch_issued_total", 2007},
		{"dlfs_prefetch_used_total", 2008},
		{"dlfs_prefetch_wasted_total", 2009},
		{"dlfs_prefetch_pending_chunks", 2010},
		{"dlfs_fill_depth", 5008},
		{"dlfs_fill_chunks_total{kind=\"planned\"}", 5001},
		{"dlfs_fill_chunks_total{kind=\"streamed\"}", 5002},
		{"dlfs_fill_chunks_total{kind=\"swept\"}", 5003},
		{"dlfs_fill_bytes_total", 5004},
		{"dlfs_fill_from_ram_chunks_total", 5005},
		{"dlfs_fill_held_chunks", 5006},
		{"dlfs_fill_yields_total", 5007},
		{"dlfs_stage_done", 1},
		{"dlfs_read_unit_file", 1},
		{"dlfs_read_unit_switches_total", 6001},
		{"dlfs_read_unit_file_reads_total", 6002},
		{"dlfs_read_unit_ghost_loaded_bytes_total", 6003},
		{"dlfs_read_unit_ghost_unused_bytes_total", 6004},
		{"dlfs_peer_requests_total", 8001},
		{"dlfs_peer_failures_total{reason=\"timeout\"}", 8003},
		{"dlfs_peer_failures_total{reason=\"lost\"}", 8004},
		{"dlfs_peer_failures_total{reason=\"error\"}", 8005},
		{"dlfs_peer_served_total", 8007},
		{"dlfs_peer_served_bytes_total", 8008},
		{"dlfs_peer_latency_max_seconds", 0.008006},
		{"dlfs_errors_total{kind=\"checksum\"}", 1002},
		{"dlfs_errors_total{kind=\"container\"}", 1003},
		{"dlfs_errors_total{kind=\"io\"}", 1004},
		{"dlfs_errors_total{kind=\"nvme\"}", 3012},
		{"dlfs_errors_total{kind=\"peer\"}", 1005},
		{"dlfs_errors_total{kind=\"index\"}", 1006},
		{"dlfs_index_bytes", 9001},
		{"dlfs_index_pfs_bytes", 9002},
		{"dlfs_index_load_seconds", 1.25},
		{"dlfs_epoch", 7001},
		{"dlfs_info{dataset_id=\"0123abcd\","
		 "dataset=\"/pfs/a \\\"b\\\"\\\\c\\nd.dlfs\",mountpoint=\"/mnt/x\","
		 "front_end=\"fuse\",rank=\"3\",ranks=\"8\"}",
		 1},
	};
	int ok = 1;
	for (size_t i = 0; i < sizeof(want) / sizeof(*want); i++)
		ok &= has(e, want[i].key, want[i].v);
	return ok;
}

static void test_values(void)
{
	struct dlfs_stats s;
	struct dlfs_tier_snap t;
	struct dlfs_fill_stats fs;
	struct dlfs_grain_stats gs;
	struct expo *e = malloc(sizeof(*e));
	stats_fill(&s, &t, &fs, &gs);
	char *b = render(&s, &t);
	CHECK(check(e, b) == 0);
	CHECK(check_values(e));
	/* Every series is labelled with the mount, so that two mounts on a
	 * node never give the same series: the mountpoint, or the socket of
	 * dlfs --serve. */
	CHECK(e->n_lines > 100 && e->n_mount == e->n_lines);
	CHECK(!strcmp(e->mount, "/mnt/x"));
	double up = get(e, "dlfs_uptime_seconds");
	CHECK(up >= 0 && up < 60);
	free(b);
	/* More direct bytes than from RAM: the rest came from NVMe. */
	t.direct.bytes = 5000;
	t.direct.ram_bytes = 1200;
	b = render(&s, &t);
	CHECK(check(e, b) == 0);
	CHECK(has(e, "dlfs_direct_read_bytes_total{tier=\"nvme\"}", 3800));
	free(b);
	t.mountpoint = "";
	t.mount = "/run/a \"b\".sock";
	b = render(&s, &t);
	CHECK(check(e, b) == 0);
	CHECK(e->n_mount == e->n_lines);
	CHECK(!strcmp(e->mount, "/run/a \\\"b\\\".sock"));
	free(b);
	/* A path is bytes, the format UTF-8: each byte that is not (a stray
	 * 0xff, a sequence cut short, an overlong '/') is U+FFFD, and the
	 * UTF-8 around it stays as it is. */
	t.mount = "/run/\xff\xc3";
	t.dataset_path = "/pfs/\xc3\xa9t\xc3\xa9\xe2\x82/\xc0\xaf.dlfs";
	b = render(&s, &t);
	CHECK(check(e, b) == 0);
	CHECK(!strcmp(e->mount, "/run/\xef\xbf\xbd\xef\xbf\xbd"));
	CHECK(strstr(b, "dataset=\"/pfs/\xc3\xa9t\xc3\xa9\xef\xbf\xbd"
			"\xef\xbf\xbd/\xef\xbf\xbd\xef\xbf\xbd.dlfs\""));
	free(b);
	free(e);
}

/* Everything zero, no fill, no grain, no epoch, no names, no peers. */
static void test_zero(void)
{
	struct dlfs_stats s;
	struct dlfs_tier_snap t;
	struct expo *e = malloc(sizeof(*e));
	dlfs_stats_init(&s);
	memset(&t, 0, sizeof(t));
	t.epoch = UINT64_MAX;
	char *b = render(&s, &t);
	CHECK(check(e, b) == 0);
	CHECK(!strstr(b, "dlfs_epoch"));
	CHECK(!strstr(b, "dlfs_read_unit"));
	CHECK(has(e, "dlfs_info{dataset_id=\"\",dataset=\"\",mountpoint=\"\","
		     "front_end=\"\",rank=\"0\",ranks=\"1\"}",
		  1));
	CHECK(has(e, "dlfs_tier_read_seconds_count{tier=\"pfs\"}", 0));
	CHECK(has(e, "dlfs_pfs_read_size_bytes_bucket{le=\"+Inf\"}", 0));
	int nonzero = 0;
	for (int i = 0; i < e->n; i++)
		if (e->s[i].v != 0 && strncmp(e->s[i].key, "dlfs_info", 9) &&
		    strcmp(e->s[i].key, "dlfs_uptime_seconds")) {
			fprintf(stderr, "%s = %g, want 0\n", e->s[i].key,
				e->s[i].v);
			nonzero++;
		}
	CHECK_EQ(nonzero, 0);
	free(b);
	/* Epoch 0 is there. */
	t.epoch = 0;
	b = render(&s, &t);
	CHECK(check(e, b) == 0);
	CHECK(has(e, "dlfs_epoch", 0));
	free(b);
	free(e);
}

/* Too small a buffer: the length needed and a NUL-terminated prefix. */
static void test_short(void)
{
	struct dlfs_stats s;
	struct dlfs_tier_snap t;
	struct dlfs_fill_stats fs;
	struct dlfs_grain_stats gs;
	stats_fill(&s, &t, &fs, &gs);
	CHECK_EQ(stats_short_wrong(dlfs_metrics_text, &s, &t,
				   "# HELP dlfs_ops_total"),
		 0);
}

int main(void)
{
	test_checker();
	test_values();
	test_zero();
	test_short();
	return t_done("test_metrics");
}
