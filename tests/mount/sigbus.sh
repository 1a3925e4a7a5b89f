#!/bin/bash
# sigbus: the index shortened under a live mount (issue 11, item 8). The
# next lookup touches a page past its end and raises SIGBUS inside LMDB.
# The daemon must not die silently: one line naming the index and the
# fault, exit status 3; the mount then answers ENOTCONN, and mounting
# again (the index restored) removes the dead mount and works.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
mount_setup

mkdir -p "$T/src/d"
for i in $(seq 1 200); do echo "file $i" >"$T/src/d/f$i"; done
DS="$T/ds.dlfs"
pack "$T/src" -o "$DS" -q
expect_ok "pack"
cp "$DS/index" "$T/index.good"
[ "$(stat -c %s "$DS/index")" -gt 8192 ] || fail "test setup: the index is too small to cut"
MNT="$T/mnt"
mkdir "$MNT"
dlfs_mount "$DS" "$MNT"
[ "$(tmo cat "$MNT/d/f1")" = "file 1" ] || fail "read before the fault"

note "the index cut to its first page, then a lookup nobody made yet"
truncate -s 4096 "$DS/index"
# The lookup faults in the daemon; stat itself then fails.
stat "$MNT/d/f77" >/dev/null 2>&1 || true
wait_exit "$DLFS_PID" 20
[ "$WAIT_RC" != timeout ] || fail "the daemon still runs after its index was cut"
[ "$WAIT_RC" = 3 ] || fail "the daemon exited with status $WAIT_RC, want 3 (log: $(tail -3 "$DLFS_LOG"))"
grep -q "dlfs: fatal: SIGBUS at address 0x[0-9a-f]*: a page of the index $DS/index could not be read" "$DLFS_LOG" ||
	fail "the daemon did not say why it stopped: $(tail -3 "$DLFS_LOG")"
expect_errno "Transport endpoint is not connected" "the mount after the fault" ls "$MNT/d"

note "mount again with the index restored"
cp "$T/index.good" "$DS/index"
dlfs_mount "$DS" "$MNT"
[ "$(tmo cat "$MNT/d/f77")" = "file 77" ] || fail "read after remounting"
dlfs_umount "$MNT"
