/*
 * outside: follows the reads that readers in other processes serve
 * themselves from the shared tiers (conf.share, src/node/shared/shm.h): a thread
 * that takes each read they report in the seen ring and hands it to fn,
 * in order. The read core uses it to do for those reads what it does for
 * its own at a file's start (the epoch views' observer, the background
 * fill's count of chunks used).
 *
 * The thread looks at the ring every millisecond while reads come in,
 * and every 20 ms when none came for a while.
 *
 * Thread-safety: fn is called on the thread only; start and stop from
 * one thread.
 */
#ifndef DLFS_OUTSIDE_H
#define DLFS_OUTSIDE_H

#include <stdint.h>

#include "dlfs/err.h"
#include "share.h"

struct dlfs_outside;

typedef void (*dlfs_outside_fn)(void *arg, uint64_t ino);

/* Start following sh's ring. @return 0 or -errno with err. */
int dlfs_outside_start(struct dlfs_share *sh, dlfs_outside_fn fn, void *arg,
		       struct dlfs_outside **out, struct dlfs_err *err);

/* Stop the thread (after it handed on what was reported). NULL is ok. */
void dlfs_outside_stop(struct dlfs_outside *o);

#endif
