/*
 * What a reader is told when a read or an index lookup fails, and what
 * the log says of it, once per file or per damaged key (read_errors_priv.h,
 * reader.h).
 */
#include "read_errors_priv.h"

#include <string.h>
#include <syslog.h>

#include "util.h"

static int logged_before(struct dlfs_reader *r, uint64_t *ring, unsigned *n,
			 uint64_t key)
{
	int seen = 0;
	pthread_mutex_lock(&r->log_lock);
	for (unsigned i = 0; i < *n && i < 64; i++)
		if (ring[i] == key)
			seen = 1;
	if (!seen)
		ring[(*n)++ % 64] = key;
	pthread_mutex_unlock(&r->log_lock);
	return seen;
}

/* Name a file in the log once per mount (finding its path scans the
 * index, so not on every failure). */
static void log_file_error(struct dlfs_reader_ctx *x, uint64_t ino,
			   const char *msg)
{
	struct dlfs_reader *r = x->r;
	if (!r->conf.log || logged_before(r, r->logged, &r->n_logged, ino))
		return;
	char path[4096] = "?";
	char quoted[4096 * 4];
	dlfs_path_of(x->txn, ino, path, sizeof(path), NULL);
	dlfs_quote(path, strlen(path), quoted, sizeof(quoted));
	dlfs_logf(r->conf.log, r->conf.log_arg, LOG_ERR,
		  "read of '%s' (inode %llu) failed: %s", quoted,
		  (unsigned long long)ino, msg);
}

/* What a reader is told of a failed read of ino: damaged or unreadable
 * data is EIO (counted, logged); what says something else passes. */
int dlfs_read_failed(struct dlfs_reader_ctx *x, uint64_t ino, int ret,
		     const struct dlfs_err *err)
{
	struct dlfs_stats *s = &x->r->stats;
	switch (ret) {
	case -ENOMEM:
	case -EINTR:
	case -EAGAIN:
	case -ETIMEDOUT:
		return ret;
	case -ENOENT:
	case -DLFS_ECORRUPT:
	case -EPROTONOSUPPORT:
		dlfs_stats_add(&s->err_container, 1);
		break;
	case -DLFS_ECHECKSUM:
		dlfs_stats_add(&s->err_checksum, 1);
		break;
	default:
		dlfs_stats_add(&s->err_io, 1);
		break;
	}
	log_file_error(x, ino, err->code ? err->msg : "read failed");
	x->cause = ret;
	return -EIO;
}

int dlfs_reader_index_error_once(struct dlfs_reader *r, int code,
				 const char *msg, uint64_t key)
{
	if (code != -DLFS_ECORRUPT)
		return code;
	dlfs_stats_add(&r->stats.err_index, 1);
	if (!logged_before(r, r->logged_key, &r->n_logged_key, key))
		dlfs_logf(r->conf.log, r->conf.log_arg, LOG_ERR, "%s", msg);
	return -EIO;
}

int dlfs_reader_index_error(struct dlfs_reader *r, int code, const char *msg)
{
	if (code != -DLFS_ECORRUPT)
		return code;
	dlfs_stats_add(&r->stats.err_index, 1);
	/* Rate-limited by the kernel's caches: a failed lookup or getattr
	 * is not cached, but a damaged record is rare. */
	dlfs_logf(r->conf.log, r->conf.log_arg, LOG_ERR, "%s", msg);
	return -EIO;
}

/* ---- the read ---- */
