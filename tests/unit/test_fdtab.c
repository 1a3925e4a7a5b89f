/*
 * fdtab: dataset fds are real socket fds; dup'd ones share a description;
 * an fd closed behind the table's back and reused by the kernel for
 * another file is never served; the check costs one fstat (timed here and
 * printed, for the record, not judged).
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "fdtab.h"
#include "tutil.h"

int t_failures;

static struct dlfs_file *mk(void)
{
	struct stat st = {.st_mode = S_IFREG | 0644, .st_size = 10};
	return dlfs_file_new(42, &st, O_RDONLY, "/ds/f", 0);
}

static int not_own(void)
{
	return 0;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(void)
{
	struct dlfs_file *f = mk();
	int fd = dlfs_fd_install(f, 1);
	CHECK(fd >= 0);
	CHECK(fcntl(fd, F_GETFD) == FD_CLOEXEC);
	CHECK(dlfs_fd_maybe(fd));
	struct dlfs_file *g = dlfs_fd_get(fd);
	CHECK(g == f);
	dlfs_file_put(g);

	/* A raw read of a dataset fd fails; it never gives bytes. */
	char b[4];
	CHECK(syscall(SYS_read, fd, b, sizeof(b)) < 0);

	/* dup: the same description. */
	int fd2 = dup(fd);
	CHECK(!dlfs_fd_add(fd2, f));
	g = dlfs_fd_get(fd2);
	CHECK(g == f);
	g->pos = 7;
	dlfs_file_put(g);
	g = dlfs_fd_get(fd);
	CHECK(g && g->pos == 7);
	dlfs_file_put(g);

	/* Closed behind our back, and reused for another file. */
	syscall(SYS_close, fd);
	int other = open("/dev/null", O_RDONLY);
	CHECK_EQ(other, fd);
	CHECK(dlfs_fd_get(fd) == NULL);
	CHECK(!dlfs_fd_maybe(fd)); /* dropped */
	close(other);

	/* Closed and not reused. */
	syscall(SYS_close, fd2);
	CHECK(dlfs_fd_get(fd2) == NULL);

	/* forget drops the description's last reference (ASan would see a
	 * leak or a double free). */
	f = mk();
	fd = dlfs_fd_install(f, 0);
	CHECK(fd >= 0 && fcntl(fd, F_GETFD) == 0);
	dlfs_fd_forget(fd);
	CHECK(!dlfs_fd_maybe(fd));
	close(fd);

	/* In a vfork child (the table is the parent's), a stale entry is
	 * not served, and not dropped either. */
	f = mk();
	fd = dlfs_fd_install(f, 0);
	dlfs_fd_init(not_own);
	syscall(SYS_close, fd);
	CHECK(dlfs_fd_get(fd) == NULL);
	CHECK(dlfs_fd_maybe(fd));
	dlfs_fd_init(NULL);
	CHECK(dlfs_fd_get(fd) == NULL);
	CHECK(!dlfs_fd_maybe(fd));

	/* After fork, a description's lock that a thread of the parent held
	 * is free in the child. */
	f = mk();
	fd = dlfs_fd_install(f, 0);
	pthread_mutex_lock(&f->pos_lock);
	dlfs_fd_fork_child();
	CHECK(!pthread_mutex_trylock(&f->pos_lock));
	pthread_mutex_unlock(&f->pos_lock);
	dlfs_fd_forget(fd);
	close(fd);

	/* Not ours at all, and out of range. */
	CHECK(dlfs_fd_get(0) == NULL);
	CHECK(dlfs_fd_get(-1) == NULL);
	CHECK(dlfs_fd_get(1 << 30) == NULL);

	/* The cost of the check. */
	f = mk();
	fd = dlfs_fd_install(f, 1);
	int n = 200000;
	double t0 = now();
	for (int i = 0; i < n; i++)
		dlfs_file_put(dlfs_fd_get(fd));
	double t1 = now();
	for (int i = 0; i < n; i++)
		CHECK(!dlfs_fd_get(0));
	double t2 = now();
	printf("dlfs_fd_get: %.0f ns for one of ours (the fstat check), "
	       "%.1f ns for an fd that is not ours\n",
	       (t1 - t0) / n * 1e9, (t2 - t1) / n * 1e9);
	dlfs_fd_forget(fd);
	close(fd);
	return t_failures ? 1 : 0;
}
