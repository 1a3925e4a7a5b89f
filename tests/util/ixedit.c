/*
 * ixedit: change records of a dataset's LMDB index, to make the damaged
 * and hostile indexes the tests need (a bit flip rarely makes the one
 * record a test wants).
 *
 *   ixedit INDEX get DB KEYHEX          print the value, in hex
 *   ixedit INDEX put DB KEYHEX VALHEX   add or replace a record
 *   ixedit INDEX del DB KEYHEX          remove a record
 *
 * DB is a named database of dlfs-format(5): meta, inodes, symlinks,
 * dirents, chunks, containers. Exit status 0, 1 on an LMDB error, 2 on
 * bad arguments. A test tool: not installed.
 */
#include <lmdb.h>
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

int main(int argc, char **argv)
{
	MDB_env *env = NULL;
	MDB_txn *txn = NULL;
	MDB_dbi dbi;
	unsigned char *kb = NULL, *vb = NULL;
	size_t klen = 0, vlen = 0;
	struct stat st;
	int rc, ret = 1;

	if (argc < 5 || (strcmp(argv[2], "put") ? argc != 5 : argc != 6) ||
	    unhex(argv[4], &kb, &klen) ||
	    (argc == 6 && unhex(argv[5], &vb, &vlen))) {
		fprintf(stderr, "usage: ixedit INDEX get|put|del DB KEYHEX "
				"[VALHEX]\n");
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
	if (!rc)
		rc = mdb_dbi_open(txn, argv[3], 0, &dbi);
	MDB_val k = {klen, kb}, v = {vlen, vb};
	if (!rc && !strcmp(argv[2], "get")) {
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
