/*
 * A growable string for building text (numpy headers, notes, manifests).
 * Ownership: s is malloc'd and owned by the struct; pk_str_free releases
 * it. Out of memory is sticky: the first failed append sets oom, later
 * appends do nothing, and the caller checks oom once at the end. s is
 * always NUL-terminated once anything was appended. Not thread-safe.
 */
#ifndef DLFS_INGEST_PKSTR_H
#define DLFS_INGEST_PKSTR_H

#include <stddef.h>

struct pk_str {
	char *s;
	size_t n, cap;
	int oom;
};

void pk_str_add(struct pk_str *b, const void *p, size_t n);
void pk_str_addf(struct pk_str *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void pk_str_free(struct pk_str *b);

/* Is s[0..n) valid UTF-8 (no overlong forms, no surrogates)? */
int pk_utf8_valid(const void *s, size_t n);

#endif
