#!/bin/bash
# h5_errors: bad HDF5 input fails cleanly (exit 1, one line naming the file
# and the dataset, nothing left beside OUT), with every --procs: ragged
# first dimensions among named datasets, a named dataset that is missing
# or a scalar, variable-length strings, references, a filter libhdf5
# cannot decode (h5py's lzf), a truncated file, a file whose compressed
# chunks are damaged, a .h5 that is not HDF5, an HDF5 file given without
# --split-hdf5, two sources that map to one directory; bad options exit 2.
# A failing source among good ones fails the whole pack, forked or not,
# and SIGINT during a forked ingest leaves nothing and no worker behind.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"
"$PYTHON" -c 'import h5py, numpy' 2>/dev/null || skip "needs python3-h5py and python3-numpy"

O="$T/o"
S="$T/s"
mkdir "$O" "$S"
"$PYTHON" - "$S" <<'PY' || fail "could not write the HDF5 sources"
import os, sys
import h5py, numpy as np
d = sys.argv[1]
def p(n): return os.path.join(d, n)
rng = np.random.default_rng(4)
for k in range(4):
    with h5py.File(p("good%d.h5" % k), "w") as f:
        f.create_dataset("images", data=rng.standard_normal((40, 50)).astype(np.float32),
                         chunks=(8, 50), compression="gzip")
        f.create_dataset("labels", data=np.arange(40))
with h5py.File(p("ragged.h5"), "w") as f:
    f["images"] = np.zeros((10, 3)); f["labels"] = np.zeros(9); f["s"] = 1.0
with h5py.File(p("vlen.h5"), "w") as f:
    f["images"] = np.zeros((10, 3))
    f.create_dataset("names", data=["s%d" % i for i in range(10)], dtype=h5py.string_dtype())
with h5py.File(p("refs.h5"), "w") as f:
    f["images"] = np.zeros((10, 3))
    f.create_dataset("refs", (10,), dtype=h5py.ref_dtype)
with h5py.File(p("lzf.h5"), "w") as f:
    f.create_dataset("images", data=np.zeros((10, 30)), compression="lzf")
good = open(p("good0.h5"), "rb").read()
open(p("truncated.h5"), "wb").write(good[:len(good) // 3])
# Damage the middle of the data: the chunks no longer inflate.
b = bytearray(good)
for i in range(len(b) // 2, len(b) // 2 + 3000):
    b[i] ^= 0x5a
open(p("damaged.h5"), "wb").write(bytes(b))
open(p("notes.h5"), "wb").write(b"not HDF5 at all\n" * 100)
os.makedirs(p("other"))
open(p("other/good0.hdf5"), "wb").write(good)
PY

# must_fail LABEL RC ARGS...: exit RC, one 'dlfs-pack: ' line that names
# every NAME given in MSGS (set before), nothing left in $O.
must_fail() {
	local label=$1 rc=$2 m
	shift 2
	pack "$@"
	expect_rc "$rc" "$label"
	for m in "${MSGS[@]}"; do err_has "$m" "$label"; done
	grep -q '^dlfs-pack: ' "$T/err" || { _show; fail "$label: message should start with 'dlfs-pack: '"; }
	assert_empty_dir "$O" "$label: output parent"
}

for procs in 1 3; do
	note "--procs $procs"
	P=(--procs $procs --split-hdf5)
	MSGS=("ragged.h5" "'images' has 10 rows, 'labels' has 9")
	must_fail "ragged" 1 "${P[@]}=images,labels" "$S/good0.h5" "$S/ragged.h5" -o "$O/x.dlfs"
	MSGS=("ragged.h5" "no dataset 'nope'")
	must_fail "missing dataset" 1 "${P[@]}=images,nope" "$S/ragged.h5" -o "$O/x.dlfs"
	MSGS=("ragged.h5" "'s' is a scalar")
	must_fail "scalar dataset" 1 "${P[@]}=s" "$S/ragged.h5" -o "$O/x.dlfs"
	MSGS=("vlen.h5: dataset 'names'" "variable-length string" "--split-hdf5=LIST")
	must_fail "vlen strings" 1 "${P[@]}" "$S/good1.h5" "$S/vlen.h5" -o "$O/x.dlfs"
	MSGS=("refs.h5: dataset 'refs'" "a reference cannot be split")
	must_fail "references" 1 "${P[@]}" "$S/refs.h5" "$S/good2.h5" -o "$O/x.dlfs"
	MSGS=("lzf.h5: dataset 'images'" "filter 32000 (lzf)" "cannot be decoded")
	must_fail "lzf filter" 1 "${P[@]}" "$S/good0.h5" "$S/good1.h5" "$S/lzf.h5" -o "$O/x.dlfs"
	MSGS=("truncated.h5" "truncated")
	must_fail "truncated" 1 "${P[@]}" "$S/good0.h5" "$S/truncated.h5" -o "$O/x.dlfs"
	MSGS=("damaged.h5: dataset 'images': reading rows")
	must_fail "damaged chunks" 1 "${P[@]}" "$S/good0.h5" "$S/good1.h5" "$S/damaged.h5" "$S/good2.h5" -o "$O/x.dlfs"
done
# The other datasets of vlen.h5 split fine when only they are named.
pack --split-hdf5=images "$S/vlen.h5" -o "$O/v.dlfs" -q
expect_ok "vlen.h5 with --split-hdf5=images"
rm -rf "$O/v.dlfs"

MSGS=("notes.h5: not an HDF5 file")
must_fail "not HDF5" 1 --split-hdf5 "$S/notes.h5" -o "$O/x.dlfs"
MSGS=("good0.h5: an HDF5 file; give --split-hdf5")
must_fail "HDF5 without --split-hdf5" 1 "$S/good0.h5" -o "$O/x.dlfs"
MSGS=("would both become the directory 'good0'")
must_fail "one directory for two sources" 1 --split-hdf5 "$S/good0.h5" "$S/other/good0.hdf5" -o "$O/x.dlfs"

note "bad options"
for bad in "--sample-format=png" "--procs=0" "--procs=x" "--split-hdf5=a,,b" "--split-hdf5=,a" "--split-hdf5-min=1x"; do
	pack --split-hdf5 "$bad" "$S/good0.h5" -o "$O/x.dlfs"
	expect_rc 2 "$bad"
	err_has "${bad%%=*}" "$bad: the message names the option"
	assert_empty_dir "$O" "$bad"
done

note "SIGINT while forked workers ingest"
"$PYTHON" - "$T/slow" <<'PY'
import os, sys
import h5py, numpy as np
os.makedirs(sys.argv[1])
rng = np.random.default_rng(1)
for k in range(6):
    with h5py.File(os.path.join(sys.argv[1], "s%d.h5" % k), "w") as f:
        f.create_dataset("x", data=rng.standard_normal((2000, 1024)).astype(np.float32),
                         chunks=(16, 1024), compression="gzip", compression_opts=1)
PY
"$DLFS_PACK" --procs 3 --split-hdf5 "$T"/slow/*.h5 -o "$O/x.dlfs" -q 2>"$T/sigint.err" &
PK=$!
for _ in $(seq 100); do
	[ -n "$(pgrep -P $PK)" ] && break
	sleep 0.05
done
KIDS=$(pgrep -P $PK | tr '\n' ' ')
[ -n "$KIDS" ] || fail "no ingest workers were forked"
kill -INT $PK
wait_exit $PK 60
[ "$WAIT_RC" = 1 ] || fail "dlfs-pack exited with $WAIT_RC after SIGINT, expected 1: $(cat "$T/sigint.err")"
grep -q "interrupted" "$T/sigint.err" || fail "no 'interrupted' message: $(cat "$T/sigint.err")"
for k in $KIDS; do
	! kill -0 "$k" 2>/dev/null || fail "ingest worker $k outlived dlfs-pack"
done
assert_empty_dir "$O" "after SIGINT"
exit 0
