/*
 * The RAM tier alone, with a fake loader that fills an entry with a
 * pattern of its key, counts loads per key, can fail, can say it kept the
 * bytes elsewhere, and can block until the test lets a load finish:
 * single flight, pinning, CLOCK eviction within the capacity, bypass
 * buffers when every slot is pinned, failed loads, get_cached, prefetch
 * (issued, used, wasted, quiet, bounded, holds) and the served-bytes
 * accounting of evictions.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cache.h"
#include "tutil.h"

#define SLOT 8192u
#define KEYS 1024 /* distinct keys the fake loader counts */

/* The fake loader's state: what it does, and what it saw. */
struct fake {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	uint64_t keys[KEYS];     /* loads[i] loads of keys[i] */
	unsigned loads[KEYS];
	unsigned n_keys;
	unsigned entered;        /* loads started */
	uint64_t block_key;      /* loads of it wait while blocked is set */
	int blocked;
	int fail;                /* loads of fail_key return it */
	uint64_t fail_key;
	int kept;                /* set l->kept */
	size_t len;              /* bytes of each entry (0: SLOT) */
	size_t off;              /* where they start in the buffer */
};

static struct fake fk;

static void fake_reset(void)
{
	pthread_mutex_lock(&fk.mu);
	fk.n_keys = 0;
	fk.entered = 0;
	fk.blocked = 0;
	fk.fail = 0;
	fk.kept = 0;
	fk.len = 0;
	fk.off = 0;
	pthread_mutex_unlock(&fk.mu);
}

/* The counter of key (caller holds fk.mu). */
static unsigned *counter(uint64_t key)
{
	for (unsigned i = 0; i < fk.n_keys; i++)
		if (fk.keys[i] == key)
			return &fk.loads[i];
	if (fk.n_keys == KEYS)
		abort();
	fk.keys[fk.n_keys] = key;
	fk.loads[fk.n_keys] = 0;
	return &fk.loads[fk.n_keys++];
}

static unsigned loads_of(uint64_t key)
{
	pthread_mutex_lock(&fk.mu);
	unsigned n = *counter(key);
	pthread_mutex_unlock(&fk.mu);
	return n;
}

static unsigned loads_total(void)
{
	unsigned n = 0;
	pthread_mutex_lock(&fk.mu);
	for (unsigned i = 0; i < fk.n_keys; i++)
		n += fk.loads[i];
	pthread_mutex_unlock(&fk.mu);
	return n;
}

/* The bytes of key's entry. */
static void pattern(uint64_t key, uint8_t *buf, size_t len)
{
	t_fill(buf, len, (uint32_t)(key * 7919 + (key >> 63)));
}

/* Does ref hold key's entry? */
static int holds_key(const struct dlfs_chunk_ref *ref, uint64_t key,
		     size_t len)
{
	uint8_t want[SLOT];
	if (!ref->data || ref->len != len)
		return 0;
	pattern(key, want, len);
	return !memcmp(ref->data, want, len);
}

static int fake_load(void *arg, void *ctx, uint64_t key, const void *what,
		     struct dlfs_load *l)
{
	(void)arg;
	(void)what;
	CHECK(ctx == &fk);
	CHECK(l->cap >= SLOT);
	CHECK(((uintptr_t)l->buf & 4095) == 0);
	pthread_mutex_lock(&fk.mu);
	(*counter(key))++;
	fk.entered++;
	pthread_cond_broadcast(&fk.cv);
	while (fk.blocked && key == fk.block_key)
		pthread_cond_wait(&fk.cv, &fk.mu);
	int fail = fk.fail && key == fk.fail_key ? fk.fail : 0;
	size_t len = fk.len ? fk.len : SLOT - fk.off;
	size_t off = fk.off;
	int kept = fk.kept;
	pthread_mutex_unlock(&fk.mu);
	if (fail)
		return dlfs_err_set(l->err, fail, "fake load of %llu fails",
				    (unsigned long long)key);
	/* Scribble over the whole buffer first: an entry is its bytes, not
	 * whatever the slot held before. */
	memset(l->buf, 0xee, l->cap);
	pattern(key, (uint8_t *)l->buf + off, len);
	l->off = off;
	l->len = len;
	l->kept = kept;
	return 0;
}

static struct dlfs_cache *new_cache(unsigned slots)
{
	struct dlfs_cache *c = NULL;
	struct dlfs_err err = {0};
	int ret = dlfs_cache_new(SLOT, (uint64_t)slots * SLOT, fake_load, NULL,
				 &c, &err);
	CHECK_EQ(ret, 0);
	if (ret) {
		fprintf(stderr, "cache: %s\n", err.msg);
		exit(1);
	}
	CHECK_EQ(dlfs_cache_slots(c), slots);
	return c;
}

static struct dlfs_cache_stats stats(struct dlfs_cache *c)
{
	struct dlfs_cache_stats s;
	dlfs_cache_get_stats(c, &s);
	return s;
}

/* get and put at once, serving served bytes; @return the get's code. */
static int touch(struct dlfs_cache *c, uint64_t key, size_t served)
{
	struct dlfs_chunk_ref ref;
	struct dlfs_err err = {0};
	int ret = dlfs_cache_get(c, key, NULL, &fk, &ref, &err);
	if (!ret) {
		CHECK(holds_key(&ref, key, fk.len ? fk.len : SLOT - fk.off));
		dlfs_cache_put(c, &ref, served);
	}
	return ret;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {0, (long)ms * 1000000L};
	nanosleep(&ts, NULL);
}

/* Wait until the fake loader has started n loads. */
static void wait_entered(unsigned n)
{
	pthread_mutex_lock(&fk.mu);
	while (fk.entered < n)
		pthread_cond_wait(&fk.cv, &fk.mu);
	pthread_mutex_unlock(&fk.mu);
}

static void unblock(void)
{
	pthread_mutex_lock(&fk.mu);
	fk.blocked = 0;
	pthread_cond_broadcast(&fk.cv);
	pthread_mutex_unlock(&fk.mu);
}

/* ---- single flight ---- */

#define READERS 8

struct reader {
	struct dlfs_cache *c;
	uint64_t key;
	int ret;
	int same; /* the bytes were the key's */
	struct dlfs_chunk_ref ref;
	struct dlfs_err err;
};

static _Atomic unsigned started;

static void *reader_main(void *arg)
{
	struct reader *r = arg;
	started++;
	r->ret = dlfs_cache_get(r->c, r->key, NULL, &fk, &r->ref, &r->err);
	r->same = !r->ret && holds_key(&r->ref, r->key, SLOT);
	return NULL;
}

/* Start READERS threads missing on key while its load is blocked; let it
 * finish once they are all waiting. */
static void race(struct dlfs_cache *c, uint64_t key, struct reader *rd)
{
	pthread_t th[READERS];
	started = 0;
	pthread_mutex_lock(&fk.mu);
	fk.blocked = 1;
	fk.block_key = key;
	fk.entered = 0;
	pthread_mutex_unlock(&fk.mu);
	for (int i = 0; i < READERS; i++) {
		rd[i] = (struct reader){.c = c, .key = key};
		if (pthread_create(&th[i], NULL, reader_main, &rd[i]))
			abort();
	}
	wait_entered(1);
	while (started < READERS)
		sleep_ms(1);
	/* The others are in dlfs_cache_get by now, or soon: a late one
	 * finds the entry loaded, which is as good. Give them time to
	 * reach the wait, so that a cache that does not wait loads. */
	sleep_ms(50);
	unblock();
	for (int i = 0; i < READERS; i++)
		pthread_join(th[i], NULL);
}

static void test_single_flight(void)
{
	struct dlfs_cache *c = new_cache(16);
	struct reader rd[READERS];
	fake_reset();
	uint64_t key = dlfs_cache_chunk_key(3, 7);
	race(c, key, rd);
	CHECK_EQ(loads_of(key), 1);
	CHECK_EQ(loads_total(), 1);
	for (int i = 0; i < READERS; i++) {
		CHECK_EQ(rd[i].ret, 0);
		CHECK(rd[i].same);
		/* One entry: every reader points at the same bytes. */
		CHECK(rd[i].ref.data == rd[0].ref.data);
	}
	struct dlfs_cache_stats s = stats(c);
	CHECK_EQ(s.misses, 1);
	CHECK_EQ(s.hits, READERS - 1);
	CHECK_EQ(s.chunks, 1);
	for (int i = 0; i < READERS; i++)
		dlfs_cache_put(c, &rd[i].ref, 0);
	dlfs_cache_free(c);
}

/* A failed load is not cached, and every reader waiting for it gets its
 * error rather than loading again. */
static void test_failed_load(void)
{
	struct dlfs_cache *c = new_cache(4);
	struct reader rd[READERS];
	struct dlfs_err err = {0};
	struct dlfs_chunk_ref ref;
	fake_reset();
	uint64_t key = dlfs_cache_chunk_key(0, 9);
	pthread_mutex_lock(&fk.mu);
	fk.fail = -EBADMSG;
	fk.fail_key = key;
	pthread_mutex_unlock(&fk.mu);

	CHECK_EQ(dlfs_cache_get(c, key, NULL, &fk, &ref, &err), -EBADMSG);
	CHECK_EQ(err.code, -EBADMSG);
	CHECK(strstr(err.msg, "fake load") != NULL);
	CHECK(!dlfs_cache_contains(c, key));
	CHECK_EQ(stats(c).chunks, 0);
	/* Not cached: the next get loads again. */
	CHECK_EQ(dlfs_cache_get(c, key, NULL, &fk, &ref, &err), -EBADMSG);
	CHECK_EQ(loads_of(key), 2);
	CHECK_EQ(dlfs_cache_get_cached(c, key, &ref), -ENOENT);

	/* Concurrent readers of a failing load: one load, one error each. */
	fake_reset();
	pthread_mutex_lock(&fk.mu);
	fk.fail = -EIO;
	fk.fail_key = key;
	pthread_mutex_unlock(&fk.mu);
	race(c, key, rd);
	CHECK_EQ(loads_of(key), 1);
	for (int i = 0; i < READERS; i++) {
		CHECK_EQ(rd[i].ret, -EIO);
		CHECK_EQ(rd[i].err.code, -EIO);
		CHECK(rd[i].ref.data == NULL);
	}
	CHECK(!dlfs_cache_contains(c, key));
	CHECK_EQ(stats(c).chunks, 0);
	/* The slots are usable again: every one of them. */
	pthread_mutex_lock(&fk.mu);
	fk.fail = 0;
	pthread_mutex_unlock(&fk.mu);
	struct dlfs_chunk_ref refs[4];
	for (int i = 0; i < 4; i++)
		CHECK_EQ(dlfs_cache_get(c, (uint64_t)i + 100, NULL, &fk,
					&refs[i], &err),
			 0);
	CHECK_EQ(stats(c).bypass, 0);
	for (int i = 0; i < 4; i++)
		dlfs_cache_put(c, &refs[i], 0);
	dlfs_cache_free(c);
}

/* ---- pinning, eviction, capacity ---- */

static void test_pinning(void)
{
	struct dlfs_cache *c = new_cache(4);
	struct dlfs_err err = {0};
	struct dlfs_chunk_ref pinned;
	fake_reset();
	uint64_t key = dlfs_cache_chunk_key(1, 1);
	CHECK_EQ(dlfs_cache_get(c, key, NULL, &fk, &pinned, &err), 0);
	for (uint64_t k = 0; k < 200; k++) {
		CHECK_EQ(touch(c, dlfs_cache_chunk_key(2, k), SLOT), 0);
		CHECK(stats(c).chunks <= 4);
	}
	/* Still there, unchanged, never loaded again. */
	CHECK(holds_key(&pinned, key, SLOT));
	CHECK(dlfs_cache_contains(c, key));
	CHECK_EQ(loads_of(key), 1);
	CHECK_EQ(stats(c).bypass, 0);
	dlfs_cache_put(c, &pinned, SLOT);
	/* Released, it can go. */
	for (uint64_t k = 200; k < 220; k++)
		CHECK_EQ(touch(c, dlfs_cache_chunk_key(2, k), SLOT), 0);
	CHECK(!dlfs_cache_contains(c, key));
	struct dlfs_cache_stats s = stats(c);
	CHECK_EQ(s.chunks, 4);
	CHECK_EQ(s.used_bytes, 4 * SLOT);
	CHECK_EQ(s.capacity_bytes, 4 * SLOT);
	CHECK_EQ(s.misses, 221);
	dlfs_cache_free(c);
}

/* CLOCK: an entry used since the hand last passed it gets a second
 * chance; the oldest unused one goes. */
static void test_clock(void)
{
	struct dlfs_cache *c = new_cache(4);
	fake_reset();
	for (uint64_t k = 1; k <= 4; k++)
		CHECK_EQ(touch(c, k, SLOT), 0);
	/* Full: every entry was used once; the first in goes first. */
	CHECK_EQ(touch(c, 5, SLOT), 0);
	CHECK(!dlfs_cache_contains(c, 1));
	/* 2 is used again, 3 is not: 3 goes, 2 stays. */
	CHECK_EQ(touch(c, 2, SLOT), 0);
	CHECK_EQ(loads_of(2), 1);
	CHECK_EQ(touch(c, 6, SLOT), 0);
	CHECK(dlfs_cache_contains(c, 2));
	CHECK(!dlfs_cache_contains(c, 3));
	CHECK(dlfs_cache_contains(c, 4));
	CHECK(dlfs_cache_contains(c, 5));
	CHECK(dlfs_cache_contains(c, 6));
	/* Capacity: never more entries than slots, whatever comes. */
	for (uint64_t k = 0; k < 500; k++) {
		CHECK_EQ(touch(c, (k * 7) % 23 + 10, SLOT), 0);
		if (stats(c).chunks > 4) {
			CHECK(stats(c).chunks <= 4);
			break;
		}
	}
	int present = 0;
	for (uint64_t k = 0; k < 40; k++)
		present += dlfs_cache_contains(c, k);
	CHECK_EQ(present, 4);
	dlfs_cache_free(c);
}

/* Every slot pinned: a private buffer, counted, freed on put (ASan's
 * leak check sees it if not). */
static void test_bypass(void)
{
	struct dlfs_cache *c = new_cache(2);
	struct dlfs_err err = {0};
	struct dlfs_chunk_ref a, b, x, y;
	fake_reset();
	CHECK_EQ(dlfs_cache_get(c, 1, NULL, &fk, &a, &err), 0);
	CHECK_EQ(dlfs_cache_get(c, 2, NULL, &fk, &b, &err), 0);
	CHECK_EQ(dlfs_cache_get(c, 3, NULL, &fk, &x, &err), 0);
	CHECK(holds_key(&x, 3, SLOT));
	CHECK_EQ(stats(c).bypass, 1);
	CHECK(!dlfs_cache_contains(c, 3)); /* not cached */
	CHECK(holds_key(&a, 1, SLOT) && holds_key(&b, 2, SLOT));
	/* A second reader of the same key gets its own buffer. */
	CHECK_EQ(dlfs_cache_get(c, 3, NULL, &fk, &y, &err), 0);
	CHECK(holds_key(&y, 3, SLOT));
	CHECK(x.data != y.data);
	CHECK_EQ(loads_of(3), 2);
	CHECK_EQ(stats(c).bypass, 2);
	dlfs_cache_put(c, &x, SLOT);
	CHECK(x.data == NULL);
	dlfs_cache_put(c, &y, SLOT);
	/* A failed bypass load frees its buffer and reports the error. */
	pthread_mutex_lock(&fk.mu);
	fk.fail = -EIO;
	fk.fail_key = 4;
	pthread_mutex_unlock(&fk.mu);
	CHECK_EQ(dlfs_cache_get(c, 4, NULL, &fk, &x, &err), -EIO);
	CHECK(x.data == NULL);
	/* The pinned entries were never touched. */
	CHECK(holds_key(&a, 1, SLOT) && holds_key(&b, 2, SLOT));
	CHECK_EQ(stats(c).chunks, 2);
	dlfs_cache_put(c, &a, 0);
	dlfs_cache_put(c, &b, 0);
	fake_reset();
	/* Unpinned again: a miss is cached. */
	CHECK_EQ(touch(c, 3, SLOT), 0);
	CHECK(dlfs_cache_contains(c, 3));
	dlfs_cache_free(c);
}

/* Threads that each keep two pins in a cache of two slots: nobody waits
 * for a slot, so nobody deadlocks; every reader gets its key's bytes. */
#define STRESS_THREADS 4
static struct dlfs_cache *stress_cache;
static _Atomic unsigned stress_bad;

static void *stress_main(void *arg)
{
	uint32_t x = (uint32_t)(uintptr_t)arg * 2654435761u + 1;
	struct dlfs_err err = {0};
	for (int i = 0; i < 2000; i++) {
		struct dlfs_chunk_ref r1, r2;
		x = x * 1103515245u + 12345;
		uint64_t k1 = (x >> 16) % 6, k2 = (x >> 8) % 6;
		if (dlfs_cache_get(stress_cache, k1, NULL, &fk, &r1, &err)) {
			stress_bad++;
			continue;
		}
		if (dlfs_cache_get(stress_cache, k2, NULL, &fk, &r2, &err)) {
			stress_bad++;
		} else {
			if (!holds_key(&r2, k2, SLOT))
				stress_bad++;
			dlfs_cache_put(stress_cache, &r2, SLOT);
		}
		if (!holds_key(&r1, k1, SLOT))
			stress_bad++;
		dlfs_cache_put(stress_cache, &r1, SLOT);
	}
	return NULL;
}

static void test_no_deadlock(void)
{
	pthread_t th[STRESS_THREADS];
	fake_reset();
	stress_cache = new_cache(2);
	alarm(60); /* a deadlock fails the test instead of hanging it */
	for (uintptr_t i = 0; i < STRESS_THREADS; i++)
		if (pthread_create(&th[i], NULL, stress_main, (void *)i))
			abort();
	for (int i = 0; i < STRESS_THREADS; i++)
		pthread_join(th[i], NULL);
	alarm(0);
	CHECK_EQ(stress_bad, 0);
	struct dlfs_cache_stats s = stats(stress_cache);
	CHECK(s.chunks <= 2);
	CHECK_EQ(s.held, 0);
	dlfs_cache_free(stress_cache);
}

/* ---- get_cached ---- */

struct cached_arg {
	struct dlfs_cache *c;
	uint64_t key;
	int ret;
	struct dlfs_chunk_ref ref;
};

static void *get_cached_main(void *arg)
{
	struct cached_arg *a = arg;
	started++;
	a->ret = dlfs_cache_get_cached(a->c, a->key, &a->ref);
	return NULL;
}

static void *get_main(void *arg)
{
	struct cached_arg *a = arg;
	struct dlfs_err err = {0};
	a->ret = dlfs_cache_get(a->c, a->key, NULL, &fk, &a->ref, &err);
	return NULL;
}

static void test_get_cached(void)
{
	struct dlfs_cache *c = new_cache(4);
	struct dlfs_chunk_ref ref;
	fake_reset();
	CHECK_EQ(dlfs_cache_get_cached(c, 5, &ref), -ENOENT);
	CHECK(ref.data == NULL);
	CHECK_EQ(loads_total(), 0);
	CHECK_EQ(stats(c).misses, 0);
	CHECK_EQ(touch(c, 5, 0), 0);
	CHECK_EQ(dlfs_cache_get_cached(c, 5, &ref), 0);
	CHECK(holds_key(&ref, 5, SLOT));
	CHECK_EQ(loads_of(5), 1);
	dlfs_cache_put(c, &ref, 0);

	/* While a load is in progress it waits for it, and loads nothing. */
	struct cached_arg loader = {.c = c, .key = 6};
	struct cached_arg waiter = {.c = c, .key = 6};
	pthread_t t1, t2;
	pthread_mutex_lock(&fk.mu);
	fk.blocked = 1;
	fk.block_key = 6;
	fk.entered = 0;
	pthread_mutex_unlock(&fk.mu);
	started = 0;
	if (pthread_create(&t1, NULL, get_main, &loader))
		abort();
	wait_entered(1);
	if (pthread_create(&t2, NULL, get_cached_main, &waiter))
		abort();
	while (!started)
		sleep_ms(1);
	sleep_ms(20);
	unblock();
	pthread_join(t1, NULL);
	pthread_join(t2, NULL);
	CHECK_EQ(loader.ret, 0);
	CHECK_EQ(waiter.ret, 0);
	CHECK(holds_key(&waiter.ref, 6, SLOT));
	CHECK_EQ(loads_of(6), 1);
	dlfs_cache_put(c, &loader.ref, 0);
	dlfs_cache_put(c, &waiter.ref, 0);
	dlfs_cache_free(c);
}

/* ---- prefetch ---- */

static int prefetch(struct dlfs_cache *c, uint64_t key, unsigned flags,
		    struct dlfs_chunk_ref *hold)
{
	struct dlfs_err err = {0};
	return dlfs_cache_prefetch(c, key, NULL, &fk, flags, hold, &err);
}

static void test_prefetch(void)
{
	struct dlfs_cache *c = new_cache(8);
	struct dlfs_chunk_ref ref;
	struct dlfs_err err = {0};
	fake_reset();
	/* No prefetch allowed until a limit is set. */
	CHECK_EQ(prefetch(c, 1, 0, NULL), -EAGAIN);
	CHECK_EQ(loads_total(), 0);
	dlfs_cache_set_prefetch_limit(c, 2);
	CHECK_EQ(prefetch(c, 1, 0, NULL), 0);
	CHECK_EQ(prefetch(c, 2, 0, NULL), 0);
	CHECK_EQ(prefetch(c, 3, 0, NULL), -EAGAIN); /* two unread: full */
	CHECK_EQ(loads_of(3), 0);
	CHECK(dlfs_cache_contains(c, 1) && dlfs_cache_contains(c, 2));
	struct dlfs_cache_stats s = stats(c);
	CHECK_EQ(s.pf_issued, 2);
	CHECK_EQ(s.pf_pending, 2);
	/* Prefetching what is there loads nothing (even at the limit). */
	CHECK_EQ(prefetch(c, 1, 0, NULL), 0);
	CHECK_EQ(loads_of(1), 1);
	CHECK_EQ(stats(c).pf_issued, 2);

	/* The first demand get uses it; the next is a plain hit. */
	CHECK_EQ(dlfs_cache_get(c, 1, NULL, &fk, &ref, &err), 0);
	CHECK(ref.prefetched);
	CHECK(holds_key(&ref, 1, SLOT));
	dlfs_cache_put(c, &ref, SLOT);
	CHECK_EQ(dlfs_cache_get(c, 1, NULL, &fk, &ref, &err), 0);
	CHECK(!ref.prefetched);
	dlfs_cache_put(c, &ref, SLOT);
	s = stats(c);
	CHECK_EQ(s.pf_used, 1);
	CHECK_EQ(s.pf_pending, 1);
	CHECK_EQ(loads_of(1), 1);
	/* Room for one more. */
	CHECK_EQ(prefetch(c, 3, 0, NULL), 0);
	CHECK_EQ(prefetch(c, 4, 0, NULL), -EAGAIN);
	CHECK_EQ(stats(c).pf_issued, 3);

	/* Evicted unread: wasted. */
	for (uint64_t k = 100; k < 140; k++)
		CHECK_EQ(touch(c, k, SLOT), 0);
	s = stats(c);
	CHECK(!dlfs_cache_contains(c, 2) && !dlfs_cache_contains(c, 3));
	CHECK_EQ(s.pf_wasted, 2);
	CHECK_EQ(s.pf_used, 1);
	CHECK_EQ(s.pf_pending, 0);

	/* A quiet prefetch (a fill) is bounded the same way but never
	 * counted as read-ahead: issued, used or wasted. */
	CHECK_EQ(prefetch(c, 10, DLFS_CACHE_PF_QUIET, NULL), 0);
	CHECK_EQ(prefetch(c, 11, DLFS_CACHE_PF_QUIET, NULL), 0);
	CHECK_EQ(prefetch(c, 12, DLFS_CACHE_PF_QUIET, NULL), -EAGAIN);
	s = stats(c);
	CHECK_EQ(s.pf_issued, 3);
	CHECK_EQ(s.pf_pending, 2);
	CHECK_EQ(dlfs_cache_get(c, 10, NULL, &fk, &ref, &err), 0);
	CHECK(!ref.prefetched);
	dlfs_cache_put(c, &ref, SLOT);
	for (uint64_t k = 200; k < 240; k++)
		CHECK_EQ(touch(c, k, SLOT), 0);
	s = stats(c);
	CHECK(!dlfs_cache_contains(c, 11));
	CHECK_EQ(s.pf_used, 1);
	CHECK_EQ(s.pf_wasted, 2);
	CHECK_EQ(s.pf_pending, 0);
	CHECK_EQ(s.pf_issued, 3);

	/* A failed prefetch is not cached nor pending. */
	pthread_mutex_lock(&fk.mu);
	fk.fail = -EIO;
	fk.fail_key = 13;
	pthread_mutex_unlock(&fk.mu);
	CHECK_EQ(prefetch(c, 13, 0, NULL), -EIO);
	CHECK(!dlfs_cache_contains(c, 13));
	CHECK_EQ(stats(c).pf_pending, 0);

	/* The limit leaves half the slots to demand reads. */
	dlfs_cache_set_prefetch_limit(c, 100);
	int ok = 0;
	for (uint64_t k = 300; k < 310; k++)
		ok += prefetch(c, k, 0, NULL) == 0;
	CHECK_EQ(ok, 4);
	dlfs_cache_free(c);
}

/* A prefetch loaded and kept by the tier below costs nothing when it
 * goes: not pending, not wasted. */
static void test_prefetch_kept(void)
{
	struct dlfs_cache *c = new_cache(8);
	fake_reset();
	fk.kept = 1;
	dlfs_cache_set_prefetch_limit(c, 2);
	for (uint64_t k = 1; k <= 6; k++)
		CHECK_EQ(prefetch(c, k, 0, NULL), 0);
	struct dlfs_cache_stats s = stats(c);
	CHECK_EQ(s.pf_pending, 0);
	CHECK_EQ(s.pf_issued, 6);
	for (uint64_t k = 100; k < 140; k++)
		CHECK_EQ(touch(c, k, 0), 0);
	s = stats(c);
	CHECK_EQ(s.pf_wasted, 0);
	CHECK_EQ(s.evicted_unused_bytes, 0);
	CHECK(s.evicted_bytes > 0);
	dlfs_cache_free(c);
}

static void test_holds(void)
{
	struct dlfs_cache *c = new_cache(8);
	struct dlfs_chunk_ref h1, h2, h3, ref;
	struct dlfs_err err = {0};
	fake_reset();
	dlfs_cache_set_prefetch_limit(c, 2);
	CHECK_EQ(prefetch(c, 1, 0, &h1), 0);
	CHECK(holds_key(&h1, 1, SLOT));
	CHECK_EQ(stats(c).held, 1);
	/* Held, unread: counts against the limit. */
	CHECK_EQ(prefetch(c, 2, 0, &h2), 0);
	CHECK_EQ(prefetch(c, 3, 0, NULL), -EAGAIN);
	CHECK_EQ(stats(c).held, 2);
	/* Read, the hold stays and the limit has room again. */
	CHECK_EQ(dlfs_cache_get(c, 2, NULL, &fk, &ref, &err), 0);
	CHECK(ref.prefetched);
	dlfs_cache_put(c, &ref, SLOT);
	CHECK_EQ(stats(c).held, 2);
	CHECK_EQ(prefetch(c, 3, 0, NULL), 0);
	/* Holds keep their entries however much else is loaded. */
	for (uint64_t k = 100; k < 200; k++) {
		CHECK_EQ(touch(c, k, SLOT), 0);
		CHECK(stats(c).chunks <= 8);
	}
	CHECK(dlfs_cache_contains(c, 1) && dlfs_cache_contains(c, 2));
	CHECK(holds_key(&h1, 1, SLOT) && holds_key(&h2, 2, SLOT));
	CHECK_EQ(loads_of(1), 1);
	CHECK_EQ(loads_of(2), 1);
	/* A hold on what is cached already: no load, held. */
	CHECK_EQ(touch(c, 50, 0), 0);
	CHECK_EQ(prefetch(c, 50, 0, &h3), 0);
	CHECK(holds_key(&h3, 50, SLOT));
	CHECK_EQ(loads_of(50), 1);
	CHECK_EQ(stats(c).held, 3);
	dlfs_cache_put(c, &h1, 0);
	dlfs_cache_put(c, &h2, 0);
	dlfs_cache_put(c, &h3, 0);
	CHECK_EQ(stats(c).held, 0);
	for (uint64_t k = 200; k < 240; k++)
		CHECK_EQ(touch(c, k, SLOT), 0);
	CHECK(!dlfs_cache_contains(c, 1) && !dlfs_cache_contains(c, 2));
	CHECK(!dlfs_cache_contains(c, 50));
	dlfs_cache_free(c);
}

/* ---- served bytes ---- */

static void test_served(void)
{
	struct dlfs_cache *c = new_cache(2);
	struct dlfs_chunk_ref r1, r2;
	struct dlfs_err err = {0};
	fake_reset();
	fk.len = 5000;
	fk.off = 100; /* an entry need not start at its buffer's start */
	uint64_t key = dlfs_cache_chunk_key(4, 2);
	/* Two readers served 1000 and 1500 bytes of it. */
	CHECK_EQ(dlfs_cache_get(c, key, NULL, &fk, &r1, &err), 0);
	CHECK_EQ(dlfs_cache_get(c, key, NULL, &fk, &r2, &err), 0);
	CHECK(holds_key(&r1, key, 5000));
	dlfs_cache_put(c, &r1, 1000);
	dlfs_cache_put(c, &r2, 1500);
	CHECK_EQ(touch(c, dlfs_cache_chunk_key(4, 3), 5000), 0);
	struct dlfs_cache_stats s = stats(c);
	CHECK_EQ(s.evicted_bytes, 0);
	/* Two more fill the slots: the first entry goes. */
	CHECK_EQ(touch(c, dlfs_cache_chunk_key(4, 4), 5000), 0);
	CHECK(!dlfs_cache_contains(c, key));
	s = stats(c);
	CHECK_EQ(s.evicted_bytes, 5000);
	CHECK_EQ(s.evicted_unused_bytes, 5000 - 2500);

	/* File entries: never counted. */
	CHECK_EQ(touch(c, dlfs_cache_file_key(77), 0), 0);
	CHECK_EQ(touch(c, dlfs_cache_file_key(78), 0), 0);
	CHECK_EQ(touch(c, dlfs_cache_file_key(79), 0), 0);
	CHECK_EQ(loads_of(dlfs_cache_file_key(77)), 1);
	CHECK(!dlfs_cache_contains(c, dlfs_cache_file_key(77)));
	s = stats(c);
	/* The two chunk entries went (fully served), then a file entry. */
	CHECK_EQ(s.evicted_bytes, 3 * 5000);
	CHECK_EQ(s.evicted_unused_bytes, 2500);

	/* Kept by the loader: evicted, but nothing unused. */
	fk.kept = 1;
	CHECK_EQ(touch(c, dlfs_cache_chunk_key(5, 0), 10), 0);
	CHECK_EQ(touch(c, dlfs_cache_chunk_key(5, 1), 0), 0);
	fk.kept = 0;
	CHECK_EQ(touch(c, dlfs_cache_chunk_key(5, 2), 0), 0);
	CHECK_EQ(touch(c, dlfs_cache_chunk_key(5, 3), 0), 0);
	s = stats(c);
	CHECK_EQ(s.evicted_bytes, 5 * 5000);
	CHECK_EQ(s.evicted_unused_bytes, 2500);
	dlfs_cache_free(c);
}

/* ---- a hold whose entry is evicted while it waits ---- */

struct holder {
	struct dlfs_cache *c;
	uint64_t key;
	struct dlfs_chunk_ref hold;
	int ret;
};

static void *prefetch_thread(void *arg)
{
	struct holder *h = arg;
	h->ret = prefetch(h->c, h->key, DLFS_CACHE_PF_QUIET, &h->hold);
	return NULL;
}

static void *touch_thread(void *arg)
{
	struct holder *h = arg;
	h->ret = touch(h->c, h->key, SLOT);
	return NULL;
}

/*
 * A prefetch with a hold that finds its key loading (a demand read's) waits
 * for that load.
 * If the entry is evicted before the waiter runs again, there is nothing
 * to hold: it must not return 0 with an empty hold (a background fill
 * once wrote such a zero-length "chunk" to the NVMe tier, which then
 * served zeros). Either it holds the key's bytes or it says -EAGAIN.
 * The eviction races the waiter's wake-up, so the test repeats it: with
 * the fault, 3 to 18 of the 1,000 rounds failed in each of 5 runs.
 */
static void test_hold_evicted(void)
{
	struct dlfs_cache *c = new_cache(2);
	unsigned held = 0, again = 0;
	dlfs_cache_set_prefetch_limit(c, 2);
	for (unsigned i = 0; i < 1000; i++) {
		uint64_t key = 1000 + i;
		fake_reset();
		pthread_mutex_lock(&fk.mu);
		fk.block_key = key;
		fk.blocked = 1;
		pthread_mutex_unlock(&fk.mu);
		struct holder a = {.c = c, .key = key};
		struct holder b = {.c = c, .key = key};
		pthread_t ta, tb;
		CHECK_EQ(pthread_create(&ta, NULL, touch_thread, &a), 0);
		wait_entered(1);
		CHECK_EQ(pthread_create(&tb, NULL, prefetch_thread, &b), 0);
		sleep_ms(1); /* odds only: b is then likelier to be waiting */
		unblock();
		/* Evict it at once: two other keys fill both slots. */
		CHECK_EQ(touch(c, 5000 + 2 * i, SLOT), 0);
		CHECK_EQ(touch(c, 5001 + 2 * i, SLOT), 0);
		pthread_join(ta, NULL);
		pthread_join(tb, NULL);
		CHECK_EQ(a.ret, 0);
		if (b.ret == 0) {
			CHECK(holds_key(&b.hold, key, SLOT));
			held++;
		} else {
			CHECK_EQ(b.ret, -EAGAIN);
			CHECK(!b.hold.data);
			again++;
		}
		dlfs_cache_put(c, &b.hold, 0);
	}
	fprintf(stderr, "hold_evicted: %u held, %u -EAGAIN\n", held, again);
	CHECK_EQ(stats(c).held, 0);
	dlfs_cache_free(c);
}

int main(void)
{
	pthread_mutex_init(&fk.mu, NULL);
	pthread_cond_init(&fk.cv, NULL);
	test_single_flight();
	test_failed_load();
	test_pinning();
	test_clock();
	test_bypass();
	test_no_deadlock();
	test_get_cached();
	test_prefetch();
	test_prefetch_kept();
	test_holds();
	test_hold_evicted();
	test_served();
	pthread_mutex_destroy(&fk.mu);
	pthread_cond_destroy(&fk.cv);
	return t_done("test_cache");
}
