/*
 * What a mount answers, without FUSE: lookups, attributes, links,
 * listings, reads, statfs and xattrs of the dataset and of its /.dlfs
 * namespace, decided once for both front ends. fuse_ll.c turns the
 * answers into FUSE replies, serve.c into replies on the wire of
 * libdlfs-preload.so. Each call counts its op in the mount's stats as a
 * FUSE request would be counted.
 *
 * Errors are negative errnos; a damaged index record met here is -EIO,
 * counted and logged (dlfs_reader_index_error).
 *
 * Thread-safety: any thread of a started fs (fs.h); each uses its own
 * read context (dlfs_fs_ctx).
 */
#ifndef DLFS_OPS_H
#define DLFS_OPS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/uio.h>

#include "fs.h"

/*
 * name in directory parent (the dataset's or the control namespace's).
 * @return 0 with *ino, *st and *attr_timeout (seconds); -ENOENT when there
 * is no such name; or another -errno.
 */
int dlfs_ops_lookup(struct dlfs_fs *fs, uint64_t parent, const char *name,
		    uint64_t *ino, struct stat *st, double *attr_timeout);

/* @return 0 with *st and *attr_timeout, or -errno. */
int dlfs_ops_getattr(struct dlfs_fs *fs, uint64_t ino, struct stat *st,
		     double *attr_timeout);

/* A symlink's target into buf (PATH_MAX + 1 bytes), NUL-ended.
 * @return its length, or -EINVAL (not a symlink), -ENAMETOOLONG, -errno. */
int dlfs_ops_readlink(struct dlfs_fs *fs, uint64_t ino, char *buf);

/*
 * One entry of a listing: its name (len bytes, not NUL-ended), its
 * attributes and the offset that resumes after it. st always has st_ino
 * and the type bits of st_mode; attrs is 1 when it has all the
 * attributes (a "plus" listing), 0 when it has only those (a plain
 * listing, or a plus listing's entry whose inode record is damaged or
 * bound to another name: no dentry may be made of it). Return 0 to go
 * on, 1 when there is no room (the entry is not consumed).
 */
typedef int (*dlfs_ops_dir_fn)(void *arg, const char *name, size_t len,
			       const struct stat *st, int attrs,
			       uint64_t next);

/*
 * List directory ino from offset off (0: the start; "." is offset 1 and
 * ".." offset 2, as FUSE has them). @return 0 (also when fn stopped),
 * -ENOTDIR, or -errno; an error after some entries were given is still
 * returned, and the caller decides (FUSE replies with what it has).
 */
int dlfs_ops_readdir(struct dlfs_fs *fs, uint64_t ino, uint64_t off, int plus,
		     dlfs_ops_dir_fn fn, void *arg);

/* Where a read's bytes are, until dlfs_ops_read_done. */
struct dlfs_ops_read {
	const struct iovec *iov;
	int iovcnt;
	size_t len;
	/* private */
	struct iovec one;
	char *owned;  /* a control file's bytes */
	int pinned;   /* dlfs_read_done is due */
};

/*
 * Read up to size bytes of ino at off: a dataset file through the read
 * core, a control file's bytes, or a sample's (the file it stands for).
 * Every byte up to the end is given (a short read only at the end).
 * dlfs_ops_read_done must follow every call, also a failed one.
 * @return 0 or -errno.
 */
int dlfs_ops_read(struct dlfs_fs *fs, struct dlfs_reader_ctx *x, uint64_t ino,
		  uint64_t off, size_t size, struct dlfs_ops_read *out);
void dlfs_ops_read_done(struct dlfs_reader_ctx *x, struct dlfs_ops_read *r);

void dlfs_ops_statfs(struct dlfs_fs *fs, struct statvfs *sv);

/* The names of the xattrs of a regular file, each NUL-ended. */
extern const char dlfs_ops_xattr_names[];
extern const size_t dlfs_ops_xattr_names_len;

/*
 * The value of xattr name of ino into buf (len bytes; NUL-ended when it
 * fits), or with name NULL only whether ino has xattrs (*is_file).
 * Counts a getxattr, or with name NULL a listxattr. @return the value's
 * length, -ENODATA, or -errno.
 */
int dlfs_ops_xattr(struct dlfs_fs *fs, uint64_t ino, const char *name,
		   char *buf, size_t len, int *is_file);

#endif
