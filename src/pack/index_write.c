/*
 * Writing the LMDB index, in transactions of about 32 MiB each, so that
 * LMDB never holds more dirty pages than that. Every database is filled
 * in key order with MDB_APPEND, which packs pages full; the commits fall
 * at points that depend only on the content, so the file is a pure
 * function of it: the same dataset gives the same bytes.
 */
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "index_write.h"
#include "inplace.h"
#include "util.h"

int pk_dataset_id(const struct pk_tree *t, const struct pk_layout *l,
		  const struct dlfs_pack_opts *o, uint8_t id[DLFS_ID_SIZE],
		  struct dlfs_err *err)
{
	enum { AB = 1024 };
	XXH3_state_t *st = XXH3_createState();
	struct pk_attr *ab = malloc(AB * sizeof(*ab));
	char *pb = NULL;
	size_t pcap = 0, plen;
	uint8_t b[64];
	int ret = 0;
	if (!st || !ab) {
		ret = dlfs_err_set(err, -ENOMEM, "out of memory");
		goto out;
	}
	XXH3_128bits_reset(st);
	dlfs_put_le64(b, o->chunk_size);
	dlfs_put_le64(b + 8, o->container_size);
	dlfs_put_le64(b + 16, o->align);
	dlfs_put_le32(b + 24, DLFS_FORMAT_MAJOR);
	XXH3_128bits_update(st, b, 28);
	/* A compressed pack's chunks differ from an uncompressed one's (and
	 * the NVMe tier is keyed by the id): the features, the codec and
	 * its level go in too. Without compression nothing is added, so
	 * such ids stay what they were. */
	if (o->compress != DLFS_COMPRESS_NONE) {
		dlfs_put_le64(b, pk_features(o));
		dlfs_put_le32(b + 8, (uint32_t)o->compress);
		dlfs_put_le32(b + 12, (uint32_t)o->compress_level);
		XXH3_128bits_update(st, b, 16);
	}
	uint64_t n = l->n_dirs + l->n_symlinks + l->n_files;
	for (uint64_t i = 0; i < n; i++) {
		const struct pk_entry *e = pk_at(t, l, i);
		if (!(i % AB) && (ret = pk_attr_read(t, (uint64_t)(e - t->e),
						     n - i < AB ? n - i : AB,
						     ab, err)))
			goto out;
		if (pk_entry_path(t, e, &pb, &pcap, &plen)) {
			ret = dlfs_err_set(err, -ENOMEM, "out of memory");
			goto out;
		}
		const struct pk_attr *a = &ab[i % AB];
		dlfs_put_le32(b, e->mode);
		dlfs_put_le32(b + 4, a->mtime_nsec);
		dlfs_put_le64(b + 8, (uint64_t)a->mtime_sec);
		dlfs_put_le64(b + 16, e->size);
		dlfs_put_le64(b + 24,
			      pk_file_xxh3(l, e, (uint64_t)(e - t->e), a));
		dlfs_put_le32(b + 32, (uint32_t)plen);
		XXH3_128bits_update(st, b, 36);
		XXH3_128bits_update(st, pb, plen + 1);
		if (S_ISLNK(e->mode))
			XXH3_128bits_update(st, pk_target(e), e->size);
	}
	XXH128_canonical_t c;
	XXH128_canonicalFromHash(&c, XXH3_128bits_digest(st));
	memcpy(id, c.digest, DLFS_ID_SIZE);
out:
	XXH3_freeState(st);
	free(ab);
	free(pb);
	return ret;
}

/* What this packer writes: format 1.1, every record bound to its path,
 * and compressed chunks when asked. */
uint64_t pk_features(const struct dlfs_pack_opts *o)
{
	return DLFS_FEATURE(PATH_BOUND) |
	       (o->in_place ? DLFS_FEATURE(IN_PLACE) : 0) |
	       (o->compress != DLFS_COMPRESS_NONE ? DLFS_FEATURE(COMPRESSED)
						  : 0);
}

/* Entries of one directory, given as ino - 1, by name (qsort_r). */
static int name_cmp(const void *a, const void *b, void *arg)
{
	const struct pk_entry *e = arg;
	size_t xl, yl;
	const char *xn = pk_entry_name(&e[*(const uint32_t *)a], &xl);
	const char *yn = pk_entry_name(&e[*(const uint32_t *)b], &yl);
	int c = memcmp(xn, yn, xl < yl ? xl : yl);
	if (c)
		return c;
	return xl < yl ? -1 : xl > yl;
}

/* ord[0..n) by name. A directory's entries often come in name order
 * already (an archive's, in archive order): that is checked in one pass
 * before qsort_r sorts them. Names in a directory differ, so the order
 * is total and the result the same. */
static void sort_names(uint32_t *ord, uint64_t n, const struct pk_entry *e)
{
	for (uint64_t j = 1; j < n; j++)
		if (name_cmp(&ord[j - 1], &ord[j], (void *)e) > 0) {
			qsort_r(ord, n, sizeof(*ord), name_cmp, (void *)e);
			return;
		}
}

/*
 * The index is written in transactions of about TXN_BYTES: LMDB keeps a
 * transaction's dirty pages in memory (up to 512 MiB before it spills
 * them), which one transaction for a 10M-file index would fill, and
 * keeps the pages of the largest for the next. They are the indexer's
 * largest cost after the tree: at 1M in-place members (an index of 84
 * MiB), peak RSS was 95 MiB with 32 MiB transactions, 78 MiB with 16
 * (the index 4 KiB larger); 8 and 4 saved under 2 MiB more for more CPU.
 * The commit points decide the index's bytes: a constant, the same for
 * every process and rank.
 */
#define TXN_BYTES (16u << 20)

/* The index being written: its environment, the open transaction and the
 * databases, which every step below fills in turn. */
struct writer {
	MDB_env *env;
	MDB_txn *t;
	uint64_t bytes; /* put in this transaction */
	const char *path; /* the index, for messages */
	uint64_t features; /* pk_features of the pack's options */
	MDB_dbi meta, inodes, symlinks, dirents, chunks, conts, arcs;
	/* A cursor per database in t, kept from put to put (LMDB closes
	 * them as t ends): mdb_put opens one each time, and an appending
	 * put then searches from the root for the last key, where a kept
	 * cursor already is. Indexed by dbi, below 2 + the 8 named. */
	MDB_cursor *cur[16];
};

/* An LMDB failure in step what, as an error that names the index.
 * @return the negative errno it maps to. */
static int mdb_fail(const struct writer *w, int rc, const char *what,
		    struct dlfs_err *err)
{
	return dlfs_err_set(err, dlfs_mdb_errno(rc), "%s: %s: %s", w->path,
			    what, mdb_strerror(rc));
}

static int put(struct writer *w, MDB_dbi dbi, void *k, size_t kl, void *v,
	       size_t vl, unsigned flags)
{
	MDB_val key = {kl, k}, val = {vl, v};
	int rc = dbi < 16 ? 0 : EINVAL;
	if (!rc && !w->cur[dbi])
		rc = mdb_cursor_open(w->t, dbi, &w->cur[dbi]);
	if (!rc)
		rc = mdb_cursor_put(w->cur[dbi], &key, &val, flags);
	w->bytes += kl + vl + 16;
	if (rc || w->bytes < TXN_BYTES)
		return rc;
	w->bytes = 0;
	memset(w->cur, 0, sizeof(w->cur)); /* the commit closes them */
	rc = mdb_txn_commit(w->t);
	w->t = NULL;
	return rc ? rc : mdb_txn_begin(w->env, NULL, 0, &w->t);
}

/* The map size: generous, and a pure function of the content, since
 * LMDB records it in the file. */
static uint64_t index_mapsize(const struct pk_tree *t,
			      const struct pk_layout *l, uint64_t n)
{
	uint64_t bytes = 0;
	for (uint64_t i = 0; i < n; i++)
		bytes += pk_entry_path_len(t, &t->e[i]);
	return dlfs_roundup((1 << 24) + n * 512 + bytes * 4 +
				    l->n_chunks * 128 + l->n_containers * 256,
			    1 << 20);
}

/* Create the environment at w->path, begin the first transaction and
 * create the databases. */
static int open_index(struct writer *w, uint64_t mapsize,
		      struct dlfs_err *err)
{
	int rc = mdb_env_create(&w->env);
	if (!rc)
		rc = mdb_env_set_maxdbs(w->env, 8);
	if (!rc)
		rc = mdb_env_set_mapsize(w->env, mapsize);
	if (!rc)
		rc = mdb_env_open(w->env, w->path,
				  MDB_NOSUBDIR | MDB_NOLOCK | MDB_NOSYNC |
					  MDB_NORDAHEAD,
				  0644);
	if (!rc)
		rc = mdb_txn_begin(w->env, NULL, 0, &w->t);
	if (!rc)
		rc = mdb_dbi_open(w->t, DLFS_DB_META, MDB_CREATE, &w->meta);
	if (!rc)
		rc = mdb_dbi_open(w->t, dlfs_inodes_db(w->features),
				  MDB_CREATE, &w->inodes);
	if (!rc)
		rc = mdb_dbi_open(w->t, DLFS_DB_SYMLINKS, MDB_CREATE,
				  &w->symlinks);
	if (!rc)
		rc = mdb_dbi_open(w->t, DLFS_DB_DIRENTS, MDB_CREATE,
				  &w->dirents);
	if (!rc)
		rc = mdb_dbi_open(w->t, DLFS_DB_CHUNKS, MDB_CREATE, &w->chunks);
	if (!rc)
		rc = mdb_dbi_open(w->t, DLFS_DB_CONTAINERS, MDB_CREATE,
				  &w->conts);
	if (!rc && (w->features & DLFS_FEATURE(IN_PLACE)))
		rc = mdb_dbi_open(w->t, DLFS_DB_ARCHIVES, MDB_CREATE,
				  &w->arcs);
	return rc ? mdb_fail(w, rc, "creating the index", err) : 0;
}

/* The superblock record, for the n entries of layout l. */
static size_t encode_super(const struct pk_layout *l,
			 const struct dlfs_pack_opts *o, const uint8_t *id,
			 uint64_t n, uint8_t sb[DLFS_SUPER_REC_SIZE])
{
	struct dlfs_super_rec s = {
		.format_major = DLFS_FORMAT_MAJOR,
		.format_minor = DLFS_FORMAT_MINOR,
		.chunk_size = o->chunk_size,
		.container_size = o->container_size,
		.align = o->align,
		.n_inodes = n,
		.n_dirs = l->n_dirs,
		.n_symlinks = l->n_symlinks,
		.n_files = l->n_files,
		.first_file_ino = 1 + l->n_dirs + l->n_symlinks,
		.n_containers = l->n_containers,
		.total_file_bytes = l->total_bytes,
		.max_mtime_sec = l->max_mtime,
		.features = pk_features(o),
	};
	memcpy(s.dataset_id, id, DLFS_ID_SIZE);
	return dlfs_super_encode(&s, sb);
}

/* The meta database: the creator, the file order and the superblock. */
static int write_meta(struct writer *w, const struct pk_layout *l,
		      const struct dlfs_pack_opts *o, const uint8_t *id,
		      uint64_t n, struct dlfs_err *err)
{
	uint8_t sb[DLFS_SUPER_REC_SIZE];
	size_t sl = encode_super(l, o, id, n, sb);
	static const char *orders[] = {"sorted", "input", "size", "shuffle"};
	char order[64];
	snprintf(order, sizeof(order), "%s",
		 o->in_place ? "archive" : orders[o->order]);
	if (o->order == DLFS_ORDER_SHUFFLE)
		snprintf(order, sizeof(order), "shuffle:%llu",
			 (unsigned long long)o->seed);
	const char *creator = o->creator ? o->creator : "libdlfs";
	int rc = put(w, w->meta, DLFS_META_CREATOR, strlen(DLFS_META_CREATOR),
		     (void *)creator, strlen(creator), 0);
	if (!rc)
		rc = put(w, w->meta, DLFS_META_ORDER, strlen(DLFS_META_ORDER),
			 order, strlen(order), 0);
	if (!rc && o->compress == DLFS_COMPRESS_ZSTD) {
		char comp[32];
		snprintf(comp, sizeof(comp), "zstd:%d", o->compress_level);
		rc = put(w, w->meta, DLFS_META_COMPRESS,
			 strlen(DLFS_META_COMPRESS), comp, strlen(comp), 0);
	}
	if (!rc)
		rc = put(w, w->meta, DLFS_META_SUPER, strlen(DLFS_META_SUPER),
			 sb, sl, 0);
	return rc ? mdb_fail(w, rc, "writing the superblock", err) : 0;
}

/* The inode records of all n entries, DLFS_INODES_PER_BLOCK a value
 * (the last block holds the rest); the attributes are read AB at a time
 * from the attribute file, which is in ino order by now. Each record but
 * the root's is bound to its one entry (hard links are entries of their
 * own, each with its record). */
static int write_inodes(struct writer *w, const struct pk_tree *t,
			const struct pk_layout *l, uint64_t n,
			struct dlfs_err *err)
{
	enum { AB = 1024 };
	const size_t rs = dlfs_inode_rec_size(w->features);
	uint8_t *vbuf = malloc(rs * DLFS_INODES_PER_BLOCK);
	struct pk_attr *ab = malloc(AB * sizeof(*ab));
	int rc = 0, ret = 0;
	if (!vbuf || !ab) {
		ret = dlfs_err_set(err, -ENOMEM, "out of memory");
		goto out;
	}
	for (uint64_t i = 0; i < n && !rc; i++) {
		const struct pk_entry *e = &t->e[i];
		uint64_t slot = i % DLFS_INODES_PER_BLOCK;
		if (!(i % AB) &&
		    (ret = pk_attr_read(t, i, n - i < AB ? n - i : AB, ab, err)))
			goto out;
		struct dlfs_inode_rec r = {
			.mode = e->mode,
			.mtime_nsec = ab[i % AB].mtime_nsec,
			.mtime_sec = ab[i % AB].mtime_sec,
			.size = e->size,
		};
		if (S_ISREG(e->mode)) {
			r.loc = pk_file_loc(l, e, i, &ab[i % AB]);
			r.xxh3 = pk_file_xxh3(l, e, i, &ab[i % AB]);
		}
		if (i) { /* parents are ino - 1, as in write_dirents */
			size_t nl;
			const char *nm = pk_entry_name(e, &nl);
			r.path_hash = dlfs_path_hash((uint64_t)e->parent + 1,
						     nm, nl);
		}
		dlfs_inode_encode(&r, w->features, vbuf + slot * rs);
		if (slot + 1 == DLFS_INODES_PER_BLOCK || i + 1 == n) {
			uint8_t kb[8];
			dlfs_put_be64(kb, i / DLFS_INODES_PER_BLOCK);
			rc = put(w, w->inodes, kb, 8, vbuf,
				 (slot + 1) * rs, MDB_APPEND);
		}
	}
	if (rc)
		ret = mdb_fail(w, rc, "writing inodes", err);
out:
	free(vbuf);
	free(ab);
	return ret;
}

/* Each symlink's target, keyed by its ino. */
static int write_symlinks(struct writer *w, const struct pk_tree *t,
			  const struct pk_layout *l, struct dlfs_err *err)
{
	int rc = 0;
	for (uint64_t i = l->n_dirs; i < l->n_dirs + l->n_symlinks && !rc;
	     i++) {
		const struct pk_entry *e = &t->e[i];
		uint8_t kb[8];
		dlfs_put_be64(kb, e->ino);
		rc = put(w, w->symlinks, kb, 8, (void *)pk_target(e), e->size,
			 MDB_APPEND);
	}
	return rc ? mdb_fail(w, rc, "writing symlink targets", err) : 0;
}

/*
 * The directory entries in key order (parent inode, then name): entries
 * bucketed by parent in one counting pass, then each directory's sorted
 * by name. 4 bytes an entry, where sorting pairs took 16; hence at most
 * UINT32_MAX entries.
 */
static int write_dirents(struct writer *w, const struct pk_tree *t,
			 const struct pk_layout *l, uint64_t n,
			 struct dlfs_err *err)
{
	if (n > UINT32_MAX)
		return dlfs_err_set(err, -EFBIG, "more than %u entries",
				    UINT32_MAX);
	uint64_t nd = l->n_dirs;
	uint32_t *at = calloc(nd + 1, sizeof(*at));
	uint32_t *ord = malloc((n ? n : 1) * sizeof(*ord));
	int rc = 0;
	if (!at || !ord) {
		free(at);
		free(ord);
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	}
	/* Parents are 0 .. nd - 1 (ino - 1): d below is the parent's ino. */
	for (uint64_t i = 1; i < n; i++)
		at[t->e[i].parent + 1]++;
	for (uint64_t d = 1; d <= nd; d++)
		at[d] += at[d - 1]; /* at[d]: the end of d's entries */
	for (uint64_t i = n; i-- > 1;)
		ord[--at[t->e[i].parent + 1]] = (uint32_t)i;
	/* at[d] is now where d's entries start; they end at at[d + 1]. */
	for (uint64_t d = 1; d <= nd && !rc; d++) {
		uint64_t end = d < nd ? at[d + 1] : n - 1;
		sort_names(ord + at[d], end - at[d], t->e);
		for (uint64_t j = at[d]; j < end && !rc; j++) {
			const struct pk_entry *e = &t->e[ord[j]];
			size_t nl;
			const char *nm = pk_entry_name(e, &nl);
			uint8_t kb[8 + DLFS_NAME_MAX], vb[8];
			dlfs_put_be64(kb, d);
			memcpy(kb + 8, nm, nl);
			dlfs_put_le64(vb, e->ino | ((uint64_t)(e->mode >> 12)
						    << DLFS_DIRENT_TYPE_SHIFT));
			rc = put(w, w->dirents, kb, 8 + nl, vb, 8, MDB_APPEND);
		}
	}
	free(at);
	free(ord);
	return rc ? mdb_fail(w, rc, "writing directory entries", err) : 0;
}

/* An in-place dataset's archive record, key kb. @return an LMDB code. */
static int put_archive(struct writer *w, const struct pk_ip_archive *a,
		       uint8_t kb[4])
{
	size_t pl = strlen(a->path);
	uint8_t vb[DLFS_ARCHIVE_REC_SIZE + DLFS_ARCHIVE_PATH_MAX];
	if (pl > DLFS_ARCHIVE_PATH_MAX)
		return EINVAL;
	struct dlfs_archive_rec r = {
		.size = a->size,
		.mtime_sec = a->mtime_sec,
		.mtime_nsec = a->mtime_nsec,
		.kind = a->kind,
		.path_len = (uint32_t)pl,
	};
	dlfs_archive_rec_encode(&r, vb);
	memcpy(vb + DLFS_ARCHIVE_REC_SIZE, a->path, pl);
	return put(w, w->arcs, kb, 4, vb, DLFS_ARCHIVE_REC_SIZE + pl,
		   MDB_APPEND);
}

/* Container c's chunk checksums, then its own record. The two databases
 * are filled in this interleaved order because where the transactions
 * commit, and so the file's bytes, depends on it. @return an LMDB code. */
static int put_container(struct writer *w, const struct pk_layout *l,
			 const struct dlfs_pack_opts *o,
			 const struct pk_chunks *ch,
			 const struct pk_containers *ct, uint64_t c)
{
	uint64_t nc = (l->data_size[c] + o->chunk_size - 1) / o->chunk_size;
	int rc = 0;
	for (uint64_t k = 0; k < nc && !rc; k++) {
		uint64_t g = l->first_chunk[c] + k;
		struct dlfs_chunk_rec r = {
			.xxh3 = ch->xxh3[g],
			.length = ch->length[g],
			.stored_length = ch->stored_length[g],
			.stored_offset = ch->stored_offset[g],
			.flags = ch->flags[g],
			.sum = ch->sum[g],
		};
		uint8_t kb[8], vb[DLFS_CHUNK_REC_SIZE];
		dlfs_put_be32(kb, (uint32_t)c);
		dlfs_put_be32(kb + 4, (uint32_t)k);
		dlfs_chunk_encode(&r, pk_features(o), vb);
		rc = put(w, w->chunks, kb, 8, vb,
			 dlfs_chunk_rec_size(pk_features(o)), MDB_APPEND);
	}
	if (rc)
		return rc;
	struct dlfs_container_rec cr = {
		.file_size = ct->file_size[c],
		.data_size = l->data_size[c],
		.n_chunks = nc,
		.n_files = l->n_cfiles[c],
		.first_ino = l->first_file[c] + 1,
		.footer_xxh3 = ct->footer_xxh3[c],
	};
	uint8_t kb[4], vb[DLFS_CONTAINER_REC_SIZE];
	dlfs_put_be32(kb, (uint32_t)c);
	dlfs_container_rec_encode(&cr, vb);
	rc = put(w, w->conts, kb, 4, vb, sizeof(vb), MDB_APPEND);
	return rc || !ct->arc ? rc : put_archive(w, &ct->arc[c], kb);
}

/* Every container's chunk checksums and record. */
static int write_containers(struct writer *w, const struct pk_layout *l,
			    const struct dlfs_pack_opts *o,
			    const struct pk_chunks *ch,
			    const struct pk_containers *ct,
			    struct dlfs_err *err)
{
	int rc = 0;
	for (uint64_t c = 0; c < l->n_containers && !rc; c++)
		rc = put_container(w, l, o, ch, ct, c);
	return rc ? mdb_fail(w, rc, "writing chunk checksums", err) : 0;
}

/* Commit the last transaction and sync the file once, at the end, since
 * the environment is opened with MDB_NOSYNC. */
static int commit_index(struct writer *w, struct dlfs_err *err)
{
	int rc = mdb_txn_commit(w->t);
	w->t = NULL;
	if (!rc)
		rc = mdb_env_sync(w->env, 1);
	return rc ? mdb_fail(w, rc, "committing the index", err) : 0;
}

int pk_index_write(const char *path, const struct pk_tree *t,
		   const struct pk_layout *l,
		   const struct dlfs_pack_opts *o, const uint8_t *id,
		   const struct pk_chunks *ch, const struct pk_containers *ct,
		   struct dlfs_err *err)
{
	struct writer w = {.path = path, .features = pk_features(o)};
	uint64_t n = l->n_dirs + l->n_symlinks + l->n_files;
	int ret = open_index(&w, index_mapsize(t, l, n), err);
	if (!ret)
		ret = write_meta(&w, l, o, id, n, err);
	if (!ret)
		ret = write_inodes(&w, t, l, n, err);
	if (!ret)
		ret = write_symlinks(&w, t, l, err);
	if (!ret)
		ret = write_dirents(&w, t, l, n, err);
	if (!ret)
		ret = write_containers(&w, l, o, ch, ct, err);
	if (!ret)
		ret = commit_index(&w, err);
	if (w.t)
		mdb_txn_abort(w.t);
	if (w.env)
		mdb_env_close(w.env);
	return ret;
}
