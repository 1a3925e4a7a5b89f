#!/bin/bash
# deadmount: a daemon killed with SIGKILL leaves a dead FUSE mount (every
# access fails with ENOTCONN). Mounting again on it says so in one line,
# removes it and mounts (issue 11, item 15: dlfs went on without a word,
# or stopped at "Transport endpoint is not connected").
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"
mount_setup

mkdir -p "$T/src/a"
echo hello >"$T/src/a/f"
DS="$T/ds.dlfs"
pack "$T/src" -o "$DS" -q
expect_ok "pack"
MNT="$T/mnt"
mkdir "$MNT"
dlfs_mount "$DS" "$MNT"
must "read through the first mount" cat "$MNT/a/f"
kill -KILL "$DLFS_PID"
wait_exit "$DLFS_PID" 10
[ "$WAIT_RC" != timeout ] || fail "the daemon survived SIGKILL"
expect_errno "Transport endpoint is not connected" "the mount is dead" ls "$MNT"

note "mount again on the dead mount"
# Without -f: dlfs returns once the new mount is live (a dead mount
# would pass a wait on /proc/mounts).
track_mount "$MNT"
run "$DLFS" "$DS" "$MNT"
expect_ok "mount on the dead mount"
err_has "dlfs: mountpoint $MNT: a dead FUSE mount was there (its daemon is gone): unmounted it" \
	"dlfs says it removed the dead mount"
[ "$(tmo cat "$MNT/a/f")" = hello ] || fail "read through the new mount"
[ "$(awk -v m="$MNT" '$2 == m' /proc/mounts | wc -l)" = 1 ] ||
	fail "more than one mount left on $MNT: $(grep "$MNT" /proc/mounts)"
tmo fusermount3 -u "$MNT" || fail "fusermount3 -u $MNT"

note "a mountpoint that is a file, or missing: one line, exit 1"
touch "$T/file"
run "$DLFS" "$DS" "$T/file"
expect_rc 1 "mount on a file"
err_has "dlfs: mountpoint $T/file: not a directory" "mount on a file"
run "$DLFS" "$DS" "$T/missing"
expect_rc 1 "mount on a missing path"
err_has "dlfs: mountpoint $T/missing: No such file or directory" "mount on a missing path"
