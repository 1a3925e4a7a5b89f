#!/bin/bash
# extent_map: a file read alone with O_DIRECT is one bio, also when its
# first page is the last page of a file read before it (issue 9: without a
# cache_dir, a random epoch sent the simulated PFS 1.47 bios per file, and
# its IOPS cap counts bios). When ext4 maps a file whose extent tree
# blocks it already holds, it caches only the block ranges reads asked
# for, so such a read was mapped in two pieces and sent as a 4 KiB bio
# plus the rest; the block layer merged them back ("read merges" of the
# device), after the throttle had counted both. dlfs asks ext4 for the
# whole block map when it opens a container (FIEMAP_FLAG_CACHE).
#
# A dataset of 400 files of 5-20 KB (not page multiples, so neighbours
# share a page) is packed onto a fragmented ext4 image on a loop device of
# its own (the container gets an extent tree, not the 4 extents an inode
# holds); the container is read once and the inodes are dropped
# (drop_caches=2); then dlfs (no cache_dir, read_unit=file,
# pfs_io=direct) serves every file in a random order. The device must
# have merged at most a tenth as many reads as files: without the cached
# map, 177 of 400 were merged.
# drop_caches=2 evicts every unused inode on the machine: like every mount
# test this one runs alone (is_parallel: false in tests/meson.build).
# Skipped without root (mount -o loop) or mkfs.ext4.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"
mount_setup
command -v mkfs.ext4 >/dev/null || skip "no mkfs.ext4 (e2fsprogs)"
[ "$(id -u)" = 0 ] || skip "mounting an ext4 image needs root"

IMG="$T/ext4.img"
FS="$T/fs"
mkdir "$FS"
truncate -s 48M "$IMG"
mkfs.ext4 -q -F -i 8192 "$IMG" 2>"$T/mkfs.err" || fail "mkfs.ext4: $(cat "$T/mkfs.err")"
mount -o loop "$IMG" "$FS" 2>"$T/mount.err" ||
	skip "cannot mount an ext4 image with -o loop: $(cat "$T/mount.err")"
# Unmounted at exit after the FUSE mount; the loop device goes with it.
track_plain_mount "$FS"

# Fill the file system with 64 KiB files and delete every other one, so
# the container is written into 64 KiB holes: ext4 keeps up to 4 extents
# in the inode, and maps those in full; more go in a tree, whose extents
# it caches only as far as reads asked for them.
"$PYTHON" - "$FS/fill" <<'PY'
import errno, os, sys
os.mkdir(sys.argv[1])
blob = b"\xa5" * 65536
i = 0
while True:
    p = os.path.join(sys.argv[1], "%06d" % i)
    try:
        with open(p, "wb") as f:
            f.write(blob)
            f.flush()
            os.fsync(f.fileno())
    except OSError as e:
        if e.errno != errno.ENOSPC:
            raise
        os.unlink(p)
        break
    i += 1
for j in range(0, i, 2):
    os.unlink(os.path.join(sys.argv[1], "%06d" % j))
PY
sync -f "$FS"

SRC="$T/src"
"$PYTHON" - "$SRC" <<'PY'
import os, random, sys
r = random.Random(5)
for i in range(400):
    p = os.path.join(sys.argv[1], "d%d" % (i // 100), "f%04d" % i)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, "wb") as f:
        f.write(r.randbytes(r.randrange(5000, 20000)))
PY
DS="$FS/ds.dlfs"
pack "$SRC" -o "$DS" -q
expect_ok "pack"
C0="$DS/000000.dlc"
[ -f "$C0" ] || fail "no container $C0 after the pack"
nx=$(filefrag "$C0" | sed -n 's/.*: \([0-9]*\) extents\? found/\1/p')
[ "${nx:-0}" -gt 4 ] ||
	fail "test setup: the container has ${nx:-?} extents on the fragmented file system, want more than 4"
umount "$FS"
mount -o loop "$IMG" "$FS" || fail "cannot mount the ext4 image again"
dev=$(basename "$(findmnt -n -o SOURCE "$FS")")
[ -r "/sys/block/$dev/stat" ] || fail "no /sys/block/$dev/stat for $FS"
# Fields 1 and 2 of the device's stat: reads completed, reads merged.
rstat() { read -r r m _ <"/sys/block/$dev/stat" && echo "$r $m"; }

MNT="$T/mnt"
mkdir "$MNT"
# An earlier job read the container (its extent blocks are in the block
# cache), then the kernel reclaimed the inode and its cached extents: the
# state of a node between jobs, as on the simulated PFS of the benchmark.
dd if="$C0" of=/dev/null bs=64K iflag=direct status=none ||
	fail "cannot read $C0"
echo 2 >/proc/sys/vm/drop_caches
dlfs_mount "$DS" "$MNT" -o read_unit=file,pfs_io=direct
(cd "$SRC" && find . -type f | LC_ALL=C sort) >"$T/sorted"
"$PYTHON" -c 'import random, sys
l = open(sys.argv[1]).read().split()
random.Random(int(sys.argv[2])).shuffle(l)
print("\n".join(l))' "$T/sorted" 3 >"$T/list"
read -r r0 m0 < <(rstat)
while read -r f; do
	cat "$MNT/$f" >/dev/null || fail "reading $f through the mount failed"
done <"$T/list"
read -r r1 m1 < <(rstat)
tmo cat "$MNT/.dlfs/stats" >"$T/stats.json" || fail "cannot read $MNT/.dlfs/stats"
dlfs_umount "$MNT"
pfs=$("$PYTHON" -c 'import json, sys; print(json.load(open(sys.argv[1]))["tiers"]["pfs"]["reads"])' "$T/stats.json")
note "400 files, container of $nx extents: $pfs reads of the containers; device $dev: $((r1 - r0)) reads, $((m1 - m0)) merged"
[ "$pfs" -ge 300 ] ||
	fail "dlfs read the containers $pfs times for 400 files: the files were not read alone, the test tests nothing"
[ $((m1 - m0)) -le 40 ] ||
	fail "device $dev merged $((m1 - m0)) reads for 400 files read alone: each file was sent as more than one bio (the block map was not cached)"
check_log "$DLFS_LOG"
