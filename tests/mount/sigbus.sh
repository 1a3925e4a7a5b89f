#!/bin/bash
# sigbus: the index shortened under a live mount (issue 11, item 8). The
# next lookup touches a page past its end and raises SIGBUS inside LMDB
# (the same happens when damaged bytes send a lookup past the end: the
# mutation test's index flips). The lookup must fail with EIO and a log
# line naming the index and the fault, and the mount must go on: every
# later lookup that faults (many, so that some thread faults twice: the
# handler must leave SIGBUS unblocked) is EIO too, files already looked up
# stay readable from the kernel's cache, and once the index is whole again
# the same lookups work, without a remount. Unmounting ends the daemon
# with status 0.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"
mount_setup

mkdir -p "$T/src/d"
for i in $(seq 1 200); do echo "file $i" >"$T/src/d/f$i"; done
for j in $(seq 1 40); do
	mkdir "$T/src/s$j"
	for i in $(seq 1 20); do echo "s$j $i" >"$T/src/s$j/g$i"; done
done
DS="$T/ds.dlfs"
pack "$T/src" -o "$DS" -q
expect_ok "pack"
cp "$DS/index" "$T/index.good"
[ "$(stat -c %s "$DS/index")" -gt 8192 ] || fail "test setup: the index is too small to cut"
MNT="$T/mnt"
mkdir "$MNT"
dlfs_mount "$DS" "$MNT"
[ "$(tmo cat "$MNT/d/f1")" = "file 1" ] || fail "read before the fault"

note "the index cut to its first page, then lookups nobody made yet"
truncate -s 4096 "$DS/index"
expect_errno "Input/output error" "a lookup in the cut index" stat "$MNT/d/f77"
for i in $(seq 100 160); do
	stat "$MNT/d/f$i" >/dev/null 2>&1 && fail "stat of d/f$i worked with the index cut"
done
kill -0 "$DLFS_PID" 2>/dev/null || fail "the daemon died of the fault (log: $(tail -3 "$DLFS_LOG"))"
grep -q "dlfs: error: $DS/index: a page could not be read (SIGBUS at 0x[0-9a-f]*)" "$DLFS_LOG" ||
	fail "the daemon did not log the fault: $(tail -3 "$DLFS_LOG")"
n=$(grep -c "a page could not be read (SIGBUS" "$DLFS_LOG" || true)
[ "$n" -ge 10 ] || fail "only $n faults were logged for 62 lookups"

note "the index whole again: the same lookups work, without a remount"
cp "$T/index.good" "$DS/index"
[ "$(tmo cat "$MNT/d/f77")" = "file 77" ] || fail "read of d/f77 after the index was restored"
[ "$(tmo cat "$MNT/d/f150")" = "file 150" ] || fail "read of d/f150 after the index was restored"
dlfs_umount "$MNT"

# Cut past the meta pages (issue 23, item 1): a worker thread's first
# transaction then reads the main database's root page, past the end. Many
# readers at once make libfuse start fresh worker threads after the cut,
# and each of their first transactions must fail, not kill the daemon.
note "the index cut past its meta pages, read by fresh worker threads"
# One idle thread kept: the others end, and new ones begin transactions.
dlfs_mount "$DS" "$MNT" -o max_idle_threads=1
ls "$MNT" >/dev/null || fail "ls of the root before the cut"
truncate -s 8192 "$DS/index"
pids=()
for j in $(seq 1 40); do
	( for i in 1 2 3; do ls "$MNT/s$j" >/dev/null 2>&1; cat "$MNT/s$j/g$i" >/dev/null 2>&1; done; exit 0 ) &
	pids+=($!)
done
for p in "${pids[@]}"; do
	wait_exit "$p" 120
	[ "$WAIT_RC" != timeout ] || fail "a reader of the cut index hung for 120 s"
done
kill -0 "$DLFS_PID" 2>/dev/null || fail "the daemon died on the index cut to 8192 bytes (log: $(tail -3 "$DLFS_LOG"))"
expect_errno "Input/output error" "a lookup in the index cut to 8192 bytes" stat "$MNT/s40/g20"
cp "$T/index.good" "$DS/index"
[ "$(tmo cat "$MNT/s7/g3")" = "s7 3" ] || fail "read of s7/g3 after the index was restored"
dlfs_umount "$MNT"
