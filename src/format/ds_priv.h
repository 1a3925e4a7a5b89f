/*
 * Private layout of struct dlfs_ds: the index (index.h) and the container
 * files. dataset.c owns it; verify.c and extract.c read it. Not installed.
 *
 * Locking: container opens take ds->open_lock; once a container's state
 * is set (ok or failed) it never changes, and readers check it with an
 * acquire load, so the read path takes no lock.
 */
#ifndef DLFS_DS_PRIV_H
#define DLFS_DS_PRIV_H

#include <pthread.h>
#include <stdatomic.h>

#include "dlfs/dataset.h"
#include "index.h"

struct dlfs_container_slot {
	_Atomic int state; /* 0 not tried, 1 open, < 0 failed with that errno */
	int fd;
	uint64_t size; /* of the file, when open: less than the index's
			* file_size in a container cut short */
	int dfd; /* the same file for chunk reads (RANDOM, DIRECT), or -1 */
	int dfd_direct; /* dfd has O_DIRECT */
	/* The file offsets and lengths O_DIRECT reads on dfd must be
	 * multiples of (statx STATX_DIOALIGN; 4096 when the file system does
	 * not say): a tar member's bytes start on 512 bytes, so on most
	 * local file systems an archive's chunk is read straight into its
	 * buffer. */
	uint32_t dio_align;
	/* With dfd O_DIRECT: the same file with no read-ahead (RANDOM), for
	 * the reads O_DIRECT cannot do (an in-place dataset's chunks start
	 * anywhere in their archive), or -1. Without it, such a read would
	 * go through fd, whose read-ahead fetches bytes past the chunk that
	 * the next read of another chunk has dropped already. */
	int rfd;
	char *msg; /* why it failed, when state < 0 */
};

struct dlfs_ds {
	char *path;
	struct dlfs_index ix;
	pthread_mutex_t open_lock;
	struct dlfs_container_slot *containers; /* n_containers slots */
	enum dlfs_chunk_io chunk_io; /* dlfs_ds_set_chunk_io */
};

/* Stored bytes of chunk k of container c (open) that end at byte end:
 * @return 0 when they lie before the end of the file, else -EUCLEAN, err
 * naming the container, its size and the index's, and the chunk. */
int dlfs_ds_past_cut(const struct dlfs_ds *ds, uint32_t c, uint64_t k,
		     uint64_t end, struct dlfs_err *err);

/* Is [off, off + len) of container c (a dataset whose chunks lie at
 * their logical place) readable: does the chunk of its last byte end
 * before a cut? @return 0 or -EUCLEAN with err (dlfs_ds_past_cut). */
int dlfs_ds_raw_past_cut(const struct dlfs_ds *ds, uint32_t c, uint64_t off,
			 size_t len, struct dlfs_err *err);

/* Logical bytes [off, off + len) of container c's data stream into buf,
 * chunk by chunk, each read and checked (and decompressed) whole: for
 * datasets whose chunks are stored apart (dataset_chunk.c). @return 0,
 * or as dlfs_ds_chunk_logical. */
int dlfs_ds_logical_read(struct dlfs_ds *ds, uint32_t c, uint64_t off,
			 size_t len, void *buf, struct dlfs_err *err);

/* Container c's file for messages: the dataset's NNNNNN.dlc, or an
 * in-place dataset's archive (dlfs_archive_path); into buf (cap bytes,
 * DLFS_CPATH_MAX will do), cut short if longer. @return buf. */
#define DLFS_CPATH_MAX 8192
const char *dlfs_ds_cpath(const struct dlfs_ds *ds, uint32_t c, char *buf,
			  size_t cap);

/* Are ds's chunks stored apart from their logical place
 * (dlfs_stored_apart: compressed or in place)? */
int dlfs_ds_compressed(const struct dlfs_ds *ds);

/* Archive c of an in-place dataset, open as fd at cpath, against its
 * record (archives.c). @return 0 or -EUCLEAN with err saying what
 * changed. */
int dlfs_archive_check_fd(const struct dlfs_ds *ds, uint32_t c, int fd,
			  const char *cpath, struct dlfs_err *err);

/*
 * Chunk k of container c of a compressed dataset, record cr (checked by
 * dlfs_chunk_get), as its logical bytes (cr->length) into buf (cap >=
 * the chunk size): its stored bytes read, checked against cr->xxh3, and
 * decompressed when cr->flags says zstd (with dec's context and buffer;
 * NULL: a temporary one), then checked against cr->sum.
 * @return 0, -EBADMSG (DLFS_ECHECKSUM: the stored or the decompressed
 * bytes' checksum), -EUCLEAN (a frame that
 * does not decompress to cr->length bytes; a short container), -ENOENT
 * or -EUCLEAN for an unusable container, -errno; err names the
 * container, the chunk and its offset.
 */
int dlfs_ds_chunk_logical(struct dlfs_ds *ds, uint32_t c, uint64_t k,
			  const struct dlfs_chunk_rec *cr,
			  struct dlfs_decoder *dec, void *buf, size_t cap,
			  struct dlfs_err *err);

#endif
