/*
 * The layout (layout.c): the order of the entries, their inode numbers
 * and where each file's bytes go, containers and chunks. Not installed.
 * Thread-safety: immutable once laid out; the pipeline's readers
 * (pipe_read.c) share it and write disjoint slots of l->xxh3.
 */
#ifndef DLFS_PACK_LAYOUT_H
#define DLFS_PACK_LAYOUT_H

#include <sys/stat.h>

#include "tree.h"

/*
 * In ino order after layout: e[i] has ino base + i + 1 (base is 0 but on
 * the ranks of a distributed pack, which hold their share only): root,
 * directories, symlinks, then files in data order.
 */
struct pk_layout {
	uint64_t base;
	uint64_t *loc;  /* per entry: container << DLFS_LOC_CONTAINER_SHIFT
			 * | offset, for files; NULL in place: pk_file_loc */
	uint64_t *xxh3; /* per entry: the file's content hash; NULL in
			 * place: pk_file_xxh3 */
	uint64_t n_dirs, n_symlinks, n_files;
	uint64_t n_containers;
	uint64_t *data_size;   /* per container */
	uint64_t *first_chunk; /* per container, global chunk number */
	uint64_t *first_file;  /* per container, ino - 1 */
	uint64_t *n_cfiles;    /* per container */
	uint64_t n_chunks;     /* over all containers */
	uint64_t total_bytes;
	int64_t max_mtime;
};

/* The entry with ino i + 1. */
static inline struct pk_entry *pk_at(const struct pk_tree *t,
				     const struct pk_layout *l, uint64_t i)
{
	return &t->e[i - l->base];
}

static inline uint32_t pk_loc_container(uint64_t loc)
{
	return (uint32_t)(loc >> DLFS_LOC_CONTAINER_SHIFT);
}

static inline uint64_t pk_loc_offset(uint64_t loc)
{
	return loc & DLFS_LOC_OFFSET_MASK;
}

/* Entry k (e, its attributes a)'s place and content hash. An in-place
 * layout keeps no arrays for them (16 bytes an entry, at the index
 * writer's peak of memory): they are in the attributes, the archive's
 * number being the source's. */
static inline uint64_t pk_file_loc(const struct pk_layout *l,
				   const struct pk_entry *e, uint64_t k,
				   const struct pk_attr *a)
{
	if (l->loc)
		return l->loc[k];
	return S_ISREG(e->mode) ? (uint64_t)e->src << DLFS_LOC_CONTAINER_SHIFT |
					  a->spool_off
				: 0;
}

static inline uint64_t pk_file_xxh3(const struct pk_layout *l,
				    const struct pk_entry *e, uint64_t k,
				    const struct pk_attr *a)
{
	if (l->xxh3)
		return l->xxh3[k];
	return S_ISREG(e->mode) ? a->sum : 0;
}

/*
 * Order, number and place every entry, then put t's entries and their
 * attributes in ino order (so that later passes read the attribute file
 * front to back). @return 0 or -ENOMEM/-EFBIG/-errno with err set.
 */
int pk_layout(struct pk_tree *t, const struct dlfs_pack_opts *opts,
	      struct pk_layout *l, struct dlfs_err *err);
/*
 * The same for an in-place dataset (inplace.h): files numbered in
 * archive order and placed where their archives have them (loc from
 * pk_attr.spool_off, xxh3 from pk_attr.sum, read there by pk_file_loc
 * and pk_file_xxh3), each archive a container whose chunks ip numbered.
 * @return as pk_layout.
 */
struct pk_inplace;
int pk_layout_in_place(struct pk_tree *t, const struct dlfs_pack_opts *o,
		       const struct pk_inplace *ip, struct pk_layout *l,
		       struct dlfs_err *err);
void pk_layout_free(struct pk_layout *l);

#endif
