/*
 * Where dlfs's programs find each other: the dlfs daemon and
 * libdlfs-preload.so, first from an environment variable, then in a
 * build tree, then installed beside the program (a staged install too),
 * then where meson installed them. Shared by dlfs-run and dlfs-inspect
 * (top --socket). No state; thread-safe.
 */
#ifndef DLFS_TOOLS_PARTS_H
#define DLFS_TOOLS_PARTS_H

#include <stddef.h>

/* The dlfs daemon: $DLFS_DAEMON, else as above. @return 0 with buf set,
 * or -1. */
int dlfs_part_daemon(char *buf, size_t len);

/* libdlfs-preload.so: $DLFS_PRELOAD_LIB, else as above. @return 0 with
 * buf set, or -1. */
int dlfs_part_preload(char *buf, size_t len);

#endif
