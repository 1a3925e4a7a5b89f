/*
 * What a reader is told of a failed read (read_errors.c), for the read
 * path (read_path.c). The index's errors, which the daemon's lookups also
 * meet, are reader.h's dlfs_reader_index_error*.
 *
 * Threads: called by the thread that owns the context; the log's memory
 * of what it already named is guarded by the reader's log lock, a leaf
 * (read.h).
 */
#ifndef DLFS_READ_ERRORS_PRIV_H
#define DLFS_READ_ERRORS_PRIV_H

#include <stdint.h>

#include "read.h"

/* The failure ret of a read of ino, err saying why: damaged or unreadable
 * data is counted, the file named in the log once per mount, x's cause
 * set, and @return -EIO; what says something else (-ENOMEM, -EINTR,
 * -EAGAIN, -ETIMEDOUT) is returned as it is. */
int dlfs_read_failed(struct dlfs_reader_ctx *x, uint64_t ino, int ret,
		     const struct dlfs_err *err);

#endif
