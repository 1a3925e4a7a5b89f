#!/bin/bash
# kernel_ra: -o kernel_readahead sets the kernel's read-ahead on the mount
# (its /sys/class/bdi/MAJ:MIN/read_ahead_kb), so that a file read whole is
# one FUSE read request, not one per 128 KiB (issue 9: requests per file
# in epoch 2). From the counters, not timings:
#  - by default it is 1024 KiB, and reading each of four files of 200 KiB
#    to 1 MiB whole (Python's f.read(), as loaders do: one read call)
#    costs one FUSE read each (ops.read = 4);
#  - kernel_readahead=256K sets 256, and the same reads cost more than 4;
#  - kernel_readahead=0 leaves the kernel's own value (what a mount with
#    the option reports before our first request: 128 on Linux);
#  - a bad value exits 2 naming the option.
# Needs root (sysfs); skipped otherwise.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"
mount_setup
. "$LIB_DIR/cachelib.sh"
[ "$(id -u)" = 0 ] || skip "needs root to set a bdi's read_ahead_kb"

SRC="$T/src"
mkdir -p "$SRC"
"$PYTHON" - "$SRC" <<'PY'
import os, random, sys
r = random.Random(3)
for i, n in enumerate([200000, 400000, 700000, 1048576]):
    open(os.path.join(sys.argv[1], "f%d" % i), "wb").write(r.randbytes(n))
PY
DS="$T/ds.dlfs"
pack "$SRC" -o "$DS" -q
expect_ok "pack"
MNT="$T/mnt"
mkdir "$MNT"

# ra OPTS: mount with OPTS, read the four files whole, check their bytes;
# sets RA (the bdi's read_ahead_kb) and READS (ops.read).
ra() {
	dlfs_mount "$DS" "$MNT" ${1:+-o "$1"}
	ls "$MNT" >/dev/null
	local dev
	dev=$(mountpoint -d "$MNT")
	RA=$(cat "/sys/class/bdi/$dev/read_ahead_kb")
	tmo "$PYTHON" - "$MNT" "$SRC" <<'PY' || fail "the files read back wrong (${1:-defaults})"
import os, sys
for i in range(4):
    with open(os.path.join(sys.argv[1], "f%d" % i), "rb") as f:
        got = f.read()
    if got != open(os.path.join(sys.argv[2], "f%d" % i), "rb").read():
        sys.exit("f%d differs" % i)
PY
	snap "$MNT" "$T/s.json"
	READS=$(sget "$T/s.json" ops.read)
	dlfs_umount "$MNT"
	note "${1:-defaults}: read_ahead_kb $RA, $READS FUSE reads for 4 files"
}

ra ""
[ "$RA" = 1024 ] || fail "default: read_ahead_kb is $RA, want 1024"
[ "$READS" = 4 ] || fail "default: $READS FUSE reads for 4 files read whole, want 4"
ra kernel_readahead=256K
[ "$RA" = 256 ] || fail "kernel_readahead=256K: read_ahead_kb is $RA, want 256"
[ "$READS" -gt 4 ] || fail "kernel_readahead=256K: $READS FUSE reads, want more than 4 (files up to 1 MiB)"
ra kernel_readahead=0
[ "$RA" -lt 1024 ] || fail "kernel_readahead=0: read_ahead_kb is $RA, the kernel's own should be below 1024"

set +e
out=$("$DLFS" "$DS" "$MNT" -o kernel_readahead=2G 2>&1)
rc=$?
set -e
[ "$rc" = 2 ] || fail "kernel_readahead=2G: exit $rc, want 2"
[[ $out == *"kernel_readahead"* ]] || fail "kernel_readahead=2G: the message does not name the option: $out"
check_log "$DLFS_LOG"
