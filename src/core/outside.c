/* The reads of readers outside: see outside.h. */
#include "outside.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util.h"

struct dlfs_outside {
	struct dlfs_share *sh;
	dlfs_outside_fn fn;
	void *arg;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t wake;
	int stop; /* under mu */
};

/* Hand on what is in the ring. @return how many. */
static unsigned drain(struct dlfs_outside *o, uint64_t *next)
{
	unsigned n = 0;
	uint64_t ino;
	while (dlfs_share_seen_next(o->sh, next, &ino)) {
		o->fn(o->arg, ino);
		n++;
	}
	return n;
}

/* Looks in a row that a report taken but not written holds up the rest
 * before it is skipped (its reader died between the two). */
#define STALL_LOOKS 100

static void *outside_main(void *arg)
{
	struct dlfs_outside *o = arg;
	uint64_t next = 0;
	unsigned idle = 0;  /* looks in a row that found nothing */
	unsigned stuck = 0; /* ... while a report was due */
	pthread_mutex_lock(&o->mu);
	while (!o->stop) {
		pthread_mutex_unlock(&o->mu);
		idle = drain(o, &next) ? 0 : idle + 1;
		if (!idle || ++stuck < STALL_LOOKS) {
			if (!idle)
				stuck = 0;
		} else {
			stuck = 0;
			if (dlfs_share_seen_skip(o->sh, &next))
				idle = 0; /* the rest may be there */
		}
		long ms = idle < 100 ? 1 : 20;
		struct timespec ts;
		dlfs_deadline(CLOCK_MONOTONIC, ms, &ts);
		pthread_mutex_lock(&o->mu);
		if (!o->stop)
			pthread_cond_timedwait(&o->wake, &o->mu, &ts);
	}
	pthread_mutex_unlock(&o->mu);
	drain(o, &next);
	return NULL;
}

int dlfs_outside_start(struct dlfs_share *sh, dlfs_outside_fn fn, void *arg,
		       struct dlfs_outside **out, struct dlfs_err *err)
{
	struct dlfs_outside *o = calloc(1, sizeof(*o));
	*out = NULL;
	if (!o)
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	o->sh = sh;
	o->fn = fn;
	o->arg = arg;
	pthread_mutex_init(&o->mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&o->wake, &ca);
	pthread_condattr_destroy(&ca);
	int ret = pthread_create(&o->thread, NULL, outside_main, o);
	if (ret) {
		pthread_mutex_destroy(&o->mu);
		pthread_cond_destroy(&o->wake);
		free(o);
		return dlfs_err_set(err, -ret, "starting the thread that follows "
				    "readers outside: %s", strerror(ret));
	}
	*out = o;
	return 0;
}

void dlfs_outside_stop(struct dlfs_outside *o)
{
	if (!o)
		return;
	pthread_mutex_lock(&o->mu);
	o->stop = 1;
	pthread_cond_signal(&o->wake);
	pthread_mutex_unlock(&o->mu);
	pthread_join(o->thread, NULL);
	pthread_mutex_destroy(&o->mu);
	pthread_cond_destroy(&o->wake);
	free(o);
}
