/*
 * The helpers the kinds of source share (scan_kind.h): names checked,
 * implied directories made, warnings.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "scan_kind.h"
#include "util.h"

int pk_scan_check_names(const char *p, size_t n, const char *where,
			struct dlfs_err *err)
{
	const char *s = p, *end = p + n;
	while (s < end) {
		const char *slash = memchr(s, '/', (size_t)(end - s));
		size_t len = (size_t)((slash ? slash : end) - s);
		if (len > DLFS_NAME_MAX) {
			char q[96];
			dlfs_quote(s, 40, q, sizeof(q));
			return dlfs_err_set(err, -ENAMETOOLONG,
					    "%s: name '%s...' is %zu bytes, "
					    "more than %d",
					    where, q, len, DLFS_NAME_MAX);
		}
		s += len + 1;
	}
	return 0;
}

int pk_scan_parents(struct pk_tree *t, const char *p, size_t n, uint32_t src,
		    int64_t mtime, struct dlfs_err *err, const char *where)
{
	for (size_t i = 0; i < n; i++) {
		if (p[i] != '/')
			continue;
		int64_t k = pk_tree_find(t, p, i);
		if (k >= 0) {
			if (!S_ISDIR(t->e[k].mode))
				return dlfs_err_set(err, -EEXIST,
						    "%s: '%.*s' is both a "
						    "directory and a file",
						    where, (int)i, p);
			continue;
		}
		struct pk_entry *e;
		struct pk_attr *a;
		int ret = pk_tree_put(t, p, i, S_IFDIR | 0755, src, where, &e,
				      &a, err);
		if (ret)
			return ret;
		a->mtime_sec = mtime;
		a->implicit = 1;
	}
	return 0;
}

void pk_scan_warn(const struct dlfs_pack_opts *o, const char *fmt, ...)
{
	if (!o->warn)
		return;
	/* Whole, however long the path: its reason is at the end. */
	char *msg = NULL;
	va_list ap;
	va_start(ap, fmt);
	int n = vasprintf(&msg, fmt, ap);
	va_end(ap);
	o->warn(o->cb_arg, n < 0 ? "warning: (out of memory for a warning)"
				 : msg);
	if (n >= 0)
		free(msg);
}

const char *pk_scan_special_kind(mode_t m)
{
	if (S_ISFIFO(m))
		return "fifo";
	if (S_ISSOCK(m))
		return "socket";
	if (S_ISCHR(m))
		return "character device";
	if (S_ISBLK(m))
		return "block device";
	return "special file";
}

ssize_t pk_scan_normalise(const char *name, char *out, size_t cap)
{
	if (name[0] == '/')
		return -EPERM;
	size_t o = 0;
	const char *s = name;
	while (*s) {
		while (*s == '/')
			s++;
		if (!*s)
			break;
		const char *end = strchrnul(s, '/');
		size_t len = (size_t)(end - s);
		if (len == 1 && s[0] == '.') {
			s = end;
			continue;
		}
		if (len == 2 && s[0] == '.' && s[1] == '.')
			return -EPERM;
		if (o + len + 2 > cap)
			return -ENAMETOOLONG;
		if (o)
			out[o++] = '/';
		memcpy(out + o, s, len);
		o += len;
		s = end;
	}
	out[o] = '\0';
	return (ssize_t)o;
}
