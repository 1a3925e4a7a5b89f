/*
 * HDF5 datatypes as numpy sees them: which types can be split, their
 * numpy dtype (as the Python literal a .npy header holds), and .npy
 * headers. Not installed.
 *
 * Samples keep the bytes HDF5 stores, in the file's own byte order:
 * datasets are read with a copy of their file type as the memory type,
 * so HDF5 converts nothing, and the dtype says what those bytes are
 * ('>f4' for big-endian floats, structured dtypes with explicit padding
 * for compounds). What numpy cannot hold without pickling, and what has
 * no meaning outside its file, is refused: variable-length strings and
 * sequences, object and region references, H5T_TIME, floats that are not
 * IEEE 754 binary16/32/64, and integers with unused bits.
 *
 * Ownership: pk_npy_type owns its descr; pk_npy_type_free releases it.
 * Thread-safety: as h5lib.h (HDF5 calls).
 */
#ifndef DLFS_INGEST_H5TYPE_H
#define DLFS_INGEST_H5TYPE_H

#include <hdf5.h>

#include "dlfs/err.h"

/* The types pk_h5_npy_type refuses, for messages. */
#define PK_H5_REFUSED                                                        \
	"variable-length strings and sequences, object and region "          \
	"references, H5T_TIME, non-IEEE floats and integers with padding "   \
	"bits"

struct pk_npy_type {
	char *descr;                  /* e.g. "'<f4'" or "[('x', '<i2')]" */
	hsize_t extra[H5S_MAX_RANK];  /* dims of a top-level array type */
	int n_extra;
	int utf8;                     /* a field name is not ASCII */
	size_t size;                  /* bytes of one element */
};

/*
 * Describe file type t. A top-level array type becomes its base type,
 * with its dimensions in extra (they extend the shape). @return 0, or
 * -ENOTSUP with err saying "WHERE: <what the type is> cannot be split",
 * or -ENOMEM.
 */
int pk_h5_npy_type(hid_t t, struct pk_npy_type *out, const char *where,
		   struct dlfs_err *err);
void pk_npy_type_free(struct pk_npy_type *t);

/*
 * The header of a .npy file holding one C-ordered array of shape
 * dims[0..n) then t->extra: version 1.0 (2.0 if it is longer than 64 KiB,
 * 3.0 for non-ASCII field names), padded so that the data starts at a
 * multiple of 64 bytes (aligned for np.load(mmap_mode='r')).
 * @return 0 or -ENOMEM; *out is malloc'd.
 */
int pk_npy_header(const struct pk_npy_type *t, const hsize_t *dims, int n,
		  char **out, size_t *len, struct dlfs_err *err);

/* Python literal of a shape, e.g. "()", "(5,)", "(3, 4)", into buf. */
void pk_shape_str(const hsize_t *dims, int n, const hsize_t *extra,
		  int n_extra, char *buf, size_t len);

#endif
