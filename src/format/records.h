/*
 * Checks of the records that the index and the containers hold: pure
 * functions of the record's bytes and of what was checked before it (the
 * superblock, the container table), with no I/O and no LMDB. The index
 * (index.c), container validation (dataset.c) and verify (verify.c) call
 * them where they meet each record, and the fuzz targets (tests/fuzz/)
 * call the very same functions, so what is fuzzed is what ships.
 *
 * Functions that take a path use it for messages only (the dataset
 * directory, or a container file). A record that passes may be trusted
 * as each function's comment says; one that fails gives -EUCLEAN
 * (DLFS_ECORRUPT) unless said otherwise.
 *
 * Stateless and thread-safe. Private to libdlfs; not installed.
 */
#ifndef DLFS_RECORDS_H
#define DLFS_RECORDS_H

#include <stddef.h>
#include <stdint.h>

#include "dlfs/dataset.h"
#include "dlfs/err.h"
#include "dlfs/format.h"

/*
 * A decoded superblock is self-consistent: counts add up, at least the
 * root directory, inode numbers that fit a directory entry (60 bits), a chunk size that is a multiple of 4096 from 4096 to
 * UINT32_MAX (a chunk record's length is a u32), at most
 * DLFS_MAX_CONTAINERS containers. (The version was checked before
 * it was decoded.) @return 0 or -EUCLEAN.
 */
int dlfs_super_check(const struct dlfs_super_rec *s);

/*
 * The superblock's features are all ones this dlfs knows
 * (DLFS_FEATURES_KNOWN). @return 0, or -EPROTONOSUPPORT with err naming
 * the lowest unknown bit and the dataset ds_path.
 */
int dlfs_super_features_check(const struct dlfs_super_rec *s,
			      const char *ds_path, struct dlfs_err *err);

/*
 * The container table entry for the record value v of vlen bytes (v NULL:
 * the index has no record), whose first chunk has global number
 * first_chunk. A record passes when it has the right size, its chunk
 * count matches its data size, its data region and footer fit in its
 * file, and its files lie in the inode range of s. Then *out holds its
 * numbers; otherwise *out is empty (no data, no chunks, no files) with
 * bad = -EUCLEAN. @return out->bad.
 */
int dlfs_container_entry(const struct dlfs_super_rec *s, const void *v,
			 size_t vlen, uint64_t first_chunk,
			 struct dlfs_container *out);

/*
 * Decode chunk k's record (v, vlen bytes) of container cont (an entry
 * that is not bad, k < cont->n_chunks) as a dataset with superblock s
 * stores it, and check it: the record's size; its length is the chunk
 * size, or what is left of the data region for the last chunk (readers
 * size their buffers by the chunk size). With DLFS_FEATURE(COMPRESSED),
 * also: only known flags; a raw chunk's stored length is its length, a
 * zstd chunk's less than it; the stored bytes start at a multiple of
 * 4096 at or past the data offset and end before the footer. ds_path
 * and c name the record in err's message. @return 0 or -EUCLEAN.
 */
int dlfs_chunk_rec_check(const struct dlfs_super_rec *s,
			 const struct dlfs_container *cont, const char *ds_path,
			 uint32_t c, uint64_t k, const void *v, size_t vlen,
			 struct dlfs_chunk_rec *out, struct dlfs_err *err);

/* The file type (S_IFDIR, S_IFLNK, S_IFREG) inode ino has, by its
 * number: dlfs-format(5) numbers directories, then symlinks, then files. */
uint32_t dlfs_ino_type(const struct dlfs_super_rec *s, uint64_t ino);

/*
 * Decode inode ino (1 <= ino <= s->n_inodes) from the value of its inode
 * block (block, block_len bytes) and check it against the superblock and
 * the container table cont (s->n_containers entries, built by
 * dlfs_container_entry). Its type must be the one its number gives
 * (dlfs_ino_type). A regular file of non-zero size passes only if its
 * container is in range and not bad, lists it among its inodes, and its
 * bytes lie inside that container's data region; so the chunks
 * dlfs_file_chunks names exist. An empty file passes if its checksum is
 * the empty string's. A directory passes as it is; a symbolic link
 * passes with target NULL, and the caller checks its target's length
 * against out->size. ds_path names the dataset in err's message.
 * @return 0 or -EUCLEAN.
 */
int dlfs_inode_rec_check(const struct dlfs_super_rec *s,
			 const struct dlfs_container *cont, const char *ds_path,
			 uint64_t ino, const void *block, size_t block_len,
			 struct dlfs_inode *out, struct dlfs_err *err);

/*
 * Inode in (decoded by dlfs_inode_rec_check) was reached through the
 * entry name (len bytes) of directory parent: in a dataset with
 * DLFS_FEATURE(PATH_BOUND), its path_hash must be that entry's
 * dlfs_path_hash, so a damaged entry that leads to another intact inode
 * is not followed. Without the feature, every entry passes. @return 0,
 * or -EUCLEAN with err naming the dataset, parent, name and inode.
 */
int dlfs_inode_bound_check(const struct dlfs_super_rec *s,
			   const char *ds_path, uint64_t parent,
			   const char *name, size_t len,
			   const struct dlfs_inode *in, struct dlfs_err *err);

/*
 * A dirents value: the child's inode number and its type (st_mode &
 * S_IFMT). The number is an inode of s other than the root, and the type
 * the one its number gives (dlfs_ino_type). @return 0, or -EUCLEAN when
 * vlen is not 8 or the number or the type is wrong.
 */
int dlfs_dirent_val_decode(const struct dlfs_super_rec *s, const void *val,
			   size_t vlen, uint64_t *ino, uint32_t *type);

/*
 * A dirents entry (key be64(parent) || name, and its value) as readdir
 * hands it out: out's ino, type, name and name_len are set (cookie is
 * the caller's). The name is one dlfs-format(5) allows: 1 to
 * DLFS_NAME_MAX bytes, no '/' or NUL, not "." or "..", so callers may
 * copy it into a NAME_MAX buffer and use it as a path component.
 * @return 0, or -EUCLEAN for any other name or a value that is not 8
 * bytes, or a value dlfs_dirent_val_decode refuses.
 */
int dlfs_dirent_decode(const struct dlfs_super_rec *s, const void *key,
		       size_t klen, const void *val, size_t vlen,
		       struct dlfs_dirent *out);

/*
 * Check the first n bytes of container c's file (hb) as its header
 * against the index: magic, major version (-EPROTONOSUPPORT), header
 * checksum, dataset id, container number, chunk size, data offset and
 * data size (rec, an entry that is not bad). cpath names the file in
 * err's message. @return 0, -EUCLEAN, -EPROTONOSUPPORT.
 */
int dlfs_header_check(const uint8_t *hb, size_t n,
		      const struct dlfs_info *info, uint32_t c,
		      const struct dlfs_container *rec, const char *cpath,
		      struct dlfs_err *err);

/*
 * Check the last n bytes of a container's file (fb) as its footer: its
 * magic, and its footer_xxh3 against the index's record rec. @return 0
 * or -EUCLEAN.
 */
int dlfs_footer_check(const uint8_t *fb, size_t n,
		      const struct dlfs_container *rec, const char *cpath,
		      struct dlfs_err *err);

/*
 * Trailer records (dlfs-format(5) "Trailer"), walked one at a time out of
 * a buffer that may end inside a record.
 */
struct dlfs_trailer_item {
	struct dlfs_trailer_rec rec;
	const uint8_t *path;   /* rec.path_len bytes, inside the buffer */
	const uint8_t *target; /* a symlink's rec.size bytes, else NULL */
	size_t len;            /* bytes the whole record takes */
};

/* A record larger than this is damaged: no path or link target is. */
#define DLFS_TRAILER_REC_MAX (UINT64_C(1) << 20)

/*
 * Decode the record at the start of buf (len bytes). A regular file's
 * record passes only if its bytes lie in the data region of a container
 * with this chunk_size and data_size; a directory's or a symlink's if its
 * offset is 0. @return 0 with *it set; -EAGAIN if buf ends inside the
 * record (it->len is then the bytes it needs, or DLFS_TRAILER_REC_SIZE
 * when even its fixed part is cut); -EUCLEAN for a record that cannot be
 * one (another file type, a bad extent, larger than DLFS_TRAILER_REC_MAX).
 */
int dlfs_trailer_next(const uint8_t *buf, size_t len, uint64_t chunk_size,
		      uint64_t data_size, struct dlfs_trailer_item *it);

/*
 * Walking a whole trailer that arrives in pieces: dlfs_trailer_walk takes
 * the whole records at the start of buf and returns the bytes they take.
 * What is left (less than DLFS_TRAILER_REC_MAX bytes) begins a record cut
 * short: present it again with the bytes that follow. Once a record is
 * damaged, bad is set and every later byte is taken unread. At the end,
 * the trailer is sound if bad is 0, nothing was left over, and n_records
 * equals the footer's.
 */
struct dlfs_trailer_walk {
	uint64_t chunk_size, data_size; /* the container's, for extents */
	uint64_t n_records;             /* records walked so far */
	int bad;                        /* -EUCLEAN: a record is damaged */
};
size_t dlfs_trailer_walk(struct dlfs_trailer_walk *w, const uint8_t *buf,
			 size_t len);

/*
 * The footer f places its trailer between the data region and itself:
 * trailer_offset + trailer_size + DLFS_FOOTER_SIZE == file_size, with no
 * overflow. @return 0 or -EUCLEAN.
 */
int dlfs_trailer_pos_check(const struct dlfs_container_footer *f,
			   uint64_t file_size);

#endif
