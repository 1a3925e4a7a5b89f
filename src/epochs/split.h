/*
 * A team of helper threads that runs one job at a time in parts: the
 * caller takes part 0 and each helper one more, and the run returns when
 * every part has returned. For CPU work that a caller would otherwise do
 * alone while the node's other cores idle, such as rendering a piece of
 * an epoch list (views.c).
 *
 * The helpers start on the first run, not at dlfs_split_new, so that a
 * process which forks after setting up (the daemon does) starts them in
 * the child. If they cannot start, every run takes one part, in the
 * caller: slower, never wrong.
 *
 * Thread-safety: dlfs_split_run may be called from any thread; runs do
 * not overlap (a second waits for the first). A part must not call
 * dlfs_split_run.
 */
#ifndef DLFS_SPLIT_H
#define DLFS_SPLIT_H

struct dlfs_split;

/* fn(arg, part, parts): part in [0, parts); each part exactly once. */
typedef void (*dlfs_split_fn)(void *arg, unsigned part, unsigned parts);

/* A team of up to helpers threads (0: every run in the caller alone).
 * @return 0 or -ENOMEM. */
int dlfs_split_new(unsigned helpers, struct dlfs_split **out);
/* Stops and joins the helpers. NULL is fine. */
void dlfs_split_free(struct dlfs_split *s);

/* The helpers for a team of this process: one per CPU it may run on
 * (sched_getaffinity, so a Slurm job's share), less the caller's, at
 * most max. */
unsigned dlfs_split_helpers_for_cpus(unsigned max);

/* The most parts a run can have: 1 plus the helpers (all of them, even
 * if not started yet). */
unsigned dlfs_split_max_parts(const struct dlfs_split *s);

/* Run fn in min(parts, the parts available) parts (at least 1), and
 * return once all have returned. */
void dlfs_split_run(struct dlfs_split *s, unsigned parts, dlfs_split_fn fn,
		    void *arg);

#endif
