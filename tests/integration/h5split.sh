#!/bin/bash
# h5split: HDF5 sources written by h5py (tests/lib/h5data.py: several datasets,
# chunked + gzip + shuffle, szip where libhdf5 has it, contiguous, labels
# of shape (N,) and (N,k), bool, complex, compound, big-endian, fixed
# strings, attributes, a group, a soft link, a dataset kept whole; N = 37,
# 1000 and 0; one source read in several 64 MiB blocks) packed with
# --split-hdf5, in both forms:
# - every sample file equals its source row (np.load plain and with
#   mmap_mode='r'; h5py for the h5 form), dtype, shape and attributes
#   included, and each .meta.h5 keeps attributes, groups, the link, the
#   dataset kept whole and placeholders of the split ones;
# - the tree is exactly the expected names, zero-padded to the width of
#   N - 1, and dlfs-inspect ls lists them in sample order; stat and cat
#   agree with the extracted files; verify passes;
# - the samples are compressed with zstd by default (info says zstd:3);
#   --compress none packs the same samples uncompressed;
# - --dry-run lists exactly the files and sizes the pack writes;
# - --procs 1, 2 and 3 and a repeated run give byte-identical datasets;
#   a source's mtime is part of the dataset (its id changes with it);
# - by default (npy form), a dataset whose samples are under 1 KiB stays one
#   array, TOP/NAME.npy, equal to the source's dataset, and the pack says
#   so; --split-hdf5-min 0 splits them all (issue 39, item 10);
# - --split-hdf5=images,labels splits only those two;
# - an HDF5 file inside a directory source stays one file, unchanged;
# - --order shuffle:5 stores the same tree.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"
H5DATA="$LIB_DIR/h5data.py"
need_h5() { "$PYTHON" -c 'import h5py, numpy' 2>/dev/null || skip "needs python3-h5py and python3-numpy"; }
need_h5

SRC="$T/src"
"$PYTHON" "$H5DATA" gen "$SRC" --big || fail "could not write the HDF5 sources"
mkdir "$T/ds"

# check_form FORM DATASET [MIN]: the extracted tree is right for FORM, with
# samples under MIN bytes kept whole (default 1024, as dlfs-pack's).
check_form() {
	local form=$1 ds=$2 x="$T/x-$1" min=${3:-1024}
	rm -rf "$x"
	inspect verify "$ds"
	expect_ok "verify $ds"
	inspect extract "$ds" "$x"
	expect_ok "extract $ds"
	"$PYTHON" "$H5DATA" check "$SRC" "$x" "$form" --min "$min" ||
		fail "$form samples differ from the source rows (see above)"
	"$PYTHON" "$H5DATA" expect "$SRC" "$form" --min "$min" | sort >"$T/want"
	(cd "$x" && find . -type f | sed 's|^\./||' | sort) >"$T/got"
	diff "$T/want" "$T/got" >&2 || fail "$form: the tree is not the expected files"
}

note "npy form (the default), compressed with zstd (the default)"
pack --split-hdf5 "$SRC"/*.h5 -o "$T/ds/npy.dlfs" --chunk-size 1M --container-size 16M
expect_ok "pack --split-hdf5"
err_has "dlfs-pack: $SRC/climate_b.h5: 1000 samples; split: images (6, 6) '<u2' [contiguous]; one file for all samples: labels.npy (4 bytes a sample), weights.npy (2 bytes a sample) (--split-hdf5-min=0 splits them)" \
	"the pack says which datasets stay one file"
check_form npy "$T/ds/npy.dlfs"
inspect info "$T/ds/npy.dlfs"
expect_ok "info of the npy form"
grep -qx "compress: zstd:3" "$T/out" || { _show; fail "--split-hdf5 packs with zstd by default"; }

note "--compress none, --split-hdf5-min 0: every dataset split, uncompressed"
pack --split-hdf5 --split-hdf5-min 0 --compress none "$SRC"/*.h5 -o "$T/ds/npy-u.dlfs" -q --chunk-size 1M --container-size 16M
expect_ok "pack --split-hdf5 --compress none"
inspect info "$T/ds/npy-u.dlfs"
expect_ok "info of the uncompressed npy form"
! grep -q "^compress:" "$T/out" || { _show; fail "--compress none packs uncompressed"; }
check_form npy "$T/ds/npy-u.dlfs" 0
inspect ls "$T/ds/npy-u.dlfs" climate_a/05
expect_ok "ls climate_a/05"
grep -qx 'images.npy' "$T/out" && grep -qx 'labels.npy' "$T/out" && grep -qx 'grp' "$T/out" ||
	fail "with --split-hdf5-min 0, climate_a/05 should hold images.npy, labels.npy and grp/"
rm -rf "$T/ds/npy-u.dlfs" "$T/x-npy"
check_form npy "$T/ds/npy.dlfs"

note "names sort in sample order; stat and cat"
inspect ls "$T/ds/npy.dlfs" climate_b
expect_ok "ls climate_b"
[ "$(sed -n '2p;1001p' "$T/out" | tr '\n' ' ')" = "000 999 " ] ||
	fail "climate_b: expected .meta.h5 then 000..999, got: $(head -3 "$T/out" | tr '\n' ' ')"
seq -f '%03g' 0 999 | cmp - <(sed -n '2,1001p' "$T/out") >&2 || fail "climate_b: samples not listed 000 to 999 in order"
[ "$(tail -n +1002 "$T/out" | tr '\n' ' ')" = "labels.npy weights.npy " ] ||
	fail "climate_b: labels.npy and weights.npy (tiny samples) should follow the samples, got: $(tail -n +1002 "$T/out" | tr '\n' ' ')"
inspect ls "$T/ds/npy.dlfs" climate_a/05
expect_ok "ls climate_a/05"
[ "$(cat "$T/out")" = "images.npy" ] || fail "climate_a/05 should hold images.npy alone, got: $(cat "$T/out" | tr '\n' ' ')"
inspect stat --json "$T/ds/npy.dlfs" climate_a/grp/ids.npy
expect_ok "stat"
[ "$(json_get "$T/out" size)" = "$(stat -c %s "$T/x-npy/climate_a/grp/ids.npy")" ] || fail "stat size"
inspect cat "$T/ds/npy.dlfs" climate_a/36/images.npy
expect_ok "cat"
cmp "$T/out" "$T/x-npy/climate_a/36/images.npy" || fail "cat differs from the extracted file"
inspect ls "$T/ds/npy.dlfs" empty
expect_ok "ls empty"
[ "$(cat "$T/out")" = ".meta.h5" ] || fail "empty.h5 (N = 0) should give only .meta.h5, got: $(cat "$T/out")"

note "--dry-run lists what the pack writes"
pack --dry-run --split-hdf5 "$SRC"/*.h5
expect_ok "dry run"
grep -q '^# .*climate_a.h5: 37 samples; split:' "$T/out" || { _show; fail "dry run: no summary of climate_a.h5"; }
grep -v '^#' "$T/out" | awk '{print $2, $1}' | sort >"$T/plan"
(cd "$T/x-npy" && find . -type f -printf '%P %s\n' | sort) >"$T/real"
diff "$T/plan" "$T/real" >&2 || fail "--dry-run does not list the files and sizes the pack wrote"
assert_absent "$T/ds/dry.dlfs" "dry run output"

note "h5 form"
pack --split-hdf5 --sample-format h5 "$SRC"/climate_*.h5 "$SRC"/empty.h5 -o "$T/ds/h5.dlfs" -q
expect_ok "pack --sample-format h5"
mv "$SRC/big.h5" "$T/big.h5"
check_form h5 "$T/ds/h5.dlfs"
pack --dry-run --split-hdf5 --sample-format h5 "$SRC"/*.h5
expect_ok "dry run h5"
grep -v '^#' "$T/out" | awk '{print $2, $1}' | sort >"$T/plan"
(cd "$T/x-h5" && find . -type f -printf '%P %s\n' | sort) >"$T/real"
diff "$T/plan" "$T/real" >&2 || fail "--dry-run (h5) does not list the files and sizes the pack wrote"

note "the same bytes with any number of processes, and twice"
OPTS=(--split-hdf5 --sample-format h5 -q --chunk-size 64K --container-size 512K)
same() {
	local f
	for f in $(ls -A "$1"); do cmp "$1/$f" "$2/$f" >&2 || fail "$3: $f differs"; done
	[ "$(ls -A "$1")" = "$(ls -A "$2")" ] || fail "$3: different files"
}
for p in 1 2 3; do
	pack "${OPTS[@]}" --procs $p "$SRC"/*.h5 -o "$T/ds/p$p.dlfs"
	expect_ok "pack --procs $p"
done
[ "$(ls "$T/ds/p1.dlfs" | grep -c 'dlc$')" -ge 3 ] || fail "expected several containers"
same "$T/ds/p1.dlfs" "$T/ds/p2.dlfs" "--procs 1 vs 2"
same "$T/ds/p1.dlfs" "$T/ds/p3.dlfs" "--procs 1 vs 3"
id_of() { inspect info --json "$1"; expect_ok "info"; cp "$T/out" "$T/i.json"; json_get "$T/i.json" dataset_id; }
ID=$(id_of "$T/ds/p1.dlfs")
touch -d '2001-02-03 04:05:06' "$SRC/climate_b.h5"
pack "${OPTS[@]}" "$SRC"/*.h5 -o "$T/ds/touched.dlfs"
expect_ok "pack after touch"
[ "$(id_of "$T/ds/touched.dlfs")" != "$ID" ] || fail "the dataset id ignores a source's mtime"
inspect stat --json "$T/ds/touched.dlfs" climate_b/123.h5
expect_ok "stat"
[ "$(json_get "$T/out" mtime)" = "$(date -d '2001-02-03 04:05:06' +%s).000000000" ] ||
	fail "samples should carry the source's mtime: $(cat "$T/out")"

note "named datasets"
pack --split-hdf5=/images,labels "$SRC"/climate_a.h5 -o "$T/ds/named.dlfs" -q
expect_ok "pack --split-hdf5=images,labels"
inspect extract "$T/ds/named.dlfs" "$T/x-named"
expect_ok "extract named"
mkdir "$T/src-a" && cp "$SRC/climate_a.h5" "$T/src-a/"
"$PYTHON" "$H5DATA" check "$T/src-a" "$T/x-named" npy --only images,labels ||
	fail "--split-hdf5=images,labels: samples differ"
[ "$(ls "$T/x-named/climate_a/12")" = "images.npy
labels.npy" ] || fail "--split-hdf5=images,labels: sample 12 holds $(ls "$T/x-named/climate_a/12")"

note "inside a directory source, an HDF5 file stays whole, with a warning"
mkdir -p "$T/dir/sub" && cp "$SRC/climate_a.h5" "$T/dir/" && cp "$SRC/climate_b.h5" "$T/dir/sub/"
echo "not hdf5" >"$T/dir/sub/fake.h5"
pack --split-hdf5 "$T/dir" -o "$T/ds/whole.dlfs" -q
expect_ok "pack a directory with --split-hdf5"
err_has "dlfs-pack: warning: $T/dir holds 2 HDF5 files (first: $T/dir/climate_a.h5), packed whole: --split-hdf5 splits the HDF5 files given as sources, not those inside a directory source" \
	"the warning about HDF5 files packed whole (issue 23, item 6)"
[ "$(grep -c warning "$T/err")" = 1 ] || { _show; fail "expected one warning for the directory"; }
inspect cat "$T/ds/whole.dlfs" climate_a.h5
expect_ok "cat climate_a.h5"
cmp "$T/out" "$SRC/climate_a.h5" || fail "an HDF5 file in a directory source changed"
pack "$T/dir" -o "$T/ds/whole2.dlfs" -q
expect_ok "pack a directory without --split-hdf5"
! grep -q warning "$T/err" || { _show; fail "a warning about HDF5 files without --split-hdf5"; }

note "--order shuffle keeps the tree"
pack --split-hdf5 --order shuffle:5 "$SRC"/climate_*.h5 -o "$T/ds/shuf.dlfs" -q
expect_ok "pack --order shuffle:5"
inspect extract "$T/ds/shuf.dlfs" "$T/x-shuf"
expect_ok "extract shuffled"
mv "$T/big.h5" "$SRC/big.h5.off"
rm "$SRC/empty.h5"
"$PYTHON" "$H5DATA" check "$SRC" "$T/x-shuf" npy || fail "--order shuffle:5: samples differ"
exit 0
