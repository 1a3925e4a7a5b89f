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
#include "ops.h"

static struct dlfs_fs *fs_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

/* ---- namespace ops ---- */

static void dlfs_ll_lookup(fuse_req_t req, fuse_ino_t parent,
			   const char *name)
{
	struct dlfs_fs *fs = fs_of(req);
	struct fuse_entry_param e;
	uint64_t ino = 0;

	memset(&e, 0, sizeof(e));
	int ret = dlfs_ops_lookup(fs, parent, name, &ino, &e.attr,
				  &e.attr_timeout);
	/* Negative entries (ino 0) are cached as long as positive ones,
	 * but not in the control namespace, which can grow. */
	if (ret && (ret != -ENOENT || dlfs_ctl_is(parent))) {
		fuse_reply_err(req, -ret);
		return;
	}
	e.ino = ret ? 0 : ino;
	e.generation = dlfs_ctl_is(ino) || ret ? 0 : 1;
	e.entry_timeout = fs->timeout;
	fuse_reply_entry(req, &e);
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
	struct stat st;
	double tmo;
	(void)fi;
	int ret = dlfs_ops_getattr(fs_of(req), ino, &st, &tmo);
	if (ret)
		fuse_reply_err(req, -ret);
	else
		fuse_reply_attr(req, &st, tmo);
}

static void dlfs_ll_readlink(fuse_req_t req, fuse_ino_t ino)
{
	char target[PATH_MAX + 1];
	int ret = dlfs_ops_readlink(fs_of(req), ino, target);
	if (ret < 0)
		fuse_reply_err(req, -ret);
	else
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
	char *buf;
	size_t size, used;
	int plus;
};

/* Add one entry; @return 1 when the buffer is full. */
static int add_entry(void *arg, const char *name, size_t len,
		     const struct stat *st, int attrs, uint64_t next)
{
	struct dir_fill *d = arg;
	char nm[DLFS_NAME_MAX + 1];
	memcpy(nm, name, len);
	nm[len] = '\0';
	size_t room = d->size - d->used, need;
	if (d->plus) {
		/* ino 0: the kernel lists the name and makes no dentry, so
		 * an entry without attributes is looked up (and checked)
		 * when it is used. */
		struct fuse_entry_param e = {
			.ino = attrs ? st->st_ino : 0,
			.generation = 1,
			.attr = *st,
			/* The stats change all the time. */
			.attr_timeout = dlfs_ctl_live(st->st_ino)
						? 0
						: d->fs->timeout,
			.entry_timeout = d->fs->timeout,
		};
		need = fuse_add_direntry_plus(d->req, d->buf + d->used, room,
					      nm, &e, (off_t)next);
	} else {
		need = fuse_add_direntry(d->req, d->buf + d->used, room, nm,
					 st, (off_t)next);
	}
	if (need > room)
		return 1;
	d->used += need;
	return 0;
}

static void do_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       int plus)
{
	struct dlfs_fs *fs = fs_of(req);
	struct dir_fill d = {.req = req, .fs = fs, .size = size, .plus = plus};

	d.buf = malloc(size);
	if (!d.buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	int ret = dlfs_ops_readdir(fs, ino, off < 0 ? 0 : (uint64_t)off, plus,
				   add_entry, &d);
	if (ret && !d.used)
		fuse_reply_err(req, -ret);
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

static void dlfs_ll_read(fuse_req_t req, fuse_ino_t ino, size_t size,
			 off_t off, struct fuse_file_info *fi)
{
	struct dlfs_fs *fs = fs_of(req);
	struct dlfs_reader_ctx *x;
	struct dlfs_ops_read r;
	(void)fi;
	int ret = dlfs_fs_ctx(fs, &x);
	if (ret) {
		fuse_reply_err(req, -ret);
		return;
	}
	ret = dlfs_ops_read(fs, x, ino, (uint64_t)off, size, &r);
	if (ret)
		fuse_reply_err(req, -ret);
	else
		fuse_reply_iov(req, r.iov, r.iovcnt);
	dlfs_ops_read_done(x, &r);
}

/* ---- the rest ---- */

static void dlfs_ll_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct statvfs sv;
	(void)ino;
	dlfs_ops_statfs(fs_of(req), &sv);
	fuse_reply_statfs(req, &sv);
}

static void dlfs_ll_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
			     size_t size)
{
	char buf[64];
	int is_file;
	int n = dlfs_ops_xattr(fs_of(req), ino, name, buf, sizeof(buf),
			       &is_file);
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
	int is_file;
	int ret = dlfs_ops_xattr(fs_of(req), ino, NULL, NULL, 0, &is_file);
	size_t n = is_file ? dlfs_ops_xattr_names_len : 0;
	if (ret < 0 && ret != -ENODATA)
		fuse_reply_err(req, -ret);
	else if (size == 0)
		fuse_reply_xattr(req, n);
	else if (n > size)
		fuse_reply_err(req, ERANGE);
	else
		fuse_reply_buf(req, dlfs_ops_xattr_names, n);
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
