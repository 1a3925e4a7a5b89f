/*
 * mkseeds DATASET OUTDIR: seed inputs for the fuzz targets, dumped from a
 * real dataset into the fuzz input format (fuzzlib.h). tools/fuzz/run
 * --seed-corpus packs a few small trees and runs this on each.
 *
 * Writes, each file named by the XXH3-64 of its content (so running it
 * twice changes nothing):
 *   OUTDIR/container/  per container: the superblock, its record and its
 *                      file, with flags 0 and with flags 3 (fix the
 *                      checksums and the size), and 3 | 4 << 2 (walk the
 *                      trailer in 53-byte pieces);
 *   OUTDIR/records/    the superblock, every container record, and the
 *                      inode blocks, directory entries and chunk records
 *                      in seeds of at most 8 blocks and 64 of each;
 *   OUTDIR/dataset/    every entry of every database and every container
 *                      file, if the whole is at most 256 KiB.
 * Exit 0, or 1 with a message.
 */
#include <errno.h>
#include <fcntl.h>
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "dlfs/format.h"
#include "fuzzlib.h"

#define DATASET_SEED_MAX (256u << 10)

static const char *const dbs[] = {DLFS_DB_META,   DLFS_DB_INODES,
				  DLFS_DB_SYMLINKS, DLFS_DB_DIRENTS,
				  DLFS_DB_CHUNKS, DLFS_DB_CONTAINERS};

static void die(const char *what, const char *why)
{
	fprintf(stderr, "mkseeds: %s: %s\n", what, why);
	exit(1);
}

static void save(const char *dir, const char *sub, const struct fuzz_buf *b)
{
	char path[4096];
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		die(dir, strerror(errno));
	snprintf(path, sizeof(path), "%s/%s", dir, sub);
	if (mkdir(path, 0755) < 0 && errno != EEXIST)
		die(path, strerror(errno));
	snprintf(path, sizeof(path), "%s/%s/%016llx", dir, sub,
		 (unsigned long long)XXH3_64bits(b->p, b->len));
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(b->p, 1, b->len, f) != b->len || fclose(f))
		die(path, strerror(errno));
}

static void put(struct fuzz_buf *b, uint8_t tag, const void *k, size_t kl,
		const void *v, size_t vl)
{
	if (fuzz_put(b, tag, k, kl, v, vl))
		die("seed", "out of memory or key too long");
}

static uint8_t *slurp(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		die(path, strerror(errno));
	uint8_t *p = malloc((size_t)st.st_size + 1);
	if (!p || read(fd, p, (size_t)st.st_size) != st.st_size)
		die(path, "cannot read");
	close(fd);
	*len = (size_t)st.st_size;
	return p;
}

/* The first MAX_BLOCKS inode blocks of the index, into b. */
#define MAX_BLOCKS 16
static void add_inodes(MDB_txn *t, MDB_dbi inodes, struct fuzz_buf *b)
{
	MDB_cursor *cur;
	MDB_val k, v;
	if (mdb_cursor_open(t, inodes, &cur))
		die("seed", "cursor");
	int n = 0;
	for (int rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
	     !rc && n < MAX_BLOCKS; rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		put(b, FUZZ_INODES, k.mv_data, k.mv_size, v.mv_data, v.mv_size);
		n++;
	}
	mdb_cursor_close(cur);
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: mkseeds DATASET OUTDIR\n");
		return 2;
	}
	const char *ds = argv[1], *out = argv[2];
	char path[4096];
	MDB_env *env;
	MDB_txn *t;
	MDB_dbi dbi[6];
	MDB_val k, v;
	snprintf(path, sizeof(path), "%s/%s", ds, DLFS_INDEX_NAME);
	if (mdb_env_create(&env) || mdb_env_set_maxdbs(env, 8) ||
	    mdb_env_open(env, path, MDB_NOSUBDIR | MDB_RDONLY | MDB_NOLOCK,
			 0) ||
	    mdb_txn_begin(env, NULL, MDB_RDONLY, &t))
		die(path, "cannot open the index");
	if (mdb_dbi_open(t, DLFS_DB_META, 0, &dbi[FUZZ_META]))
		die(path, "not a dlfs index");
	k = (MDB_val){strlen(DLFS_META_SUPER), DLFS_META_SUPER};
	struct dlfs_super_rec s;
	if (mdb_get(t, dbi[FUZZ_META], &k, &v) ||
	    v.mv_size < DLFS_SUPER_REC_SIZE_10 ||
	    dlfs_super_decode(v.mv_data, v.mv_size, &s))
		die(path, "no superblock");
	MDB_val super = v;
	/* Inode blocks are seeded as FUZZ_INODES whatever their database's
	 * name (dlfs_inodes_db). */
	for (int i = 1; i < 6; i++)
		if (mdb_dbi_open(t, i == FUZZ_INODES ? dlfs_inodes_db(s.features)
						     : dbs[i],
				 0, &dbi[i]))
			die(path, "not a dlfs index");

	/* container/ */
	for (uint32_t c = 0; c < s.n_containers; c++) {
		uint8_t kb[4];
		char name[DLFS_CONTAINER_NAME_MAX];
		dlfs_put_be32(kb, c);
		k = (MDB_val){4, kb};
		if (mdb_get(t, dbi[FUZZ_CONTAINERS], &k, &v))
			die(path, "a container record is missing");
		dlfs_container_name(c, name);
		snprintf(path, sizeof(path), "%s/%s", ds, name);
		size_t len;
		uint8_t *file = slurp(path, &len);
		const uint8_t flags[] = {0, 3, 3 | 4 << 2};
		for (size_t i = 0; i < sizeof(flags); i++) {
			struct fuzz_buf b = {0};
			put(&b, FUZZ_META, DLFS_META_SUPER,
			    strlen(DLFS_META_SUPER), super.mv_data,
			    super.mv_size);
			put(&b, FUZZ_CONTAINERS, kb, 4, v.mv_data, v.mv_size);
			put(&b, FUZZ_FLAGS, NULL, 0, &flags[i], 1);
			put(&b, FUZZ_FILE, kb, 4, file, len);
			save(out, "container", &b);
			free(b.p);
		}
		free(file);
	}

	/* records/: the same head, then slices of each database. */
	struct fuzz_buf head = {0};
	put(&head, FUZZ_META, DLFS_META_SUPER, strlen(DLFS_META_SUPER),
	    super.mv_data, super.mv_size);
	MDB_cursor *cur;
	if (mdb_cursor_open(t, dbi[FUZZ_CONTAINERS], &cur))
		die(ds, "cursor");
	for (int rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); !rc;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT))
		put(&head, FUZZ_CONTAINERS, k.mv_data, k.mv_size, v.mv_data,
		    v.mv_size);
	mdb_cursor_close(cur);
	const struct {
		int tag;
		size_t per_seed;
	} slices[] = {{FUZZ_INODES, 8}, {FUZZ_DIRENTS, 64}, {FUZZ_CHUNKS, 64}};
	for (size_t i = 0; i < 3; i++) {
		if (mdb_cursor_open(t, dbi[slices[i].tag], &cur))
			die(ds, "cursor");
		struct fuzz_buf b = {0};
		size_t in_seed = 0;
		for (int rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);;
		     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
			if (in_seed && (rc || in_seed == slices[i].per_seed)) {
				/* Entries with the inodes they lead to, so that
				 * the target checks each entry against its
				 * record (format 1.1's path binding). */
				if (slices[i].tag == FUZZ_DIRENTS)
					add_inodes(t, dbi[FUZZ_INODES], &b);
				save(out, "records", &b);
				in_seed = 0;
			}
			if (rc)
				break;
			if (!in_seed) { /* start again from the head */
				if (b.cap < head.len) {
					uint8_t *p = realloc(b.p, head.len);
					if (!p)
						die("seed", "out of memory");
					b.p = p;
					b.cap = head.len;
				}
				memcpy(b.p, head.p, head.len);
				b.len = head.len;
			}
			put(&b, (uint8_t)slices[i].tag, k.mv_data, k.mv_size,
			    v.mv_data, v.mv_size);
			in_seed++;
		}
		free(b.p);
		mdb_cursor_close(cur);
	}
	free(head.p);

	/* dataset/ */
	struct fuzz_buf b = {0};
	for (int i = 0; i < 6; i++) {
		if (mdb_cursor_open(t, dbi[i], &cur))
			die(ds, "cursor");
		for (int rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); !rc;
		     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT))
			put(&b, (uint8_t)i, k.mv_data, k.mv_size, v.mv_data,
			    v.mv_size);
		mdb_cursor_close(cur);
	}
	for (uint32_t c = 0; c < s.n_containers; c++) {
		uint8_t kb[4];
		char name[DLFS_CONTAINER_NAME_MAX];
		size_t len;
		dlfs_put_be32(kb, c);
		dlfs_container_name(c, name);
		snprintf(path, sizeof(path), "%s/%s", ds, name);
		uint8_t *file = slurp(path, &len);
		put(&b, FUZZ_FILE, kb, 4, file, len);
		free(file);
	}
	if (b.len <= DATASET_SEED_MAX)
		save(out, "dataset", &b);
	else
		fprintf(stderr, "mkseeds: %s: %zu bytes, too large for a "
			"dataset seed\n", ds, b.len);
	free(b.p);
	mdb_txn_abort(t);
	mdb_env_close(env);
	return 0;
}
