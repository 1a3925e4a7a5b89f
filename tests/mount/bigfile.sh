#!/bin/bash
# bigfile: a file of 4 GiB + 20 MiB + 7 bytes, so that its offsets pass
# 2^32, read through two mounts: packed with 4 MiB chunks (--compress
# zstd), and as a member of a tar indexed in place, whose own offsets
# pass 2^32 too. The file is sparse: its bytes are a deterministic pattern
# in which every 4 KiB page carries its own offset (so a read from the
# wrong place shows) in windows around 0, 2^31, 3 GiB, and from 2^32 - 8
# MiB to the end, and zeros between them (the packed dataset stores those
# chunks compressed, the tar keeps them as holes, so neither writes 4 GiB).
# On each mount: st_size is right; preads around 0, 2^31, 2^32 - 1, 2^32,
# 2^32 + a chunk, chunk boundaries, the edges of the windows, end - 1,
# end, and past the end return the source's bytes (and nothing past EOF);
# the windows, and a page every 64 MiB between them (zeros, where a read
# from the wrong place would not show), equal the source's. Needs 2 GiB
# free (else exit 77).
set -euo pipefail
: "${DLFS_CMD_TIMEOUT:=300}"
. "$(dirname "$0")/../lib/lib.sh"
mount_setup

AVAIL=$(df -B1 --output=avail "$T" | tail -n 1 | tr -d ' ')
[ "$AVAIL" -ge $((2 << 30)) ] || skip "needs 2 GiB free in $T, has $((AVAIL >> 20)) MiB"

C=$((4 << 20))
G=$((1 << 30))
SIZE=$((4 * G + 5 * C + 7))
# The patterned windows, LO:HI each; zeros between them.
WINDOWS="0:$((3 * C)) $((2 * G - 2 * C)):$((2 * G + 2 * C)) $((3 * G - C)):$((3 * G + C)) $((4 * G - 2 * C)):$SIZE"
SRC="$T/src"
mkdir "$SRC"
note "writing a sparse $SIZE byte file, and a tar of it with its holes kept"
tmo "$PYTHON" - "$SRC" "$SIZE" "$T/big.tar" "$WINDOWS" <<'PY' || fail "could not write the source file"
import os, random, struct, sys, tarfile
d, size, tarpath = sys.argv[1], int(sys.argv[2]), sys.argv[3]
windows = [tuple(map(int, w.split(":"))) for w in sys.argv[4].split()]
B = 4 << 20
base = random.Random(3).randbytes(B + 8192)

def pattern(off, n):  # off: a multiple of 4 KiB
    blk = bytearray(base[(off // B) % 4096:][:B])
    for p in range(0, B, 4096):
        struct.pack_into("<QQ", blk, p, off + p, (off + p) ^ 0x5DEECE66D)
    return blk[:n]

def write_big(f, at):  # the file's bytes at offset at of f, holes kept
    for lo, hi in windows:
        for off in range(lo, hi, B):
            f.seek(at + off)
            f.write(pattern(off, min(B, hi - off)))

small = {"a-small.txt": b"before the big file\n", "z-small.txt": b"after the big file\n"}
for n, b in small.items():
    open(os.path.join(d, n), "wb").write(b)
with open(os.path.join(d, "big.bin"), "wb") as f:
    write_big(f, 0)
    f.truncate(size)

def header(name, n):
    ti = tarfile.TarInfo(name)
    ti.size, ti.mode, ti.mtime = n, 0o644, 1600000000
    return ti.tobuf(format=tarfile.GNU_FORMAT)

pad = lambda n: -n % 512
with open(tarpath, "wb") as f:
    f.write(header("a-small.txt", len(small["a-small.txt"])))
    f.write(small["a-small.txt"] + b"\0" * pad(len(small["a-small.txt"])))
    f.write(header("big.bin", size))
    at = f.tell()
    write_big(f, at)
    f.seek(at + size + pad(size))
    f.write(header("z-small.txt", len(small["z-small.txt"])))
    f.write(small["z-small.txt"] + b"\0" * pad(len(small["z-small.txt"])))
    f.write(b"\0" * 1024)
    if at + size <= 2**32:
        sys.exit("test bug: big.bin ends at offset %d of the tar, below 2^32" % (at + size))
PY

note "packing (--compress zstd: the zero chunks take no room)"
DS="$T/ds.dlfs"
pack "$SRC" -o "$DS" --chunk-size 4M --compress zstd -q
expect_ok "pack"
note "indexing the tar in place"
IDS="$T/inplace.dlfs"
pack --in-place "$T/big.tar" -o "$IDS" --chunk-size 4M -q
expect_ok "pack --in-place"

# check MNT: st_size, the preads at the edges, a cmp of big.bin's windows
# and pages between them, and of the small files.
check() {
	local mnt=$1 f
	[ "$(stat -c %s "$mnt/big.bin")" = "$SIZE" ] ||
		fail "$mnt: st_size of big.bin is $(stat -c %s "$mnt/big.bin"), expected $SIZE"
	note "$mnt: preads at the edges"
	tmo "$PYTHON" - "$SRC/big.bin" "$mnt/big.bin" <<'PY' || fail "$mnt: preads of the big file differ from the source"
import os, sys
a = os.open(sys.argv[1], os.O_RDONLY)
b = os.open(sys.argv[2], os.O_RDONLY)
size = os.fstat(a).st_size
C = 4 << 20
G = 1 << 30
cases = [(0, 1), (0, 4096), (0, C + 1), (1, 100), (C - 1, 2), (C - 10, 8 << 20),
         (3 * C - 5, 10), (3 * C, 4096),
         (2**31 - 1, 1), (2**31 - 5, 10), (2**31, 1), (2**31, C), (2**31 - C, 2 * C + 3),
         (2**31 + 2 * C - 5, 10), (3 * G - 1, 4), (3 * G - C - 3, 2 * C + 6),
         (2**32 - 2 * C - 5, 10), (2**32 - 1, 1), (2**32 - 1, 10), (2**32 - 3, C),
         (2**32, 4096), (2**32 + 1, 1), (2**32 + C - 1, 2), (2**32 + C + 12345, 3 * C),
         (2**32 + 4 * C, 4096), (size - C - 1, C + 1), (size - 1, 1), (size - 1, 100),
         (size - 7, 7), (size - 8, 4096), (size, 1), (size, C), (size + 1, 10),
         (size + 2**33, 10), (2**40, 1)]
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
    if off >= 2**32 and len(want) >= 4096 and not any(want):
        print("  test bug: the source has only zeros at %d" % off, file=sys.stderr)
        bad = 1
sys.exit(bad)
PY
	note "$mnt: cmp of the windows, and of a page every 64 MiB between them"
	tmo "$PYTHON" - "$SRC/big.bin" "$mnt/big.bin" "$WINDOWS" <<'PY' || fail "$mnt: big.bin differs from the source"
import os, sys
a, b = (os.open(p, os.O_RDONLY) for p in sys.argv[1:3])
size = os.fstat(a).st_size
reads = [(off, 4096) for off in range(12345, size, 64 << 20)]
for w in sys.argv[3].split():  # LO:HI ...
    lo, hi = map(int, w.split(":"))
    reads += [(off, min(16 << 20, hi - off)) for off in range(lo, hi, 16 << 20)]
bad = 0
for off, n in sorted(reads):
    x, y = os.pread(a, n, off), os.pread(b, n, off)
    if x != y:
        i = next((i for i in range(min(len(x), len(y))) if x[i] != y[i]), min(len(x), len(y)))
        print("  first difference at byte %d (read of %d bytes at %d gave %d)" % (off + i, n, off, len(y)),
              file=sys.stderr)
        bad = 1
sys.exit(bad)
PY
	for f in a-small.txt z-small.txt; do
		tmo cmp "$SRC/$f" "$mnt/$f" || fail "$mnt/$f differs"
	done
}

for d in ds inplace; do
	MNT="$T/mnt-$d"
	mkdir "$MNT"
	dlfs_mount "$T/$d.dlfs" "$MNT" -o ram_cache=64M
	check "$MNT"
	check_log "$DLFS_LOG"
	dlfs_umount "$MNT"
	check_log "$DLFS_LOG"
done
exit 0
