/*
 * Shared by the fuzz targets (tests/fuzz/<target>.c) and the seed maker
 * (mkseeds.c): the input format, and the one way a target reports a
 * broken contract.
 *
 * An input is a list of entries, each
 *   u8 tag | u16 klen (LE) | u32 vlen (LE) | klen bytes key | vlen bytes value
 * where tag names an LMDB database of the index (FUZZ_META..FUZZ_CONTAINERS:
 * key and value as stored there), a container file (FUZZ_FILE: key is the
 * container number as a be32, value the file's bytes), or flags for the
 * target (FUZZ_FLAGS: the value's first byte). Unknown tags are skipped;
 * parsing stops at the first entry that runs past the input. The format
 * lets the fuzzer mutate record values, keys and container bytes
 * independently, and seeds are real datasets dumped into it.
 *
 * Targets never keep state between inputs other than what
 * LLVMFuzzerInitialize sets up. Single-threaded.
 */
#ifndef DLFS_FUZZLIB_H
#define DLFS_FUZZLIB_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

enum fuzz_tag {
	FUZZ_META,
	FUZZ_INODES,
	FUZZ_SYMLINKS,
	FUZZ_DIRENTS,
	FUZZ_CHUNKS,
	FUZZ_CONTAINERS,
	FUZZ_FILE,
	FUZZ_FLAGS,
	FUZZ_NTAGS
};
#define FUZZ_HDR 7

struct fuzz_ent {
	uint8_t tag;
	const uint8_t *key, *val;
	size_t klen, vlen;
};

/* A target found a broken contract: say which, then crash so that the
 * fuzzer keeps the input. */
#define FUZZ_ASSERT(cond)                                                     \
	do {                                                                  \
		if (!(cond)) {                                                \
			fprintf(stderr, "%s:%d: FUZZ_ASSERT failed: %s\n",    \
				__FILE__, __LINE__, #cond);                   \
			abort();                                              \
		}                                                             \
	} while (0)

/* Parse up to max entries of data. @return how many. */
size_t fuzz_parse(const uint8_t *data, size_t size, struct fuzz_ent *out,
		  size_t max);

/* The first entry with this tag (and this key, unless key is NULL), or
 * NULL. */
const struct fuzz_ent *fuzz_find(const struct fuzz_ent *e, size_t n,
				 uint8_t tag, const void *key, size_t klen);

/* The first byte of the FUZZ_FLAGS entry, or 0. */
unsigned fuzz_flags(const struct fuzz_ent *e, size_t n);

/* A growing output buffer, for mkseeds. */
struct fuzz_buf {
	uint8_t *p;
	size_t len, cap;
};
/* Append one entry. @return 0 or -ENOMEM / -E2BIG (key over 64 KiB). */
int fuzz_put(struct fuzz_buf *b, uint8_t tag, const void *key, size_t klen,
	     const void *val, size_t vlen);

/* Copy n bytes to a new exact-size heap buffer (so ASan sees overreads);
 * aborts when out of memory. */
uint8_t *fuzz_dup(const void *p, size_t n);

#endif
