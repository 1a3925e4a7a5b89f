#!/bin/bash
# ctl_long: control files longer than one FUSE read come out whole. An
# epoch's list of 4,000 files (about 200 KiB) read by cat after a stat
# (as a loader that sizes its buffer does): every file once. The kernel
# takes a short read of a direct-I/O file for its end, so a reply cut at
# a buffer's size would end the list there.
# Then lists of many pieces (30,000 files: a list is rendered 8,192 paths
# at a time), read by 20 readers at once, over 18 epochs (more than the
# daemon keeps), by cat and in odd-sized reads: the same bytes as one
# reader alone, on a fresh mount with the same seed.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"
mount_setup

SRC="$T/src"
for d in $(seq -w 0 39); do
	mkdir -p "$SRC/a_directory_with_a_long_name_$d"
	for f in $(seq -w 0 99); do
		printf '%s' "$d$f" >"$SRC/a_directory_with_a_long_name_$d/sample_$f.bin"
	done
done
(cd "$SRC" && find . -type f | sed 's|^\./||' | sort) >"$T/expect"
DS="$T/ds.dlfs"
pack "$SRC" -o "$DS" -q
expect_ok "pack 4,000 files"
MNT="$T/mnt"
mkdir "$MNT"
dlfs_mount "$DS" "$MNT"
for e in 0 1; do
	size=$(stat -c %s "$MNT/.dlfs/epochs/$e/files")
	[ "$size" -gt 131072 ] || fail "epoch $e's list is only $size bytes: the test needs more than one read"
	tmo cat "$MNT/.dlfs/epochs/$e/files" >"$T/files$e" || fail "cat epochs/$e/files"
	[ "$(wc -c <"$T/files$e")" = "$size" ] ||
		fail "epochs/$e/files: read $(wc -c <"$T/files$e") bytes of $size"
	sort "$T/files$e" | cmp -s - "$T/expect" ||
		fail "epochs/$e/files does not list every file once"
done
dlfs_umount "$MNT"
check_log "$DLFS_LOG"

"$PYTHON" - "$T/many.tar" <<'EOF2'
import io, sys, tarfile
with tarfile.open(sys.argv[1], "w") as tf:
    for i in range(30000):
        ti = tarfile.TarInfo("dir_%03d/sample_%06d.jpg" % (i % 211, i))
        data = b"%d" % i
        ti.size = len(data)
        tf.addfile(ti, io.BytesIO(data))
EOF2
DS2="$T/many.dlfs"
pack "$T/many.tar" -o "$DS2" -q
expect_ok "pack 30,000 files"
dlfs_mount "$DS2" "$MNT" -o seed=11
for e in $(seq 2 19); do
	tmo cat "$MNT/.dlfs/epochs/$e/files" >"$T/ref$e" || fail "cat epochs/$e/files"
	[ "$(wc -l <"$T/ref$e")" = 30000 ] || fail "epochs/$e/files: $(wc -l <"$T/ref$e") lines, want 30000"
done
cmp -s "$T/ref2" "$T/ref3" && fail "epochs 2 and 3 have the same order"
dlfs_umount "$MNT"
dlfs_mount "$DS2" "$MNT" -o seed=11
pids=()
for k in $(seq 0 19); do
	e=$((2 + k % 18))
	if [ $((k % 2)) = 0 ]; then
		tmo cat "$MNT/.dlfs/epochs/$e/files" >"$T/got$k" &
	else
		tmo dd if="$MNT/.dlfs/epochs/$e/files" of="$T/got$k" bs=4093 status=none &
	fi
	pids+=($!)
done
for k in $(seq 0 19); do
	wait "${pids[$k]}" || fail "reader $k of the lists failed"
	cmp -s "$T/got$k" "$T/ref$((2 + k % 18))" ||
		fail "reader $k: epoch $((2 + k % 18))'s list differs from one reader's alone"
done
dlfs_umount "$MNT"
check_log "$DLFS_LOG"
