/*
 * dirs: DIR streams of the dataset (see dirs.h).
 *
 * The region holds MAX_DIRS streams, reserved once (MAP_NORESERVE) and
 * never unmapped; a free stream has used == 0. pool_lock guards taking
 * and giving back streams, never reading them.
 */
#include "dirs.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "conn.h"
#include "ns.h"
#include "state.h"
#include "real.h"
#include "wire.h"

#define MAX_DIRS 65536
#define BATCH (64u << 10) /* bytes of one READDIR */

struct dlfs_dir {
	int used;
	int fd;
	struct dlfs_file *f;
	pthread_mutex_t lock;
	long pos;        /* entries given so far */
	uint64_t cookie; /* READDIR resumes after this */
	int eof;
	char *buf; /* BATCH bytes */
	uint64_t len, at; /* bytes in buf, where the next entry is */
	uint32_t left;    /* entries left in buf */
	struct dirent ent;
};

static struct dlfs_dir *_Atomic pool;
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static int next_free;
static int n_touched; /* streams 0 .. n_touched - 1 have been used */

int dlfs_dir_is(DIR *d)
{
	struct dlfs_dir *p = atomic_load_explicit(&pool, memory_order_acquire);
	return p && (uintptr_t)d >= (uintptr_t)p &&
	       (uintptr_t)d < (uintptr_t)(p + MAX_DIRS);
}

static struct dlfs_dir *take(void)
{
	struct dlfs_dir *d = NULL;
	pthread_mutex_lock(&pool_lock);
	struct dlfs_dir *p = atomic_load(&pool);
	if (!p) {
		p = dlfs_real()->mmap(NULL, MAX_DIRS * sizeof(*p),
				      PROT_READ | PROT_WRITE,
				      MAP_PRIVATE | MAP_ANONYMOUS |
					      MAP_NORESERVE,
				      -1, 0);
		if (p == MAP_FAILED) {
			errno = ENOMEM;
			goto out;
		}
		atomic_store_explicit(&pool, p, memory_order_release);
	}
	for (int i = 0; i < MAX_DIRS; i++) {
		int k = (next_free + i) % MAX_DIRS;
		if (!p[k].used) {
			d = &p[k];
			d->used = 1;
			next_free = k + 1;
			if (k >= n_touched)
				n_touched = k + 1;
			break;
		}
	}
	if (!d)
		errno = EMFILE;
out:
	pthread_mutex_unlock(&pool_lock);
	return d;
}

static void give_back(struct dlfs_dir *d)
{
	pthread_mutex_lock(&pool_lock);
	d->used = 0;
	pthread_mutex_unlock(&pool_lock);
}

DIR *dlfs_dir_open(int fd, struct dlfs_file *f)
{
	char *buf = malloc(BATCH);
	if (!buf) {
		errno = ENOMEM;
		return NULL;
	}
	struct dlfs_dir *d = take();
	if (!d) {
		free(buf);
		return NULL;
	}
	d->fd = fd;
	d->f = f;
	pthread_mutex_init(&d->lock, NULL);
	d->pos = 0;
	d->cookie = 0;
	d->eof = 0;
	d->buf = buf;
	d->len = d->at = 0;
	d->left = 0;
	return (DIR *)d;
}

static void fill(struct dlfs_dir *d, const char *name, size_t len,
		 uint64_t ino, unsigned type)
{
	memset(&d->ent, 0, offsetof(struct dirent, d_name));
	d->ent.d_ino = ino;
	d->ent.d_off = d->pos + 1;
	d->ent.d_reclen = sizeof(d->ent);
	d->ent.d_type = (unsigned char)type;
	memcpy(d->ent.d_name, name, len);
	d->ent.d_name[len] = '\0';
}

/* The ino of "..": the parent's, or the real directory's at the root. */
static uint64_t parent_ino(struct dlfs_dir *d)
{
	if (d->f->ino == dlfs_pl.root_ino) {
		struct stat st;
		char up[PATH_MAX];
		strcpy(up, dlfs_pl.prefix);
		*strrchr(up, '/') = '\0';
		if (!dlfs_real()->stat(up[0] ? up : "/", &st))
			return st.st_ino;
		return d->f->ino;
	}
	struct dlfs_vp_base base = {.path = d->f->vpath, .ino = d->f->ino,
				    .st = d->f->st, .vol = d->f->vol};
	struct dlfs_vp_res *res = malloc(sizeof(*res));
	uint64_t ino = d->f->ino;
	if (res && !dlfs_ns_resolve(&base, "..", 0, res) &&
	    res->kind == DLFS_VP_OURS)
		ino = res->ino;
	free(res);
	return ino;
}

/* The next entry into d->ent. @return 1, 0 at the end, or -errno. */
static int next(struct dlfs_dir *d)
{
	if (d->pos == 0) {
		fill(d, ".", 1, d->f->ino, DT_DIR);
		return 1;
	}
	if (d->pos == 1) {
		fill(d, "..", 2, parent_ino(d), DT_DIR);
		return 1;
	}
	if (!d->left) {
		if (d->eof)
			return 0;
		uint32_t count = 0;
		uint64_t len = 0;
		int ret = dlfs_ns_readdir(d->f->ino, d->cookie, d->buf, BATCH,
					  &count, &len);
		if (ret) {
			dlfs_conn_report(NULL, d->f->vpath, ret);
			return ret;
		}
		if (!count) {
			d->eof = 1;
			return 0;
		}
		d->len = len;
		d->at = 0;
		d->left = count;
	}
	struct dlfs_wire_dirent de;
	if (d->len - d->at < sizeof(de))
		return -EIO;
	memcpy(&de, d->buf + d->at, sizeof(de));
	uint64_t size = dlfs_wire_dirent_size(de.name_len);
	if (de.name_len == 0 || de.name_len > 255 || size > d->len - d->at)
		return -EIO;
	fill(d, d->buf + d->at + sizeof(de), de.name_len, de.ino,
	     IFTODT(de.mode));
	d->at += size;
	d->left--;
	d->cookie = de.cookie;
	return 1;
}

struct dirent *dlfs_dir_read(DIR *dir)
{
	struct dlfs_dir *d = (struct dlfs_dir *)dir;
	struct dirent *res = NULL;
	/* errno changes only on an error: callers set it to 0 to tell the
	 * end from one (and next() makes calls that may set it). */
	int saved = errno;
	pthread_mutex_lock(&d->lock);
	int ret = next(d);
	if (ret > 0) {
		d->pos++;
		res = &d->ent;
	}
	errno = ret < 0 ? -ret : saved;
	pthread_mutex_unlock(&d->lock);
	return res;
}

int dlfs_dir_read_r(DIR *dir, struct dirent *ent, struct dirent **res)
{
	struct dlfs_dir *d = (struct dlfs_dir *)dir;
	int saved = errno; /* the error is the return value */
	pthread_mutex_lock(&d->lock);
	int ret = next(d);
	*res = NULL;
	if (ret > 0) {
		d->pos++;
		*ent = d->ent;
		*res = ent;
	}
	pthread_mutex_unlock(&d->lock);
	errno = saved;
	return ret < 0 ? -ret : 0;
}

int dlfs_dir_close(DIR *dir)
{
	struct dlfs_dir *d = (struct dlfs_dir *)dir;
	int fd = d->fd;
	free(d->buf);
	dlfs_file_put(d->f);
	pthread_mutex_destroy(&d->lock);
	give_back(d);
	return fd;
}

int dlfs_dir_fd(DIR *dir)
{
	return ((struct dlfs_dir *)dir)->fd;
}

static void rewind_locked(struct dlfs_dir *d)
{
	d->pos = 0;
	d->cookie = 0;
	d->eof = 0;
	d->len = d->at = 0;
	d->left = 0;
}

void dlfs_dir_rewind(DIR *dir)
{
	struct dlfs_dir *d = (struct dlfs_dir *)dir;
	pthread_mutex_lock(&d->lock);
	rewind_locked(d);
	pthread_mutex_unlock(&d->lock);
}

long dlfs_dir_tell(DIR *dir)
{
	struct dlfs_dir *d = (struct dlfs_dir *)dir;
	pthread_mutex_lock(&d->lock);
	long pos = d->pos;
	pthread_mutex_unlock(&d->lock);
	return pos;
}

void dlfs_dir_seek(DIR *dir, long pos)
{
	struct dlfs_dir *d = (struct dlfs_dir *)dir;
	pthread_mutex_lock(&d->lock);
	if (pos != d->pos) {
		if (pos < d->pos)
			rewind_locked(d);
		while (d->pos < pos && next(d) > 0)
			d->pos++;
	}
	pthread_mutex_unlock(&d->lock);
}

void dlfs_dirs_fork_prepare(void)
{
	pthread_mutex_lock(&pool_lock);
}

void dlfs_dirs_fork_parent(void)
{
	pthread_mutex_unlock(&pool_lock);
}

/* The streams' locks made new: the threads that held them are not in the
 * child. */
void dlfs_dirs_fork_child(void)
{
	struct dlfs_dir *p = atomic_load(&pool);
	for (int i = 0; p && i < n_touched; i++)
		if (p[i].used)
			pthread_mutex_init(&p[i].lock, NULL);
	pthread_mutex_unlock(&pool_lock);
}
