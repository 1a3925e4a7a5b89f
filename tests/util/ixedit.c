/*
 * ixedit: change records of a dataset's LMDB index, to make the damaged
 * and hostile indexes the tests need (a bit flip rarely makes the one
 * record a test wants).
 *
 *   ixedit INDEX get DB KEYHEX          print the value, in hex
 *   ixedit INDEX put DB KEYHEX VALHEX   add or replace a record
 *   ixedit INDEX del DB KEYHEX          remove a record
 *   ixedit INDEX point PATH OTHER       the entry PATH leads to the inode
 *                                       that the entry OTHER leads to
 *   ixedit INDEX feature BIT            set feature bit BIT (0 to 63) in
 *                                       the superblock (a 1.0 one becomes
 *                                       1.1)
 *
 * DB is a named database of dlfs-format(5): meta, inodes (inodes.f in a
 * dataset with features), symlinks, dirents, chunks, containers. PATH
 * and OTHER are paths from the root, resolved through dirents. Exit
 * status 0, 1 on an LMDB error or a path not found, 2 on bad arguments.
 * A test tool: not installed.
 */
#include <lmdb.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int unhex(const char *s, unsigned char **out, size_t *len)
{
	size_t n = strlen(s);
	if (n % 2)
		return -1;
	unsigned char *b = malloc(n / 2 + 1);
	if (!b)
		return -1;
	for (size_t i = 0; i < n / 2; i++) {
		unsigned v;
		if (sscanf(s + 2 * i, "%2x", &v) != 1) {
			free(b);
			return -1;
		}
		b[i] = (unsigned char)v;
	}
	*out = b;
	*len = n / 2;
	return 0;
}

/*
 * The dirents key of path (from the root) into kb (8 + 255 bytes), its
 * length in *klen, and the value of its entry in *val. Written from
 * dlfs-format(5), not with libdlfs, so that the tests do not take the
 * library's word for the layout. @return an LMDB code.
 */
static int entry_of(MDB_txn *txn, MDB_dbi dirents, const char *path,
		    unsigned char *kb, size_t *klen, MDB_val *val)
{
	uint64_t parent = 1;
	const char *p = path;
	int rc = MDB_NOTFOUND;
	while (*p) {
		const char *end = strchr(p, '/');
		size_t n = end ? (size_t)(end - p) : strlen(p);
		if (n == 0 || n > 255)
			return MDB_NOTFOUND;
		for (int i = 0; i < 8; i++)
			kb[i] = (unsigned char)(parent >> (56 - 8 * i));
		memcpy(kb + 8, p, n);
		*klen = 8 + n;
		MDB_val k = {*klen, kb};
		rc = mdb_get(txn, dirents, &k, val);
		if (rc || val->mv_size != 8)
			return rc ? rc : MDB_CORRUPTED;
		uint64_t v = 0;
		for (int i = 7; i >= 0; i--)
			v = v << 8 | ((unsigned char *)val->mv_data)[i];
		parent = v & ((UINT64_C(1) << 60) - 1);
		p += n;
		if (*p == '/')
			p++;
	}
	return rc;
}

/* point PATH OTHER. @return an LMDB code. */
static int point(MDB_txn *txn, const char *path, const char *other)
{
	MDB_dbi dirents;
	unsigned char kb[8 + 255], ko[8 + 255], v[8];
	size_t klen, kolen;
	MDB_val pv, ov;
	int rc = mdb_dbi_open(txn, "dirents", 0, &dirents);
	if (!rc)
		rc = entry_of(txn, dirents, other, ko, &kolen, &ov);
	if (!rc) {
		memcpy(v, ov.mv_data, 8);
		rc = entry_of(txn, dirents, path, kb, &klen, &pv);
	}
	if (rc)
		return rc;
	MDB_val k = {klen, kb}, nv = {8, v};
	return mdb_put(txn, dirents, &k, &nv, 0);
}

/* feature BIT. @return an LMDB code. */
static int feature(MDB_txn *txn, unsigned bit)
{
	MDB_dbi meta;
	MDB_val k = {5, "super"}, v;
	unsigned char sb[120] = {0};
	int rc = mdb_dbi_open(txn, "meta", 0, &meta);
	if (!rc)
		rc = mdb_get(txn, meta, &k, &v);
	if (rc)
		return rc;
	if (v.mv_size < 112)
		return MDB_CORRUPTED;
	memcpy(sb, v.mv_data, v.mv_size < 120 ? v.mv_size : 120);
	/* format_minor (bytes 4..7, little-endian): at least 1, which has
	 * the features word at byte 112. */
	if (!sb[4] && !sb[5] && !sb[6] && !sb[7])
		sb[4] = 1;
	sb[112 + bit / 8] |= (unsigned char)(1u << (bit % 8));
	MDB_val nv = {120, sb};
	return mdb_put(txn, meta, &k, &nv, 0);
}

int main(int argc, char **argv)
{
	MDB_env *env = NULL;
	MDB_txn *txn = NULL;
	MDB_dbi dbi;
	unsigned char *kb = NULL, *vb = NULL;
	size_t klen = 0, vlen = 0;
	struct stat st;
	int rc, ret = 1;

	const char *cmd = argc > 2 ? argv[2] : "";
	int named = !strcmp(cmd, "point") || !strcmp(cmd, "feature");
	unsigned bit = 0;
	if (!strcmp(cmd, "point") ? argc != 5
	    : !strcmp(cmd, "feature")
		    ? argc != 4 || sscanf(argv[3], "%u", &bit) != 1 || bit > 63
		    : argc < 5 ||
			      (strcmp(cmd, "put") ? argc != 5 : argc != 6) ||
			      unhex(argv[4], &kb, &klen) ||
			      (argc == 6 && unhex(argv[5], &vb, &vlen))) {
		fprintf(stderr, "usage: ixedit INDEX get|put|del DB KEYHEX "
				"[VALHEX]\n"
				"       ixedit INDEX point PATH OTHER\n"
				"       ixedit INDEX feature BIT\n");
		free(kb);
		free(vb);
		return 2;
	}
	if (stat(argv[1], &st) < 0) {
		perror(argv[1]);
		goto out;
	}
	rc = mdb_env_create(&env);
	if (!rc)
		rc = mdb_env_set_maxdbs(env, 8);
	if (!rc)
		rc = mdb_env_set_mapsize(env, (size_t)st.st_size * 2 + (1 << 20));
	if (!rc)
		rc = mdb_env_open(env, argv[1], MDB_NOSUBDIR | MDB_NOLOCK, 0600);
	if (!rc)
		rc = mdb_txn_begin(env, NULL, 0, &txn);
	if (!rc && !named)
		rc = mdb_dbi_open(txn, argv[3], 0, &dbi);
	MDB_val k = {klen, kb}, v = {vlen, vb};
	if (!rc && !strcmp(cmd, "point")) {
		rc = point(txn, argv[3], argv[4]);
	} else if (!rc && !strcmp(cmd, "feature")) {
		rc = feature(txn, bit);
	} else if (!rc && !strcmp(argv[2], "get")) {
		rc = mdb_get(txn, dbi, &k, &v);
		for (size_t i = 0; !rc && i < v.mv_size; i++)
			printf("%02x", ((unsigned char *)v.mv_data)[i]);
		if (!rc)
			printf("\n");
	} else if (!rc && !strcmp(argv[2], "put")) {
		rc = mdb_put(txn, dbi, &k, &v, 0);
	} else if (!rc && !strcmp(argv[2], "del")) {
		rc = mdb_del(txn, dbi, &k, NULL);
	} else if (!rc) {
		fprintf(stderr, "ixedit: unknown command %s\n", argv[2]);
		ret = 2;
		goto out;
	}
	if (!rc) {
		rc = mdb_txn_commit(txn);
		txn = NULL;
	}
	if (rc) {
		fprintf(stderr, "ixedit: %s: %s\n", argv[1], mdb_strerror(rc));
		goto out;
	}
	ret = 0;
out:
	if (txn)
		mdb_txn_abort(txn);
	if (env)
		mdb_env_close(env);
	free(kb);
	free(vb);
	return ret;
}
