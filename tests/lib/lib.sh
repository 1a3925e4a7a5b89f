# Shared helpers for the dlfs shell tests (tests/integration, tests/mount,
# tests/mpi). Source it from a script that runs under `set -euo pipefail`:
#
#   . "$(dirname "$0")/../lib/lib.sh"
#
# The other helpers of tests/lib/ are sourced after it through $LIB_DIR
# (ixlib.sh, cachelib.sh, mpilib.sh), and its Python programs are run
# from there (gentree.py through gentree below, h5data.py, readtree.py).
#
# Environment:
#   DLFS_PACK, DLFS_INSPECT  the binaries under test (default: build/tools/)
#   PYTHON                   a python3 with the stdlib (default /usr/bin/python3)
#   DLFS_TEST_TIMEOUT        seconds allowed per tool run (default 300)
#   DLFS_TEST_KEEP=1         keep the temp dir (its path is printed)
#
# It creates the temp dir $T and removes it (unmounting what the test
# registered with add_mount, and running what it registered with at_exit)
# in an EXIT trap, also on failure.

LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC_ROOT=$(cd "$LIB_DIR/../.." && pwd)
GENTREE="$LIB_DIR/gentree.py"
TEST_NAME=$(basename "$0" .sh)

: "${DLFS_PACK:=$SRC_ROOT/build/tools/dlfs-pack}"
: "${DLFS_INSPECT:=$SRC_ROOT/build/tools/dlfs-inspect}"
: "${PYTHON:=/usr/bin/python3}"
: "${DLFS_TEST_TIMEOUT:=300}"
export LC_ALL=C TZ=UTC

fail() {
	echo "FAIL [$TEST_NAME]: $*" >&2
	exit 1
}

skip() {
	echo "SKIP [$TEST_NAME]: $*" >&2
	exit 77
}

note() {
	echo "[$TEST_NAME] $*" >&2
}

for _b in "$DLFS_PACK" "$DLFS_INSPECT"; do
	[ -x "$_b" ] || fail "binary not found or not executable: $_b (set DLFS_PACK / DLFS_INSPECT)"
done
[ -x "$PYTHON" ] || fail "python not found: $PYTHON (set PYTHON)"
unset _b

_MOUNTS=()
add_mount() { _MOUNTS+=("$1"); }

# at_exit CMD...: run CMD at exit, also on failure, after the mounts and
# daemons are gone and before $T is removed; the last registered runs
# first. For what a test changes outside $T (a user it made, a device's
# mode): register the undo before making the change.
_AT_EXIT=()
at_exit() {
	local q
	printf -v q '%q ' "$@"
	_AT_EXIT+=("$q")
}

_cleanup() {
	local rc=$? m
	set +e
	# Children we started in the background (sigint tests) must not outlive us.
	for m in $(jobs -p); do kill -KILL "$m" 2>/dev/null; done
	for m in "${_MOUNTS[@]}"; do
		umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null
	done
	for ((m = ${#_AT_EXIT[@]} - 1; m >= 0; m--)); do
		if ! eval "${_AT_EXIT[m]}"; then
			echo "FAIL [$TEST_NAME]: at exit: ${_AT_EXIT[m]}failed" >&2
			case $rc in 0 | 77) rc=1 ;; esac
		fi
	done
	if [ -n "${T:-}" ] && [ -d "$T" ]; then
		if [ "${DLFS_TEST_KEEP:-0}" = 1 ]; then
			echo "[$TEST_NAME] kept $T" >&2
		else
			chmod -R u+rwx "$T" 2>/dev/null
			rm -rf "$T"
		fi
	fi
	if [ "$rc" = 0 ]; then
		echo "PASS [$TEST_NAME]" >&2
	fi
	exit "$rc"
}
trap _cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

T=$(mktemp -d "${TMPDIR:-/tmp}/dlfs-$TEST_NAME.XXXXXX")

# gentree KIND DEST [options]
gentree() {
	"$PYTHON" "$GENTREE" "$@" || fail "gentree $* failed"
}

# run CMD...: runs CMD under a timeout; stdout goes to $T/out, stderr to
# $T/err, and the exit status to $RC. Never fails by itself.
RC=0
run() {
	RC=0
	timeout -k 10 "$DLFS_TEST_TIMEOUT" "$@" </dev/null >"$T/out" 2>"$T/err" || RC=$?
	if [ "$RC" = 124 ] || [ "$RC" = 137 ]; then
		fail "timed out (or killed) after ${DLFS_TEST_TIMEOUT}s, status $RC: $*"
	fi
	return 0
}

_show() {
	echo "--- command: $LAST_CMD" >&2
	echo "--- exit status: $RC" >&2
	echo "--- stdout (first 40 lines):" >&2
	head -n 40 "$T/out" | cat -v >&2
	echo "--- stderr (first 40 lines):" >&2
	head -n 40 "$T/err" | cat -v >&2
}

# pack ARGS...  / inspect ARGS...: run the tool, same conventions as run.
LAST_CMD=
pack() { LAST_CMD="dlfs-pack $*"; run "$DLFS_PACK" "$@"; }
inspect() { LAST_CMD="dlfs-inspect $*"; run "$DLFS_INSPECT" "$@"; }

# expect_rc N WHAT: the last run exited N.
expect_rc() {
	if [ "$RC" != "$1" ]; then
		_show
		fail "$2: expected exit status $1, got $RC"
	fi
}

# expect_fail WHAT: the last run exited non-zero, and was not killed by a
# signal (a crash is never an acceptable way to report an error).
expect_fail() {
	if [ "$RC" = 0 ] || [ "$RC" -ge 128 ]; then
		_show
		fail "$1: expected a clean error exit (1..127), got $RC"
	fi
}

# expect_ok WHAT
expect_ok() { expect_rc 0 "$1"; }

# err_has STRING WHAT: stderr of the last run contains STRING (fixed string).
err_has() {
	if ! grep -qF -- "$1" "$T/err"; then
		_show
		fail "$2: stderr does not contain '$1'"
	fi
}

# err_has_re REGEX WHAT: stderr matches the extended regex (case-insensitive).
err_has_re() {
	if ! grep -qiE -- "$1" "$T/err"; then
		_show
		fail "$2: stderr does not match /$1/"
	fi
}

out_has() {
	if ! grep -qF -- "$1" "$T/out"; then
		_show
		fail "$2: stdout does not contain '$1'"
	fi
}

# assert_absent PATH WHAT
assert_absent() {
	if [ -e "$1" ] || [ -L "$1" ]; then
		fail "$2: $1 exists but should not"
	fi
}

# assert_empty_dir DIR WHAT: nothing at all (no OUT, no temp litter) in DIR.
assert_empty_dir() {
	local left
	left=$(ls -A "$1")
	if [ -n "$left" ]; then
		fail "$2: $1 should be empty but holds: $(echo "$left" | tr '\n' ' ')"
	fi
}

# json_get FILE KEY: print one top-level key of a JSON object.
json_get() {
	"$PYTHON" - "$1" "$2" <<'EOF' || fail "cannot read key '$2' from JSON in $1: $(head -c 300 "$1")"
import json, sys
with open(sys.argv[1], "rb") as f:
    d = json.loads(f.read().decode("utf-8", "surrogateescape"))
v = d[sys.argv[2]]
print(json.dumps(v) if isinstance(v, (dict, list)) else v)
EOF
}

# compare_trees SRC DST [--mtime ns|s|none] [--dir-mtime ns|s|none] [--with-root]
#   Walks both trees (bytes paths, no symlink following) and compares every
#   entry: type, mode (all 12 permission bits), size for files, mtime for
#   files and dirs, target for symlinks. Content is compared byte by byte.
#   The top directories themselves are compared only with --with-root.
#   Prints each difference; fails if there is any.
compare_trees() {
	"$PYTHON" - "$@" <<'EOF' || fail "trees differ: $1 vs $2"
import os, stat, sys, filecmp
args = sys.argv[1:]
src, dst = os.fsencode(args[0]), os.fsencode(args[1])
opts = args[2:]
def opt(name, default):
    return opts[opts.index(name) + 1] if name in opts else default
fmt, dmt = opt("--mtime", "ns"), None
dmt = opt("--dir-mtime", fmt)
skip_root = "--with-root" not in opts

def walk(top):
    out = {}
    for dirpath, dirnames, filenames in os.walk(top):
        for n in dirnames + filenames:
            p = os.path.join(dirpath, n)
            out[os.path.relpath(p, top)] = os.lstat(p)
    if not skip_root:
        out[b"."] = os.lstat(top)
    return out

def show(p):
    return repr(p)[1:]

a, b = walk(src), walk(dst)
errs = []
for p in sorted(set(a) - set(b)):
    errs.append("missing in extracted tree: %s" % show(p))
for p in sorted(set(b) - set(a)):
    errs.append("extra in extracted tree: %s" % show(p))
def mt(st, prec):
    if prec == "ns":
        return st.st_mtime_ns
    if prec == "s":
        return st.st_mtime_ns // 10**9
    return None
for p in sorted(set(a) & set(b)):
    x, y = a[p], b[p]
    if stat.S_IFMT(x.st_mode) != stat.S_IFMT(y.st_mode):
        errs.append("%s: type %o vs %o" % (show(p), stat.S_IFMT(x.st_mode), stat.S_IFMT(y.st_mode)))
        continue
    if stat.S_ISLNK(x.st_mode):
        ta, tb = os.readlink(os.path.join(src, p)), os.readlink(os.path.join(dst, p))
        if ta != tb:
            errs.append("%s: symlink target %r vs %r" % (show(p), ta, tb))
        continue
    if stat.S_IMODE(x.st_mode) != stat.S_IMODE(y.st_mode):
        errs.append("%s: mode %04o vs %04o" % (show(p), stat.S_IMODE(x.st_mode), stat.S_IMODE(y.st_mode)))
    prec = dmt if stat.S_ISDIR(x.st_mode) else fmt
    if mt(x, prec) != mt(y, prec):
        errs.append("%s: mtime_ns %d vs %d" % (show(p), x.st_mtime_ns, y.st_mtime_ns))
    if stat.S_ISREG(x.st_mode):
        if x.st_size != y.st_size:
            errs.append("%s: size %d vs %d" % (show(p), x.st_size, y.st_size))
        elif not filecmp.cmp(os.path.join(src, p), os.path.join(dst, p), shallow=False):
            errs.append("%s: content differs" % show(p))
for e in errs[:50]:
    print("  " + e, file=sys.stderr)
if len(errs) > 50:
    print("  ... and %d more" % (len(errs) - 50), file=sys.stderr)
sys.exit(1 if errs else 0)
EOF
}

# diff_trees SRC DST: `diff -r --no-dereference`, failing with its output.
diff_trees() {
	if ! diff -r --no-dereference "$1" "$2" >"$T/diff.out" 2>&1; then
		head -n 30 "$T/diff.out" | cat -v >&2
		fail "diff -r --no-dereference $1 $2 found differences"
	fi
}

# tree_counts DIR: prints JSON {"files":..,"dirs":..,"symlinks":..,"bytes":..}
# counting DIR itself as a directory and hard links once per name.
tree_counts() {
	"$PYTHON" - "$1" <<'EOF'
import os, stat, sys, json
top = os.fsencode(sys.argv[1])
c = {"files": 0, "dirs": 1, "symlinks": 0, "bytes": 0}
for dp, dn, fn in os.walk(top):
    for n in dn + fn:
        st = os.lstat(os.path.join(dp, n))
        if stat.S_ISDIR(st.st_mode): c["dirs"] += 1
        elif stat.S_ISLNK(st.st_mode): c["symlinks"] += 1
        elif stat.S_ISREG(st.st_mode):
            c["files"] += 1; c["bytes"] += st.st_size
print(json.dumps(c))
EOF
}

# check_info_counts DATASET SRC: info --json counts match the source tree.
check_info_counts() {
	inspect info --json "$1"
	expect_ok "dlfs-inspect info --json $1"
	cp "$T/out" "$T/info.json"
	tree_counts "$2" >"$T/counts.json"
	"$PYTHON" - "$T/info.json" "$T/counts.json" "$1" <<'EOF' || fail "info --json of $1 does not match the source $2"
import json, sys, os
info = json.loads(open(sys.argv[1], "rb").read().decode("utf-8", "surrogateescape"))
src = json.load(open(sys.argv[2]))
ds = sys.argv[3]
errs = []
def eq(k, want):
    if info.get(k) != want:
        errs.append("%s: info says %r, expected %r" % (k, info.get(k), want))
eq("files", src["files"])
eq("dirs", src["dirs"])
eq("symlinks", src["symlinks"])
eq("inodes", src["files"] + src["dirs"] + src["symlinks"])
eq("file_bytes", src["bytes"])
eq("format_version", "1.1")
eq("features", ["path_bound"])
dlc = sorted(n for n in os.listdir(ds) if n.endswith(".dlc"))
eq("containers", len(dlc))
want_names = ["%06d.dlc" % i for i in range(len(dlc))]
if dlc != want_names:
    errs.append("container files %r, expected %r" % (dlc, want_names))
idx = os.path.join(ds, "index")
ib = info.get("index_bytes")
if not isinstance(ib, int) or ib <= 0 or ib > os.path.getsize(idx):
    errs.append("index_bytes %r not in (0, size of index file %d]" % (ib, os.path.getsize(idx)))
did = info.get("dataset_id")
if not (isinstance(did, str) and len(did) == 32 and all(c in "0123456789abcdef" for c in did.lower())):
    errs.append("dataset_id %r is not 32 hex digits" % (did,))
for e in errs:
    print("  " + e, file=sys.stderr)
sys.exit(1 if errs else 0)
EOF
}

# ---------------------------------------------------------------------------
# FUSE mount helpers, for tests/mount/*.sh. Call mount_setup once, right
# after sourcing this file. It needs:
#   DLFS                the daemon under test (default build/src/daemon/dlfs)
#   DLFS_MOUNT_TIMEOUT  seconds to wait for a mount to become ready (30)
#   DLFS_CMD_TIMEOUT    seconds allowed per client command (120)
# Mounts made with dlfs_mount (or registered with track_mount) are always
# unmounted at exit, also on failure: fusermount3 -u, else -uz; then every
# daemon we started gets SIGTERM, and SIGKILL if it has not exited within
# 10 s; then the normal cleanup of $T runs.

# mount_setup: checks the prerequisites and installs the exit trap.
mount_setup() {
	: "${DLFS:=$SRC_ROOT/build/src/daemon/dlfs}"
	: "${DLFS_MOUNT_TIMEOUT:=30}"
	: "${DLFS_CMD_TIMEOUT:=120}"
	[ -e /dev/fuse ] || skip "/dev/fuse does not exist"
	[ -r /dev/fuse ] && [ -w /dev/fuse ] || skip "/dev/fuse is not accessible"
	[ -x "$DLFS" ] || fail "daemon not found or not executable: $DLFS (set DLFS)"
	command -v fusermount3 >/dev/null || fail "fusermount3 not found (package fuse3)"
	command -v mountpoint >/dev/null || fail "mountpoint not found (util-linux)"
	declare -gA _DLFS_PID_OF=() _DLFS_LOG_OF=()
	declare -ga _DLFS_MNTS=() _DLFS_PIDS=() _SOFT_FAILS=() _PLAIN_MNTS=()
	DLFS_PID='' DLFS_LOG=''
	trap _mount_cleanup EXIT
}

# is_mounted MNT: MNT is a mount point in /proc/mounts.
is_mounted() {
	local m
	# Canonicalize the parent only: stat of a dead FUSE mount fails.
	m=$(realpath -m "$(dirname "$1")")/$(basename "$1")
	awk -v m="$m" '$2 == m { found = 1 } END { exit !found }' /proc/mounts
}

# track_mount MNT [PID [LOG]]: MNT (and the daemon PID) are cleaned up at exit.
track_mount() {
	_DLFS_MNTS+=("$1")
	if [ -n "${2:-}" ]; then
		_DLFS_PIDS+=("$2")
		_DLFS_PID_OF[$1]=$2
	fi
	[ -z "${3:-}" ] || _DLFS_LOG_OF[$1]=$3
}

# track_plain_mount MNT: a non-FUSE mount the test made (a tmpfs); it is
# unmounted at exit, after every FUSE mount and daemon is gone.
track_plain_mount() { _PLAIN_MNTS+=("$1"); }

# file_map SRC DATASET OUT: writes OUT as JSON {rel: {"container",
# "offset", "size"}} for every regular file, from dlfs-inspect stat --json.
file_map() {
	"$PYTHON" - "$1" "$2" "$DLFS_INSPECT" >"$3" <<'PY' || fail "cannot map the files of $2 to containers"
import json, os, subprocess, sys
src, ds, insp = sys.argv[1:4]
m = {}
for dp, _, fn in os.walk(src):
    for n in fn:
        rel = os.path.relpath(os.path.join(dp, n), src)
        j = json.loads(subprocess.run([insp, "stat", "--json", ds, rel], check=True,
                                      stdout=subprocess.PIPE).stdout)
        m[rel] = {"container": j.get("container", 0), "offset": j.get("offset", 0), "size": j["size"]}
print(json.dumps(m))
PY
}

_mount_cleanup() {
	local rc=$? m p i
	set +e
	for m in "${_DLFS_MNTS[@]}"; do
		if is_mounted "$m"; then
			timeout -k 5 20 fusermount3 -u "$m" 2>/dev/null ||
				timeout -k 5 20 fusermount3 -uz "$m" 2>/dev/null ||
				umount -l "$m" 2>/dev/null
		fi
	done
	for p in "${_DLFS_PIDS[@]}"; do
		kill -0 "$p" 2>/dev/null || continue
		kill -TERM "$p" 2>/dev/null
		for ((i = 0; i < 100; i++)); do
			kill -0 "$p" 2>/dev/null || break
			sleep 0.1
		done
		if kill -0 "$p" 2>/dev/null; then
			echo "[$TEST_NAME] daemon $p ignored SIGTERM for 10 s: SIGKILL" >&2
			kill -KILL "$p" 2>/dev/null
		fi
	done
	# Plain mounts (a tmpfs cache dir) last: the daemons held files there.
	for m in "${_PLAIN_MNTS[@]}"; do
		if is_mounted "$m"; then
			umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null ||
				echo "[$TEST_NAME] WARNING: cannot unmount $m" >&2
		fi
	done
	for m in "${_DLFS_MNTS[@]}"; do
		if is_mounted "$m"; then
			echo "[$TEST_NAME] WARNING: $m is still mounted" >&2
			[ "$rc" != 0 ] || rc=1
		fi
	done
	if [ "$rc" != 0 ] && [ "$rc" != 77 ]; then
		for m in "${!_DLFS_LOG_OF[@]}"; do
			p=${_DLFS_LOG_OF[$m]}
			[ -s "$p" ] || continue
			echo "--- daemon log $p (last 30 lines):" >&2
			tail -n 30 "$p" | cat -v >&2
		done
	fi
	(exit "$rc")
	_cleanup
}

# wait_exit PID SECONDS: waits for our child PID to exit; sets WAIT_RC to its
# exit status, or to "timeout" if it is still running after SECONDS.
wait_exit() {
	local i n=$(($2 * 10))
	WAIT_RC=timeout
	for ((i = 0; i < n; i++)); do
		if ! kill -0 "$1" 2>/dev/null; then
			WAIT_RC=0
			wait "$1" 2>/dev/null || WAIT_RC=$?
			return 0
		fi
		sleep 0.1
	done
	return 0
}

# wait_mounted MNT PID LOG: polls until MNT is mounted (at most
# DLFS_MOUNT_TIMEOUT s); fails at once if the daemon PID exits first.
wait_mounted() {
	local i n=$((DLFS_MOUNT_TIMEOUT * 20))
	for ((i = 0; i < n; i++)); do
		if is_mounted "$1" && timeout 10 mountpoint -q "$1"; then
			return 0
		fi
		if ! kill -0 "$2" 2>/dev/null; then
			local st=0
			wait "$2" 2>/dev/null || st=$?
			echo "--- daemon log:" >&2
			head -n 40 "$3" | cat -v >&2
			fail "dlfs exited with status $st before $1 was mounted"
		fi
		sleep 0.05
	done
	fail "$1 not mounted after ${DLFS_MOUNT_TIMEOUT}s (daemon $2, log $3)"
}

# dlfs_mount DATASET MNT [DLFS ARGS...]: starts `dlfs DATASET MNT -f ARGS`
# in the background, stdout and stderr to $T/dlfs-<basename MNT>.log, and
# waits until the mount is ready. Sets DLFS_PID and DLFS_LOG.
dlfs_mount() {
	local ds=$1 mnt=$2
	shift 2
	DLFS_LOG="$T/dlfs-$(basename "$mnt").log"
	[ ! -e "$DLFS_LOG" ] || mv "$DLFS_LOG" "$DLFS_LOG.$(date +%s%N)"
	"$DLFS" "$ds" "$mnt" -f "$@" </dev/null >"$DLFS_LOG" 2>&1 &
	DLFS_PID=$!
	track_mount "$mnt" "$DLFS_PID" "$DLFS_LOG"
	wait_mounted "$mnt" "$DLFS_PID" "$DLFS_LOG"
}

# dlfs_umount MNT: fusermount3 -u MNT; the daemon must exit with status 0
# within 30 s and MNT must be gone from /proc/mounts.
dlfs_umount() {
	local mnt=$1 pid=${_DLFS_PID_OF[$1]:-}
	local st=0
	timeout -k 5 30 fusermount3 -u "$mnt" 2>"$T/fusermount.err" || st=$?
	[ "$st" = 0 ] || fail "fusermount3 -u $mnt failed with status $st: $(cat "$T/fusermount.err")"
	! is_mounted "$mnt" || fail "$mnt is still in /proc/mounts after fusermount3 -u"
	if [ -n "$pid" ]; then
		wait_exit "$pid" 30
		[ "$WAIT_RC" != timeout ] || fail "daemon $pid still running 30 s after fusermount3 -u $mnt"
		[ "$WAIT_RC" = 0 ] || fail "daemon for $mnt exited with status $WAIT_RC after fusermount3 -u (log: ${_DLFS_LOG_OF[$mnt]:-?})"
	fi
}

# Log lines that a daemon must not print in normal operation.
DLFS_LOG_BAD_RE='error|warn|fail|corrupt|mismatch|checksum|abort|assert|sanitizer|leak|segv|segmentation|fault|fatal|panic|cannot|can.t|unable|invalid|denied|no such|input/output|truncat|unsupported|unknown|bug'

# check_log LOG [ALLOW_ERE]: fails if LOG has a line that looks like an
# error, warning or crash report, other than lines matching ALLOW_ERE.
check_log() {
	local allow=${2:-'^$'}
	if grep -viE -- "$allow" "$1" | grep -iE -- "$DLFS_LOG_BAD_RE" >"$T/badlog" 2>/dev/null; then
		echo "--- unexpected lines in daemon log $1:" >&2
		head -n 20 "$T/badlog" | cat -v >&2
		fail "daemon log $1 has unexpected error lines"
	fi
}

# tmo CMD...: CMD under timeout DLFS_CMD_TIMEOUT; a timeout fails the test
# (a hung mount must not hang the test). Returns CMD's exit status.
tmo() {
	local st=0
	timeout -k 10 "$DLFS_CMD_TIMEOUT" "$@" || st=$?
	if [ "$st" = 124 ] || [ "$st" = 137 ]; then
		fail "timed out after ${DLFS_CMD_TIMEOUT}s: $*"
	fi
	return "$st"
}

# must WHAT CMD...: CMD (under tmo) must succeed.
must() {
	local what=$1 st=0
	shift
	tmo "$@" || st=$?
	[ "$st" = 0 ] || fail "$what: '$*' exited with status $st"
}

# expect_errno MSG WHAT CMD...: CMD fails (under tmo) and its stderr
# contains MSG, e.g. "Read-only file system".
expect_errno() {
	local msg=$1 what=$2 st=0
	shift 2
	tmo "$@" </dev/null >"$T/errno.out" 2>"$T/errno.err" || st=$?
	if [ "$st" = 0 ]; then
		fail "$what: '$*' succeeded, expected it to fail with '$msg'"
	fi
	if ! grep -qF -- "$msg" "$T/errno.err"; then
		echo "--- stderr of '$*' (status $st):" >&2
		head -n 10 "$T/errno.err" | cat -v >&2
		fail "$what: expected '$msg' on stderr"
	fi
}

# need_py MODULE...: skip (77) unless $PYTHON can import every MODULE.
need_py() {
	local m
	for m in "$@"; do
		"$PYTHON" -c "import $m" 2>/dev/null ||
			skip "python module '$m' is not importable by $PYTHON (Debian package python3-$m)"
	done
}

# soft_fail MSG: report a failure but go on testing; finish then exits 1.
# For tests with independent parts (faults.sh), so one daemon bug does not
# hide the others.
soft_fail() {
	echo "FAIL [$TEST_NAME]: $*" >&2
	_SOFT_FAILS+=("$*")
}

# finish: exit 0, or 1 (listing them) if soft_fail was called.
finish() {
	if [ "${#_SOFT_FAILS[@]}" -gt 0 ]; then
		echo "FAIL [$TEST_NAME]: ${#_SOFT_FAILS[@]} failure(s):" >&2
		local f
		for f in "${_SOFT_FAILS[@]}"; do echo "  - $f" >&2; done
		exit 1
	fi
	exit 0
}
