/*
 * dlfs_extract: rebuild the tree under a directory, in three steps.
 *
 *   1. List: a depth-first walk of the directory entries makes every
 *      directory (mode 0700 for now) and symlink, and notes where each
 *      regular file goes (its parent and its name, by inode).
 *   2. Write: the containers front to back through the container walk
 *      (cwalk.c, as verify reads them), each chunk read and
 *      decompressed once; files come in inode order, which is layout
 *      order, each made in its directory and checked against its
 *      checksum as it is written.
 *   3. Directories get their modes and times, children before parents,
 *      once nothing is made in them any more.
 *
 * Memory: a chunk or two, and 24 bytes per file and directory for step
 * 1's notes (names point into the index's map, valid for the txn).
 *
 * The index may be hostile: names come from dlfs_readdir, which refuses
 * any that is not one path component, and everything is created relative
 * to a directory fd and never through a symlink (O_NOFOLLOW, O_EXCL,
 * AT_SYMLINK_NOFOLLOW; a directory is reopened from the target's fd one
 * component at a time), so nothing is written outside dir, not even
 * through a symlink the extraction itself made.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cwalk.h"
#include "dlfs/check.h"
#include "util.h"

/* Every level of a path takes at least 2 of its bytes. */
#define EX_PATH_MAX (1 << 14)
#define EX_DEPTH_MAX (EX_PATH_MAX / 2)
/* Files listed between two progress reports while listing. */
#define EX_LIST_REPORT 4096

struct child {
	uint64_t ino;
	const char *name;
	size_t len;
};

struct kids {
	struct child *v;
	size_t n, cap;
};

static int collect(void *arg, const struct dlfs_dirent *d)
{
	struct kids *k = arg;
	if (k->n == k->cap) {
		size_t cap = k->cap ? k->cap * 2 : 32;
		struct child *v = realloc(k->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		k->v = v;
		k->cap = cap;
	}
	k->v[k->n++] = (struct child){d->ino, d->name, d->name_len};
	return 0;
}

/* Where an entry goes: its directory and its name (in the txn's map). */
struct named {
	uint64_t parent; /* 0: not named */
	const char *name;
	uint32_t len;
	uint32_t done; /* a file written; a directory listed */
};

struct ex {
	struct dlfs_ds *ds;
	struct dlfs_txn *txn;
	const struct dlfs_super_rec *s;
	struct named *dirs;  /* by inode, n_dirs + 1 */
	struct named *files; /* by inode - first_file_ino, n_files */
	uint64_t *post;      /* directories, each after its subdirectories */
	size_t n_post;
	int rootfd;              /* the target directory */
	uint64_t cur_dir;        /* the directory cur_fd is open on, or 0 */
	int cur_fd;
	int fd;                  /* the file being written, or -1 */
	uint32_t c;              /* the container being walked */
	int bad_chunk;           /* chunk bad_k of container bad_c failed: */
	uint32_t bad_c;
	uint64_t bad_k;
	char bad_msg[DLFS_ERR_MSG_MAX]; /* how */
	struct dlfs_extract_progress prog;
	dlfs_extract_progress_cb cb;
	void *cb_arg;
	size_t root_len;         /* bytes of the target's path in path */
	uint64_t chain[EX_DEPTH_MAX];
	char path[EX_PATH_MAX];  /* for messages */
};

static void progress(struct ex *x)
{
	if (x->cb)
		x->cb(x->cb_arg, &x->prog);
}

static void set_ts(struct timespec ts[2], const struct dlfs_inode *in)
{
	ts[0] = ts[1] = (struct timespec){.tv_sec = in->mtime_sec,
					  .tv_nsec = in->mtime_nsec};
}

/* An entry's name as a C string (name holds DLFS_NAME_MAX + 1 bytes). */
static void name_str(const struct named *e, char *name)
{
	memcpy(name, e->name, e->len);
	name[e->len] = '\0';
}

/* The path of entry (parent, name) under the target, into x->path. */
static const char *path_of(struct ex *x, uint64_t parent, const char *name,
			   size_t len)
{
	size_t n = 0, at = x->root_len;
	for (uint64_t a = parent; a != DLFS_ROOT_INO && n < EX_DEPTH_MAX;
	     a = x->dirs[a].parent)
		x->chain[n++] = a;
	while (n--) {
		const struct named *e = &x->dirs[x->chain[n]];
		if (at + e->len + 2 > sizeof(x->path))
			break;
		x->path[at++] = '/';
		memcpy(x->path + at, e->name, e->len);
		at += e->len;
	}
	if (name && at + len + 2 <= sizeof(x->path)) {
		x->path[at++] = '/';
		memcpy(x->path + at, name, len);
		at += len;
	}
	x->path[at] = '\0';
	return x->path;
}

/* An fd of directory d (made in step 1), opened one component at a time
 * from the target and kept until another is asked for. */
static int dir_fd(struct ex *x, uint64_t d, int *out, struct dlfs_err *err)
{
	size_t n = 0;
	if (d == DLFS_ROOT_INO || d == x->cur_dir) {
		*out = d == DLFS_ROOT_INO ? x->rootfd : x->cur_fd;
		return 0;
	}
	for (uint64_t a = d; a != DLFS_ROOT_INO && n < EX_DEPTH_MAX;
	     a = x->dirs[a].parent)
		x->chain[n++] = a;
	int fd = x->rootfd;
	while (n--) {
		char name[DLFS_NAME_MAX + 1];
		name_str(&x->dirs[x->chain[n]], name);
		int next = openat(fd, name, O_RDONLY | O_DIRECTORY |
						    O_CLOEXEC | O_NOFOLLOW);
		int e = errno;
		if (fd != x->rootfd)
			close(fd);
		if (next < 0)
			return dlfs_err_sys(err, -e, "%s",
					    path_of(x, d, NULL, 0));
		fd = next;
	}
	if (x->cur_fd >= 0)
		close(x->cur_fd);
	x->cur_fd = *out = fd;
	x->cur_dir = d;
	return 0;
}

/*
 * Step 1.
 */

/* File in, entry name (len bytes) of directory dir: noted for step 2. */
static int note_file(struct ex *x, uint64_t dir, const char *name,
		     size_t len, const struct dlfs_inode *in,
		     struct dlfs_err *err)
{
	uint64_t i = in->ino - x->s->first_file_ino;
	if (in->ino < x->s->first_file_ino || i >= x->s->n_files ||
	    x->files[i].parent)
		return dlfs_err_set(err, -DLFS_ECORRUPT,
				    "%s: file inode %llu is named twice or "
				    "out of range: the index is damaged",
				    x->path, (unsigned long long)in->ino);
	x->files[i] = (struct named){dir, name, (uint32_t)len, 0};
	x->prog.files_total++;
	x->prog.bytes_total += in->size;
	if (x->prog.files_total % EX_LIST_REPORT == 0)
		progress(x);
	return 0;
}

static int list_dir(struct ex *x, int dirfd, uint64_t dir, size_t plen,
		    struct dlfs_err *err);

/* Subdirectory in, entry c of directory dir (its fd dirfd; name is c's
 * name as a C string), with x->path its path np bytes long: made, then
 * listed. */
static int list_subdir(struct ex *x, int dirfd, uint64_t dir,
		       const struct child *c, const char *name,
		       const struct dlfs_inode *in, size_t np,
		       struct dlfs_err *err)
{
	/* A directory named twice (or its own ancestor) would be listed
	 * again and again: the index is damaged. */
	if (in->ino > x->s->n_dirs || x->dirs[in->ino].done)
		return dlfs_err_set(err, -DLFS_ECORRUPT,
				    "%s: directory inode %llu is named twice: "
				    "the index is damaged",
				    x->path, (unsigned long long)in->ino);
	x->dirs[in->ino] = (struct named){dir, c->name, (uint32_t)c->len, 1};
	if (mkdirat(dirfd, name, 0700) < 0)
		return dlfs_err_sys(err, -errno, "%s", x->path);
	int sub = openat(dirfd, name,
			 O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (sub < 0)
		return dlfs_err_sys(err, -errno, "%s", x->path);
	int ret = list_dir(x, sub, in->ino, np, err);
	close(sub);
	if (!ret)
		x->post[x->n_post++] = in->ino;
	return ret;
}

static int make_symlink(struct ex *x, int dirfd, const char *name,
			const struct dlfs_inode *in, struct dlfs_err *err)
{
	struct timespec ts[2];
	char *tg = strndup(in->target, in->size);
	int ret = 0;
	if (!tg)
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	set_ts(ts, in);
	if (symlinkat(tg, dirfd, name) < 0)
		ret = dlfs_err_sys(err, -errno, "%s", x->path);
	else if (utimensat(dirfd, name, ts, AT_SYMLINK_NOFOLLOW) < 0)
		ret = dlfs_err_sys(err, -errno, "%s: utimens", x->path);
	free(tg);
	return ret;
}

/* Directory dir (its fd dirfd, its path in x->path, plen bytes): each
 * entry's record through its entry, then made or noted. */
static int list_dir(struct ex *x, int dirfd, uint64_t dir, size_t plen,
		    struct dlfs_err *err)
{
	struct kids k = {0};
	int ret = dlfs_readdir(x->txn, dir, 0, collect, &k, err);
	for (size_t i = 0; i < k.n && !ret; i++) {
		struct child *c = &k.v[i];
		char name[DLFS_NAME_MAX + 1];
		memcpy(name, c->name, c->len);
		name[c->len] = '\0';
		if (plen + c->len + 2 > sizeof(x->path)) {
			ret = dlfs_err_set(err, -ENAMETOOLONG,
					   "%s/%s: path too long", x->path,
					   name);
			break;
		}
		size_t np = plen;
		x->path[np++] = '/';
		memcpy(x->path + np, name, c->len + 1);
		np += c->len;

		struct dlfs_inode in;
		/* Through its entry: a record bound to another name stops
		 * the extract, as a damaged one does. */
		ret = dlfs_stat_entry(x->txn, dir, name, c->len, c->ino, &in,
				      err);
		if (ret)
			break;
		if (S_ISDIR(in.mode))
			ret = list_subdir(x, dirfd, dir, c, name, &in, np, err);
		else if (S_ISLNK(in.mode))
			ret = make_symlink(x, dirfd, name, &in, err);
		else
			ret = note_file(x, dir, c->name, c->len, &in, err);
		x->path[plen] = '\0';
	}
	free(k.v);
	return ret;
}

/*
 * Step 2: the container walk's callbacks (cwalk.h). A file that is in
 * no directory is walked past.
 */

static struct named *file_of(struct ex *x, uint64_t ino)
{
	uint64_t i = ino - x->s->first_file_ino;
	if (ino < x->s->first_file_ino || i >= x->s->n_files ||
	    !x->files[i].parent)
		return NULL;
	return &x->files[i];
}

static int on_chunk(void *arg, uint64_t k, uint64_t start, int st,
		    const char *msg, struct dlfs_err *err)
{
	struct ex *x = arg;
	(void)start;
	(void)err;
	/* Kept to explain its files' failures; an uncompressed chunk that
	 * only fails its checksum may still hold intact files. */
	if (st && msg) {
		x->bad_chunk = 1;
		x->bad_c = x->c;
		x->bad_k = k;
		snprintf(x->bad_msg, sizeof(x->bad_msg), "%s", msg);
	}
	return 0;
}

static int on_chunk_end(void *arg, uint64_t k, uint64_t start,
			struct dlfs_err *err)
{
	(void)k;
	(void)start;
	(void)err;
	progress(arg);
	return 0;
}

static int on_begin(void *arg, const struct dlfs_inode *in,
		    struct dlfs_err *err)
{
	struct ex *x = arg;
	struct named *f = file_of(x, in->ino);
	char name[DLFS_NAME_MAX + 1];
	int dfd, ret;
	if (!f)
		return 0;
	if ((ret = dir_fd(x, f->parent, &dfd, err)))
		return ret;
	name_str(f, name);
	x->fd = openat(dfd, name,
		       O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
		       0600);
	if (x->fd < 0)
		return dlfs_err_sys(err, -errno, "%s",
				    path_of(x, f->parent, f->name, f->len));
	return 0;
}

static int on_data(void *arg, const struct dlfs_inode *in, const void *p,
		   size_t n, struct dlfs_err *err)
{
	struct ex *x = arg;
	if (x->fd < 0)
		return 0;
	int ret = dlfs_write_full(x->fd, p, n);
	if (ret) {
		struct named *f = file_of(x, in->ino);
		return dlfs_err_sys(err, ret, "%s",
				    path_of(x, f->parent, f->name, f->len));
	}
	x->prog.bytes += n;
	return 0;
}

/* Why named file f (record in) cannot be written: bad, and the damaged
 * chunk under it if one is known. */
static int file_damaged(struct ex *x, struct named *f,
			const struct dlfs_inode *in, const char *bad,
			struct dlfs_err *err)
{
	const char *p = path_of(x, f->parent, f->name, f->len);
	if (!S_ISREG(in->mode))
		return dlfs_err_set(err, -DLFS_ECORRUPT,
				    "%s: inode %llu: %s", p,
				    (unsigned long long)in->ino, bad);
	uint64_t cs = x->s->chunk_size, k0, k1;
	int under = 0;
	if (x->bad_chunk && in->size && x->bad_c == in->container) {
		dlfs_file_chunks(cs, in, 0, in->size, &k0, &k1);
		under = k0 <= x->bad_k && x->bad_k <= k1;
	}
	return dlfs_err_set(err, -EIO,
			    "%s: %s, the dataset is damaged (container %u, "
			    "offset %llu)%s%s",
			    p, bad, in->container,
			    (unsigned long long)in->offset, under ? ": " : "",
			    under ? x->bad_msg : "");
}

static int on_file(void *arg, const struct dlfs_inode *in, const char *bad,
		   struct dlfs_err *err)
{
	struct ex *x = arg;
	struct named *f = file_of(x, in->ino);
	struct timespec ts[2];
	int fd = x->fd, ret = 0;
	if (!f)
		return 0;
	x->fd = -1;
	if (bad || fd < 0) {
		if (fd >= 0)
			close(fd);
		return file_damaged(x, f, in, bad ? bad : "not read", err);
	}
	set_ts(ts, in);
	if (fchmod(fd, in->mode & 07777) < 0)
		ret = dlfs_err_sys(err, -errno, "%s: chmod",
				   path_of(x, f->parent, f->name, f->len));
	else if (futimens(fd, ts) < 0)
		ret = dlfs_err_sys(err, -errno, "%s: utimens",
				   path_of(x, f->parent, f->name, f->len));
	if (close(fd) < 0 && !ret)
		ret = dlfs_err_sys(err, -errno, "%s",
				   path_of(x, f->parent, f->name, f->len));
	f->done = 1;
	x->prog.files++;
	return ret;
}

static const struct dlfs_cwalk_ops extract_ops = {
	.chunk = on_chunk,
	.chunk_end = on_chunk_end,
	.begin = on_begin,
	.data = on_data,
	.file = on_file,
};

/* Every container through the walk; then every named file must have
 * been met in its container. */
static int write_files(struct ex *x, struct dlfs_err *err)
{
	struct dlfs_cwalk *w = NULL;
	int ret = dlfs_cwalk_new(x->ds, x->txn, &extract_ops, x, &w, err);
	for (uint32_t c = 0; !ret && c < x->s->n_containers; c++) {
		x->c = c;
		ret = dlfs_cwalk_container(w, c, err);
	}
	dlfs_cwalk_free(w);
	for (uint64_t i = 0; !ret && i < x->s->n_files; i++) {
		struct named *f = &x->files[i];
		if (f->parent && !f->done)
			ret = dlfs_err_set(
				err, -DLFS_ECORRUPT,
				"%s: inode %llu is not among its container's "
				"files: the index is damaged",
				path_of(x, f->parent, f->name, f->len),
				(unsigned long long)(x->s->first_file_ino + i));
	}
	return ret;
}

/*
 * Step 3: directory d's mode and times, through its parent's fd.
 */
static int finish_dir(struct ex *x, uint64_t d, struct dlfs_err *err)
{
	const struct named *e = &x->dirs[d];
	char name[DLFS_NAME_MAX + 1];
	struct dlfs_inode in;
	struct timespec ts[2];
	int pfd, fd, ret;
	if ((ret = dlfs_stat(x->txn, d, &in, err)) ||
	    (ret = dir_fd(x, e->parent, &pfd, err)))
		return ret;
	name_str(e, name);
	set_ts(ts, &in);
	fd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return dlfs_err_sys(err, -errno, "%s",
				    path_of(x, e->parent, e->name, e->len));
	if (fchmod(fd, in.mode & 07777) < 0)
		ret = dlfs_err_sys(err, -errno, "%s: chmod",
				   path_of(x, e->parent, e->name, e->len));
	else if (futimens(fd, ts) < 0)
		ret = dlfs_err_sys(err, -errno, "%s: utimens",
				   path_of(x, e->parent, e->name, e->len));
	close(fd);
	return ret;
}

/* The target's own mode and times: the root's. */
static int finish_root(struct ex *x, const char *dir, struct dlfs_err *err)
{
	struct dlfs_inode root;
	struct timespec ts[2];
	int ret = dlfs_stat(x->txn, DLFS_ROOT_INO, &root, err);
	if (ret)
		return ret;
	set_ts(ts, &root);
	if (fchmod(x->rootfd, root.mode & 07777) < 0)
		return dlfs_err_sys(err, -errno, "%s: chmod", dir);
	if (futimens(x->rootfd, ts) < 0)
		return dlfs_err_sys(err, -errno, "%s: utimens", dir);
	return 0;
}

/* dir made if missing and opened into x->rootfd; it must be empty. */
static int open_target(struct ex *x, const char *dir, struct dlfs_err *err)
{
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return dlfs_err_sys(err, -errno, "%s", dir);
	x->rootfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (x->rootfd < 0)
		return dlfs_err_sys(err, -errno, "%s", dir);
	/* Refuse to mix into a directory that has anything in it. */
	int probe = dup(x->rootfd);
	DIR *d = probe >= 0 ? fdopendir(probe) : NULL;
	if (!d) {
		int e = errno;
		if (probe >= 0)
			close(probe);
		return dlfs_err_sys(err, -e, "%s", dir);
	}
	struct dirent *de;
	int empty = 1;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			empty = 0;
	closedir(d);
	if (!empty)
		return dlfs_err_set(err, -EEXIST,
				    "%s: not empty; extract wants a new or "
				    "empty directory",
				    dir);
	return 0;
}

static int ex_alloc(struct ex *x, struct dlfs_err *err)
{
	x->dirs = calloc(x->s->n_dirs + 1, sizeof(*x->dirs));
	x->post = calloc(x->s->n_dirs + 1, sizeof(*x->post));
	x->files = calloc(x->s->n_files ? x->s->n_files : 1,
			  sizeof(*x->files));
	if (!x->dirs || !x->post || !x->files)
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	x->dirs[DLFS_ROOT_INO].done = 1;
	return 0;
}

int dlfs_extract_watch(struct dlfs_ds *ds, const char *dir,
		       dlfs_extract_progress_cb cb, void *arg,
		       struct dlfs_err *err)
{
	struct ex *x = calloc(1, sizeof(*x));
	int ret;
	if (!x)
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	x->ds = ds;
	x->s = &dlfs_ds_info(ds)->super;
	x->rootfd = x->cur_fd = x->fd = -1;
	x->cb = cb;
	x->cb_arg = arg;
	if ((ret = ex_alloc(x, err)) || (ret = open_target(x, dir, err)) ||
	    (ret = dlfs_txn_begin(ds, &x->txn, err)))
		goto out;
	snprintf(x->path, sizeof(x->path), "%s", dir);
	size_t plen = strlen(x->path);
	while (plen > 1 && x->path[plen - 1] == '/')
		x->path[--plen] = '\0';
	x->root_len = plen;
	x->prog.listing = 1;
	ret = list_dir(x, x->rootfd, DLFS_ROOT_INO, plen, err);
	x->prog.listing = 0;
	if (!ret) {
		progress(x);
		ret = write_files(x, err);
	}
	for (size_t i = 0; !ret && i < x->n_post; i++)
		ret = finish_dir(x, x->post[i], err);
	if (!ret)
		ret = finish_root(x, dir, err);
	if (!ret)
		progress(x);
out:
	if (x->fd >= 0)
		close(x->fd);
	if (x->cur_fd >= 0)
		close(x->cur_fd);
	if (x->rootfd >= 0)
		close(x->rootfd);
	dlfs_txn_end(x->txn);
	free(x->dirs);
	free(x->post);
	free(x->files);
	free(x);
	return ret;
}

int dlfs_extract(struct dlfs_ds *ds, const char *dir, struct dlfs_err *err)
{
	return dlfs_extract_watch(ds, dir, NULL, NULL, err);
}
