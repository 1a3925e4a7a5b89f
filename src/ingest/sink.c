/* The ingest workers' spool and record list: see sink.h. */
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dlfs/format.h"
#include "sink.h"
#include "util.h"

#define SPOOL_BUF (8u << 20)

int pk_sink_open(struct pk_sink *s, const char *spool_path,
		 const char *list_path, struct dlfs_err *err)
{
	memset(s, 0, sizeof(*s));
	s->fd = -1;
	s->spool_path = strdup(spool_path);
	s->list_path = strdup(list_path);
	s->cap = SPOOL_BUF;
	s->buf = malloc(s->cap);
	if (!s->spool_path || !s->list_path || !s->buf)
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	s->fd = open(spool_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
		     0600);
	if (s->fd < 0)
		return dlfs_err_sys(err, -errno, "%s", spool_path);
	int lfd = open(list_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
		       0600);
	if (lfd < 0)
		return dlfs_err_sys(err, -errno, "%s", list_path);
	s->list = fdopen(lfd, "wb");
	if (!s->list) {
		close(lfd);
		return dlfs_err_sys(err, -errno, "%s", list_path);
	}
	return 0;
}

void pk_sink_plan(struct pk_sink *s, dlfs_plan_cb cb, void *arg)
{
	memset(s, 0, sizeof(*s));
	s->fd = -1;
	s->cb = cb;
	s->cb_arg = arg;
}

static int flush_buf(struct pk_sink *s, struct dlfs_err *err)
{
	if (!s->used)
		return 0;
	int ret = dlfs_write_full(s->fd, s->buf, s->used);
	if (ret)
		return dlfs_err_sys(err, ret, "%s: write", s->spool_path);
	s->used = 0;
	return 0;
}

int pk_sink_close(struct pk_sink *s, struct dlfs_err *err)
{
	int ret = 0;
	if (s->fd >= 0) {
		ret = flush_buf(s, err);
		if (close(s->fd) < 0 && !ret)
			ret = dlfs_err_sys(err, -errno, "%s", s->spool_path);
		s->fd = -1;
	}
	if (s->list) {
		if (fclose(s->list) != 0 && !ret)
			ret = dlfs_err_sys(err, -errno, "%s", s->list_path);
		s->list = NULL;
	}
	free(s->buf);
	free(s->spool_path);
	free(s->list_path);
	s->buf = NULL;
	s->spool_path = s->list_path = NULL;
	return ret;
}

int pk_sink_cancelled(struct pk_sink *s, struct dlfs_err *err)
{
	if ((s->cancel && *s->cancel) || (s->stop && atomic_load(s->stop)))
		return dlfs_err_set(err, -ECANCELED, "cancelled");
	return 0;
}

/* ---- the list ---- */

static void put_u8(struct pk_sink *s, uint8_t v)
{
	fputc(v, s->list);
}

static void put_u32(struct pk_sink *s, uint32_t v)
{
	uint8_t b[4];
	dlfs_put_le32(b, v);
	fwrite(b, 1, 4, s->list);
}

static void put_u64(struct pk_sink *s, uint64_t v)
{
	uint8_t b[8];
	dlfs_put_le64(b, v);
	fwrite(b, 1, 8, s->list);
}

static void put_str(struct pk_sink *s, const char *p)
{
	size_t n = strlen(p);
	put_u32(s, (uint32_t)n);
	fwrite(p, 1, n, s->list);
}

static int list_ok(struct pk_sink *s, struct dlfs_err *err)
{
	if (ferror(s->list))
		return dlfs_err_sys(err, -EIO, "%s: write", s->list_path);
	return 0;
}

static int plan(struct pk_sink *s, const char *path, uint64_t size,
		const char *note, struct dlfs_err *err)
{
	struct dlfs_plan_item it = {
		.source = s->source, .path = path, .size = size, .note = note};
	int ret = s->cb(s->cb_arg, &it);
	if (ret < 0)
		return dlfs_err_set(err, ret, "listing stopped");
	return 0;
}

int pk_sink_source(struct pk_sink *s, const char *source, uint32_t src,
		   uint32_t mode, int64_t sec, uint32_t nsec,
		   const char *data_path, struct dlfs_err *err)
{
	s->source = source;
	if (pk_sink_dry(s))
		return 0;
	put_u8(s, PK_REC_SOURCE);
	put_u32(s, src);
	put_u32(s, mode);
	put_u64(s, (uint64_t)sec);
	put_u32(s, nsec);
	put_str(s, data_path ? data_path : "");
	return list_ok(s, err);
}

int pk_sink_note(struct pk_sink *s, const char *note, struct dlfs_err *err)
{
	if (pk_sink_dry(s))
		return plan(s, NULL, 0, note, err);
	put_u8(s, PK_REC_NOTE);
	put_str(s, note);
	return list_ok(s, err);
}

int pk_sink_warn(struct pk_sink *s, struct dlfs_err *err, const char *fmt,
		 ...)
{
	char msg[DLFS_ERR_MSG_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (pk_sink_dry(s)) {
		char note[DLFS_ERR_MSG_MAX + 16];
		snprintf(note, sizeof(note), "warning: %s", msg);
		return plan(s, NULL, 0, note, err);
	}
	put_u8(s, PK_REC_WARN);
	put_str(s, msg);
	return list_ok(s, err);
}

int pk_sink_done(struct pk_sink *s, struct dlfs_err *err)
{
	if (pk_sink_dry(s))
		return 0;
	put_u8(s, PK_REC_DONE);
	return list_ok(s, err);
}

int pk_sink_error(struct pk_sink *s, const struct dlfs_err *e)
{
	if (pk_sink_dry(s) || !s->list)
		return 0;
	put_u8(s, PK_REC_ERROR);
	put_u32(s, (uint32_t)e->code);
	put_str(s, e->msg);
	return ferror(s->list) ? -EIO : 0;
}

static int put_file(struct pk_sink *s, const char *path, uint8_t in_source,
		    uint64_t size, uint64_t off, struct dlfs_err *err)
{
	if (s->bytes)
		atomic_fetch_add(s->bytes, size);
	if (pk_sink_dry(s))
		return plan(s, path, size, NULL, err);
	put_u8(s, PK_REC_FILE);
	put_u8(s, in_source);
	put_str(s, path);
	put_u64(s, size);
	put_u64(s, off);
	return list_ok(s, err);
}

/* ---- the spool ---- */

static int spool(struct pk_sink *s, const void *p, size_t n,
		 struct dlfs_err *err)
{
	if (!n)
		return 0;
	if (n >= s->cap) {
		int ret = flush_buf(s, err);
		if (!ret && (ret = dlfs_write_full(s->fd, p, n)))
			ret = dlfs_err_sys(err, ret, "%s: write",
					   s->spool_path);
		if (!ret)
			s->spool_size += n;
		return ret;
	}
	if (s->used + n > s->cap) {
		int ret = flush_buf(s, err);
		if (ret)
			return ret;
	}
	memcpy(s->buf + s->used, p, n);
	s->used += n;
	s->spool_size += n;
	return 0;
}

int pk_sink_file(struct pk_sink *s, const char *path, const void *a,
		 size_t alen, const void *b, size_t blen,
		 struct dlfs_err *err)
{
	uint64_t at = s->spool_size;
	if (!pk_sink_dry(s)) {
		int ret = spool(s, a, alen, err);
		if (!ret)
			ret = spool(s, b, blen, err);
		if (ret)
			return ret;
	}
	return put_file(s, path, 0, (uint64_t)alen + blen, at, err);
}

int pk_sink_ref(struct pk_sink *s, const char *path, uint64_t size,
		uint64_t off, struct dlfs_err *err)
{
	return put_file(s, path, 1, size, off, err);
}

void pk_sink_stream_begin(struct pk_sink *s)
{
	s->stream_at = s->spool_size;
}

int pk_sink_stream(struct pk_sink *s, const void *p, size_t n,
		   struct dlfs_err *err)
{
	if (pk_sink_dry(s)) {
		s->spool_size += n; /* only counted */
		return 0;
	}
	return spool(s, p, n, err);
}

int pk_sink_stream_end(struct pk_sink *s, const char *path,
		       struct dlfs_err *err)
{
	return put_file(s, path, 0, s->spool_size - s->stream_at,
			s->stream_at, err);
}

/* ---- reading ---- */

static int get(FILE *f, void *p, size_t n)
{
	return fread(p, 1, n, f) == n ? 0 : -DLFS_ECORRUPT;
}

static int get_u32(FILE *f, uint32_t *v)
{
	uint8_t b[4];
	int ret = get(f, b, 4);
	*v = dlfs_get_le32(b);
	return ret;
}

static int get_u64(FILE *f, uint64_t *v)
{
	uint8_t b[8];
	int ret = get(f, b, 8);
	*v = dlfs_get_le64(b);
	return ret;
}

static int get_str(FILE *f, struct pk_rec *r, char **buf, size_t *cap)
{
	int ret = get_u32(f, &r->len);
	if (ret)
		return ret;
	if (r->len > (64u << 20))
		return -DLFS_ECORRUPT;
	if ((size_t)r->len + 1 > *cap) {
		char *b = realloc(*buf, (size_t)r->len + 1);
		if (!b)
			return -ENOMEM;
		*buf = b;
		*cap = (size_t)r->len + 1;
	}
	ret = get(f, *buf, r->len);
	(*buf)[r->len] = '\0';
	r->str = *buf;
	return ret;
}

int pk_rec_read(FILE *f, struct pk_rec *r, char **buf, size_t *cap)
{
	memset(r, 0, sizeof(*r));
	int c = fgetc(f);
	if (c == EOF)
		return ferror(f) ? -EIO : 0;
	r->tag = c;
	int ret = 0;
	uint32_t u = 0;
	uint64_t v = 0;
	switch (c) {
	case PK_REC_SOURCE:
		ret = get_u32(f, &r->src);
		if (!ret)
			ret = get_u32(f, &r->mode);
		if (!ret)
			ret = get_u64(f, &v);
		r->sec = (int64_t)v;
		if (!ret)
			ret = get_u32(f, &r->nsec);
		if (!ret)
			ret = get_str(f, r, buf, cap);
		break;
	case PK_REC_FILE:
		c = fgetc(f);
		r->in_source = (uint8_t)(c == 1);
		ret = c == EOF ? -DLFS_ECORRUPT : get_str(f, r, buf, cap);
		if (!ret)
			ret = get_u64(f, &r->size);
		if (!ret)
			ret = get_u64(f, &r->off);
		break;
	case PK_REC_WARN:
	case PK_REC_NOTE:
		ret = get_str(f, r, buf, cap);
		break;
	case PK_REC_ERROR:
		ret = get_u32(f, &u);
		r->code = (int)u;
		if (!ret)
			ret = get_str(f, r, buf, cap);
		break;
	case PK_REC_DONE:
		break;
	default:
		ret = -DLFS_ECORRUPT;
	}
	return ret ? ret : 1;
}
