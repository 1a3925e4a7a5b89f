/*
 * The table of counters (counters.c, through counters.h) that both the
 * JSON of /.dlfs/stats and the Prometheus text of /.dlfs/metrics render:
 * every family has a name, a type and a help, and at least one row;
 * every row is in one rendering at least, reads a field or has a
 * function, and is alone with its JSON path and with its family and
 * labels; the rows of one JSON object follow each other (the JSON
 * writer opens each object once). test_stats and test_metrics check
 * what the two renderings make of it.
 */
#include <string.h>

#include "counters.h"
#include "tutil.h"

static int same(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

/* Has path the object prefix[0, len) ("tiers", "tiers.pfs")? */
static int in_object(const char *path, const char *prefix, size_t len)
{
	return !strncmp(path, prefix, len) && path[len] == '.';
}

static void test_families(void)
{
	for (int f = DLFS_F_NONE + 1; f < DLFS_F_COUNT; f++) {
		const struct dlfs_family_def *d = &dlfs_families[f];
		size_t rows = 0;
		CHECK(d->name && d->type && d->help && *d->help);
		if (!d->name || !d->type)
			continue;
		CHECK(!strcmp(d->type, "counter") || !strcmp(d->type, "gauge") ||
		      !strcmp(d->type, "histogram"));
		for (size_t i = 0; i < dlfs_n_counters; i++)
			rows += dlfs_counters[i].fam == (enum dlfs_family)f;
		if (!rows)
			fprintf(stderr, "family %s has no row\n", d->name);
		CHECK(rows > 0);
	}
}

static void test_rows(void)
{
	for (size_t i = 0; i < dlfs_n_counters; i++) {
		const struct dlfs_counter *c = &dlfs_counters[i];
		CHECK(c->json || c->fam != DLFS_F_NONE);
		CHECK((c->src == DLFS_SRC_FN) == (c->fn != NULL));
		for (size_t j = 0; j < i; j++) {
			const struct dlfs_counter *e = &dlfs_counters[j];
			int twice = (c->json && same(c->json, e->json)) ||
				    (c->fam != DLFS_F_NONE && c->fam == e->fam &&
				     same(c->labels, e->labels));
			if (twice)
				fprintf(stderr, "rows %zu and %zu: %s twice\n",
					j, i, c->json ? c->json : "a series");
			CHECK(!twice);
		}
	}
}

/* Once a row leaves an object, no later row comes back to it. */
static void test_json_objects(void)
{
	const char *prev = NULL;
	for (size_t i = 0; i < dlfs_n_counters; i++) {
		const char *p = dlfs_counters[i].json;
		if (!p)
			continue;
		for (const char *dot = strchr(p, '.'); dot;
		     dot = strchr(dot + 1, '.')) {
			size_t len = (size_t)(dot - p);
			if (prev && in_object(prev, p, len))
				continue;
			for (size_t j = 0; j < i; j++) {
				const char *q = dlfs_counters[j].json;
				int back = q && in_object(q, p, len);
				if (back)
					fprintf(stderr, "%s: its object is "
						"apart from %s's\n", p, q);
				CHECK(!back);
			}
		}
		prev = p;
	}
}

int main(void)
{
	test_families();
	test_rows();
	test_json_objects();
	return t_done("test_counters");
}
