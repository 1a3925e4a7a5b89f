/*
 * The wire between a dlfs server (dlfs DATASET --serve SOCKET, the
 * daemon with this front end instead of FUSE) and the processes that
 * read through libdlfs-preload.so. A Unix stream socket on one host:
 * integers in host order, struct stat as this libc lays it out; both
 * ends are built together, and HELLO refuses any other version.
 *
 * The operations are FUSE's, at inode level, so the server answers them
 * with the same calls the FUSE ops make (the index, the /.dlfs namespace,
 * the read core); the client walks paths itself, one LOOKUP per
 * component it has not seen (a dataset never changes, so it caches them).
 *
 * One request, then one reply, on a connection at a time: a client
 * thread has its own connection. A request is struct dlfs_wire_req, then
 * name_len bytes of name (LOOKUP, GETXATTR). A reply is struct dlfs_wire_rep,
 * then len bytes of payload:
 *
 *   HELLO    version in size      -> payload struct dlfs_wire_hello
 *   LOOKUP   parent in ino, name  -> payload struct dlfs_wire_entry;
 *                                    -ENOENT when there is no such name;
 *                                    the server says in flags what the
 *                                    client may cache of it
 *   GETATTR  ino                  -> payload struct stat
 *   READLINK ino                  -> payload the target, no NUL
 *   READDIR  ino, cookie in off,  -> payload entries (struct
 *            bytes in size           dlfs_wire_dirent, then the name and
 *                                    padding to 8 bytes); count entries;
 *                                    none: the end. "." and ".." are not
 *                                    sent. A cookie resumes after its
 *                                    entry; 0 starts. size is at least
 *                                    DLFS_WIRE_MIN_DIR (else -EINVAL).
 *   READ     ino, off, size       -> payload up to size bytes of the file
 *                                    at off: perhaps fewer, none only at
 *                                    its end (ask again from off + len);
 *                                    a control file's bytes, or a
 *                                    sample's (the file it stands for)
 *   STATFS   -                    -> payload struct statvfs
 *   GETXATTR ino, name, size      -> the value; count is its length
 *                                    (size 0: count only, no payload);
 *                                    -ENODATA, -ERANGE (longer than size)
 *   LISTXATTR ino, size           -> the names, each NUL-ended, as
 *                                    GETXATTR's value
 *   MAP      -                    -> payload struct dlfs_wire_map, and
 *                                    the tiers' three memory files
 *                                    (meta, data, rw of src/node/shared/shm.h)
 *                                    as SCM_RIGHTS; -ENOENT when
 *                                    the server shares none (hello.shm 0)
 *   NVFD     container in ino     -> no payload; a read-only descriptor
 *                                    of its NVMe cache file as
 *                                    SCM_RIGHTS (shm.h); -ENOENT when
 *                                    there is none yet
 *
 * status is 0 or a negative errno; a failed reply has no payload. The
 * count of a failed reply is 0, or, for -EIO, the error behind it when
 * the server knows it: EUCLEAN (a damaged index record or container),
 * EBADMSG (bytes that fail their checksum), or the errno of a failed
 * read; the client's program gets EIO, as from a FUSE mount, and the
 * library says the rest (src/preload/conn.h). size is at most
 * DLFS_WIRE_MAX_IO. A server that cannot parse a request closes the
 * connection; a server that is gone is seen as a connection refused,
 * closed or reset, never as a reply.
 */
#ifndef DLFS_WIRE_H
#define DLFS_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#define DLFS_WIRE_VERSION 3
#define DLFS_WIRE_MAX_IO (1u << 20)  /* bytes of one READ or READDIR */
#define DLFS_WIRE_MAX_NAME 4096u     /* bytes of one name */
/* The least room a READDIR may ask for: one entry of the longest name
 * (255 bytes), so that no entries always means the end. */
#define DLFS_WIRE_MIN_DIR 288u

/* Where dlfs-run tells the library what to serve (PREFIX=SOCKET). */
#define DLFS_WIRE_ENV "DLFS_PRELOAD"

enum dlfs_wire_op {
	DLFS_WIRE_HELLO = 1,
	DLFS_WIRE_LOOKUP = 2,
	DLFS_WIRE_GETATTR = 3,
	DLFS_WIRE_READLINK = 4,
	DLFS_WIRE_READDIR = 5,
	DLFS_WIRE_READ = 6,
	DLFS_WIRE_STATFS = 7,
	DLFS_WIRE_GETXATTR = 8,
	DLFS_WIRE_LISTXATTR = 9,
	DLFS_WIRE_MAP = 10,
	DLFS_WIRE_NVFD = 11,
};

struct dlfs_wire_req {
	uint32_t op;       /* enum dlfs_wire_op */
	uint32_t name_len; /* bytes of name that follow */
	uint64_t ino;
	uint64_t off;
	uint64_t size;
};

struct dlfs_wire_rep {
	int32_t status; /* 0 or -errno */
	uint32_t count; /* READDIR: entries; xattrs: the value's length;
			   -EIO: the errno behind it, or 0 */
	uint64_t len;   /* payload bytes that follow */
};

struct dlfs_wire_hello {
	uint32_t version;
	uint32_t max_io;    /* DLFS_WIRE_MAX_IO of the server */
	uint64_t root_ino;
	struct stat root;   /* the dataset's root directory */
	char ctl_name[256]; /* the control directory's name, NUL-ended */
	uint32_t shm;       /* MAP is offered: reads may skip the server */
	uint32_t pad;
};

/* The sizes of MAP's three files, in their order. */
struct dlfs_wire_map {
	uint64_t size[3];
};

/*
 * A LOOKUP's answer. flags is the server's caching rule for it, the one
 * the client follows (it has no other):
 *   DLFS_WIRE_VOLATILE  the answers about this name change as the run
 *                       goes on (the control directory and everything in
 *                       it): cache neither it nor, for a directory, any
 *                       answer about the names in it, found or not; ask
 *                       its attributes again each time
 */
#define DLFS_WIRE_VOLATILE 1u

struct dlfs_wire_entry {
	uint64_t ino;
	struct stat st;
	uint32_t flags; /* DLFS_WIRE_VOLATILE */
	uint32_t pad;
};

struct dlfs_wire_dirent {
	uint64_t cookie;   /* resumes after this entry */
	uint64_t ino;
	uint32_t mode;     /* type bits, as st_mode */
	uint32_t name_len; /* the name follows, then padding to 8 bytes */
};

/* The bytes a directory entry takes in a READDIR payload. */
static inline uint64_t dlfs_wire_dirent_size(uint32_t name_len)
{
	return (sizeof(struct dlfs_wire_dirent) + name_len + 7) & ~(uint64_t)7;
}

_Static_assert(sizeof(struct dlfs_wire_req) == 32, "request header");
_Static_assert(sizeof(struct dlfs_wire_rep) == 16, "reply header");
_Static_assert(sizeof(struct dlfs_wire_dirent) == 24, "directory entry");
_Static_assert(offsetof(struct dlfs_wire_entry, st) == 8 &&
		       offsetof(struct dlfs_wire_entry, flags) ==
			       8 + sizeof(struct stat),
	       "lookup entry: flags after the stat (version 3)");

#endif
