#!/bin/bash
# packlock: one dlfs-pack at a time into one output (issue 39, item 2),
# by the lock .NAME.lock beside it (src/format/shared/outlock.h).
#  - while another packer holds the lock (a process holding flock on the
#    file, with its line "pid P host H since T"), dlfs-pack of the same
#    OUT fails at once, exit 1, naming that pid and host, and writes
#    nothing: no OUT, no temporary directory;
#  - meanwhile a mount of OUT, which does not exist yet, says it is being
#    packed, with the packer's pid, not only "No such file or directory";
#  - a lock file left by a packer that is gone (not held) is taken over;
#  - after a pack, no lock file is left.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"
mount_setup

mkdir -p "$T/src/d"
echo hello >"$T/src/d/a.txt"
OUT="$T/ds.dlfs"

# A packer holding the lock: it says it is ready, then waits for stop.
"$PYTHON" - "$T/.ds.dlfs.lock" "$T/held" "$T/stop" <<'PY' &
import fcntl, os, sys, time
lock, held, stop = sys.argv[1:]
fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
fcntl.flock(fd, fcntl.LOCK_EX)
os.write(fd, b"pid %d host packnode since 1700000000\n" % os.getpid())
open(held, "w").close()
for _ in range(6000):
    if os.path.exists(stop):
        break
    time.sleep(0.01)
PY
HOLDER=$!
for ((i = 0; i < 3000; i++)); do [ -e "$T/held" ] && break; sleep 0.01; done
[ -e "$T/held" ] || fail "the lock holder did not start"

pack "$T/src" -o "$OUT" -q
expect_rc 1 "a pack into an output being packed"
err_has "being packed by pid $HOLDER on packnode since" "names the packer"
assert_absent "$OUT" "the output"
ls -a "$T" | grep -q '\.tmp-' && fail "a temporary directory was left: $(ls -a "$T")"

{
	mkdir "$T/mnt"
	st=0
	timeout 60 "$DLFS" "$OUT" "$T/mnt" 2>"$T/mount.err" || st=$?
	[ "$st" = 1 ] || fail "mounting an output being packed exited $st: $(cat "$T/mount.err")"
	grep -q "not there yet: it is being packed (dlfs-pack, pid $HOLDER on packnode" "$T/mount.err" ||
		fail "the mount does not say the dataset is being packed: $(cat "$T/mount.err")"
}

: >"$T/stop"
wait "$HOLDER"
# Its file is still there, but nobody holds it: a packer that is gone.
[ -e "$T/.ds.dlfs.lock" ] || fail "test setup: the stale lock file is gone"
pack "$T/src" -o "$OUT" -q
expect_ok "a pack over a stale lock"
[ -d "$OUT" ] || fail "no output after the pack"
[ ! -e "$T/.ds.dlfs.lock" ] || fail "the pack left its lock file"
pack "$T/src" -o "$OUT" -q -f
expect_ok "a pack with --force"
[ ! -e "$T/.ds.dlfs.lock" ] || fail "the pack with --force left its lock file"
echo "PASS [packlock]"
