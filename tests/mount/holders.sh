#!/bin/bash
# holders: a busy mount says who holds it (issue 39, item 7). A process
# with its working directory in the mount and one with a file of it open
# keep fusermount3 -u from unmounting ("Device or resource busy");
# dlfs-inspect holders MNT names both (pid, command, working directory,
# fd N: path) and the lazy unmount that detaches it now; once they are
# gone it says nobody holds it, and fusermount3 -u works; on a directory
# where nothing is mounted it exits 1 with one line.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"
mount_setup
SRC="$T/src"
mkdir -p "$SRC/d"
echo hello >"$SRC/d/f"
DS="$T/ds.dlfs"
pack "$SRC" -o "$DS" -q
expect_ok "pack"
MNT="$T/mnt"
mkdir "$MNT"
dlfs_mount "$DS" "$MNT"

# Two holders, each waiting for the file stop.
(cd "$MNT/d" && while [ ! -e "$T/stop" ]; do sleep 0.05; done) &
CWD_PID=$!
(exec 7<"$MNT/d/f"; while [ ! -e "$T/stop" ]; do sleep 0.05; done) &
FD_PID=$!
# Until both hold it (the subshells cd and open first).
for ((i = 0; i < 600; i++)); do
	[ "$(readlink "/proc/$CWD_PID/cwd")" = "$MNT/d" ] &&
		[ "$(readlink "/proc/$FD_PID/fd/7" 2>/dev/null)" = "$MNT/d/f" ] && break
	sleep 0.05
done
st=0
fusermount3 -u "$MNT" 2>"$T/fm.err" || st=$?
[ "$st" != 0 ] || fail "fusermount3 -u unmounted a busy mount (test setup)"
run "$DLFS_INSPECT" holders "$MNT"
expect_ok "holders of a busy mount"
grep -q "^$CWD_PID .*working directory $MNT/d" "$T/out" || fail "holders does not name $CWD_PID's working directory: $(cat "$T/out")"
grep -q "^$FD_PID .*fd 7: $MNT/d/f" "$T/out" || fail "holders does not name $FD_PID's fd 7: $(cat "$T/out")"
grep -q "fusermount3 -u -z $MNT" "$T/out" || fail "holders does not say how to detach it: $(cat "$T/out")"

: >"$T/stop"
wait "$CWD_PID" "$FD_PID"
run "$DLFS_INSPECT" holders "$MNT"
expect_ok "holders of an idle mount"
grep -q "^nobody holds $MNT" "$T/out" || fail "holders of an idle mount: $(cat "$T/out")"
dlfs_umount "$MNT"
run "$DLFS_INSPECT" holders "$MNT"
expect_rc 1 "holders where nothing is mounted"
err_has "nothing is mounted there" "holders where nothing is mounted"
check_log "$DLFS_LOG"
echo "PASS [holders]"
