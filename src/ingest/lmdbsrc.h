/*
 * An LMDB environment as a source: each key/value pair of its main
 * database becomes a file TOP/NAME holding the value, and TOP/.keys lists
 * the names in key order. Not installed.
 *
 * NAME is the key itself when the key is a good file name: 1 to 255
 * bytes of valid UTF-8 with no '/', no control characters (below 0x20,
 * 0x7f), not starting with '.' or '%'. Any other key of up to 127 bytes
 * is named '%' followed by its bytes in lowercase hex; a longer one
 * '%%' followed by the hex of its XXH3-128 (then only .keys gives the
 * key back). .keys has one line per key, in key order: NAME, a tab, the
 * key in lowercase hex.
 *
 * The environment is opened MDB_RDONLY|MDB_NOLOCK, so a read-only copy
 * on a parallel file system works and no lock file is touched; nothing
 * may write to it while it is packed. Values are not copied: each file
 * is recorded as a range of the environment's data file, which the pack
 * then reads in place. Environments with duplicate keys (MDB_DUPSORT) or
 * named databases are refused.
 *
 * Thread-safety: none needed; one call at a time per sink.
 */
#ifndef DLFS_INGEST_LMDBSRC_H
#define DLFS_INGEST_LMDBSRC_H

#include <stddef.h>

#include "dlfs/err.h"
#include "sink.h"

/* The data file of the environment at path: path/data.mdb, or path. */
int pk_lmdb_data_path(const char *path, int subdir, char **out);

/*
 * Record every key of the environment at path (a directory with
 * data.mdb when subdir, else the file itself) under top, into sink,
 * whose source the caller has begun with the data file. @return 0 or a
 * negative errno with err naming the environment: -EUCLEAN (not LMDB,
 * damaged), -ENOTSUP (duplicate keys, named databases), -errno.
 */
int pk_lmdb_ingest(const char *path, int subdir, const char *top,
		   struct pk_sink *sink, struct dlfs_err *err);

/* The name of a key, as above, into out (at least 256 bytes). */
void pk_lmdb_name(const void *key, size_t len, char *out);

#endif
