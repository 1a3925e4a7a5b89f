/*
 * What this rank knows of the others: the clock, each chunk's home, who
 * was heard from and when, the silence after which a rank is gone, and
 * where a gone home's chunks go (peer_state_priv.h). Every file of the MPI
 * peer layer uses these; this file uses none of them.
 */
#include "peer_state_priv.h"

#include <time.h>

double dlfs_peer_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

unsigned dlfs_peer_home(const struct dlfs_peer *p, uint64_t g)
{
	if (!p || !p->conf.n_chunks)
		return 0;
	return (unsigned)((unsigned __int128)g * p->size / p->conf.n_chunks);
}

void dlfs_peer_heard(struct dlfs_peer *p, unsigned src, double now)
{
	if (src >= p->size)
		return;
	struct rank_state *rs = &p->ranks[src];
	if (rs->waiting) {
		double from = rs->heard > rs->since ? rs->heard : rs->since;
		if (now - from > rs->gap_max)
			rs->gap_max = now - from;
	}
	rs->heard = now;
	if (rs->gone) {
		rs->gone = 0;
		p->st.back++;
	}
}

/* How long rank r may be silent while this one waits on it before it is
 * gone: the option, or SILENCE_GAPS times its longest silence so far,
 * whichever is longer, but never more than ten times the option. */
double dlfs_peer_silence_limit(const struct dlfs_peer *p, unsigned r)
{
	double floor = p->conf.timeout_ms / 1000.0;
	double seen = SILENCE_GAPS * p->ranks[r].gap_max;
	return seen < floor ? floor : seen > 10 * floor ? 10 * floor : seen;
}

/* Has rank r been silent past its limit while this one waits on it? */
double dlfs_peer_silent_for(const struct dlfs_peer *p, unsigned r, double now)
{
	const struct rank_state *rs = &p->ranks[r];
	double from = rs->heard > rs->since ? rs->heard : rs->since;
	return rs->waiting ? now - from : 0;
}

/* Where to ask for chunk g: its home, or the home's substitute when it
 * is gone, the next rank after it that is not (this one, possibly). */
unsigned dlfs_peer_route(const struct dlfs_peer *p, uint64_t g)
{
	unsigned h = dlfs_peer_home(p, g);
	for (unsigned i = 0; i < p->size; i++) {
		unsigned r = (h + i) % p->size;
		if (r == p->rank || !p->ranks[r].gone)
			return r;
	}
	return p->rank;
}
