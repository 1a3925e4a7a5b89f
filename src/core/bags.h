/*
 * Bags: the files an epoch view's readers will read next, read ahead in
 * merged runs and packed into RAM-tier entries of their own. They are for
 * a node whose tiers cannot hold the chunks its plan needs: no NVMe tier,
 * and a shuffle that spreads each chunk's files over the epoch, so that
 * planned chunks held until their last file is read fill the RAM tier's
 * hold budget early. Every other file would then be read alone: one PFS
 * request each. A bag costs one request a run of files.
 *
 * Planning (dlfs_bags_next, from a background read thread, whenever a
 * bag is free): the next files of the plan (dlfs_plan_files_fn) from the
 * bags' cursor on, as many as fill about 7/8 of the free bags. Files that are empty,
 * larger than half a chunk, across two chunks, mapped already, or whose
 * own entry the RAM tier has, or whose chunk it holds for the plan, are
 * passed over. A chunk that is merely cached is not counted: bags load
 * by evicting such entries, and each file passed over for one evicted
 * before its reader came was read alone (measured: an epoch 2 at 25,145
 * PFS reads for 80,000 files, against 7,563 when they are planned). The
 * rest are sorted by container and offset and neighbours merged into one read, the
 * smallest gaps first, while the pages read stay within DLFS_BAGS_WASTE
 * times the files' bytes (or what reading them one by one would read,
 * when more) and a run within an entry. Runs are then packed, in order
 * of their first file's use, into bags of one entry each.
 *
 * Loading (dlfs_bags_load): a bag is a RAM-tier entry of its own
 * (dlfs_cache_bag_key; the loader is dlfs_fetch_load with a struct
 * dlfs_fetch_bag whose fill is here). Its runs are read one PFS request
 * each, in parallel, by its loader and by idle background threads
 * (dlfs_bags_help), each into a scratch buffer of its own, whose files
 * are then copied to their places, so the entry keeps file bytes alone.
 * It is held, and each file is checked against its own checksum. One
 * that fails is left out: its reader takes the usual path and meets the
 * error there.
 *
 * Reading: dlfs_bags_get pins the entry of a file in a loaded bag; a
 * file whose bag is not loaded yet is read as usual. A bag is let go
 * when each of its files was read from its start, when the readers went
 * a window past its last file (a file a reader skipped must not keep it),
 * or at a new plan (dlfs_bags_reset). Letting one go calls conf.wake, so
 * that the background reads plan again.
 *
 * Thread-safety: every call is safe from any thread. One mutex, never
 * held across the planner, a PFS read or a cache load; dlfs_cache_put
 * may be called under it (the cache calls nothing here).
 */
#ifndef DLFS_BAGS_H
#define DLFS_BAGS_H

#include <stddef.h>
#include <stdint.h>

#include "cache.h"
#include "fetch.h"
#include "reader.h"

/* The pages a bag reads, at most this times its files' bytes. */
#define DLFS_BAGS_WASTE 1.5
/* A thread's scratch buffer for a run: this many bytes, 4 KiB aligned
 * (a run's pages fit). */
#define DLFS_BAGS_SCRATCH DLFS_FETCH_BUF_SIZE

struct dlfs_bags;

struct dlfs_bags_conf {
	struct dlfs_cache *cache;
	struct dlfs_fetch *fetch;
	unsigned max;        /* bags at once (RAM-tier entries), >= 1 */
	size_t entry_size;   /* an entry's bytes: the chunk size */
	void (*wake)(void *arg); /* a bag was let go */
	void *wake_arg;
};

struct dlfs_bags_stats {
	uint64_t bags;   /* loaded */
	uint64_t files;  /* mapped (checked) */
	uint64_t runs;   /* PFS reads */
	uint64_t bytes;  /* their bytes */
	uint64_t hits;   /* files read from their start out of a bag */
	uint64_t unread; /* files whose bag was let go before they were */
	uint64_t bad;    /* files that failed their checksum */
	uint64_t live;   /* bags held now */
};

int dlfs_bags_new(const struct dlfs_bags_conf *conf, struct dlfs_bags **out,
		  struct dlfs_err *err);
/* Let every bag go and free. NULL is ok. */
void dlfs_bags_free(struct dlfs_bags *b);

void dlfs_bags_set_planner(struct dlfs_bags *b, dlfs_plan_files_fn fn,
			   void *arg);
/* The plan changed: let every bag go; plan again from the readers. */
void dlfs_bags_reset(struct dlfs_bags *b);

/*
 * The next work: a bag being loaded whose runs are not all taken (help
 * it), else one to load, planning a window when none is waiting and there
 * is room. @return 2 with *bag (pass it to dlfs_bags_help), 1 with *bag
 * (pass it to dlfs_bags_load), 0 when there is nothing to do until a bag
 * is let go or the plan changes.
 */
int dlfs_bags_next(struct dlfs_bags *b, struct dlfs_txn *txn, unsigned *bag);
/* Load bag (from dlfs_bags_next): read its runs (with any helpers),
 * check and hold it; scratch: DLFS_BAGS_SCRATCH bytes. @return 0, -EAGAIN
 * (no RAM-tier entry free: it waits for the next try), or -errno (it was
 * dropped: its files are read alone). */
int dlfs_bags_load(struct dlfs_bags *b, struct dlfs_txn *txn, unsigned bag,
		   uint8_t *scratch);
/* Read runs of bag (from dlfs_bags_next) that nobody took yet, each one
 * PFS read into scratch, its files then copied into the entry. */
void dlfs_bags_help(struct dlfs_bags *b, unsigned bag, uint8_t *scratch);

/*
 * Pin the entry of file ino if a loaded bag holds it: its bytes start at
 * ref->data + *off. A bag not loaded yet is not waited for. first: this
 * read starts at the file's offset 0 (a use of it). @return 0, or
 * -ENOENT.
 */
int dlfs_bags_get(struct dlfs_bags *b, uint64_t ino, int first,
		  struct dlfs_chunk_ref *ref, size_t *off);

void dlfs_bags_get_stats(struct dlfs_bags *b, struct dlfs_bags_stats *s);

/*
 * The runs of files sorted by container and offset (pure; the
 * planner's, bags_plan.c, exposed for its tests): c, off and size per
 * file (n of them), into run (n entries: the index of each file's run,
 * runs numbered in file order from 0). Merges neighbours, the smallest gaps first, while
 * runs stay within max_run bytes of whole pages and all their pages
 * within the larger of waste times the files' bytes and their pages
 * read one by one. @return the number of runs.
 */
size_t dlfs_bags_runs(const uint32_t *c, const uint64_t *off,
		      const uint64_t *size, size_t n, uint64_t max_run,
		      double waste, uint32_t *run);

#endif
