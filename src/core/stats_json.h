/*
 * The counters of a mount as the JSON of /.dlfs/stats, rendered from the
 * table of counters (counters.h) that the Prometheus text of
 * /.dlfs/metrics (metrics.h) renders too.
 *
 * No state and no lock: safe from any thread.
 */
#ifndef DLFS_STATS_JSON_H
#define DLFS_STATS_JSON_H

#include <stddef.h>

#include "stats.h"

/*
 * Render s and t as JSON into buf (len bytes), NUL-terminated when
 * len > 0.
 * @return the length, or the length it would need if len is too small
 * (then buf holds a cut-short prefix).
 */
size_t dlfs_stats_json(const struct dlfs_stats *s,
		       const struct dlfs_tier_snap *t, char *buf, size_t len);

#endif
