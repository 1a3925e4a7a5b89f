/*
 * Fuzz target "archive": one archive indexed in place (dlfs-pack
 * --in-place), whatever its bytes.
 *
 * Input: the archive's bytes themselves (a tar or a zip, or anything),
 * not fuzzlib's entry format: the parsers (src/pack/inplace_tar.c,
 * inplace_zip.c) are what is fuzzed, and archives are what they meet.
 * The input is written to a file in a scratch directory and indexed with
 * 64 KiB chunks. Indexing may refuse it (with a message); when it
 * succeeds, the dataset must open and verify with no damage (every chunk
 * and file checksum computed at index time matches what a reader reads),
 * which is what every tier trusts.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dlfs/dataset.h"
#include "dlfs/check.h"
#include "dlfs/pack.h"
#include "fuzzlib.h"

static char dir[256];

static void rm_dataset(const char *ds)
{
	char p[1100]; /* ds is at most 1024 bytes */
	snprintf(p, sizeof(p), "%s/index", ds);
	unlink(p);
	snprintf(p, sizeof(p), "%s/index.sum", ds);
	unlink(p);
	rmdir(ds);
}

/* The scratch directory goes with the process. */
static void rm_dir(void)
{
	char p[1024];
	snprintf(p, sizeof(p), "%s/a.dlfs", dir);
	rm_dataset(p);
	snprintf(p, sizeof(p), "%s/a.tar", dir);
	unlink(p);
	rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	snprintf(dir, sizeof(dir), "%s/dlfs-fuzz-archive.XXXXXX", tmp);
	FUZZ_ASSERT(mkdtemp(dir));
	atexit(rm_dir);
	return 0;
}

static void on_verify(void *arg, const char *path, const char *msg)
{
	(void)arg;
	fprintf(stderr, "verify: %s: %s\n", path, msg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char arc[512], ds[512];
	snprintf(arc, sizeof(arc), "%s/a.tar", dir);
	snprintf(ds, sizeof(ds), "%s/a.dlfs", dir);
	int fd = open(arc, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	FUZZ_ASSERT(fd >= 0);
	FUZZ_ASSERT(write(fd, data, size) == (ssize_t)size);
	close(fd);

	struct dlfs_pack_opts o;
	struct dlfs_err err = {0};
	dlfs_pack_opts_init(&o);
	o.in_place = 1;
	o.chunk_size = 64 << 10;
	o.force = 1;
	o.procs = 1;
	const char *src[] = {arc};
	rm_dataset(ds);
	if (dlfs_pack(src, 1, ds, &o, &err) == 0) {
		struct dlfs_ds *d = NULL;
		struct dlfs_verify_report rep = {0};
		FUZZ_ASSERT(dlfs_ds_open(ds, &d, &err) == 0);
		int ret = dlfs_verify(d, on_verify, NULL, &rep, &err);
		if (ret || rep.bad_files || rep.bad_chunks)
			fprintf(stderr, "verify: %d: %s\n", ret, err.msg);
		FUZZ_ASSERT(ret == 0 && !rep.bad_files && !rep.bad_chunks &&
			    !rep.bad_containers && !rep.bad_names);
		dlfs_ds_close(d);
	} else {
		FUZZ_ASSERT(err.msg[0]); /* a refusal says why */
	}
	rm_dataset(ds);
	return 0;
}
