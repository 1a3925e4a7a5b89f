#!/bin/bash
# run: dlfs-run DATASET:PREFIX [-o ...] -- COMMAND, no FUSE:
#  - COMMAND and its children (a shell, then Python) read the dataset at
#    PREFIX byte for byte, and PREFIX/.dlfs/info names the dataset; the -o
#    options reach the server (ram_cache shows in .dlfs/stats);
#  - COMMAND's exit status is dlfs-run's (0, 3, 128 + a signal), and when
#    it ends the server is gone and its private directory removed;
#  - SIGTERM to dlfs-run reaches COMMAND, which can still read while it
#    handles it;
#  - refused with one line: a static program, a bad DATASET:PREFIX, a
#    missing command (127), a dataset the server refuses (its own line,
#    then dlfs-run's), no command at all (2).
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"
: "${DLFS:=$SRC_ROOT/build/src/daemon/dlfs}"
: "${DLFS_RUN:=$SRC_ROOT/build/tools/dlfs-run}"
: "${DLFS_CMD_TIMEOUT:=120}"
[ -x "$DLFS_RUN" ] || fail "dlfs-run not found: $DLFS_RUN (set DLFS_RUN)"
export DLFS_DAEMON=$DLFS
export TMPDIR="$T/tmp"
mkdir "$TMPDIR"
unset XDG_RUNTIME_DIR

SRC="$T/src"
gentree odd "$SRC" --seed 3
DS="$T/ds.dlfs"
pack "$SRC" -o "$DS" --chunk-size 64K --container-size 1M -q
expect_ok "pack"
P=/dlfs-test/odd

drun() { timeout -k 10 "$DLFS_CMD_TIMEOUT" "$DLFS_RUN" "$@"; }

note "a shell, and Python under it, read the dataset"
drun -o ram_cache=96M "$DS:$P" -- bash -c '
	set -e
	diff -r --no-dereference "$1" "$2"
	"$3" - "$2" <<PY
import json, sys
p = sys.argv[1]
info = json.load(open(p + "/.dlfs/info"))
stats = json.load(open(p + "/.dlfs/stats"))
assert info["path"].endswith("ds.dlfs"), info
assert stats["tiers"]["ram"]["capacity_bytes"] == 96 << 20, stats["tiers"]["ram"]
PY
' _ "$SRC" "$P" "$PYTHON" >"$T/out1" 2>&1 || { cat "$T/out1" >&2; fail "reading through dlfs-run failed"; }
[ -z "$(ls -A "$TMPDIR")" ] || fail "dlfs-run left $(ls -A "$TMPDIR") in TMPDIR"

note "exit statuses"
st=0
drun "$DS:$P" -- sh -c 'exit 3' || st=$?
[ "$st" = 3 ] || fail "exit 3 came back as $st"
st=0
drun "$DS:$P" -- sh -c 'kill -KILL $$' || st=$?
[ "$st" = 137 ] || fail "a command killed by SIGKILL came back as $st"
[ -z "$(ls -A "$TMPDIR")" ] || fail "dlfs-run left $(ls -A "$TMPDIR") after a killed command"
! pgrep -f -- "$DS --serve" >/dev/null || fail "a server is still running"

note "SIGTERM to dlfs-run reaches the command, which still reads"
f=$(cd "$SRC" && find . -type f -size +1k | sort | head -n 1)
"$DLFS_RUN" "$DS:$P" -- "$PYTHON" -c '
import signal, sys, time
got = []
signal.signal(signal.SIGTERM, lambda *a: got.append(1))
open(sys.argv[2], "w").write("up")
for _ in range(600):
    if got:
        break
    time.sleep(0.1)
data = open(sys.argv[1], "rb").read()
sys.exit(7 if got and data == open(sys.argv[3], "rb").read() else 1)
' "$P/$f" "$T/up" "$SRC/$f" &
RUNPID=$!
for _ in $(seq 600); do [ -s "$T/up" ] && break; sleep 0.1; done
[ -s "$T/up" ] || fail "the command did not start"
kill -TERM "$RUNPID"
wait_exit "$RUNPID" 60
[ "$WAIT_RC" = 7 ] || fail "after SIGTERM: status $WAIT_RC, expected 7 (handled, then read the right bytes)"

note "refused"
run "$DLFS_RUN" "$DS:$P" -- /usr/sbin/ldconfig -p
expect_rc 1 "a static program"
err_has "is linked statically" "a static program"
run "$DLFS_RUN" "$DS:relative" -- true
expect_rc 2 "a relative prefix"
err_has "expected DATASET:PREFIX" "a relative prefix"
run "$DLFS_RUN" "$DS:/" -- true
expect_rc 2 "the prefix /"
run "$DLFS_RUN" "$DS:/a/../b" -- true
expect_rc 2 "a prefix with .."
run "$DLFS_RUN" "$DS:$P" -- no-such-command-here
expect_rc 127 "a missing command"
err_has "no-such-command-here: command not found" "a missing command"
run "$DLFS_RUN" "$T/none.dlfs:$P" -- true
expect_rc 1 "a missing dataset"
err_has "did not start" "a missing dataset"
run "$DLFS_RUN" -o ram_cache=1 "$DS:$P" -- true
expect_rc 1 "an option the server refuses"
err_has "ram_cache" "an option the server refuses"
run "$DLFS_RUN" "$DS:$P"
expect_rc 2 "no command"
[ -z "$(ls -A "$TMPDIR")" ] || fail "dlfs-run left $(ls -A "$TMPDIR") after refusals"
exit 0
