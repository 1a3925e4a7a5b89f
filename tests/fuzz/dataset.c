/*
 * Fuzz target "dataset": a whole dataset built from the input, then read
 * through the public API as the daemon and dlfs-inspect read it.
 *
 * Input (fuzzlib.h): the entries of the six LMDB databases and up to
 * MAX_FILES container files. Each input is written to a scratch directory
 * (under $TMPDIR, /dev/shm when it exists): an LMDB index holding exactly
 * those entries, and the container files. Then: dlfs_ds_open; dlfs_stat
 * of the first MAX_INODES inodes; for each directory, dlfs_readdir (whole,
 * then stopped and resumed by cookie) with every name copied into a
 * 256-byte buffer as the FUSE layer and extract do, looked up again with
 * dlfs_lookup, and its path found with dlfs_path_of; for each file,
 * dlfs_file_pread of the whole file and dlfs_chunk_read of every chunk
 * under it into a chunk-size buffer, as the read path does; then
 * dlfs_verify and dlfs_extract. Nothing may crash, overrun or leak; a
 * lookup of a listed name finds the listed inode; extract writes nothing
 * outside its directory.
 *
 * A dataset is built per input, so this target is slow (hundreds of
 * inputs a second), and it also tests LMDB's handling of what we store,
 * not LMDB's handling of a damaged file (the mount mutation test does
 * that, tests/mount/mutate.py).
 */
#include <dirent.h>
#include <fcntl.h>
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dlfs/check.h"
#include "dlfs/dataset.h"
#include "fuzzlib.h"
#include "tutil.h"

#define MAX_ENTS 1024
#define MAX_FILES 4
#define MAX_INODES 128
#define MAX_CHUNK (1u << 20)
#define MAX_READ (4u << 20)

static char *scratch; /* the dataset directory, made once */
static char *xdir;    /* where dlfs_extract writes */
static MDB_env *wenv; /* the index's writer: see open_writer */

static void cleanup(void)
{
	if (wenv)
		mdb_env_close(wenv);
	if (scratch) {
		t_rmrf(scratch);
		free(scratch);
	}
	free(xdir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	const char *base = getenv("TMPDIR");
	struct stat st;
	if (!base)
		base = stat("/dev/shm", &st) == 0 ? "/dev/shm" : "/tmp";
	if (asprintf(&scratch, "%s/dlfs-fuzz-XXXXXX", base) < 0 ||
	    !mkdtemp(scratch)) {
		perror("dlfs fuzz: mkdtemp");
		abort();
	}
	if (asprintf(&xdir, "%s/x", scratch) < 0)
		abort();
	atexit(cleanup);
	return 0;
}

/* By tag; the last is where FUZZ_INODES also go, so that the reader
 * finds them whatever features the superblock names (dlfs_inodes_db). */
static const char *const dbs[] = {DLFS_DB_META,   DLFS_DB_INODES,
				  DLFS_DB_SYMLINKS, DLFS_DB_DIRENTS,
				  DLFS_DB_CHUNKS, DLFS_DB_CONTAINERS,
				  DLFS_DB_INODES_F};
#define NDBS (sizeof(dbs) / sizeof(dbs[0]))

/*
 * The index's writer stays open for the process: opening an LMDB
 * environment for writing allocates megabytes (its page lists), which cost
 * more than the rest of an input. Each input empties the databases and
 * refills them. The dataset opens the same file read-only, after the
 * commit; both skip LMDB's locks, and nothing else uses the file.
 */
static MDB_dbi wdbi[NDBS];

static void open_writer(void)
{
	char path[4096];
	MDB_txn *t;
	snprintf(path, sizeof(path), "%s/%s", scratch, DLFS_INDEX_NAME);
	FUZZ_ASSERT(mdb_env_create(&wenv) == 0);
	FUZZ_ASSERT(mdb_env_set_maxdbs(wenv, 8) == 0);
	FUZZ_ASSERT(mdb_env_set_mapsize(wenv, 64u << 20) == 0);
	FUZZ_ASSERT(mdb_env_open(wenv, path,
				 MDB_NOSUBDIR | MDB_NOSYNC | MDB_NOMETASYNC |
					 MDB_NOLOCK,
				 0600) == 0);
	FUZZ_ASSERT(mdb_txn_begin(wenv, NULL, 0, &t) == 0);
	for (size_t i = 0; i < NDBS; i++)
		FUZZ_ASSERT(mdb_dbi_open(t, dbs[i], MDB_CREATE, &wdbi[i]) == 0);
	FUZZ_ASSERT(mdb_txn_commit(t) == 0);
}

/* Write the index and the containers. @return 0, or -1 to skip. */
static int build(const struct fuzz_ent *e, size_t n)
{
	char path[4096];
	MDB_txn *t = NULL;

	if (!wenv)
		open_writer();
	for (uint32_t c = 0; c < MAX_FILES; c++) {
		char name[DLFS_CONTAINER_NAME_MAX];
		dlfs_container_name(c, name);
		snprintf(path, sizeof(path), "%s/%s", scratch, name);
		unlink(path);
	}
	FUZZ_ASSERT(mdb_txn_begin(wenv, NULL, 0, &t) == 0);
	for (size_t i = 0; i < NDBS; i++)
		FUZZ_ASSERT(mdb_drop(t, wdbi[i], 0) == 0);
	for (size_t i = 0; i < n; i++) {
		if (e[i].tag > FUZZ_CONTAINERS)
			continue;
		MDB_val k = {e[i].klen, (void *)e[i].key};
		MDB_val v = {e[i].vlen, (void *)e[i].val};
		/* Keys LMDB refuses (empty, too long) are simply not there;
		 * a full map leaves out the rest. */
		if (mdb_put(t, wdbi[e[i].tag], &k, &v, 0) == MDB_MAP_FULL ||
		    (e[i].tag == FUZZ_INODES &&
		     mdb_put(t, wdbi[NDBS - 1], &k, &v, 0) == MDB_MAP_FULL))
			break;
	}
	FUZZ_ASSERT(mdb_txn_commit(t) == 0);
	for (size_t i = 0; i < n; i++) {
		if (e[i].tag != FUZZ_FILE || e[i].klen != 4)
			continue;
		uint32_t c = dlfs_get_be32(e[i].key);
		char name[DLFS_CONTAINER_NAME_MAX];
		if (c >= MAX_FILES)
			continue;
		dlfs_container_name(c, name);
		snprintf(path, sizeof(path), "%s/%s", scratch, name);
		int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
			      0600);
		if (fd < 0)
			continue; /* given twice: the first one counts */
		ssize_t w = write(fd, e[i].val, e[i].vlen);
		close(fd);
		if (w != (ssize_t)e[i].vlen)
			return -1;
	}
	return 0;
}

struct lister {
	struct dlfs_txn *txn;
	uint64_t dir;
	unsigned seen, stop_at;
	uint64_t cookie;
};

static int on_entry(void *arg, const struct dlfs_dirent *d)
{
	struct lister *l = arg;
	if (l->stop_at && l->seen == l->stop_at)
		return 1;
	/* What the FUSE layer and extract do with a name. */
	char name[DLFS_NAME_MAX + 1];
	memcpy(name, d->name, d->name_len);
	name[d->name_len] = '\0';
	uint64_t ino;
	struct dlfs_err err;
	if (dlfs_lookup(l->txn, l->dir, d->name, d->name_len, &ino, &err) ==
	    0)
		FUZZ_ASSERT(ino == d->ino);
	l->seen++;
	l->cookie = d->cookie;
	return 0;
}

static void list(struct dlfs_txn *txn, uint64_t dir)
{
	struct dlfs_err err;
	struct lister l = {.txn = txn, .dir = dir};
	if (dlfs_readdir(txn, dir, 0, on_entry, &l, &err))
		return;
	/* Stop after two entries, resume by cookie: the same entries. */
	unsigned total = l.seen;
	struct lister a = {.txn = txn, .dir = dir, .stop_at = 2};
	if (dlfs_readdir(txn, dir, 0, on_entry, &a, &err))
		return;
	struct lister b = {.txn = txn, .dir = dir};
	if (dlfs_readdir(txn, dir, a.cookie, on_entry, &b, &err) == 0)
		FUZZ_ASSERT(a.seen + b.seen == total);
}

static void read_file(struct dlfs_ds *ds, struct dlfs_txn *txn,
		      const struct dlfs_inode *in, uint8_t *chunk,
		      uint64_t cs)
{
	struct dlfs_err err;
	size_t got;
	if (in->size == 0)
		return;
	size_t len = in->size < MAX_READ ? (size_t)in->size : MAX_READ;
	uint8_t *buf = malloc(len);
	FUZZ_ASSERT(buf);
	if (dlfs_file_pread(ds, in, buf, len, 0, &got, &err) == 0)
		FUZZ_ASSERT(got == len);
	free(buf);
	if (!chunk)
		return;
	uint64_t k0, k1;
	dlfs_file_chunks(cs, in, 0, in->size, &k0, &k1);
	for (uint64_t k = k0; k <= k1 && k < k0 + 16; k++) {
		size_t clen = 0;
		int ret = dlfs_chunk_read(ds, txn, in->container, k, chunk, cs,
					  &clen, &err);
		if (ret == 0 || ret == -DLFS_ECHECKSUM)
			FUZZ_ASSERT(clen <= cs);
	}
}

/* Extract wrote nothing outside its directory: the scratch directory
 * holds the index and the containers only. */
static void stayed_inside(void)
{
	DIR *d = opendir(scratch);
	struct dirent *de;
	FUZZ_ASSERT(d);
	while ((de = readdir(d))) {
		const char *n = de->d_name;
		FUZZ_ASSERT(!strcmp(n, ".") || !strcmp(n, "..") ||
			    !strcmp(n, DLFS_INDEX_NAME) ||
			    (strlen(n) == 10 &&
			     !strcmp(n + 6, DLFS_CONTAINER_SUFFIX)));
	}
	closedir(d);
}

static void on_bad(void *arg, const char *path, const char *msg)
{
	(void)arg;
	(void)path;
	(void)msg;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct fuzz_ent e[MAX_ENTS];
	struct dlfs_ds *ds = NULL;
	struct dlfs_txn *txn = NULL;
	struct dlfs_err err;
	uint8_t *chunk = NULL;

	if (!scratch)
		LLVMFuzzerInitialize(NULL, NULL);
	size_t n = fuzz_parse(data, size, e, MAX_ENTS);
	if (build(e, n) || dlfs_ds_open(scratch, &ds, &err))
		goto out;
	const struct dlfs_super_rec *s = &dlfs_ds_info(ds)->super;
	const uint64_t cs = s->chunk_size;
	if (dlfs_txn_begin(ds, &txn, &err))
		goto out;
	if (cs <= MAX_CHUNK && posix_memalign((void **)&chunk, 4096, cs))
		chunk = NULL;
	for (uint64_t ino = 1; ino <= s->n_inodes && ino <= MAX_INODES;
	     ino++) {
		struct dlfs_inode in;
		char path[1 << 12];
		if (dlfs_stat(txn, ino, &in, &err))
			continue;
		if (S_ISDIR(in.mode))
			list(txn, ino);
		else if (S_ISREG(in.mode))
			read_file(ds, txn, &in, chunk, cs);
		else
			FUZZ_ASSERT(S_ISLNK(in.mode) && in.target);
		if (ino < 8)
			dlfs_path_of(txn, ino, path, sizeof(path), &err);
	}
	dlfs_txn_end(txn);
	txn = NULL;
	if (cs <= MAX_CHUNK) {
		struct dlfs_verify_report rep;
		dlfs_verify(ds, on_bad, NULL, &rep, &err);
		if (s->total_file_bytes <= MAX_READ) {
			dlfs_extract(ds, xdir, &err);
			t_rmrf(xdir);
			stayed_inside();
		}
	}
out:
	dlfs_txn_end(txn);
	dlfs_ds_close(ds);
	free(chunk);
	return 0;
}
