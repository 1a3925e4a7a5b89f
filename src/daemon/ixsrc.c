/* Where a mount's index comes from: see ixsrc.h. */
#include "ixsrc.h"

#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ixcopy.h"
#include "outlock.h"

struct dlfs_ixsrc_share {
	const char *dataset;
	const char *cache_dir; /* NULL: the copy goes to memory */
	struct dlfs_seal seal;
	dlfs_log_fn log;
	void *arg;
	int need;
	char *local;           /* a checked copy already here */
	int local_fd, pfs_fd;  /* what this rank reads if it is the root */
	uint64_t pfs_bytes;
	struct dlfs_ixcopy *cp;
	struct dlfs_err werr;  /* the first failure to write the copy */
};

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void warn(dlfs_log_fn log, void *arg, const char *what,
		 const struct dlfs_err *e, const char *then)
{
	dlfs_logf(log, arg, LOG_WARNING, "warning: %s%s%s; %s", what,
		  e && e->msg[0] ? ": " : "", e ? e->msg : "", then);
}

/* dlfs_ds_open, saying so when a missing dataset is being packed. */
static int open_plain(const char *dataset, struct dlfs_ds **ds,
		      struct dlfs_err *err)
{
	char who[256];
	int ret = dlfs_ds_open(dataset, ds, err);
	if (ret == -ENOENT && dlfs_outlock_who(dataset, who, sizeof(who)))
		dlfs_err_set(err, ret, "%s: not there yet: it is being packed "
			     "(dlfs-pack, %s); mount it once that is done",
			     dataset, who);
	return ret;
}

/*
 * Open dataset with its index from path (a copy, held open by hold_fd
 * until LMDB has its own), else from the PFS with a warning. Takes path.
 */
static int open_ds(const char *dataset, char *path, int hold_fd,
		   const struct dlfs_seal *s, struct dlfs_ixsrc *ix,
		   struct dlfs_ds **ds, dlfs_log_fn log, void *arg,
		   struct dlfs_err *err)
{
	if (path) {
		struct dlfs_err e = {0};
		int ret = dlfs_ds_open_index(dataset, path, s->id, ds, &e);
		if (hold_fd >= 0)
			close(hold_fd);
		if (!ret) {
			ix->path = path;
			return 0;
		}
		warn(log, arg, "the index's local copy cannot be used", &e,
		     "the index is mapped from the PFS");
		free(path);
	}
	ix->source = "pfs";
	ix->where = "pfs";
	return open_plain(dataset, ds, err);
}

/*
 * A cache_dir that cannot be used (not a directory, not writable, or not
 * there with its nearest existing parent not writable) is the NVMe tier's
 * error to give, first and alone (it stops the mount): no warning before
 * it that the index has no copy there. One not there yet, whose parent
 * is writable, is made for the copy.
 */
static int cache_dir_usable(const char *cache_dir)
{
	char p[PATH_MAX];
	struct stat st;
	if (snprintf(p, sizeof(p), "%s", cache_dir) >= (int)sizeof(p))
		return 0;
	while (stat(p, &st) < 0) {
		char *slash = strrchr(p, '/');
		if (errno != ENOENT || !slash)
			return errno == ENOENT && access(".", W_OK | X_OK) == 0;
		if (slash == p)
			slash[1] = '\0';
		else
			*slash = '\0';
	}
	return S_ISDIR(st.st_mode) && access(p, W_OK | X_OK) == 0;
}

int dlfs_ixsrc_open(const char *dataset, const char *cache_dir,
		    struct dlfs_ixsrc *ix, struct dlfs_ds **ds,
		    dlfs_log_fn log, void *arg, struct dlfs_err *err)
{
	double t0 = now_s();
	struct dlfs_seal s;
	struct dlfs_err e = {0};
	char *path = NULL;
	int hold = -1;
	memset(ix, 0, sizeof(*ix));
	ix->source = ix->where = "pfs";
	int ret = dlfs_seal_read(dataset, &s, &e);
	if (ret) {
		/* The real error first, and alone: a seal that cannot be
		 * read matters only for a dataset that opens. */
		int opened = open_plain(dataset, ds, err);
		if (!opened && ret != -ENOENT)
			warn(log, arg, "the index's seal", &e,
			     "the index is mapped from the PFS");
		return opened;
	}
	ix->sealed = 1;
	ix->bytes = s.size;
	if (!cache_dir || !cache_dir_usable(cache_dir))
		return open_plain(dataset, ds, err);
	ret = dlfs_ixcopy_find(cache_dir, &s, &path, &e);
	if (!ret) {
		ix->source = "local";
	} else if (ret == -ENOENT || ret == -DLFS_ECORRUPT) {
		if (ret == -DLFS_ECORRUPT)
			warn(log, arg, "the index's local copy failed its check",
			     &e, "copied again from the PFS");
		memset(&e, 0, sizeof(e));
		ret = dlfs_ixcopy_fetch(dataset, cache_dir, &s, &path, &hold,
					&ix->pfs_bytes, &e);
		if (ret)
			warn(log, arg, "the index was not copied to cache_dir",
			     &e, "it is mapped from the PFS");
		else
			ix->source = "copied";
	} else {
		warn(log, arg, "no local copy of the index", &e,
		     "it is mapped from the PFS");
	}
	if (!ret)
		ix->where = "cache_dir";
	ret = open_ds(dataset, ret ? NULL : path, hold, &s, ix, ds, log, arg,
		      err);
	ix->seconds = now_s() - t0;
	return ret;
}

/* pread until len bytes or EOF. @return the bytes, or -errno. */
static ssize_t pread_all(int fd, void *buf, size_t len, uint64_t off)
{
	size_t got = 0;
	while (got < len) {
		ssize_t n = pread(fd, (char *)buf + got, len - got,
				  (off_t)(off + got));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

/* peer.h share_read: the root's bytes, from its copy or the PFS. */
static int share_read(void *arg, uint64_t off, void *buf, size_t len)
{
	struct dlfs_ixsrc_share *sh = arg;
	int fd = sh->local_fd;
	if (fd < 0) {
		if (sh->pfs_fd < 0) {
			char *ip = NULL;
			if (asprintf(&ip, "%s/%s", sh->dataset,
				     DLFS_INDEX_NAME) < 0)
				return -ENOMEM;
			sh->pfs_fd = open(ip, O_RDONLY | O_CLOEXEC);
			free(ip);
			if (sh->pfs_fd < 0)
				return -errno;
			posix_fadvise(sh->pfs_fd, 0, 0, POSIX_FADV_SEQUENTIAL);
		}
		fd = sh->pfs_fd;
	}
	ssize_t n = pread_all(fd, buf, len, off);
	if (n < 0)
		return (int)n;
	if (fd == sh->pfs_fd) {
		sh->pfs_bytes += (uint64_t)n;
		posix_fadvise(fd, (off_t)off, (off_t)n, POSIX_FADV_DONTNEED);
	}
	return (size_t)n == len ? 0 : -DLFS_ECORRUPT; /* shorter than sealed */
}

/* peer.h share_write: the next bytes of this rank's copy. */
static int share_write(void *arg, const void *buf, size_t len)
{
	struct dlfs_ixsrc_share *sh = arg;
	return dlfs_ixcopy_write(sh->cp, buf, len, &sh->werr);
}

int dlfs_ixsrc_share_begin(const char *dataset, const char *cache_dir,
			   const struct dlfs_seal *seal,
			   struct dlfs_peer_conf *pc,
			   struct dlfs_ixsrc_share **out, dlfs_log_fn log,
			   void *arg, struct dlfs_err *err)
{
	struct dlfs_ixsrc_share *sh = calloc(1, sizeof(*sh));
	if (!sh)
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	sh->dataset = dataset;
	sh->cache_dir = cache_dir;
	sh->seal = *seal;
	sh->log = log;
	sh->arg = arg;
	sh->local_fd = sh->pfs_fd = -1;
	sh->need = 1;
	struct dlfs_err e = {0};
	int ret = cache_dir ? dlfs_ixcopy_find(cache_dir, seal, &sh->local, &e)
			    : -ENOENT;
	if (!ret) {
		sh->local_fd = open(sh->local, O_RDONLY | O_CLOEXEC);
		sh->need = sh->local_fd < 0;
	} else if (ret == -DLFS_ECORRUPT) {
		warn(log, arg, "the index's local copy failed its check", &e,
		     "it is received again");
	} else if (ret != -ENOENT) {
		warn(log, arg, "no local copy of the index", &e,
		     "it is kept in memory");
		sh->cache_dir = NULL;
	}
	if (sh->need) {
		memset(&e, 0, sizeof(e));
		ret = dlfs_ixcopy_begin(sh->cache_dir, seal, &sh->cp, &e);
		if (ret && sh->cache_dir) {
			warn(log, arg, "no local copy of the index", &e,
			     "it is kept in memory");
			sh->cache_dir = NULL;
			ret = dlfs_ixcopy_begin(NULL, seal, &sh->cp, &e);
		}
		if (ret) {
			*err = e;
			dlfs_ixsrc_share_abort(sh);
			return ret;
		}
	}
	pc->dataset_id_hex = sh->seal.id_hex;
	pc->index_sum = dlfs_seal_fold(seal);
	pc->share_size = seal->size;
	pc->share_need = sh->need;
	pc->share_read = share_read;
	pc->share_write = share_write;
	pc->share_arg = sh;
	*out = sh;
	return 0;
}

int dlfs_ixsrc_share_end(struct dlfs_ixsrc_share *sh, struct dlfs_peer *p,
			 struct dlfs_ixsrc *ix, struct dlfs_ds **ds,
			 struct dlfs_err *err)
{
	struct dlfs_peer_share_result r;
	dlfs_peer_share_result(p, &r);
	memset(ix, 0, sizeof(*ix));
	ix->sealed = 1;
	ix->bytes = sh->seal.size;
	ix->seconds = r.seconds;
	ix->pfs_bytes = sh->pfs_bytes;
	ix->where = sh->cache_dir ? "cache_dir" : "memory";
	char *path = NULL;
	int hold = -1, ret = 0;
	struct dlfs_err e = {0};
	if (!sh->need) {
		ix->source = "local";
		path = sh->local;
		sh->local = NULL;
	} else if (r.result) {
		e = sh->werr;
		if (!e.msg[0])
			dlfs_err_sys(&e, r.result, "sharing the index");
		warn(sh->log, sh->arg, "the index was not received", &e,
		     "it is mapped from the PFS");
		ret = r.result;
	} else {
		ret = dlfs_ixcopy_end(sh->cp, &path, &hold, &e);
		sh->cp = NULL;
		if (ret)
			warn(sh->log, sh->arg, "the index received is not usable",
			     &e, "it is mapped from the PFS");
		ix->source = r.root ? "copied" : "received";
	}
	ret = open_ds(sh->dataset, ret ? NULL : path, hold, &sh->seal, ix, ds,
		      sh->log, sh->arg, err);
	dlfs_ixsrc_share_abort(sh);
	return ret;
}

void dlfs_ixsrc_share_abort(struct dlfs_ixsrc_share *sh)
{
	if (!sh)
		return;
	dlfs_ixcopy_abort(sh->cp);
	if (sh->local_fd >= 0)
		close(sh->local_fd);
	if (sh->pfs_fd >= 0)
		close(sh->pfs_fd);
	free(sh->local);
	free(sh);
}

void dlfs_ixsrc_free(struct dlfs_ixsrc *ix)
{
	free(ix->path);
	ix->path = NULL;
}
