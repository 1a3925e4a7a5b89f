/*
 * dlfs on-disk format, version 1.1 (and 1.0, which it still reads). This
 * header is the public contract that man/dlfs-format.5 describes in
 * prose; keep the two in step.
 *
 * A dataset is a directory NAME.dlfs/ holding:
 *   index         one LMDB environment in a single file (MDB_NOSUBDIR);
 *   index.sum     the index's seal (dlfs_seal_rec; older datasets lack it);
 *   NNNNNN.dlc    containers: header, file bytes, trailer, footer.
 *
 * Every integer on disk is little-endian, except LMDB keys, which are
 * big-endian so that LMDB's byte order is numeric order. Records are read
 * and written through the dlfs_*_encode/decode helpers in format.c, never by
 * casting a pointer into a mapped page, so alignment and host byte order do
 * not matter.
 */
#ifndef DLFS_FORMAT_H
#define DLFS_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#define DLFS_FORMAT_MAJOR 1
#define DLFS_FORMAT_MINOR 1 /* what this dlfs writes; it reads 1.0 too */

#define DLFS_INDEX_NAME "index"
#define DLFS_CONTAINER_SUFFIX ".dlc"
/* Container file names are six decimal digits: 000000.dlc */
#define DLFS_CONTAINER_NAME_MAX 16

#define DLFS_ROOT_INO 1
#define DLFS_NAME_MAX 255
#define DLFS_ID_SIZE 16

/* Named LMDB databases inside the index. */
#define DLFS_DB_META "meta"       /* string key -> value                  */
#define DLFS_DB_INODES "inodes"   /* be64 block -> dlfs_inode_rec[16]    */
/* The inodes database of a dataset with any feature bit set (1.1 and
 * later): a 1.0 reader, which knows no features, then finds no "inodes"
 * and refuses the dataset instead of misreading it (dlfs-format(5)). */
#define DLFS_DB_INODES_F "inodes.f"
#define DLFS_DB_SYMLINKS "symlinks" /* be64 ino -> target bytes            */
#define DLFS_DB_DIRENTS "dirents" /* be64 parent || name -> le64 dirent    */
#define DLFS_DB_CHUNKS "chunks"   /* be32 container || be32 chunk -> rec   */
#define DLFS_DB_CONTAINERS "containers" /* be32 container -> rec           */
/* In-place datasets only: be32 container -> dlfs_archive_rec + path. */
#define DLFS_DB_ARCHIVES "archives"

/* Keys of the meta database. */
#define DLFS_META_SUPER "super"     /* dlfs_super_rec                    */
#define DLFS_META_CREATOR "creator" /* free text, e.g. "dlfs-pack 0.1.0" */
#define DLFS_META_ORDER "order"     /* the --order the dataset was packed with */
#define DLFS_META_COMPRESS "compress" /* the --compress it was packed with */

/*
 * Feature flags (the superblock's features, format 1.1): bit, name as
 * dlfs-format(5) and dlfs-inspect info spell it. A reader refuses a
 * dataset with a bit it does not know. A new feature is one line here.
 */
#define DLFS_FEATURES(X) \
	X(0, PATH_BOUND, "path_bound") \
	X(1, COMPRESSED, "compressed") \
	X(2, IN_PLACE, "in_place")
#define DLFS_FEATURE_ENUM_(bit, id, name) DLFS_FEATURE_BIT_##id = (bit),
enum dlfs_feature_bit { DLFS_FEATURES(DLFS_FEATURE_ENUM_) };
/* The flag of feature id: DLFS_FEATURE(PATH_BOUND). */
#define DLFS_FEATURE(id) (UINT64_C(1) << DLFS_FEATURE_BIT_##id)
#define DLFS_FEATURE_ALL_(bit, id, name) | (UINT64_C(1) << (bit))
#define DLFS_FEATURES_KNOWN (0 DLFS_FEATURES(DLFS_FEATURE_ALL_))

/*
 * Datasets whose chunks are not stored at their logical place, so that
 * each chunk record says where its bytes are (the long chunk record):
 * compressed ones, and in-place ones, whose containers are the user's
 * archives (DLFS_DB_ARCHIVES).
 */
#define DLFS_FEATURES_STORED_APART \
	(DLFS_FEATURE(COMPRESSED) | DLFS_FEATURE(IN_PLACE))
static inline int dlfs_stored_apart(uint64_t features)
{
	return !!(features & DLFS_FEATURES_STORED_APART);
}

/* The name of feature bit (0 to 63), or NULL when this dlfs does not
 * know it. */
const char *dlfs_feature_name(unsigned bit);

/*
 * The superblock. format_major comes first so that any future layout can
 * still be told apart: a reader checks it before anything else. Format
 * 1.0's is DLFS_SUPER_REC_SIZE_10 bytes, without features (0); 1.1 and
 * later minors add features.
 */
struct dlfs_super_rec {
	uint32_t format_major;
	uint32_t format_minor;
	uint8_t dataset_id[DLFS_ID_SIZE];
	uint64_t chunk_size;
	uint64_t container_size; /* soft limit the packer used */
	uint64_t align;
	uint64_t n_inodes;       /* inodes are 1 .. n_inodes, root = 1 */
	uint64_t n_dirs;         /* inodes 1 .. n_dirs are directories */
	uint64_t n_symlinks;     /* then the symlinks */
	uint64_t n_files;        /* then the regular files, in layout order */
	uint64_t first_file_ino; /* = 1 + n_dirs + n_symlinks */
	uint64_t n_containers;
	uint64_t total_file_bytes;
	int64_t max_mtime_sec; /* newest mtime in the tree; the root's default */
	uint64_t features;     /* DLFS_FEATURE() bits; 0 in format 1.0 */
};
#define DLFS_SUPER_REC_SIZE 120
#define DLFS_SUPER_REC_SIZE_10 112
_Static_assert(sizeof(struct dlfs_super_rec) == DLFS_SUPER_REC_SIZE,
	       "dlfs_super_rec layout");

/*
 * An inode. For a regular file, container/offset/size locate its bytes and
 * xxh3 is the XXH3-64 (seed 0) of its content. For a symlink, size is the
 * target length and the target is the value of key be64(ino) in the
 * symlinks database. For a directory, size is its number of entries and
 * the rest is zero.
 *
 * Inodes are stored in blocks of DLFS_INODES_PER_BLOCK records: inode i
 * is record (i - 1) % 16 of the value under key be64((i - 1) / 16). The
 * last block may be short. Blocks keep LMDB's per-entry overhead off each
 * file, so the index stays under 100 bytes per file.
 * loc packs the container number (high 16 bits) and the offset of the
 * file's first byte inside that container file (low 48 bits).
 *
 * With DLFS_FEATURE(PATH_BOUND) a record is DLFS_INODE_REC_SIZE bytes and
 * ends with path_hash (dlfs_path_hash of the one directory entry that
 * names it; 0 for the root), so that a damaged entry that names another
 * intact inode is caught; without it, DLFS_INODE_REC_SIZE_10 bytes and
 * path_hash is 0.
 */
struct dlfs_inode_rec {
	uint32_t mode; /* st_mode: type and permission bits */
	uint32_t mtime_nsec;
	int64_t mtime_sec;
	uint64_t size;
	uint64_t loc;
	uint64_t xxh3;
	uint64_t path_hash;
};
#define DLFS_INODE_REC_SIZE 48
#define DLFS_INODE_REC_SIZE_10 40
_Static_assert(sizeof(struct dlfs_inode_rec) == DLFS_INODE_REC_SIZE,
	       "dlfs_inode_rec layout");

/* Bytes of one inode record, and the inodes database's name, in a
 * dataset with these features. */
static inline size_t dlfs_inode_rec_size(uint64_t features)
{
	return features & DLFS_FEATURE(PATH_BOUND) ? DLFS_INODE_REC_SIZE
						  : DLFS_INODE_REC_SIZE_10;
}
static inline const char *dlfs_inodes_db(uint64_t features)
{
	return features ? DLFS_DB_INODES_F : DLFS_DB_INODES;
}

/* XXH3-64 of the parent's inode number as 8 little-endian bytes, then
 * the name's len bytes: what binds an inode record to its entry. */
uint64_t dlfs_path_hash(uint64_t parent, const char *name, size_t len);
#define DLFS_INODES_PER_BLOCK 16
#define DLFS_LOC_CONTAINER_SHIFT 48
#define DLFS_LOC_OFFSET_MASK ((UINT64_C(1) << 48) - 1)
#define DLFS_MAX_CONTAINERS 65536

/*
 * A directory entry's value: the child's inode number in the low 60 bits
 * and its file type (st_mode >> 12) in the high 4, so readdir can fill
 * d_type without touching the inode.
 */
#define DLFS_DIRENT_TYPE_SHIFT 60
#define DLFS_DIRENT_INO_MASK ((UINT64_C(1) << 60) - 1)

/*
 * A chunk. Its logical bytes are [DLFS_DATA_OFFSET + k * chunk_size,
 * + length) of the container's data stream, in every dataset: a file's
 * loc and the chunk arithmetic never change.
 *
 * Without a stored-apart feature (dlfs_stored_apart: COMPRESSED or
 * IN_PLACE) the record is DLFS_CHUNK_REC_SIZE_10
 * bytes (xxh3, length, a zero u32): the chunk is stored at its logical
 * place, and xxh3 covers those bytes. Decoded, stored_length = length,
 * stored_offset = 0 and flags = 0.
 *
 * With COMPRESSED, the record is DLFS_CHUNK_REC_SIZE bytes: xxh3 covers the
 * stored_length bytes stored at stored_offset of the container file (a
 * multiple of 4096; chunks lie back to back from the data offset, each
 * padded to 4 KiB), checked before they are decompressed. flags bit 0
 * (DLFS_CHUNK_ZSTD): a zstd frame that decompresses to length bytes;
 * without it the chunk is stored raw (stored_length = length, sum =
 * xxh3). sum covers the chunk's length logical (decompressed) bytes:
 * what a decompressed copy (RAM, the NVMe tier, a peer's answer) is
 * checked against. Without the feature, decoded, sum = xxh3.
 *
 * With IN_PLACE (the containers are the user's archives, read where they
 * are), the record is DLFS_CHUNK_REC_SIZE bytes too, and a chunk is a run
 * of whole archive members: its stored bytes are [stored_offset, +
 * stored_length) of the archive, at any offset, member headers between
 * the members included (they are read, checked and never served); length
 * <= chunk_size (a run ends where the next member would not fit), and a
 * member larger than a chunk fills whole chunks, then starts a run of
 * the rest. flags 0: the logical bytes are the stored ones (sum = xxh3);
 * DLFS_CHUNK_DEFLATE: one zip member's raw deflate stream, which inflates
 * to length bytes.
 */
struct dlfs_chunk_rec {
	uint64_t xxh3;
	uint32_t length; /* chunk_size, or less for a container's last chunk */
	uint32_t stored_length;
	uint64_t stored_offset;
	uint32_t flags;
	uint32_t reserved;
	uint64_t sum; /* xxh3 of the logical bytes */
};
#define DLFS_CHUNK_REC_SIZE 40
#define DLFS_CHUNK_REC_SIZE_10 16
#define DLFS_CHUNK_ZSTD 1u
#define DLFS_CHUNK_DEFLATE 2u
/* A deflated member's stored bytes are at most chunk_size + this. */
#define DLFS_DEFLATE_SLACK 65536
#define DLFS_CHUNK_FLAGS_KNOWN (DLFS_CHUNK_ZSTD | DLFS_CHUNK_DEFLATE)
_Static_assert(sizeof(struct dlfs_chunk_rec) == DLFS_CHUNK_REC_SIZE,
	       "dlfs_chunk_rec layout");

/* Bytes of one chunk record in a dataset with these features. */
static inline size_t dlfs_chunk_rec_size(uint64_t features)
{
	return dlfs_stored_apart(features) ? DLFS_CHUNK_REC_SIZE
					   : DLFS_CHUNK_REC_SIZE_10;
}

/*
 * An in-place dataset's container: one of the user's archives, which the
 * index refers to by path (DLFS_DB_ARCHIVES, key be32 container). The
 * record is DLFS_ARCHIVE_REC_SIZE bytes, then path_len bytes of path (no
 * NUL): relative to the dataset directory, unless it starts with '/'.
 * size and mtime are the archive's when it was indexed: a mount refuses
 * an archive that differs. The container's record (dlfs_container_rec)
 * then gives file_size = size, data_size = the logical size of its
 * chunks, and footer_xxh3 = 0 (an archive has no footer).
 */
#define DLFS_ARCHIVE_TAR 1u
#define DLFS_ARCHIVE_ZIP 2u
struct dlfs_archive_rec {
	uint64_t size;
	int64_t mtime_sec;
	uint32_t mtime_nsec;
	uint32_t kind; /* DLFS_ARCHIVE_TAR or DLFS_ARCHIVE_ZIP */
	uint32_t path_len;
	uint32_t reserved;
};
#define DLFS_ARCHIVE_REC_SIZE 32
_Static_assert(sizeof(struct dlfs_archive_rec) == DLFS_ARCHIVE_REC_SIZE,
	       "dlfs_archive_rec layout");
#define DLFS_ARCHIVE_PATH_MAX 4096

/* A container as the index knows it, to catch truncation and swaps. */
struct dlfs_container_rec {
	uint64_t file_size;   /* the whole .dlc file */
	uint64_t data_size;   /* bytes of the data region */
	uint64_t n_chunks;
	uint64_t n_files;
	uint64_t first_ino;   /* files in it are first_ino .. +n_files-1 */
	uint64_t footer_xxh3; /* XXH3-64 of the container's footer */
};
#define DLFS_CONTAINER_REC_SIZE 48
_Static_assert(sizeof(struct dlfs_container_rec) == DLFS_CONTAINER_REC_SIZE,
	       "dlfs_container_rec layout");

/*
 * Container header: the first DLFS_HEADER_SIZE bytes of a .dlc file. The
 * data region starts at DLFS_DATA_OFFSET = one chunk size, so a chunk size
 * that is a multiple of the PFS stripe puts every chunk on stripe
 * boundaries, and every chunk can be read with O_DIRECT. The bytes between
 * the header and the data region are a hole (zeros).
 */
#define DLFS_DATA_OFFSET(chunk_size) ((uint64_t)(chunk_size))
#define DLFS_CONTAINER_MAGIC "DLFSCTR\0"
#define DLFS_FOOTER_MAGIC "DLFSEND\0"
#define DLFS_HEADER_SIZE 4096
struct dlfs_container_header {
	uint8_t magic[8];
	uint32_t format_major;
	uint32_t format_minor;
	uint32_t header_size; /* DLFS_HEADER_SIZE */
	uint32_t container;   /* this file's number */
	uint8_t dataset_id[DLFS_ID_SIZE];
	uint64_t chunk_size;
	uint64_t data_offset; /* = DLFS_DATA_OFFSET(chunk_size) */
	uint64_t data_size;
	uint64_t header_xxh3; /* XXH3-64 of the bytes above */
};
#define DLFS_CONTAINER_HEADER_REC_SIZE 72
_Static_assert(sizeof(struct dlfs_container_header) ==
		       DLFS_CONTAINER_HEADER_REC_SIZE,
	       "dlfs_container_header layout");

/*
 * The trailer follows the data region (at data_offset + data_size rounded
 * up to 4 KiB) and lists every entry placed in this container, so the
 * index can be rebuilt from the containers alone. Container 0 also lists
 * every directory and symlink. Each record is a dlfs_trailer_rec followed
 * by path_len bytes of path (relative to the root, no leading '/') and,
 * for a symlink, size bytes of target.
 */
struct dlfs_trailer_rec {
	uint32_t mode;
	uint32_t mtime_nsec;
	int64_t mtime_sec;
	uint64_t size;
	uint64_t offset; /* inside this container file */
	uint64_t xxh3;
	uint32_t path_len;
	uint32_t reserved;
};
#define DLFS_TRAILER_REC_SIZE 48
_Static_assert(sizeof(struct dlfs_trailer_rec) == DLFS_TRAILER_REC_SIZE,
	       "dlfs_trailer_rec layout");

/* The footer: the last DLFS_FOOTER_SIZE bytes of a .dlc file. */
struct dlfs_container_footer {
	uint8_t magic[8];
	uint8_t dataset_id[DLFS_ID_SIZE];
	uint32_t container;
	uint32_t reserved;
	uint64_t trailer_offset;
	uint64_t trailer_size;
	uint64_t n_records;
	uint64_t trailer_xxh3;
	uint64_t footer_xxh3; /* XXH3-64 of the bytes above */
};
#define DLFS_FOOTER_SIZE 72
_Static_assert(sizeof(struct dlfs_container_footer) == DLFS_FOOTER_SIZE,
	       "dlfs_container_footer layout");

/*
 * The index seal: the file "index.sum" beside the index, written by
 * dlfs-pack once the index is complete. It lets a node check a local copy
 * of the index, made from the PFS or received from a peer, before any
 * use, and names the dataset without a read of the index itself. Datasets
 * packed before it existed have none, and still mount (dlfs(1)).
 */
#define DLFS_SEAL_NAME "index.sum"
#define DLFS_SEAL_MAGIC "DLFSISUM"
struct dlfs_seal_rec {
	uint8_t magic[8];
	uint32_t format_major;
	uint32_t format_minor;
	uint8_t dataset_id[DLFS_ID_SIZE];
	uint64_t index_size;     /* bytes of the index file */
	uint8_t index_xxh128[16]; /* XXH3-128 of them, canonical (big-endian) */
	uint64_t seal_xxh3;      /* XXH3-64 of the bytes above */
};
#define DLFS_SEAL_REC_SIZE 64
_Static_assert(sizeof(struct dlfs_seal_rec) == DLFS_SEAL_REC_SIZE,
	       "dlfs_seal_rec layout");

/* Encoders write exactly the record's size in bytes; decoders read it. */
/* The superblock's size follows its minor version: format_minor 0 writes
 * DLFS_SUPER_REC_SIZE_10 bytes (no features), later ones
 * DLFS_SUPER_REC_SIZE. @return the bytes written. */
size_t dlfs_super_encode(const struct dlfs_super_rec *r, uint8_t *out);
/* Decode the len bytes of a superblock, len >= DLFS_SUPER_REC_SIZE_10.
 * features is read when format_minor is 1 or more. @return 0, or
 * -EUCLEAN when a superblock of that minor cannot be so short. */
int dlfs_super_decode(const uint8_t *in, size_t len, struct dlfs_super_rec *r);
/* Inode records as a dataset with these features stores them
 * (dlfs_inode_rec_size bytes; without path_bound, path_hash is neither
 * written nor read, and decodes as 0). */
void dlfs_inode_encode(const struct dlfs_inode_rec *r, uint64_t features,
		       uint8_t *out);
void dlfs_inode_decode(const uint8_t *in, uint64_t features,
		       struct dlfs_inode_rec *r);
/* Chunk records as a dataset with these features stores them
 * (dlfs_chunk_rec_size bytes). */
void dlfs_chunk_encode(const struct dlfs_chunk_rec *r, uint64_t features,
		       uint8_t *out);
void dlfs_chunk_decode(const uint8_t *in, uint64_t features,
		       struct dlfs_chunk_rec *r);
void dlfs_container_rec_encode(const struct dlfs_container_rec *r,
			       uint8_t *out);
void dlfs_container_rec_decode(const uint8_t *in, struct dlfs_container_rec *r);
/* The fixed part of an archive record (DLFS_ARCHIVE_REC_SIZE bytes); the
 * path follows it. */
void dlfs_archive_rec_encode(const struct dlfs_archive_rec *r, uint8_t *out);
void dlfs_archive_rec_decode(const uint8_t *in, struct dlfs_archive_rec *r);
/* These two also compute (encode) the record's own checksum field. */
void dlfs_header_encode(struct dlfs_container_header *r, uint8_t *out);
void dlfs_header_decode(const uint8_t *in, struct dlfs_container_header *r);
void dlfs_footer_encode(struct dlfs_container_footer *r, uint8_t *out);
void dlfs_footer_decode(const uint8_t *in, struct dlfs_container_footer *r);
void dlfs_seal_encode(struct dlfs_seal_rec *r, uint8_t *out);
void dlfs_seal_decode(const uint8_t *in, struct dlfs_seal_rec *r);
void dlfs_trailer_rec_encode(const struct dlfs_trailer_rec *r, uint8_t *out);
void dlfs_trailer_rec_decode(const uint8_t *in, struct dlfs_trailer_rec *r);

/* Big-endian LMDB keys. */
void dlfs_put_be64(uint8_t *p, uint64_t v);
uint64_t dlfs_get_be64(const uint8_t *p);
void dlfs_put_be32(uint8_t *p, uint32_t v);
uint32_t dlfs_get_be32(const uint8_t *p);
void dlfs_put_le64(uint8_t *p, uint64_t v);
uint64_t dlfs_get_le64(const uint8_t *p);
void dlfs_put_le32(uint8_t *p, uint32_t v);
uint32_t dlfs_get_le32(const uint8_t *p);

/*
 * Parse a size such as "4096", "64K", "4M", "1G", "2T" (binary units, an
 * optional trailing "iB" or "B"), as dlfs-pack's and the daemon's options
 * take them. @return 0 or -EINVAL.
 */
int dlfs_parse_size(const char *s, uint64_t *out);

/*
 * The word of cands (n of them, NULL ones skipped) that word most likely
 * misspells, for the "unknown option: did you mean ...?" line of dlfs's
 * programs: the one at the fewest edits (insert, delete, replace, swap
 * two neighbours), if at most a third of word's length (at least 1, at
 * most 3); ties go to the first. @return it, or NULL when none is that
 * close.
 */
const char *dlfs_closest(const char *word, const char *const *cands,
			 size_t n);

/* Container file name for number n: "%06u.dlc". buf holds at least
 * DLFS_CONTAINER_NAME_MAX bytes. */
void dlfs_container_name(uint32_t n, char *buf);

#endif
