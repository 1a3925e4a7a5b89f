#!/bin/bash
# hostile_read: a mount of a damaged index gives EIO for the damaged
# files, the right bytes for the others, and stays up; with and without
# an NVMe cache_dir (issue 11):
#  - item 10: an inode whose offset points at another file of the same
#    size serves that file's bytes with good chunk checksums: the file's
#    own xxh3, checked on its first whole read, must refuse them;
#  - item 14: an inode whose extent lies outside its container is EIO
#    from stat (getattr and lookup), with a log line, not EUCLEAN;
#  - item 6: an inode naming a container that does not exist is EIO
#    (it crashed the daemon through the NVMe path);
#  - item 7: a container record with n_chunks = 0 makes its files EIO:
#    never a spinning daemon, and the mount ends on fusermount3 -u.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"
mount_setup
. "$LIB_DIR/ixlib.sh"

mkdir -p "$T/src/d"
"$PYTHON" - "$T/src" <<'EOF'
import os, random, sys
r = random.Random(11)
d = sys.argv[1]
for n in ("a", "b", "c", "m", "d/x", "d/y"):
    open(os.path.join(d, n), "wb").write(r.randbytes(3000))
open(os.path.join(d, "big"), "wb").write(r.randbytes(200000))
EOF
DS0="$T/ds0.dlfs"
pack "$T/src" -o "$DS0" --chunk-size 64K -q
expect_ok "pack"
DS="$T/ds.dlfs"
MNT="$T/mnt"
mkdir "$MNT"

# intact FILE...: each reads back as its source.
intact() {
	local f
	for f in "$@"; do
		tmo cmp "$MNT/$f" "$T/src/$f" || fail "$f does not read back as its source ($WHAT)"
	done
}
# alive: the daemon still runs and the mount still answers.
alive() {
	kill -0 "$DLFS_PID" 2>/dev/null || fail "the daemon died ($WHAT)"
	tmo ls "$MNT" >/dev/null || fail "ls of the mount failed ($WHAT)"
}

for tier in none nvme; do
	opts=()
	if [ "$tier" = nvme ]; then
		rm -rf "$T/nv"
		mkdir "$T/nv"
		opts=(-o "cache_dir=$T/nv")
	fi

	WHAT="a's offset at b's bytes, tier $tier"
	note "$WHAT"
	rm -rf "$DS"
	cp -a "$DS0" "$DS"
	inode_set "$(ino_of a)" offset "$(offset_of b)"
	dlfs_mount "$DS" "$MNT" "${opts[@]}"
	expect_errno "Input/output error" "read of a ($WHAT)" cat "$MNT/a"
	# A second read must not pass once the bytes are cached in a tier.
	expect_errno "Input/output error" "second read of a ($WHAT)" cat "$MNT/a"
	intact b c m d/x big
	alive
	dlfs_umount "$MNT"
	grep -qiE "checksum|xxh3" "$DLFS_LOG" || fail "no log line names the checksum ($WHAT): $(cat "$DLFS_LOG")"

	WHAT="c's extent outside its container, tier $tier"
	note "$WHAT"
	rm -rf "$DS"
	cp -a "$DS0" "$DS"
	ino=$(ino_of c)
	inode_set "$ino" offset $((1 << 40))
	dlfs_mount "$DS" "$MNT" "${opts[@]}"
	expect_errno "Input/output error" "stat of c ($WHAT)" stat "$MNT/c"
	expect_errno "Input/output error" "read of c ($WHAT)" cat "$MNT/c"
	intact a b m big
	alive
	dlfs_umount "$MNT"
	grep -q "inode $ino is damaged" "$DLFS_LOG" || fail "no log line names inode $ino ($WHAT): $(cat "$DLFS_LOG")"
	! grep -q "Structure needs cleaning" "$T/errno.err" || fail "EUCLEAN reached the user ($WHAT)"

	WHAT="m in container 7 of 1, tier $tier"
	note "$WHAT"
	rm -rf "$DS"
	cp -a "$DS0" "$DS"
	inode_set "$(ino_of m)" container 7
	dlfs_mount "$DS" "$MNT" "${opts[@]}"
	st=0
	tmo cat "$MNT/m" >/dev/null 2>"$T/m.err" || st=$?
	[ "$st" != 0 ] || fail "m was read from a container that does not exist ($WHAT)"
	grep -qF "Input/output error" "$T/m.err" || fail "m: want EIO, got: $(cat "$T/m.err") ($WHAT)"
	intact a b c big
	alive
	dlfs_umount "$MNT"

	WHAT="container 0 with n_chunks = 0, tier $tier"
	note "$WHAT"
	rm -rf "$DS"
	cp -a "$DS0" "$DS"
	container_set 0 n_chunks 0
	# The container is marked bad when the index is opened: its files
	# are EIO, the rest of the dataset (nothing here) is served.
	dlfs_mount "$DS" "$MNT" "${opts[@]}"
	expect_errno "Input/output error" "read of big ($WHAT)" cat "$MNT/big"
	expect_errno "Input/output error" "read of d/x ($WHAT)" cat "$MNT/d/x"
	alive
	dlfs_umount "$MNT"
	grep -qi "damaged" "$DLFS_LOG" || fail "no log line ($WHAT): $(cat "$DLFS_LOG")"
done
finish
