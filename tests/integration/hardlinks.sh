#!/bin/bash
# hardlinks: hard links in archives pack the bytes of the file they link
# to, wherever those are (issue 11, item 9):
#   - a tar hard link to a file that came from a directory source (tar's
#     usual layout: the link member is empty);
#   - cpio newc hard links, where the data comes with the last link and
#     the earlier links are empty;
#   - tar hard links inside one tar, chained.
# Checked by extract and cat against the sources, byte for byte: verify
# alone cannot see it (the checksums are of the bytes packed).
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"

mkdir -p "$T/dir"
"$PYTHON" - "$T" <<'EOF'
import io, os, random, struct, sys, tarfile
T = sys.argv[1]
r = random.Random(9)
shared = r.randbytes(5000)
own = r.randbytes(20000)
open(os.path.join(T, "dir/shared.bin"), "wb").write(shared)

# A tar whose first data member is own.bin (spool offset 0), then a hard
# link to shared.bin, which only the directory source has.
with tarfile.open(os.path.join(T, "links.tar"), "w", format=tarfile.GNU_FORMAT) as tf:
    ti = tarfile.TarInfo("own.bin"); ti.size = len(own); ti.mtime = 1600000000
    tf.addfile(ti, io.BytesIO(own))
    ti = tarfile.TarInfo("link-to-shared"); ti.type = tarfile.LNKTYPE
    ti.linkname = "shared.bin"; ti.mtime = 1600000000
    tf.addfile(ti)
    # A chain inside the tar: t1 has the data, t2 -> t1, t3 -> t2.
    t1 = r.randbytes(3000)
    ti = tarfile.TarInfo("t/t1"); ti.size = len(t1); ti.mtime = 1600000000
    tf.addfile(ti, io.BytesIO(t1))
    for n, to in (("t/t2", "t/t1"), ("t/t3", "t/t2")):
        ti = tarfile.TarInfo(n); ti.type = tarfile.LNKTYPE; ti.linkname = to
        ti.mtime = 1600000000
        tf.addfile(ti)
open(os.path.join(T, "t1.expect"), "wb").write(t1)
open(os.path.join(T, "own.expect"), "wb").write(own)
open(os.path.join(T, "shared.expect"), "wb").write(shared)

# cpio newc: a, b, c are one file (ino 7, 3 links), its data with c, the
# last; x is another file before them so the spool is not empty.
def newc(name, ino, mode, nlink, data):
    nb = name.encode() + b"\0"
    h = b"070701" + b"".join(b"%08x" % v for v in (
        ino, mode, 0, 0, nlink, 1600000000, len(data), 0, 0, 0, 0, len(nb), 0))
    out = h + nb
    out += b"\0" * (-len(out) % 4)
    out += data + b"\0" * (-len(data) % 4)
    return out
x = r.randbytes(7000)
linked = r.randbytes(9000)
blob = newc("x", 3, 0o100644, 1, x)
blob += newc("c/a", 7, 0o100644, 3, b"")
blob += newc("c/b", 7, 0o100644, 3, b"")
blob += newc("c/c", 7, 0o100644, 3, linked)
blob += newc("TRAILER!!!", 0, 0, 1, b"")
open(os.path.join(T, "links.cpio"), "wb").write(blob)
open(os.path.join(T, "x.expect"), "wb").write(x)
open(os.path.join(T, "linked.expect"), "wb").write(linked)
EOF

# same DS PATH EXPECT: cat of PATH is EXPECT's bytes.
same() {
	inspect cat "$1" "$2"
	expect_ok "cat $2"
	cmp -s "$T/out" "$3" || fail "$2 in $1: not the bytes of $(basename "$3" .expect) (got $(wc -c <"$T/out") bytes)"
}

note "tar hard link to a file from a directory source"
pack "$T/dir" "$T/links.tar" -o "$T/a.dlfs" -q
expect_ok "pack dir + tar"
same "$T/a.dlfs" link-to-shared "$T/shared.expect"
same "$T/a.dlfs" shared.bin "$T/shared.expect"
same "$T/a.dlfs" own.bin "$T/own.expect"
for n in t1 t2 t3; do same "$T/a.dlfs" t/$n "$T/t1.expect"; done
inspect verify "$T/a.dlfs"
expect_ok "verify dir + tar"
inspect extract "$T/a.dlfs" "$T/xa"
expect_ok "extract dir + tar"
cmp -s "$T/xa/link-to-shared" "$T/shared.expect" || fail "extracted link-to-shared differs"

note "cpio newc hard links, data with the last link"
pack "$T/links.cpio" -o "$T/b.dlfs" -q
expect_ok "pack newc cpio"
same "$T/b.dlfs" x "$T/x.expect"
for n in a b c; do same "$T/b.dlfs" c/$n "$T/linked.expect"; done
inspect verify "$T/b.dlfs"
expect_ok "verify newc cpio"
