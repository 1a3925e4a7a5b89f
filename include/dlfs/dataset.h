/*
 * Reading a packed dataset: the index and its containers.
 *
 * Ownership: dlfs_ds_open returns a handle that owns the LMDB environment
 * and the container file descriptors; dlfs_ds_close releases them.
 * Pointers handed out by lookups (names, symlink targets) point into the
 * read-only index map and stay valid until dlfs_ds_close.
 *
 * Thread-safety: a dlfs_ds may be shared by any number of threads once
 * opened. Index lookups go through a struct dlfs_txn, which belongs to one
 * thread at a time; give each worker thread its own. Container reads
 * (dlfs_ds_pread) are plain pread calls and need no lock.
 *
 * Opening is O(1) in the number of files: the index is mapped, never read
 * whole. Containers are opened lazily on first use, so a missing one
 * affects only the files inside it.
 */
#ifndef DLFS_DATASET_H
#define DLFS_DATASET_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "dlfs/err.h"
#include "dlfs/format.h"

struct dlfs_ds;
struct dlfs_txn;

/* A decoded inode. For a symlink, target points to size bytes (no NUL). */
struct dlfs_inode {
	uint64_t ino;
	uint32_t mode;
	uint32_t mtime_nsec;
	int64_t mtime_sec;
	uint64_t size;
	uint32_t container;
	uint64_t offset; /* of the first byte inside the container file */
	uint64_t xxh3;
	uint64_t path_hash; /* format 1.1 path_bound: its entry's; else 0 */
	const char *target;
};

/* Metadata of an opened dataset (decoded superblock plus strings). */
struct dlfs_info {
	struct dlfs_super_rec super;
	char dataset_id_hex[2 * DLFS_ID_SIZE + 1];
	char creator[128];
	char order[64];
	char compress[32]; /* "zstd:LEVEL" (feature compressed), else "" */
	uint64_t index_bytes; /* size of the index file */
};

/*
 * Open the dataset directory at path. Checks the index's format version
 * (refusing an unknown major with a message naming the file) and reads the
 * superblock. @return 0, or -ENOENT / -ENOTDIR (no such dataset),
 * -EPROTONOSUPPORT (unknown major version), -EUCLEAN (not a dlfs index, or
 * damaged), or another -errno.
 */
int dlfs_ds_open(const char *path, struct dlfs_ds **out, struct dlfs_err *err);

/*
 * Like dlfs_ds_open, with the index mapped from index_path (a verified
 * local copy of path's index) instead of path/index. The containers are
 * still path's. A copy whose superblock names another dataset than
 * expect_id (DLFS_ID_SIZE bytes; NULL: not checked) is refused with
 * -EUCLEAN.
 */
int dlfs_ds_open_index(const char *path, const char *index_path,
		       const uint8_t *expect_id, struct dlfs_ds **out,
		       struct dlfs_err *err);

/* A dataset's index seal (index.sum), decoded and checked. */
struct dlfs_seal {
	uint8_t id[DLFS_ID_SIZE];
	char id_hex[2 * DLFS_ID_SIZE + 1];
	uint64_t size;    /* of the index file */
	uint8_t sum[16];  /* its XXH3-128, canonical */
};

/*
 * Read and check path/index.sum. @return 0, -ENOENT (no seal: a dataset
 * packed before seals existed), -EUCLEAN (a damaged or foreign seal,
 * err says which), -EPROTONOSUPPORT (an unknown major version), or
 * another -errno with err naming the file.
 */
int dlfs_seal_read(const char *path, struct dlfs_seal *s,
		   struct dlfs_err *err);

/*
 * Hash the index file at index_path (read whole, sequentially) into s,
 * for the dataset id. @return 0 or -errno with err naming the file.
 */
int dlfs_seal_make(const char *index_path, const uint8_t *id,
		   struct dlfs_seal *s, struct dlfs_err *err);

/* The same for an open file, read whole from offset 0. @return 0 or
 * -errno. */
int dlfs_seal_of_fd(int fd, const uint8_t *id, struct dlfs_seal *s);

/* Write s as dir/index.sum, fsynced. @return 0 or -errno. */
int dlfs_seal_write(const char *dir, const struct dlfs_seal *s,
		    struct dlfs_err *err);

/* The seal's 64-bit identity, for ranks to compare. */
uint64_t dlfs_seal_fold(const struct dlfs_seal *s);

/*
 * An incremental XXH3-128 of bytes given in order, for checking an index
 * copy against its seal as it is written. Owned by its user; not
 * thread-safe.
 */
struct dlfs_seal_hash;
int dlfs_seal_hash_new(struct dlfs_seal_hash **h);
void dlfs_seal_hash_add(struct dlfs_seal_hash *h, const void *p, size_t n);
/* Do the bytes added match s (count and sum)? Frees h. @return 1 or 0. */
int dlfs_seal_hash_end(struct dlfs_seal_hash *h, const struct dlfs_seal *s);
void dlfs_ds_close(struct dlfs_ds *ds);

const struct dlfs_info *dlfs_ds_info(const struct dlfs_ds *ds);
const char *dlfs_ds_path(const struct dlfs_ds *ds);

/*
 * Begin a read transaction. @return 0, or -ENOMEM / -EIO. A txn is cheap
 * to keep for a thread's lifetime: the index never changes.
 */
int dlfs_txn_begin(struct dlfs_ds *ds, struct dlfs_txn **out,
		   struct dlfs_err *err);
void dlfs_txn_end(struct dlfs_txn *txn);

/* @return 0, -ENOENT if ino is out of range, -EUCLEAN if damaged. */
int dlfs_stat(struct dlfs_txn *txn, uint64_t ino, struct dlfs_inode *out,
	      struct dlfs_err *err);

/*
 * Inodes first .. first + n - 1 in order, each decoded and checked as
 * dlfs_stat does it, given to cb, which returns nonzero to stop. One
 * lookup serves a block of DLFS_INODES_PER_BLOCK inodes, so a pass over
 * every file costs about a sixteenth of as many dlfs_stat calls.
 * @return 0, cb's nonzero value, or an error as dlfs_stat's (-ENOENT for
 * a range past the last inode).
 */
typedef int (*dlfs_inode_cb)(void *arg, const struct dlfs_inode *in);
int dlfs_stat_range(struct dlfs_txn *txn, uint64_t first, uint64_t n,
		    dlfs_inode_cb cb, void *arg, struct dlfs_err *err);

/*
 * Look up name (len bytes, not NUL-terminated) in directory parent.
 * In a dataset whose inode records are bound to their names (format 1.1,
 * feature path_bound), the entry's inode record is read too, and an
 * entry that leads to a record bound to another name (a damaged entry
 * pointing at another intact inode) fails with -EUCLEAN, err naming the
 * parent, the name and the inode reached.
 * @return 0 with *ino set, -ENOENT, -ENOTDIR if parent is not a directory
 * (only detected when it has no such entry), -ENAMETOOLONG, -EUCLEAN.
 */
int dlfs_lookup(struct dlfs_txn *txn, uint64_t parent, const char *name,
		size_t len, uint64_t *ino, struct dlfs_err *err);

/*
 * dlfs_lookup and dlfs_stat of what it finds in one call, with the same
 * check (the record read once). @return as dlfs_lookup, and dlfs_stat.
 */
int dlfs_lookup_stat(struct dlfs_txn *txn, uint64_t parent, const char *name,
		     size_t len, struct dlfs_inode *out, struct dlfs_err *err);

/*
 * dlfs_stat of inode ino, reached through the entry name (len bytes) of
 * directory parent, as dlfs_readdir handed it out: the way from an entry
 * to its inode for every walker of the tree, so that the record is
 * checked against the entry as dlfs_lookup checks it. @return as
 * dlfs_stat, or -EUCLEAN when the record is bound to another name
 * (err names the parent, the name and ino).
 */
int dlfs_stat_entry(struct dlfs_txn *txn, uint64_t parent, const char *name,
		    size_t len, uint64_t ino, struct dlfs_inode *out,
		    struct dlfs_err *err);

/*
 * Resolve a '/'-separated path relative to the root ("" and "/" are the
 * root; "." components are skipped, ".." is refused with -EINVAL). Symlinks
 * are not followed. @return as dlfs_lookup.
 */
int dlfs_resolve(struct dlfs_txn *txn, const char *path, uint64_t *ino,
		 struct dlfs_err *err);

/*
 * Directory iteration in name (byte) order. The cookie is the entry's
 * position (1 for the first): pass 0 to start, and the cookie a callback
 * saw to resume after that entry (it is what FUSE readdir offsets carry).
 * Resuming where a recent call stopped costs one seek; any other cookie
 * costs a skip from the start. The callback returns 0 to go on, 1 to stop
 * before consuming this entry (resume will deliver it again), or a
 * negative errno to abort with that code.
 */
struct dlfs_dirent {
	uint64_t ino;
	uint32_t type; /* st_mode & S_IFMT */
	const char *name; /* not NUL-terminated */
	size_t name_len;
	uint64_t cookie; /* resume point after this entry */
};
typedef int (*dlfs_dir_cb)(void *arg, const struct dlfs_dirent *d);
/* Each entry is checked before the callback sees it: its name is one
 * path component of 1 to DLFS_NAME_MAX bytes (no '/' or NUL, not "." or
 * ".."), its inode one of the dataset's but the root; a damaged entry ends
 * the listing with -EUCLEAN.
 * @return 0 at the end or when the callback stopped, or a negative errno. */
int dlfs_readdir(struct dlfs_txn *txn, uint64_t dir, uint64_t cookie,
		 dlfs_dir_cb cb, void *arg, struct dlfs_err *err);

/*
 * The container table, read from the index and checked once when the
 * dataset opens: chunk count against data size, data region inside the
 * file, file range inside the inode range. Chunks are numbered across
 * containers in container order ("global" chunk numbers). A record that
 * fails the checks (or is missing) is kept with bad = -EUCLEAN and no data
 * and no chunks: its files fail dlfs_stat with -EUCLEAN, the rest of the
 * dataset is unaffected. dlfs_stat checks every file's extent against
 * this table, so a file's chunk numbers (dlfs_chunk_at) are always in
 * range.
 */
struct dlfs_container {
	uint64_t file_size;   /* the whole .dlc file */
	uint64_t data_size;   /* bytes of its data region */
	uint64_t n_chunks;
	uint64_t first_chunk; /* global number of its chunk 0 */
	uint64_t first_ino, n_files;
	uint64_t footer_xxh3;
	int bad;              /* 0, or -EUCLEAN: the record is damaged */
};

/* Container c of the table, or NULL when c is out of range. */
const struct dlfs_container *dlfs_ds_container(const struct dlfs_ds *ds,
					       uint32_t c);
/* Chunks in all containers. */
uint64_t dlfs_ds_n_chunks(const struct dlfs_ds *ds);
/* Container *c and chunk *k of global chunk g. @return 0, or -EINVAL when
 * g >= dlfs_ds_n_chunks. */
int dlfs_ds_chunk_locate(const struct dlfs_ds *ds, uint64_t g, uint32_t *c,
			 uint64_t *k);
/* The same over any table of n containers (first_chunk ascending, as in
 * the dataset's), holding n_chunks chunks in all. */
int dlfs_container_locate(const struct dlfs_container *t, uint32_t n,
			  uint64_t n_chunks, uint64_t g, uint32_t *c,
			  uint64_t *k);

/* Offset inside its container file of chunk k's first byte. */
static inline uint64_t dlfs_chunk_start(uint64_t chunk_size, uint64_t k)
{
	return DLFS_DATA_OFFSET(chunk_size) + k * chunk_size;
}

/* The chunk holding container offset off (off >= the data offset). */
static inline uint64_t dlfs_chunk_at(uint64_t chunk_size, uint64_t off)
{
	return (off - DLFS_DATA_OFFSET(chunk_size)) / chunk_size;
}

/* Chunks *k0..*k1 of in's container under bytes [off, off + len) of
 * regular file in (len > 0, off + len <= in->size). */
static inline void dlfs_file_chunks(uint64_t chunk_size,
				    const struct dlfs_inode *in, uint64_t off,
				    uint64_t len, uint64_t *k0, uint64_t *k1)
{
	*k0 = dlfs_chunk_at(chunk_size, in->offset + off);
	*k1 = dlfs_chunk_at(chunk_size, in->offset + off + len - 1);
}

/* Chunk record of chunk k of container c, checked against the container
 * table: its length is the chunk size, or the rest of the data region for
 * the last chunk. @return 0, -ENOENT (no such chunk), -EUCLEAN (damaged
 * record, or its container's is). */
int dlfs_chunk_get(struct dlfs_txn *txn, uint32_t c, uint64_t k,
		   struct dlfs_chunk_rec *out, struct dlfs_err *err);
int dlfs_container_get(struct dlfs_txn *txn, uint32_t c,
		       struct dlfs_container_rec *out, struct dlfs_err *err);

/*
 * Return a read-only file descriptor for container c, opening it on first
 * use and checking its header and footer against the index (magic,
 * version, dataset id, size). The fd belongs to ds. A container shorter
 * than the index says (a copy cut short) opens with its header checked
 * alone (its footer is gone): see dlfs_ds_container_cut. @return 0, or
 * -ENOENT (missing), -EUCLEAN (wrong magic/id/version, cut inside its
 * header, longer than the index says), -errno. A failure is remembered:
 * later calls fail the same way at no cost.
 */
int dlfs_ds_container_fd(struct dlfs_ds *ds, uint32_t c, int *fd,
			 struct dlfs_err *err);

/*
 * Is container c, once dlfs_ds_container_fd has opened it, shorter than
 * the index says (a copy interrupted)? Its chunks whose stored bytes end
 * at or before the cut read as usual; every read of the others' bytes
 * (dlfs_ds_pread, dlfs_ds_read_range, dlfs_chunk_read, dlfs_file_pread)
 * fails with -EUCLEAN, err naming the container, its size, the size the
 * index gives and the chunk. @return 1 with *size its size, or 0 (whole,
 * not opened yet, or unusable).
 */
int dlfs_ds_container_cut(struct dlfs_ds *ds, uint32_t c, uint64_t *size);

/*
 * An in-place dataset's containers are the user's archives (format.h,
 * DLFS_FEATURE(IN_PLACE)); each one as the index records it. path is
 * the index's: relative to the dataset directory unless it starts with
 * '/'. bad is -EUCLEAN for a damaged record (then path is NULL).
 */
struct dlfs_archive {
	char *path;
	uint64_t size;
	int64_t mtime_sec;
	uint32_t mtime_nsec;
	uint32_t kind; /* DLFS_ARCHIVE_TAR or DLFS_ARCHIVE_ZIP */
	int bad;
};

/* Archive c of an in-place dataset, or NULL (not in place, or c out of
 * range). */
const struct dlfs_archive *dlfs_ds_archive(const struct dlfs_ds *ds,
					   uint32_t c);

/* Archive c's path as opened: the index's, under the dataset directory
 * when relative. *out is the caller's to free. @return 0, -ENOENT (no
 * such archive or a damaged record), -ENOMEM. */
int dlfs_archive_path(const struct dlfs_ds *ds, uint32_t c, char **out);

/*
 * Check every archive of an in-place dataset where it is: there, a
 * regular file, and of the size and modification time the index gives
 * (a mount refuses a dataset whose archives changed, rather than serve
 * EIO for the chunks that did). Nothing to check for other datasets.
 * @return 0, or -ENOENT / -EUCLEAN / -errno with err naming the first
 * archive that fails and why.
 */
int dlfs_ds_check_archives(struct dlfs_ds *ds, struct dlfs_err *err);

/*
 * How dlfs_chunk_read reads containers. PLAIN (the default): buffered
 * reads through the file's usual fd, pages dropped after. RANDOM: through
 * a second fd marked POSIX_FADV_RANDOM, so the kernel reads the chunk and
 * nothing past it, pages dropped after. DIRECT: O_DIRECT, where the
 * filesystem allows it (else RANDOM). Set before the first container is
 * opened.
 */
enum dlfs_chunk_io { DLFS_CHUNK_IO_PLAIN, DLFS_CHUNK_IO_RANDOM,
		     DLFS_CHUNK_IO_DIRECT };
void dlfs_ds_set_chunk_io(struct dlfs_ds *ds, enum dlfs_chunk_io io);

/*
 * Read len bytes of container c at offset off into buf, retrying short
 * reads. @return 0, -EUCLEAN if the container ends early (or the chunk of
 * the range's last byte passes its cut: dlfs_ds_container_cut), -errno.
 */
int dlfs_ds_pread(struct dlfs_ds *ds, uint32_t c, void *buf, size_t len,
		  uint64_t off, struct dlfs_err *err);

/*
 * Read bytes [off, off + len) of container c into buf (cap bytes) the way
 * chunks are read (dlfs_ds_set_chunk_io: O_DIRECT when buf is 4 KiB
 * aligned, else buffered with the pages dropped after): the whole 4 KiB
 * pages around the range, so the bytes start at buf + *head. No checksum
 * is checked. @return 0, -EINVAL (cap too small for the pages), -EUCLEAN
 * if the container ends early, -ENOENT or -EUCLEAN for an unusable
 * container, -errno.
 */
int dlfs_ds_read_range(struct dlfs_ds *ds, uint32_t c, uint64_t off,
		       size_t len, void *buf, size_t cap, size_t *head,
		       struct dlfs_err *err);

/*
 * Read regular file in alone, the way chunks are read (as
 * dlfs_ds_read_range): the whole 4 KiB pages around its bytes into buf
 * (cap bytes, 4 KiB aligned), the file at buf + *head, and *pfs_bytes the
 * bytes that took from the container. In an in-place dataset, a member
 * stored as it is is read where it lies in its archive (its chunk's
 * record, through txn, says where), and a deflated member, which is its
 * chunk alone, is inflated into buf (*head 0). No checksum is checked. A compressed
 * dataset's file cannot be read alone: -EINVAL. @return 0, -EUCLEAN for
 * a record that does not hold together, or as dlfs_ds_read_range.
 */
int dlfs_file_read_alone(struct dlfs_ds *ds, struct dlfs_txn *txn,
			 const struct dlfs_inode *in, void *buf, size_t cap,
			 size_t *head, uint64_t *pfs_bytes,
			 struct dlfs_err *err);

/*
 * Read up to len bytes of regular file ino at file offset off, straight
 * from its container (no cache, no checksum: the daemon's read path and
 * dlfs_file_check do that). *got is set to the bytes read, 0 at or past
 * EOF. @return 0, -EISDIR/-EINVAL for non-files, -errno.
 */
int dlfs_file_pread(struct dlfs_ds *ds, const struct dlfs_inode *in,
		    void *buf, size_t len, uint64_t off, size_t *got,
		    struct dlfs_err *err);

/*
 * Read chunk k of container c into buf (cap bytes, at least the chunk
 * size, 4 KiB aligned) in one read, and check it against its xxh3 in the
 * index. A compressed dataset's chunk: its stored bytes are checked
 * against xxh3, decompressed, then checked against the record's sum. The read bypasses the page cache (O_DIRECT, dlfs_ds_set_chunk_io)
 * or its pages are dropped after it, so the bytes are not kept twice. *len is set to the chunk's length. @return 0,
 * -EBADMSG (DLFS_ECHECKSUM) on a checksum mismatch (err names the
 * container and offset; buf and *len then hold the untrusted bytes),
 * -ENOENT or -EUCLEAN for a missing or damaged container, -errno.
 */
int dlfs_chunk_read(struct dlfs_ds *ds, struct dlfs_txn *txn, uint32_t c,
		    uint64_t k, void *buf, size_t cap, size_t *len,
		    struct dlfs_err *err);

/*
 * What reading a compressed dataset's chunks needs besides the caller's
 * buffer: a zstd decompression context and room for one chunk's stored
 * bytes. Making one costs a few allocations of the chunk size, so a
 * thread that reads many chunks keeps one. One thread uses a decoder at a
 * time. @return 0 or -ENOMEM.
 */
struct dlfs_decoder;
int dlfs_decoder_new(const struct dlfs_ds *ds, struct dlfs_decoder **out,
		     struct dlfs_err *err);
/* NULL is ok. */
void dlfs_decoder_free(struct dlfs_decoder *d);

/*
 * dlfs_chunk_read of chunk k of container c whose record cr the caller
 * has from dlfs_chunk_get, decompressed with dec (NULL: a temporary
 * decoder) when the dataset is compressed. Same returns.
 */
int dlfs_chunk_read_rec(struct dlfs_ds *ds, uint32_t c, uint64_t k,
			const struct dlfs_chunk_rec *cr,
			struct dlfs_decoder *dec, void *buf, size_t cap,
			size_t *len, struct dlfs_err *err);

/*
 * The path of inode ino relative to the root, found by one scan of the
 * directory entries (slow: for error messages and tools, not hot paths).
 * Writes a NUL-terminated path to buf. @return 0, -ENOENT, -ENAMETOOLONG.
 */
int dlfs_path_of(struct dlfs_txn *txn, uint64_t ino, char *buf, size_t len,
		 struct dlfs_err *err);

#endif
