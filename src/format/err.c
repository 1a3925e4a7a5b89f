/* The error convention: see include/dlfs/err.h. */
#include "dlfs/err.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *dlfs_strerror(int code, char *buf, unsigned len)
{
	if (code < 0)
		code = -code;
	if (code == DLFS_ECORRUPT) {
		snprintf(buf, len, "data is corrupt");
		return buf;
	}
	if (code == DLFS_ECHECKSUM) {
		snprintf(buf, len, "checksum mismatch");
		return buf;
	}
	/* GNU strerror_r may return a static string instead of filling buf. */
	const char *s = strerror_r(code, buf, len);
	if (s != buf)
		snprintf(buf, len, "%s", s);
	return buf;
}

/*
 * Copy the len bytes of src into dst[cap] whole when they fit; else keep
 * the head and the tail and put "..." between them. The reason of an
 * error (the errno text, what failed) is at the end of its message and a
 * long path sits before it: cutting the end would lose the reason.
 */
static void fit(char *dst, size_t cap, const char *src, size_t len)
{
	if (len < cap) {
		memmove(dst, src, len);
		dst[len] = '\0';
		return;
	}
	size_t room = cap - 4; /* "..." and the NUL */
	size_t head = room / 3, tail = room - head;
	memmove(dst, src, head);
	memcpy(dst + head, "...", 3);
	memmove(dst + head + 3, src + len - tail, tail);
	dst[cap - 1] = '\0';
}

/* fmt and ap, then ": <errno text>" when with_errno, fitted into
 * dst[cap]. */
static void format_fit(char *dst, size_t cap, int code, int with_errno,
		       const char *fmt, va_list ap)
{
	char *m = NULL;
	va_list aq;
	va_copy(aq, ap);
	int n = vasprintf(&m, fmt, aq);
	va_end(aq);
	if (n < 0) {
		/* No memory for the whole: what fits. */
		m = NULL;
		n = vsnprintf(dst, cap, fmt, ap);
		if (n < 0)
			dst[0] = '\0';
		return;
	}
	char eb[128] = "";
	if (with_errno)
		dlfs_strerror(code, eb, sizeof(eb));
	size_t el = with_errno ? strlen(eb) + 2 : 0;
	char *all = el ? malloc((size_t)n + el + 1) : NULL;
	if (all) {
		memcpy(all, m, (size_t)n);
		memcpy(all + n, ": ", 2);
		memcpy(all + n + 2, eb, el - 2);
		fit(dst, cap, all, (size_t)n + el);
		free(all);
	} else if (el) {
		/* Keep the reason, whatever the memory. */
		size_t keep = el < cap / 2 ? el : cap / 2;
		fit(dst, cap - keep, m, (size_t)n);
		size_t at = strlen(dst);
		snprintf(dst + at, cap - at, ": %s", eb);
	} else {
		fit(dst, cap, m, (size_t)n);
	}
	free(m);
}

static int err_vset(struct dlfs_err *err, int code, int with_errno,
		    const char *fmt, va_list ap)
{
	if (code > 0)
		code = -code;
	if (!err)
		return code;
	err->code = code;
	format_fit(err->msg, sizeof(err->msg), code, with_errno, fmt, ap);
	return code;
}

int dlfs_err_set(struct dlfs_err *err, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	code = err_vset(err, code, 0, fmt, ap);
	va_end(ap);
	return code;
}

int dlfs_err_sys(struct dlfs_err *err, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	code = err_vset(err, code, 1, fmt, ap);
	va_end(ap);
	return code;
}

int dlfs_err_prefix(struct dlfs_err *err, const char *fmt, ...)
{
	if (!err)
		return 0;
	char *pre = NULL;
	va_list ap;
	va_start(ap, fmt);
	int n = vasprintf(&pre, fmt, ap);
	va_end(ap);
	if (n < 0)
		return err->code;
	size_t ol = strlen(err->msg);
	char *all = malloc((size_t)n + 2 + ol + 1);
	if (all) {
		memcpy(all, pre, (size_t)n);
		memcpy(all + n, ": ", 2);
		memcpy(all + n + 2, err->msg, ol);
		fit(err->msg, sizeof(err->msg), all, (size_t)n + 2 + ol);
		free(all);
	}
	free(pre);
	return err->code;
}

void dlfs_err_clear(struct dlfs_err *err)
{
	if (err) {
		err->code = 0;
		err->msg[0] = '\0';
	}
}

void dlfs_logf(dlfs_log_fn log, void *arg, int prio, const char *fmt, ...)
{
	char msg[2048];
	va_list ap;
	if (!log)
		return;
	va_start(ap, fmt);
	format_fit(msg, sizeof(msg), 0, 0, fmt, ap);
	va_end(ap);
	log(arg, prio, msg);
}
