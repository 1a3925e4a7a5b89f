#!/bin/bash
# bigfile: a 3 GiB + 7 byte file (a deterministic pattern in which every
# 4 KiB page carries its own offset, so a read from the wrong place shows),
# packed with 4 MiB chunks and mounted: st_size is right; preads around 0,
# 2^31, 2^32 - 1, 2^32, chunk boundaries, end - 1, end, and past the end
# return the source's bytes (and nothing past EOF); cmp of the whole file
# with the source finds no difference. Needs 10 GiB free (else exit 77).
set -euo pipefail
: "${DLFS_CMD_TIMEOUT:=300}"
. "$(dirname "$0")/../lib/lib.sh"
mount_setup

AVAIL=$(df -B1 --output=avail "$T" | tail -n 1 | tr -d ' ')
[ "$AVAIL" -ge $((10 << 30)) ] || skip "needs 10 GiB free in $T, has $((AVAIL >> 20)) MiB"

SIZE=$(((3 << 30) + 7))
SRC="$T/src"
mkdir "$SRC"
note "writing a $SIZE byte file"
tmo "$PYTHON" - "$SRC" "$SIZE" <<'PY' || fail "could not write the source file"
import os, random, struct, sys
d, size = sys.argv[1], int(sys.argv[2])
open(os.path.join(d, "a-small.txt"), "wb").write(b"before the big file\n")
base = random.Random(3).randbytes((4 << 20) + 8192)
B = 4 << 20
with open(os.path.join(d, "big.bin"), "wb") as f:
    off = 0
    while off < size:
        blk = bytearray(base[(off // B) % 4096:][:B])
        for p in range(0, B, 4096):
            struct.pack_into("<QQ", blk, p, off + p, (off + p) ^ 0x5DEECE66D)
        n = min(B, size - off)
        f.write(blk if n == B else blk[:n])
        off += n
open(os.path.join(d, "z-small.txt"), "wb").write(b"after the big file\n")
PY
DS="$T/ds.dlfs"
note "packing"
DLFS_TEST_TIMEOUT=600 pack "$SRC" -o "$DS" --chunk-size 4M -q
expect_ok "pack"
MNT="$T/mnt"
mkdir "$MNT"
dlfs_mount "$DS" "$MNT" -o ram_cache=64M

[ "$(stat -c %s "$MNT/big.bin")" = "$SIZE" ] || fail "st_size of big.bin is $(stat -c %s "$MNT/big.bin"), expected $SIZE"

note "preads at the edges"
tmo "$PYTHON" - "$SRC/big.bin" "$MNT/big.bin" <<'PY' || fail "preads of the big file differ from the source"
import os, sys
a = os.open(sys.argv[1], os.O_RDONLY)
b = os.open(sys.argv[2], os.O_RDONLY)
size = os.fstat(a).st_size
C = 4 << 20
cases = [(0, 1), (0, 4096), (0, C + 1), (1, 100), (C - 1, 2), (C - 10, 8 << 20),
         (2**31 - 1, 1), (2**31 - 5, 10), (2**31, 1), (2**31, C), (2**31 - C, 2 * C + 3),
         (2**32 - 1, 1), (2**32 - 1, 10), (2**32 - 3, C), (2**32, 4096), (2**32 + 1, 1),
         (3 * 2**30 - 1, 4), (size - C - 1, C + 1), (size - 1, 1), (size - 1, 100), (size - 7, 7),
         (size - 8, 4096), (size, 1), (size, C), (size + 1, 10), (size + 2**33, 10), (2**40, 1)]
bad = 0
for off, ln in cases:
    want = os.pread(a, ln, off)
    got = os.pread(b, ln, off)
    if got != want:
        print("  pread(off=%d, len=%d): %d bytes, expected %d%s" % (off, ln, len(got), len(want),
              "" if len(got) != len(want) else " (content differs)"), file=sys.stderr)
        bad = 1
    exp_len = max(0, min(ln, size - off))
    if len(want) != exp_len:
        print("  test bug: source pread gave %d bytes at %d" % (len(want), off), file=sys.stderr)
        bad = 1
sys.exit(bad)
PY

note "cmp of the whole file"
tmo cmp "$SRC/big.bin" "$MNT/big.bin" || fail "cmp: the mounted big.bin differs from the source"
for f in a-small.txt z-small.txt; do
	tmo cmp "$SRC/$f" "$MNT/$f" || fail "$f differs"
done

check_log "$DLFS_LOG"
dlfs_umount "$MNT"
check_log "$DLFS_LOG"
exit 0
