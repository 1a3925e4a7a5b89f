/*
 * Classifying sources (ingest.h): each source's kind, from what it is
 * and the options, and the directory an ingest source becomes.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dlfs/format.h"
#include "ingest_priv.h"
#include "util.h"

int pk_hdf5_signature(int fd, uint64_t size)
{
	/* At 0, or after a user block: 512, 1024, 2048, ... bytes. */
	for (uint64_t at = 0; at + 8 <= size; at = at ? at * 2 : 512) {
		unsigned char b[8];
		if (dlfs_pread_full(fd, b, 8, at) != 8)
			return 0;
		if (!memcmp(b, "\x89HDF\r\n\x1a\n", 8))
			return 1;
	}
	return 0;
}

static int has_lmdb_magic(int fd)
{
	/* The first meta page: a 16-byte page header, then the magic. */
	unsigned char b[20];
	return dlfs_pread_full(fd, b, 20, 0) == 20 &&
	       dlfs_get_le32(b + 16) == 0xBEEFC0DE;
}

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);
	return n > k && !strcmp(s + n - k, suffix);
}

static const char *const h5_ext[] = {".h5", ".hdf5", ".hdf", ".he5", ".nc",
				     ".nc4", NULL};
static const char *const lmdb_ext[] = {".lmdb", ".mdb", NULL};

int pk_hdf5_name(const char *name)
{
	for (const char *const *e = h5_ext; *e; e++)
		if (ends_with(name, *e))
			return 1;
	return 0;
}

/* The last component of path, without trailing slashes, malloc'd. */
static char *base_name(const char *path)
{
	size_t n = strlen(path);
	while (n > 1 && path[n - 1] == '/')
		n--;
	const char *b = path + n;
	while (b > path && b[-1] != '/')
		b--;
	char *s = strndup(b, (size_t)(path + n - b));
	if (s && (!strcmp(s, ".") || !strcmp(s, ".."))) {
		char *r = realpath(path, NULL);
		free(s);
		s = r ? base_name(r) : NULL;
		free(r);
	}
	return s;
}

static int make_top(struct pk_source *s, struct dlfs_err *err)
{
	int lmdb = s->kind != PK_SRC_HDF5;
	char *b = base_name(s->path);
	if (b && lmdb && s->kind == PK_SRC_LMDB_FILE && !strcmp(b, "data.mdb")) {
		/* env/data.mdb given as a file: name it after env. */
		char *dir = strdup(s->path);
		char *slash = dir ? strrchr(dir, '/') : NULL;
		free(b);
		b = NULL;
		if (dir) {
			if (slash)
				*slash = '\0';
			b = base_name(slash ? (*dir ? dir : "/") : ".");
		}
		free(dir);
	}
	if (!b)
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	for (const char *const *e = lmdb ? lmdb_ext : h5_ext; *e; e++)
		if (ends_with(b, *e)) {
			b[strlen(b) - strlen(*e)] = '\0';
			break;
		}
	if (!b[0] || !strcmp(b, ".") || !strcmp(b, "..") ||
	    !strcmp(b, ".dlfs") || strlen(b) > DLFS_NAME_MAX) {
		int ret = dlfs_err_set(err, -EINVAL,
				       "%s: its name gives no usable directory "
				       "name ('%s') for its %s",
				       s->path, b, lmdb ? "keys" : "samples");
		free(b);
		return ret;
	}
	s->top = b;
	return 0;
}

/* A directory: with split_lmdb, an LMDB environment if it holds a
 * data.mdb; otherwise a directory source. */
static int classify_dir(struct pk_source *s, const struct dlfs_pack_opts *o,
			struct dlfs_err *err)
{
	char *db = NULL;
	struct stat ds;
	s->kind = PK_SRC_DIR;
	if (!o->split_lmdb)
		return 0;
	if (asprintf(&db, "%s/data.mdb", s->path) < 0)
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	if (stat(db, &ds) == 0 && S_ISREG(ds.st_mode)) {
		s->kind = PK_SRC_LMDB;
		s->size = (uint64_t)ds.st_size;
	}
	free(db);
	return 0;
}

/* With the option that splits them, a file named like an HDF5 file
 * (but .nc, which netCDF-3 files are named too) or an LMDB environment
 * and not one is refused, not read as an archive. */
static int check_misnamed(const struct pk_source *s,
			  const struct dlfs_pack_opts *o, struct dlfs_err *err)
{
	int ret = 0;
	for (const char *const *e = h5_ext; o->split_hdf5 && *e; e++)
		if (ends_with(s->path, *e) && strcmp(*e, ".nc"))
			ret = dlfs_err_set(err, -EINVAL,
					   "%s: not an HDF5 file (no HDF5 "
					   "signature)",
					   s->path);
	for (const char *const *e = lmdb_ext; o->split_lmdb && *e; e++)
		if (ends_with(s->path, *e))
			ret = dlfs_err_set(err, -EINVAL,
					   "%s: not an LMDB environment (no "
					   "LMDB magic number)",
					   s->path);
	return ret;
}

/* A file (st): an HDF5 or LMDB source with its option, refused without
 * it; otherwise an archive. */
static int classify_file(struct pk_source *s, const struct stat *st,
			 const struct dlfs_pack_opts *o, struct dlfs_err *err)
{
	int ret = 0;
	int fd = open(s->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return dlfs_err_sys(err, -errno, "%s", s->path);
	int h5 = pk_hdf5_signature(fd, (uint64_t)st->st_size);
	int mdb = !h5 && has_lmdb_magic(fd);
	s->size = (uint64_t)st->st_size;
	s->kind = PK_SRC_ARCHIVE;
	if (h5 && o->split_hdf5)
		s->kind = PK_SRC_HDF5;
	else if (mdb && o->split_lmdb)
		s->kind = PK_SRC_LMDB_FILE;
	else if (h5 || mdb)
		ret = dlfs_err_set(err, -EINVAL,
				   "%s: an %s; give --%s to %s, or give the "
				   "directory holding it to pack it as one "
				   "file",
				   s->path, h5 ? "HDF5 file" : "LMDB file",
				   h5 ? "split-hdf5" : "split-lmdb",
				   h5 ? "split it into samples"
				      : "pack one file per key");
	else
		ret = check_misnamed(s, o, err);
	close(fd);
	return ret;
}

static int classify_one(struct pk_source *s, const struct dlfs_pack_opts *o,
			struct dlfs_err *err)
{
	struct stat st;
	int ret;
	if (stat(s->path, &st) < 0)
		return dlfs_err_sys(err, -errno, "%s", s->path);
	if (S_ISDIR(st.st_mode))
		ret = classify_dir(s, o, err);
	else if (S_ISREG(st.st_mode))
		ret = classify_file(s, &st, o, err);
	else
		return dlfs_err_set(err, -EINVAL,
				    "%s: not a directory or an archive",
				    s->path);
	if (!ret && s->kind != PK_SRC_DIR && s->kind != PK_SRC_ARCHIVE)
		ret = make_top(s, err);
	return ret;
}

int pk_classify(struct pk_source *src, unsigned n,
		const struct dlfs_pack_opts *o, struct dlfs_err *err)
{
	for (unsigned i = 0; i < n; i++) {
		int ret = classify_one(&src[i], o, err);
		if (ret)
			return ret;
		for (unsigned j = 0; src[i].top && j < i; j++)
			if (src[j].top && !strcmp(src[i].top, src[j].top))
				return dlfs_err_set(err, -EINVAL,
						    "%s and %s would both "
						    "become the directory "
						    "'%s'",
						    src[j].path, src[i].path,
						    src[i].top);
	}
	return 0;
}

void pk_sources_free(struct pk_source *src, unsigned n)
{
	for (unsigned i = 0; src && i < n; i++) {
		free(src[i].top);
		src[i].top = NULL;
	}
}

unsigned pk_ingest_count(const struct pk_source *src, unsigned n)
{
	unsigned k = 0;
	for (unsigned i = 0; i < n; i++)
		k += pk_src_ingested(&src[i]);
	return k;
}
