/*
 * A minimal test harness for the unit tests: CHECK records a failure with
 * its location and goes on; a test binary exits non-zero if any failed.
 * Plus helpers to build source trees in a temporary directory.
 */
#ifndef DLFS_TUTIL_H
#define DLFS_TUTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

extern int t_failures;

#define CHECK(cond)                                                           \
	do {                                                                  \
		if (!(cond)) {                                                \
			fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, \
				__LINE__, #cond);                             \
			t_failures++;                                         \
		}                                                             \
	} while (0)

#define CHECK_EQ(a, b)                                                        \
	do {                                                                  \
		long long a_ = (long long)(a), b_ = (long long)(b);           \
		if (a_ != b_) {                                               \
			fprintf(stderr, "%s:%d: CHECK failed: %s == %s "      \
				"(%lld != %lld)\n",                           \
				__FILE__, __LINE__, #a, #b, a_, b_);          \
			t_failures++;                                         \
		}                                                             \
	} while (0)

/* Make a temporary directory; abort on failure. Caller frees. */
char *t_tmpdir(void);
/* rm -rf path. */
void t_rmrf(const char *path);
/* Write len bytes of deterministic data (seeded) to dir/rel, creating
 * parent directories. */
void t_write(const char *dir, const char *rel, size_t len, uint32_t seed);
/* Fill buf like t_write would. */
void t_fill(uint8_t *buf, size_t len, uint32_t seed);
/* Read a whole file; returns malloc'd bytes and sets *len. */
uint8_t *t_read(const char *path, size_t *len);
/* Byte-compare two files. @return 1 if equal. */
int t_same_file(const char *a, const char *b);
/* Pack the tree at src into the dataset out (chunk_size, container_size,
 * align 0 for the default); prints the error. @return 0 or -errno. */
int t_pack(const char *src, const char *out, uint64_t chunk_size,
	   uint64_t container_size, uint64_t align);
/* Flip (xor 0xff) the byte at off of the file at path; abort on failure. */
void t_flip(const char *path, uint64_t off);
/* dir/rel, malloc'd; abort on failure. */
char *t_path(const char *dir, const char *rel);
/* Milliseconds of a monotonic clock. */
uint64_t t_ms(void);
/* Sleep ms milliseconds. */
void t_sleep_ms(unsigned ms);
/* Print the summary and return the exit status. */
int t_done(const char *name);

#endif
