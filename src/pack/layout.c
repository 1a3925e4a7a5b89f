/*
 * Layout: the order of files in the containers, inode numbers, and the
 * placement rule. Inodes are numbered root, directories, symlinks, then
 * files in data order, so inode order is container order: readers walk
 * containers front to back by walking inodes.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <xxhash.h>

#include "pack_priv.h"
#include "util.h"

/* qsort has no context argument in C11; the comparators need the opts. */
struct sort_item {
	struct pk_entry *e;
	uint64_t key;
};

static int by_path(const void *a, const void *b)
{
	const struct pk_entry *x = ((const struct sort_item *)a)->e;
	const struct pk_entry *y = ((const struct sort_item *)b)->e;
	return pk_pathcmp(x->path, x->path_len, y->path, y->path_len);
}

/* key first, path to break ties: used by input, size and shuffle. */
static int by_key(const void *a, const void *b)
{
	const struct sort_item *x = a, *y = b;
	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return by_path(a, b);
}

static int sort_group(struct sort_item *it, uint64_t n, enum dlfs_order ord,
		      uint64_t seed)
{
	for (uint64_t i = 0; i < n; i++) {
		struct pk_entry *e = it[i].e;
		switch (ord) {
		case DLFS_ORDER_SORTED:
			it[i].key = 0;
			break;
		case DLFS_ORDER_INPUT:
			it[i].key = ((uint64_t)e->src << 40) | e->seq;
			break;
		case DLFS_ORDER_SIZE:
			it[i].key = e->size;
			break;
		case DLFS_ORDER_SHUFFLE:
			it[i].key = XXH3_64bits_withSeed(e->path, e->path_len,
							 seed);
			break;
		}
	}
	qsort(it, n, sizeof(*it), ord == DLFS_ORDER_SORTED ? by_path : by_key);
	return 0;
}

/* The entry index of e's parent, via the path map: it is in the tree. */
static uint64_t parent_entry(const struct pk_tree *t, const struct pk_entry *e)
{
	const char *slash = NULL;
	for (const char *p = e->path + e->path_len; p > e->path; p--)
		if (p[-1] == '/') {
			slash = p - 1;
			break;
		}
	size_t n = slash ? (size_t)(slash - e->path) : 0;
	uint64_t h = XXH3_64bits(e->path, n);
	for (;; h++) {
		uint32_t v = t->map[h & (t->map_cap - 1)];
		const struct pk_entry *p = &t->e[v - 1];
		if (p->path_len == n && !memcmp(p->path, e->path, n))
			return v - 1;
	}
}

int pk_layout(struct pk_tree *t, const struct dlfs_pack_opts *o,
	      struct pk_layout *l, struct dlfs_err *err)
{
	memset(l, 0, sizeof(*l));
	/*
	 * Parents first, while the path map is there: then the map goes (4
	 * bytes a slot, two slots an entry) before the sort takes its room.
	 * Until inodes are numbered, parent holds the parent's entry index.
	 */
	for (uint64_t i = 1; i < t->n; i++)
		t->e[i].parent = (uint32_t)parent_entry(t, &t->e[i]);
	free(t->map);
	t->map = NULL;
	t->map_cap = 0;
	struct sort_item *it = malloc(t->n * sizeof(*it));
	l->by_ino = malloc(t->n * sizeof(*l->by_ino));
	if (!it || !l->by_ino) {
		free(it);
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	}

	/* Three groups, each sorted: dirs (by path), symlinks, files. */
	uint64_t n = 0;
	for (int pass = 0; pass < 3; pass++) {
		uint64_t m = 0;
		for (uint64_t i = 0; i < t->n; i++) {
			mode_t md = t->e[i].mode;
			if ((pass == 0 && S_ISDIR(md)) ||
			    (pass == 1 && S_ISLNK(md)) ||
			    (pass == 2 && S_ISREG(md)))
				it[m++].e = &t->e[i];
		}
		sort_group(it, m, pass == 2 ? o->order : DLFS_ORDER_SORTED,
			   o->seed);
		for (uint64_t i = 0; i < m; i++) {
			l->by_ino[n + i] = it[i].e;
			it[i].e->ino = (uint32_t)(n + i + 1);
		}
		n += m;
		if (pass == 0)
			l->n_dirs = m;
		else if (pass == 1)
			l->n_symlinks = m;
		else
			l->n_files = m;
	}
	free(it);

	/*
	 * Parents, child counts, the newest mtime. Directories no source
	 * described (implied by archive members, or a root only archives
	 * gave) take the newest mtime of the tree.
	 */
	l->max_mtime = t->root_set ? t->e[0].mtime_sec : INT64_MIN;
	for (uint64_t i = 1; i < n; i++) {
		struct pk_entry *e = l->by_ino[i];
		e->parent = t->e[e->parent].ino;
		if (!e->implicit && e->mtime_sec > l->max_mtime)
			l->max_mtime = e->mtime_sec;
	}
	if (l->max_mtime == INT64_MIN)
		l->max_mtime = 0;
	if (!t->root_set)
		t->e[0].mtime_sec = l->max_mtime;
	for (uint64_t i = 0; i < l->n_dirs; i++)
		if (l->by_ino[i]->implicit) {
			l->by_ino[i]->mtime_sec = l->max_mtime;
			l->by_ino[i]->mtime_nsec = 0;
		}
	/* A directory's size is its number of entries. */
	for (uint64_t i = 0; i < l->n_dirs; i++)
		l->by_ino[i]->size = 0;
	for (uint64_t i = 1; i < n; i++)
		l->by_ino[l->by_ino[i]->parent - 1]->size++;

	/*
	 * Placement. A file that fits in a chunk never straddles a chunk
	 * boundary; a larger one starts where it is. A container is closed
	 * when the next file would take it past container_size. Container
	 * arrays are sized for the worst case of one file each.
	 */
	uint64_t cap = 1 + l->n_files;
	l->data_size = calloc(cap, sizeof(uint64_t));
	l->first_chunk = calloc(cap, sizeof(uint64_t));
	l->first_file = calloc(cap, sizeof(uint64_t));
	l->n_cfiles = calloc(cap, sizeof(uint64_t));
	if (!l->data_size || !l->first_chunk || !l->first_file ||
	    !l->n_cfiles)
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	const uint64_t cs = o->chunk_size;
	uint64_t c = 0, pos = 0;
	uint64_t first = l->n_dirs + l->n_symlinks;
	l->first_file[0] = first;
	for (uint64_t i = first; i < n; i++) {
		struct pk_entry *e = l->by_ino[i];
		uint64_t s = e->size;
		uint64_t p = dlfs_roundup(pos, o->align);
		if (s > 0 && s <= cs && p / cs != (p + s - 1) / cs)
			p = dlfs_roundup(p, cs);
		if (pos > 0 && p + s > o->container_size) {
			l->data_size[c] = pos;
			c++;
			l->first_file[c] = i;
			p = 0;
		}
		if (c >= DLFS_MAX_CONTAINERS ||
		    DLFS_DATA_OFFSET(cs) + p + s > DLFS_LOC_OFFSET_MASK)
			return dlfs_err_set(err, -EFBIG,
					    "too much data: more than %d "
					    "containers; raise "
					    "--container-size",
					    DLFS_MAX_CONTAINERS);
		e->container = (uint32_t)c;
		e->offset = DLFS_DATA_OFFSET(cs) + p;
		l->n_cfiles[c]++;
		pos = p + s;
		l->total_bytes += s;
	}
	l->data_size[c] = pos;
	l->n_containers = c + 1;
	for (uint64_t k = 0; k < l->n_containers; k++) {
		l->first_chunk[k] = l->n_chunks;
		l->n_chunks += (l->data_size[k] + cs - 1) / cs;
	}
	return 0;
}

void pk_layout_free(struct pk_layout *l)
{
	free(l->by_ino);
	free(l->data_size);
	free(l->first_chunk);
	free(l->first_file);
	free(l->n_cfiles);
	memset(l, 0, sizeof(*l));
}
