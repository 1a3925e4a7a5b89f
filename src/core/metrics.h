/*
 * The counters of a mount in the Prometheus text exposition format 0.0.4
 * (what `promtool check metrics` lints and what node_exporter's textfile
 * collector reads): /.dlfs/metrics. It renders the table of counters
 * (counters.h) that the JSON of /.dlfs/stats (stats_json.h) renders too,
 * so the two cannot disagree.
 *
 * Every family has # HELP and # TYPE; counters end in _total; sizes are
 * bytes and times seconds; histograms have cumulative _bucket{le=...}
 * series up to le="+Inf", then _sum and _count. Every series has the
 * label mount first (t->mount, else t->mountpoint), so that two mounts'
 * series never collide; tiers are told apart by a tier label (ram, nvme,
 * peer, pfs), and dlfs_info carries who the mount is (dataset id and
 * path, mountpoint, front end, rank). man dlfs(1) lists the families.
 *
 * No state and no lock: safe from any thread.
 */
#ifndef DLFS_METRICS_H
#define DLFS_METRICS_H

#include <stddef.h>

#include "stats.h"

/*
 * Render s and t into buf (len bytes), NUL-terminated when len > 0.
 * @return the length of the text, or the length it would need if len is
 * too small (then buf holds a cut-short prefix).
 */
size_t dlfs_metrics_text(const struct dlfs_stats *s,
			 const struct dlfs_tier_snap *t, char *buf, size_t len);

#endif
