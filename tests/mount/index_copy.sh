#!/bin/bash
# index_copy: alone, with cache_dir, the index is mapped from a local copy
# checked against the dataset's seal (index.sum), not from the PFS
# (issue 24). From counters and /proc/PID/maps, not timings:
#  - the first mount copies it: index.source "copied", index.pfs_bytes =
#    the index's size, the copy in CACHE/<id>/index (0600), and the
#    daemon does not map the PFS's index;
#  - a second mount reads 0 index bytes from the PFS (source "local");
#  - a copy damaged on disk is found out, named in a warning, and copied
#    again; the tree reads right;
#  - without cache_dir, the PFS's index is mapped, as before;
#  - an unsealed dataset (index.sum removed) mounts, mapped from the PFS;
#  - a damaged seal costs a warning and a mount from the PFS's index,
#    never the mount;
#  - a PFS index that does not match its seal: the same.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"
mount_setup

SRC="$T/src"
"$PYTHON" - "$SRC" <<'PY'
import os, random, sys
r = random.Random(7)
for k in range(20):
    p = os.path.join(sys.argv[1], "d%02d" % k)
    os.makedirs(p)
    for i in range(50):
        open(os.path.join(p, "f%03d" % i), "wb").write(r.randbytes(r.randrange(1, 2000)))
PY
DS="$T/ds.dlfs"
pack "$SRC" -o "$DS" -q
expect_ok "pack"
[ "$(stat -c %s "$DS/index.sum")" = 64 ] || fail "index.sum is not a 64-byte seal"
IXB=$(stat -c %s "$DS/index")
NV="$T/nv"
MNT="$T/mnt"
mkdir "$MNT"

ix() { # KEY: /.dlfs/stats index.KEY of the mount
	"$PYTHON" -c 'import json, sys; print(json.load(open(sys.argv[1]))["index"][sys.argv[2]])' "$MNT/.dlfs/stats" "$1"
}
maps_pfs_index() { grep -qF "$DS/index" "/proc/$DLFS_PID/maps"; }

note "first mount: copied"
dlfs_mount "$DS" "$MNT" -o "cache_dir=$NV"
[ "$(ix source)" = copied ] || fail "first mount: index.source $(ix source), want copied"
[ "$(ix pfs_bytes)" = "$IXB" ] || fail "first mount: index.pfs_bytes $(ix pfs_bytes), want $IXB"
[ "$(ix sealed)" = 1 ] || fail "first mount: not sealed"
! maps_pfs_index || fail "first mount: the daemon maps the PFS's index"
CP=$(ls "$NV"/*/index)
[ "$(stat -c %a "$CP")" = 600 ] || fail "the copy $CP is not 0600"
cmp "$CP" "$DS/index" || fail "the copy differs from the index"
tmo diff -r "$SRC" "$MNT" >&2 || fail "first mount reads another tree"
dlfs_umount "$MNT"
check_log "$DLFS_LOG"

note "second mount: local, no index bytes from the PFS"
dlfs_mount "$DS" "$MNT" -o "cache_dir=$NV"
[ "$(ix source)" = local ] || fail "second mount: index.source $(ix source), want local"
[ "$(ix pfs_bytes)" = 0 ] || fail "second mount: $(ix pfs_bytes) index bytes from the PFS"
! maps_pfs_index || fail "second mount: the daemon maps the PFS's index"
dlfs_umount "$MNT"
check_log "$DLFS_LOG"

note "a damaged copy: found out and copied again"
printf 'damage' | dd of="$CP" bs=1 seek=$((IXB / 2)) conv=notrunc 2>/dev/null
dlfs_mount "$DS" "$MNT" -o "cache_dir=$NV"
[ "$(ix source)" = copied ] || fail "damaged copy: index.source $(ix source), want copied"
grep -q "warning: the index's local copy failed its check: $CP" "$DLFS_LOG" ||
	fail "no warning naming the damaged copy: $(cat "$DLFS_LOG")"
cmp "$CP" "$DS/index" || fail "the copy was not made again"
tmo diff -r "$SRC" "$MNT" >&2 || fail "reads another tree after a damaged copy"
dlfs_umount "$MNT"
check_log "$DLFS_LOG" "local copy failed its check"

note "no cache_dir: the PFS's index"
dlfs_mount "$DS" "$MNT"
[ "$(ix source)" = pfs ] || fail "without cache_dir: index.source $(ix source)"
maps_pfs_index || fail "without cache_dir: the PFS's index is not mapped"
dlfs_umount "$MNT"

note "a damaged seal: a warning, mapped from the PFS"
rm -rf "$NV"
cp "$DS/index.sum" "$T/seal.good"
"$PYTHON" - "$DS/index.sum" <<'PY'
import sys
p = sys.argv[1]
b = bytearray(open(p, "rb").read())
b[40] ^= 0xff                  # a byte of the index's XXH3-128
open(p, "wb").write(bytes(b))  # and the seal's own checksum no longer holds
PY
dlfs_mount "$DS" "$MNT" -o "cache_dir=$NV"
[ "$(ix source)" = pfs ] || fail "damaged seal: index.source $(ix source), want pfs"
grep -q "warning: the index's seal: .*index.sum: not a dlfs index seal, or damaged" "$DLFS_LOG" ||
	fail "no warning about the damaged seal: $(cat "$DLFS_LOG")"
tmo diff -r "$SRC" "$MNT" >&2 || fail "reads another tree with a damaged seal"
dlfs_umount "$MNT"

note "a PFS index that does not match its seal: a warning, mapped from the PFS"
cp "$T/seal.good" "$DS/index.sum"
cp "$DS/index" "$T/index.good"
# A byte of the last page, where LMDB keeps nothing the lookups need
# (the index still opens; only the seal can tell).
printf 'X' | dd of="$DS/index" bs=1 seek=$((IXB - 1)) conv=notrunc 2>/dev/null
dlfs_mount "$DS" "$MNT" -o "cache_dir=$NV"
[ "$(ix source)" = pfs ] || fail "index off its seal: index.source $(ix source), want pfs"
grep -q "warning: the index was not copied to cache_dir: .*do not match the index's seal" "$DLFS_LOG" ||
	fail "no warning about the index off its seal: $(cat "$DLFS_LOG")"
dlfs_umount "$MNT"
cp "$T/index.good" "$DS/index"

note "an unsealed dataset: mounts, mapped from the PFS"
rm "$DS/index.sum"
dlfs_mount "$DS" "$MNT" -o "cache_dir=$NV"
[ "$(ix source)" = pfs ] && [ "$(ix sealed)" = 0 ] || fail "unsealed: index.source $(ix source), sealed $(ix sealed)"
tmo diff -r "$SRC" "$MNT" >&2 || fail "an unsealed dataset reads another tree"
dlfs_umount "$MNT"
check_log "$DLFS_LOG"
