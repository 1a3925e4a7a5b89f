/*
 * The index writer (index_write.c): the dataset id, and the LMDB index
 * from the laid-out tree and the checksums the pipeline and the
 * containers gave. Not installed. Called from dlfs_pack's thread only.
 */
#ifndef DLFS_PACK_INDEX_WRITE_H
#define DLFS_PACK_INDEX_WRITE_H

#include "layout.h"

/* Chunk records, per global chunk number, filled by the pipeline: xxh3 of
 * the stored bytes, and where they are (stored_offset, stored_length,
 * flags) and xxh3 of the logical bytes (sum); all but xxh3 and length
 * used only with --compress. */
struct pk_chunks {
	uint64_t *xxh3;
	uint64_t *sum;
	uint32_t *length;
	uint32_t *stored_length;
	uint64_t *stored_offset;
	uint32_t *flags;
};

/* The feature bits a pack with options o writes. */
uint64_t pk_features(const struct dlfs_pack_opts *o);

/* Footer checksums and file sizes, per container, filled by
 * pk_container_finish (container.h). */
struct pk_ip_archive;
struct pk_containers {
	uint64_t *file_size;
	uint64_t *footer_xxh3;
	/* An in-place dataset's archives (inplace.h), per container: their
	 * records go to the archives database. NULL otherwise. */
	const struct pk_ip_archive *arc;
};

/* XXH3-128 over every entry's metadata and content hash. @return 0 or
 * -errno (reading the attributes) with err set. */
int pk_dataset_id(const struct pk_tree *t, const struct pk_layout *l,
		  const struct dlfs_pack_opts *o, uint8_t id[DLFS_ID_SIZE],
		  struct dlfs_err *err);

/* Write the LMDB index to path. @return 0 or a negative errno. */
int pk_index_write(const char *path, const struct pk_tree *t,
		   const struct pk_layout *l,
		   const struct dlfs_pack_opts *o, const uint8_t *id,
		   const struct pk_chunks *ch, const struct pk_containers *ct,
		   struct dlfs_err *err);

#endif
