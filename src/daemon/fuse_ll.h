/*
 * The FUSE low-level adapter: the only module that speaks FUSE. Each op
 * maps one kernel request onto the mount's parts (fs.h): index lookups,
 * the read core (dlfs_read) and the /.dlfs namespace (ctl.h).
 *
 * Ownership: main.c fills a struct dlfs_fs, passes it as the session's
 * userdata, and tears it down after the session loop returns; the ops
 * only borrow it.
 *
 * Thread-safety: ops run on many FUSE worker threads at once; each worker
 * has its own read context (its index transaction and buffers), made on
 * its first request and freed when the thread exits.
 */
#ifndef DLFS_FUSE_LL_H
#define DLFS_FUSE_LL_H

#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>

#include "fs.h"

extern const struct fuse_lowlevel_ops dlfs_ll_ops;

#endif
