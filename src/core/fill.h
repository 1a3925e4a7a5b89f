/*
 * Background reads: the threads that keep the PFS busy with up to depth
 * chunk reads in flight, so that what readers need is loaded before they
 * ask, whatever the readers' own concurrency.
 *
 * Work, in priority order:
 *   0. keep: a chunk the NVMe tier turned away (a demand load's, when the
 *      tier's write queue was full: dlfs_nvme_next_turned_away) is queued
 *      for the tier again from RAM, if RAM still holds it. No PFS read;
 *      first, because RAM may let it go, and then it would be read again.
 *   1. planned: the chunks an epoch view's readers need next, in order of
 *      first use, pulled from the planner (dlfs_fill_set_planner). Without
 *      an NVMe tier each is held in RAM (pinned) until every file of the
 *      reader's share in it has been read (dlfs_fill_used), within half
 *      the RAM tier; with one it is written there and needs no hold.
 *   1b. bags (bags.h): when there is no NVMe tier and the planned chunks
 *      held fill the hold budget (or the planner has given every chunk),
 *      the plan's next files not in RAM are read in merged runs into
 *      entries of their own, in the RAM tier's slots beside the holds
 *      (conf.bags: the dataset is larger than the RAM tier).
 *   2. streams: sequential read-ahead (dlfs_fill_stream, from prefetch.c).
 *   3. the sweep: every chunk not in the NVMe tier yet, this rank's home
 *      range first, so that the tier is full after one pass at the PFS's
 *      rate. AUTO starts it at the first demand read when the NVMe tier
 *      can hold the dataset; HOME and ALL at start (HOME: the home range
 *      only).
 * Demand reads go first: a background read waits while demand loads plus
 * PFS reads in flight reach depth (up to a short bound, so it is never
 * starved). Loads go through the RAM tier, so a reader or a peer asking
 * for the same chunk meanwhile shares the load. A loaded chunk is in RAM
 * for readers at once; its thread then waits for room in the NVMe tier's
 * write queue (the chunk pinned meanwhile) rather than drop it, and only
 * then takes more work: a slow tier disk slows the fill, not the readers
 * of what it loaded.
 *
 * Thread-safety: every call is safe from any thread. Lock order: the
 * planner lock, then the work lock; the cache and the NVMe tier are taken
 * with neither held.
 */
#ifndef DLFS_FILL_H
#define DLFS_FILL_H

#include <stdint.h>

#include "bags.h"
#include "cache.h"
#include "reader.h"
#include "fetch.h"

struct dlfs_fill;

struct dlfs_fill_conf {
	struct dlfs_cache *cache;
	struct dlfs_fetch *fetch;  /* its ds, NVMe tier, PFS reads in flight */
	unsigned depth;            /* threads, and PFS reads in flight */
	enum dlfs_fill_mode mode;
	uint64_t home_lo, home_hi; /* this rank's global chunks [lo, hi) */
	int bags;                  /* read the plan's files in bags */
};

struct dlfs_fill_stats {
	uint64_t planned, streamed, swept; /* chunks loaded, by kind */
	uint64_t bytes;                    /* bytes of those */
	uint64_t from_ram;                 /* chunks put in NVMe from RAM */
	uint64_t held;                     /* planned chunks held now */
	uint64_t waits;                    /* times it yielded to demand */
	int sweeping, swept_all;           /* the sweep runs; it is over */
	unsigned depth;
	struct dlfs_bags_stats bags;
};

int dlfs_fill_new(const struct dlfs_fill_conf *conf, struct dlfs_fill **out,
		  struct dlfs_err *err);
/* Start the threads (after a daemon's fork). @return 0 or -errno. */
int dlfs_fill_start(struct dlfs_fill *f, struct dlfs_err *err);
/* Stop the threads, release the holds, free. NULL is ok. */
void dlfs_fill_free(struct dlfs_fill *f);

void dlfs_fill_set_planner(struct dlfs_fill *f, dlfs_plan_next_fn fn,
			   void *arg);
/* The plan's files, for the bags (with conf.bags). */
void dlfs_fill_set_file_planner(struct dlfs_fill *f, dlfs_plan_files_fn fn,
				void *arg);
/* The bags (with conf.bags), for the readers; NULL without. */
struct dlfs_bags *dlfs_fill_bags(struct dlfs_fill *f);
/* The plan changed: drop what was pulled and not loaded, ask again. */
void dlfs_fill_replan(struct dlfs_fill *f);

/* Read chunk (c, k) ahead for a sequential reader. Never blocks. */
void dlfs_fill_stream(struct dlfs_fill *f, uint32_t c, uint64_t k);

/* A demand read happened (AUTO starts its sweep at the first). */
void dlfs_fill_demand(struct dlfs_fill *f);

/* A file of global chunk g was read from its start: one use fewer of a
 * held chunk; the last releases it. Cheap when nothing is held. */
void dlfs_fill_used(struct dlfs_fill *f, uint64_t g);

void dlfs_fill_get_stats(struct dlfs_fill *f, struct dlfs_fill_stats *s);

#endif
