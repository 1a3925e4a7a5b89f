/*
 * nscache: the LOOKUP cache gives back the struct stat it was given, both
 * when the attributes are the usual ones (the dlfs server's: kept in a
 * compact entry) and when they are not (another server's: kept whole);
 * it remembers missing names; and it stays within its budget of bytes.
 * The bytes an entry takes are printed, for the record.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "nscache.h"
#include "tutil.h"

int t_failures;

static struct stat usual;

/* Attributes as the dlfs server fills them (dlfs_ctl_fill_attr). */
static void server_stat(struct stat *st, uint64_t ino, off_t size)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_mode = S_IFREG | 0644;
	st->st_nlink = 1;
	st->st_uid = 1000;
	st->st_gid = 100;
	st->st_size = size;
	st->st_blksize = 4096;
	st->st_blocks = (size + 511) / 512;
	st->st_mtim.tv_sec = 1700000000 + (time_t)ino;
	st->st_mtim.tv_nsec = 123456789;
	st->st_atim = st->st_mtim;
	st->st_ctim = st->st_mtim;
}

/* (parent, name) gives back ino and exactly st. */
static void same(uint64_t parent, const char *name, uint64_t ino,
		 const struct stat *st)
{
	uint64_t got_ino = 0;
	struct stat got;
	int ret = dlfs_nscache_get(parent, name, strlen(name), &usual,
				   &got_ino, &got);
	CHECK_EQ(ret, 0);
	CHECK_EQ(got_ino, ino);
	CHECK(!ret && !memcmp(&got, st, sizeof(got)));
}

int main(void)
{
	struct stat st, odd;
	dlfs_nscache_init((size_t)1 << 20);
	server_stat(&usual, 1, 0);
	usual.st_mode = S_IFDIR | 0755;

	/* The dlfs server's attributes: compact. */
	server_stat(&st, 2, 100000);
	dlfs_nscache_put(1, "a.jpg", 5, &usual, 2, &st);
	same(1, "a.jpg", 2, &st);
	size_t one = dlfs_nscache_bytes();

	/* Another server's (a real directory's): kept whole. */
	server_stat(&odd, 3, 5);
	odd.st_dev = 2049;
	odd.st_nlink = 3;
	odd.st_blksize = 512;
	odd.st_blocks = 8;
	odd.st_atim.tv_sec = 5;
	odd.st_ctim.tv_nsec = 7;
	odd.st_rdev = 42;
	dlfs_nscache_put(1, "b", 1, &usual, 3, &odd);
	same(1, "b", 3, &odd);

	/* Missing names, and names never put. */
	dlfs_nscache_put(1, "nope", 4, &usual, 0, NULL);
	uint64_t ino;
	CHECK_EQ(dlfs_nscache_get(1, "nope", 4, &usual, &ino, &st), -ENOENT);
	CHECK_EQ(dlfs_nscache_get(2, "nope", 4, &usual, &ino, &st), 1);
	CHECK_EQ(dlfs_nscache_get(1, "a.jp", 4, &usual, &ino, &st), 1);

	/* The budget: 100,000 names in 1 MiB. Thousands, and the newest, are
	 * still there. */
	char name[32];
	for (int i = 0; i < 100000; i++) {
		snprintf(name, sizeof(name), "n%07d.jpg", i);
		server_stat(&st, 10 + (uint64_t)i, i);
		dlfs_nscache_put(7, name, strlen(name), &usual,
				 10 + (uint64_t)i, &st);
		CHECK(dlfs_nscache_bytes() <= (size_t)1 << 20);
	}
	server_stat(&st, 10 + 99999, 99999);
	same(7, "n0099999.jpg", 10 + 99999, &st);
	size_t n = dlfs_nscache_entries(), b = dlfs_nscache_bytes();
	CHECK(n > 2000); /* a shard is emptied when full: half full on average */
	printf("nscache: %zu bytes of entry for a 5-byte name (a struct stat "
	       "alone is %zu); %zu names of 12 bytes in %zu bytes, %.0f "
	       "bytes each with the table\n",
	       one - 64 * sizeof(void *), sizeof(struct stat), n, b,
	       (double)b / (double)n);
	return t_failures ? 1 : 0;
}
