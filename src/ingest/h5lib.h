/*
 * The one module that touches HDF5's process-wide state: the library's
 * automatic error printing, its error stack (translated here, once, into
 * a negative errno and a message), and the file access properties every
 * ingest module uses. Not installed.
 *
 * HDF5 keeps global state that no caller can avoid (its ID tables, its
 * error-printing hook). pk_h5_begin silences the hook for the calling
 * thread's error stack and pk_h5_end puts back what the host program had,
 * so packing never prints HDF5 traces and leaves the host's settings as
 * they were.
 *
 * Thread-safety: Debian's libhdf5 is built thread-safe and serialises
 * every call on one lock; call these from one thread per process. Ingest
 * gets its parallelism from processes (workers.c), not threads.
 */
#ifndef DLFS_INGEST_H5LIB_H
#define DLFS_INGEST_H5LIB_H

#include <hdf5.h>
#include <stddef.h>

#include "dlfs/err.h"

struct pk_h5_state {
	H5E_auto2_t func;
	void *data;
	int saved;
};

/* Start using HDF5: open the library, silence error printing. @return 0
 * or -EIO. */
int pk_h5_begin(struct pk_h5_state *st, struct dlfs_err *err);
/* Restore the error printing pk_h5_begin found. */
void pk_h5_end(struct pk_h5_state *st);

/*
 * Set err from HDF5's current error stack, prefixed by the printf-style
 * context (file, dataset, rows), then clear the stack. The message names
 * the innermost failure HDF5 recorded (the most specific one) and its
 * class. Call it right after the failed call: every HDF5 API call
 * clears the stack when it starts. The code: an errno HDF5 reported from a system call, -ENOMEM for
 * an allocation failure, -EIO for a failed read or filter, -EINVAL for
 * anything else (not HDF5, damaged, unsupported). @return that code.
 */
int pk_h5_fail(struct dlfs_err *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * Open path read-only with file locking off (a read-only source on a
 * parallel file system often has no working flock), and no metadata
 * cache growth beyond HDF5's defaults. @return a file id, or a negative
 * errno with err naming path.
 */
hid_t pk_h5_open(const char *path, struct dlfs_err *err);

/*
 * A file access property list for building a file in memory (core
 * driver, no backing store), and the matching creation list: no object
 * times, so that identical content gives identical bytes. @return 0 or
 * a negative errno; the caller closes both with H5Pclose.
 */
int pk_h5_mem_plists(size_t increment, hid_t *fapl, hid_t *fcpl,
		     struct dlfs_err *err);

/* The bytes of an open in-memory file, flushed. @return 0 or -errno;
 * *buf is malloc'd, the caller frees it. */
int pk_h5_image(hid_t fid, unsigned char **buf, size_t *len,
		struct dlfs_err *err);

/* Close an id of any kind if it is valid (>= 0). */
void pk_h5_close(hid_t id);

#endif
