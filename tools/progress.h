/*
 * What the progress lines of dlfs-pack and dlfs-inspect (extract) share:
 * a monotonic clock in seconds and sizes in binary units. No state;
 * thread-safe.
 */
#ifndef DLFS_TOOLS_PROGRESS_H
#define DLFS_TOOLS_PROGRESS_H

#include <stddef.h>

/* CLOCK_MONOTONIC, in seconds. */
double dlfs_progress_now(void);

/* v bytes as "512 B", "1.5 KiB" ... "2.0 PiB" into buf (len bytes). */
void dlfs_progress_size(double v, char *buf, size_t len);

#endif
