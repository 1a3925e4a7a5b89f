/*
 * slowpfs.so: an LD_PRELOAD shim for the MPI tests that makes the PFS
 * slow, as a saturated one is: every pread of a container (a file whose
 * name ends in .dlc) first sleeps DLFS_SLOW_PFS_MS milliseconds. A home
 * then answers its peers late because it is busy, not because it is
 * gone (tests/mpi/mpi_busy.sh). Nothing else is changed.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

typedef ssize_t (*pread_fn)(int, void *, size_t, off64_t);

static int is_container(int fd)
{
	char p[64], t[4096];
	snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
	ssize_t n = readlink(p, t, sizeof(t) - 1);
	if (n < 4)
		return 0;
	t[n] = '\0';
	return !strcmp(t + n - 4, ".dlc");
}

static void slow(int fd)
{
	const char *e = getenv("DLFS_SLOW_PFS_MS");
	long ms = e ? atol(e) : 0;
	if (ms > 0 && is_container(fd)) {
		struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
		while (nanosleep(&ts, &ts))
			;
	}
}

ssize_t pread64(int fd, void *buf, size_t n, off64_t off)
{
	static pread_fn real;
	if (!real)
		real = (pread_fn)dlsym(RTLD_NEXT, "pread64");
	slow(fd);
	return real(fd, buf, n, off);
}

ssize_t pread(int fd, void *buf, size_t n, off_t off)
{
	static pread_fn real;
	if (!real)
		real = (pread_fn)dlsym(RTLD_NEXT, "pread");
	slow(fd);
	return real(fd, buf, n, off);
}
