#!/bin/bash
# h5py: per-sample HDF5 files like the climate pipeline's, each with a
# float32 "data" array (contiguous, chunked, or chunked+gzip; some larger
# than a dlfs chunk; NaN and inf values included) and an int "label"
# (scalar or int32 mask), packed with 256K chunks and mounted; h5py reads
# every file through the mount, whole and by hyperslab, sequentially and
# from 4 processes in shuffled order, and gets exactly the source values.
# Skips (77) without h5py/numpy.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
mount_setup
need_py h5py numpy

SRC="$T/src"
mkdir -p "$SRC/train" "$SRC/validation"
N=48
tmo "$PYTHON" "$LIB_DIR/h5data.py" samples "$SRC" "$N" || fail "could not generate the HDF5 files"
DS="$T/ds.dlfs"
pack "$SRC" -o "$DS" --chunk-size 256K --container-size 4M -q
expect_ok "pack"
MNT="$T/mnt"
mkdir "$MNT"
dlfs_mount "$DS" "$MNT" -o ram_cache=8M

tmo "$PYTHON" "$HERE/h5_cmp.py" "$SRC" "$MNT" "$N" ||
	fail "h5py reads through the mount differ from the source (see above)"

check_log "$DLFS_LOG"
dlfs_umount "$MNT"
check_log "$DLFS_LOG"
exit 0
