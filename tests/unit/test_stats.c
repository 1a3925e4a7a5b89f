/*
 * The counters of a mount and their JSON (stats.c, stats_json.c), as
 * /.dlfs/stats serves it: PFS reads land in the bucket of their size
 * (4 KiB << b, the last all larger) and add up, also from many threads
 * at once; the JSON is valid (checked by a small parser here: objects,
 * arrays, strings, numbers, literals, no key twice in an object), has
 * every block, the peer's "lost" and the direct reads' among them
 * (readers in other processes, tiers.direct), renders each counter from
 * its own field (every field set to a different value), renders zeros,
 * no fill, no read-unit choice and no epoch as documented, and is cut
 * short safely: the length it needs is returned, the text is always
 * NUL-terminated. Read latencies land in the bucket of their time (1 us
 * << b, the last all longer), and what timing a read costs is measured
 * and printed (two clock reads and two atomic adds).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "fill.h"
#include "grain.h"
#include "stats_json.h"
#include "statsfill.h"
#include "tutil.h"

/* ---- a JSON checker ---- */

/* Each scalar of a document: its path ("a.b[2].c") and its text (a
 * string's bytes, a number's digits, or null, true, false). */
struct jval {
	char path[96];
	char text[64];
};

struct json {
	const char *s;
	size_t at;
	struct jval v[512];
	size_t n;
	const char *why; /* the first error, or NULL */
};

static int fail(struct json *j, const char *why)
{
	if (!j->why)
		j->why = why;
	return -1;
}

static void skip_ws(struct json *j)
{
	while (strchr(" \t\r\n", j->s[j->at]) && j->s[j->at])
		j->at++;
}

static int add_scalar(struct json *j, const char *path, const char *p,
		      size_t len)
{
	if (j->n == sizeof(j->v) / sizeof(*j->v) ||
	    len >= sizeof(j->v[0].text))
		return fail(j, "too many or too long values");
	snprintf(j->v[j->n].path, sizeof(j->v[0].path), "%s", path);
	memcpy(j->v[j->n].text, p, len);
	j->v[j->n++].text[len] = '\0';
	return 0;
}

/* A string, into out (cap bytes); escapes are kept as they are. */
static int parse_string(struct json *j, char *out, size_t cap)
{
	size_t n = 0;
	if (j->s[j->at++] != '"')
		return fail(j, "a string must start with '\"'");
	for (;;) {
		char ch = j->s[j->at++];
		if (ch == '"')
			break;
		if (!ch || (unsigned char)ch < 0x20)
			return fail(j, "unterminated string or a control byte");
		if (ch == '\\') {
			char e = j->s[j->at++];
			if (!e || !strchr("\"\\/bfnrtu", e))
				return fail(j, "bad escape");
		}
		if (n + 1 < cap)
			out[n++] = ch;
	}
	out[n] = '\0';
	return 0;
}

/* -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? */
static int parse_number(struct json *j, const char *path)
{
	size_t at = j->at;
	const char *s = j->s;
	if (s[at] == '-')
		at++;
	if (s[at] == '0')
		at++;
	else if (s[at] >= '1' && s[at] <= '9')
		while (s[at] >= '0' && s[at] <= '9')
			at++;
	else
		return fail(j, "bad number");
	if (s[at] == '.') {
		if (!(s[++at] >= '0' && s[at] <= '9'))
			return fail(j, "no digit after '.'");
		while (s[at] >= '0' && s[at] <= '9')
			at++;
	}
	if (s[at] == 'e' || s[at] == 'E') {
		at += s[at + 1] == '+' || s[at + 1] == '-' ? 2 : 1;
		if (!(s[at] >= '0' && s[at] <= '9'))
			return fail(j, "bad exponent");
		while (s[at] >= '0' && s[at] <= '9')
			at++;
	}
	int ret = add_scalar(j, path, s + j->at, at - j->at);
	j->at = at;
	return ret;
}

static int parse_value(struct json *j, const char *path);

static int parse_object(struct json *j, const char *path)
{
	char keys[64][64];
	size_t n = 0;
	j->at++;
	skip_ws(j);
	if (j->s[j->at] == '}') {
		j->at++;
		return 0;
	}
	for (;;) {
		char key[64], sub[96];
		skip_ws(j);
		if (parse_string(j, key, sizeof(key)))
			return -1;
		for (size_t i = 0; i < n; i++)
			if (!strcmp(keys[i], key))
				return fail(j, "a key twice in an object");
		if (n < 64)
			snprintf(keys[n++], sizeof(keys[0]), "%s", key);
		skip_ws(j);
		if (j->s[j->at++] != ':')
			return fail(j, "no ':' after a key");
		snprintf(sub, sizeof(sub), "%s%s%s", path, *path ? "." : "", key);
		if (parse_value(j, sub))
			return -1;
		skip_ws(j);
		char ch = j->s[j->at++];
		if (ch == '}')
			return 0;
		if (ch != ',')
			return fail(j, "no ',' or '}' after a member");
	}
}

static int parse_array(struct json *j, const char *path)
{
	j->at++;
	skip_ws(j);
	if (j->s[j->at] == ']') {
		j->at++;
		return 0;
	}
	for (unsigned i = 0;; i++) {
		char sub[96];
		snprintf(sub, sizeof(sub), "%s[%u]", path, i);
		if (parse_value(j, sub))
			return -1;
		skip_ws(j);
		char ch = j->s[j->at++];
		if (ch == ']')
			return 0;
		if (ch != ',')
			return fail(j, "no ',' or ']' after an element");
	}
}

static int parse_value(struct json *j, const char *path)
{
	static const char *const lits[] = {"null", "true", "false"};
	skip_ws(j);
	char ch = j->s[j->at];
	if (ch == '{')
		return parse_object(j, path);
	if (ch == '[')
		return parse_array(j, path);
	if (ch == '"') {
		char str[64];
		if (parse_string(j, str, sizeof(str)))
			return -1;
		return add_scalar(j, path, str, strlen(str));
	}
	for (int i = 0; i < 3; i++) {
		size_t len = strlen(lits[i]);
		if (!strncmp(j->s + j->at, lits[i], len)) {
			j->at += len;
			return add_scalar(j, path, lits[i], len);
		}
	}
	return parse_number(j, path);
}

/* Parse s, one value and nothing after it. @return 0, or -1 with j->why
 * set. */
static int parse(struct json *j, const char *s)
{
	memset(j, 0, sizeof(*j));
	j->s = s;
	if (parse_value(j, "") == 0) {
		skip_ws(j);
		if (j->s[j->at])
			fail(j, "text after the value");
	}
	return j->why ? -1 : 0;
}

/* Parse s, saying what is wrong with it. @return 1 when it is valid. */
static int valid(struct json *j, const char *s)
{
	if (parse(j, s) == 0)
		return 1;
	fprintf(stderr, "bad JSON at byte %zu: %s\n%s\n", j->at, j->why, s);
	return 0;
}

/* The text of the scalar at path, or NULL. */
static const char *get(const struct json *j, const char *path)
{
	for (size_t i = 0; i < j->n; i++)
		if (!strcmp(j->v[i].path, path))
			return j->v[i].text;
	return NULL;
}

/* path's text is want. */
static int is(const struct json *j, const char *path, const char *want)
{
	const char *got = get(j, path);
	if (got && !strcmp(got, want))
		return 1;
	fprintf(stderr, "%s: %s, want %s\n", path, got ? got : "(absent)",
		want);
	return 0;
}

static int is_u(const struct json *j, const char *path, uint64_t want)
{
	char w[32];
	snprintf(w, sizeof(w), "%llu", (unsigned long long)want);
	return is(j, path, w);
}

/* Any document a checker refuses: the checker checks. */
static void test_checker(void)
{
	static const char *const bad[] = {
		"", "{", "{\"a\" 1}", "{\"a\": 1,}", "{\"a\": 1 \"b\": 2}",
		"[1, 2", "{\"a\": 01}", "{\"a\": 1.}", "{\"a\": nul}",
		"{\"a\": \"x}", "{\"a\": 1, \"a\": 2}", "{} {}", "{\"a\": -}",
	};
	struct json *j = malloc(sizeof(*j));
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		if (parse(j, bad[i]) == 0) {
			fprintf(stderr, "accepted: %s\n", bad[i]);
			t_failures++;
		}
	}
	CHECK(valid(j, "{\"a\": {\"b\": [1, -2.5e3, \"x\", null]}, "
		       "\"c\": true}"));
	CHECK(is(j, "a.b[1]", "-2.5e3") && is(j, "a.b[2]", "x") &&
	      is(j, "a.b[3]", "null") && is(j, "c", "true"));
	free(j);
}

/* ---- the counters ---- */

/* Reads of len bytes land in bucket b: at most 4 KiB << b, the last
 * bucket all larger than 32 MiB. */
static void test_buckets(void)
{
	static const struct {
		uint64_t len;
		unsigned b;
	} cases[] = {
		{0, 0}, {1, 0}, {4096, 0}, {4097, 1}, {8192, 1}, {8193, 2},
		{65536, 4}, {UINT64_C(4) << 20, 10}, {UINT64_C(32) << 20, 13},
		{(UINT64_C(32) << 20) + 1, 14}, {UINT64_C(1) << 40, 14},
		{UINT64_MAX / 2, 14},
	};
	struct dlfs_stats s;
	dlfs_stats_init(&s);
	uint64_t bytes = 0;
	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		uint64_t before = atomic_load(&s.pfs_hist[cases[i].b]);
		dlfs_stats_pfs_read(&s, cases[i].len);
		bytes += cases[i].len;
		if (atomic_load(&s.pfs_hist[cases[i].b]) != before + 1) {
			fprintf(stderr, "a read of %llu bytes not in bucket %u\n",
				(unsigned long long)cases[i].len, cases[i].b);
			t_failures++;
		}
	}
	uint64_t sum = 0;
	for (unsigned b = 0; b < DLFS_HIST_BUCKETS; b++)
		sum += atomic_load(&s.pfs_hist[b]);
	CHECK_EQ(sum, sizeof(cases) / sizeof(*cases));
	CHECK_EQ(atomic_load(&s.pfs_reads), sizeof(cases) / sizeof(*cases));
	CHECK(atomic_load(&s.pfs_bytes) == bytes);
}

/* A read of ns nanoseconds lands in bucket b: at most 1 us << b, the last
 * all longer than 4.2 s; the sum adds up. */
static void test_time_buckets(void)
{
	static const struct {
		uint64_t ns;
		unsigned b;
	} cases[] = {
		{0, 0}, {999, 0}, {1000, 0}, {1001, 1}, {2000, 1}, {2001, 2},
		{1000000, 10}, {UINT64_C(4194304000), 22},
		{UINT64_C(4194304001), 23}, {UINT64_C(1) << 50, 23},
	};
	struct dlfs_stats s;
	dlfs_stats_init(&s);
	uint64_t sum = 0;
	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		const struct dlfs_time_hist *h = &s.lat[DLFS_TIER_NVME];
		uint64_t before = atomic_load(&h->b[cases[i].b]);
		dlfs_stats_time_ns(&s, DLFS_TIER_NVME, cases[i].ns);
		sum += cases[i].ns;
		if (atomic_load(&h->b[cases[i].b]) != before + 1) {
			fprintf(stderr, "a read of %llu ns not in bucket %u\n",
				(unsigned long long)cases[i].ns, cases[i].b);
			t_failures++;
		}
	}
	CHECK(atomic_load(&s.lat[DLFS_TIER_NVME].sum_ns) == sum);
	for (unsigned b = 0; b < DLFS_TIME_BUCKETS; b++) {
		CHECK_EQ(atomic_load(&s.lat[DLFS_TIER_RAM].b[b]), 0);
		CHECK_EQ(atomic_load(&s.lat[DLFS_TIER_PFS].b[b]), 0);
	}
	/* A time that went back (it cannot, but) counts as 0. */
	dlfs_stats_time(&s, DLFS_TIER_RAM, UINT64_MAX);
	CHECK_EQ(atomic_load(&s.lat[DLFS_TIER_RAM].b[0]), 1);
}

/* What timing a read costs the read core: a clock read at its start,
 * another and the bucket's adds at its end. Printed; bounded loosely
 * (sanitizers and busy cores make it slower, never this slow). */
static void test_clock_cost(void)
{
	enum { N = 1000000 };
	struct dlfs_stats s;
	dlfs_stats_init(&s);
	uint64_t t0 = dlfs_stats_clock();
	for (unsigned i = 0; i < N; i++)
		dlfs_stats_time(&s, DLFS_TIER_RAM, dlfs_stats_clock());
	uint64_t t1 = dlfs_stats_clock();
	double per = (double)(t1 - t0) / N;
	uint64_t n = 0;
	for (unsigned b = 0; b < DLFS_TIME_BUCKETS; b++)
		n += atomic_load(&s.lat[DLFS_TIER_RAM].b[b]);
	CHECK_EQ(n, N);
	printf("timing one read costs %.1f ns\n", per);
	CHECK(per < 5000);
}

enum { THREADS = 4, PER_THREAD = 50000 };

static void *count(void *arg)
{
	struct dlfs_stats *s = arg;
	for (unsigned i = 0; i < PER_THREAD; i++) {
		dlfs_stats_pfs_read(s, UINT64_C(4096) << (i % 4));
		dlfs_stats_add(&s->ops[DLFS_OP_READ], 1);
		dlfs_stats_add(&s->bytes_served, i % 7);
	}
	return NULL;
}

/* Each update is one atomic add: threads lose none. */
static void test_threads(void)
{
	struct dlfs_stats s;
	pthread_t t[THREADS];
	dlfs_stats_init(&s);
	for (int i = 0; i < THREADS; i++)
		CHECK_EQ(pthread_create(&t[i], NULL, count, &s), 0);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	uint64_t served = 0;
	for (unsigned i = 0; i < PER_THREAD; i++)
		served += i % 7;
	const uint64_t n = (uint64_t)THREADS * PER_THREAD;
	CHECK_EQ(atomic_load(&s.pfs_reads), n);
	CHECK_EQ(atomic_load(&s.pfs_bytes), n / 4 * 4096 * (1 + 2 + 4 + 8));
	for (unsigned b = 0; b < 4; b++)
		CHECK_EQ(atomic_load(&s.pfs_hist[b]), n / 4);
	CHECK_EQ(atomic_load(&s.ops[DLFS_OP_READ]), n);
	CHECK_EQ(atomic_load(&s.bytes_served), THREADS * served);
}

/* ---- the JSON ---- */

/* Render into a buffer of the size it asks for. Caller frees. */
static char *render(const struct dlfs_stats *s, const struct dlfs_tier_snap *t)
{
	return stats_render(dlfs_stats_json, s, t);
}

static const char *const op_keys[] = {
	"lookup", "getattr", "readdir", "readdirplus", "read",
	"readlink", "statfs", "getxattr", "listxattr", "control",
};

/* Every op, and every number but the uptime, is 0. @return how many
 * are not. */
static int count_nonzero(const struct json *j)
{
	int bad = 0;
	for (int i = 0; i < DLFS_OP_COUNT; i++) {
		char p[64];
		snprintf(p, sizeof(p), "ops.%s", op_keys[i]);
		bad += !is(j, p, "0");
	}
	for (size_t i = 0; i < j->n; i++) {
		const struct jval *v = &j->v[i];
		if (strcmp(v->path, "uptime_s") && v->text[0] >= '0' &&
		    v->text[0] <= '9' && strcmp(v->text, "0") &&
		    strcmp(v->text, "0.000")) {
			fprintf(stderr, "%s: %s, want 0\n", v->path, v->text);
			bad++;
		}
	}
	return bad;
}

/* A key of every block is there, the peer's lost among them. @return
 * how many are missing. */
static int count_missing(const struct json *j)
{
	static const char *const keys[] = {
		"bytes_served", "tiers.ram.hits", "tiers.ram.capacity_bytes",
		"tiers.nvme.enabled", "tiers.nvme.errors",
		"tiers.direct.enabled", "tiers.direct.seen", "tiers.pfs.reads",
		"tiers.pfs.read_size_hist.4K", "tiers.pfs.read_size_hist.32M",
		"tiers.pfs.read_size_hist.>32M", "prefetch.enabled",
		"prefetch.wasted", "fill.depth", "fill.swept_all",
		"peer.enabled", "peer.timeouts", "peer.lost", "peer.errors",
		"peer.latency_us_avg", "peer.latency_us_hist[0]",
		"peer.latency_us_hist[19]", "stage.done", "index.sealed",
		"index.seconds", "decompressed.caller", "files_checked",
		"errors.checksum",
		"errors.index",
	};
	int bad = 0;
	for (size_t i = 0; i < sizeof(keys) / sizeof(*keys); i++)
		if (!get(j, keys[i])) {
			fprintf(stderr, "no %s\n", keys[i]);
			bad++;
		}
	return bad + (get(j, "peer.latency_us_hist[20]") != NULL);
}

/* Everything zero, no fill, no read-unit choice, no epoch, no names. */
static void test_zero(void)
{
	struct dlfs_stats s;
	struct dlfs_tier_snap t;
	struct json *j = malloc(sizeof(*j));
	dlfs_stats_init(&s);
	memset(&t, 0, sizeof(t));
	t.epoch = UINT64_MAX;
	char *b = render(&s, &t);
	CHECK(valid(j, b));
	double up = atof(get(j, "uptime_s") ? get(j, "uptime_s") : "-1");
	CHECK(up >= 0 && up < 60);
	CHECK_EQ(count_nonzero(j), 0);
	CHECK_EQ(count_missing(j), 0);
	CHECK(!get(j, "read_unit.option")); /* no grain: no block */
	CHECK(is(j, "epoch", "null"));
	CHECK(is(j, "tiers.nvme.policy", "none"));
	CHECK(is(j, "stage.mode", "none"));
	CHECK(is(j, "index.source", "pfs") && is(j, "index.where", "pfs"));
	free(b);

	/* Epoch 0 is a number, not null. */
	t.epoch = 0;
	b = render(&s, &t);
	CHECK(valid(j, b));
	CHECK(is(j, "epoch", "0"));
	free(b);
	free(j);
}

static int check_tiers(const struct json *j)
{
	static const struct {
		const char *path;
		uint64_t v;
	} want[] = {
		{"tiers.ram.hits", 2001}, {"tiers.ram.misses", 2002},
		{"tiers.ram.bytes", 2005}, {"tiers.ram.capacity_bytes", 2004},
		{"tiers.ram.used_bytes", 2005}, {"tiers.ram.chunks", 2006},
		{"tiers.ram.uncached_loads", 2003},
		{"tiers.ram.evicted_bytes", 2011},
		{"tiers.ram.evicted_unused_bytes", 2012},
		{"tiers.ram.held", 2013}, {"tiers.nvme.enabled", 1},
		{"tiers.nvme.hits", 3001}, {"tiers.nvme.misses", 3002},
		{"tiers.nvme.bytes", 3003}, {"tiers.nvme.capacity_bytes", 3004},
		{"tiers.nvme.used_bytes", 3005}, {"tiers.nvme.chunks", 3006},
		{"tiers.nvme.written_chunks", 3007},
		{"tiers.nvme.written_bytes", 3008},
		{"tiers.nvme.write_dropped", 3009}, {"tiers.nvme.evicted", 3010},
		{"tiers.nvme.corrupt", 3011}, {"tiers.nvme.errors", 3012},
		{"tiers.direct.enabled", 1}, {"tiers.direct.reads", 3101},
		{"tiers.direct.bytes", 3102}, {"tiers.direct.ram", 3103},
		{"tiers.direct.nvme", 3104}, {"tiers.direct.checked", 3105},
		{"tiers.direct.seen", 3106}, {"tiers.direct.ram_bytes", 3100},
		{"tiers.ram.served_bytes", 1008},
		{"tiers.ram.latency_us_avg", 1}, {"tiers.nvme.latency_us_avg", 100},
		{"tiers.pfs.latency_us_avg", 5001000},
		{"tiers.pfs.in_flight", 1010},
		{"tiers.pfs.reads", 3},
		{"tiers.pfs.bytes", 4096 + 5000 + (UINT64_C(1) << 30)},
		{"tiers.pfs.read_size_hist.4K", 1},
		{"tiers.pfs.read_size_hist.8K", 1},
		{"tiers.pfs.read_size_hist.16K", 0},
		{"tiers.pfs.read_size_hist.1M", 0},
		{"tiers.pfs.read_size_hist.>32M", 1},
	};
	int ok = 1;
	for (size_t i = 0; i < sizeof(want) / sizeof(*want); i++)
		ok &= is_u(j, want[i].path, want[i].v);
	return ok & is(j, "tiers.nvme.policy", "lru");
}

static int check_rest(const struct json *j)
{
	static const struct {
		const char *path;
		uint64_t v;
	} want[] = {
		{"bytes_served", 1001}, {"prefetch.enabled", 1},
		{"prefetch.window_max_bytes", 4001}, {"prefetch.issued", 2007},
		{"prefetch.used", 2008}, {"prefetch.wasted", 2009},
		{"prefetch.pending", 2010}, {"prefetch.planned", 5001},
		{"prefetch.streamed", 5002}, {"fill.depth", 5008},
		{"fill.planned", 5001}, {"fill.streamed", 5002},
		{"fill.swept", 5003}, {"fill.from_ram", 5005},
		{"fill.bytes", 5004}, {"fill.held", 5006}, {"fill.yields", 5007},
		{"fill.sweeping", 1}, {"fill.swept_all", 1},
		{"read_unit.switches", 6001}, {"read_unit.file_reads", 6002},
		{"read_unit.ghost_loaded", 6003},
		{"read_unit.ghost_unused", 6004}, {"peer.enabled", 1},
		{"peer.rank", 3}, {"peer.ranks", 8}, {"peer.requests", 8001},
		{"peer.hits", 8}, {"peer.bytes", 8002}, {"peer.timeouts", 8003},
		{"peer.lost", 8004}, {"peer.errors", 8005},
		{"peer.latency_us_avg", 1000}, {"peer.latency_us_max", 8006},
		{"peer.served", 8007}, {"peer.served_bytes", 8008},
		{"peer.latency_us_hist[0]", 8100},
		{"peer.latency_us_hist[19]", 8119}, {"stage.chunks", 5003},
		{"stage.done", 1}, {"index.sealed", 1}, {"index.bytes", 9001},
		{"index.pfs_bytes", 9002}, {"epoch", 7001},
		{"files_checked", 1007}, {"files_read", 1009},
		{"decompressed.decode_threads", 1010},
		{"decompressed.background", 1011},
		{"decompressed.caller", 1012},
		{"errors.checksum", 1002},
		{"errors.container", 1003}, {"errors.io", 1004},
		{"errors.nvme", 3012}, {"errors.peer", 1005},
		{"errors.index", 1006},
	};
	int ok = 1;
	for (size_t i = 0; i < sizeof(want) / sizeof(*want); i++)
		ok &= is_u(j, want[i].path, want[i].v);
	for (int i = 0; i < DLFS_OP_COUNT; i++) {
		char p[64];
		snprintf(p, sizeof(p), "ops.%s", op_keys[i]);
		ok &= is_u(j, p, 100 + (uint64_t)i);
	}
	return ok & is(j, "read_unit.option", "auto") &
	       is(j, "read_unit.now", "file") & is(j, "stage.mode", "home") &
	       is(j, "index.source", "copied") &
	       is(j, "index.where", "cache_dir") &
	       is(j, "index.seconds", "1.250");
}

static void test_values(void)
{
	struct dlfs_stats s;
	struct dlfs_tier_snap t;
	struct dlfs_fill_stats fs;
	struct dlfs_grain_stats gs;
	struct json *j = malloc(sizeof(*j));
	stats_fill(&s, &t, &fs, &gs);
	char *b = render(&s, &t);
	CHECK(valid(j, b));
	CHECK(check_tiers(j));
	CHECK(check_rest(j));
	free(b);
	/* Chunk mode reads "chunk". */
	gs.file_mode = 0;
	b = render(&s, &t);
	CHECK(valid(j, b));
	CHECK(is(j, "read_unit.now", "chunk"));
	free(b);
	free(j);
}

/* Too small a buffer: the length it needs, and a NUL-terminated prefix
 * of the text. */
static void test_short(void)
{
	struct dlfs_stats s;
	struct dlfs_tier_snap t;
	struct dlfs_fill_stats fs;
	struct dlfs_grain_stats gs;
	stats_fill(&s, &t, &fs, &gs);
	CHECK_EQ(stats_short_wrong(dlfs_stats_json, &s, &t, "\"ops\""), 0);
}

int main(void)
{
	test_checker();
	test_buckets();
	test_time_buckets();
	test_clock_cost();
	test_threads();
	test_zero();
	test_values();
	test_short();
	return t_done("test_stats");
}
