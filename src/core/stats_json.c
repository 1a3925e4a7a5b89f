/* The counters as JSON: see stats_json.h. */
#include "stats_json.h"

#include <string.h>

#include "counters.h"

#define U(x) ((unsigned long long)(x))

/* Objects nest at most this deep below the root. */
#define MAX_DEPTH 4

/*
 * The writer of nested objects from the rows' dotted paths: the objects
 * open now (their path is open[0, len[depth])), whether each puts its
 * members one a line, and how many each has so far.
 */
struct jw {
	struct dlfs_out *o;
	int depth;
	char open[128];
	size_t len[MAX_DEPTH + 1];
	int ml[MAX_DEPTH + 1], count[MAX_DEPTH + 1];
};

/* Start a member of the innermost open object: separator, indent, key. */
static void member(struct jw *w, const char *key, size_t klen)
{
	int d = w->depth, ml = w->ml[d];
	if (w->count[d]++)
		dlfs_out_put(w->o, ml ? ",\n" : ", ");
	else if (ml)
		dlfs_out_put(w->o, "\n");
	if (ml)
		dlfs_out_put(w->o, "%*s", 2 * (d + 1), "");
	dlfs_out_put(w->o, "\"%.*s\": ", (int)klen, key);
}

/* Open the object path[0, end) as a member named path[from, end). */
static void open_obj(struct jw *w, const char *path, size_t from, size_t end)
{
	member(w, path + from, end - from);
	dlfs_out_put(w->o, "{");
	w->depth++;
	memcpy(w->open, path, end);
	w->len[w->depth] = end;
	w->ml[w->depth] = dlfs_counters_json_multiline(path, end);
	w->count[w->depth] = 0;
}

static void close_obj(struct jw *w)
{
	int d = w->depth;
	if (w->ml[d])
		dlfs_out_put(w->o, "\n%*s}", 2 * d, "");
	else
		dlfs_out_put(w->o, "}");
	w->depth--;
}

/* Is the open object path, or the root, an object on path[0, end)? */
static int is_open_prefix(const struct jw *w, const char *path, size_t end)
{
	size_t l = w->len[w->depth];
	return l == 0 ||
	       (l <= end && !memcmp(w->open, path, l) &&
		(l == end || path[l] == '.'));
}

/* Close and open objects so that the innermost open one holds path's
 * last part. @return where the key starts. */
static size_t enter(struct jw *w, const char *path)
{
	const char *dot = strrchr(path, '.');
	size_t end = dot ? (size_t)(dot - path) : 0;
	while (w->depth && !is_open_prefix(w, path, end))
		close_obj(w);
	while (w->len[w->depth] < end && w->depth < MAX_DEPTH) {
		size_t from = w->len[w->depth] ? w->len[w->depth] + 1 : 0;
		const char *next = memchr(path + from, '.', end - from);
		open_obj(w, path, from, next ? (size_t)(next - path) : end);
	}
	return dot ? end + 1 : 0;
}

/* A PFS read-size bucket's key: "4K" to "32M", the last ">32M". */
static void size_key(struct dlfs_out *o, unsigned b, unsigned nb)
{
	int last = b == nb - 1;
	uint64_t kib = UINT64_C(4) << (last ? b - 1 : b);
	dlfs_out_put(o, "%s\"%s%llu%s\": ", b ? ", " : "", last ? ">" : "",
		     U(kib >= 1024 ? kib / 1024 : kib), kib >= 1024 ? "M" : "K");
}

static void hist(struct dlfs_out *o, const struct dlfs_counter *c,
		 const struct dlfs_val *v)
{
	int obj = c->bounds == DLFS_BOUNDS_SIZE;
	dlfs_out_put(o, obj ? "{" : "[");
	for (unsigned b = 0; b < v->nb; b++) {
		if (obj)
			size_key(o, b, v->nb);
		else if (b)
			dlfs_out_put(o, ", ");
		dlfs_out_put(o, "%llu", U(v->n[b]));
	}
	dlfs_out_put(o, obj ? "}" : "]");
}

static void value(struct dlfs_out *o, const struct dlfs_counter *c,
		  const struct dlfs_val *v)
{
	switch (v->kind) {
	case DLFS_VAL_NONE: break;
	case DLFS_VAL_NULL: dlfs_out_put(o, "null"); break;
	case DLFS_VAL_U64: dlfs_out_put(o, "%llu", U(v->u)); break;
	case DLFS_VAL_INT: dlfs_out_put(o, "%lld", (long long)v->i); break;
	case DLFS_VAL_DBL: dlfs_out_put(o, c->fmt, v->d); break;
	case DLFS_VAL_STR: dlfs_out_put(o, "\"%s\"", v->s); break;
	case DLFS_VAL_HIST: hist(o, c, v); break;
	}
}

size_t dlfs_stats_json(const struct dlfs_stats *s,
		       const struct dlfs_tier_snap *t, char *buf, size_t len)
{
	struct dlfs_out o = {buf, len, 0};
	struct jw w = {.o = &o, .ml = {1}};
	struct dlfs_val v;
	if (len)
		buf[0] = '\0';
	dlfs_out_put(&o, "{");
	for (size_t i = 0; i < dlfs_n_counters; i++) {
		const struct dlfs_counter *c = &dlfs_counters[i];
		if (!c->json)
			continue;
		dlfs_counter_value(c, s, t, &v);
		if (v.kind == DLFS_VAL_NONE)
			continue;
		size_t k = enter(&w, c->json);
		member(&w, c->json + k, strlen(c->json + k));
		value(&o, c, &v);
	}
	while (w.depth)
		close_obj(&w);
	dlfs_out_put(&o, "\n}\n");
	return o.at;
}
