# Helpers for the preload tests (tests/mount/preload*.sh): the dataset is
# served by `dlfs DATASET --serve SOCKET` and read by programs that run
# with libdlfs-preload.so, no FUSE. Source it after lib.sh; it needs
#   DLFS          the daemon (dlfs), which has --serve
#   DLFS_PRELOAD_LIB  libdlfs-preload.so
#   DLFS_RUN      dlfs-run, if it is there: then prun goes through it
#   DLFS_CMD_TIMEOUT  seconds allowed per client command (120)
#
# preload_setup: checks the prerequisites; the server is stopped at exit.
# serve DATASET PREFIX [-o opts]: starts the server, waits for its
#   readiness line (--ready-fd), and sets PREFIX for prun.
# prun CMD...: runs CMD with the dataset at PREFIX (under a timeout).
# fuse_mount DATASET MNT: the FUSE mount of the same dataset, if there is
#   /dev/fuse, to compare errors with.

: "${DLFS:=$SRC_ROOT/build/src/daemon/dlfs}"
: "${DLFS_CMD_TIMEOUT:=120}"
: "${DLFS_PRELOAD_LIB:=$SRC_ROOT/build/src/preload/libdlfs-preload.so}"

preload_setup() {
	[ -x "$DLFS" ] || fail "daemon not found or not executable: $DLFS (set DLFS)"
	[ -r "$DLFS_PRELOAD_LIB" ] || fail "libdlfs-preload.so not found: $DLFS_PRELOAD_LIB (set DLFS_PRELOAD_LIB)"
	SERVER_PID=''
	trap _preload_cleanup EXIT
}

_preload_cleanup() {
	local rc=$?
	set +e
	if [ -n "${FUSE_MNT:-}" ] && mountpoint -q "$FUSE_MNT"; then
		fusermount3 -u "$FUSE_MNT" 2>/dev/null || fusermount3 -uz "$FUSE_MNT" 2>/dev/null
	fi
	if [ -n "${SERVER_PID:-}" ]; then
		kill -TERM "$SERVER_PID" 2>/dev/null
		for _ in $(seq 50); do
			kill -0 "$SERVER_PID" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$SERVER_PID" 2>/dev/null
		if [ "$rc" != 0 ] && [ -s "$T/server.log" ]; then
			echo "--- server log (last 20 lines):" >&2
			tail -n 20 "$T/server.log" >&2
		fi
	fi
	(exit "$rc")
	_cleanup
}

serve() {
	local ds=$1
	SERVED_DS=$ds
	PREFIX=$2
	shift 2
	SERVE_ARGS=("$@")
	SOCK="$T/sock"
	rm -f "$T/ready.fifo"
	mkfifo "$T/ready.fifo"
	"$DLFS" "$ds" --serve "$SOCK" --ready-fd 3 "$@" 3>"$T/ready.fifo" \
		>"$T/server.log" 2>&1 </dev/null &
	SERVER_PID=$!
	local line=''
	read -r -t 30 line <"$T/ready.fifo" || true
	[ "$line" = ready ] || fail "the server did not get ready: $(tail -n 5 "$T/server.log")"
}

prun() {
	local st=0
	if [ -n "${DLFS_RUN:-}" ] && [ -x "$DLFS_RUN" ] && [ -z "${PRUN_DIRECT:-}" ]; then
		# dlfs-run starts its own server; the one above is unused then.
		timeout -k 10 "$DLFS_CMD_TIMEOUT" "$DLFS_RUN" "${SERVE_ARGS[@]}" "$SERVED_DS:$PREFIX" -- "$@" || st=$?
	else
		timeout -k 10 "$DLFS_CMD_TIMEOUT" env DLFS_PRELOAD="$PREFIX=$SOCK" \
			LD_PRELOAD="$DLFS_PRELOAD_LIB" "$@" || st=$?
	fi
	if [ "$st" = 124 ] || [ "$st" = 137 ]; then
		fail "timed out after ${DLFS_CMD_TIMEOUT}s: $*"
	fi
	return "$st"
}

# fuse_mount DATASET MNT: a FUSE mount of the same dataset, to compare
# with (unmounted at exit). @return 1 when this machine cannot mount.
fuse_mount() {
	[ -r /dev/fuse ] && [ -w /dev/fuse ] && command -v fusermount3 >/dev/null || return 1
	mkdir -p "$2"
	timeout -k 5 60 "$DLFS" "$1" "$2" >"$T/fuse.log" 2>&1 || return 1
	FUSE_MNT=$2
	mountpoint -q "$2"
}

# server_log_clean: the server logged no error.
server_log_clean() {
	if grep -qiE "error|fatal|assert|sanitizer" "$T/server.log"; then
		tail -n 20 "$T/server.log" >&2
		fail "the server logged an error"
	fi
}
