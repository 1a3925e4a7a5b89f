/*
 * The helper team (split.c): every part of a run runs exactly once and
 * the run returns only after all of them; parts go to different threads;
 * runs of fewer parts than helpers, a team of no helpers, many runs in a
 * row, and runs from two threads at once (they take turns) all hold.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "split.h"
#include "tutil.h"

#define MAXP 8

struct job {
	_Atomic unsigned ran[MAXP];
	_Atomic unsigned running; /* parts inside fn now, across all runs */
	_Atomic unsigned overlap; /* a part began while another job's ran */
	pthread_t who[MAXP];
	unsigned parts_seen[MAXP];
	int slow;
};

static struct job *_Atomic current;

static void part(void *arg, unsigned i, unsigned parts)
{
	struct job *j = arg;
	struct job *was = NULL;
	/* Runs never overlap: no other job is inside fn now. */
	if (!atomic_compare_exchange_strong(&current, &was, j) && was != j)
		atomic_fetch_add(&j->overlap, 1);
	atomic_fetch_add(&j->running, 1);
	if (i < MAXP) {
		atomic_fetch_add(&j->ran[i], 1);
		j->who[i] = pthread_self();
		j->parts_seen[i] = parts;
	}
	if (j->slow)
		usleep(2000); /* parts that outlast the caller's own */
	if (atomic_fetch_sub(&j->running, 1) == 1) {
		struct job *me = j;
		atomic_compare_exchange_strong(&current, &me, NULL);
	}
}

static void check_run(struct dlfs_split *s, unsigned want, unsigned expect,
		      int slow)
{
	struct job j;
	memset(&j, 0, sizeof(j));
	j.slow = slow;
	dlfs_split_run(s, want, part, &j);
	CHECK_EQ(atomic_load(&j.running), 0); /* all returned */
	for (unsigned i = 0; i < MAXP; i++)
		CHECK_EQ(atomic_load(&j.ran[i]), i < expect ? 1 : 0);
	for (unsigned i = 0; i < expect && i < MAXP; i++)
		CHECK_EQ(j.parts_seen[i], expect);
	/* Part 0 is the caller's; the others are helpers', one each. */
	CHECK(pthread_equal(j.who[0], pthread_self()));
	for (unsigned a = 1; a < expect; a++) {
		CHECK(!pthread_equal(j.who[a], pthread_self()));
		for (unsigned b = a + 1; b < expect; b++)
			CHECK(!pthread_equal(j.who[a], j.who[b]));
	}
	CHECK_EQ(atomic_load(&j.overlap), 0);
}

struct racer {
	struct dlfs_split *s;
	int runs;
};

static void *race(void *arg)
{
	struct racer *r = arg;
	for (int i = 0; i < r->runs; i++)
		check_run(r->s, 3, 3, i % 7 == 0);
	return NULL;
}

int main(void)
{
	struct dlfs_split *s;

	/* No helpers: one part, in the caller, whatever is asked. */
	CHECK_EQ(dlfs_split_new(0, &s), 0);
	CHECK_EQ(dlfs_split_max_parts(s), 1);
	check_run(s, 4, 1, 0);
	dlfs_split_free(s);

	/* A team that never ran has no threads to stop. */
	CHECK_EQ(dlfs_split_new(3, &s), 0);
	dlfs_split_free(s);

	CHECK_EQ(dlfs_split_new(3, &s), 0);
	CHECK_EQ(dlfs_split_max_parts(s), 4);
	check_run(s, 4, 4, 0);
	check_run(s, 9, 4, 1);  /* more than the team: capped */
	check_run(s, 2, 2, 1);  /* fewer: the other helpers sit out */
	check_run(s, 1, 1, 0);
	check_run(s, 0, 1, 0);  /* 0 means 1 */
	for (int i = 0; i < 2000; i++)
		check_run(s, 1 + (unsigned)i % 4, 1 + (unsigned)i % 4,
			  i % 250 == 0);
	/* Two callers at once take turns. */
	struct racer r = {s, 300};
	pthread_t t;
	CHECK_EQ(pthread_create(&t, NULL, race, &r), 0);
	race(&r);
	pthread_join(t, NULL);
	dlfs_split_free(s);

	unsigned h = dlfs_split_helpers_for_cpus(3);
	CHECK(h <= 3);
	CHECK_EQ(dlfs_split_helpers_for_cpus(0), 0);
	return t_done("test_split");
}
