/*
 * The packer's in-memory model, shared by scan.c (sources -> entries),
 * layout.c (order, inode numbers, placement), index_write.c (LMDB) and
 * pack.c (the data pipeline and publishing). Not installed.
 *
 * Ownership: a struct pk_tree owns every entry and every string in it;
 * pk_tree_free releases them. Nothing here is thread-safe: only pack.c's
 * reader threads run concurrently, and they touch disjoint entries.
 */
#ifndef DLFS_PACK_PRIV_H
#define DLFS_PACK_PRIV_H

#include <stdint.h>
#include <sys/types.h>

#include "dlfs/err.h"
#include "dlfs/format.h"
#include "dlfs/pack.h"

enum pk_src_kind {
	PK_SRC_DIR,
	PK_SRC_ARCHIVE,
	PK_SRC_HDF5,      /* split into samples (ingest.h) */
	PK_SRC_LMDB,      /* an environment directory: one file per key */
	PK_SRC_LMDB_FILE, /* the same, as a single file (MDB_NOSUBDIR) */
};

struct pk_ingest;

struct pk_source {
	const char *path;
	enum pk_src_kind kind;
	uint64_t size;          /* ingest sources: bytes, to share the work */
	char *top;              /* ingest sources: the directory they become */
	struct pk_ingest *ing;  /* ingest sources: where their files are */
};

/*
 * An entry: 104 bytes, 64-bit fields first (a 10M-file pack holds one
 * per file, so each field costs 10 MB). Entry counts, and so inode
 * numbers, stay below 2^32 (pk_tree_put refuses more).
 */
struct pk_entry {
	char *path;        /* relative, no leading '/'; "" is the root */
	char *target;      /* symlink target, size bytes */
	int64_t mtime_sec;
	uint64_t size;     /* file bytes, symlink target length; a
			    * directory's entries, once laid out */
	uint64_t spool_off; /* archive members: where their bytes are spooled */
	uint64_t offset;   /* in the container file */
	uint64_t xxh3;
	uint32_t path_len;
	uint32_t mode;     /* st_mode */
	uint32_t mtime_nsec;
	uint32_t src;      /* index into the sources */
	uint32_t seq;      /* discovery order, for --order input */
	uint32_t ino;
	uint32_t parent;   /* parent's inode number */
	uint32_t container;
	/* A hard link: 1 + the index of the entry whose bytes it has (and
	 * which read_file reads: its source, path, spool offset); 0 = its
	 * own. Set by scan.c, which also copies that entry's size. */
	uint32_t data_from;
	uint32_t data;     /* ingest: 1 + index into pk_tree.data, or 0 */
	uint8_t implicit;  /* a directory only implied by archive members */
};

/* A file that ingested entries are read from, at their spool_off. */
struct pk_data {
	char *path;
	int fd;
};

struct pk_tree {
	struct pk_entry *e; /* e[0] is the root */
	uint64_t n, cap;
	/* Where entries' paths live (pk_tree_strdup): slabs, not a malloc
	 * each, which would cost 16 bytes of a 21-byte path. */
	char **slabs;
	uint64_t n_slabs, slabs_cap;
	uint64_t slab_used; /* bytes of the last slab */
	uint32_t *map;      /* open addressing over e, by path; 0 = empty */
	uint64_t map_cap;
	int spool_fd;       /* -1 without archive sources */
	uint64_t spool_size;
	char *spool_path;
	int root_set;       /* the root's attributes came from a source */
	int root_from_dir;  /* 1: a directory source will set them; 2: did */
	struct pk_data *data; /* ingest spools and LMDB data files */
	uint32_t n_data, data_cap;
};

/* In ino order after layout: dirs, symlinks, then files in data order. */
struct pk_layout {
	struct pk_entry **by_ino; /* by_ino[i] has ino i+1 */
	uint64_t n_dirs, n_symlinks, n_files;
	uint64_t n_containers;
	uint64_t *data_size;   /* per container */
	uint64_t *first_chunk; /* per container, global chunk number */
	uint64_t *first_file;  /* per container, index into by_ino */
	uint64_t *n_cfiles;    /* per container */
	uint64_t n_chunks;     /* over all containers */
	uint64_t total_bytes;
	int64_t max_mtime;
};

void pk_tree_init(struct pk_tree *t);
void pk_tree_free(struct pk_tree *t);

/* A NUL-terminated copy of p[0..n) that lives as long as t (an entry's
 * path). @return it, or NULL when out of memory. */
char *pk_tree_strdup(struct pk_tree *t, const char *p, size_t n);

/*
 * Read the sources into t. Archive members' bytes are copied to a spool
 * file at spool_path (created only if an archive is met). @return 0 or a
 * negative errno with err naming the path.
 */
int pk_scan(struct pk_tree *t, const struct pk_source *src, unsigned n_src,
	    const char *spool_path, const struct dlfs_pack_opts *opts,
	    struct dlfs_err *err);

/*
 * Add or merge an entry, as a source's scan does: directories merge (an
 * implied one takes the attributes of a later real one), anything else
 * given twice is -EINVAL with err naming where. *out is the new entry, or
 * NULL when merged into an existing directory.
 */
int pk_tree_put(struct pk_tree *t, const char *p, size_t n, uint32_t mode,
		uint32_t src, const char *where, struct pk_entry **out,
		struct dlfs_err *err);

/* Open path read-only as a data file of t (once per path); *idx is its
 * 1-based index. @return 0 or -errno. */
int pk_tree_data_add(struct pk_tree *t, const char *path, uint32_t *idx,
		     struct dlfs_err *err);
void pk_tree_data_free(struct pk_tree *t);

/* Order, number and place every entry. @return 0 or -ENOMEM/-EFBIG. */
int pk_layout(struct pk_tree *t, const struct dlfs_pack_opts *opts,
	      struct pk_layout *l, struct dlfs_err *err);
void pk_layout_free(struct pk_layout *l);

/* Chunk checksums, per global chunk number, filled by pack.c. */
struct pk_chunks {
	uint64_t *xxh3;
	uint32_t *length;
};

/* Footer checksums and file sizes, per container, filled by pack.c. */
struct pk_containers {
	uint64_t *file_size;
	uint64_t *footer_xxh3;
};

/* XXH3-128 over every entry's metadata and content hash. */
void pk_dataset_id(const struct pk_layout *l, const struct dlfs_pack_opts *o,
		   uint8_t id[DLFS_ID_SIZE]);

/* Write the LMDB index to path. @return 0 or a negative errno. */
int pk_index_write(const char *path, const struct pk_layout *l,
		   const struct dlfs_pack_opts *o, const uint8_t *id,
		   const struct pk_chunks *ch, const struct pk_containers *ct,
		   struct dlfs_err *err);

/* Component-wise path order: '/' sorts before every other byte. */
int pk_pathcmp(const char *a, size_t alen, const char *b, size_t blen);

#endif
