#!/bin/bash
# run: dlfs-run DATASET:PREFIX [-o ...] -- COMMAND, no FUSE:
#  - COMMAND and its children (a shell, then Python) read the dataset at
#    PREFIX byte for byte, and PREFIX/.dlfs/info names the dataset; the -o
#    options reach the server (ram_cache shows in .dlfs/stats);
#  - under an MPI launcher (each launch variable of
#    src/node/shared/launch_vars.h set), COMMAND is the rank: it keeps
#    them and reads, and the server, which refuses a launch, never sees
#    them;
#  - COMMAND's exit status is dlfs-run's (0, 3, 128 + a signal), and when
#    it ends the server is gone, leaving only the node directory's lock
#    files (TMPDIR/dlfs-run-UID/KEY.lock, .users, .alive);
#  - one server a node: concurrent dlfs-run of one dataset and options
#    share one server (other options: another; --private: its own, whose
#    directory goes with it); the last to end stops it before it returns;
#    when the last one is killed with SIGKILL, the server ends by itself; dlfs-run started while the server
#    ends, again and again, all read right; a node directory that is not
#    private is refused; a server that dies under the command is named in
#    one line (--private and the node's);
#  - SIGTERM to dlfs-run reaches COMMAND, which can still read while it
#    handles it;
#  - refused with one line: a static program, a bad DATASET:PREFIX, a
#    missing command (127), a dataset the server refuses (its own line,
#    then dlfs-run's), no command at all (2);
#  - from a staged install (meson install --destdir), with no
#    DLFS_DAEMON or DLFS_PRELOAD_LIB, it finds its parts and reads.
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
# A node's server is nobody's child: one left behind by a failure must not
# outlive the test (it would hold the harness's output pipe open).
trap '_rc=$?; set +e; pkill -KILL -f -- "$DS --serve" 2>/dev/null; (exit $_rc); _cleanup' EXIT

drun() { timeout -k 10 "$DLFS_CMD_TIMEOUT" "$DLFS_RUN" "$@"; }

# What dlfs-run may leave in TMPDIR: the node directory's lock files.
left() {
	(cd "$TMPDIR" && find . -mindepth 1 ! -path "./dlfs-run-$(id -u)" \
		! -name '*.lock' ! -name '*.users' ! -name '*.alive' | sort)
}
servers() { pgrep -f -- "$DS --serve" | wc -l; }

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
[ -z "$(left)" ] || fail "dlfs-run left $(left) in TMPDIR"
[ "$(servers)" = 0 ] || fail "the server outlived its only dlfs-run"

note "under an MPI launcher: the command is the rank, never its server"
f=$(cd "$SRC" && find . -type f -size +1k | sort | head -n 1)
env OMPI_COMM_WORLD_SIZE=2 PMI_SIZE=2 SLURM_STEP_NUM_TASKS=2 \
	timeout -k 10 "$DLFS_CMD_TIMEOUT" "$DLFS_RUN" "$DS:$P" -- sh -c \
	'[ "$OMPI_COMM_WORLD_SIZE$PMI_SIZE$SLURM_STEP_NUM_TASKS" = 222 ] && cmp "$1" "$2"' \
	_ "$P/$f" "$SRC/$f" >"$T/out1" 2>&1 || { cat "$T/out1" >&2; fail "dlfs-run under a launcher's variables"; }
[ "$(servers)" = 0 ] || fail "a server is still running"

note "exit statuses"
st=0
drun "$DS:$P" -- sh -c 'exit 3' || st=$?
[ "$st" = 3 ] || fail "exit 3 came back as $st"
st=0
drun "$DS:$P" -- sh -c 'kill -KILL $$' || st=$?
[ "$st" = 137 ] || fail "a command killed by SIGKILL came back as $st"
[ -z "$(left)" ] || fail "dlfs-run left $(left) after a killed command"
[ "$(servers)" = 0 ] || fail "a server is still running"

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

note "one server a node, shared"
# Each command says it is up, then waits for the word to read and end.
share_cmd='echo up >"$1"; while [ ! -e "$2" ]; do sleep 0.05; done; diff -r --no-dereference "$3" "$4"'
rm -f "$T/go"
for i in 1 2 3; do
	drun "$DS:$P" -- bash -c "$share_cmd" _ "$T/up$i" "$T/go" "$SRC" "$P" &
	eval "SH$i=\$!"
done
drun -o ram_cache=64M "$DS:$P" -- bash -c "$share_cmd" _ "$T/up4" "$T/go" "$SRC" "$P" &
SH4=$!
drun --private "$DS:$P" -- bash -c "$share_cmd" _ "$T/up5" "$T/go" "$SRC" "$P" &
SH5=$!
for i in 1 2 3 4 5; do
	for _ in $(seq 600); do [ -s "$T/up$i" ] && break; sleep 0.1; done
	[ -s "$T/up$i" ] || fail "shared: command $i did not start"
done
n=$(servers)
[ "$n" = 3 ] || fail "three dlfs-run of one dataset and options, one with other options and one --private ran $n servers, not 3"
: >"$T/go"
for i in 1 2 3 4 5; do
	eval "pid=\$SH$i"
	wait_exit "$pid" 120
	[ "$WAIT_RC" = 0 ] || fail "shared: dlfs-run $i ended with $WAIT_RC (bytes differ?)"
done
[ "$(servers)" = 0 ] || fail "the last dlfs-run of each server did not stop it"
[ -z "$(left)" ] || fail "shared servers left $(left)"

note "the last user killed with SIGKILL: the server ends by itself"
rm -f "$T/go1" "$T/go2" "$T/up1" "$T/up2"
"$DLFS_RUN" "$DS:$P" -- bash -c "$share_cmd" _ "$T/up1" "$T/go1" "$SRC" "$P" &
K1=$!
drun "$DS:$P" -- bash -c "$share_cmd" _ "$T/up2" "$T/go2" "$SRC" "$P" &
K2=$!
for i in 1 2; do
	for _ in $(seq 600); do [ -s "$T/up$i" ] && break; sleep 0.1; done
	[ -s "$T/up$i" ] || fail "killed: command $i did not start"
done
: >"$T/go2"
wait_exit "$K2" 120
[ "$WAIT_RC" = 0 ] || fail "killed: the other dlfs-run ended with $WAIT_RC"
[ "$(servers)" = 1 ] || fail "the server did not stay for its other user"
# Nobody is left to stop it: it must see that its users have gone.
kill -KILL "$K1"
wait "$K1" 2>/dev/null || true
: >"$T/go1" # its orphaned command ends too
for _ in $(seq 300); do [ "$(servers)" = 0 ] && break; sleep 0.1; done
[ "$(servers)" = 0 ] || fail "the server did not end within 30 s of its last user's SIGKILL"
[ -z "$(left)" ] || fail "after a killed dlfs-run: left $(left)"

note "dlfs-run started while the server ends, again and again"
pids=()
for i in $(seq 12); do
	drun "$DS:$P" -- "$PYTHON" "$LIB_DIR/readtree.py" "$SRC" "$P" >"$T/rt$i" 2>&1 &
	pids+=($!)
	sleep 0.$((i % 3))
done
for i in $(seq 12); do
	wait_exit "${pids[$((i - 1))]}" 120
	[ "$WAIT_RC" = 0 ] || { cat "$T/rt$i" >&2; fail "staggered dlfs-run $i ended with $WAIT_RC"; }
done
[ "$(servers)" = 0 ] || fail "a server outlived the staggered dlfs-run"

note "a server that dies under the command is reported"
for mode in --private ""; do
	run "$DLFS_RUN" $mode "$DS:$P" -- bash -c 'pkill -KILL -f -- "^$1 .* --serve"; sleep 0.2; cat "$2" >/dev/null; true' _ "$DLFS" "$P/$f"
	expect_rc 0 "a dead server, ${mode:-node}"
	err_has "ended while the command ran" "a dead server, ${mode:-node}"
	err_has "the dlfs server is gone" "a dead server, ${mode:-node}"
done
[ "$(servers)" = 0 ] || fail "a server is left after the killed ones"

note "refused"
mkdir -p "$T/badtmp/dlfs-run-$(id -u)"
chmod 755 "$T/badtmp/dlfs-run-$(id -u)"
run env TMPDIR="$T/badtmp" "$DLFS_RUN" "$DS:$P" -- true
expect_rc 1 "a node directory open to others"
err_has "not a private directory of yours" "a node directory open to others"
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
[ -z "$(left)" ] || fail "dlfs-run left $(left) after refusals"
[ "$(servers)" = 0 ] || fail "a server is left after refusals"

# A staged install (meson install --destdir): dlfs-run finds the daemon
# beside itself and the library from its own directory (issue 39).
BUILD=$(cd "$(dirname "$DLFS_RUN")/.." && pwd)
if timeout 300 meson install -C "$BUILD" --destdir "$T/stage" --no-rebuild >"$T/install.log" 2>&1; then
	SRUN=$(find "$T/stage" -path '*/bin/dlfs-run' | head -n 1)
	[ -x "$SRUN" ] || fail "no dlfs-run in the staged install"
	F1=$(cd "$SRC" && find . -type f -size +0 -print -quit)
	run env -u DLFS_DAEMON -u DLFS_PRELOAD_LIB "$SRUN" --private "$DS:$P" -- cat "$P/$F1"
	expect_ok "dlfs-run of a staged install"
	cmp -s "$SRC/$F1" "$T/out" || fail "dlfs-run of a staged install read wrong bytes"
else
	note "meson install --destdir is not possible here: $(tail -n 1 "$T/install.log")"
fi
exit 0
