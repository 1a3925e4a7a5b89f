/* The counters as Prometheus text: see metrics.h. */
#include "metrics.h"

#include <stdio.h>
#include <string.h>

#include "counters.h"
#include "util.h"

#define U(x) ((unsigned long long)(x))

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

/* dlfs_info's labels: who the mount is. */
static void identity(const struct dlfs_tier_snap *t, char *lb, size_t len)
{
	char id[128], ds[4096], mnt[4096], fe[64];
	label_value(t->dataset_id, id, sizeof(id));
	label_value(t->dataset_path, ds, sizeof(ds));
	label_value(t->mountpoint, mnt, sizeof(mnt));
	label_value(t->front_end, fe, sizeof(fe));
	snprintf(lb, len,
		 "dataset_id=\"%s\",dataset=\"%s\",mountpoint=\"%s\","
		 "front_end=\"%s\",rank=\"%u\",ranks=\"%u\"",
		 id, ds, mnt, fe, t->rank, t->ranks ? t->ranks : 1);
}

static const le_fn bounds_le[] = {
	[DLFS_BOUNDS_TIME] = le_time,
	[DLFS_BOUNDS_PEER] = le_peer,
	[DLFS_BOUNDS_SIZE] = le_size,
};

/* Row c's sample, whose value is v. */
static void row(struct dlfs_out *o, const struct dlfs_counter *c,
		const struct dlfs_tier_snap *t, const struct dlfs_val *v)
{
	const char *name = dlfs_families[c->fam].name;
	const char *labels = c->labels ? c->labels : "";
	char lb[128 + 4096 + 4096 + 64 + 128]; /* identity's labels */
	if (c->fam == DLFS_F_INFO) {
		identity(t, lb, sizeof(lb));
		labels = lb;
	}
	switch (v->kind) {
	case DLFS_VAL_U64:
		if (c->us_as_s)
			sample_f(o, name, "%.6f", (double)v->u / 1e6);
		else
			sample(o, name, labels, v->u);
		break;
	case DLFS_VAL_INT: sample(o, name, labels, (uint64_t)v->i); break;
	case DLFS_VAL_DBL: sample_f(o, name, c->fmt, v->d); break;
	case DLFS_VAL_HIST:
		histogram(o, name, c->labels ? c->labels : "", v->n, v->nb,
			  bounds_le[c->bounds],
			  c->fmt, v->sum);
		break;
	default: break;
	}
}

/* Family f's header, then its rows' samples; nothing when none has one. */
static void family_rows(struct dlfs_out *o, enum dlfs_family f,
			const struct dlfs_stats *s,
			const struct dlfs_tier_snap *t)
{
	const struct dlfs_family_def *d = &dlfs_families[f];
	struct dlfs_val v;
	int n = 0;
	for (size_t i = 0; i < dlfs_n_counters; i++) {
		const struct dlfs_counter *c = &dlfs_counters[i];
		if (c->fam != f)
			continue;
		dlfs_counter_value(c, s, t, &v);
		if (v.kind == DLFS_VAL_NONE || v.kind == DLFS_VAL_NULL ||
		    v.kind == DLFS_VAL_STR)
			continue;
		if (!n++)
			family(o, d->name, d->type, d->help);
		row(o, c, t, &v);
	}
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
	for (int f = DLFS_F_NONE + 1; f < DLFS_F_COUNT; f++)
		family_rows(o, (enum dlfs_family)f, s, t);
	return o->at;
}
