/* Ingest workers and their results: see ingest.h. */
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

#include "dlfs/format.h"
#include "h5lib.h"
#include "h5split.h"
#include "ingest.h"
#include "lmdbsrc.h"
#include "sink.h"
#include "util.h"

#define MAX_PROCS 256

/* ---- classifying sources ---- */

int pk_hdf5_signature(int fd, uint64_t size)
{
	/* At 0, or after a user block: 512, 1024, 2048, ... bytes. */
	for (uint64_t at = 0; at + 8 <= size; at = at ? at * 2 : 512) {
		unsigned char b[8];
		if (dlfs_pread_full(fd, b, 8, at) != 8)
			return 0;
		if (!memcmp(b, "\x89HDF\r\n\x1a\n", 8))
			return 1;
	}
	return 0;
}

static int has_lmdb_magic(int fd)
{
	/* The first meta page: a 16-byte page header, then the magic. */
	unsigned char b[20];
	return dlfs_pread_full(fd, b, 20, 0) == 20 &&
	       dlfs_get_le32(b + 16) == 0xBEEFC0DE;
}

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);
	return n > k && !strcmp(s + n - k, suffix);
}

static const char *const h5_ext[] = {".h5", ".hdf5", ".hdf", ".he5", ".nc",
				     ".nc4", NULL};
static const char *const lmdb_ext[] = {".lmdb", ".mdb", NULL};

int pk_hdf5_name(const char *name)
{
	for (const char *const *e = h5_ext; *e; e++)
		if (ends_with(name, *e))
			return 1;
	return 0;
}

/* The last component of path, without trailing slashes, malloc'd. */
static char *base_name(const char *path)
{
	size_t n = strlen(path);
	while (n > 1 && path[n - 1] == '/')
		n--;
	const char *b = path + n;
	while (b > path && b[-1] != '/')
		b--;
	char *s = strndup(b, (size_t)(path + n - b));
	if (s && (!strcmp(s, ".") || !strcmp(s, ".."))) {
		char *r = realpath(path, NULL);
		free(s);
		s = r ? base_name(r) : NULL;
		free(r);
	}
	return s;
}

static int make_top(struct pk_source *s, struct dlfs_err *err)
{
	int lmdb = s->kind != PK_SRC_HDF5;
	char *b = base_name(s->path);
	if (b && lmdb && s->kind == PK_SRC_LMDB_FILE && !strcmp(b, "data.mdb")) {
		/* env/data.mdb given as a file: name it after env. */
		char *dir = strdup(s->path);
		char *slash = dir ? strrchr(dir, '/') : NULL;
		free(b);
		b = NULL;
		if (dir) {
			if (slash)
				*slash = '\0';
			b = base_name(slash ? (*dir ? dir : "/") : ".");
		}
		free(dir);
	}
	if (!b)
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	for (const char *const *e = lmdb ? lmdb_ext : h5_ext; *e; e++)
		if (ends_with(b, *e)) {
			b[strlen(b) - strlen(*e)] = '\0';
			break;
		}
	if (!b[0] || !strcmp(b, ".") || !strcmp(b, "..") ||
	    !strcmp(b, ".dlfs") || strlen(b) > DLFS_NAME_MAX) {
		int ret = dlfs_err_set(err, -EINVAL,
				       "%s: its name gives no usable directory "
				       "name ('%s') for its %s",
				       s->path, b, lmdb ? "keys" : "samples");
		free(b);
		return ret;
	}
	s->top = b;
	return 0;
}

/* A directory: with split_lmdb, an LMDB environment if it holds a
 * data.mdb; otherwise a directory source. */
static int classify_dir(struct pk_source *s, const struct dlfs_pack_opts *o,
			struct dlfs_err *err)
{
	char *db = NULL;
	struct stat ds;
	s->kind = PK_SRC_DIR;
	if (!o->split_lmdb)
		return 0;
	if (asprintf(&db, "%s/data.mdb", s->path) < 0)
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	if (stat(db, &ds) == 0 && S_ISREG(ds.st_mode)) {
		s->kind = PK_SRC_LMDB;
		s->size = (uint64_t)ds.st_size;
	}
	free(db);
	return 0;
}

/* With the option that splits them, a file named like an HDF5 file
 * (but .nc, which netCDF-3 files are named too) or an LMDB environment
 * and not one is refused, not read as an archive. */
static int check_misnamed(const struct pk_source *s,
			  const struct dlfs_pack_opts *o, struct dlfs_err *err)
{
	int ret = 0;
	for (const char *const *e = h5_ext; o->split_hdf5 && *e; e++)
		if (ends_with(s->path, *e) && strcmp(*e, ".nc"))
			ret = dlfs_err_set(err, -EINVAL,
					   "%s: not an HDF5 file (no HDF5 "
					   "signature)",
					   s->path);
	for (const char *const *e = lmdb_ext; o->split_lmdb && *e; e++)
		if (ends_with(s->path, *e))
			ret = dlfs_err_set(err, -EINVAL,
					   "%s: not an LMDB environment (no "
					   "LMDB magic number)",
					   s->path);
	return ret;
}

/* A file (st): an HDF5 or LMDB source with its option, refused without
 * it; otherwise an archive. */
static int classify_file(struct pk_source *s, const struct stat *st,
			 const struct dlfs_pack_opts *o, struct dlfs_err *err)
{
	int ret = 0;
	int fd = open(s->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return dlfs_err_sys(err, -errno, "%s", s->path);
	int h5 = pk_hdf5_signature(fd, (uint64_t)st->st_size);
	int mdb = !h5 && has_lmdb_magic(fd);
	s->size = (uint64_t)st->st_size;
	s->kind = PK_SRC_ARCHIVE;
	if (h5 && o->split_hdf5)
		s->kind = PK_SRC_HDF5;
	else if (mdb && o->split_lmdb)
		s->kind = PK_SRC_LMDB_FILE;
	else if (h5 || mdb)
		ret = dlfs_err_set(err, -EINVAL,
				   "%s: an %s; give --%s to %s, or give the "
				   "directory holding it to pack it as one "
				   "file",
				   s->path, h5 ? "HDF5 file" : "LMDB file",
				   h5 ? "split-hdf5" : "split-lmdb",
				   h5 ? "split it into samples"
				      : "pack one file per key");
	else
		ret = check_misnamed(s, o, err);
	close(fd);
	return ret;
}

static int classify_one(struct pk_source *s, const struct dlfs_pack_opts *o,
			struct dlfs_err *err)
{
	struct stat st;
	int ret;
	if (stat(s->path, &st) < 0)
		return dlfs_err_sys(err, -errno, "%s", s->path);
	if (S_ISDIR(st.st_mode))
		ret = classify_dir(s, o, err);
	else if (S_ISREG(st.st_mode))
		ret = classify_file(s, &st, o, err);
	else
		return dlfs_err_set(err, -EINVAL,
				    "%s: not a directory or an archive",
				    s->path);
	if (!ret && s->kind != PK_SRC_DIR && s->kind != PK_SRC_ARCHIVE)
		ret = make_top(s, err);
	return ret;
}

int pk_classify(struct pk_source *src, unsigned n,
		const struct dlfs_pack_opts *o, struct dlfs_err *err)
{
	for (unsigned i = 0; i < n; i++) {
		int ret = classify_one(&src[i], o, err);
		if (ret)
			return ret;
		for (unsigned j = 0; src[i].top && j < i; j++)
			if (src[j].top && !strcmp(src[i].top, src[j].top))
				return dlfs_err_set(err, -EINVAL,
						    "%s and %s would both "
						    "become the directory "
						    "'%s'",
						    src[j].path, src[i].path,
						    src[i].top);
	}
	return 0;
}

void pk_sources_free(struct pk_source *src, unsigned n)
{
	for (unsigned i = 0; src && i < n; i++) {
		free(src[i].top);
		src[i].top = NULL;
	}
}

static int is_ingest(const struct pk_source *s)
{
	return s->kind == PK_SRC_HDF5 || s->kind == PK_SRC_LMDB ||
	       s->kind == PK_SRC_LMDB_FILE;
}

unsigned pk_ingest_count(const struct pk_source *src, unsigned n)
{
	unsigned k = 0;
	for (unsigned i = 0; i < n; i++)
		k += is_ingest(&src[i]);
	return k;
}

/* ---- workers ---- */

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

static int ingest_one(const struct pk_source *s, unsigned i,
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
		ret = ingest_one(&r->src[r->list[k]], r->list[k], r->o, &sink,
				 err);
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

struct pk_ingest {
	const char *dir;
	unsigned nw;
	int32_t *owner;    /* per source index; -1 for the others */
	FILE **lists;      /* per worker, opened when first needed */
	uint32_t *spool;   /* per worker: its data index in the tree, or 0 */
	char *buf;
	size_t cap;
};

void pk_ingest_free(struct pk_ingest *ing, int unlink_files)
{
	if (!ing)
		return;
	for (unsigned w = 0; w < ing->nw; w++) {
		if (ing->lists[w])
			fclose(ing->lists[w]);
		if (unlink_files) {
			char p[4096];
			snprintf(p, sizeof(p), "%s/ingest-%u.list", ing->dir, w);
			unlink(p);
			snprintf(p, sizeof(p), "%s/ingest-%u.spool", ing->dir,
				 w);
			unlink(p);
		}
	}
	free(ing->owner);
	free(ing->lists);
	free(ing->spool);
	free(ing->buf);
	free(ing);
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
		if (is_ingest(&r->src[i]))
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

/* ---- the coordinator ---- */

static int put_dir(const struct pk_ingest_to *to, const char *p, size_t n,
		   uint32_t mode, int64_t sec, uint32_t nsec, unsigned i,
		   const char *where, struct dlfs_err *err)
{
	struct pk_ingest_entry d = {.path = p, .len = n, .mode = S_IFDIR | mode,
				    .sec = sec, .nsec = nsec, .src = i,
				    .where = where};
	return to->put(to->arg, &d, err);
}

/* Worker w's list, opened when first needed, and its spool as a data
 * file of the packer. */
static int open_list(const struct pk_ingest_to *to, struct pk_ingest *ing,
		     unsigned w, struct dlfs_err *err)
{
	char path[4096];
	if (ing->lists[w])
		return 0;
	snprintf(path, sizeof(path), "%s/ingest-%u.list", ing->dir, w);
	ing->lists[w] = fopen(path, "rbe");
	if (!ing->lists[w])
		return dlfs_err_sys(err, -errno, "%s", path);
	snprintf(path, sizeof(path), "%s/ingest-%u.spool", ing->dir, w);
	return to->data(to->arg, path, &ing->spool[w], err);
}

/* One ingest source's records being given to the packer (pk_ingest_put). */
struct putting {
	const struct pk_ingest_to *to;
	const struct pk_source *s;
	const struct dlfs_pack_opts *o;
	struct pk_ingest *ing;
	unsigned i, w;      /* the source; the worker whose list holds it */
	size_t top_len;
	int begun;          /* its PK_REC_SOURCE was read */
	uint32_t fmode, dmode, src_data; /* from that record */
	int64_t sec;
	uint32_t nsec;
	char *last;         /* the parent of the last file */
	char where[4096];   /* the source and file, for messages */
	struct dlfs_err *err;
};

/* The list does not hold what its worker wrote. */
static int list_corrupt(const struct putting *p)
{
	return dlfs_err_set(p->err, -DLFS_ECORRUPT,
			    "%s: the ingest list of worker %u is not as "
			    "written",
			    p->s->path, p->w);
}

/* The source's record: its entries' modes and mtime, the source file as
 * a data file if entries lie in it, and the directory it becomes. */
static int put_source(struct putting *p, const struct pk_rec *r)
{
	p->begun = 1;
	p->fmode = r->mode & 0666;
	p->dmode = p->fmode | ((p->fmode & 0444) >> 2);
	p->sec = r->sec;
	p->nsec = r->nsec;
	if (r->len) {
		int ret = p->to->data(p->to->arg, r->str, &p->src_data, p->err);
		if (ret)
			return ret;
	}
	return put_dir(p->to, p->s->top, p->top_len, p->dmode, p->sec,
		       p->nsec, p->i, p->s->path, p->err);
}

static void put_warn(const struct dlfs_pack_opts *o, const struct pk_rec *r)
{
	if (!o->warn)
		return;
	char msg[DLFS_ERR_MSG_MAX + 16];
	snprintf(msg, sizeof(msg), "warning: %s", r->str);
	o->warn(o->cb_arg, msg);
}

static void put_note(const struct putting *p, const struct pk_rec *r)
{
	if (!p->o->note)
		return;
	char msg[DLFS_ERR_MSG_MAX + PATH_MAX];
	snprintf(msg, sizeof(msg), "%s: %s", p->s->path, r->str);
	p->o->note(p->o->cb_arg, msg);
}

/* The directories between top and a file's parent str[0..plen), once
 * each: files come grouped by directory, so once per change of parent. */
static int put_parents(struct putting *p, const char *str, size_t plen)
{
	if (p->last && strlen(p->last) == plen && !memcmp(p->last, str, plen))
		return 0;
	for (size_t k = p->top_len + 1; k <= plen; k++) {
		if (k < plen && str[k] != '/')
			continue;
		int ret = put_dir(p->to, str, k, p->dmode, p->sec, p->nsec,
				  p->i, p->where, p->err);
		if (ret)
			return ret;
	}
	free(p->last);
	p->last = strndup(str, plen);
	if (!p->last)
		return dlfs_err_set(p->err, -ENOMEM, "out of memory");
	return 0;
}

/* A file, which must lie under top; its bytes are in the source itself
 * or in the worker's spool. */
static int put_file(struct putting *p, const struct pk_rec *r)
{
	const char *slash = strrchr(r->str, '/');
	size_t plen = slash ? (size_t)(slash - r->str) : 0;
	if (plen < p->top_len || memcmp(r->str, p->s->top, p->top_len) ||
	    r->str[p->top_len] != '/' || (r->in_source && !p->src_data))
		return list_corrupt(p);
	snprintf(p->where, sizeof(p->where), "%s: %s", p->s->path, r->str);
	int ret = put_parents(p, r->str, plen);
	if (ret)
		return ret;
	struct pk_ingest_entry f = {
		.path = r->str, .len = r->len, .mode = S_IFREG | p->fmode,
		.sec = p->sec, .nsec = p->nsec, .size = r->size, .off = r->off,
		.data = r->in_source ? p->src_data : p->ing->spool[p->w],
		.src = p->i, .where = p->where};
	return p->to->put(p->to->arg, &f, p->err);
}

/* One record of the source's run in the list. @return 0 to read on, 1
 * at its end (PK_REC_DONE), or a negative errno with err set. */
static int put_record(struct putting *p, const struct pk_rec *r)
{
	switch (r->tag) {
	case PK_REC_SOURCE:
		return p->begun ? list_corrupt(p) : put_source(p, r);
	case PK_REC_WARN:
		put_warn(p->o, r);
		return 0;
	case PK_REC_NOTE:
		put_note(p, r);
		return 0;
	case PK_REC_FILE:
		return put_file(p, r);
	case PK_REC_DONE:
		return 1;
	default:
		return list_corrupt(p);
	}
}

int pk_ingest_put(const struct pk_ingest_to *to, const struct pk_source *s,
		  unsigned i, const struct dlfs_pack_opts *o,
		  struct dlfs_err *err)
{
	struct pk_ingest *ing = s->ing;
	if (!ing || ing->owner[i] < 0)
		return dlfs_err_set(err, -EIO, "%s: was not ingested", s->path);
	struct putting p = {.to = to, .s = s, .o = o, .ing = ing, .i = i,
			    .w = (unsigned)ing->owner[i],
			    .top_len = strlen(s->top), .err = err};
	int ret = open_list(to, ing, p.w, err);
	if (ret)
		return ret;
	struct pk_rec r;
	int got = 0;
	while (!ret &&
	       (got = pk_rec_read(ing->lists[p.w], &r, &ing->buf,
				  &ing->cap)) == 1) {
		/* Lists hold their sources in order. */
		if (!p.begun && (r.tag != PK_REC_SOURCE || r.src != i))
			ret = list_corrupt(&p);
		else
			ret = put_record(&p, &r);
	}
	if (!ret && got < 0)
		ret = dlfs_err_set(err, got,
				   "%s: reading the ingest list of worker %u",
				   s->path, p.w);
	else if (!ret)
		ret = list_corrupt(&p); /* it ends before the source does */
	free(p.last);
	return ret == 1 ? 0 : ret;
}

/* ---- dry run ---- */

int pk_ingest_plan(const struct pk_source *src, unsigned n,
		   const struct dlfs_pack_opts *o, dlfs_plan_cb cb, void *arg,
		   struct dlfs_err *err)
{
	struct pk_h5_state hs = {0};
	struct pk_sink sink;
	int ret = pk_h5_begin(&hs, err);
	pk_sink_plan(&sink, cb, arg);
	sink.cancel = o->cancel;
	for (unsigned i = 0; !ret && i < n; i++) {
		char note[4096 + 128];
		const struct pk_source *s = &src[i];
		switch (s->kind) {
		case PK_SRC_DIR:
			snprintf(note, sizeof(note),
				 "a directory: its tree is packed as it is");
			break;
		case PK_SRC_ARCHIVE:
			snprintf(note, sizeof(note),
				 "an archive: its members are packed as "
				 "they are");
			break;
		case PK_SRC_HDF5:
			snprintf(note, sizeof(note),
				 "an HDF5 file: split into %s/, one %s per "
				 "sample",
				 s->top,
				 o->sample_format == DLFS_SAMPLE_H5
					 ? "HDF5 file"
					 : "directory of .npy files");
			break;
		default:
			snprintf(note, sizeof(note),
				 "an LMDB environment: one file per key in "
				 "%s/, key order in %s/.keys",
				 s->top, s->top);
		}
		sink.source = s->path;
		ret = pk_sink_note(&sink, note, err);
		if (!ret && s->kind != PK_SRC_DIR && s->kind != PK_SRC_ARCHIVE)
			ret = ingest_one(s, i, o, &sink, err);
	}
	pk_h5_end(&hs);
	return ret;
}
