/*
 * Parallel whole-file reader for tools/bench/mount (not part of dlfs).
 *
 *   reader ROOT LIST THREADS [LIMIT_S]
 *
 * LIST holds one path per line, relative to ROOT. THREADS workers take the
 * next path in list order (a shared counter), open it, read it to EOF with
 * read(2) into a 1 MiB buffer and close it. After LIMIT_S seconds (0 = no
 * limit) no new file is started, so a very slow system gives a partial,
 * still valid, rate. The clock starts before LIST is read: LIST may be a
 * file the system under test makes when it is read (a dlfs epoch view,
 * MNT/.dlfs/epochs/E/files). Prints one JSON object:
 *   {"files": n, "bytes": n, "secs": s, "errors": n, "listed": n,
 *    "complete": true|false, "io_read_bytes": n}
 * io_read_bytes is this process's read_bytes from /proc/self/io: bytes it
 * caused to be read from block devices (kernel filesystems; a FUSE daemon's
 * reads are accounted to the daemon).
 * Build: gcc -O2 -pthread -o reader reader.c
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BUF (1 << 20)

static char **paths;
static size_t npaths;
static int rootfd;
static atomic_size_t next_i;
static atomic_ullong total_bytes, total_files, total_errors;
static double limit_s, t_start;
static atomic_int stopped;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *worker(void *arg)
{
	(void)arg;
	char *buf = malloc(BUF);
	if (!buf)
		abort();
	unsigned long long bytes = 0, files = 0, errors = 0;
	for (;;) {
		if (limit_s > 0 && (files & 7) == 0 && now() - t_start > limit_s) {
			atomic_store(&stopped, 1);
			break;
		}
		size_t i = atomic_fetch_add(&next_i, 1);
		if (i >= npaths)
			break;
		int fd = openat(rootfd, paths[i], O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			if (errors++ < 5)
				fprintf(stderr, "reader: %s: %s\n", paths[i],
					strerror(errno));
			continue;
		}
		for (;;) {
			ssize_t n = read(fd, buf, BUF);
			if (n > 0) {
				bytes += (unsigned long long)n;
				continue;
			}
			if (n < 0) {
				if (errno == EINTR)
					continue;
				if (errors++ < 5)
					fprintf(stderr, "reader: %s: %s\n",
						paths[i], strerror(errno));
			}
			break;
		}
		close(fd);
		files++;
	}
	atomic_fetch_add(&total_bytes, bytes);
	atomic_fetch_add(&total_files, files);
	atomic_fetch_add(&total_errors, errors);
	free(buf);
	return NULL;
}

static long long io_read_bytes(void)
{
	FILE *f = fopen("/proc/self/io", "r");
	char line[256];
	long long v = -1;
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "read_bytes: %lld", &v) == 1)
			break;
	fclose(f);
	return v;
}

int main(int argc, char **argv)
{
	if (argc < 4 || argc > 5) {
		fprintf(stderr, "usage: reader ROOT LIST THREADS [LIMIT_S]\n");
		return 2;
	}
	int threads = atoi(argv[3]);
	limit_s = argc > 4 ? atof(argv[4]) : 0;
	if (threads < 1 || threads > 1024) {
		fprintf(stderr, "reader: bad thread count\n");
		return 2;
	}
	rootfd = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0) {
		perror(argv[1]);
		return 1;
	}
	t_start = now();
	FILE *f = fopen(argv[2], "r");
	if (!f) {
		perror(argv[2]);
		return 1;
	}
	size_t cap = 1024;
	paths = malloc(cap * sizeof(*paths));
	char *line = NULL;
	size_t lcap = 0;
	ssize_t len;
	while ((len = getline(&line, &lcap, f)) > 0) {
		if (line[len - 1] == '\n')
			line[--len] = '\0';
		if (!len)
			continue;
		if (npaths == cap) {
			cap *= 2;
			paths = realloc(paths, cap * sizeof(*paths));
		}
		paths[npaths++] = strdup(line);
	}
	fclose(f);
	free(line);

	pthread_t *tids = calloc((size_t)threads, sizeof(*tids));
	for (int i = 0; i < threads; i++)
		if (pthread_create(&tids[i], NULL, worker, NULL)) {
			perror("pthread_create");
			return 1;
		}
	for (int i = 0; i < threads; i++)
		pthread_join(tids[i], NULL);
	double secs = now() - t_start;
	unsigned long long files = atomic_load(&total_files);
	printf("{\"files\": %llu, \"bytes\": %llu, \"secs\": %.6f, "
	       "\"errors\": %llu, \"listed\": %zu, \"complete\": %s, "
	       "\"io_read_bytes\": %lld}\n",
	       files, (unsigned long long)atomic_load(&total_bytes), secs,
	       (unsigned long long)atomic_load(&total_errors), npaths,
	       files == npaths ? "true" : "false", io_read_bytes());
	return atomic_load(&total_errors) ? 1 : 0;
}
