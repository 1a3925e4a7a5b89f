#!/bin/bash
# inplace: archives indexed where they are (dlfs-pack --in-place, issue
# 41), mounted and read as users read them. The expected trees are
# extracted by Python's tarfile and zipfile (tests/lib/archives.py).
#  - WebDataset-style shards (KEY.jpg, KEY.cls, KEY.json) in 64K chunks:
#    the dataset directory holds the index and its seal alone, a few
#    percent of the data at this size; the mount reads byte for byte as the extracted tree
#    (diff -r), and by TensorFlow's pattern (stat, then 256 KiB preads);
#    info lists the archives; with cache_dir, a remount's epoch reads
#    every file from the NVMe tier and none from the archives;
#  - an ImageNet-style tar of class tars: torchvision's ImageFolder finds
#    the same classes and samples (paths, labels) over the mount as over
#    the extracted tree, and decodes the same pixels;
#  - pax long names and link names, GNU long names, ustar prefixes, a
#    hard link, a symlink, a member over a chunk, an empty member, and a
#    zip with stored and deflated members: byte for byte, and verify OK;
#    the same with each file read alone (read_unit=file);
#  - one byte flipped in a shard's member (mtime kept): EIO for exactly
#    the files of that chunk, the right bytes for every other, the daemon
#    up, the mismatch logged and counted; verify names the archive and
#    the member; with files read alone, EIO for that member alone;
#  - a shard touched, cut short or removed: the mount refuses, naming it;
#  - indexed by 1, 2 and 4 worker threads: the same index and seal; the
#    archives read by at least two worker threads, not by dlfs-pack's own;
#    on a terminal, the progress line counts files and bytes indexed.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"
mount_setup
. "$LIB_DIR/cachelib.sh"
need_py torchvision PIL

for s in wds imagenet mixed; do
	tmo "$PYTHON" "$LIB_DIR/archives.py" "$T/$s" "$s" ||
		fail "test setup: cannot make the $s archives"
done
MNT="$T/mnt"
mkdir "$MNT"

# in_place NAME ARCHIVE...: $T/NAME.dlfs indexed in place, 64K chunks.
in_place() {
	local name=$1
	shift
	pack --in-place "$@" -o "$T/$name.dlfs" --chunk-size 64K -q
	expect_ok "dlfs-pack --in-place $name"
}

# ---------------------------------------------------------------- shards
in_place wds "$T"/wds/shard-*.tar
# With 256K chunks, every member (up to 100 KB) can be read alone (files
# over half a chunk are read with their chunk): for the flipped byte.
pack --in-place "$T"/wds/shard-*.tar -o "$T/wds256.dlfs" --chunk-size 256K -q
expect_ok "dlfs-pack --in-place wds256"
DS="$T/wds.dlfs"
[ "$(ls "$DS" | sort | tr '\n' ' ')" = "index index.sum " ] ||
	fail "an in-place dataset holds the index and its seal alone, not: $(ls "$DS")"
DATA=$(du -sb "$T/wds/want" | cut -f1)
IX=$(du -sb "$DS" | cut -f1)
# The index is LMDB's pages, some 250 bytes a member at this size (the
# benchmark measures the share at scale): far from a copy of the data.
[ $((IX * 20)) -le "$DATA" ] ||
	fail "the dataset directory takes $IX bytes for $DATA of data: more than 5%"
inspect info "$DS"
out_has "in_place" "info lists the feature"
out_has "shard-000002.tar (tar, " "info lists the archives"
inspect info --json "$DS"
"$PYTHON" -c '
import json, sys
j = json.load(open(sys.argv[1]))
a = j["archives"]
assert [x["path"].rsplit("/", 1)[-1] for x in a] == ["shard-%06d.tar" % i for i in range(3)], a
assert all(x["kind"] == "tar" and x["size"] > 0 for x in a), a
' "$T/out" || fail "info --json: the archives are not listed right: $(head -c 600 "$T/out")"
dlfs_mount "$DS" "$MNT"
diff_trees "$T/wds/want" "$MNT"
tmo "$PYTHON" - "$T/wds/want" "$MNT" <<'PY' || fail "TensorFlow's pattern (stat, 256 KiB preads) read wrong bytes"
import os, sys
want, mnt = sys.argv[1:]
n = 0
for name in sorted(os.listdir(want)):
    p = os.path.join(mnt, name)
    size = os.stat(p).st_size
    fd = os.open(p, os.O_RDONLY)
    got, off = [], 0
    while off < size:
        b = os.pread(fd, 256 << 10, off)
        if not b:
            break
        got.append(b)
        off += len(b)
    os.close(fd)
    if b"".join(got) != open(os.path.join(want, name), "rb").read():
        sys.exit("%s: wrong bytes" % name)
    n += 1
print(n, "files read by stat and 256 KiB preads", file=sys.stderr)
PY
check_log "$DLFS_LOG"
dlfs_umount "$MNT"

# The NVMe tier keeps the chunks' logical bytes: a remount's epoch reads
# none from the archives.
dlfs_mount "$DS" "$MNT" -o cache_dir="$T/nvme"
readtree "$MNT" "$T/wds/want" >/dev/null
snap "$MNT" "$T/n1.json"
N1=$(sget "$T/n1.json" tiers.pfs.reads)
wait_written "$MNT" "$N1"
dlfs_umount "$MNT"
dlfs_mount "$DS" "$MNT" -o cache_dir="$T/nvme"
readtree "$MNT" "$T/wds/want" --seed 5 >/dev/null
snap "$MNT" "$T/n2.json"
sassert "$T/n2.json" -- 'nvme.hits > 0' 'pfs.reads == 0' 'pfs.bytes == 0' 'nvme.corrupt == 0' \
	'not any(errors.values())' || fail "epoch 2: every read should come from the NVMe tier"
check_log "$DLFS_LOG"
dlfs_umount "$MNT"

# ---------------------------------------------------------------- ImageNet
in_place imagenet "$T/imagenet/train.tar"
dlfs_mount "$T/imagenet.dlfs" "$MNT"
tmo "$PYTHON" - "$T/imagenet/want" "$MNT" <<'PY' || fail "ImageFolder over the mount differs from the extracted tree"
import os, sys
import torch
from torchvision import datasets, transforms
want, mnt = sys.argv[1:]
t = transforms.PILToTensor()
a, b = datasets.ImageFolder(want, transform=t), datasets.ImageFolder(mnt, transform=t)
if a.classes != b.classes or a.class_to_idx != b.class_to_idx:
    sys.exit("classes: %r vs %r" % (a.classes, b.classes))
rel = lambda ds, root: [(os.path.relpath(p, root), y) for p, y in ds.samples]
if rel(a, want) != rel(b, mnt):
    sys.exit("samples differ")
for i in range(len(a)):
    (xa, ya), (xb, yb) = a[i], b[i]
    if ya != yb or not torch.equal(xa, xb):
        sys.exit("sample %d: pixels or label differ" % i)
print(len(a.classes), "classes,", len(a), "samples, the same", file=sys.stderr)
PY
check_log "$DLFS_LOG"
dlfs_umount "$MNT"

# ---------------------------------------------------------------- formats
in_place mixed "$T"/mixed/pax.tar "$T"/mixed/gnu.tar "$T"/mixed/ustar.tar "$T"/mixed/coco.zip
inspect verify "$T/mixed.dlfs"
expect_ok "verify of the mixed dataset"
dlfs_mount "$T/mixed.dlfs" "$MNT"
diff_trees "$T/mixed/want" "$MNT"
[ "$(stat -c %h%F "$MNT/p/hard")" != "" ] && [ -L "$MNT/p/sym-$(printf 's%.0s' $(seq 120))" ] ||
	fail "the symlink is not a symlink"
[ "$(stat -c %a "$MNT/u/sub")" = 750 ] || fail "u/sub: mode $(stat -c %a "$MNT/u/sub"), want 750"
check_log "$DLFS_LOG"
dlfs_umount "$MNT"
# Files read alone (read_unit=file, what a dataset larger than the tiers
# gets): a stored member's bytes where they lie in its archive, a deflated
# one through its chunk, every one checked against its own checksum.
dlfs_mount "$T/mixed.dlfs" "$MNT" -o read_unit=file
diff_trees "$T/mixed/want" "$MNT"
snap "$MNT" "$T/f.json"
sassert "$T/f.json" -- 's.read_unit.option == "file"' 's.read_unit.file_reads >= 10' \
	'not any(errors.values())' || fail "read_unit=file: the mixed archives' files were not read alone"
check_log "$DLFS_LOG"
dlfs_umount "$MNT"

# ---------------------------------------------------------------- workers
# Six archives indexed by 1, 2 and 4 threads: the same index and seal.
# Under strace (when there is one), the archives are opened for reading
# by worker threads, at least two of them, and by dlfs-pack's own thread
# only to tell what each source is.
ALL=("$T"/wds/shard-*.tar "$T"/mixed/pax.tar "$T"/mixed/gnu.tar "$T"/mixed/coco.zip)
for p in 1 2 4; do
	pack --in-place "${ALL[@]}" -o "$T/par$p.dlfs" --chunk-size 64K -q --procs $p
	expect_ok "dlfs-pack --in-place --procs $p"
done
for p in 2 4; do
	for f in index index.sum; do
		cmp "$T/par1.dlfs/$f" "$T/par$p.dlfs/$f" >&2 ||
			fail "--procs $p: $f differs from one worker's"
	done
done
if command -v strace >/dev/null; then
	tmo strace -f -qq -e trace=openat -o "$T/trace" "$DLFS_PACK" --in-place "${ALL[@]}" \
		-o "$T/par2s.dlfs" --chunk-size 64K -q --procs 2 ||
		fail "dlfs-pack --in-place --procs 2 under strace"
	cmp "$T/par1.dlfs/index" "$T/par2s.dlfs/index" >&2 || fail "--procs 2 under strace: another index"
	# The first thread is dlfs-pack's own, which opens each source once
	# to tell what it is; the workers open them to read them.
	main=$(head -n 1 "$T/trace" | cut -d' ' -f1)
	opens() { grep -E "^[0-9]+ +openat\(AT_FDCWD, \"[^\"]*/(shard-[0-9]+\.tar|pax\.tar|gnu\.tar|coco\.zip)\", O_RDONLY" "$T/trace" | cut -d' ' -f1; }
	readers=$(opens | grep -vx "$main" | sort -u | wc -l)
	[ "$readers" -ge 2 ] || fail "the archives were opened by $readers worker threads, not 2"
	[ "$(opens | grep -cx "$main")" = "${#ALL[@]}" ] ||
		fail "dlfs-pack's own thread opened the archives $(opens | grep -cx "$main") times, not once each"
else
	note "strace not installed: which thread reads what is not checked"
fi
# On a terminal, the progress line counts the files and bytes indexed
# (it said "scanning sources..." until the index was written).
if command -v script >/dev/null; then
	tmo script -qec "$(printf '%q ' "$DLFS_PACK" --in-place "$T"/wds/shard-*.tar -o "$T/par-tty.dlfs" --chunk-size 64K)" /dev/null >"$T/tty.out" ||
		fail "dlfs-pack --in-place on a terminal"
	tr '\r' '\n' <"$T/tty.out" | grep -qE "^.*indexing: 360 files, [0-9.]+ [KM]iB/[0-9.]+ [KM]iB, " || {
		cat -v "$T/tty.out" >&2
		fail "no progress line counting the files and bytes indexed"
	}
else
	note "script not installed: the progress line is not checked"
fi
rm -rf "$T"/par*.dlfs

# ---------------------------------------------------------------- a flipped byte
VICTIM_TAR="$T/wds/shard-000001.tar"
# The data offset of the 7th member of the shard, and that member's name.
read -r VOFF VNAME <<<"$("$PYTHON" -c '
import sys, tarfile
m = tarfile.open(sys.argv[1]).getmembers()[6]
print(m.offset_data + m.size // 2, m.name)' "$VICTIM_TAR")"
file_map "$T/wds/want" "$DS" "$T/map.json"
cp -p "$VICTIM_TAR" "$T/victim.orig"
flip "$VICTIM_TAR" "$VOFF"
touch -r "$T/victim.orig" "$VICTIM_TAR"
inspect verify "$DS"
expect_fail "verify of a shard with a flipped byte"
err_has "shard-000001.tar" "verify names the archive"
err_has "$VNAME: checksum mismatch (archive" "verify names the member"
dlfs_mount "$DS" "$MNT"
# The victim's chunk, in its archive's logical stream (64K chunks).
read -r VC VLO VHI <<<"$("$PYTHON" -c '
import json, sys
v, cs = json.load(open(sys.argv[1]))[sys.argv[2]], 65536
k = (v["offset"] - cs) // cs
print(v["container"], cs + k * cs, cs + (k + 1) * cs)' "$T/map.json" "$VNAME")"
n=$(tmo "$PYTHON" "$LIB_DIR/chunk_eio.py" "$T/wds/want" "$MNT" "$T/map.json" "$VC" "$VLO" "$VHI" 2) ||
	fail "wrong results reading the damaged shard (see above)"
note "a flipped byte: $n (EIO, right)"
mountpoint -q "$MNT" && kill -0 "$DLFS_PID" || fail "the daemon died on a damaged chunk"
snap "$MNT" "$T/b.json"
sassert "$T/b.json" -- 'errors.checksum >= 1' || fail "the bad chunk is not counted"
grep -qF "checksum mismatch" "$DLFS_LOG" || fail "the daemon did not log the mismatch"
check_log "$DLFS_LOG" 'checksum mismatch'
dlfs_umount "$MNT"
# Read alone, a file is checked against its own checksum: EIO for the
# damaged member only, the right bytes for its chunk's other files (all
# of them small enough to be read alone with 256K chunks). Read in
# reverse order: in order, the read-ahead stream of the shard before
# goes on into the damaged shard's chunk 0, which is then read whole, and
# fails whole, as in a packed dataset.
file_map "$T/wds/want" "$T/wds256.dlfs" "$T/map256.json"
dlfs_mount "$T/wds256.dlfs" "$MNT" -o read_unit=file
read -r VC VLO VHI <<<"$("$PYTHON" -c '
import json, sys
v = json.load(open(sys.argv[1]))[sys.argv[2]]
print(v["container"], v["offset"], v["offset"] + v["size"])' "$T/map256.json" "$VNAME")"
n=$(tmo "$PYTHON" "$LIB_DIR/chunk_eio.py" "$T/wds/want" "$MNT" "$T/map256.json" "$VC" "$VLO" "$VHI" 1 reverse) ||
	fail "read_unit=file: wrong results reading the damaged shard (see above)"
[ "${n%% *}" = 1 ] || fail "read_unit=file: $n (EIO, right): want EIO for the damaged member alone"
note "a flipped byte, files read alone: $n (EIO, right)"
snap "$MNT" "$T/b.json"
sassert "$T/b.json" -- 's.read_unit.file_reads > 0' 'errors.checksum >= 1' ||
	fail "read_unit=file: the damaged member was not read alone, or not counted"
check_log "$DLFS_LOG" 'checksum mismatch'
dlfs_umount "$MNT"
cp -p "$T/victim.orig" "$VICTIM_TAR"

# ---------------------------------------------------------------- changed shards
# refused WHAT MESSAGE: the mount of the shards' dataset fails, saying so.
refused() {
	local st=0
	timeout -k 10 "$DLFS_CMD_TIMEOUT" "$DLFS" "$DS" "$MNT" >"$T/refused.out" 2>&1 || st=$?
	if [ "$st" = 0 ]; then
		track_mount "$MNT"
		fail "$1: the mount went ahead"
	fi
	grep -qF -- "$2" "$T/refused.out" ||
		fail "$1: the refusal does not say '$2': $(head -c 600 "$T/refused.out")"
	grep -qF "shard-000001.tar" "$T/refused.out" ||
		fail "$1: the refusal does not name the shard: $(head -c 600 "$T/refused.out")"
}
touch "$VICTIM_TAR"
refused "a touched shard" "changed since it was indexed"
cp -p "$T/victim.orig" "$VICTIM_TAR"
truncate -s -512 "$VICTIM_TAR"
touch -r "$T/victim.orig" "$VICTIM_TAR"
refused "a shard cut short" "changed since it was indexed"
rm "$VICTIM_TAR"
refused "a shard removed" "No such file"
cp -p "$T/victim.orig" "$VICTIM_TAR"
dlfs_mount "$DS" "$MNT"
diff_trees "$T/wds/want" "$MNT"
dlfs_umount "$MNT"
exit 0
