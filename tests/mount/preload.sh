#!/bin/bash
# preload: the odd tree (tree.sh's), packed and served with --serve, read
# through libdlfs-preload.so at a prefix that does not exist on disk, by
# real programs, byte for byte against the source:
#  - diff -r --no-dereference; stat fields as statcmp.py checks them
#    (type, mode, ns mtime, size, symlink targets, st_ino = the index's,
#    readdir's d_ino and d_type);
#  - find's listing (from inside the prefix, after cd), ls -a (no .dlfs);
#  - tar c of the prefix piped to tar t: the same names as the source's;
#    extracted, the same tree;
#  - os.walk + os.read of every file (readtree.py), in 1 MiB and in
#    256 KiB reads (TensorFlow's pattern; preads.py's threads are in
#    preload_ml.sh, on a tree with no symlink loops);
#  - multiprocessing with fork and with spawn, fds inherited over fork;
#  - sqlite3 with immutable=1; cat, head, md5sum, stdio's fopen;
#  - PREFIX/.dlfs/info and stats (whose size grows as it is read again);
#  - writes under the prefix get EROFS (EEXIST, EXDEV, EBADF where the
#    kernel says so); a path outside the prefix is untouched;
#  - a chdir into the prefix carries over exec (execv, execve with an
#    environment of its own, system, a shell), a stale $PWD does not;
#  - preload_errno.py's calls give the same result or errno as on a FUSE
#    mount of the dataset, when this machine can mount;
#  - the server logs no error; once it is gone, calls under the prefix
#    fail with EIO and the library says so once on stderr, and paths
#    that do not reach the prefix still work.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
. "$LIB_DIR/preloadlib.sh"
preload_setup

SRC="$T/src"
gentree odd "$SRC" --seed 3
"$PYTHON" - "$SRC/db.sqlite" <<'PY' || fail "could not make the sqlite database"
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.execute("create table t (id integer primary key, name text, v real)")
c.executemany("insert into t values (?, ?, ?)",
              [(i, "name%05d" % i, i * 0.25) for i in range(20000)])
c.commit()
c.close()
PY
DS="$T/ds.dlfs"
pack "$SRC" -o "$DS" --chunk-size 64K --container-size 1M -q
expect_ok "pack"
mkdir "$T/v"
serve "$DS" "$T/v/ds"
P=$PREFIX
[ ! -e "$P" ] || fail "test setup: the prefix exists on disk"

note "diff -r --no-dereference"
if ! prun diff -r --no-dereference "$SRC" "$P" >"$T/diff.out" 2>&1; then
	head -n 30 "$T/diff.out" | cat -v >&2
	fail "diff -r --no-dereference $SRC $P found differences"
fi

note "stat of every entry"
prun "$PYTHON" "$HERE/statcmp.py" "$SRC" "$P" "$DS" "$DLFS_INSPECT" ||
	fail "stat fields through the preload differ from the source (see above)"

note "find (after cd into the prefix) and ls -a"
(cd "$SRC" && find . -printf '%P %y %m %T@\n') | sort >"$T/find.src"
prun bash -c 'cd "$1" && find . -printf "%P %y %m %T@\n"' _ "$P" | sort >"$T/find.pl"
if ! cmp -s "$T/find.src" "$T/find.pl"; then
	diff "$T/find.src" "$T/find.pl" | head -n 20 >&2 || true
	fail "find lists different entries through the preload"
fi
prun find "$P" -name .dlfs >"$T/find.dlfs"
[ ! -s "$T/find.dlfs" ] || fail "find lists the control directory"
prun ls -a "$P" >"$T/ls.pl"
ls -a "$SRC" >"$T/ls.src"
cmp -s "$T/ls.src" "$T/ls.pl" || { diff "$T/ls.src" "$T/ls.pl" >&2 || true; fail "ls -a of the root differs"; }

note "tar c | tar t, and extracted"
(cd "$SRC" && tar cf - .) | tar tf - | sort >"$T/tar.src"
prun tar cf - -C "$P" . | tar tf - | sort >"$T/tar.pl"
cmp -s "$T/tar.src" "$T/tar.pl" || { diff "$T/tar.src" "$T/tar.pl" | head >&2 || true; fail "tar lists different names"; }
mkdir "$T/x"
prun tar c --format=posix -f "$T/pl.tar" -C "$P" . 2>"$T/tar.err" || fail "tar c of the prefix failed: $(head -n 5 "$T/tar.err")"
[ ! -s "$T/tar.err" ] || fail "tar c of the prefix complained: $(head -n 5 "$T/tar.err")"
tar x --warning=no-timestamp -f "$T/pl.tar" -C "$T/x" || fail "tar x failed"
compare_trees "$SRC" "$T/x"

note "os.walk + read, and 256 KiB reads"
prun "$PYTHON" "$LIB_DIR/readtree.py" "$SRC" "$P" >/dev/null ||
	fail "readtree.py: the bytes differ"
prun "$PYTHON" "$LIB_DIR/readtree.py" "$SRC" "$P" --bs 262144 --seed 5 >/dev/null ||
	fail "readtree.py --bs 256K: the bytes differ"

note "fork and spawn"
prun "$PYTHON" "$HERE/preload_mp.py" "$SRC" "$P" || fail "multiprocessing through the preload"

note "sqlite3 immutable=1, cat, head, md5sum, fopen"
prun "$PYTHON" - "$P/db.sqlite" <<'PY' || fail "sqlite3 through the preload"
import sqlite3, sys
c = sqlite3.connect("file:%s?immutable=1" % sys.argv[1], uri=True)
n, s = c.execute("select count(*), sum(v) from t").fetchone()
assert (n, s) == (20000, sum(i * 0.25 for i in range(20000))), (n, s)
assert c.execute("select name from t where id = 12345").fetchone()[0] == "name12345"
PY
(cd "$SRC" && find . -type f -print0 | sort -z | xargs -0 md5sum) >"$T/md5.src"
prun bash -c 'cd "$1" && find . -type f -print0 | sort -z | xargs -0 md5sum' _ "$P" >"$T/md5.pl"
cmp -s "$T/md5.src" "$T/md5.pl" || fail "md5sum through the preload differs"
f=$(cd "$SRC" && find . -type f -size +100k | sort | head -n 1)
[ -n "$f" ] || fail "test setup: no file over 100k"
cmp <(prun cat "$P/$f") "$SRC/$f" || fail "cat $f differs"
cmp <(prun head -c 70000 "$P/$f") <(head -c 70000 "$SRC/$f") || fail "head -c $f differs"
prun "$PYTHON" - "$SRC/$f" "$P/$f" <<'PY' || fail "ctypes fopen/fread"
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.fopen.restype = ctypes.c_void_p
libc.fopen.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
libc.fread.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t, ctypes.c_void_p]
libc.fseek.argtypes = [ctypes.c_void_p, ctypes.c_long, ctypes.c_int]
libc.fileno.argtypes = [ctypes.c_void_p]
libc.fclose.argtypes = [ctypes.c_void_p]
want = open(sys.argv[1], "rb").read()
fp = libc.fopen(sys.argv[2].encode(), b"rb")
assert fp, "fopen failed"
assert libc.fileno(fp) >= 0
buf = ctypes.create_string_buffer(len(want) + 10)
n = libc.fread(buf, 1, len(want) + 10, fp)
assert buf.raw[:n] == want, "fread gave other bytes"
assert libc.fseek(fp, 1000, 0) == 0
n = libc.fread(buf, 1, 10, fp)
assert buf.raw[:10] == want[1000:1010]
assert libc.fclose(fp) == 0
assert not libc.fopen(sys.argv[2].encode(), b"r+"), "fopen r+ worked"
assert ctypes.get_errno() == 30, ctypes.get_errno()
PY

note "the control directory"
prun "$PYTHON" - "$P" <<'PY' || fail "PREFIX/.dlfs"
import json, os, sys
p = sys.argv[1]
info = json.load(open(os.path.join(p, ".dlfs/info")))
assert info["files"] > 100, info
assert ".dlfs" not in os.listdir(p)
s1 = os.stat(os.path.join(p, ".dlfs/stats")).st_size
t1 = open(os.path.join(p, ".dlfs/stats")).read()
json.loads(t1)
for _ in range(3):
    for d, _, fs in os.walk(p):
        for n in fs:
            if not os.path.islink(os.path.join(d, n)):
                open(os.path.join(d, n), "rb").read()
t2 = open(os.path.join(p, ".dlfs/stats")).read()
assert json.loads(t2) != json.loads(t1), "stats did not change"
assert os.stat(os.path.join(p, ".dlfs/stats")).st_size == len(t2.encode()), "stats' size is stale"
PY

note "writes under the prefix, and a path outside it"
prun "$PYTHON" - "$P" "$T/outside" <<'PY' || fail "EROFS under the prefix"
import errno, os, sys
p, out = sys.argv[1], sys.argv[2]
f = next(os.path.join(d, n) for d, _, fs in os.walk(p) for n in fs)
dd = os.path.join(p, "emptydir")
def want(err, fn, *a, **k):
    try:
        fn(*a, **k)
    except OSError as e:
        assert e.errno == err, "%s%r: %s, expected %s" % (fn.__name__, a, e, errno.errorcode[err])
        return
    raise AssertionError("%s%r worked" % (fn.__name__, a))
want(errno.EROFS, open, os.path.join(p, "new"), "w")
want(errno.EROFS, open, f, "w")
want(errno.EROFS, open, f, "r+")
want(errno.EROFS, open, f, "a")
want(errno.EISDIR, open, dd, "w")
want(errno.EEXIST, os.open, f, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
want(errno.EEXIST, os.mkdir, dd)
want(errno.EROFS, os.mkdir, os.path.join(p, "newdir"))
want(errno.ENOENT, os.mkdir, os.path.join(p, "no/such"))
want(errno.EROFS, os.unlink, f)
want(errno.EROFS, os.rmdir, dd)
want(errno.EROFS, os.rename, f, f + ".2")
want(errno.EXDEV, os.rename, f, os.path.join(out + ".x"))
want(errno.EROFS, os.chmod, f, 0o600)
want(errno.EROFS, os.utime, f, (1, 1))
want(errno.EROFS, os.truncate, f, 0)
want(errno.EROFS, os.symlink, "x", os.path.join(p, "newlink"))
want(errno.EROFS, os.setxattr, f, "user.x", b"1")
fd = os.open(f, os.O_RDONLY)
want(errno.EBADF, os.write, fd, b"x")
want(errno.EROFS, os.fchmod, fd, 0o600)
os.close(fd)
assert not os.access(f, os.W_OK)
assert os.access(f, os.R_OK)
# Outside the prefix everything works as always.
with open(out, "w") as fh:
    fh.write("hello")
assert open(out).read() == "hello"
os.mkdir(out + ".d")
os.rename(out, out + ".d/moved")
assert os.listdir(out + ".d") == ["moved"]
PY

note "the cwd in the prefix, across exec"
# os.chdir does not set $PWD: a child must still start in the prefix
# (execv with environ, execve with an environment of its own, system(),
# a shell's cd); a $PWD under the prefix that is not the cwd is stale.
d=$(cd "$SRC" && find . -mindepth 1 -maxdepth 1 -type d ! -name '.*' | sort | head -n 1)
d=${d#./}
[ -n "$d" ] || fail "test setup: no directory at the top of the tree"
prun "$PYTHON" - "$P" "$d" <<'PY' || fail "the virtual cwd across exec"
import os, subprocess, sys
p, d = sys.argv[1], sys.argv[2]
want = os.path.join(p, d)
names = "".join(n + "\n" for n in sorted(os.listdir(want)))
os.chdir(want)
def run(cmd, **kw):
    return subprocess.run(cmd, check=True, stdout=subprocess.PIPE, **kw).stdout.decode()
assert run(["/bin/pwd", "-P"]) == want + "\n", "execv: " + run(["/bin/pwd", "-P"])
assert run(["ls"], env=dict(os.environ)) == names, "execve with its own env"
assert run(["sh", "-c", "/bin/pwd -P; ls"]) == want + "\n" + names, "sh"
r, w = os.pipe()
os.set_inheritable(w, True)
os.system("/bin/pwd -P >&%d" % w)
os.close(w)
assert os.read(r, 4096).decode() == want + "\n", "system()"
os.chdir("/")
assert run(["/bin/pwd", "-P"]) == "/\n", "after leaving the prefix"
os.chdir(want)
out = run(["sh", "-c", 'cd / && exec /bin/pwd -P'])
assert out == "/\n", "a child that left the prefix: " + out
PY
here=$(pwd -P)
out=$(prun env PWD="$P/$d" "$PYTHON" -c 'import os; print(os.getcwd())')
[ "$out" = "$here" ] || fail "a stale \$PWD under the prefix was taken for the cwd: $out, not $here"

note "errors, against the FUSE mount's"
if fuse_mount "$DS" "$T/mnt"; then
	"$PYTHON" "$HERE/preload_errno.py" "$T/mnt" >"$T/errno.fuse" ||
		fail "preload_errno.py on the FUSE mount"
	prun "$PYTHON" "$HERE/preload_errno.py" "$P" >"$T/errno.pl" ||
		fail "preload_errno.py through the preload"
	if ! cmp -s "$T/errno.fuse" "$T/errno.pl"; then
		diff "$T/errno.fuse" "$T/errno.pl" | cut -c 1-200 >&2 || true
		fail "the preload answers differently from the FUSE mount (- mount, + preload)"
	fi
else
	note "no FUSE here: the errors are not compared with a mount's"
fi
server_log_clean

note "the server gone: EIO, and one line on stderr"
f=$(cd "$SRC" && find . -type f | sort | head -n 1)
kill -TERM "$SERVER_PID"
wait "$SERVER_PID" 2>/dev/null || true
SERVER_PID=''
st=0
# The server of this script, not one of dlfs-run.
PRUN_DIRECT=1 prun "$PYTHON" - "$P/$f" "$P" 2>"$T/gone.err" <<'PY' || st=$?
import errno, os, sys
for p in (sys.argv[1], sys.argv[1], sys.argv[2]):
    try:
        os.stat(p + "/../x")
        os.open(p, os.O_RDONLY)
    except OSError as e:
        assert e.errno == errno.EIO, e
    else:
        sys.exit("%s: opened with the server gone" % p)
PY
[ "$st" = 0 ] || fail "with the server gone: $(cat "$T/gone.err")"
[ "$(grep -c '^dlfs-preload: ' "$T/gone.err")" = 1 ] ||
	fail "with the server gone, stderr is not one dlfs-preload line: $(head -c 500 "$T/gone.err")"

note "the server gone: paths that do not reach the prefix still work"
# "..", "/./", "//" and relative paths from a cwd above the prefix make
# the library walk the path; only a walk that reaches the prefix needs
# the server (a Python import through such a path must not get EIO).
mkdir -p "$T/mod/pkg"
echo 'X = 42' >"$T/mod/pkg/gone_mod.py"
PRUN_DIRECT=1 prun "$PYTHON" - "$SRC" "$T/mod" "$P" 2>"$T/gone2.err" <<'PY' ||
import os, sys
src, mod, p = sys.argv[1:4]
b = os.path.basename(src)
rel = sorted(os.path.relpath(os.path.join(d, n), src) for d, _, fs in os.walk(src)
             for n in fs if not os.path.islink(os.path.join(d, n)))[0]
want = open(os.path.join(src, rel), "rb").read()
for q in (src + "/../" + b + "/" + rel, src + "/./" + rel, src + "//" + rel):
    assert open(q, "rb").read() == want, q
sys.path.insert(0, mod + "/pkg/../pkg")
import gone_mod
assert gone_mod.X == 42
# The cwd above the prefix: relative paths are walked too.
os.chdir(os.path.dirname(os.path.dirname(p)))
os.stat(os.path.relpath(mod, os.getcwd()) + "/../" + os.path.basename(mod) + "/pkg")
os.stat(os.path.basename(os.path.dirname(p)) + "/../" + os.path.basename(mod))
PY
	fail "with the server gone, a path outside the prefix failed: $(cat "$T/gone2.err")"
if grep -q '^dlfs-preload: ' "$T/gone2.err"; then
	fail "with the server gone, paths outside the prefix made the library complain: $(cat "$T/gone2.err")"
fi
