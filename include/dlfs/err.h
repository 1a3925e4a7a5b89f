/*
 * The one error convention of libdlfs.
 *
 * Every function that can fail returns int: 0 on success or a negative
 * errno. A corrupt index or container is -EUCLEAN (DLFS_ECORRUPT); data
 * that fails its checksum is -EBADMSG (DLFS_ECHECKSUM). Foreign
 * codes (LMDB, libarchive) are translated where they are met, once.
 *
 * Such functions also take a `struct dlfs_err *err`, which may be NULL. On
 * failure they fill it with the code and a message that carries context:
 * the path, the offset where it matters, and the errno text. The message
 * never ends with a newline. A caller that adds context of its own uses
 * dlfs_err_prefix. No function keeps a pointer to err after it returns.
 *
 * Thread-safety: a dlfs_err is owned by one caller; there is no global
 * error state anywhere in the library.
 */
#ifndef DLFS_ERR_H
#define DLFS_ERR_H

#include <errno.h>

#define DLFS_ECORRUPT EUCLEAN
/* Data whose checksum does not match: readers of that data see EIO. */
#define DLFS_ECHECKSUM EBADMSG
#define DLFS_ERR_MSG_MAX 1024

struct dlfs_err {
	int code; /* negative errno, 0 if unset */
	char msg[DLFS_ERR_MSG_MAX];
};

/*
 * Set err (if not NULL) to code and a printf-style message. code may be
 * given positive or negative. @return the code, negative, so a function can
 * `return dlfs_err_set(err, -ENOENT, "...")`.
 */
int dlfs_err_set(struct dlfs_err *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * Like dlfs_err_set, and append ": <strerror(code)>" to the message.
 */
int dlfs_err_sys(struct dlfs_err *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Prepend "<prefix>: " to err's message. @return err->code (or 0). */
int dlfs_err_prefix(struct dlfs_err *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Reset err to "no error". */
void dlfs_err_clear(struct dlfs_err *err);

/*
 * Where long-lived parts (the read core, the NVMe tier, MPI peers) report
 * what a caller cannot be told through a return code: one line, no
 * newline, with a syslog(3) priority (LOG_ERR, LOG_WARNING, LOG_INFO).
 * The daemon sends them to stderr or syslog. May be called from any
 * thread at once.
 */
typedef void (*dlfs_log_fn)(void *arg, int prio, const char *msg);

/* Format one line and pass it to log (nothing when log is NULL). */
void dlfs_logf(dlfs_log_fn log, void *arg, int prio, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* strerror_r into buf, with EUCLEAN named as corruption. @return buf. */
const char *dlfs_strerror(int code, char *buf, unsigned len);

#endif
