/*
 * In-place datasets (dlfs-pack --in-place; format.h, DLFS_FEATURE
 * (IN_PLACE)): the sources are the user's uncompressed tar and zip
 * archives, which become the dataset's containers where they are. Each
 * archive is read once, front to back, in large reads, by one worker:
 * its members, with their logical place in the archive's data stream
 * (pk_attr.spool_off) and their content hash (pk_attr.sum), and its
 * chunks, runs of whole members with their checksums (inplace_run.c),
 * go into a part (inplace_part.h). Worker threads read several archives
 * at once (inplace_par.c); the ranks of a shared pack each read their
 * share, balanced by bytes. dlfs_pack's thread on rank 0 puts the parts
 * into the tree in archive order, so the tree and the index are the
 * same whatever the number of workers and ranks. The layout then numbers
 * files in archive order (pk_layout_in_place), and the index refers to
 * the archives by path.
 *
 * Not installed. The functions below are called from dlfs_pack's
 * thread only; the tree is never touched by a worker.
 */
#ifndef DLFS_PACK_INPLACE_H
#define DLFS_PACK_INPLACE_H

#include <stdint.h>

#include "index_write.h"
#include "ingest.h"
#include "tree.h"
#include "util.h"

/* One archive of an in-place dataset: its record (format.h) and where
 * its chunks are in the dataset's numbering. */
struct pk_ip_archive {
	char *path; /* as the index records it (inplace.c, ip_record_path) */
	uint64_t size;
	int64_t mtime_sec;
	uint32_t mtime_nsec;
	uint32_t kind;      /* DLFS_ARCHIVE_TAR or DLFS_ARCHIVE_ZIP */
	uint64_t data_size; /* logical bytes of its chunks */
	uint64_t n_chunks, first_chunk;
};

/* Everything the archives gave but the tree: the archives in source
 * order, and every chunk's record in the global numbering (as the
 * pipeline gives a packed dataset's). */
struct pk_inplace {
	struct pk_ip_archive *arc;
	uint32_t n;
	struct pk_chunks ch;
	uint64_t n_ch, cap_ch;
	uint64_t files, bytes; /* members indexed, their bytes: progress */
	/* Ranks other than 0: the parts of their share [part0, part1),
	 * kept for pk_inplace_gather. */
	struct dlfs_str *part;
	uint32_t part0, part1;
};

/*
 * Index this rank's share of the n sources (every one of them without
 * c, a comm of more than one rank): every one a tar or zip archive,
 * refused with a message otherwise. o->procs worker threads (0: one per
 * CPU this process may use), at most one per archive, each read whole
 * archives. Rank 0 puts its share into t and ip as the archives
 * complete, in archive order, recording each archive's path relative to
 * the directory that will hold OUT, and reports progress (phase "scan":
 * files and bytes read so far, of the archives' bytes). Other ranks keep their
 * parts in ip. @return 0 or a negative errno with err naming the
 * archive, the member and the offset: the first failure in archive
 * order, as reading them one by one would give.
 */
int pk_inplace_index(const struct dlfs_pack_comm *c, struct pk_tree *t,
		     const struct pk_source *src, unsigned n, const char *out,
		     const struct dlfs_pack_opts *o, struct pk_inplace *ip,
		     struct dlfs_err *err);

/*
 * Collective over c, after pk_inplace_index on every rank: the other
 * ranks' parts to rank 0, which puts them into t and ip in archive
 * order (and hears every rank out, even after a failure). @return 0 or
 * a negative errno, on rank 0 the first failure in archive order.
 */
int pk_inplace_gather(const struct dlfs_pack_comm *c, struct pk_tree *t,
		      const struct pk_source *src, unsigned n,
		      const char *out, const struct dlfs_pack_opts *o,
		      struct pk_inplace *ip, struct dlfs_err *err);

/* Archive i's part (inplace_part.h), the archive at path, into t and ip
 * (inplace.c). @return 0, or the archive's failure, or one putting a
 * member into the tree (a hostile or duplicate path), or -EPROTO. */
int pk_ip_part_apply(struct pk_tree *t, struct pk_inplace *ip, uint32_t i,
		     const char *path, const char *out,
		     const struct dlfs_str *part,
		     const struct dlfs_pack_opts *o, struct dlfs_err *err);

/* The same, a piece at a time as the worker hands them over: begin,
 * then each piece (whole records) in order, then end, which fails
 * unless the part's end record came. */
struct pk_ip_apply {
	struct pk_tree *t;
	struct pk_inplace *ip;
	uint32_t src;
	const char *path, *out;
	const struct dlfs_pack_opts *o;
	int ended; /* its end record applied */
};

void pk_ip_apply_begin(struct pk_ip_apply *x, struct pk_tree *t,
		       struct pk_inplace *ip, uint32_t i, const char *path,
		       const char *out, const struct dlfs_pack_opts *o);
int pk_ip_apply_piece(struct pk_ip_apply *x, const char *p, size_t n,
		      struct dlfs_err *err);
int pk_ip_apply_end(struct pk_ip_apply *x, struct dlfs_err *err);
void pk_inplace_free(struct pk_inplace *ip);

/* Append a chunk record to ip (inplace_run.c). @return 0 or -ENOMEM. */
int pk_ip_add_chunk(struct pk_inplace *ip, uint64_t xxh3, uint64_t sum,
		    uint64_t stored_offset, uint32_t stored_length,
		    uint32_t length, uint32_t flags);
/* Free ip's chunk records, and forget them (inplace_run.c). */
void pk_ip_chunks_free(struct pk_inplace *ip);

#endif
