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
tmo "$PYTHON" - "$SRC" "$N" <<'PY' || fail "could not generate the HDF5 files"
import os, sys
import h5py, numpy as np
root, n = sys.argv[1], int(sys.argv[2])
rng = np.random.default_rng(42)
for i in range(n):
    sub = "train" if i % 4 else "validation"
    shape = (4, 96, 144) if i % 3 else (8, 128, 192)   # 221 KiB or 786 KiB
    data = rng.standard_normal(shape, dtype=np.float32)
    data[0, 0, :3] = [np.nan, np.inf, -np.inf]
    with h5py.File(os.path.join(root, sub, "data-%04d.h5" % i), "w") as f:
        if i % 3 == 0:
            f.create_dataset("data", data=data)
        elif i % 3 == 1:
            f.create_dataset("data", data=data, chunks=(1, 32, 48))
        else:
            f.create_dataset("data", data=data, chunks=(2, 48, 48), compression="gzip", shuffle=True)
        if i % 2:
            f.create_dataset("label", data=np.int64(i % 3))
        else:
            f.create_dataset("label", data=rng.integers(0, 3, size=shape[1:], dtype=np.int32))
        f.attrs["sample"] = i
PY
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
