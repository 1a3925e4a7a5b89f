#!/bin/bash
# holders: a busy mount says who holds it (issue 39, item 7). A process
# with its working directory in the mount and one with a file of it open
# keep fusermount3 -u from unmounting ("Device or resource busy");
# dlfs-inspect holders MNT names both (pid, command, working directory,
# fd N: path) and the lazy unmount that detaches it now; once they are
# gone it says nobody holds it, and fusermount3 -u works; on a directory
# where nothing is mounted it exits 1 with one line.
# SIGTERM to the daemon of a busy mount (what dlfs(1) says it does): the
# mount leaves the namespace at once, the daemon exits 0 without waiting
# for the holder, and the holder's next read of its open file fails with
# "Transport endpoint is not connected".
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

note "SIGTERM to the daemon of a busy mount"
dlfs_mount "$DS" "$MNT"
D_PID=$DLFS_PID
# A holder with the file open, which reads it again once told to.
(exec 7<"$MNT/d/f"
	while [ ! -e "$T/read" ]; do sleep 0.05; done
	if cat <&7 >"$T/again.out" 2>"$T/again.err"; then echo ok; else echo failed; fi >"$T/again.st") &
H_PID=$!
for ((i = 0; i < 600; i++)); do
	[ "$(readlink "/proc/$H_PID/fd/7" 2>/dev/null)" = "$MNT/d/f" ] && break
	sleep 0.05
done
kill -TERM "$D_PID"
wait_exit "$D_PID" 60
[ "$WAIT_RC" = 0 ] || fail "the daemon of a busy mount did not exit 0 after SIGTERM: $WAIT_RC"
kill -0 "$H_PID" 2>/dev/null || fail "the holder left before it was told to (test setup)"
! is_mounted "$MNT" || fail "after SIGTERM, $MNT is still mounted"
: >"$T/read"
wait "$H_PID"
[ "$(cat "$T/again.st")" = failed ] || fail "the holder read its file after the daemon exited: $(cat "$T/again.out")"
grep -q "Transport endpoint is not connected" "$T/again.err" ||
	fail "the holder's read after SIGTERM: $(cat "$T/again.err")"
echo "PASS [holders]"
