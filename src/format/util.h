/*
 * Small private helpers shared by libdlfs modules: full reads and writes
 * that retry short transfers and EINTR, and hex formatting. Stateless and
 * thread-safe. Not installed.
 */
#ifndef DLFS_UTIL_H
#define DLFS_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

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

/* Translate an LMDB return code into a negative errno: the one place
 * (the index, and the packer's index writer and LMDB source). */
int dlfs_mdb_errno(int rc);

#endif
