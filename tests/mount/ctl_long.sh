#!/bin/bash
# ctl_long: control files longer than one FUSE read come out whole. An
# epoch's list of 4,000 files (about 200 KiB) read by cat after a stat
# (as a loader that sizes its buffer does): every file once. The kernel
# takes a short read of a direct-I/O file for its end, so a reply cut at
# a buffer's size would end the list there.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
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
