/*
 * fdtab: fd number -> open file description (see fdtab.h).
 *
 * TOP pages of PAGE slots each cover fds 0 .. TOP * PAGE - 1 (1M); a page
 * is made with mmap the first time one of its fds becomes ours, and never
 * freed, so a reader that loaded a page pointer can always use it.
 */
#include "fdtab.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#define PAGE 1024
#define TOP 1024

struct slot {
	_Atomic(struct dlfs_file *) f;
	atomic_flag lock;
	dev_t dev;
	ino_t ino;
};

static _Atomic(struct slot *) top[TOP];
static int (*own_memory)(void);

void dlfs_fd_init(int (*own)(void))
{
	own_memory = own;
}

struct dlfs_file *dlfs_file_new(uint64_t ino, const struct stat *st,
				int flags, const char *vpath, int vol)
{
	struct dlfs_file *f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->vpath = strdup(vpath);
	if (!f->vpath) {
		free(f);
		return NULL;
	}
	atomic_init(&f->refs, 1);
	f->ino = ino;
	f->st = *st;
	f->flags = flags;
	f->vol = vol;
	pthread_mutex_init(&f->pos_lock, NULL);
	return f;
}

void dlfs_file_get(struct dlfs_file *f)
{
	atomic_fetch_add_explicit(&f->refs, 1, memory_order_relaxed);
}

void dlfs_file_put(struct dlfs_file *f)
{
	if (atomic_fetch_sub_explicit(&f->refs, 1, memory_order_acq_rel) != 1)
		return;
	pthread_mutex_destroy(&f->pos_lock);
	free(f->vpath);
	free(f);
}

static struct slot *slot_of(int fd, int make)
{
	if (fd < 0 || fd >= TOP * PAGE)
		return NULL;
	_Atomic(struct slot *) *t = &top[fd / PAGE];
	struct slot *page = atomic_load_explicit(t, memory_order_acquire);
	if (!page && make) {
		/* syscall, not mmap: in the library, mmap is its own
		 * wrapper. */
		struct slot *p = (struct slot *)syscall(
			SYS_mmap, NULL, PAGE * sizeof(*p),
			PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
			0);
		if (p == MAP_FAILED)
			return NULL;
		/* Zeroed memory is a page of empty, unlocked slots. */
		struct slot *expect = NULL;
		if (atomic_compare_exchange_strong(t, &expect, p)) {
			page = p;
		} else {
			syscall(SYS_munmap, p, PAGE * sizeof(*p));
			page = expect;
		}
	}
	return page ? &page[fd % PAGE] : NULL;
}

/*
 * The slot whose lock this thread holds, or is taking. A signal handler
 * that interrupts it and asks for the same slot would spin for ever on
 * its own thread's lock: it goes on without the lock instead. The code it
 * interrupted cannot run meanwhile, so the slot's reference stays; a torn
 * (dev, ino) only fails the fstat check, and the fd is not served.
 */
static __thread struct slot *held __attribute__((tls_model("initial-exec")));

struct hold {
	struct slot *prev;
	int took;
};

static struct hold lock(struct slot *s)
{
	struct hold h = {held, held != s};
	if (!h.took)
		return h;
	held = s; /* before the lock: no window where it is held unknown */
	while (atomic_flag_test_and_set_explicit(&s->lock,
						 memory_order_acquire))
		;
	return h;
}

static void unlock(struct slot *s, struct hold h)
{
	if (!h.took)
		return;
	atomic_flag_clear_explicit(&s->lock, memory_order_release);
	held = h.prev;
}

static int sock_id(int fd, dev_t *dev, ino_t *ino)
{
	struct stat st;
	if (syscall(SYS_fstat, fd, &st))
		return -errno;
	*dev = st.st_dev;
	*ino = st.st_ino;
	return 0;
}

/* Put f in slot s of fd (one reference is the table's). */
static int set(int fd, struct dlfs_file *f)
{
	struct slot *s = slot_of(fd, 1);
	dev_t dev;
	ino_t ino;
	int ret = sock_id(fd, &dev, &ino);
	if (ret)
		return ret;
	if (!s)
		return -EMFILE;
	struct hold h = lock(s);
	struct dlfs_file *old = atomic_load_explicit(&s->f,
						     memory_order_relaxed);
	s->dev = dev;
	s->ino = ino;
	atomic_store_explicit(&s->f, f, memory_order_release);
	unlock(s, h);
	if (old)
		dlfs_file_put(old);
	return 0;
}

/*
 * The process's template socket, whose dups are dataset fds: a dup and
 * its close cost a fraction of a new socket's (measured: making and
 * closing sockets was a quarter of a page-cache-hot epoch). Made on
 * first use; a template that was closed behind the library's back (its
 * number now another file's, or none) is let go, never closed, and made
 * again. Each template's identity is fixed when it is made; a template
 * let go stays allocated (it is rare: a few bytes each time).
 */
struct tpl {
	int fd;
	dev_t dev;
	ino_t ino;
};
static _Atomic(struct tpl *) tpl;

static struct tpl *tpl_get(void)
{
	struct tpl *t = atomic_load_explicit(&tpl, memory_order_acquire);
	if (t)
		return t;
	struct tpl *n = malloc(sizeof(*n));
	if (!n)
		return NULL;
	n->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (n->fd < 0 || sock_id(n->fd, &n->dev, &n->ino)) {
		if (n->fd >= 0)
			syscall(SYS_close, n->fd);
		free(n);
		return NULL;
	}
	if (atomic_compare_exchange_strong_explicit(&tpl, &t, n,
						    memory_order_acq_rel,
						    memory_order_acquire))
		return n;
	syscall(SYS_close, n->fd); /* another thread made one first */
	free(n);
	return t;
}

/* A new fd of ours: a dup of the template, the lowest free number as
 * open gives. @return it, or -errno. */
static int new_fd(int cloexec)
{
	for (int tries = 0; tries < 3; tries++) {
		struct tpl *t = tpl_get();
		if (!t)
			return errno ? -errno : -ENOMEM;
		long fd = syscall(SYS_fcntl, t->fd,
				  cloexec ? F_DUPFD_CLOEXEC : F_DUPFD, 0);
		if (fd < 0 && errno != EBADF)
			return -errno;
		dev_t dev;
		ino_t ino;
		if (fd >= 0 && !sock_id((int)fd, &dev, &ino) &&
		    dev == t->dev && ino == t->ino)
			return (int)fd;
		/* The template's number is no longer the template. */
		if (fd >= 0)
			syscall(SYS_close, fd);
		atomic_compare_exchange_strong(&tpl, &t, NULL);
	}
	return -EBADF;
}

int dlfs_fd_install(struct dlfs_file *f, int cloexec)
{
	int saved = errno;
	int fd = new_fd(cloexec);
	if (fd < 0) {
		errno = saved;
		return fd;
	}
	int ret = set(fd, f);
	if (ret) {
		syscall(SYS_close, fd);
		errno = saved;
		return ret;
	}
	errno = saved;
	return fd;
}

int dlfs_fd_add(int fd, struct dlfs_file *f)
{
	int saved = errno;
	dlfs_file_get(f);
	int ret = set(fd, f);
	if (ret)
		dlfs_file_put(f);
	errno = saved;
	return ret;
}

int dlfs_fd_maybe(int fd)
{
	struct slot *s = slot_of(fd, 0);
	return s && atomic_load_explicit(&s->f, memory_order_relaxed);
}

/* Drop f from s if it is still there (not in a vfork child: the table
 * is its parent's, whose fd may well still be ours). */
static void drop_if(struct slot *s, struct dlfs_file *f)
{
	if (own_memory && !own_memory())
		return;
	struct hold h = lock(s);
	int same = atomic_load_explicit(&s->f, memory_order_relaxed) == f;
	if (same)
		atomic_store_explicit(&s->f, NULL, memory_order_relaxed);
	unlock(s, h);
	if (same)
		dlfs_file_put(f);
}

struct dlfs_file *dlfs_fd_get(int fd)
{
	struct slot *s = slot_of(fd, 0);
	if (!s || !atomic_load_explicit(&s->f, memory_order_relaxed))
		return NULL;
	struct hold h = lock(s);
	struct dlfs_file *f = atomic_load_explicit(&s->f,
						   memory_order_relaxed);
	dev_t dev = s->dev;
	ino_t ino = s->ino;
	if (f)
		dlfs_file_get(f);
	unlock(s, h);
	if (!f)
		return NULL;

	/* Is the kernel's fd still our socket? */
	dev_t kdev;
	ino_t kino;
	int saved = errno;
	int ret = sock_id(fd, &kdev, &kino);
	errno = saved;
	if (ret || kdev != dev || kino != ino) {
		drop_if(s, f);
		dlfs_file_put(f);
		return NULL;
	}
	return f;
}

void dlfs_fd_forget(int fd)
{
	struct slot *s = slot_of(fd, 0);
	if (!s)
		return;
	struct hold h = lock(s);
	struct dlfs_file *f = atomic_load_explicit(&s->f,
						   memory_order_relaxed);
	atomic_store_explicit(&s->f, NULL, memory_order_relaxed);
	unlock(s, h);
	if (f)
		dlfs_file_put(f);
}

void dlfs_fd_forget_range(unsigned lo, unsigned hi)
{
	if (hi >= TOP * PAGE)
		hi = TOP * PAGE - 1;
	for (unsigned fd = lo; fd <= hi;) {
		if (!atomic_load(&top[fd / PAGE])) {
			fd = (fd / PAGE + 1) * PAGE; /* no page: none ours */
			continue;
		}
		if (dlfs_fd_maybe((int)fd))
			dlfs_fd_forget((int)fd);
		fd++;
	}
}

void dlfs_fd_fork_child(void)
{
	for (int i = 0; i < TOP; i++) {
		struct slot *page = atomic_load(&top[i]);
		for (int j = 0; page && j < PAGE; j++) {
			struct slot *s = &page[j];
			atomic_flag_clear(&s->lock);
			struct dlfs_file *f = atomic_load(&s->f);
			if (f)
				pthread_mutex_init(&f->pos_lock, NULL);
		}
	}
}
