/*
 * The ingest's workers (ingest.h): one process per rank, or forked
 * processes sharing a counter, each turning its sources into its spool
 * and list (sink.h); what the coordinator keeps of the run.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "h5lib.h"
#include "h5split.h"
#include "ingest_priv.h"
#include "lmdbsrc.h"
#include "util.h"

#define MAX_PROCS 256

/* Shared by the workers of one run (MAP_SHARED when forked). */
struct shared {
	_Atomic uint32_t next; /* next ingest source to take */
	_Atomic int stop;
	_Atomic uint32_t done;
	_Atomic uint64_t bytes;
};

struct run {
	struct pk_source *src;
	const char *dir;
	const struct dlfs_pack_opts *o;
	unsigned *list;  /* the ingest sources, in source order */
	unsigned nlist;
	unsigned nw;     /* workers */
	int dynamic;     /* take from sh->next; else the static owner */
	struct shared *sh;
	int32_t *owner;  /* per list position: its worker */
	int32_t *fail_k; /* per worker: the list position that failed */
	struct dlfs_err *fail; /* per worker */
	size_t map_len;
	void *map;
};

/* Take the next list position for worker w; nlist when none is left. */
static unsigned next_source(struct run *r, unsigned w, unsigned prev)
{
	if (atomic_load(&r->sh->stop))
		return r->nlist;
	if (r->dynamic) {
		unsigned k = atomic_fetch_add(&r->sh->next, 1);
		if (k < r->nlist)
			r->owner[k] = (int32_t)w;
		return k < r->nlist ? k : r->nlist;
	}
	for (unsigned k = prev + 1; k < r->nlist; k++)
		if (r->owner[k] == (int32_t)w)
			return k;
	return r->nlist;
}

int pk_ingest_one(const struct pk_source *s, unsigned i,
		  const struct dlfs_pack_opts *o, struct pk_sink *sink,
		  struct dlfs_err *err)
{
	char *data = NULL;
	struct stat st;
	int ret = 0;
	if (s->kind != PK_SRC_HDF5 &&
	    pk_lmdb_data_path(s->path, s->kind == PK_SRC_LMDB, &data))
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	if (stat(data ? data : s->path, &st) < 0) {
		ret = dlfs_err_sys(err, -errno, "%s", data ? data : s->path);
		goto out;
	}
	ret = pk_sink_source(sink, s->path, i, st.st_mode & 07777,
			     st.st_mtim.tv_sec, (uint32_t)st.st_mtim.tv_nsec,
			     data, err);
	if (ret)
		goto out;
	if (s->kind == PK_SRC_HDF5) {
		struct pk_h5_split_opts h = {.datasets = o->hdf5_datasets,
					     .format = o->sample_format,
					     .whole_below = o->hdf5_split_min};
		ret = pk_h5_split(s->path, s->top, &h, sink, err);
	} else {
		ret = pk_lmdb_ingest(s->path, s->kind == PK_SRC_LMDB, s->top,
				     sink, err);
	}
	if (!ret)
		ret = pk_sink_done(sink, err);
out:
	free(data);
	return ret;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void report(struct run *r)
{
	if (!r->o->progress)
		return;
	struct dlfs_pack_progress p = {
		.files_done = atomic_load(&r->sh->done),
		.files_total = r->nlist,
		.bytes_done = atomic_load(&r->sh->bytes),
		.phase = "ingest",
	};
	r->o->progress(r->o->cb_arg, &p);
}

/* Worker w: its sources into its spool and list. @return 0 or -errno. */
static int worker(struct run *r, unsigned w, int reporter)
{
	char spool[4096], list[4096];
	struct pk_sink sink;
	struct pk_h5_state hs = {0};
	struct dlfs_err *err = &r->fail[w];
	unsigned k = (unsigned)-1;
	double last = now();
	snprintf(spool, sizeof(spool), "%s/ingest-%u.spool", r->dir, w);
	snprintf(list, sizeof(list), "%s/ingest-%u.list", r->dir, w);
	int ret = pk_sink_open(&sink, spool, list, err);
	sink.cancel = r->o->cancel;
	sink.stop = &r->sh->stop;
	sink.bytes = &r->sh->bytes;
	if (!ret)
		ret = pk_h5_begin(&hs, err);
	while (!ret && (k = next_source(r, w, k)) < r->nlist) {
		ret = pk_ingest_one(&r->src[r->list[k]], r->list[k], r->o,
				    &sink, err);
		if (ret)
			r->fail_k[w] = (int32_t)k;
		atomic_fetch_add(&r->sh->done, 1);
		if (reporter && now() - last > 0.2) {
			report(r);
			last = now();
		}
	}
	struct dlfs_err e2 = {0};
	int r2 = pk_sink_close(&sink, &e2); /* also after a failed open */
	if (r2 && !ret) {
		ret = r2;
		*err = e2;
	}
	pk_h5_end(&hs);
	if (ret) {
		if (r->fail_k[w] < 0)
			r->fail_k[w] = (int32_t)r->nlist; /* not a source's */
		atomic_store(&r->sh->stop, 1);
	}
	return ret;
}

/* The failure to report: the first source's that is not a knock-on. */
static int first_failure(struct run *r, struct dlfs_err *err)
{
	int best = -1;
	for (unsigned w = 0; w < r->nw; w++) {
		if (!r->fail[w].code)
			continue;
		if (best < 0 ||
		    (r->fail[best].code == -ECANCELED &&
		     r->fail[w].code != -ECANCELED) ||
		    ((r->fail[w].code == -ECANCELED) ==
			     (r->fail[best].code == -ECANCELED) &&
		     r->fail_k[w] < r->fail_k[best]))
			best = (int)w;
	}
	if (best < 0)
		return 0;
	if (err)
		*err = r->fail[best];
	return r->fail[best].code;
}

/* Fork the workers into pids; *started says how many run. One that
 * cannot be started stops those that were. */
static int fork_workers(struct run *r, pid_t *pids, unsigned *started,
			struct dlfs_err *err)
{
	pid_t parent = getpid();
	fflush(NULL); /* nothing buffered may be written twice */
	for (; *started < r->nw; (*started)++) {
		pid_t p = fork();
		if (p < 0) {
			int ret = dlfs_err_sys(err, -errno, "starting ingest "
					       "worker %u", *started);
			atomic_store(&r->sh->stop, 1);
			return ret;
		}
		if (p == 0) {
			/* A worker dies with its parent, whatever kills it. */
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			if (getppid() != parent)
				_exit(3);
			_exit(worker(r, *started, 0) ? 1 : 0);
		}
		pids[*started] = p;
	}
	return 0;
}

/*
 * Wait for the n started workers, reporting progress and passing a
 * cancel on to them. ret is the run's failure so far; a worker killed by
 * a signal becomes it, unless the run failed or was cancelled before.
 */
static int reap_workers(struct run *r, pid_t *pids, unsigned n, int ret,
			int *cancelled, struct dlfs_err *err)
{
	double last = 0;
	for (unsigned left = n; left;) {
		for (unsigned w = 0; w < n; w++) {
			int st;
			if (!pids[w] || waitpid(pids[w], &st, WNOHANG) != pids[w])
				continue;
			pids[w] = 0;
			left--;
			if (WIFSIGNALED(st) && !ret && !*cancelled) {
				ret = dlfs_err_set(err, -EIO,
						   "ingest worker %u was killed "
						   "by signal %d (%s)",
						   w, WTERMSIG(st),
						   strsignal(WTERMSIG(st)));
				atomic_store(&r->sh->stop, 1);
			}
		}
		if (r->o->cancel && *r->o->cancel) {
			*cancelled = 1;
			atomic_store(&r->sh->stop, 1);
		}
		if (now() - last > 0.2) {
			report(r);
			last = now();
		}
		if (left)
			usleep(20000);
	}
	return ret;
}

static int run_forked(struct run *r, struct dlfs_err *err)
{
	pid_t *pids = calloc(r->nw, sizeof(*pids));
	unsigned started = 0;
	int cancelled = 0;
	if (!pids)
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	int ret = fork_workers(r, pids, &started, err);
	ret = reap_workers(r, pids, started, ret, &cancelled, err);
	free(pids);
	if (!ret)
		ret = first_failure(r, err);
	if (!ret && cancelled)
		ret = dlfs_err_set(err, -ECANCELED, "cancelled");
	return ret;
}

/* Largest first, each to the least loaded rank: the same on every rank. */
static void share_out(struct run *r)
{
	uint64_t *load = calloc(r->nw, sizeof(*load));
	unsigned *ord = malloc(r->nlist * sizeof(*ord));
	if (!load || !ord) { /* fall back to round robin */
		for (unsigned k = 0; k < r->nlist; k++)
			r->owner[k] = (int32_t)(k % r->nw);
		goto out;
	}
	for (unsigned k = 0; k < r->nlist; k++)
		ord[k] = k;
	for (unsigned a = 1; a < r->nlist; a++) { /* stable insertion sort */
		unsigned x = ord[a], b = a;
		uint64_t sx = r->src[r->list[x]].size;
		while (b > 0 && r->src[r->list[ord[b - 1]]].size < sx) {
			ord[b] = ord[b - 1];
			b--;
		}
		ord[b] = x;
	}
	for (unsigned a = 0; a < r->nlist; a++) {
		unsigned best = 0;
		for (unsigned w = 1; w < r->nw; w++)
			if (load[w] < load[best])
				best = w;
		r->owner[ord[a]] = (int32_t)best;
		load[best] += r->src[r->list[ord[a]]].size + 1;
	}
out:
	free(load);
	free(ord);
}

/* How many workers, and how they take sources: one per rank, shared out
 * by size; else up to procs (or one per CPU), from a shared counter. */
static void count_workers(struct run *r)
{
	const struct dlfs_pack_comm *c = r->o->comm;
	if (c && c->size > 1) {
		r->nw = (unsigned)c->size;
		return;
	}
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	r->nw = r->o->procs ? r->o->procs : cpus > 0 ? (unsigned)cpus : 1;
	if (r->nw > r->nlist)
		r->nw = r->nlist;
	if (r->nw > MAX_PROCS)
		r->nw = MAX_PROCS;
	r->dynamic = 1;
}

/* The run's shared map (struct shared, owner, fail_k, fail) and its list
 * of the n sources' ingest ones. */
static int run_alloc(struct run *r, unsigned n, struct dlfs_err *err)
{
	r->map_len = sizeof(struct shared) + r->nlist * sizeof(int32_t) +
		     r->nw * sizeof(int32_t) + r->nw * sizeof(struct dlfs_err);
	r->map = mmap(NULL, r->map_len, PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	r->list = malloc(r->nlist * sizeof(*r->list));
	if (r->map == MAP_FAILED || !r->list) {
		if (r->map != MAP_FAILED)
			munmap(r->map, r->map_len);
		r->map = MAP_FAILED;
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	}
	r->sh = r->map;
	r->owner = (int32_t *)(r->sh + 1);
	r->fail_k = r->owner + r->nlist;
	r->fail = (struct dlfs_err *)(r->fail_k + r->nw);
	for (unsigned i = 0, k = 0; i < n; i++)
		if (pk_src_ingested(&r->src[i]))
			r->list[k++] = i;
	for (unsigned w = 0; w < r->nw; w++)
		r->fail_k[w] = -1;
	return 0;
}

/* This process's part: its rank's worker, the one worker in this
 * process, or forked workers; then the last progress report. */
static int run_workers(struct run *r, struct dlfs_err *err)
{
	const struct dlfs_pack_comm *c = r->o->comm;
	int ret;
	if (!r->dynamic) {
		share_out(r);
		ret = worker(r, (unsigned)c->rank, c->rank == 0);
		if (ret)
			*err = r->fail[c->rank];
	} else if (r->nw == 1) {
		ret = worker(r, 0, 1);
		if (ret)
			*err = r->fail[0];
	} else {
		ret = run_forked(r, err);
	}
	report(r);
	return ret;
}

/* What the coordinator keeps of the run: which worker's list holds each
 * of the n sources; each ingest source points to it. */
static int keep_owners(struct run *r, unsigned n, struct pk_ingest **out,
		       struct dlfs_err *err)
{
	struct pk_ingest *ing = calloc(1, sizeof(*ing));
	if (!ing || !(ing->owner = malloc(n * sizeof(*ing->owner))) ||
	    !(ing->lists = calloc(r->nw, sizeof(*ing->lists))) ||
	    !(ing->spool = calloc(r->nw, sizeof(*ing->spool)))) {
		pk_ingest_free(ing, 0);
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	}
	ing->dir = r->dir;
	ing->nw = r->nw;
	for (unsigned i = 0; i < n; i++)
		ing->owner[i] = -1;
	for (unsigned k = 0; k < r->nlist; k++) {
		ing->owner[r->list[k]] = r->owner[k];
		r->src[r->list[k]].ing = ing;
	}
	*out = ing;
	return 0;
}

int pk_ingest_run(struct pk_source *src, unsigned n, const char *dir,
		  const struct dlfs_pack_opts *o, struct pk_ingest **out,
		  struct dlfs_err *err)
{
	const struct dlfs_pack_comm *c = o->comm;
	struct run r = {.src = src, .dir = dir, .o = o};
	*out = NULL;
	r.nlist = pk_ingest_count(src, n);
	if (!r.nlist)
		return 0;
	count_workers(&r);
	int ret = run_alloc(&r, n, err);
	if (!ret)
		ret = run_workers(&r, err);
	if (!ret && !(c && c->rank != 0)) /* *out is rank 0's only */
		ret = keep_owners(&r, n, out, err);
	if (r.map != MAP_FAILED && r.map)
		munmap(r.map, r.map_len);
	free(r.list);
	return ret;
}
