/*
 * What a mount answers, without FUSE: see ops.h.
 */
#include "ops.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dlfs/format.h"

static void count(struct dlfs_fs *fs, enum dlfs_op op)
{
	dlfs_stats_add(&fs->reader->stats.ops[op], 1);
}

/* An EIO given for code (the damage behind it), noted on the thread's
 * context if it has one: the preload's server tells its client. */
static int noted(struct dlfs_fs *fs, int code, int ret)
{
	struct dlfs_reader_ctx *x = pthread_getspecific(fs->ctx_key);
	if (x && ret == -EIO && code != ret)
		dlfs_reader_ctx_note(x, code);
	return ret;
}

/* A damaged index record met by an op other than read: EIO, logged. */
static int index_err(struct dlfs_fs *fs, int ret, const struct dlfs_err *err)
{
	const char *msg = err->code ? err->msg : "damaged index record";
	return noted(fs, ret, dlfs_reader_index_error(fs->reader, ret, msg));
}

/* The same for damage met through the entry name of directory parent:
 * logged once for that entry, however often it is looked up. */
static int entry_err(struct dlfs_fs *fs, int ret, const struct dlfs_err *err,
		     uint64_t parent, const char *name, size_t len)
{
	return noted(fs, ret,
		     dlfs_reader_index_error_once(
			     fs->reader, ret,
			     err->code ? err->msg : "damaged index record",
			     dlfs_path_hash(parent, name, len)));
}

/* This thread's index transaction. @return 0 or -errno (-EIO when a
 * damaged index stops its first one). */
static int txn_of(struct dlfs_fs *fs, struct dlfs_txn **t)
{
	struct dlfs_reader_ctx *x;
	int ret = dlfs_fs_ctx(fs, &x);
	if (!ret)
		*t = dlfs_reader_ctx_txn(x);
	return index_err(fs, ret, &(struct dlfs_err){0});
}

static void fill_attr(const struct dlfs_fs *fs, const struct dlfs_inode *in,
		      struct stat *st)
{
	dlfs_ctl_fill_attr(fs->uid, fs->gid, in, st);
}

/* A dataset inode's attributes. @return 0 or -errno (-EIO if damaged). */
static int stat_ino(struct dlfs_fs *fs, struct dlfs_txn *t, uint64_t ino,
		    struct stat *st)
{
	struct dlfs_err err = {0};
	struct dlfs_inode in;
	int ret = dlfs_stat(t, ino, &in, &err);
	if (ret)
		return index_err(fs, ret, &err);
	fill_attr(fs, &in, st);
	/* Readers in other processes (dlfs-run) find its bytes themselves. */
	dlfs_reader_share_file(fs->reader, &in);
	return 0;
}

int dlfs_ops_lookup(struct dlfs_fs *fs, uint64_t parent, const char *name,
		    uint64_t *ino, struct stat *st, double *attr_timeout)
{
	struct dlfs_err err = {0};
	struct dlfs_txn *t;
	count(fs, DLFS_OP_LOOKUP);
	int ret = txn_of(fs, &t);
	if (ret)
		return ret;
	if (parent == DLFS_ROOT_INO || dlfs_ctl_is(parent)) {
		ret = dlfs_ctl_lookup(&fs->ctl, t, parent, name, ino, st,
				      attr_timeout);
		if (ret != -ENOENT || dlfs_ctl_is(parent))
			return index_err(fs, ret, &err);
	}
	/* The record is checked against the entry that led to it: a damaged
	 * entry that names another file gives EIO, not that file. */
	struct dlfs_inode in;
	ret = dlfs_lookup_stat(t, parent, name, strlen(name), &in, &err);
	if (ret == -ENOENT)
		return ret;
	if (ret)
		return entry_err(fs, ret, &err, parent, name, strlen(name));
	*ino = in.ino;
	*attr_timeout = fs->timeout;
	fill_attr(fs, &in, st);
	dlfs_reader_share_file(fs->reader, &in);
	return 0;
}

int dlfs_ops_getattr(struct dlfs_fs *fs, uint64_t ino, struct stat *st,
		     double *attr_timeout)
{
	struct dlfs_txn *t;
	count(fs, DLFS_OP_GETATTR);
	int ret = txn_of(fs, &t);
	if (ret)
		return ret;
	if (dlfs_ctl_is(ino))
		return index_err(fs, dlfs_ctl_getattr(&fs->ctl, t, ino, st,
						      attr_timeout),
				 &(struct dlfs_err){0});
	*attr_timeout = fs->timeout;
	return stat_ino(fs, t, ino, st);
}

int dlfs_ops_readlink(struct dlfs_fs *fs, uint64_t ino, char *buf)
{
	struct dlfs_err err = {0};
	struct dlfs_txn *t;
	struct dlfs_inode in;
	count(fs, DLFS_OP_READLINK);
	int ret = dlfs_ctl_is(ino) ? -EINVAL : txn_of(fs, &t);
	if (!ret)
		ret = index_err(fs, dlfs_stat(t, ino, &in, &err), &err);
	if (!ret && !S_ISLNK(in.mode))
		ret = -EINVAL;
	if (!ret && in.size > PATH_MAX)
		ret = -ENAMETOOLONG;
	if (ret)
		return ret;
	memcpy(buf, in.target, in.size);
	buf[in.size] = '\0';
	return (int)in.size;
}

/* ---- readdir ---- */

struct dir_walk {
	struct dlfs_fs *fs;
	struct dlfs_txn *t;
	uint64_t dir;
	int plus;
	dlfs_ops_dir_fn fn;
	void *arg;
};

static int walk_one(void *arg, const struct dlfs_dirent *de)
{
	struct dir_walk *d = arg;
	struct stat st;
	int attrs = d->plus;
	memset(&st, 0, sizeof(st));
	if (d->plus) {
		struct dlfs_err err = {0};
		struct dlfs_inode in;
		int ret = dlfs_stat_entry(d->t, d->dir, de->name, de->name_len,
					  de->ino, &in, &err);
		if (ret != -DLFS_ECORRUPT && ret)
			return ret;
		if (!ret) {
			fill_attr(d->fs, &in, &st);
		} else {
			/* Its record is damaged, or another name's: logged,
			 * and listed as plain readdir lists it, with no
			 * attributes (entry ino 0), so the kernel makes no
			 * dentry of it and a lookup meets the same EIO. The
			 * rest of the directory stays listable. */
			entry_err(d->fs, ret, &err, d->dir, de->name,
				  de->name_len);
			st.st_ino = de->ino;
			st.st_mode = de->type;
			attrs = 0;
		}
	} else {
		st.st_ino = de->ino;
		st.st_mode = de->type;
	}
	/* Offsets 1 and 2 are "." and "..". */
	return d->fn(d->arg, de->name, de->name_len, &st, attrs,
		     de->cookie + 2);
}

static int walk_ctl_one(void *arg, const char *name, const struct stat *st,
			uint64_t next)
{
	struct dir_walk *d = arg;
	return d->fn(d->arg, name, strlen(name), st, d->plus, next);
}

/* "." and "..", from offset *off; @return 1 when fn had no room. */
static int dots(struct dir_walk *d, const struct stat *self, uint64_t *off)
{
	struct stat st;
	if (*off < 1) {
		if (d->fn(d->arg, ".", 1, self, d->plus, 1))
			return 1;
		*off = 1;
	}
	if (*off < 2) {
		/* ".." is resolved by whoever walks paths, not by us. */
		memset(&st, 0, sizeof(st));
		st.st_mode = S_IFDIR;
		st.st_ino = DLFS_ROOT_INO;
		if (d->fn(d->arg, "..", 2, &st, d->plus, 2))
			return 1;
		*off = 2;
	}
	return 0;
}

int dlfs_ops_readdir(struct dlfs_fs *fs, uint64_t ino, uint64_t off, int plus,
		     dlfs_ops_dir_fn fn, void *arg)
{
	struct dir_walk d = {.fs = fs, .dir = ino, .plus = plus, .fn = fn,
			     .arg = arg};
	struct dlfs_err err = {0};
	struct dlfs_inode self;
	struct stat st;
	count(fs, plus ? DLFS_OP_READDIRPLUS : DLFS_OP_READDIR);
	int ret = txn_of(fs, &d.t);
	if (ret)
		return ret;
	if (dlfs_ctl_is(ino))
		return index_err(fs, dlfs_ctl_readdir(&fs->ctl, d.t, ino, off,
						      walk_ctl_one, &d),
				 &err);
	ret = dlfs_stat(d.t, ino, &self, &err);
	if (ret)
		return index_err(fs, ret, &err);
	if (!S_ISDIR(self.mode))
		return -ENOTDIR;
	fill_attr(fs, &self, &st);
	if (dots(&d, &st, &off))
		return 0;
	ret = dlfs_readdir(d.t, ino, off - 2, walk_one, &d, &err);
	return ret < 0 ? index_err(fs, ret, &err) : 0;
}

/* ---- read ---- */

/* A control file: its bytes into r, or for a sample the file it stands
 * for (*file_ino, to be read instead). @return 0 or -errno. */
static int ctl_read(struct dlfs_fs *fs, struct dlfs_reader_ctx *x,
		    uint64_t ino, uint64_t off, size_t size,
		    struct dlfs_ops_read *r, uint64_t *file_ino)
{
	size_t got;
	count(fs, DLFS_OP_CONTROL);
	/* Every byte asked for up to the end: a short read of a control
	 * file would cut an epoch's list for the kernel. Control reads are
	 * rare, one allocation each. */
	if (!(r->owned = malloc(size ? size : 1)))
		return -ENOMEM;
	int ret = dlfs_ctl_read(&fs->ctl, dlfs_reader_ctx_txn(x), ino, off,
				size, r->owned, &got, file_ino);
	if (ret || *file_ino)
		return ret;
	r->one.iov_base = r->owned;
	r->one.iov_len = got;
	r->iov = &r->one;
	r->iovcnt = 1;
	r->len = got;
	return 0;
}

int dlfs_ops_read(struct dlfs_fs *fs, struct dlfs_reader_ctx *x, uint64_t ino,
		  uint64_t off, size_t size, struct dlfs_ops_read *out)
{
	struct dlfs_read_out ro;
	uint64_t file_ino = 0;
	memset(out, 0, sizeof(*out));
	if (dlfs_ctl_is(ino)) {
		int ret = ctl_read(fs, x, ino, off, size, out, &file_ino);
		if (ret || !file_ino)
			return ret;
		free(out->owned);
		out->owned = NULL;
		ino = file_ino;
	}
	out->pinned = 1;
	int ret = dlfs_read(x, ino, off, size, &ro);
	if (ret)
		return ret;
	out->iov = ro.iov;
	out->iovcnt = ro.iovcnt;
	out->len = ro.len;
	return 0;
}

void dlfs_ops_read_done(struct dlfs_reader_ctx *x, struct dlfs_ops_read *r)
{
	if (r->pinned)
		dlfs_read_done(x);
	free(r->owned);
	memset(r, 0, sizeof(*r));
}

/* ---- statfs and xattrs ---- */

void dlfs_ops_statfs(struct dlfs_fs *fs, struct statvfs *sv)
{
	const struct dlfs_info *in = dlfs_ds_info(fs->ds);
	count(fs, DLFS_OP_STATFS);
	memset(sv, 0, sizeof(*sv));
	sv->f_bsize = 4096;
	sv->f_frsize = 4096;
	sv->f_blocks = (in->super.total_file_bytes + in->index_bytes + 4095) /
		       4096;
	sv->f_files = in->super.n_inodes;
	sv->f_namemax = DLFS_NAME_MAX;
	sv->f_flag = ST_RDONLY;
}

const char dlfs_ops_xattr_names[] =
	"user.dlfs.container\0user.dlfs.offset\0user.dlfs.xxh3";
const size_t dlfs_ops_xattr_names_len = sizeof(dlfs_ops_xattr_names);

int dlfs_ops_xattr(struct dlfs_fs *fs, uint64_t ino, const char *name,
		   char *buf, size_t len, int *is_file)
{
	struct dlfs_err err = {0};
	struct dlfs_txn *t;
	struct dlfs_inode in;
	*is_file = 0;
	count(fs, name ? DLFS_OP_GETXATTR : DLFS_OP_LISTXATTR);
	if (dlfs_ctl_is(ino))
		return -ENODATA;
	int ret = txn_of(fs, &t);
	if (!ret)
		ret = index_err(fs, dlfs_stat(t, ino, &in, &err), &err);
	if (ret)
		return ret;
	if (!S_ISREG(in.mode))
		return -ENODATA;
	*is_file = 1;
	if (!name)
		return 0;
	if (!strcmp(name, "user.dlfs.container"))
		return snprintf(buf, len, "%u", in.container);
	if (!strcmp(name, "user.dlfs.offset"))
		return snprintf(buf, len, "%llu",
				(unsigned long long)in.offset);
	if (!strcmp(name, "user.dlfs.xxh3"))
		return snprintf(buf, len, "%016llx",
				(unsigned long long)in.xxh3);
	return -ENODATA;
}
