/* Helper threads that run a job in parts: see split.h. */
#include "split.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>

struct dlfs_split {
	unsigned helpers; /* wanted */
	pthread_mutex_t run_mu; /* one run at a time; guards started */
	int started;            /* 0: not tried; 1: tried */
	unsigned live;          /* helpers running */
	pthread_t *threads;

	pthread_mutex_t mu; /* guards the job below */
	pthread_cond_t go, done;
	uint64_t gen;     /* bumped for each run */
	unsigned parts;   /* of the current run */
	unsigned pending; /* helpers' parts not yet returned */
	dlfs_split_fn fn;
	void *arg;
	int stop;
};

struct helper {
	struct dlfs_split *s;
	unsigned part;
};

static void *helper_main(void *p)
{
	struct helper h = *(struct helper *)p;
	free(p);
	struct dlfs_split *s = h.s;
	uint64_t seen = 0;
	pthread_mutex_lock(&s->mu);
	for (;;) {
		while (!s->stop && s->gen == seen)
			pthread_cond_wait(&s->go, &s->mu);
		if (s->stop)
			break;
		seen = s->gen;
		if (h.part >= s->parts)
			continue; /* a run of fewer parts than helpers */
		dlfs_split_fn fn = s->fn;
		void *arg = s->arg;
		unsigned parts = s->parts;
		pthread_mutex_unlock(&s->mu);
		fn(arg, h.part, parts);
		pthread_mutex_lock(&s->mu);
		if (!--s->pending)
			pthread_cond_signal(&s->done);
	}
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

int dlfs_split_new(unsigned helpers, struct dlfs_split **out)
{
	struct dlfs_split *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->helpers = helpers;
	pthread_mutex_init(&s->run_mu, NULL);
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->go, NULL);
	pthread_cond_init(&s->done, NULL);
	*out = s;
	return 0;
}

void dlfs_split_free(struct dlfs_split *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->mu);
	s->stop = 1;
	pthread_cond_broadcast(&s->go);
	pthread_mutex_unlock(&s->mu);
	for (unsigned i = 0; i < s->live; i++)
		pthread_join(s->threads[i], NULL);
	free(s->threads);
	pthread_cond_destroy(&s->done);
	pthread_cond_destroy(&s->go);
	pthread_mutex_destroy(&s->mu);
	pthread_mutex_destroy(&s->run_mu);
	free(s);
}

unsigned dlfs_split_helpers_for_cpus(unsigned max)
{
	cpu_set_t set;
	int n = 1;
	if (!sched_getaffinity(0, sizeof(set), &set))
		n = CPU_COUNT(&set);
	unsigned h = n > 1 ? (unsigned)n - 1 : 0;
	return h < max ? h : max;
}

unsigned dlfs_split_max_parts(const struct dlfs_split *s)
{
	return s->helpers + 1;
}

/* Start the helpers (caller holds run_mu). Those that start are used. */
static void start(struct dlfs_split *s)
{
	s->started = 1;
	if (!s->helpers || !(s->threads = calloc(s->helpers, sizeof(pthread_t))))
		return;
	for (unsigned i = 0; i < s->helpers; i++) {
		struct helper *h = malloc(sizeof(*h));
		if (!h)
			return;
		*h = (struct helper){s, s->live + 1};
		if (pthread_create(&s->threads[s->live], NULL, helper_main, h)) {
			free(h);
			return;
		}
		s->live++;
	}
}

void dlfs_split_run(struct dlfs_split *s, unsigned parts, dlfs_split_fn fn,
		    void *arg)
{
	pthread_mutex_lock(&s->run_mu);
	if (!s->started)
		start(s);
	if (parts > s->live + 1)
		parts = s->live + 1;
	if (parts <= 1) {
		pthread_mutex_unlock(&s->run_mu);
		fn(arg, 0, 1);
		return;
	}
	pthread_mutex_lock(&s->mu);
	s->fn = fn;
	s->arg = arg;
	s->parts = parts;
	s->pending = parts - 1;
	s->gen++;
	pthread_cond_broadcast(&s->go);
	pthread_mutex_unlock(&s->mu);
	fn(arg, 0, parts);
	pthread_mutex_lock(&s->mu);
	while (s->pending)
		pthread_cond_wait(&s->done, &s->mu);
	pthread_mutex_unlock(&s->mu);
	pthread_mutex_unlock(&s->run_mu);
}
