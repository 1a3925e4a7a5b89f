#!/bin/bash
# inplace_pack: dlfs-pack --in-place without a mount (issue 41).
#  - the mixed set (pax, GNU, ustar, zip stored and deflated) indexes,
#    verifies and extracts byte for byte as Python extracts it; indexing
#    twice gives a byte-identical dataset;
#  - the archives are named relative to the dataset: the two moved
#    together still verify; the dataset moved alone names the archive it
#    cannot find;
#  - refused, each with a message that says what to do, and no OUT left:
#    a gzip-compressed tar, a directory, a file that is no archive, a
#    sparse tar member, an encrypted zip member, a deflated member larger
#    than a chunk, and options that do not apply (--compress zstd,
#    --order shuffle).
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"

A="$T/p/arc"
mkdir -p "$T/p/out"
tmo_py() { timeout -k 10 300 "$PYTHON" "$@"; }
tmo_py "$LIB_DIR/archives.py" "$A" mixed || fail "test setup: archives"
ARCS=("$A/pax.tar" "$A/gnu.tar" "$A/ustar.tar" "$A/coco.zip")
DS="$T/p/out/mixed.dlfs"
pack --in-place "${ARCS[@]}" -o "$DS" --chunk-size 64K -q
expect_ok "index the mixed set"
inspect verify "$DS"
expect_ok "verify"
inspect extract -q "$DS" "$T/ex"
expect_ok "extract"
diff_trees "$A/want" "$T/ex"
pack --in-place "${ARCS[@]}" -o "$T/p/out/again.dlfs" --chunk-size 64K -q
expect_ok "index again"
cmp "$DS/index" "$T/p/out/again.dlfs/index" && cmp "$DS/index.sum" "$T/p/out/again.dlfs/index.sum" ||
	fail "indexing the same archives twice gave different datasets"

# ---------------------------------------------------------------- paths
mv "$T/p" "$T/q"
inspect verify "$T/q/out/mixed.dlfs"
expect_ok "verify after the dataset and its archives moved together"
mv "$T/q/out/mixed.dlfs" "$T/alone.dlfs"
inspect verify "$T/alone.dlfs"
expect_fail "verify of a dataset moved away from its archives"
err_has "pax.tar: No such file" "the missing archive is named"
mv "$T/alone.dlfs" "$T/q/out/mixed.dlfs"
A="$T/q/arc"

# ---------------------------------------------------------------- refused
# refused WHAT MESSAGE SOURCE... [-- OPTIONS]: the index fails, says
# MESSAGE, and leaves no OUT.
refused() {
	local what=$1 msg=$2
	shift 2
	rm -rf "$T/r.dlfs"
	pack --in-place "$@" -o "$T/r.dlfs" -q
	expect_fail "$what"
	err_has "$msg" "$what"
	[ ! -e "$T/r.dlfs" ] || fail "$what: OUT was left behind"
}
gzip -c "$A/gnu.tar" >"$T/gnu.tar.gz"
refused "a gzip-compressed tar" "gzip-compressed file: --in-place serves uncompressed" "$T/gnu.tar.gz"
refused "a directory" "not a file: --in-place takes tar and zip" "$A"
echo "not an archive" >"$T/text.tar"
refused "a text file" "not an uncompressed tar or a zip" "$T/text.tar"
refused "--compress zstd" "do not apply" "$A/gnu.tar" --compress zstd
refused "--order shuffle" "do not apply" "$A/gnu.tar" --order shuffle
refused "a deflated member over a chunk" "raise --chunk-size" "$A/coco.zip" --chunk-size 4K

# A GNU sparse member ('S'), as GNU tar writes one.
truncate -s 2M "$T/sparse.bin"
printf 'data' | dd of="$T/sparse.bin" bs=1 seek=1000000 conv=notrunc 2>/dev/null
tar --format=gnu -S -cf "$T/sparse.tar" -C "$T" sparse.bin
refused "a sparse member" "sparse member: not served in place" "$T/sparse.tar"

# An encrypted zip member: the flag set in its local and central headers.
tmo_py - "$A/coco.zip" "$T/enc.zip" <<'PY' || fail "test setup: encrypted zip"
import sys
b = bytearray(open(sys.argv[1], "rb").read())
for sig, at in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
    b[b.find(sig) + at] |= 1  # the first member's general-purpose flags
open(sys.argv[2], "wb").write(b)
PY
refused "an encrypted zip member" "encrypted: not served in place" "$T/enc.zip"
exit 0
