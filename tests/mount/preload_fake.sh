#!/bin/bash
# preload_fake: libdlfs-preload.so against tests/util/fakeserve.c, which
# serves a plain directory over the wire (no dataset, no dlfs server):
# diff -r, find, ls -l and a Python walk see the directory's tree at the
# prefix, and its .dlfs/stats grows as it is read; the library never says
# the server is gone. Then preload_procs (tests/util) runs its modes:
# fork with threads holding the library's locks, _Fork, pthread_cancel,
# vfork, reads from a signal handler, connections of the parent in a
# child. For the library alone; preload.sh is the real thing.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"
: "${FAKESERVE:?set FAKESERVE to the fakeserve of tests/util}"
: "${DLFS_PRELOAD_LIB:?set DLFS_PRELOAD_LIB}"
: "${PRELOAD_PROCS:?set PRELOAD_PROCS to the preload_procs of tests/util}"
SRC="$T/src"
gentree odd "$SRC" --seed 5
"$FAKESERVE" "$SRC" "$T/sock" >"$T/ready" 2>"$T/fake.log" &
FAKE=$!
# The status first: _cleanup reports $?, which kill would reset.
trap 'rc=$?; kill $FAKE 2>/dev/null; (exit $rc); _cleanup' EXIT
for _ in $(seq 100); do grep -q ready "$T/ready" 2>/dev/null && break; sleep 0.05; done
grep -q ready "$T/ready" || fail "fakeserve did not start: $(cat "$T/fake.log")"
mkdir "$T/v"
P="$T/v/ds"
pl() { timeout -k 5 120 env DLFS_PRELOAD="$P=$T/sock" LD_PRELOAD="$DLFS_PRELOAD_LIB" "$@" 2>>"$T/pl.err"; }

pl diff -r --no-dereference "$SRC" "$P" >"$T/diff" 2>&1 || { head -n 20 "$T/diff" >&2; fail "diff -r"; }
(cd "$SRC" && find . -printf '%P %y %m %s %T@\n') | sort >"$T/find.src"
pl bash -c 'cd "$1" && find . -printf "%P %y %m %s %T@\n"' _ "$P" | sort >"$T/find.pl"
cmp -s "$T/find.src" "$T/find.pl" || { diff "$T/find.src" "$T/find.pl" | head >&2; fail "find lists other entries"; }
pl "$PYTHON" - "$SRC" "$P" <<'PY' || fail "the view from Python differs"
import json, os, sys
src, p = sys.argv[1:3]
for d, ds, fs in os.walk(src):
    for n in ds + fs:
        a = os.lstat(os.path.join(d, n))
        b = os.lstat(os.path.join(p, os.path.relpath(os.path.join(d, n), src)))
        for k in ("st_mode", "st_size", "st_mtime_ns", "st_ino", "st_nlink"):
            assert getattr(a, k) == getattr(b, k), (n, k, getattr(a, k), getattr(b, k))
s1 = json.load(open(os.path.join(p, ".dlfs/stats")))["reads"]
s2 = json.load(open(os.path.join(p, ".dlfs/stats")))["reads"]
assert s2 > s1, (s1, s2)
assert ".dlfs" not in os.listdir(p)
PY
if grep -q "dlfs-preload:" "$T/pl.err"; then
	fail "the library complained: $(grep dlfs-preload: "$T/pl.err" | head -n 3)"
fi

# readdir leaves errno alone on success; the root's ".." stats the
# prefix's parent, which does not exist here (ENOENT).
timeout -k 5 120 env DLFS_PRELOAD="$T/nodir/ds=$T/sock" LD_PRELOAD="$DLFS_PRELOAD_LIB" \
	"$PYTHON" - "$T/nodir/ds" <<'PY' 2>>"$T/pl.err" || fail "readdir changed errno on success"
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.opendir.restype = ctypes.c_void_p
libc.readdir.restype = ctypes.c_void_p
libc.readdir.argtypes = [ctypes.c_void_p]
d = libc.opendir(sys.argv[1].encode())
assert d, ctypes.get_errno()
n = 0
while True:
    ctypes.set_errno(0)
    e = libc.readdir(d)
    assert ctypes.get_errno() == 0, (n, ctypes.get_errno())
    if not e:
        break
    n += 1
assert n > 2, n
PY

f=$(cd "$SRC" && find . -type f -size +64k | sort | head -n 1)
[ -n "$f" ] || fail "test setup: no file over 64 KiB"
for m in fork rawfork cancel vfork signals leak; do
	st=0
	timeout -k 5 120 env DLFS_PRELOAD="$P=$T/sock" LD_PRELOAD="$DLFS_PRELOAD_LIB" \
		"$PRELOAD_PROCS" "$m" "$SRC" "$P" "$f" >"$T/procs.out" 2>"$T/procs.err" || st=$?
	[ "$st" = 0 ] || fail "preload_procs $m (status $st): $(head -c 1000 "$T/procs.err")"
done
