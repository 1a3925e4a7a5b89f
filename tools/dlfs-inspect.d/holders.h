/*
 * dlfs-inspect holders MOUNTPOINT: the processes that keep a mount busy,
 * from /proc (no request reaches the mount), and the command that detaches
 * it. Single-threaded; no state outside the call.
 */
#ifndef DLFS_INSPECT_HOLDERS_H
#define DLFS_INSPECT_HOLDERS_H

/* argv[0] is "holders". @return the exit status: 0 (listed, or nobody
 * holds it), 1 (nothing mounted there), 2 (bad arguments). */
int dlfs_live_holders(int argc, char **argv);

#endif
