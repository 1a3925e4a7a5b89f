#include "tutil.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dlfs/pack.h"

int t_failures;

char *t_tmpdir(void)
{
	const char *base = getenv("TMPDIR");
	char *p;
	if (asprintf(&p, "%s/dlfs-unit-XXXXXX", base ? base : "/tmp") < 0 ||
	    !mkdtemp(p)) {
		perror("mkdtemp");
		abort();
	}
	return p;
}

static int rm_one(const char *p, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_DP)
		rmdir(p);
	else
		unlink(p);
	return 0;
}

void t_rmrf(const char *path)
{
	nftw(path, rm_one, 64, FTW_DEPTH | FTW_PHYS);
}

void t_fill(uint8_t *buf, size_t len, uint32_t seed)
{
	uint32_t x = seed * 2654435761u + 1;
	for (size_t i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		buf[i] = (uint8_t)x;
	}
}

static void mkparents(char *path)
{
	for (char *s = path + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		mkdir(path, 0755);
		*s = '/';
	}
}

void t_write(const char *dir, const char *rel, size_t len, uint32_t seed)
{
	char *p;
	if (asprintf(&p, "%s/%s", dir, rel) < 0)
		abort();
	mkparents(p);
	uint8_t *b = malloc(len ? len : 1);
	t_fill(b, len, seed);
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, b, len) != (ssize_t)len) {
		perror(p);
		abort();
	}
	close(fd);
	free(b);
	free(p);
}

uint8_t *t_read(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		return NULL;
	uint8_t *b = malloc((size_t)st.st_size + 1);
	ssize_t n = read(fd, b, (size_t)st.st_size);
	close(fd);
	*len = n < 0 ? 0 : (size_t)n;
	return b;
}

int t_same_file(const char *a, const char *b)
{
	size_t la, lb;
	uint8_t *x = t_read(a, &la), *y = t_read(b, &lb);
	int same = x && y && la == lb && !memcmp(x, y, la);
	free(x);
	free(y);
	return same;
}

int t_pack(const char *src, const char *out, uint64_t chunk_size,
	   uint64_t container_size, uint64_t align)
{
	struct dlfs_pack_opts o;
	struct dlfs_err err = {0};
	const char *srcs[] = {src};
	dlfs_pack_opts_init(&o);
	o.chunk_size = chunk_size;
	o.container_size = container_size;
	if (align)
		o.align = align;
	o.threads = 2;
	int ret = dlfs_pack(srcs, 1, out, &o, &err);
	if (ret)
		fprintf(stderr, "pack %s: %s\n", src, err.msg);
	return ret;
}

void t_flip(const char *path, uint64_t off)
{
	uint8_t b;
	int fd = open(path, O_RDWR);
	if (fd < 0 || pread(fd, &b, 1, (off_t)off) != 1) {
		perror(path);
		abort();
	}
	b ^= 0xff;
	if (pwrite(fd, &b, 1, (off_t)off) != 1) {
		perror(path);
		abort();
	}
	close(fd);
}

char *t_path(const char *dir, const char *rel)
{
	char *p;
	if (asprintf(&p, "%s/%s", dir, rel) < 0)
		abort();
	return p;
}

uint64_t t_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void t_sleep_ms(unsigned ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

int t_done(const char *name)
{
	if (t_failures) {
		fprintf(stderr, "%s: %d check(s) failed\n", name, t_failures);
		return 1;
	}
	printf("%s: all checks passed\n", name);
	return 0;
}
