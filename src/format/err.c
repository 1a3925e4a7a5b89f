/* The error convention: see include/dlfs/err.h. */
#include "dlfs/err.h"

#include <stdarg.h>
#include <stdio.h>
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

static int err_vset(struct dlfs_err *err, int code, int with_errno,
		    const char *fmt, va_list ap)
{
	if (code > 0)
		code = -code;
	if (!err)
		return code;
	err->code = code;
	int n = vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	if (n < 0)
		n = 0;
	if (with_errno && (size_t)n < sizeof(err->msg)) {
		char eb[128];
		snprintf(err->msg + n, sizeof(err->msg) - (size_t)n, ": %s",
			 dlfs_strerror(code, eb, sizeof(eb)));
	}
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
	char pre[DLFS_ERR_MSG_MAX];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(pre, sizeof(pre) - 2, fmt, ap);
	va_end(ap);
	if (n < 0)
		return err->code;
	size_t pl = strlen(pre);
	memcpy(pre + pl, ": ", 3);
	pl += 2;
	/* Shift the old message right, truncating its end if need be. */
	size_t ol = strlen(err->msg);
	if (pl + ol >= sizeof(err->msg))
		ol = sizeof(err->msg) - 1 - pl;
	memmove(err->msg + pl, err->msg, ol);
	memcpy(err->msg, pre, pl);
	err->msg[pl + ol] = '\0';
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
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log(arg, prio, msg);
}
