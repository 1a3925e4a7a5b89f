/* Mount statistics: see stats.h. */
#include "stats.h"

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

double dlfs_stats_uptime(const struct dlfs_stats *s)
{
	return now() - s->start;
}
