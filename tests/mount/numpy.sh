#!/bin/bash
# numpy: .npy files of many dtypes and shapes (float32/64, float16,
# int8..int64, uint16, complex64, bool, a structured dtype, unicode, a
# Fortran-order array, 0-d, empty, and one of 1.5 MiB, larger than the 64K
# chunk) and an .npz, packed and mounted: np.load plain and with
# mmap_mode='r' give exactly the source arrays, and mmap.mmap of each file
# gives the source's bytes for random slices, the last partial page and the
# whole file. Skips (77) without numpy.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
mount_setup
need_py numpy

SRC="$T/src"
mkdir -p "$SRC/arrays/sub"
tmo "$PYTHON" - "$SRC/arrays" <<'PY' >"$T/count" || fail "could not generate the .npy files"
import os, sys
import numpy as np
d = sys.argv[1]
rng = np.random.default_rng(7)
arrs = {
    "f32": rng.standard_normal((100, 33), dtype=np.float32),
    "f64": rng.standard_normal(1000),
    "f16": rng.standard_normal((7, 9, 11)).astype(np.float16),
    "i8": rng.integers(-128, 127, size=5000, dtype=np.int8),
    "u16": rng.integers(0, 65535, size=(64, 64), dtype=np.uint16),
    "i32": rng.integers(-2**31, 2**31 - 1, size=(3, 4, 5, 6), dtype=np.int32),
    "i64": rng.integers(-2**62, 2**62, size=777, dtype=np.int64),
    "c64": (rng.standard_normal(300) + 1j * rng.standard_normal(300)).astype(np.complex64),
    "bool": rng.integers(0, 2, size=(50, 50)).astype(bool),
    "fortran": np.asfortranarray(rng.standard_normal((200, 30))),
    "scalar": np.array(3.25),
    "empty": np.zeros((0,), dtype=np.float32),
    "empty2d": np.zeros((5, 0), dtype=np.int16),
    "struct": np.array([(i, i * 0.5, b"name%d" % i) for i in range(500)],
                       dtype=[("id", "<i4"), ("x", "<f8"), ("name", "S10")]),
    "unicode": np.array(["alpha", "βeta", "日本"] * 20),
    "big": rng.standard_normal((1536, 128), dtype=np.float32).astype(np.float64),  # 1.5 MiB
    "sub/nan": np.array([np.nan, np.inf, -np.inf, -0.0, 0.0], dtype=np.float64),
    "sub/odd_len": rng.integers(0, 255, size=4097, dtype=np.uint8),
}
for k, v in arrs.items():
    np.save(os.path.join(d, k + ".npy"), v)
np.savez(os.path.join(d, "bundle.npz"), a=arrs["f32"], b=arrs["i64"], c=arrs["struct"])
np.savez_compressed(os.path.join(d, "bundle_z.npz"), a=arrs["big"], b=arrs["u16"])
print(len(arrs))
PY
DS="$T/ds.dlfs"
pack "$SRC" -o "$DS" --chunk-size 64K --container-size 1M -q
expect_ok "pack"
MNT="$T/mnt"
mkdir "$MNT"
dlfs_mount "$DS" "$MNT" -o ram_cache=1M

tmo "$PYTHON" "$HERE/np_cmp.py" "$SRC" "$MNT" "$(cat "$T/count")" ||
	fail "numpy reads through the mount differ from the source (see above)"

check_log "$DLFS_LOG"
dlfs_umount "$MNT"
check_log "$DLFS_LOG"
exit 0
