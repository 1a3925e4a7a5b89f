/*
 * FUSE low-level operations: see fuse_ll.h. Every op sends exactly one
 * reply, itself; helpers only compute. Errors are negative errnos inside
 * and are negated once, at fuse_reply_err.
 */
#include "fuse_ll.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "dlfs/format.h"

static struct dlfs_fs *fs_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

static void count(struct dlfs_fs *fs, enum dlfs_op op)
{
	dlfs_stats_add(&fs->reader->stats.ops[op], 1);
}

/* This worker's index transaction. @return 0 or -errno. */
static int txn_of(struct dlfs_fs *fs, struct dlfs_txn **t)
{
	struct dlfs_reader_ctx *x;
	int ret = dlfs_fs_ctx(fs, &x);
	if (!ret)
		*t = dlfs_reader_ctx_txn(x);
	return ret;
}

/* A damaged index record met by an op other than read: EIO, logged. */
static int index_err(struct dlfs_fs *fs, int ret, const struct dlfs_err *err)
{
	return dlfs_reader_index_error(fs->reader, ret,
				       err->code ? err->msg
						 : "damaged index record");
}

/* ---- attributes ---- */

static void fill_attr(const struct dlfs_fs *fs, const struct dlfs_inode *in,
		      struct stat *st)
{
	dlfs_ctl_fill_attr(fs->uid, fs->gid, in, st);
}

/* ---- namespace ops ---- */

static void dlfs_ll_lookup(fuse_req_t req, fuse_ino_t parent,
			   const char *name)
{
	struct dlfs_fs *fs = fs_of(req);
	struct fuse_entry_param e;
	struct dlfs_err err = {0};
	struct dlfs_txn *t;
	struct dlfs_inode in;
	uint64_t ino;
	int ret;

	count(fs, DLFS_OP_LOOKUP);
	memset(&e, 0, sizeof(e));
	ret = txn_of(fs, &t);
	if (ret)
		goto fail;
	if (parent == DLFS_ROOT_INO || dlfs_ctl_is(parent)) {
		ret = dlfs_ctl_lookup(&fs->ctl, t, parent, name, &ino, &e.attr,
				      &e.attr_timeout);
		if (!ret) {
			e.ino = ino;
			e.entry_timeout = fs->timeout;
			fuse_reply_entry(req, &e);
			return;
		}
		if (ret != -ENOENT || dlfs_ctl_is(parent))
			goto fail;
	}
	ret = dlfs_lookup(t, parent, name, strlen(name), &ino, &err);
	if (ret == -ENOENT) {
		/* Negative entries are cached as long as positive ones. */
		e.ino = 0;
		e.entry_timeout = fs->timeout;
		fuse_reply_entry(req, &e);
		return;
	}
	if (!ret)
		ret = dlfs_stat(t, ino, &in, &err);
	if (ret)
		goto fail;
	fill_attr(fs, &in, &e.attr);
	e.ino = ino;
	e.generation = 1;
	e.attr_timeout = fs->timeout;
	e.entry_timeout = fs->timeout;
	fuse_reply_entry(req, &e);
	return;
fail:
	fuse_reply_err(req, -index_err(fs, ret, &err));
}

static void dlfs_ll_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	(void)ino;
	(void)nlookup;
	fuse_reply_none(req); /* inodes are stateless */
}

static void dlfs_ll_forget_multi(fuse_req_t req, size_t count,
				 struct fuse_forget_data *forgets)
{
	(void)count;
	(void)forgets;
	fuse_reply_none(req);
}

static void dlfs_ll_getattr(fuse_req_t req, fuse_ino_t ino,
			    struct fuse_file_info *fi)
{
	struct dlfs_fs *fs = fs_of(req);
	struct dlfs_err err = {0};
	struct dlfs_txn *t;
	struct dlfs_inode in;
	struct stat st;
	int ret;
	(void)fi;

	count(fs, DLFS_OP_GETATTR);
	ret = txn_of(fs, &t);
	if (!ret && dlfs_ctl_is(ino)) {
		double tmo;
		ret = dlfs_ctl_getattr(&fs->ctl, t, ino, &st, &tmo);
		if (ret)
			goto fail;
		fuse_reply_attr(req, &st, tmo);
		return;
	}
	if (!ret)
		ret = dlfs_stat(t, ino, &in, &err);
	if (ret)
		goto fail;
	fill_attr(fs, &in, &st);
	fuse_reply_attr(req, &st, fs->timeout);
	return;
fail:
	fuse_reply_err(req, -index_err(fs, ret, &err));
}

static void dlfs_ll_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct dlfs_fs *fs = fs_of(req);
	struct dlfs_err err = {0};
	struct dlfs_txn *t;
	struct dlfs_inode in;
	char target[PATH_MAX + 1];
	int ret;

	count(fs, DLFS_OP_READLINK);
	ret = dlfs_ctl_is(ino) ? -EINVAL : txn_of(fs, &t);
	if (!ret)
		ret = index_err(fs, dlfs_stat(t, ino, &in, &err), &err);
	if (!ret && !S_ISLNK(in.mode))
		ret = -EINVAL;
	if (!ret && in.size > PATH_MAX)
		ret = -ENAMETOOLONG;
	if (ret) {
		fuse_reply_err(req, -ret);
		return;
	}
	memcpy(target, in.target, in.size);
	target[in.size] = '\0';
	fuse_reply_readlink(req, target);
}

/* open and opendir answer ENOSYS: the kernel then stops sending OPEN and
 * RELEASE altogether and keeps its page cache, as with keep_cache. */
static void dlfs_ll_open(fuse_req_t req, fuse_ino_t ino,
			 struct fuse_file_info *fi)
{
	(void)ino;
	(void)fi;
	fuse_reply_err(req, ENOSYS);
}

static void dlfs_ll_opendir(fuse_req_t req, fuse_ino_t ino,
			    struct fuse_file_info *fi)
{
	(void)ino;
	(void)fi;
	fuse_reply_err(req, ENOSYS);
}

/* ---- readdir ---- */

struct dir_fill {
	fuse_req_t req;
	struct dlfs_fs *fs;
	struct dlfs_txn *t;
	char *buf;
	size_t size, used;
	int plus;
	int err;
};

/* Add one entry; @return 1 when the buffer is full. */
static int add_entry(struct dir_fill *d, const char *name, size_t len,
		     const struct stat *st, off_t next)
{
	char nm[DLFS_NAME_MAX + 1];
	memcpy(nm, name, len);
	nm[len] = '\0';
	size_t room = d->size - d->used, need;
	if (d->plus) {
		struct fuse_entry_param e = {
			.ino = st->st_ino,
			.generation = 1,
			.attr = *st,
			/* The stats change all the time. */
			.attr_timeout = st->st_ino == DLFS_CTL_STATS
						? 0
						: d->fs->timeout,
			.entry_timeout = d->fs->timeout,
		};
		need = fuse_add_direntry_plus(d->req, d->buf + d->used, room,
					      nm, &e, next);
	} else {
		need = fuse_add_direntry(d->req, d->buf + d->used, room, nm,
					 st, next);
	}
	if (need > room)
		return 1;
	d->used += need;
	return 0;
}

static int fill_one(void *arg, const struct dlfs_dirent *de)
{
	struct dir_fill *d = arg;
	struct stat st;
	if (d->plus) {
		struct dlfs_inode in;
		int ret = dlfs_stat(d->t, de->ino, &in, NULL);
		if (ret)
			return ret;
		fill_attr(d->fs, &in, &st);
	} else {
		memset(&st, 0, sizeof(st));
		st.st_ino = de->ino;
		st.st_mode = de->type;
	}
	/* Offsets 1 and 2 are "." and "..". */
	return add_entry(d, de->name, de->name_len, &st,
			 (off_t)(de->cookie + 2));
}

static int ctl_fill_one(void *arg, const char *name, const struct stat *st,
			uint64_t next)
{
	return add_entry(arg, name, strlen(name), st, (off_t)next);
}

static void do_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       int plus)
{
	struct dlfs_fs *fs = fs_of(req);
	struct dir_fill d = {.req = req, .fs = fs, .size = size, .plus = plus};
	struct dlfs_err err = {0};
	struct stat st;
	int ret = 0;

	count(fs, plus ? DLFS_OP_READDIRPLUS : DLFS_OP_READDIR);
	d.buf = malloc(size);
	if (!d.buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	ret = txn_of(fs, &d.t);
	if (ret)
		goto out;
	if (dlfs_ctl_is(ino)) {
		ret = dlfs_ctl_readdir(&fs->ctl, d.t, ino, (uint64_t)off,
				       ctl_fill_one, &d);
		goto out;
	}
	struct dlfs_inode self;
	ret = dlfs_stat(d.t, ino, &self, &err);
	if (ret)
		goto out;
	if (!S_ISDIR(self.mode)) {
		ret = -ENOTDIR;
		goto out;
	}
	if (off < 1) {
		fill_attr(fs, &self, &st);
		if (add_entry(&d, ".", 1, &st, 1))
			goto out;
		off = 1;
	}
	if (off < 2) {
		/* ".." needs no lookup count: the kernel resolves it. */
		memset(&st, 0, sizeof(st));
		st.st_mode = S_IFDIR;
		st.st_ino = DLFS_ROOT_INO;
		if (add_entry(&d, "..", 2, &st, 2))
			goto out;
		off = 2;
	}
	ret = dlfs_readdir(d.t, ino, (uint64_t)off - 2, fill_one, &d, &err);
out:
	if (ret && !d.used)
		fuse_reply_err(req, -index_err(fs, ret, &err));
	else
		fuse_reply_buf(req, d.buf, d.used);
	free(d.buf);
}

static void dlfs_ll_readdir(fuse_req_t req, fuse_ino_t ino, size_t size,
			    off_t off, struct fuse_file_info *fi)
{
	(void)fi;
	do_readdir(req, ino, size, off, 0);
}

static void dlfs_ll_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size,
				off_t off, struct fuse_file_info *fi)
{
	(void)fi;
	do_readdir(req, ino, size, off, 1);
}

/* ---- read ---- */

/* A control file: its bytes, or for a sample the file it stands for
 * (*file_ino, to be read instead). @return 0 when replied. */
static int ctl_read(fuse_req_t req, struct dlfs_fs *fs,
		    struct dlfs_reader_ctx *x, fuse_ino_t ino, size_t size,
		    off_t off, uint64_t *file_ino)
{
	/* Every byte asked for up to the end: the kernel takes a short
	 * read of a direct-I/O file for its end, and would cut an epoch's
	 * list at the first one. Lists longer than the stack buffer are
	 * rare reads, one allocation each. */
	char stack[64 * 1024], *buf = stack;
	size_t got;
	count(fs, DLFS_OP_CONTROL);
	if (size > sizeof(stack) && !(buf = malloc(size))) {
		fuse_reply_err(req, ENOMEM);
		return 1;
	}
	int ret = dlfs_ctl_read(&fs->ctl, dlfs_reader_ctx_txn(x), ino,
				(uint64_t)off, size, buf, &got, file_ino);
	if (ret)
		fuse_reply_err(req, -ret);
	else if (!*file_ino)
		fuse_reply_buf(req, buf, got);
	if (buf != stack)
		free(buf);
	return ret || !*file_ino;
}

static void dlfs_ll_read(fuse_req_t req, fuse_ino_t ino, size_t size,
			 off_t off, struct fuse_file_info *fi)
{
	struct dlfs_fs *fs = fs_of(req);
	struct dlfs_reader_ctx *x;
	struct dlfs_read_out out;
	uint64_t file_ino = ino;
	(void)fi;
	int ret = dlfs_fs_ctx(fs, &x);
	if (ret) {
		fuse_reply_err(req, -ret);
		return;
	}
	if (dlfs_ctl_is(ino) &&
	    ctl_read(req, fs, x, ino, size, off, &file_ino))
		return;
	ret = dlfs_read(x, file_ino, (uint64_t)off, size, &out);
	if (ret)
		fuse_reply_err(req, -ret);
	else
		fuse_reply_iov(req, out.iov, out.iovcnt);
	dlfs_read_done(x);
}

/* ---- the rest ---- */

static void dlfs_ll_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct dlfs_fs *fs = fs_of(req);
	const struct dlfs_info *in = dlfs_ds_info(fs->ds);
	struct statvfs sv;
	(void)ino;
	count(fs, DLFS_OP_STATFS);
	memset(&sv, 0, sizeof(sv));
	sv.f_bsize = 4096;
	sv.f_frsize = 4096;
	sv.f_blocks = (in->super.total_file_bytes + in->index_bytes + 4095) /
		      4096;
	sv.f_files = in->super.n_inodes;
	sv.f_namemax = DLFS_NAME_MAX;
	sv.f_flag = ST_RDONLY;
	fuse_reply_statfs(req, &sv);
}

static const char xattr_names[] =
	"user.dlfs.container\0user.dlfs.offset\0user.dlfs.xxh3";

/* The value of one of our xattrs into buf. @return length or -ENODATA. */
static int xattr_value(struct dlfs_fs *fs, fuse_ino_t ino, const char *name,
		       char *buf, size_t len, int *is_file)
{
	struct dlfs_err err = {0};
	struct dlfs_txn *t;
	struct dlfs_inode in;
	*is_file = 0;
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

static void dlfs_ll_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
			     size_t size)
{
	struct dlfs_fs *fs = fs_of(req);
	char buf[64];
	int is_file;
	count(fs, DLFS_OP_GETXATTR);
	int n = xattr_value(fs, ino, name, buf, sizeof(buf), &is_file);
	if (n < 0)
		fuse_reply_err(req, -n);
	else if (size == 0)
		fuse_reply_xattr(req, (size_t)n);
	else if ((size_t)n > size)
		fuse_reply_err(req, ERANGE);
	else
		fuse_reply_buf(req, buf, (size_t)n);
}

static void dlfs_ll_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	struct dlfs_fs *fs = fs_of(req);
	int is_file;
	count(fs, DLFS_OP_LISTXATTR);
	int ret = xattr_value(fs, ino, NULL, NULL, 0, &is_file);
	size_t n = is_file ? sizeof(xattr_names) : 0;
	if (ret < 0 && ret != -ENODATA)
		fuse_reply_err(req, -ret);
	else if (size == 0)
		fuse_reply_xattr(req, n);
	else if (n > size)
		fuse_reply_err(req, ERANGE);
	else
		fuse_reply_buf(req, xattr_names, n);
}

/* Everything that would change the dataset. */
static void dlfs_ll_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
			    int to_set, struct fuse_file_info *fi)
{
	(void)ino;
	(void)attr;
	(void)to_set;
	(void)fi;
	fuse_reply_err(req, EROFS);
}

static void dlfs_ll_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
			  mode_t mode, dev_t rdev)
{
	(void)parent;
	(void)name;
	(void)mode;
	(void)rdev;
	fuse_reply_err(req, EROFS);
}

static void dlfs_ll_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
			  mode_t mode)
{
	(void)parent;
	(void)name;
	(void)mode;
	fuse_reply_err(req, EROFS);
}

static void dlfs_ll_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	(void)parent;
	(void)name;
	fuse_reply_err(req, EROFS);
}

static void dlfs_ll_symlink(fuse_req_t req, const char *link,
			    fuse_ino_t parent, const char *name)
{
	(void)link;
	(void)parent;
	(void)name;
	fuse_reply_err(req, EROFS);
}

static void dlfs_ll_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
			   fuse_ino_t newparent, const char *newname,
			   unsigned int flags)
{
	(void)parent;
	(void)name;
	(void)newparent;
	(void)newname;
	(void)flags;
	fuse_reply_err(req, EROFS);
}

static void dlfs_ll_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
			 const char *newname)
{
	(void)ino;
	(void)newparent;
	(void)newname;
	fuse_reply_err(req, EROFS);
}

static void dlfs_ll_write(fuse_req_t req, fuse_ino_t ino, const char *buf,
			  size_t size, off_t off, struct fuse_file_info *fi)
{
	(void)ino;
	(void)buf;
	(void)size;
	(void)off;
	(void)fi;
	fuse_reply_err(req, EROFS);
}

static void dlfs_ll_create(fuse_req_t req, fuse_ino_t parent, const char *name,
			   mode_t mode, struct fuse_file_info *fi)
{
	(void)parent;
	(void)name;
	(void)mode;
	(void)fi;
	fuse_reply_err(req, EROFS);
}

static void dlfs_ll_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
			     const char *value, size_t size, int flags)
{
	(void)ino;
	(void)name;
	(void)value;
	(void)size;
	(void)flags;
	fuse_reply_err(req, EROFS);
}

static void dlfs_ll_removexattr(fuse_req_t req, fuse_ino_t ino,
				const char *name)
{
	(void)ino;
	(void)name;
	fuse_reply_err(req, EROFS);
}

static void dlfs_ll_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;
	/* Symlink targets and attributes never change: let the kernel keep
	 * them; AUTO_INVAL_DATA refreshes /.dlfs/stats on each read. */
	if (conn->capable & FUSE_CAP_CACHE_SYMLINKS)
		conn->want |= FUSE_CAP_CACHE_SYMLINKS;
	if (conn->capable & FUSE_CAP_AUTO_INVAL_DATA)
		conn->want |= FUSE_CAP_AUTO_INVAL_DATA;
	if (conn->capable & FUSE_CAP_READDIRPLUS)
		conn->want |= FUSE_CAP_READDIRPLUS;
}

const struct fuse_lowlevel_ops dlfs_ll_ops = {
	.init = dlfs_ll_init,
	.lookup = dlfs_ll_lookup,
	.forget = dlfs_ll_forget,
	.forget_multi = dlfs_ll_forget_multi,
	.getattr = dlfs_ll_getattr,
	.setattr = dlfs_ll_setattr,
	.readlink = dlfs_ll_readlink,
	.mknod = dlfs_ll_mknod,
	.mkdir = dlfs_ll_mkdir,
	.unlink = dlfs_ll_unlink,
	.rmdir = dlfs_ll_unlink,
	.symlink = dlfs_ll_symlink,
	.rename = dlfs_ll_rename,
	.link = dlfs_ll_link,
	.open = dlfs_ll_open,
	.read = dlfs_ll_read,
	.write = dlfs_ll_write,
	.opendir = dlfs_ll_opendir,
	.readdir = dlfs_ll_readdir,
	.readdirplus = dlfs_ll_readdirplus,
	.statfs = dlfs_ll_statfs,
	.setxattr = dlfs_ll_setxattr,
	.getxattr = dlfs_ll_getxattr,
	.listxattr = dlfs_ll_listxattr,
	.removexattr = dlfs_ll_removexattr,
	.create = dlfs_ll_create,
};
