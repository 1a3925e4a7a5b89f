/*
 * One archive of an in-place dataset indexed apart from the tree
 * (inplace.h): a worker reads the archive through a run (inplace_run.h,
 * inplace_fmt.h) and writes what the tree needs of it into a part, a
 * flat buffer of records in the order they came; dlfs_pack's thread
 * later reads the part back, record by record, into the tree
 * (pk_ip_part_apply, inplace.c). Applying a part does, in the same
 * order, what reading the archive straight into the tree would have
 * done, so the tree, and the index, do not depend on which worker read
 * which archive, or when.
 *
 * A part is plain bytes in the host's byte order (the ranks of a shared
 * pack run one build on one machine family), so it travels between the
 * ranks as it is. Its records, each a type byte and fixed fields:
 *   F  the archive failed: early (before its size was known: open,
 *      stat, not a file) or not, and the error; always the last record
 *   S  its size and mtime, first when it opened
 *   M  a member, as the format's walk gave it (inplace_fmt.h)
 *   W  a warning, in its place among the members
 *   C  a chunk record, in the archive's numbering from 0
 *   E  the end: the archive's kind, logical data size and chunk count
 *
 * Ownership: a part is a struct dlfs_str, its owner's. Thread-safety:
 * pk_ip_part_make runs in any number of threads at once, each with its
 * own part; the counters are shared atomics.
 */
#ifndef DLFS_PACK_INPLACE_PART_H
#define DLFS_PACK_INPLACE_PART_H

#include <stdatomic.h>
#include <stdint.h>

#include "inplace_fmt.h"
#include "util.h"

/* What the workers have done so far, for the progress line. */
struct pk_ip_counters {
	atomic_uint_least64_t files; /* regular members read */
	atomic_uint_least64_t bytes; /* archive bytes read */
};

/* One record, as pk_ip_part_next reads it; strings point into the
 * part. */
struct pk_ip_rec {
	char type;          /* 'F', 'S', 'M', 'W', 'C' or 'E' */
	struct ip_member m; /* M */
	const char *msg;    /* W */
	int early;          /* F */
	struct dlfs_err fail;
	uint64_t size; /* S */
	int64_t mtime_sec;
	uint32_t mtime_nsec;
	uint64_t xxh3, sum, stored_offset; /* C */
	uint32_t stored_length, length, flags;
	uint32_t kind; /* E */
	uint64_t data_size, n_chunks;
};

/*
 * Where a worker hands its part over while it reads, so that the part
 * is applied as it grows and never held whole: give takes the bytes of
 * *piece, whole records, and leaves it empty. It is called when the
 * part reaches PK_IP_PIECE bytes, and at its end. @return 0 or -ENOMEM.
 */
struct pk_ip_sink {
	int (*give)(void *arg, struct dlfs_str *piece);
	void *arg;
};

/* About 3,000 members of a tar of small files. */
#define PK_IP_PIECE ((size_t)256 << 10)

/*
 * Read the archive at path whole, front to back, into part (empty
 * before), with o's chunk size and cancel flag; its warnings become
 * records rather than going to o->warn. A failure of the archive is a
 * record (F), the part's last. With a sink, the part goes to it in
 * pieces, the last one included, and part ends empty. @return 0, 1
 * when the archive failed, or -ENOMEM when the part could not hold its
 * records (part->oom).
 */
int pk_ip_part_make(const char *path, const struct dlfs_pack_opts *o,
		    struct pk_ip_counters *c, const struct pk_ip_sink *sink,
		    struct dlfs_str *part);

/* Where a reading of a part is. */
struct pk_ip_part_rd {
	const char *p, *end;
};

/* The next record of the part rd reads. @return 1 with *rec, 0 at the
 * end, or -EPROTO for a damaged part. */
int pk_ip_part_next(struct pk_ip_part_rd *rd, struct pk_ip_rec *rec);

#endif
