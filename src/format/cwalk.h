/*
 * A container's regular files streamed through its chunks: each chunk is
 * read (and decompressed) once, front to back, into one buffer, and the
 * files, whose inode order is their layout order, are handed out piece
 * by piece as the chunks pass, each with its checksum checked. Whoever
 * reads every file of a dataset walks its containers this way:
 * dlfs_verify (verify.c) and dlfs_extract (extract.c). This module owns
 * the walk; its callers own what they do with the bytes.
 *
 * A file whose inode record breaks the layout order (it starts before the
 * current chunk and is not the one being streamed: a damaged index) is
 * read alone, piece by piece, through a side buffer.
 *
 * Memory: one chunk buffer, a decoder for a compressed dataset (one more
 * chunk), and a side buffer of 1 MiB once a file is read alone. Private
 * to libdlfs; a walker belongs to one thread at a time.
 */
#ifndef DLFS_CWALK_H
#define DLFS_CWALK_H

#include <stddef.h>
#include <stdint.h>

#include "dlfs/dataset.h"
#include "dlfs/err.h"

/*
 * What the caller does as the walk goes. Each callback returns 0 to go
 * on, or a negative errno (err set) to stop the walk, which then returns
 * it. Any of them may be NULL.
 */
struct dlfs_cwalk_ops {
	/*
	 * Chunk k, whose logical bytes start at container offset start, was
	 * read. st is 0, or why its bytes cannot be trusted: -EUCLEAN or
	 * -ENOENT (its record is damaged or missing), -EBADMSG or -EUCLEAN
	 * (its stored bytes fail their checksum or do not decompress), or
	 * -ENODATA (its stored bytes end past the cut of a container cut
	 * short: dlfs_ds_container_cut), with msg naming the chunk. A
	 * compressed chunk that failed, and any chunk past a cut, reads as
	 * zeros, so its files fail: those with bytes in a chunk past a cut
	 * fail as such, whatever their checksums. msg is NULL when the
	 * bytes were read whole and only the chunk's checksum failed (an
	 * uncompressed dataset): the files' own checksums tell which of them
	 * are damaged.
	 */
	int (*chunk)(void *arg, uint64_t k, uint64_t start, int st,
		     const char *msg, struct dlfs_err *err);
	/* After the files that end in chunk k. */
	int (*chunk_end)(void *arg, uint64_t k, uint64_t start,
			 struct dlfs_err *err);
	/* File in starts: its bytes follow through data, then it ends with
	 * file. Not called for a file whose bytes cannot be had at all. */
	int (*begin)(void *arg, const struct dlfs_inode *in,
		     struct dlfs_err *err);
	/* The next n bytes of file in, in order. */
	int (*data)(void *arg, const struct dlfs_inode *in, const void *p,
		    size_t n, struct dlfs_err *err);
	/*
	 * File in is done: bad is NULL when its bytes match its checksum,
	 * else why not. A damaged inode record, or one that is not a file
	 * of this container, comes here alone (no begin) with only in->ino
	 * set (in->mode is 0) and bad saying so.
	 */
	int (*file)(void *arg, const struct dlfs_inode *in, const char *bad,
		    struct dlfs_err *err);
};

struct dlfs_cwalk;

/*
 * A walker of ds's containers with txn (the caller's, which must outlive
 * the walker), calling ops with arg. @return 0 or -ENOMEM.
 */
int dlfs_cwalk_new(struct dlfs_ds *ds, struct dlfs_txn *txn,
		   const struct dlfs_cwalk_ops *ops, void *arg,
		   struct dlfs_cwalk **out, struct dlfs_err *err);
/* NULL is ok. */
void dlfs_cwalk_free(struct dlfs_cwalk *w);

/*
 * Walk container c: its chunks in order, and its files (inodes
 * first_ino .. first_ino + n_files of its table entry) in inode order;
 * files that lie past its chunks are done last, as bad unless they are
 * empty. Damage goes to the callbacks, not into the return; that
 * includes a container cut short, whose chunks past the cut come to
 * ops->chunk as -ENODATA.
 * @return 0, a negative errno that the callbacks returned, or one of a
 * read that failed for another reason than damage (an unusable
 * container: -ENOENT, -EUCLEAN; an I/O error), err saying which.
 */
int dlfs_cwalk_container(struct dlfs_cwalk *w, uint32_t c,
			 struct dlfs_err *err);

#endif
