/*
 * dlfs_pack: scan, lay out, stream the data through the pipeline
 * (pipe.h), finish the containers (container.h), write the index,
 * publish atomically; a list of steps (steps[], below), the ranks of an
 * MPI pack agreeing after each in one place.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <dirent.h>

#include "dlfs/dataset.h"
#include "container.h"
#include "dist.h"
#include "ingest.h"
#include "index_write.h"
#include "inplace.h"
#include "pipe.h"
#include "scan.h"
#include "outlock.h"
#include "util.h"

/* Remove a flat dataset directory (ours: no subdirectories). */
static void remove_flat_dir(const char *dir)
{
	DIR *d = opendir(dir);
	if (d) {
		struct dirent *de;
		while ((de = readdir(d)))
			if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
				unlinkat(dirfd(d), de->d_name, 0);
		closedir(d);
	}
	rmdir(dir);
}

/* OUT may be replaced only if it is a dataset or an empty directory. */
static int check_replaceable(const char *out, struct dlfs_err *err)
{
	char ip[4096];
	struct stat st;
	snprintf(ip, sizeof(ip), "%s/%s", out, DLFS_INDEX_NAME);
	if (stat(ip, &st) == 0)
		return 0;
	if (rmdir(out) == 0)
		return 0; /* was an empty directory */
	return dlfs_err_set(err, -EEXIST,
			    "%s: exists and is not a dlfs dataset; refusing "
			    "to replace it even with --force",
			    out);
}

static int fsync_dir(const char *dir, struct dlfs_err *err)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return dlfs_err_sys(err, -errno, "%s", dir);
	int ret = fsync(fd) < 0 ? dlfs_err_sys(err, -errno, "%s: fsync", dir)
				: 0;
	close(fd);
	return ret;
}

/* What one pack holds across its phases. */
struct job {
	const struct dlfs_pack_comm *c; /* NULL when packing alone */
	int rank;
	const struct dlfs_pack_opts *o;
	const char *out;
	struct pk_source *src;
	unsigned n;
	struct pk_tree tree;
	struct pk_layout lay;
	struct pk_containers ct;
	struct pk_pipe p;
	struct pk_inplace ip; /* --in-place: the archives and their chunks */
	struct pk_ingest *ing;
	uint32_t *share; /* rank r writes containers [share[r], share[r+1]) */
	uint8_t id[DLFS_ID_SIZE];
	char *tmp, *spool, *ipath, *parent;
	int exists;
	struct dlfs_outlock lock; /* rank 0: OUT's, from start to publish */
};

/* Rank 0: check OUT and make the temporary directory beside it. */
static int prepare_out(struct job *j, const char *out,
		       const struct dlfs_pack_opts *o, struct dlfs_err *err)
{
	struct stat ost;
	/* The temporary directory sits beside OUT, so rename is atomic. */
	const char *slash = strrchr(out, '/');
	const char *base = slash ? slash + 1 : out;
	if (!*base || !strcmp(base, ".") || !strcmp(base, ".."))
		return dlfs_err_set(err, -EINVAL, "%s: not a valid output name",
				    out);
	j->parent = !slash ? strdup(".")
		    : slash == out ? strdup("/")
				   : strndup(out, (size_t)(slash - out));
	if (!j->parent || asprintf(&j->tmp, "%.*s.%s.tmp-XXXXXX",
				   (int)(base - out), out, base) < 0) {
		j->tmp = NULL;
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	}
	int e = stat(j->parent, &ost) < 0 ? errno
		: !S_ISDIR(ost.st_mode)	   ? ENOTDIR
					   : 0;
	if (e) {
		free(j->tmp);
		j->tmp = NULL;
		return dlfs_err_set(err, -e,
				    "%s: the directory it goes in, %s: %s",
				    out, j->parent, strerror(e));
	}
	/* Before anything is written: a second pack into OUT fails now, not
	 * at its end. */
	int ret = dlfs_outlock_take(out, &j->lock, err);
	if (ret) {
		free(j->tmp);
		j->tmp = NULL;
		return ret;
	}
	j->exists = lstat(out, &ost) == 0;
	if (j->exists && !o->force) {
		free(j->tmp);
		j->tmp = NULL;
		return dlfs_err_set(err, -EEXIST,
				    "%s: already exists (use --force to "
				    "replace it)",
				    out);
	}
	if (!mkdtemp(j->tmp)) {
		ret = dlfs_err_sys(err, -errno,
				       "%s: creating a temporary directory "
				       "beside it",
				       out);
		free(j->tmp);
		j->tmp = NULL;
		return ret;
	}
	return 0;
}

/* Rank 0: the index, then the directory renamed to OUT. */
static int finish(struct job *j, const char *out, const uint8_t *id,
		  const struct dlfs_pack_opts *o, struct dlfs_err *err)
{
	struct dlfs_pack_progress pr = {.phase = "index"};
	if (o->progress)
		o->progress(o->cb_arg, &pr);
	int ret = pk_index_write(j->ipath, &j->tree, &j->lay, o, id,
				 o->in_place ? &j->ip.ch : &j->p.sums, &j->ct,
				 err);
	/* The seal: nodes check their copies of the index against it. The
	 * index was just written, so this reads it from the page cache. */
	struct dlfs_seal seal;
	if (!ret)
		ret = dlfs_seal_make(j->ipath, id, &seal, err);
	if (!ret)
		ret = dlfs_seal_write(j->tmp, &seal, err);
	if (!ret && o->cancel && *o->cancel)
		ret = dlfs_err_set(err, -ECANCELED, "cancelled");
	if (ret)
		return ret;
	if (j->tree.spool_fd >= 0) {
		close(j->tree.spool_fd);
		j->tree.spool_fd = -1;
		unlink(j->spool);
	}
	pk_ingest_free(j->ing, 1);
	j->ing = NULL;
	if (chmod(j->tmp, 0755) < 0)
		return dlfs_err_sys(err, -errno, "%s", j->tmp);
	ret = fsync_dir(j->tmp, err);
	if (ret)
		return ret;

	/* Publish. */
	if (j->exists) {
		ret = check_replaceable(out, err);
		if (ret)
			return ret;
		if (renameat2(AT_FDCWD, j->tmp, AT_FDCWD, out,
			      RENAME_EXCHANGE) == 0) {
			remove_flat_dir(j->tmp); /* the old dataset */
			free(j->tmp);
			j->tmp = NULL;
		} else if (errno != ENOENT) {
			return dlfs_err_sys(err, -errno, "%s: replacing", out);
		}
	}
	if (j->tmp) {
		if (renameat2(AT_FDCWD, j->tmp, AT_FDCWD, out,
			      RENAME_NOREPLACE) < 0)
			return dlfs_err_sys(err, -errno, "%s: publishing", out);
		free(j->tmp);
		j->tmp = NULL;
	}
	return fsync_dir(j->parent, err);
}

/*
 * dlfs_pack is this list of steps. A step runs on rank 0 alone (ONE) or
 * on every rank (ALL); then, in one place (dlfs_pack's loop), the ranks
 * agree on how it went, and a step whose result the other ranks need has
 * it shared out (share, on every rank, again followed by an agreement).
 * No step calls the comm itself; without a comm, there is no share and
 * every agreement is the step's own result.
 */
enum who { ONE, ALL };

struct step {
	enum who who;
	int (*run)(struct job *j, struct dlfs_err *err);
	int (*share)(struct job *j, struct dlfs_err *err);
};

/* The sources, as rank 0 sees them. */
static int classify(struct job *j, struct dlfs_err *err)
{
	return pk_classify(j->src, j->n, j->o, err);
}

static int share_sources(struct job *j, struct dlfs_err *err)
{
	return pk_dist_sources(j->c, j->src, j->n, err);
}

static int make_tmp(struct job *j, struct dlfs_err *err)
{
	return prepare_out(j, j->out, j->o, err);
}

static int share_tmp(struct job *j, struct dlfs_err *err)
{
	return pk_dist_string(j->c, &j->tmp, err);
}

/* The spool and index paths in the temporary directory, and the
 * entries' attribute file (tree.c): rank 0's all, the others' share. */
static int scratch(struct job *j, struct dlfs_err *err)
{
	char *ap;
	if (asprintf(&j->spool, "%s/spool", j->tmp) < 0 ||
	    asprintf(&j->ipath, "%s/%s", j->tmp, DLFS_INDEX_NAME) < 0) {
		j->spool = j->ipath = NULL;
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	}
	if (asprintf(&ap, "%s/attrs.%d", j->tmp, j->rank) < 0)
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	int ret = pk_tree_open_attrs(&j->tree, ap, err);
	free(ap);
	return ret;
}

/* Ingest: every rank its share, or forked workers. */
static int ingest(struct job *j, struct dlfs_err *err)
{
	return pk_ingest_run(j->src, j->n, j->tmp, j->o, &j->ing, err);
}

/* --in-place: every rank indexes its share of the archives, rank 0
 * into the tree. */
static int index_archives(struct job *j, struct dlfs_err *err)
{
	if (!j->o->in_place)
		return 0;
	return pk_inplace_index(j->c, &j->tree, j->src, j->n, j->out, j->o,
				&j->ip, err);
}

/* The other ranks' shares to rank 0, into the tree. */
static int gather_archives(struct job *j, struct dlfs_err *err)
{
	if (!j->o->in_place)
		return 0;
	return pk_inplace_gather(j->c, &j->tree, j->src, j->n, j->out, j->o,
				 &j->ip, err);
}

/* Rank 0: scan the sources (indexed already in place), lay the dataset
 * out. */
static int scan_and_layout(struct job *j, struct dlfs_err *err)
{
	struct dlfs_pack_progress pr = {.phase = "scan"};
	int ret = 0;
	if (j->o->progress && !j->o->in_place)
		j->o->progress(j->o->cb_arg, &pr);
	if (!j->o->in_place)
		ret = pk_scan(&j->tree, j->src, j->n, j->spool, j->o, err);
	if (!ret && j->o->cancel && *j->o->cancel)
		ret = dlfs_err_set(err, -ECANCELED, "cancelled");
	if (!ret && j->o->in_place)
		ret = pk_layout_in_place(&j->tree, j->o, &j->ip, &j->lay, err);
	else if (!ret)
		ret = pk_layout(&j->tree, j->o, &j->lay, err);
	return ret;
}

/* Who writes which containers, and what each needs to write them. */
static int share_layout(struct job *j, struct dlfs_err *err)
{
	if (j->o->in_place)
		return 0; /* rank 0 writes the index alone */
	if (j->rank == 0)
		pk_dist_share(&j->lay, j->c->size, j->share);
	int ret = j->c->bcast(j->c->arg, j->share,
			      ((size_t)j->c->size + 1) * sizeof(*j->share), 0);
	return ret ? ret : pk_dist_layout(j->c, &j->tree, &j->lay, j->share,
					  err);
}

/* The data: this rank's containers. */
static int data(struct job *j, struct dlfs_err *err)
{
	if (j->o->in_place)
		return 0; /* the archives are the containers */
	if (!j->c)
		j->share[1] = (uint32_t)j->lay.n_containers;
	j->p.l = &j->lay;
	j->p.o = j->o;
	j->p.src = j->src;
	j->p.t = &j->tree;
	j->p.dir = j->tmp;
	j->p.cs = j->o->chunk_size;
	int ret = pk_pipe_run(&j->p, j->share[j->rank], j->share[j->rank + 1],
			      err);
	/* The chunk buffers (up to 256 MiB) and the compressors' scratch
	 * are not needed past here. */
	pk_pipe_release(&j->p);
	return ret;
}

static int share_sums(struct job *j, struct dlfs_err *err)
{
	if (j->o->in_place)
		return 0;
	return pk_dist_sums(j->c, &j->lay, &j->p.sums, j->share, err);
}

static int dataset_id(struct job *j, struct dlfs_err *err)
{
	return pk_dataset_id(&j->tree, &j->lay, j->o, j->id, err);
}

static int share_id(struct job *j, struct dlfs_err *err)
{
	(void)err;
	return j->c->bcast(j->c->arg, j->id, sizeof(j->id), 0);
}

/* Every container's trailer, footer and header: this rank's. */
static int containers(struct job *j, struct dlfs_err *err)
{
	j->ct.file_size = calloc(j->lay.n_containers + 1, sizeof(uint64_t));
	j->ct.footer_xxh3 = calloc(j->lay.n_containers + 1, sizeof(uint64_t));
	if (!j->ct.file_size || !j->ct.footer_xxh3)
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	if (j->o->in_place) { /* no header or footer to write */
		if (j->rank)
			return 0; /* rank 0 knows the archives */
		for (uint32_t c = 0; c < j->ip.n; c++)
			j->ct.file_size[c] = j->ip.arc[c].size;
		j->ct.arc = j->ip.arc;
		return 0;
	}
	int ret = 0;
	for (uint32_t c = j->share[j->rank];
	     c < j->share[j->rank + 1] && !ret; c++)
		ret = pk_container_finish(&j->p, c, j->id, &j->ct, err);
	return ret;
}

static int share_containers(struct job *j, struct dlfs_err *err)
{
	if (j->o->in_place)
		return 0;
	return pk_dist_containers(j->c, &j->ct, j->share, err);
}

/* Rank 0: the index, then the dataset published as OUT. */
static int publish(struct job *j, struct dlfs_err *err)
{
	return finish(j, j->out, j->id, j->o, err);
}

static const struct step steps[] = {
	{ONE, classify, share_sources},      /* what the sources are */
	{ONE, make_tmp, share_tmp},          /* the temporary directory */
	{ALL, scratch, NULL},                /* the scratch files */
	{ALL, ingest, NULL},                 /* HDF5 and LMDB sources */
	{ALL, index_archives, gather_archives}, /* --in-place: archives */
	{ONE, scan_and_layout, share_layout}, /* the tree, laid out */
	{ALL, data, share_sums},             /* the containers' data */
	{ONE, dataset_id, share_id},         /* the dataset id */
	{ALL, containers, share_containers}, /* trailers, footers, headers */
	{ONE, publish, NULL},                /* the index, then OUT */
};

int dlfs_pack_dry_run(const char *const *sources, unsigned n,
		      const struct dlfs_pack_opts *o, dlfs_plan_cb cb,
		      void *arg, struct dlfs_err *err)
{
	struct pk_source *src = calloc(n ? n : 1, sizeof(*src));
	int ret = dlfs_pack_opts_check(o, err);
	if (!ret && !src)
		ret = dlfs_err_set(err, -ENOMEM, "out of memory");
	if (ret) {
		free(src);
		return ret;
	}
	for (unsigned i = 0; i < n; i++)
		src[i].path = sources[i];
	ret = pk_classify(src, n, o, err);
	if (!ret)
		ret = pk_ingest_plan(src, n, o, cb, arg, err);
	pk_sources_free(src, n);
	free(src);
	return ret;
}

/* The job's arrays and locks; the sources' paths. Whatever fails, the
 * job is ready for job_free. */
static int job_init(struct job *j, const char *const *sources,
		    struct dlfs_err *err)
{
	const struct dlfs_pack_opts *o = j->o;
	int ret = 0;
	j->c = o->comm && o->comm->size > 1 ? o->comm : NULL;
	j->rank = j->c ? j->c->rank : 0;
	j->src = calloc(j->n, sizeof(*j->src));
	j->share = calloc(j->c ? (size_t)j->c->size + 1 : 2, sizeof(*j->share));
	pk_tree_init(&j->tree);
	pk_pipe_init(&j->p);
	if (!j->src || !j->share)
		ret = dlfs_err_set(err, -ENOMEM, "out of memory");
	for (unsigned i = 0; !ret && i < j->n; i++)
		j->src[i].path = sources[i];
	return ret;
}

/* The steps in order, the ranks agreeing after each (and after each
 * share). A failure before them (ret) is this rank's: the others hear of
 * it at the first agreement. */
static int run_steps(struct job *j, int ret, struct dlfs_err *err)
{
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		const struct step *s = &steps[i];
		if (!ret && (s->who == ALL || j->rank == 0))
			ret = s->run(j, err);
		if ((ret = pk_agree(j->c, ret, err)))
			break;
		if (j->c && s->share &&
		    (ret = pk_agree(j->c, s->share(j, err), err)))
			break;
	}
	return ret;
}

/* Rank 0 removes what is left of the temporary directory (a failed
 * pack's); every rank frees the job. */
static void job_free(struct job *j)
{
	if (j->rank == 0 && j->tmp) {
		if (j->tree.spool_fd >= 0) {
			close(j->tree.spool_fd);
			j->tree.spool_fd = -1;
		}
		remove_flat_dir(j->tmp);
	}
	dlfs_outlock_release(&j->lock);
	pk_ingest_free(j->ing, 0);
	free(j->tmp);
	free(j->spool);
	free(j->ipath);
	free(j->parent);
	free(j->share);
	free(j->ct.file_size);
	free(j->ct.footer_xxh3);
	pk_pipe_free(&j->p);
	pk_inplace_free(&j->ip);
	pk_layout_free(&j->lay);
	pk_tree_free(&j->tree);
	pk_sources_free(j->src, j->n);
	free(j->src);
}

int dlfs_pack(const char *const *sources, unsigned n_sources, const char *out,
	      const struct dlfs_pack_opts *o, struct dlfs_err *err)
{
	struct dlfs_err own = {0};
	if (!err)
		err = &own; /* messages travel between ranks through it */
	int ret = dlfs_pack_opts_check(o, err);
	if (ret)
		return ret;
	/* The pack sees the codec the default stands for. */
	struct dlfs_pack_opts ro = *o;
	ro.compress = dlfs_pack_compress(o);
	struct job j = {.o = &ro, .out = out, .n = n_sources};
	if (!n_sources)
		return dlfs_err_set(err, -EINVAL, "no sources given");
	ret = run_steps(&j, job_init(&j, sources, err), err);
	job_free(&j);
	return ret;
}
