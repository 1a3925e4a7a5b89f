/*
 * An in-place dataset's archives indexed in parallel (inplace.h).
 *
 * Within a process, worker threads take this rank's archives in order
 * from a counter, each reading whole archives into parts
 * (inplace_part.h), while the calling thread waits for the parts in
 * archive order, puts them into the tree (rank 0) and reports progress.
 * On rank 0 a worker hands its part over in pieces as it reads, and the
 * calling thread applies each piece as it comes: the tree grows while
 * the archive is read, on the other CPU, and a large archive's part is
 * never held whole (it is some 80 bytes a member).
 * Threads, not processes: the walk and hash need no library lock (HDF5's
 * is why the ingest forks), and a part is handed over in memory. A
 * worker that meets a failed archive takes no archive after it: the
 * failure is the pack's, and nothing later is applied. Parts that wait
 * for an earlier, larger archive are held in memory meanwhile; each is
 * some 60 bytes and a name a member, the index's order.
 *
 * Between ranks, each takes a contiguous range of the archives,
 * balanced by bytes (rank 0 the first), and rank 0 receives the others'
 * parts, a rank at a time, each part as its length then its bytes.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "inplace_part.h"
#include "pipe.h"

/* How often the waiting thread reports progress and looks at the
 * cancel flag. */
#define TICK_NS 250000000L
#define MAX_WORKERS 256
/* The most bytes of an archive's pieces waiting to be applied: a worker
 * that reads faster than the tree grows waits, rather than holding the
 * part whole after all. */
#define QUEUE_MAX (4 * PK_IP_PIECE)

/* A piece of a part, handed over (pk_ip_sink). */
struct piece {
	struct piece *next;
	struct dlfs_str s;
};

/* The workers of one rank and what they share. */
struct pool {
	const struct pk_source *src;
	uint32_t lo, hi;       /* this rank's archives */
	struct dlfs_str *part; /* part[i - lo] */
	int stream;            /* parts handed over in pieces (rank 0) */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	/* Under mu: the pieces handed over and not taken yet, per archive
	 * (head[i - lo], oldest first, and tail[i - lo]); which parts are
	 * done (every piece handed over), the next archive to take, the
	 * first that failed (hi when none), a part out of memory. */
	struct piece **head, **tail;
	size_t *queued; /* bytes in head[i - lo]'s pieces */
	uint8_t *done;
	uint32_t next, fail;
	int oom;
	volatile sig_atomic_t stop; /* the workers' cancel flag */
	struct dlfs_pack_opts wo;   /* o, with cancel = &stop */
	struct pk_ip_counters cnt;
	pthread_t th[MAX_WORKERS];
	unsigned nth;
	int started; /* mu and cv made */
};

/* What the progress line counts from. */
struct prog {
	const struct dlfs_pack_opts *o;
	uint64_t files, bytes, total; /* before the pool's counters */
};

static void report(const struct prog *g, const struct pk_ip_counters *c)
{
	struct dlfs_pack_progress pr = {.phase = "scan",
					.bytes_total = g->total};
	if (!g->o->progress)
		return;
	pr.files_done = g->files;
	pr.bytes_done = g->bytes;
	if (c) {
		pr.files_done += atomic_load(&c->files);
		pr.bytes_done += atomic_load(&c->bytes);
	}
	g->o->progress(g->o->cb_arg, &pr);
}

/* What a worker's sink hands pieces to: archive i of the pool. */
struct giver {
	struct pool *p;
	uint32_t i;
};

/* A piece into archive g->i's queue (pk_ip_sink). */
static int give_piece(void *arg, struct dlfs_str *s)
{
	struct giver *g = arg;
	struct pool *p = g->p;
	struct piece *pc = malloc(sizeof(*pc));
	if (!pc)
		return -ENOMEM;
	pc->next = NULL;
	pc->s = *s;
	memset(s, 0, sizeof(*s));
	pthread_mutex_lock(&p->mu);
	uint32_t k = g->i - p->lo;
	/* The calling thread takes archive k's pieces, or an earlier
	 * archive's, whose worker never waits here for k: it drains. */
	while (p->queued[k] >= QUEUE_MAX && !p->stop)
		pthread_cond_wait(&p->cv, &p->mu);
	if (p->tail[k])
		p->tail[k]->next = pc;
	else
		p->head[k] = pc;
	p->tail[k] = pc;
	p->queued[k] += pc->s.n;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	return 0;
}

static void piece_free(struct piece *pc)
{
	if (pc)
		dlfs_str_free(&pc->s);
	free(pc);
}

static void *worker(void *arg)
{
	struct pool *p = arg;
	pthread_mutex_lock(&p->mu);
	while (p->next < p->hi) {
		uint32_t i = p->next++;
		int skip = i > p->fail || p->stop;
		struct giver g = {p, i};
		struct pk_ip_sink sink = {give_piece, &g};
		pthread_mutex_unlock(&p->mu);
		int ret = skip ? 0
			       : pk_ip_part_make(p->src[i].path, &p->wo,
						 &p->cnt,
						 p->stream ? &sink : NULL,
						 &p->part[i - p->lo]);
		pthread_mutex_lock(&p->mu);
		if (ret && i < p->fail)
			p->fail = i;
		p->oom |= ret < 0;
		p->done[i - p->lo] = 1;
		pthread_cond_broadcast(&p->cv);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

/* The pool for archives [lo, hi), its workers started. */
static int pool_start(struct pool *p, const struct pk_source *src, uint32_t lo,
		      uint32_t hi, int stream, const struct dlfs_pack_opts *o,
		      struct dlfs_err *err)
{
	unsigned want = o->procs ? o->procs : pk_cpus_here();
	memset(p, 0, sizeof(*p));
	p->src = src;
	p->stream = stream;
	p->lo = p->next = lo;
	p->hi = p->fail = hi;
	p->wo = *o;
	p->wo.cancel = &p->stop;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	p->started = 1;
	p->part = calloc(hi - lo + 1, sizeof(*p->part));
	p->head = calloc(hi - lo + 1, sizeof(*p->head));
	p->tail = calloc(hi - lo + 1, sizeof(*p->tail));
	p->queued = calloc(hi - lo + 1, sizeof(*p->queued));
	p->done = calloc(hi - lo + 1, 1);
	if (!p->part || !p->head || !p->tail || !p->queued || !p->done)
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	if (want > hi - lo)
		want = hi - lo;
	if (want > MAX_WORKERS)
		want = MAX_WORKERS;
	for (unsigned k = 0; k < want; k++) {
		int rc = pthread_create(&p->th[p->nth], NULL, worker, p);
		if (rc && !p->nth)
			return dlfs_err_sys(err, -rc, "starting a thread");
		if (rc)
			break; /* fewer workers do the same work */
		p->nth++;
	}
	return 0;
}

/* Stop taking archives, join the workers, free what is left. */
static void pool_end(struct pool *p)
{
	if (!p->started)
		return;
	pthread_mutex_lock(&p->mu);
	p->stop = 1; /* and a worker waiting for room wakes */
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	for (unsigned k = 0; k < p->nth; k++)
		pthread_join(p->th[k], NULL);
	for (uint32_t i = p->lo; p->part && i < p->hi; i++)
		dlfs_str_free(&p->part[i - p->lo]);
	for (uint32_t i = p->lo; p->head && i < p->hi; i++)
		while (p->head[i - p->lo]) {
			struct piece *pc = p->head[i - p->lo];
			p->head[i - p->lo] = pc->next;
			piece_free(pc);
		}
	free(p->part);
	free(p->head);
	free(p->tail);
	free(p->queued);
	free(p->done);
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->mu);
}

/* Wait until archive i's part is done or a piece of it is there,
 * reporting progress meanwhile and passing a cancel on to the workers.
 * *pc is the oldest piece, taken, or NULL once the part is done and
 * every piece taken. @return 0, -ECANCELED or -ENOMEM. */
static int wait_part(struct pool *p, uint32_t i, const struct prog *g,
		     struct piece **pc)
{
	const struct dlfs_pack_opts *o = g->o;
	const uint32_t k = i - p->lo;
	int ret = 0;
	*pc = NULL;
	pthread_mutex_lock(&p->mu);
	while (!p->done[k] && !p->head[k] && !ret) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += TICK_NS;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		if (pthread_cond_timedwait(&p->cv, &p->mu, &ts) != ETIMEDOUT)
			continue;
		pthread_mutex_unlock(&p->mu);
		report(g, &p->cnt);
		if (o->cancel && *o->cancel) {
			p->stop = 1;
			ret = -ECANCELED;
		}
		pthread_mutex_lock(&p->mu);
	}
	if (!ret && p->head[k]) {
		*pc = p->head[k];
		if (!(p->head[k] = (*pc)->next))
			p->tail[k] = NULL;
		p->queued[k] -= (*pc)->s.n;
		pthread_cond_broadcast(&p->cv); /* room for its worker */
	} else if (!ret && p->oom) {
		ret = -ENOMEM;
	}
	pthread_mutex_unlock(&p->mu);
	return ret;
}

/* Archives [share[r], share[r + 1]) are rank r's, balanced by bytes;
 * rank 0 has archive 0 (share has size + 1). */
static void share_out(const struct pk_source *src, unsigned n, int size,
		      uint32_t *share)
{
	uint64_t total = 0, cum = n ? src[0].size : 0;
	uint32_t k = n ? 1 : 0;
	for (unsigned i = 0; i < n; i++)
		total += src[i].size;
	share[0] = 0;
	share[size] = n;
	for (int r = 1; r < size; r++) {
		uint64_t want = (uint64_t)((double)total * r / size);
		while (k < n && cum < want)
			cum += src[k++].size;
		share[r] = k;
	}
}

static uint64_t total_bytes(const struct pk_source *src, unsigned n)
{
	uint64_t total = 0;
	for (unsigned i = 0; i < n; i++)
		total += src[i].size;
	return total;
}

/* Rank 0: archive i's part into t and ip, a piece at a time as its
 * worker hands them over. */
static int apply_part(struct pool *p, uint32_t i, const struct prog *g,
		      struct pk_tree *t, const char *out, struct pk_inplace *ip,
		      struct dlfs_err *err)
{
	struct pk_ip_apply x;
	struct piece *pc;
	int ret;
	pk_ip_apply_begin(&x, t, ip, i, p->src[i].path, out, g->o);
	while (!(ret = wait_part(p, i, g, &pc)) && pc) {
		ret = pk_ip_apply_piece(&x, pc->s.s, pc->s.n, err);
		piece_free(pc);
		if (ret)
			return ret;
	}
	if (ret)
		return dlfs_err_set(err, ret,
				    ret == -ECANCELED ? "cancelled"
						      : "out of memory");
	return pk_ip_apply_end(&x, err);
}

/* The parts of [p->lo, p->hi) in order: into t and ip on rank 0, kept
 * whole in ip on the others. */
static int take_parts(struct pool *p, int rank, struct pk_tree *t,
		      const char *out, const struct dlfs_pack_opts *o,
		      struct pk_inplace *ip, struct dlfs_err *err)
{
	struct prog g = {.o = o, .total = total_bytes(p->src, ip->n)};
	struct piece *none;
	int ret = 0;
	for (uint32_t i = p->lo; i < p->hi && !ret; i++) {
		if (rank == 0)
			ret = apply_part(p, i, &g, t, out, ip, err);
		else if ((ret = wait_part(p, i, &g, &none)))
			dlfs_err_set(err, ret,
				     ret == -ECANCELED ? "cancelled"
						       : "out of memory");
	}
	if (!ret && rank != 0) { /* the parts move to ip */
		ip->part = p->part;
		ip->part0 = p->lo;
		ip->part1 = p->hi;
		p->part = NULL;
	}
	report(&g, &p->cnt);
	return ret;
}

int pk_inplace_index(const struct dlfs_pack_comm *c, struct pk_tree *t,
		     const struct pk_source *src, unsigned n, const char *out,
		     const struct dlfs_pack_opts *o, struct pk_inplace *ip,
		     struct dlfs_err *err)
{
	int size = c ? c->size : 1, rank = c ? c->rank : 0, ret;
	uint32_t *share = calloc((size_t)size + 1, sizeof(*share));
	struct pool p = {0};
	memset(ip, 0, sizeof(*ip));
	if (n > DLFS_MAX_CONTAINERS) {
		free(share);
		return dlfs_err_set(err, -EFBIG,
				    "%u archives: an in-place dataset holds "
				    "at most %d",
				    n, DLFS_MAX_CONTAINERS);
	}
	ip->arc = calloc(n ? n : 1, sizeof(*ip->arc));
	ip->n = n;
	if (!ip->arc || !share) {
		free(share);
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	}
	share_out(src, n, size, share);
	struct pk_entry *root;
	struct pk_attr *ra;
	ret = rank == 0 ? pk_tree_root(t, &root, &ra, err) : 0;
	if (!ret)
		ret = pool_start(&p, src, share[rank], share[rank + 1],
				 rank == 0, o, err);
	if (!ret)
		ret = take_parts(&p, rank, t, out, o, ip, err);
	pool_end(&p);
	free(share);
	return ret;
}

/* Rank 0: the part of archive i from rank r, into t and ip unless an
 * earlier one failed (*ret). @return 0, or a failure to receive it. */
static int recv_part(const struct dlfs_pack_comm *c, int r, uint32_t i,
		     struct pk_tree *t, const struct pk_source *src,
		     const char *out, const struct dlfs_pack_opts *o,
		     struct pk_inplace *ip, int *ret, struct dlfs_err *err)
{
	struct dlfs_str part = {0};
	uint64_t len;
	int rc = c->recv(c->arg, &len, sizeof(len), r);
	if (!rc && !(part.s = malloc(len ? len : 1)))
		rc = -ENOMEM;
	if (!rc && len)
		rc = c->recv(c->arg, part.s, len, r);
	part.n = part.cap = len;
	if (!rc && !*ret)
		*ret = pk_ip_part_apply(t, ip, i, src[i].path, out, &part, o,
					err);
	dlfs_str_free(&part);
	if (rc && !*ret)
		*ret = dlfs_err_set(err, rc,
				    "receiving archive %s's index "
				    "from rank %d",
				    src[i].path, r);
	return rc;
}

/* A rank's parts to rank 0, in archive order. */
static int send_parts(const struct dlfs_pack_comm *c, struct pk_inplace *ip,
		      struct dlfs_err *err)
{
	int rc = 0;
	for (uint32_t i = ip->part0; i < ip->part1 && !rc; i++) {
		const struct dlfs_str *part = &ip->part[i - ip->part0];
		uint64_t len = part->n;
		rc = c->send(c->arg, &len, sizeof(len), 0);
		if (!rc && len)
			rc = c->send(c->arg, part->s, part->n, 0);
	}
	return rc ? dlfs_err_set(err, rc,
				 "sending the archives' index to "
				 "rank 0")
		  : 0;
}

int pk_inplace_gather(const struct dlfs_pack_comm *c, struct pk_tree *t,
		      const struct pk_source *src, unsigned n, const char *out,
		      const struct dlfs_pack_opts *o, struct pk_inplace *ip,
		      struct dlfs_err *err)
{
	if (c->rank != 0) {
		int ret = send_parts(c, ip, err);
		for (uint32_t i = ip->part0; i < ip->part1; i++)
			dlfs_str_free(&ip->part[i - ip->part0]);
		return ret;
	}
	uint32_t *share = calloc((size_t)c->size + 1, sizeof(*share));
	struct prog g = {.o = o, .total = total_bytes(src, n)};
	int ret = share ? 0 : dlfs_err_set(err, -ENOMEM, "out of memory");
	if (share)
		share_out(src, n, c->size, share);
	for (uint32_t i = 0; share && i < share[1]; i++)
		g.bytes += src[i].size;
	/* Every part is received, even after a failure, so no rank waits
	 * on a send; none is applied past the first failure. */
	for (int r = 1; share && r < c->size; r++)
		for (uint32_t i = share[r]; i < share[r + 1]; i++) {
			if (recv_part(c, r, i, t, src, out, o, ip, &ret, err))
				goto out;
			g.files = ip->files;
			g.bytes += src[i].size;
			report(&g, NULL);
		}
out:
	free(share);
	return ret;
}
