#!/bin/bash
# longpath: a path longer than PATH_MAX (4,888 bytes, 20 levels of 240-byte
# names) packs from a directory source as it does from a tar, and reads
# back the same bytes (issue 23, item 5): the walk and the reads go
# directory by directory, not through one path. A warning about a file
# that deep is printed whole, with its reason. (Error messages, which have
# a fixed size, lose their middle, never their end: test_format.)
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"

"$PYTHON" - "$T" <<'EOF'
import os, sys, tarfile
T = sys.argv[1]
names = ["d%02d" % i + "x" * 237 for i in range(20)]
rel = "/".join(names) + "/leaf.txt"
assert len(rel) > 4096, len(rel)
data = b"deep bytes\n" * 100
# Build it directory by directory: the whole path is too long for one call.
fd = os.open(T, os.O_RDONLY | os.O_DIRECTORY)
os.mkdir("src", dir_fd=fd)
cur = os.open("src", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
for n in names:
    os.mkdir(n, dir_fd=cur)
    nxt = os.open(n, os.O_RDONLY | os.O_DIRECTORY, dir_fd=cur)
    os.close(cur)
    cur = nxt
f = os.open("leaf.txt", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=cur)
os.write(f, data)
os.close(f)
os.mkfifo("pipe", dir_fd=cur)
os.close(cur)
os.close(fd)
with tarfile.open(os.path.join(T, "deep.tar"), "w", format=tarfile.PAX_FORMAT) as tf:
    ti = tarfile.TarInfo(rel)
    ti.size = len(data)
    import io
    tf.addfile(ti, io.BytesIO(data))
open(os.path.join(T, "rel"), "w").write(rel)
open(os.path.join(T, "leaf.expect"), "wb").write(data)
EOF
REL=$(cat "$T/rel")

pack "$T/deep.tar" -o "$T/tar.dlfs" -q
expect_ok "pack the deep path from a tar"
pack "$T/src" -o "$T/dir.dlfs"
expect_ok "pack the deep path from a directory"
err_has "skipping $T/src/${REL%leaf.txt}pipe: fifo" "the warning about the deep fifo, whole, with its reason"

for ds in tar dir; do
	inspect cat "$T/$ds.dlfs" "$REL"
	expect_ok "cat the deep file of $ds.dlfs"
	cmp "$T/out" "$T/leaf.expect" >&2 || fail "the deep file of $ds.dlfs has other bytes"
	inspect verify "$T/$ds.dlfs"
	expect_ok "verify $ds.dlfs"
done
