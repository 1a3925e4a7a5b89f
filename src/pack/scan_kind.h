/*
 * The kinds of source the packer reads itself, one file each, and the
 * helpers they share (scan_kind.c). pk_scan (scan.h) calls the kind a source
 * was classified as (ingest.h, enum pk_src_kind): a directory
 * (scan_dir.c) or an archive (scan_archive.c). A new kind of source is
 * one more file and one more function here. Not installed. Called from
 * dlfs_pack's thread only.
 *
 * Each kind puts its entries into the tree t as source number src, each
 * path relative to the dataset root and checked (pk_scan_check_names);
 * it stops with -ECANCELED when the options' cancel flag is set.
 */
#ifndef DLFS_PACK_SCAN_KIND_H
#define DLFS_PACK_SCAN_KIND_H

#include <stdint.h>
#include <sys/types.h>

#include "ingest.h"
#include "tree.h"

/* The directory tree under root; the first directory source also gives
 * the root its mode and mtime. @return 0 or a negative errno with err
 * naming the path. */
int pk_scan_dir(struct pk_tree *t, uint32_t src, const char *root,
		const struct dlfs_pack_opts *o, struct dlfs_err *err);

/* The members of the archive at path; their bytes go to the spool file
 * at spool_path, created when the first is met. @return 0 or a negative
 * errno with err naming the archive and the member. */
int pk_scan_archive(struct pk_tree *t, uint32_t src, const char *path,
		    const char *spool_path, const struct dlfs_pack_opts *o,
		    struct dlfs_err *err);

/* Each component of p (n bytes) is at most DLFS_NAME_MAX bytes.
 * @return 0 or -ENAMETOOLONG with err naming where. */
int pk_scan_check_names(const char *p, size_t n, const char *where,
			struct dlfs_err *err);

/*
 * Make sure every ancestor of path exists as a directory, creating implied
 * ones with the given mtime. @return 0, or -EEXIST if an ancestor is not a
 * directory.
 */
int pk_scan_parents(struct pk_tree *t, const char *p, size_t n, uint32_t src,
		    int64_t mtime, struct dlfs_err *err, const char *where);

/*
 * Normalise an archive member name into out (cap bytes): drop leading
 * "./", repeated and trailing slashes and "." components. Refuse
 * absolute names and any ".." component. @return the length, -EPERM
 * (hostile), or -ENAMETOOLONG.
 */
ssize_t pk_scan_normalise(const char *name, char *out, size_t cap);

/* A warning through the options' callback, if any; whole, however long. */
void pk_scan_warn(const struct dlfs_pack_opts *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* What a special file (m) is, for a warning: "fifo", "socket", ... */
const char *pk_scan_special_kind(mode_t m);

#endif
