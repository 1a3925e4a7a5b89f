#!/bin/bash
# hostile: a mount of a damaged or unusual index stays up and answers.
#  - a directory entry whose name is 500 bytes (more than 255): ls of its
#    directory fails with EIO, the daemon logs it and keeps serving the
#    rest (issue 11, item 5: the name overflowed a stack buffer in
#    readdir and the mount died on ls);
#  - a path longer than 4,096 bytes (from a tar): .dlfs/epochs/E/files
#    lists every file, that one included (item 12: every list failed
#    with ENAMETOOLONG);
#  - an epoch list over a damaged name, or with a file that no directory
#    names: EIO and a log line saying which, the mount up.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"
mount_setup

: "${IXEDIT:=$SRC_ROOT/build/tests/ixedit}"
[ -x "$IXEDIT" ] || fail "ixedit not found: $IXEDIT (set IXEDIT)"

# A tar with ordinary files and one whose path is 20 levels of 250 bytes.
"$PYTHON" - "$T" <<'EOF'
import io, random, sys, tarfile
T = sys.argv[1]
r = random.Random(3)
names = ["a/f%02d" % i for i in range(20)] + ["b", "c"]
deep = "/".join(("d%02d" % i) + "x" * 247 for i in range(20)) + "/leaf"
assert len(deep) > 4096
with tarfile.open(T + "/src.tar", "w", format=tarfile.GNU_FORMAT) as tf:
    for n in names + [deep]:
        data = r.randbytes(r.randrange(1, 3000))
        ti = tarfile.TarInfo(n); ti.size = len(data); ti.mtime = 1600000000
        tf.addfile(ti, io.BytesIO(data))
with open(T + "/expect", "w") as f:
    for n in sorted(names + [deep]):
        print(n, file=f)
EOF
DS="$T/ds.dlfs"
pack "$T/src.tar" -o "$DS" --chunk-size 64K -q
expect_ok "pack"

note "a path longer than 4096 bytes: the epoch list has every file"
MNT="$T/mnt"
mkdir "$MNT"
dlfs_mount "$DS" "$MNT" -o seed=7
tmo cat "$MNT/.dlfs/epochs/0/files" >"$T/files" 2>"$T/files.err" ||
	fail "cat .dlfs/epochs/0/files: $(cat "$T/files.err")"
sort "$T/files" | cmp -s - "$T/expect" ||
	fail ".dlfs/epochs/0/files does not list exactly the dataset's files ($(wc -l <"$T/files") lines, want $(wc -l <"$T/expect"))"
tmo cat "$MNT/.dlfs/epochs/1/files" >/dev/null || fail "epoch 1's list"
dlfs_umount "$MNT"
check_log "$DLFS_LOG"

note "a 500-byte name: ls fails with EIO, the mount stays up"
hexname() { printf '%s' "$1" | od -An -v -tx1 | tr -d ' \n'; }
v=$("$IXEDIT" "$DS/index" get dirents "0000000000000001$(hexname b)") || fail "no entry b"
"$IXEDIT" "$DS/index" del dirents "0000000000000001$(hexname b)" || fail "ixedit del"
LONG=$(printf 'L%.0s' $(seq 500))
"$IXEDIT" "$DS/index" put dirents "0000000000000001$(hexname "$LONG")" "$v" || fail "ixedit put"
dlfs_mount "$DS" "$MNT"
expect_errno "Input/output error" "ls of the root with a 500-byte name" ls "$MNT"
expect_errno "Input/output error" "ls -l of the root with a 500-byte name" ls -l "$MNT"
kill -0 "$DLFS_PID" 2>/dev/null || fail "the daemon died on ls"
must "ls of a/ after the damaged root listing" ls "$MNT/a"
must "cat of a/f00" cat "$MNT/a/f00"
must "stat of the control dir" stat "$MNT/.dlfs/info"
grep -qi "damaged directory entry" "$DLFS_LOG" || fail "the daemon did not log the damaged entry"
expect_errno "Input/output error" "an epoch list over the 500-byte name" \
	cat "$MNT/.dlfs/epochs/2/files"
grep -q "epoch 2: cannot list it: .*damaged directory entry" "$DLFS_LOG" ||
	fail "the daemon did not log why epoch 2's list failed"
kill -0 "$DLFS_PID" 2>/dev/null || fail "the daemon died on the epoch list"
dlfs_umount "$MNT"

note "a file with no directory entry: its epoch list fails with EIO, logged"
"$IXEDIT" "$DS/index" put dirents "0000000000000001$(hexname b)" "$v" || fail "ixedit put b"
"$IXEDIT" "$DS/index" del dirents "0000000000000001$(hexname "$LONG")" || fail "ixedit del long"
"$IXEDIT" "$DS/index" del dirents "0000000000000001$(hexname c)" || fail "ixedit del c"
dlfs_mount "$DS" "$MNT"
expect_errno "Input/output error" "an epoch list with a file of no name" \
	cat "$MNT/.dlfs/epochs/3/files"
grep -q "epoch 3: cannot list it: file [0-9]* has no path" "$DLFS_LOG" ||
	fail "the daemon did not log the file without a path"
must "cat of a/f01 after the failed list" cat "$MNT/a/f01"
dlfs_umount "$MNT"
