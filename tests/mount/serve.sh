#!/bin/bash
# serve: dlfs DATASET --serve SOCKET, the daemon's front end for
# libdlfs-preload.so, without FUSE (no /dev/fuse needed):
#  - --ready-fd says "ready" once the socket answers; wirecheck.py then
#    checks every answer of the wire against the source tree (walk, reads,
#    errors, statfs, xattrs, /.dlfs, a client that breaks the protocol,
#    many clients at once);
#  - SIGTERM ends it with status 0 and removes the socket; so does SIGINT;
#  - bad command lines are refused with one line: a socket path that is
#    taken, a MOUNTPOINT given too, --ready-fd without --serve, an MPI
#    launch (peers need the FUSE mount);
#  - the log has no error line but the one about the broken client.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
: "${DLFS:=$SRC_ROOT/build/src/daemon/dlfs}"
[ -x "$DLFS" ] || fail "daemon not found or not executable: $DLFS (set DLFS)"
: "${DLFS_CMD_TIMEOUT:=120}"

SRC="$T/src"
gentree odd "$SRC" --seed 3
DS="$T/ds.dlfs"
pack "$SRC" -o "$DS" --chunk-size 64K --container-size 1M -q
expect_ok "pack"

PID=
stop_server() { [ -z "$PID" ] || kill -KILL "$PID" 2>/dev/null || true; }
trap 'rc=$?; stop_server; (exit $rc); _cleanup' EXIT

# start_server SOCK LOG [ARGS...]: start it, wait for "ready" (at most 60 s).
start_server() {
	local sock=$1 log=$2
	shift 2
	rm -f "$T/ready"
	mkfifo "$T/ready"
	"$DLFS" "$DS" --serve "$sock" --ready-fd 3 "$@" 3>"$T/ready" >"$log" 2>&1 &
	PID=$!
	local got
	got=$(timeout 60 head -n 1 "$T/ready" || true)
	[ "$got" = ready ] || { cat "$log" >&2; fail "the server did not say ready within 60 s"; }
}

note "the wire, answer by answer"
SOCK="$T/s.sock"
start_server "$SOCK" "$T/serve.log"
[ -S "$SOCK" ] || fail "no socket at $SOCK once ready"
[ "$(stat -c %a "$SOCK")" = 600 ] || fail "the socket's mode is $(stat -c %a "$SOCK"), not 600"
tmo "$PYTHON" "$HERE/wirecheck.py" "$SOCK" "$SRC" || fail "wirecheck found differences (see above)"

note "SIGTERM ends it cleanly"
kill -TERM "$PID"
wait_exit "$PID" 30
[ "$WAIT_RC" = 0 ] || { cat "$T/serve.log" >&2; fail "the server exited with $WAIT_RC after SIGTERM"; }
PID=
[ ! -e "$SOCK" ] || fail "the socket is still there after the server ended"
check_log "$T/serve.log" 'broke the protocol'
grep -q 'broke the protocol' "$T/serve.log" || fail "the broken client was not logged"

note "SIGINT too"
start_server "$SOCK" "$T/serve2.log" -o ram_cache=64M
kill -INT "$PID"
wait_exit "$PID" 30
[ "$WAIT_RC" = 0 ] || fail "the server exited with $WAIT_RC after SIGINT"
PID=
[ ! -e "$SOCK" ] || fail "the socket is still there after SIGINT"

note "refused"
: >"$T/taken"
run "$DLFS" "$DS" --serve "$T/taken"
expect_rc 1 "a socket path that is taken"
err_has "taken: Address already in use" "a socket path that is taken"
mkdir "$T/mnt"
run "$DLFS" "$DS" "$T/mnt" --serve "$T/x.sock"
expect_rc 2 "a mountpoint and --serve"
err_has "usage: dlfs DATASET --serve SOCKET" "a mountpoint and --serve"
run "$DLFS" "$DS" "$T/mnt" --ready-fd 1
expect_rc 2 "--ready-fd without --serve"
err_has "--ready-fd needs --serve" "--ready-fd without --serve"
run "$DLFS" "$DS" --serve
expect_rc 2 "--serve without a socket"
err_has "--serve needs a value" "--serve without a socket"
OMPI_COMM_WORLD_SIZE=2 run "$DLFS" "$DS" --serve "$T/x.sock"
expect_rc 1 "--serve under an MPI launch"
err_has "--serve runs alone: MPI peers need the FUSE mount" "--serve under an MPI launch"
[ ! -e "$T/x.sock" ] || fail "a refused server left a socket"
run "$DLFS" "$T/no-such.dlfs" --serve "$T/x.sock"
expect_rc 1 "a dataset that is not there"
[ ! -e "$T/x.sock" ] || fail "a refused server left a socket"
exit 0
