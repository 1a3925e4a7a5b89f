/* Opening a dataset and its containers: see include/dlfs/dataset.h. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ds_priv.h"
#include "util.h"

#include <xxhash.h>

int dlfs_mdb_errno(int rc)
{
	switch (rc) {
	case MDB_SUCCESS:
		return 0;
	case MDB_NOTFOUND:
		return -ENOENT;
	case MDB_MAP_FULL:
		return -ENOSPC;
	case MDB_CORRUPTED:
	case MDB_PAGE_NOTFOUND:
	case MDB_INVALID:
	case MDB_VERSION_MISMATCH:
	case MDB_BAD_VALSIZE:
	case MDB_INCOMPATIBLE:
		return -DLFS_ECORRUPT;
	default:
		return rc > 0 ? -rc : -EIO;
	}
}

static int meta_string(MDB_txn *t, MDB_dbi dbi, const char *key, char *out,
		       size_t outlen)
{
	MDB_val k = {strlen(key), (void *)key}, v;
	int rc = mdb_get(t, dbi, &k, &v);
	if (rc) {
		out[0] = '\0';
		return rc == MDB_NOTFOUND ? 0 : dlfs_mdb_errno(rc);
	}
	size_t n = v.mv_size < outlen - 1 ? v.mv_size : outlen - 1;
	memcpy(out, v.mv_data, n);
	out[n] = '\0';
	return 0;
}

static int open_dbis(struct dlfs_ds *ds, const char *ipath,
		     struct dlfs_err *err)
{
	MDB_txn *t = NULL;
	int rc = mdb_txn_begin(ds->env, NULL, MDB_RDONLY, &t);
	if (rc)
		return dlfs_err_set(err, dlfs_mdb_errno(rc), "%s: %s", ipath,
				    mdb_strerror(rc));
	struct {
		const char *name;
		MDB_dbi *dbi;
	} dbs[] = {
		{DLFS_DB_META, &ds->dbi_meta},
		{DLFS_DB_INODES, &ds->dbi_inodes},
		{DLFS_DB_SYMLINKS, &ds->dbi_symlinks},
		{DLFS_DB_DIRENTS, &ds->dbi_dirents},
		{DLFS_DB_CHUNKS, &ds->dbi_chunks},
		{DLFS_DB_CONTAINERS, &ds->dbi_containers},
	};
	int ret = 0;
	for (size_t i = 0; i < sizeof(dbs) / sizeof(dbs[0]); i++) {
		rc = mdb_dbi_open(t, dbs[i].name, 0, dbs[i].dbi);
		if (rc) {
			ret = dlfs_err_set(err, -DLFS_ECORRUPT,
					   "%s: not a dlfs index (database "
					   "'%s': %s)",
					   ipath, dbs[i].name,
					   mdb_strerror(rc));
			goto out_txn;
		}
	}

	MDB_val k = {strlen(DLFS_META_SUPER), DLFS_META_SUPER}, v;
	rc = mdb_get(t, ds->dbi_meta, &k, &v);
	if (rc || v.mv_size < 8) {
		ret = dlfs_err_set(err, -DLFS_ECORRUPT,
				   "%s: not a dlfs index (no superblock)",
				   ipath);
		goto out_txn;
	}
	uint32_t major = dlfs_get_le32(v.mv_data);
	uint32_t minor = dlfs_get_le32((uint8_t *)v.mv_data + 4);
	if (major != DLFS_FORMAT_MAJOR) {
		ret = dlfs_err_set(err, -EPROTONOSUPPORT,
				   "%s: unsupported format version %u.%u "
				   "(this dlfs reads version %u)",
				   ipath, major, minor, DLFS_FORMAT_MAJOR);
		goto out_txn;
	}
	if (v.mv_size < DLFS_SUPER_REC_SIZE) {
		ret = dlfs_err_set(err, -DLFS_ECORRUPT,
				   "%s: superblock is %zu bytes, expected %d",
				   ipath, v.mv_size, DLFS_SUPER_REC_SIZE);
		goto out_txn;
	}
	struct dlfs_super_rec *s = &ds->info.super;
	dlfs_super_decode(v.mv_data, s);
	if (s->n_inodes < 1 || s->n_dirs < 1 ||
	    s->first_file_ino != 1 + s->n_dirs + s->n_symlinks ||
	    s->n_inodes != s->n_dirs + s->n_symlinks + s->n_files ||
	    s->chunk_size < 4096 || s->chunk_size % 4096 ||
	    s->n_containers > DLFS_MAX_CONTAINERS) {
		ret = dlfs_err_set(err, -DLFS_ECORRUPT,
				   "%s: superblock is inconsistent", ipath);
		goto out_txn;
	}
	dlfs_hex(s->dataset_id, DLFS_ID_SIZE, ds->info.dataset_id_hex);
	ret = meta_string(t, ds->dbi_meta, DLFS_META_CREATOR,
			  ds->info.creator, sizeof(ds->info.creator));
	if (!ret)
		ret = meta_string(t, ds->dbi_meta, DLFS_META_ORDER,
				  ds->info.order, sizeof(ds->info.order));
	if (ret) {
		dlfs_err_set(err, ret, "%s: cannot read metadata", ipath);
		goto out_txn;
	}
	/* Committing (not aborting) keeps the database handles open. */
	rc = mdb_txn_commit(t);
	if (rc)
		return dlfs_err_set(err, dlfs_mdb_errno(rc), "%s: %s", ipath,
				    mdb_strerror(rc));
	return 0;
out_txn:
	mdb_txn_abort(t);
	return ret;
}

int dlfs_ds_open(const char *path, struct dlfs_ds **out, struct dlfs_err *err)
{
	int ret, rc;
	struct stat st;
	char *ipath = NULL;
	struct dlfs_ds *ds = NULL;

	if (stat(path, &st) < 0)
		return dlfs_err_sys(err, -errno, "%s", path);
	if (!S_ISDIR(st.st_mode))
		return dlfs_err_set(err, -ENOTDIR,
				    "%s: not a dlfs dataset (not a directory)",
				    path);
	ds = calloc(1, sizeof(*ds));
	if (!ds || !(ds->path = strdup(path)) ||
	    asprintf(&ipath, "%s/%s", path, DLFS_INDEX_NAME) < 0) {
		ipath = NULL;
		ret = dlfs_err_set(err, -ENOMEM, "%s: out of memory", path);
		goto fail;
	}
	if (stat(ipath, &st) < 0) {
		ret = dlfs_err_sys(err, -errno, "%s: not a dlfs dataset: %s",
				   path, ipath);
		goto fail;
	}
	ds->info.index_bytes = (uint64_t)st.st_size;
	rc = mdb_env_create(&ds->env);
	if (!rc)
		rc = mdb_env_set_maxdbs(ds->env, 8);
	if (!rc)
		rc = mdb_env_open(ds->env, ipath,
				  MDB_RDONLY | MDB_NOLOCK | MDB_NORDAHEAD |
					  MDB_NOSUBDIR | MDB_NOTLS,
				  0);
	if (rc) {
		ret = dlfs_err_set(err, dlfs_mdb_errno(rc),
				   "%s: cannot open index: %s", ipath,
				   mdb_strerror(rc));
		if (rc == MDB_INVALID || rc == MDB_VERSION_MISMATCH)
			dlfs_err_prefix(err, "not a dlfs dataset");
		goto fail;
	}
	/*
	 * A truncated index would map pages past the end of the file and
	 * fault on first touch: refuse it while that is one comparison.
	 */
	MDB_envinfo ei;
	MDB_stat es;
	if (!mdb_env_info(ds->env, &ei) && !mdb_env_stat(ds->env, &es) &&
	    (uint64_t)st.st_size < ((uint64_t)ei.me_last_pgno + 1) * es.ms_psize) {
		ret = dlfs_err_set(err, -DLFS_ECORRUPT,
				   "%s: index is truncated: %llu bytes, its "
				   "pages need %llu",
				   ipath, (unsigned long long)st.st_size,
				   ((unsigned long long)ei.me_last_pgno + 1) *
					   es.ms_psize);
		goto fail;
	}
	ret = open_dbis(ds, ipath, err);
	if (ret)
		goto fail;
	ds->containers = calloc(ds->info.super.n_containers + 1,
				sizeof(*ds->containers));
	if (!ds->containers) {
		ret = dlfs_err_set(err, -ENOMEM, "%s: out of memory", path);
		goto fail;
	}
	pthread_mutex_init(&ds->open_lock, NULL);
	pthread_mutex_init(&ds->rd_lock, NULL);
	free(ipath);
	*out = ds;
	return 0;
fail:
	free(ipath);
	if (ds) {
		if (ds->env)
			mdb_env_close(ds->env);
		free(ds->path);
		free(ds);
	}
	return ret;
}

void dlfs_ds_close(struct dlfs_ds *ds)
{
	if (!ds)
		return;
	for (uint64_t i = 0; i < ds->info.super.n_containers; i++) {
		struct dlfs_container_slot *s = &ds->containers[i];
		if (atomic_load(&s->state) == 1) {
			close(s->fd);
			if (s->dfd >= 0)
				close(s->dfd);
		}
		free(s->msg);
	}
	free(ds->containers);
	pthread_mutex_destroy(&ds->open_lock);
	pthread_mutex_destroy(&ds->rd_lock);
	mdb_env_close(ds->env);
	free(ds->path);
	free(ds);
}

const struct dlfs_info *dlfs_ds_info(const struct dlfs_ds *ds)
{
	return &ds->info;
}

const char *dlfs_ds_path(const struct dlfs_ds *ds)
{
	return ds->path;
}

/* Check container c's header and footer against the index. */
static int container_validate(struct dlfs_ds *ds, uint32_t c, int fd,
			      const char *cpath, struct dlfs_err *err)
{
	struct dlfs_container_rec rec;
	struct dlfs_txn *txn;
	int ret = dlfs_txn_begin(ds, &txn, err);
	if (ret)
		return ret;
	ret = dlfs_container_get(txn, c, &rec, err);
	dlfs_txn_end(txn);
	if (ret)
		return ret;

	uint8_t hb[DLFS_CONTAINER_HEADER_REC_SIZE];
	ssize_t n = dlfs_pread_full(fd, hb, sizeof(hb), 0);
	if (n < 0)
		return dlfs_err_sys(err, (int)n, "%s: reading header", cpath);
	if ((size_t)n < sizeof(hb))
		return dlfs_err_set(err, -DLFS_ECORRUPT,
				    "%s: truncated header", cpath);
	struct dlfs_container_header h;
	dlfs_header_decode(hb, &h);
	if (memcmp(h.magic, DLFS_CONTAINER_MAGIC, 8))
		return dlfs_err_set(err, -DLFS_ECORRUPT,
				    "%s: not a dlfs container (bad magic)",
				    cpath);
	if (h.format_major != DLFS_FORMAT_MAJOR)
		return dlfs_err_set(err, -EPROTONOSUPPORT,
				    "%s: unsupported format version %u.%u",
				    cpath, h.format_major, h.format_minor);
	uint8_t check[DLFS_CONTAINER_HEADER_REC_SIZE];
	struct dlfs_container_header h2 = h;
	dlfs_header_encode(&h2, check);
	if (h2.header_xxh3 != h.header_xxh3)
		return dlfs_err_set(err, -DLFS_ECORRUPT,
				    "%s: header checksum mismatch", cpath);
	if (memcmp(h.dataset_id, ds->info.super.dataset_id, DLFS_ID_SIZE)) {
		char hex[2 * DLFS_ID_SIZE + 1];
		dlfs_hex(h.dataset_id, DLFS_ID_SIZE, hex);
		return dlfs_err_set(err, -DLFS_ECORRUPT,
				    "%s: dataset id %s does not match the "
				    "index's %s (container from another "
				    "dataset?)",
				    cpath, hex, ds->info.dataset_id_hex);
	}
	if (h.container != c || h.chunk_size != ds->info.super.chunk_size ||
	    h.data_offset != DLFS_DATA_OFFSET(h.chunk_size) ||
	    h.data_size != rec.data_size)
		return dlfs_err_set(err, -DLFS_ECORRUPT,
				    "%s: header disagrees with the index "
				    "(container %u, chunk size %llu)",
				    cpath, h.container,
				    (unsigned long long)h.chunk_size);

	/* Size after identity: a foreign container says so first. */
	struct stat st;
	if (fstat(fd, &st) < 0)
		return dlfs_err_sys(err, -errno, "%s", cpath);
	if ((uint64_t)st.st_size != rec.file_size)
		return dlfs_err_set(err, -DLFS_ECORRUPT,
				    "%s: container is %s: %lld bytes, the "
				    "index says %llu",
				    cpath,
				    (uint64_t)st.st_size < rec.file_size
					    ? "truncated"
					    : "the wrong size",
				    (long long)st.st_size,
				    (unsigned long long)rec.file_size);

	uint8_t fb[DLFS_FOOTER_SIZE];
	n = dlfs_pread_full(fd, fb, sizeof(fb), rec.file_size - sizeof(fb));
	if (n < 0)
		return dlfs_err_sys(err, (int)n, "%s: reading footer", cpath);
	struct dlfs_container_footer f;
	dlfs_footer_decode(fb, &f);
	if ((size_t)n < sizeof(fb) || memcmp(f.magic, DLFS_FOOTER_MAGIC, 8) ||
	    f.footer_xxh3 != rec.footer_xxh3)
		return dlfs_err_set(err, -DLFS_ECORRUPT,
				    "%s: footer is damaged", cpath);
	return 0;
}

void dlfs_ds_set_chunk_io(struct dlfs_ds *ds, enum dlfs_chunk_io io)
{
	ds->chunk_io = io;
}

/* The fd chunk reads use, per dlfs_ds_set_chunk_io; -1 = the plain one. */
static void open_chunk_fd(struct dlfs_ds *ds, struct dlfs_container_slot *s,
			  const char *cpath)
{
	s->dfd = -1;
	s->dfd_direct = 0;
	if (ds->chunk_io == DLFS_CHUNK_IO_DIRECT) {
		s->dfd = open(cpath, O_RDONLY | O_CLOEXEC | O_DIRECT);
		s->dfd_direct = s->dfd >= 0;
	}
	if (s->dfd < 0 && ds->chunk_io != DLFS_CHUNK_IO_PLAIN) {
		/* No read-ahead past the chunk: it would be read for nothing
		 * and dropped. */
		s->dfd = open(cpath, O_RDONLY | O_CLOEXEC);
		if (s->dfd >= 0)
			posix_fadvise(s->dfd, 0, 0, POSIX_FADV_RANDOM);
	}
}

int dlfs_ds_container_fd(struct dlfs_ds *ds, uint32_t c, int *fd,
			 struct dlfs_err *err)
{
	char name[DLFS_CONTAINER_NAME_MAX];
	if (c >= ds->info.super.n_containers)
		return dlfs_err_set(err, -DLFS_ECORRUPT,
				    "%s: container %u out of range", ds->path,
				    c);
	struct dlfs_container_slot *s = &ds->containers[c];
	int state = atomic_load_explicit(&s->state, memory_order_acquire);
	if (state == 1) {
		*fd = s->fd;
		return 0;
	}
	int ret = 0;
	pthread_mutex_lock(&ds->open_lock);
	state = atomic_load_explicit(&s->state, memory_order_relaxed);
	if (state == 0) {
		char *cpath = NULL;
		struct dlfs_err e = {0};
		dlfs_container_name(c, name);
		if (asprintf(&cpath, "%s/%s", ds->path, name) < 0) {
			ret = dlfs_err_set(err, -ENOMEM, "out of memory");
			goto unlock; /* not remembered: may work later */
		}
		int f = open(cpath, O_RDONLY | O_CLOEXEC);
		if (f < 0) {
			ret = dlfs_err_sys(&e, -errno, "%s", cpath);
		} else {
			ret = container_validate(ds, c, f, cpath, &e);
			if (ret) {
				close(f);
			} else {
				s->fd = f;
				open_chunk_fd(ds, s, cpath);
			}
		}
		free(cpath);
		if (ret)
			s->msg = strdup(e.msg);
		atomic_store_explicit(&s->state, ret ? ret : 1,
				      memory_order_release);
		state = ret ? ret : 1;
	}
	if (state == 1)
		*fd = s->fd;
	else
		ret = dlfs_err_set(err, state, "%s",
				   s->msg ? s->msg : "container unusable");
unlock:
	pthread_mutex_unlock(&ds->open_lock);
	return ret;
}

int dlfs_ds_pread(struct dlfs_ds *ds, uint32_t c, void *buf, size_t len,
		  uint64_t off, struct dlfs_err *err)
{
	int fd;
	int ret = dlfs_ds_container_fd(ds, c, &fd, err);
	if (ret)
		return ret;
	ssize_t n = dlfs_pread_full(fd, buf, len, off);
	if (n < 0) {
		char name[DLFS_CONTAINER_NAME_MAX];
		dlfs_container_name(c, name);
		return dlfs_err_sys(err, (int)n, "%s/%s: read at offset %llu",
				    ds->path, name, (unsigned long long)off);
	}
	if ((size_t)n < len) {
		char name[DLFS_CONTAINER_NAME_MAX];
		dlfs_container_name(c, name);
		return dlfs_err_set(err, -DLFS_ECORRUPT,
				    "%s/%s: truncated: short read at offset "
				    "%llu",
				    ds->path, name, (unsigned long long)off);
	}
	return 0;
}

int dlfs_file_pread(struct dlfs_ds *ds, const struct dlfs_inode *in,
		    void *buf, size_t len, uint64_t off, size_t *got,
		    struct dlfs_err *err)
{
	*got = 0;
	if (S_ISDIR(in->mode))
		return dlfs_err_set(err, -EISDIR, "inode %llu is a directory",
				    (unsigned long long)in->ino);
	if (!S_ISREG(in->mode))
		return dlfs_err_set(err, -EINVAL,
				    "inode %llu is not a regular file",
				    (unsigned long long)in->ino);
	if (off >= in->size || len == 0)
		return 0;
	if (len > in->size - off)
		len = (size_t)(in->size - off);
	int ret = dlfs_ds_pread(ds, in->container, buf, len, in->offset + off,
				err);
	if (ret)
		return ret;
	*got = len;
	return 0;
}

int dlfs_chunk_read(struct dlfs_ds *ds, struct dlfs_txn *txn, uint32_t c,
		    uint64_t k, void *buf, size_t cap, size_t *len,
		    struct dlfs_err *err)
{
	struct dlfs_chunk_rec cr;
	int fd;
	int ret = dlfs_chunk_get(txn, c, k, &cr, err);
	if (ret)
		return ret;
	if (cr.length > cap)
		return dlfs_err_set(err, -DLFS_ECORRUPT,
				    "%s/index: chunk %llu of container %u is "
				    "%u bytes, larger than the chunk size",
				    ds->path, (unsigned long long)k, c,
				    cr.length);
	ret = dlfs_ds_container_fd(ds, c, &fd, err);
	if (ret)
		return ret;
	uint64_t cs = ds->info.super.chunk_size;
	uint64_t off = DLFS_DATA_OFFSET(cs) + k * cs;
	/* The data region is padded to 4 KiB: read whole pages. */
	size_t want = (size_t)dlfs_roundup(cr.length, 4096);
	if (want > cap)
		want = cr.length;
	char name[DLFS_CONTAINER_NAME_MAX];
	const struct dlfs_container_slot *slot = &ds->containers[c];
	int direct = slot->dfd_direct && want % 4096 == 0 &&
		     (uintptr_t)buf % 4096 == 0;
	if (slot->dfd >= 0 && (direct || !slot->dfd_direct))
		fd = slot->dfd;
	ssize_t n = dlfs_pread_full(fd, buf, want, off);
	if (n < 0) {
		dlfs_container_name(c, name);
		return dlfs_err_sys(err, (int)n, "%s/%s: read at offset %llu",
				    ds->path, name, (unsigned long long)off);
	}
	if ((size_t)n < cr.length) {
		dlfs_container_name(c, name);
		return dlfs_err_set(err, -DLFS_ECORRUPT,
				    "%s/%s: truncated: short read at offset "
				    "%llu",
				    ds->path, name, (unsigned long long)off);
	}
	if (!direct)
		posix_fadvise(fd, (off_t)off, (off_t)want,
			      POSIX_FADV_DONTNEED);
	if (XXH3_64bits(buf, cr.length) != cr.xxh3) {
		dlfs_container_name(c, name);
		*len = cr.length; /* the bytes are there, just not to trust */
		return dlfs_err_set(err, -DLFS_ECHECKSUM,
				    "%s/%s: chunk %llu at offset %llu: checksum "
				    "mismatch",
				    ds->path, name, (unsigned long long)k,
				    (unsigned long long)off);
	}
	*len = cr.length;
	return 0;
}
