/*
 * The archive formats an in-place dataset reads (inplace.h): each walks
 * its archive through a run (inplace_run.h) and gives every member to a
 * callback in archive order. Not installed.
 *
 * Names are given as the archive has them, relative to the archive's
 * root (the callback normalises and checks them); a member of a nested
 * tar has the nested tar's directory in front.
 */
#ifndef DLFS_PACK_INPLACE_FMT_H
#define DLFS_PACK_INPLACE_FMT_H

#include <stdint.h>
#include <string.h>
#include <sys/types.h>

#include "dlfs/pack.h"
#include "inplace_run.h"

struct ip_member {
	const char *name; /* NUL-terminated */
	uint32_t mode;    /* S_IFREG, S_IFDIR or S_IFLNK | permissions */
	int64_t mtime_sec;
	uint32_t mtime_nsec;
	uint64_t size;      /* a regular file's bytes */
	uint64_t loc, xxh3; /* a regular file's place and hash (ip_stored) */
	const char *link;   /* a symlink's target, or a hard link's member */
	int hard;           /* link names an earlier member: same file */
	uint64_t offset;    /* of its header in the archive, for messages */
};

/* s[0..n) appended to out (cap bytes, *len used so far), cut to fit as
 * snprintf would. For the strings made once a member (names, where a
 * member is), where snprintf cost a fifth of indexing a tar of small
 * members. */
static inline void ip_append(char *out, size_t cap, size_t *len, const char *s,
			     size_t n)
{
	if (n > cap - 1 - *len)
		n = cap - 1 - *len;
	memcpy(out + *len, s, n);
	*len += n;
	out[*len] = '\0';
}

typedef int (*ip_put_fn)(void *arg, const struct ip_member *m,
			 struct dlfs_err *err);

/* Does h look like a tar header (its checksum right)? */
int ip_tar_header_ok(const uint8_t h[512]);

/*
 * Every member of the uncompressed tar r reads (ustar, GNU and pax;
 * long names and links; a member named *.tar that is itself a tar
 * becomes a directory named without ".tar", its members inside).
 * Special files are skipped with a warning through o; sparse and
 * multi-volume members are refused. @return 0, or a negative errno with
 * err naming the archive, the member and the offset.
 */
int ip_tar_walk(struct ip_run *r, ip_put_fn put, void *arg,
		const struct dlfs_pack_opts *o, struct dlfs_err *err);

/* Every member of the zip r reads (stored, or deflated up to a chunk),
 * found through its central directory. @return as ip_tar_walk. */
int ip_zip_walk(struct ip_run *r, ip_put_fn put, void *arg,
		const struct dlfs_pack_opts *o, struct dlfs_err *err);

#endif
