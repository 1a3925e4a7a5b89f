#!/bin/bash
# mpi pack: dlfs-pack on 4 ranks (under the launcher of the build's MPI:
# lib/mpilib.sh) over HDF5 files (h5py, chunked+gzip and contiguous,
# several N), an LMDB environment, a directory and a tar (with hard links
# in both) makes the same dataset as one process (--procs 2), byte for
# byte: index, containers, id; dlfs-inspect cat gives the same bytes, two
# mounts of the two datasets read the same tree (diff -r), and the samples
# equal the source rows. The same with --compress zstd, whose mount reads
# the tree of the plain pack's. Each of the 4 ranks writes its own
# containers (seen with strace when installed): the ranks' sets are
# disjoint and together are every container. A corrupt source read by one
# rank fails the whole job, with one message, from rank 0, naming it, and
# nothing is left beside OUT. Skips (77) when dlfs-pack was built without
# MPI or its launcher is missing.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"
mount_setup
. "$LIB_DIR/mpilib.sh"
mpi_require
need_py h5py numpy
command -v mdb_load >/dev/null || skip "mdb_load not found (package lmdb-utils)"
NP=4

SRC="$T/src"
OUT="$T/ds"
mkdir -p "$SRC/dir/sub" "$OUT"
"$PYTHON" - "$SRC" <<'PY' || fail "could not write the sources"
import os, random, sys, tarfile
import h5py, numpy as np
d = sys.argv[1]
rng = np.random.default_rng(8)
for k in range(7):
    n = 40 + 29 * k
    with h5py.File(os.path.join(d, "run%02d.h5" % k), "w") as f:
        kw = dict(chunks=(6, 32, 32), compression="gzip") if k % 2 else {}
        f.create_dataset("images", data=rng.standard_normal((n, 32, 32)).astype(np.float32), **kw)
        f.create_dataset("labels", data=rng.integers(0, 10, (n, 3)))
        f.attrs["run"] = k
r = random.Random(2)
for i in range(30):
    open(os.path.join(d, "dir", "sub" if i % 2 else "", "f%02d.bin" % i), "wb").write(r.randbytes(r.randrange(1, 30000)))
os.makedirs(os.path.join(d, "t"))
for i in range(20):
    open(os.path.join(d, "t", "m%02d.txt" % i), "wb").write(r.randbytes(r.randrange(1, 5000)))
# Hard links, whose bytes another entry holds (spread over containers
# of other ranks): in the directory and in the tar.
for i in range(0, 30, 7):
    os.link(os.path.join(d, "dir", "sub" if i % 2 else "", "f%02d.bin" % i),
            os.path.join(d, "dir", "zlink%02d.bin" % i))
for i in range(0, 20, 6):
    os.link(os.path.join(d, "t", "m%02d.txt" % i), os.path.join(d, "t", "z%02d.txt" % i))
with tarfile.open(os.path.join(d, "t.tar"), "w") as t:
    t.add(os.path.join(d, "t"), arcname="tarred")
with open(os.path.join(d, "dump"), "w") as f:
    f.write("VERSION=3\nformat=bytevalue\ntype=btree\nmapsize=16777216\nHEADER=END\n")
    for i in range(200):
        f.write(" %s\n %s\n" % (("k%03d" % i).encode().hex(), r.randbytes(r.randrange(0, 6000)).hex()))
    f.write("DATA=END\n")
PY
mkdir "$SRC/env"
mdb_load -f "$SRC/dump" "$SRC/env" || fail "mdb_load"
ARGS=(--split-hdf5 --split-lmdb "$SRC"/run*.h5 "$SRC/env" "$SRC/dir" "$SRC/t.tar"
      --chunk-size 64K --container-size 512K -q)

pack "${ARGS[@]}" --procs 2 -o "$OUT/one.dlfs"
expect_ok "pack with one process"
NC=$(ls "$OUT/one.dlfs" | grep -c '\.dlc$')
[ "$NC" -ge 8 ] || fail "expected at least 8 containers, got $NC"

# Each rank under strace (when there is one), to see what it writes.
mpi_traced_pack
st=0
tmo "${MPIRUN[@]}" -np $NP "$T/rank.sh" "${ARGS[@]}" -o "$OUT/mpi.dlfs" >"$T/mpirun.log" 2>&1 || st=$?
[ "$st" = 0 ] || { cat "$T/mpirun.log" >&2; fail "$NP ranks of dlfs-pack exited with $st"; }

note "byte-identical to one process"
[ "$(ls "$OUT/one.dlfs")" = "$(ls "$OUT/mpi.dlfs")" ] || fail "different files: $(ls "$OUT/mpi.dlfs" | tr '\n' ' ')"
for f in $(ls "$OUT/one.dlfs"); do
	cmp "$OUT/one.dlfs/$f" "$OUT/mpi.dlfs/$f" >&2 || fail "$f differs between one process and $NP ranks"
done
inspect verify "$OUT/mpi.dlfs"
expect_ok "verify the MPI pack"
for p in run03/017/images.npy run06/labels.npy env/k123 sub/f07.bin tarred/m05.txt; do
	inspect cat "$OUT/one.dlfs" "$p"
	expect_ok "cat $p (one process)"
	mv "$T/out" "$T/cat1"
	inspect cat "$OUT/mpi.dlfs" "$p"
	expect_ok "cat $p ($NP ranks)"
	cmp "$T/cat1" "$T/out" >&2 || fail "cat $p differs"
done

note "the same tree through two mounts"
mkdir "$T/m1" "$T/m2"
dlfs_mount "$OUT/one.dlfs" "$T/m1"
L1=$DLFS_LOG
dlfs_mount "$OUT/mpi.dlfs" "$T/m2"
L2=$DLFS_LOG
tmo diff -r "$T/m1" "$T/m2" >&2 || fail "the two mounts differ"
for i in 00 07 14 21 28; do
	f=f$i.bin; [ $((10#$i % 2)) = 1 ] && f=sub/$f
	cmp "$SRC/dir/$f" "$T/m2/zlink$i.bin" >&2 || fail "hard link zlink$i.bin: not the bytes of $f"
done
for i in 00 06 12 18; do
	cmp "$SRC/t/m$i.txt" "$T/m2/tarred/z$i.txt" >&2 || fail "hard link tarred/z$i.txt: not the bytes of m$i.txt"
done
tmo "$PYTHON" - "$SRC" "$T/m2" <<'PY' || fail "samples of the MPI pack differ from the source rows"
import glob, os, sys
import h5py, numpy as np
src, m = sys.argv[1:3]
bad = n = 0
for p in sorted(glob.glob(os.path.join(src, "run*.h5"))):
    top = os.path.basename(p)[:-3]
    with h5py.File(p, "r") as f:
        w = len(str(f["images"].shape[0] - 1))
        for i in range(f["images"].shape[0]):
            a = np.load(os.path.join(m, top, "%0*d" % (w, i), "images.npy"))
            b = f["images"][i]
            bad += not (a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes())
            n += 1
        # labels, 24 bytes a sample, stay one array (--split-hdf5-min)
        a, b = np.load(os.path.join(m, top, "labels.npy")), f["labels"][()]
        bad += not (a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes())
print("mpi pack: %d samples, %d differ" % (n, bad), file=sys.stderr)
sys.exit(1 if bad else 0)
PY
check_log "$L1"
check_log "$L2"
dlfs_umount "$T/m1"
dlfs_umount "$T/m2"

if command -v strace >/dev/null; then
	note "each rank writes its own containers"
	all=""
	for ((r = 0; r < NP; r++)); do
		grep -o '[0-9]\{6\}\.dlc", O_WRONLY|O_CREAT|O_EXCL' "$T/trace.$r" | cut -c1-10 | sort -u >"$T/wrote.$r"
		[ -s "$T/wrote.$r" ] || fail "rank $r wrote no container"
		all="$all $(cat "$T/wrote.$r")"
	done
	[ -z "$(echo $all | tr ' ' '\n' | sort | uniq -d)" ] || fail "two ranks wrote the same container:$all"
	[ "$(echo $all | tr ' ' '\n' | sort -u | wc -l)" = "$NC" ] || fail "the ranks did not write every container:$all"
else
	note "strace not installed: which rank writes what is not checked"
fi

note "--compress zstd: $NP ranks make the one process's dataset"
# The chunk records (both checksums, where the stored bytes are) travel
# from the ranks to rank 0, which writes the index.
pack "${ARGS[@]}" --compress zstd --procs 2 -o "$OUT/onez.dlfs"
expect_ok "pack --compress with one process"
st=0
tmo "${MPIRUN[@]}" -np $NP "$DLFS_PACK" "${ARGS[@]}" --compress zstd -o "$OUT/mpiz.dlfs" >"$T/mpirun.log" 2>&1 || st=$?
[ "$st" = 0 ] || { cat "$T/mpirun.log" >&2; fail "$NP ranks of dlfs-pack --compress exited with $st"; }
for f in $(ls "$OUT/onez.dlfs"); do
	cmp "$OUT/onez.dlfs/$f" "$OUT/mpiz.dlfs/$f" >&2 || fail "--compress: $f differs between one process and $NP ranks"
done
inspect verify "$OUT/mpiz.dlfs"
expect_ok "verify the compressed MPI pack"
dlfs_mount "$OUT/one.dlfs" "$T/m1"
dlfs_mount "$OUT/mpiz.dlfs" "$T/m2" -o cache_dir="$T/nvz"
tmo diff -r "$T/m1" "$T/m2" >&2 || fail "the compressed MPI pack's mount differs from the plain one's"
check_log "$DLFS_LOG"
dlfs_umount "$T/m1"
dlfs_umount "$T/m2"
rm -rf "$OUT/onez.dlfs" "$OUT/mpiz.dlfs"

note "a corrupt source on one rank fails the job"
head -c 5000 "$SRC/run05.h5" >"$SRC/zz-cut.h5"
st=0
tmo "${MPIRUN[@]}" -np $NP "$DLFS_PACK" "${ARGS[@]}" "$SRC/zz-cut.h5" -o "$OUT/bad.dlfs" >"$T/mpirun.log" 2>&1 || st=$?
[ "$st" != 0 ] || fail "the job succeeded with a truncated source"
grep -q "^dlfs-pack: .*zz-cut.h5: cannot open as HDF5" "$T/mpirun.log" || { cat "$T/mpirun.log" >&2; fail "no message naming zz-cut.h5"; }
[ "$(grep -c '^dlfs-pack: ' "$T/mpirun.log")" = 1 ] || { cat "$T/mpirun.log" >&2; fail "expected one message, from rank 0"; }
[ "$(ls -A "$OUT" | tr '\n' ' ')" = "mpi.dlfs one.dlfs " ] || fail "left behind: $(ls -A "$OUT")"
exit 0
