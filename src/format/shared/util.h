/*
 * Small helpers the format shares with dlfs's own libraries: full reads
 * and writes that retry short transfers and EINTR, hex and quoting, size
 * and LMDB error translation, and a growable string (str.c). Stateless
 * and thread-safe, but for a struct dlfs_str, which is its owner's. Not
 * installed.
 */
#ifndef DLFS_UTIL_H
#define DLFS_UTIL_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/types.h>
#include <time.h>

/* pread until len bytes or EOF. @return bytes read (< len only at EOF), or
 * a negative errno. */
ssize_t dlfs_pread_full(int fd, void *buf, size_t len, uint64_t off);
/* pwrite/write all len bytes. @return 0 or a negative errno. */
int dlfs_pwrite_full(int fd, const void *buf, size_t len, uint64_t off);
int dlfs_write_full(int fd, const void *buf, size_t len);
/* read until len bytes or EOF. @return bytes read, or a negative errno. */
ssize_t dlfs_read_full(int fd, void *buf, size_t len);

/*
 * Ask the file system to cache fd's whole block map (ext4: FIEMAP with
 * FIEMAP_FLAG_CACHE). Otherwise, when its extent tree blocks are already
 * in memory, ext4 caches only the ranges reads asked for, so an O_DIRECT
 * read that starts in the last block of an earlier one is mapped in two
 * pieces and sent as two bios: the block layer merges them into one
 * request, but a device that throttles I/O operations (cgroup blkio, a
 * PFS's IOPS cap) has already counted two. A hint: file systems without
 * the flag are left alone. Reclaim may drop the cached map later.
 */
void dlfs_precache_extents(int fd);

/*
 * open(2) of a path of any length: one openat from AT_FDCWD when it fits
 * in PATH_MAX (the common case, one system call), else directory by
 * directory in pieces that do, each relative to the last. flags apply to
 * the last piece; the directories before it are opened O_PATH. @return a
 * file descriptor, or a negative errno.
 */
int dlfs_open_long(const char *path, int flags, int mode);

/* Write 2*n lowercase hex digits and a NUL into out. */
void dlfs_hex(const uint8_t *in, size_t n, char *out);

/* Round v up to a multiple of a (a power of two). */
/* *ts = now on clock clk plus ms milliseconds: a deadline for
 * pthread_cond_timedwait (CLOCK_REALTIME unless the condition variable
 * was made for another clock). */
static inline void dlfs_deadline(clockid_t clk, long ms, struct timespec *ts)
{
	clock_gettime(clk, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

static inline uint64_t dlfs_roundup(uint64_t v, uint64_t a)
{
	return (v + a - 1) & ~(a - 1);
}

/*
 * Copy a name for a message: bytes that are not printable ASCII become
 * \xNN escapes, so a name with a newline cannot forge a log line.
 * out holds outlen bytes; the result is always NUL-terminated.
 */
void dlfs_quote(const char *in, size_t len, char *out, size_t outlen);

/*
 * The length of the well-formed UTF-8 sequence at the start of p, which
 * has n bytes: 1 to 4, or 0 when it is not one (a stray continuation
 * byte, an overlong form, a surrogate, past U+10FFFF, or cut short by n).
 * Paths are bytes, but JSON and the Prometheus text format are UTF-8:
 * their writers use this to escape what is not.
 */
size_t dlfs_utf8_seq(const unsigned char *p, size_t n);

/* dlfs_closest: in dlfs/format.h (the programs' "did you mean"). */

/*
 * Grow array *a of elements of size bytes so that it holds need of them:
 * doubling from 64, *cap counts elements. @return 0 or -ENOMEM (then *a
 * and *cap are as they were).
 */
static inline int dlfs_grow(void **a, size_t *cap, size_t need, size_t size)
{
	if (need <= *cap)
		return 0;
	size_t n = *cap ? *cap : 64;
	while (n < need)
		n *= 2;
	if (n > SIZE_MAX / size)
		return -ENOMEM;
	void *na = realloc(*a, n * size);
	if (!na)
		return -ENOMEM;
	*a = na;
	*cap = n;
	return 0;
}

/* Translate an LMDB return code into a negative errno: the one place
 * (the index, and the packer's index writer and LMDB source). */
int dlfs_mdb_errno(int rc);

/*
 * A growable string for building text and byte buffers (numpy headers,
 * notes, manifests, the packer's messages between ranks), shared by the
 * ingest and the packer (str.c). Ownership: s is malloc'd and owned by
 * the struct; dlfs_str_free releases it. Out of memory is sticky: the
 * first failed append sets oom, later appends do nothing, and the caller
 * checks oom once at the end. s is always NUL-terminated once anything
 * was appended. Not thread-safe.
 */
struct dlfs_str {
	char *s;
	size_t n, cap;
	int oom;
};

void dlfs_str_add(struct dlfs_str *b, const void *p, size_t n);
void dlfs_str_addf(struct dlfs_str *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void dlfs_str_free(struct dlfs_str *b);

/* Is s[0..n) valid UTF-8 (no overlong forms, no surrogates)? */
int dlfs_utf8_valid(const void *s, size_t n);

#endif
