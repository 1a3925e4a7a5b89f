/*
 * O_DIRECT large-read probe for tools/bench/pfs-sim calibrate (not part of
 * dlfs).
 *
 *   dread FILE SIZE THREADS huge|small [LIMIT_BYTES]
 *
 * THREADS threads read FILE with O_DIRECT in SIZE-byte pread(2)s (thread k
 * takes blocks k, k+THREADS, ...) up to LIMIT_BYTES (default: the whole
 * file, whole blocks only). Each thread reads into one SIZE buffer that is
 * 2 MiB-aligned and either madvise(MADV_HUGEPAGE)d ("huge": physically
 * contiguous, so one bio can carry the whole read) or
 * madvise(MADV_NOHUGEPAGE)d ("small": 4 KiB pages, so a bio holds at most
 * 256 of them). Prints one JSON object:
 *   {"bytes": n, "reads": n, "secs": s, "huge_kib": n}
 * huge_kib: AnonHugePages of this process at the end (0 means no THP).
 * Build: gcc -O2 -pthread -o dread dread.c
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char *path;
static size_t bs;
static long long nblocks;
static int nthreads, huge;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *worker(void *arg)
{
	long long k = (long long)(intptr_t)arg;
	void *buf;
	if (posix_memalign(&buf, 2 << 20, bs))
		abort();
	madvise(buf, bs, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
	memset(buf, 1, bs);
	int fd = open(path, O_RDONLY | O_DIRECT | O_CLOEXEC);
	if (fd < 0) {
		perror(path);
		exit(1);
	}
	for (long long i = k; i < nblocks; i += nthreads) {
		ssize_t n = pread(fd, buf, bs, (off_t)i * (off_t)bs);
		if (n != (ssize_t)bs) {
			perror("pread");
			exit(1);
		}
	}
	close(fd);
	return buf; /* freed by main after the THP count */
}

static long anon_huge_kib(void)
{
	FILE *f = fopen("/proc/self/smaps_rollup", "r");
	char line[256];
	long v = -1;
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "AnonHugePages: %ld", &v) == 1)
			break;
	fclose(f);
	return v;
}

int main(int argc, char **argv)
{
	if (argc < 5 || argc > 6) {
		fprintf(stderr, "usage: dread FILE SIZE THREADS huge|small [LIMIT_BYTES]\n");
		return 2;
	}
	path = argv[1];
	bs = strtoull(argv[2], NULL, 0);
	nthreads = atoi(argv[3]);
	huge = !strcmp(argv[4], "huge");
	if (!bs || bs % 4096 || nthreads < 1 || nthreads > 256 ||
	    (!huge && strcmp(argv[4], "small"))) {
		fprintf(stderr, "dread: bad arguments\n");
		return 2;
	}
	struct stat st;
	if (stat(path, &st)) {
		perror(path);
		return 1;
	}
	long long limit = argc > 5 ? atoll(argv[5]) : (long long)st.st_size;
	if (limit > st.st_size)
		limit = st.st_size;
	nblocks = limit / (long long)bs;
	pthread_t *t = calloc((size_t)nthreads, sizeof(*t));
	void **bufs = calloc((size_t)nthreads, sizeof(*bufs));
	double t0 = now();
	for (int i = 0; i < nthreads; i++)
		pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i);
	for (int i = 0; i < nthreads; i++)
		pthread_join(t[i], &bufs[i]);
	double secs = now() - t0;
	long hk = anon_huge_kib();
	printf("{\"bytes\": %lld, \"reads\": %lld, \"secs\": %.6f, \"huge_kib\": %ld}\n",
	       nblocks * (long long)bs, nblocks, secs, hk);
	for (int i = 0; i < nthreads; i++)
		free(bufs[i]);
	return 0;
}
