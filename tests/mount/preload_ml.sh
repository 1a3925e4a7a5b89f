#!/bin/bash
# preload_ml: the mount tests' machine-learning clients, through
# libdlfs-preload.so instead of a FUSE mount (preloadlib.sh), byte for
# byte against the source:
#  - numpy: np.load plain and with mmap_mode='r', .npz, mmap.mmap slices
#    (np_cmp.py, numpy.sh's arrays);
#  - h5py: datasets and hyperslabs, sequentially and from 4 processes
#    (h5_cmp.py, h5py.sh's files);
#  - 16 threads of random preads on those files (preads.py), and 256 KiB
#    sequential reads (TensorFlow's pattern, readtree.py);
#  - torchvision ImageFolder + DataLoader(num_workers=4), workers forked
#    (torch_cmp.py, shuffled and not) and spawned (preload_spawn.py).
# One dataset holds all three trees. Skips (77) without numpy, h5py,
# torch, torchvision or PIL.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
. "$LIB_DIR/preloadlib.sh"
preload_setup
need_py numpy h5py torch torchvision PIL

SRC="$T/src"
mkdir -p "$SRC/arrays/sub" "$SRC/h5/train" "$SRC/h5/validation" "$SRC/images"
tmo "$PYTHON" - "$SRC/arrays" <<'PY' >"$T/count" || fail "could not generate the .npy files"
import os, sys
import numpy as np
d = sys.argv[1]
rng = np.random.default_rng(7)
arrs = {
    "f32": rng.standard_normal((100, 33), dtype=np.float32),
    "f64": rng.standard_normal(1000),
    "i8": rng.integers(-128, 127, size=5000, dtype=np.int8),
    "u16": rng.integers(0, 65535, size=(64, 64), dtype=np.uint16),
    "c64": (rng.standard_normal(300) + 1j * rng.standard_normal(300)).astype(np.complex64),
    "fortran": np.asfortranarray(rng.standard_normal((200, 30))),
    "scalar": np.array(3.25),
    "empty": np.zeros((0,), dtype=np.float32),
    "struct": np.array([(i, i * 0.5, b"name%d" % i) for i in range(500)],
                       dtype=[("id", "<i4"), ("x", "<f8"), ("name", "S10")]),
    "big": rng.standard_normal((1536, 128), dtype=np.float32).astype(np.float64),  # 1.5 MiB
    "sub/odd_len": rng.integers(0, 255, size=4097, dtype=np.uint8),
}
for k, v in arrs.items():
    np.save(os.path.join(d, k + ".npy"), v)
np.savez(os.path.join(d, "bundle.npz"), a=arrs["f32"], b=arrs["struct"])
np.savez_compressed(os.path.join(d, "bundle_z.npz"), a=arrs["big"], b=arrs["u16"])
print(len(arrs))
PY
N=24
tmo "$PYTHON" "$LIB_DIR/h5data.py" samples "$SRC/h5" "$N" || fail "could not generate the HDF5 files"
NIMG=400
gentree images "$SRC/images" --count "$NIMG"
DS="$T/ds.dlfs"
pack "$SRC" -o "$DS" --chunk-size 256K --container-size 2M -q
expect_ok "pack"
mkdir "$T/v"
serve "$DS" "$T/v/ds" -o ram_cache=16M
P=$PREFIX

note "numpy"
prun "$PYTHON" "$HERE/np_cmp.py" "$SRC/arrays" "$P/arrays" "$(cat "$T/count")" ||
	fail "numpy reads through the preload differ from the source (see above)"

note "h5py"
prun "$PYTHON" "$HERE/h5_cmp.py" "$SRC/h5" "$P/h5" "$N" ||
	fail "h5py reads through the preload differ from the source (see above)"

note "16 threads of preads; 256 KiB reads"
prun "$PYTHON" "$HERE/preads.py" "$SRC" "$P" "$DS" "$DLFS_INSPECT" --threads 16 --seconds 5 ||
	fail "preads.py through the preload: the bytes differ"
prun "$PYTHON" "$LIB_DIR/readtree.py" "$SRC" "$P" --bs 262144 --seed 3 >/dev/null ||
	fail "readtree.py --bs 256K through the preload: the bytes differ"

note "torchvision ImageFolder + DataLoader(num_workers=4), fork and spawn"
prun "$PYTHON" "$HERE/torch_cmp.py" "$SRC/images" "$P/images" 10 "$NIMG" ||
	fail "ImageFolder/DataLoader (fork) through the preload differs (see above)"
prun "$PYTHON" "$HERE/preload_spawn.py" "$SRC/images" "$P/images" "$NIMG" ||
	fail "ImageFolder/DataLoader (spawn) through the preload differs (see above)"
server_log_clean
