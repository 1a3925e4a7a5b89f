#!/bin/bash
# ingest: HDF5 files split by dlfs-pack (tests/lib/h5data.py sources; npy and
# h5 forms) and an LMDB environment, packed and mounted. Through the mount:
# every sample file equals its source row (np.load plain and with
# mmap_mode='r'; h5py), .meta.h5 keeps the rest; a PyTorch Dataset over
# the per-sample files under DataLoader(num_workers=4) gives the same
# tensors as one reading rows of the original HDF5 file, unshuffled and
# shuffled; LMDB values read back byte for byte; the epoch view of epoch 0
# lists every file once and its samples/ hold those files' bytes in that
# order. The daemon logs nothing bad. Skips (77) without h5py, numpy,
# torch or mdb_load.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
H5DATA="$LIB_DIR/h5data.py"
mount_setup
need_py h5py numpy torch
command -v mdb_load >/dev/null || skip "mdb_load not found (package lmdb-utils)"

SRC="$T/src"
tmo "$PYTHON" "$H5DATA" gen "$SRC" || fail "could not write the HDF5 sources"
"$PYTHON" - "$T/dump" <<'PY'
import random, sys
r = random.Random(3)
with open(sys.argv[1], "w") as f:
    f.write("VERSION=3\nformat=bytevalue\ntype=btree\nmapsize=16777216\nHEADER=END\n")
    for i in range(300):
        f.write(" %s\n %s\n" % (("key%04d" % i).encode().hex(), r.randbytes(r.randrange(1, 9000)).hex()))
    f.write("DATA=END\n")
PY
mkdir "$T/env"
mdb_load -f "$T/dump" "$T/env" || fail "mdb_load"

pack --split-hdf5 --split-lmdb "$SRC"/*.h5 "$T/env" -o "$T/npy.dlfs" -q --chunk-size 256K --container-size 4M
expect_ok "pack (npy)"
pack --split-hdf5 --sample-format h5 "$SRC"/*.h5 -o "$T/h5.dlfs" -q --chunk-size 256K --container-size 4M
expect_ok "pack (h5)"
mkdir "$T/m1" "$T/m2"
dlfs_mount "$T/npy.dlfs" "$T/m1" -o ram_cache=8M,seed=9
LOG1=$DLFS_LOG
dlfs_mount "$T/h5.dlfs" "$T/m2" -o ram_cache=8M
LOG2=$DLFS_LOG

note "samples through the mount"
tmo "$PYTHON" "$H5DATA" check "$SRC" "$T/m1" npy || fail "npy samples through the mount differ"
tmo "$PYTHON" "$H5DATA" check "$SRC" "$T/m2" h5 || fail "h5 samples through the mount differ"

note "PyTorch DataLoader, 4 workers"
tmo "$PYTHON" "$HERE/ingest_torch.py" "$SRC/climate_a.h5" "$T/m1/climate_a" "$T/m2/climate_a" ||
	fail "a Dataset over the per-sample files differs from one over the HDF5 rows"

note "LMDB values"
"$PYTHON" - "$T/dump" "$T/m1/env" <<'PY' || fail "LMDB values through the mount differ"
import os, sys
lines = open(sys.argv[1]).read().split("HEADER=END\n")[1].split("DATA=END")[0].split()
bad = 0
for k, v in zip(lines[0::2], lines[1::2]):
    if open(os.path.join(sys.argv[2], bytes.fromhex(k).decode()), "rb").read() != bytes.fromhex(v):
        bad += 1
names = [l.split("\t")[0] for l in open(os.path.join(sys.argv[2], ".keys")).read().splitlines()]
if names != ["key%04d" % i for i in range(300)]:
    bad += 1
print("lmdb: %d keys, %d differences" % (len(lines) // 2, bad), file=sys.stderr)
sys.exit(1 if bad else 0)
PY

note "the epoch view of the samples"
tmo cat "$T/m1/.dlfs/epochs/0/files" >"$T/files0"
(cd "$T/m1" && find . -type f | sed 's|^\./||' | sort) >"$T/all"
if ! sort "$T/files0" | diff - "$T/all" >"$T/files.diff"; then
	head -n 5 "$T/files.diff" >&2
	fail "epochs/0/files is not every file once: $(wc -l <"$T/files0") lines, $(wc -c <"$T/files0") bytes for $(wc -l <"$T/all") files"
fi
cmp -s "$T/files0" <(sort "$T/files0") && fail "epochs/0/files is in name order, not shuffled"
(cd "$T/m1" && tr '\n' '\0' <"$T/files0" | xargs -0 cat) >"$T/by-list"
(cd "$T/m1/.dlfs/epochs/0/samples" && ls | xargs cat) >"$T/by-view"
cmp "$T/by-list" "$T/by-view" || fail "epochs/0/samples/ does not hold the listed files in order"
[ "$(ls "$T/m1/.dlfs/epochs/0/samples" | grep -c '\.npy$')" -ge 1000 ] || fail "samples/ lost the .npy extension"

check_log "$LOG1"
check_log "$LOG2"
dlfs_umount "$T/m1"
dlfs_umount "$T/m2"
check_log "$LOG1"
exit 0
