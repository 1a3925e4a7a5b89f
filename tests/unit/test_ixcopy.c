/* The index seal (format) and the index's local copy (core/shared/ixcopy.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dlfs/dataset.h"
#include "ixcopy.h"
#include "tutil.h"

static char *dir, *ds, *nv;

static void setup(void)
{
	dir = t_tmpdir();
	char *src = t_path(dir, "src");
	for (int i = 0; i < 40; i++) {
		char rel[32];
		snprintf(rel, sizeof(rel), "d%d/f%d", i % 4, i);
		t_write(src, rel, 100 + 37 * (size_t)i, (uint32_t)i);
	}
	ds = t_path(dir, "ds.dlfs");
	nv = t_path(dir, "nv");
	if (t_pack(src, ds, 64 << 10, 1 << 20, 0))
		abort();
	free(src);
}

static char *copy_of(void)
{
	struct dlfs_seal s;
	CHECK(dlfs_seal_read(ds, &s, NULL) == 0);
	char *p;
	if (asprintf(&p, "%s/%s/index", nv, s.id_hex) < 0)
		abort();
	return p;
}

static void test_seal(void)
{
	struct dlfs_seal s, made;
	struct dlfs_err err = {0};
	CHECK(dlfs_seal_read(ds, &s, &err) == 0);
	char *ip = t_path(ds, "index");
	struct stat st;
	CHECK(stat(ip, &st) == 0);
	CHECK_EQ(s.size, st.st_size);
	CHECK(dlfs_seal_make(ip, s.id, &made, &err) == 0);
	CHECK(!memcmp(made.sum, s.sum, 16) && made.size == s.size);
	CHECK(dlfs_seal_fold(&made) == dlfs_seal_fold(&s));
	/* A damaged seal is refused, and named. */
	char *sp = t_path(ds, "index.sum");
	uint8_t b[64];
	int fd = open(sp, O_RDWR);
	CHECK(fd >= 0 && pread(fd, b, 64, 0) == 64);
	t_flip(sp, 20);
	CHECK(dlfs_seal_read(ds, &s, &err) == -EUCLEAN);
	CHECK(strstr(err.msg, "index.sum") != NULL);
	CHECK(pwrite(fd, b, 64, 0) == 64);
	CHECK(ftruncate(fd, 10) == 0);
	CHECK(dlfs_seal_read(ds, &s, &err) == -EUCLEAN);
	CHECK(ftruncate(fd, 0) == 0 && pwrite(fd, b, 64, 0) == 64);
	close(fd);
	CHECK(dlfs_seal_read(ds, &s, &err) == 0);
	free(sp);
	free(ip);
}

static void test_fetch_find(void)
{
	struct dlfs_seal s;
	struct dlfs_err err = {0};
	char *path = NULL;
	int hold = -1;
	uint64_t pfs = 0;
	CHECK(dlfs_seal_read(ds, &s, NULL) == 0);
	CHECK(dlfs_ixcopy_find(nv, &s, &path, &err) == -ENOENT);
	CHECK(dlfs_ixcopy_fetch(ds, nv, &s, &path, &hold, &pfs, &err) == 0);
	CHECK_EQ(pfs, s.size);
	CHECK_EQ(hold, -1);
	char *want = copy_of();
	CHECK(path && !strcmp(path, want));
	free(path);
	/* Found, by its stamp; then opened as the dataset's index. */
	CHECK(dlfs_ixcopy_find(nv, &s, &path, &err) == 0);
	struct dlfs_ds *d;
	CHECK(dlfs_ds_open_index(ds, path, s.id, &d, &err) == 0);
	if (d)
		dlfs_ds_close(d);
	/* A copy of another dataset's id is refused. */
	uint8_t other[DLFS_ID_SIZE] = {1};
	CHECK(dlfs_ds_open_index(ds, path, other, &d, &err) == -EUCLEAN);
	free(path);
	/* Damaged on disk: found out, removed. */
	t_flip(want, s.size / 2);
	CHECK(dlfs_ixcopy_find(nv, &s, &path, &err) == -EUCLEAN);
	CHECK(strstr(err.msg, want) != NULL);
	CHECK(access(want, F_OK) < 0);
	/* A copy without its stamp is checked in full and stamped. */
	pfs = 0;
	CHECK(dlfs_ixcopy_fetch(ds, nv, &s, &path, &hold, &pfs, &err) == 0);
	free(path);
	char *stamp;
	if (asprintf(&stamp, "%s.ok", want) < 0)
		abort();
	CHECK(unlink(stamp) == 0);
	CHECK(dlfs_ixcopy_find(nv, &s, &path, &err) == 0);
	free(path);
	CHECK(access(stamp, F_OK) == 0);
	/* A directory open to others is not used. */
	char *idd = strdup(want);
	*strrchr(idd, '/') = '\0';
	CHECK(chmod(idd, 0755) == 0);
	CHECK(dlfs_ixcopy_find(nv, &s, &path, &err) == -EPERM);
	CHECK(strstr(err.msg, "not private") != NULL);
	CHECK(chmod(idd, 0700) == 0);
	free(idd);
	free(stamp);
	free(want);
}

static void test_memory_and_bad_bytes(void)
{
	struct dlfs_seal s;
	struct dlfs_err err = {0};
	struct dlfs_ixcopy *c;
	char *path = NULL;
	int hold = -1;
	uint64_t pfs = 0;
	CHECK(dlfs_seal_read(ds, &s, NULL) == 0);
	CHECK(dlfs_ixcopy_fetch(ds, NULL, &s, &path, &hold, &pfs, &err) == 0);
	CHECK(hold >= 0 && path && !strncmp(path, "/proc/self/fd/", 14));
	struct dlfs_ds *d = NULL;
	CHECK(dlfs_ds_open_index(ds, path, s.id, &d, &err) == 0);
	close(hold);
	if (d) {
		/* Still readable once only LMDB holds the memfd. */
		struct dlfs_txn *t;
		uint64_t ino;
		CHECK(dlfs_txn_begin(d, &t, &err) == 0);
		CHECK(dlfs_resolve(t, "d1/f5", &ino, &err) == 0);
		dlfs_txn_end(t);
		dlfs_ds_close(d);
	}
	free(path);
	/* Bytes that are not the sealed ones: nothing kept. */
	CHECK(dlfs_ixcopy_begin(nv, &s, &c, &err) == 0);
	uint8_t junk[4096];
	memset(junk, 7, sizeof(junk));
	for (uint64_t off = 0; off < s.size; off += sizeof(junk))
		CHECK(dlfs_ixcopy_write(c, junk, sizeof(junk), &err) == 0);
	CHECK(dlfs_ixcopy_write(c, junk, 1, &err) == -EUCLEAN);
	CHECK(dlfs_ixcopy_end(c, &path, &hold, &err) == -EUCLEAN);
	CHECK(path == NULL);
	/* The good copy made before is still there and trusted. */
	CHECK(dlfs_ixcopy_find(nv, &s, &path, &err) == 0);
	free(path);
}

int main(void)
{
	setup();
	test_seal();
	test_fetch_find();
	test_memory_and_bad_bytes();
	t_rmrf(dir);
	free(dir);
	free(ds);
	free(nv);
	return t_done("test_ixcopy");
}
