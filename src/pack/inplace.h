/*
 * In-place datasets (dlfs-pack --in-place; format.h, DLFS_FEATURE
 * (IN_PLACE)): the sources are the user's uncompressed tar and zip
 * archives, which become the dataset's containers where they are. Each
 * archive is read once, front to back, in large reads: its members go
 * into the tree with their logical place in the archive's data stream
 * (pk_attr.spool_off) and their content hash (pk_attr.sum), and its
 * chunks, runs of whole members, get their checksums on the way
 * (inplace_run.c). The layout then numbers files in archive order
 * (pk_layout_in_place), and the index refers to the archives by path.
 * Not installed. Called from dlfs_pack's thread only.
 */
#ifndef DLFS_PACK_INPLACE_H
#define DLFS_PACK_INPLACE_H

#include <stdint.h>

#include "index_write.h"
#include "ingest.h"
#include "tree.h"

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
};

/*
 * Read the n sources (every one a tar or zip archive, refused with a
 * message otherwise) into t and ip, recording each archive's path
 * relative to the directory that will hold OUT (absolute when
 * o->in_place_absolute). @return 0 or a negative errno with err naming
 * the archive, the member and the offset.
 */
int pk_inplace_scan(struct pk_tree *t, const struct pk_source *src,
		    unsigned n, const char *out, const struct dlfs_pack_opts *o,
		    struct pk_inplace *ip, struct dlfs_err *err);
void pk_inplace_free(struct pk_inplace *ip);

/* Append a chunk record to ip (inplace_run.c). @return 0 or -ENOMEM. */
int pk_ip_add_chunk(struct pk_inplace *ip, uint64_t xxh3, uint64_t sum,
		    uint64_t stored_offset, uint32_t stored_length,
		    uint32_t length, uint32_t flags);

#endif
