/*
 * The packer's tree: every entry of the dataset being packed, shared by
 * tree.c (entries, names, the attribute file), scan*.c (sources ->
 * entries), layout.c, dist.c, index_write.c, the pipeline (pipe*.c), the
 * container writer (container.c) and pack.c. Not installed.
 *
 * Memory holds what sorting and numbering need (struct pk_entry and the
 * names); the rest of each entry (struct pk_attr) is on disk, in a file
 * of the temporary directory, and is read back front to back once the
 * entries are in ino order.
 *
 * Ownership: a struct pk_tree owns every entry and every string in it;
 * pk_tree_free releases them. Nothing here is thread-safe but
 * pk_attr_read: only the pipeline's reader threads (pipe_read.c) run
 * concurrently, and they read entries and attributes.
 */
#ifndef DLFS_PACK_TREE_H
#define DLFS_PACK_TREE_H

#include <stdint.h>
#include <string.h>
#include <sys/types.h>

#include "dlfs/err.h"
#include "dlfs/format.h"
#include "dlfs/pack.h"

/*
 * An entry as the packer holds it in memory: 32 bytes. What else a source
 * says of it (struct pk_attr) goes to the tree's attribute file, so that
 * memory holds what the sorts and the layout need and no more: about 45
 * bytes a file with its name, where the index takes 80. Entry counts, and
 * so inode numbers, stay below 2^32 (pk_tree_put refuses more).
 */
struct pk_entry {
	/* A directory: its whole path, "" for the root. Anything else: its
	 * name, and a symlink's target after the name's NUL. In t's slabs. */
	const char *name;
	uint64_t size;   /* file bytes, symlink target length; a directory's
			  * entries, once laid out */
	uint32_t parent; /* the parent's entry index, or PK_WHOLE: then name
			  * is the whole path (a rank's share, dist.c) */
	uint32_t ino;    /* 0 until laid out; then e[i] has ino base + i + 1 */
	uint32_t mode;   /* st_mode */
	uint32_t src;    /* index into the sources */
};

#define PK_WHOLE UINT32_MAX

/* The rest of an entry: record k of the attribute file is e[k]'s. */
struct pk_attr {
	int64_t mtime_sec;
	uint64_t spool_off; /* archive members, ingested files: where their
			     * bytes are in the spool or data file */
	uint32_t mtime_nsec;
	uint32_t data;      /* ingest: 1 + index into pk_tree.data, or 0 */
	/* A hard link: 1 + the index of the entry whose bytes it has (and
	 * which pipe_read.c reads: its source, path, spool offset); 0 = its
	 * own. Set by scan_archive.c; scan.c copies that entry's size. */
	uint32_t data_from;
	uint32_t implicit;  /* a directory only implied by archive members */
	uint32_t pad;
	/* In-place datasets (inplace.h): a file's content hash, found as
	 * its archive is read; spool_off is then its logical offset in the
	 * archive's data stream. */
	uint64_t sum;
};

/* A file that ingested entries are read from, at their spool_off. */
struct pk_data {
	char *path;
	int fd;
};

struct pk_tree {
	struct pk_entry *e; /* e[0] is the root */
	uint64_t n, cap;
	/* Where entries' names live (pk_tree_strdup): slabs, not a malloc
	 * each, which would cost 16 bytes of a 12-byte name. */
	char **slabs;
	uint64_t n_slabs, slabs_cap;
	uint64_t slab_used; /* bytes of the last slab */
	uint32_t *map;      /* open addressing over e, by path; 0 = empty */
	uint64_t map_cap;
	/* The directory add_entry last put an entry in (1 + its index, 0
	 * for none; its name is its whole path, of last_dir_len bytes):
	 * pk_tree_find answers for it without the map, since sources give
	 * a directory's entries one after another. */
	uint64_t last_dir;
	size_t last_dir_len;
	/*
	 * The attribute file (unlinked once open): records up to n_done are
	 * in it, those after in abuf; the last entry put is in cur until
	 * the next put or pk_attr_flush.
	 */
	int attr_fd;
	char *attr_path;
	struct pk_attr *abuf;
	uint64_t n_done, n_buf;
	struct pk_attr cur;
	uint64_t cur_idx;
	int cur_set;
	uint64_t bucket;    /* records in a bucket of the ino reorder
			     * (layout.c); 0: 1M (tests set fewer) */
	uint32_t *links;    /* entries that are hard links (data_from) */
	uint64_t n_links, links_cap;
	int spool_fd;       /* -1 without archive sources */
	uint64_t spool_size;
	char *spool_path;
	int root_set;       /* the root's attributes came from a source */
	int root_from_dir;  /* 1: a directory source will set them; 2: did */
	struct pk_data *data; /* ingest spools and LMDB data files */
	uint32_t n_data;
	uint64_t data_cap;
};

void pk_tree_init(struct pk_tree *t);
void pk_tree_free(struct pk_tree *t);

/* Create the attribute file at path (unlinked at once: it never outlives
 * the process). @return 0 or -errno with err naming path. */
int pk_tree_open_attrs(struct pk_tree *t, const char *path,
		       struct dlfs_err *err);

/* A NUL-terminated copy of p[0..n) that lives as long as t (an entry's
 * name). @return it, or NULL when out of memory. */
char *pk_tree_strdup(struct pk_tree *t, const char *p, size_t n);

/*
 * Append an entry named name[0..n) (see struct pk_entry) without looking
 * at the path map: the root, and a rank's share. *e and *a are valid
 * until the next append or put. @return 0, -ENOMEM, -EFBIG or an I/O
 * error with err set.
 */
int pk_tree_append(struct pk_tree *t, const char *name, size_t n,
		   uint32_t parent, struct pk_entry **e, struct pk_attr **a,
		   struct dlfs_err *err);

/* The root, the first entry: a directory, 0755, attributes zero. */
int pk_tree_root(struct pk_tree *t, struct pk_entry **e, struct pk_attr **a,
		 struct dlfs_err *err);

/* The entry index of path p[0..n), or -1. */
int64_t pk_tree_find(const struct pk_tree *t, const char *p, size_t n);

/*
 * Add or merge an entry, as a source's scan does: directories merge (an
 * implied one takes the attributes of a later real one), anything else
 * given twice is -EINVAL with err naming where. The parent must be there
 * (a directory). *out is the new entry and *attr its attributes, valid
 * until the next put; both NULL when merged into an existing directory.
 */
int pk_tree_put(struct pk_tree *t, const char *p, size_t n, uint32_t mode,
		uint32_t src, const char *where, struct pk_entry **out,
		struct pk_attr **attr, struct dlfs_err *err);

/* Give symlink e its target tg[0..n) (e->size is set to n). */
int pk_tree_set_target(struct pk_tree *t, struct pk_entry *e, const char *tg,
		       size_t n, struct dlfs_err *err);

/* A symlink's target (e->size bytes). */
static inline const char *pk_target(const struct pk_entry *e)
{
	return e->name + strlen(e->name) + 1;
}

/* Remember that entry k is a hard link (its data_from is set). */
int pk_tree_add_link(struct pk_tree *t, uint64_t k, struct dlfs_err *err);

/*
 * Entry k's attributes. get and set work any time; pk_attr_read, for
 * records [k, k + n), only after pk_attr_flush, and then from any number
 * of threads at once. @return 0 or -errno with err naming the file.
 */
int pk_attr_get(struct pk_tree *t, uint64_t k, struct pk_attr *a,
		struct dlfs_err *err);
int pk_attr_set(struct pk_tree *t, uint64_t k, const struct pk_attr *a,
		struct dlfs_err *err);
int pk_attr_flush(struct pk_tree *t, struct dlfs_err *err);
int pk_attr_read(const struct pk_tree *t, uint64_t k, uint64_t n,
		 struct pk_attr *a, struct dlfs_err *err);

/* An entry's whole path, into *buf (grown as needed); *len its length.
 * @return 0 or -ENOMEM. */
int pk_entry_path(const struct pk_tree *t, const struct pk_entry *e,
		  char **buf, size_t *cap, size_t *len);

size_t pk_entry_path_len(const struct pk_tree *t, const struct pk_entry *e);

/* An entry's name: a directory's last component (the root's is ""). */
const char *pk_entry_name(const struct pk_entry *e, size_t *len);

/* pk_pathcmp of two entries' whole paths. */
int pk_entry_cmp(const struct pk_tree *t, const struct pk_entry *a,
		 const struct pk_entry *b);

/* Open path read-only as a data file of t (once per path); *idx is its
 * 1-based index. @return 0 or -errno. */
int pk_tree_data_add(struct pk_tree *t, const char *path, uint32_t *idx,
		     struct dlfs_err *err);
void pk_tree_data_free(struct pk_tree *t);

/* Component-wise path order: '/' sorts before every other byte. */
int pk_pathcmp(const char *a, size_t alen, const char *b, size_t blen);

#endif
