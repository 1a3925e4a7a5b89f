#!/bin/bash
# preload_faults: what libdlfs-preload.so does and says when its server
# (dlfs --serve, no dlfs-run) answers with an error, and when the server
# is killed (issue 38, item 5). A tree of files of 20-50 KiB in 64K
# chunks, packed; each part serves a copy of it:
#  (a) damaged index records, the server alive: a file's inode record is
#      damaged in place (its type bits; the server maps the index, so it
#      sees it): stat and open of that file fail with EIO (as on a FUSE
#      mount), and stderr says "PATH: the dlfs server answered EIO: the
#      dataset's index or a container is damaged there (EUCLEAN" with the
#      file's path, never that the server is gone; another file still
#      reads right. Then the root's record: a new process's first call
#      (its HELLO) fails the same way, named by its path, again not
#      "gone". The server is alive throughout;
#  (b) kill -9, the RAM tier (stage=none, readahead=0): A and E, 20000
#      bytes each, share a chunk. A process opens A, E and D (in another
#      chunk), reads A whole (through the server, which checks it), then
#      again (from the shared RAM tier); the server is killed (SIGKILL)
#      and reaped. Then, in the same process: A whole and a piece: the
#      source's bytes (from the mapping); a piece of E (never checked:
#      the server's to check) fails with EIO; E whole: the source's bytes
#      (its chunk is mapped, and it passes its checksum), then a piece of
#      E too; a piece of D and D whole (its chunk never loaded) and a
#      stat of a name never looked up fail with EIO; stderr has exactly
#      one dlfs-preload line, "the dlfs server is gone (...)" with the
#      reason;
#  (c) kill -9, the NVMe tier (cache_dir, ram_cache=128K: 2 slots): a
#      process reads F whole (the server checks it: known), then other
#      files until a piece of F comes from the NVMe tier directly
#      (tiers.direct.nvme grows); the server is killed, and F's bytes in
#      the cache file are punched out (as the next server of the cache_dir
#      may evict them). A piece of F and F whole then fail with EIO: never
#      the hole's zeros (the cache files are trusted only while their
#      server lives, shm.h).
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"
. "$LIB_DIR/preloadlib.sh"
. "$LIB_DIR/ixlib.sh"
. "$LIB_DIR/cachelib.sh"
preload_setup
export PRUN_DIRECT=1 # the server of serve below, not dlfs-run's

SRC="$T/src"
"$PYTHON" - "$SRC" <<'PY' || fail "test setup: the tree"
import os, random, sys
r = random.Random(38)
for d, n in (("a", 24), ("b", 24)):
    os.makedirs(os.path.join(sys.argv[1], d))
    for i in range(n):
        size = 20000 if d == "a" and i < 2 else r.randrange(20000, 50000)
        with open(os.path.join(sys.argv[1], d, "f%02d" % i), "wb") as f:
            f.write(r.randbytes(size))
PY
DS0="$T/ds0.dlfs"
pack "$SRC" -o "$DS0" --chunk-size 64K -q
expect_ok "pack"
mkdir "$T/v"
# chunk_of PATH: the chunk of DS0 that holds PATH's first byte, as
# "container:chunk" (64K chunks, from the container's start: the data
# region starts at a chunk boundary).
chunk_of() {
	inspect stat --json "$DS0" "$1"
	expect_ok "dlfs-inspect stat $1"
	echo "$(json_get "$T/out" container):$(($(json_get "$T/out" offset) / 65536))"
}
[ "$(chunk_of a/f00)" = "$(chunk_of a/f01)" ] && [ "$(chunk_of a/f00)" != "$(chunk_of b/f20)" ] ||
	fail "test setup: a/f00 and a/f01 are not in one chunk, or b/f20 is in it too"

# fresh NAME: a copy of the dataset at $T/NAME.dlfs, in $DS.
fresh() {
	DS="$T/$1.dlfs"
	cp -a "$DS0" "$DS"
}

# start [OPTS]: serve $DS at $T/v/ds (after a killed server's socket).
start() {
	rm -f "$T/sock"
	serve "$DS" "$T/v/ds" "$@"
	P=$PREFIX
}

# damage INO: flip the type bits of inode INO's record in $DS/index, in
# place (LMDB's own write would copy the page: the live server would not
# see it), to a FIFO's, which no inode of a dataset is.
damage() {
	local db key val
	db=$(inodes_db)
	key=$(printf '%016x' $((($1 - 1) / 16)))
	val=$("$IXEDIT" "$DS/index" get "$db" "$key") || fail "no inode block of $1"
	"$PYTHON" - "$DS/index" "$val" "$1" "$(inode_rec_size)" <<'PY' || fail "damage $1"
import struct, sys
path, val, ino, rs = sys.argv[1], bytes.fromhex(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
data = open(path, "rb").read()
at = data.find(val)
assert at >= 0 and data.find(val, at + 1) < 0, "the block is not once in the file"
at += (ino - 1) % 16 * rs
mode, = struct.unpack_from("<I", data, at)
with open(path, "r+b") as f:
    f.seek(at)
    f.write(struct.pack("<I", (mode & 0o7777) | 0o010000))
PY
}

# lines FILE: the library's lines in FILE.
lines() { grep '^dlfs-preload: ' "$1" || true; }

alive() { kill -0 "$SERVER_PID" 2>/dev/null || fail "$1: the server died: $(tail -n 5 "$T/server.log")"; }

# ---- (a) ----
note "(a) a damaged record: EUCLEAN, with the path"
fresh a
start
prun "$PYTHON" -c 'import sys; open(sys.argv[1], "rb").read()' "$P/b/f01" ||
	fail "(a) a read before the damage"
damage "$(ino_of a/f03)"
st=0
prun "$PYTHON" - "$P" "$SRC" 2>"$T/a1.err" <<'PY' || st=$?
import errno, os, sys
p, src = sys.argv[1:3]
for what, call in (("stat", os.stat), ("open", lambda x: open(x, "rb"))):
    try:
        call(p + "/a/f03")
        sys.exit("%s of a damaged record succeeded" % what)
    except OSError as e:
        if e.errno != errno.EIO:
            sys.exit("%s of a damaged record: %r, expected EIO" % (what, e))
if open(p + "/a/f04", "rb").read() != open(src + "/a/f04", "rb").read():
    sys.exit("a/f04 reads wrong next to the damaged record")
PY
[ "$st" = 0 ] || fail "(a) $(cat "$T/a1.err")"
lines "$T/a1.err" >"$T/a1.lines"
DAMAGED="the dlfs server answered EIO: the dataset's index or a container is damaged there (EUCLEAN"
grep -qF "dlfs-preload: $P/a/f03: $DAMAGED" "$T/a1.lines" ||
	fail "(a) stderr does not name the damaged file and EUCLEAN: $(cat "$T/a1.err")"
! grep -q "gone" "$T/a1.lines" || fail "(a) the library says the server is gone: $(cat "$T/a1.err")"
alive "(a)"

note "(a) the root's record damaged: the first HELLO fails with EUCLEAN"
damage 1
st=0
prun "$PYTHON" - "$P" 2>"$T/a2.err" <<'PY' || st=$?
import errno, os, sys
p = sys.argv[1]
for what, call in (("stat", lambda: os.stat(p + "/b/f01")), ("listdir", lambda: os.listdir(p))):
    try:
        call()
        sys.exit("%s with the root's record damaged succeeded" % what)
    except OSError as e:
        if e.errno != errno.EIO:
            sys.exit("%s with the root's record damaged: %r, expected EIO" % (what, e))
PY
[ "$st" = 0 ] || fail "(a) root: $(cat "$T/a2.err")"
lines "$T/a2.err" >"$T/a2.lines"
grep -qF "dlfs-preload: $P/b/f01: $DAMAGED" "$T/a2.lines" ||
	fail "(a) root: stderr does not name the path and EUCLEAN: $(cat "$T/a2.err")"
! grep -q "gone" "$T/a2.lines" || fail "(a) root: the library says the server is gone: $(cat "$T/a2.err")"
alive "(a) root"
kill -TERM "$SERVER_PID"
wait "$SERVER_PID" 2>/dev/null || true

# client OUT PY ARGS...: runs the Python program PY under the library in
# the background (CLIENT: its pid), with the fifos $T/ready and $T/go as
# its last arguments: it writes a line "ready" to the first, then waits
# for a line on the second. The shell holds both open read-write, so that
# neither side blocks in open, and a dead client is a read that times out.
client() {
	local out=$1 py=$2
	shift 2
	rm -f "$T/ready" "$T/go"
	mkfifo "$T/ready" "$T/go"
	exec 7<>"$T/ready" 8<>"$T/go"
	prun "$PYTHON" "$py" "$@" "$T/ready" "$T/go" >"$out" 2>&1 &
	CLIENT=$!
}

# kill9 WHAT: once the client is ready, SIGKILL the server and reap it.
kill9() {
	local line=''
	read -r -t 120 line <&7 || true
	[ "$line" = ready ] || { cat "$T/$1.out" >&2; fail "($1) the client did not get ready"; }
	kill -KILL "$SERVER_PID"
	wait "$SERVER_PID" 2>/dev/null || true
}

# go WHAT: tell the client to go on, and wait for it.
go() {
	echo go >&8
	local st=0
	wait "$CLIENT" || st=$?
	exec 7>&- 8>&-
	[ "$st" = 0 ] || fail "($1) $(cat "$T/$1.out")"
}

# ---- (b) ----
note "(b) kill -9: reads from the mapped RAM tier, and the rest EIO"
fresh b
start -o stage=none,readahead=0
cat >"$T/b.py" <<'PY'
import errno, os, sys
p, src, rd, go = sys.argv[1:5]
def want(rel, off=0, n=None):
    b = open(os.path.join(src, rel), "rb").read()
    return b[off:] if n is None else b[off:off + n]
def eio(what, call):
    try:
        call()
    except OSError as e:
        if e.errno != errno.EIO:
            sys.exit("%s: %r, expected EIO" % (what, e))
        return
    sys.exit("%s succeeded with the server gone" % what)
fa, fe, fd = (os.open(p + "/" + r, os.O_RDONLY) for r in ("a/f00", "a/f01", "b/f20"))
na, ne, nd = (os.fstat(f).st_size for f in (fa, fe, fd))
for _ in range(2):
    assert os.pread(fa, na, 0) == want("a/f00"), "A before"
with open(rd, "w") as f:
    f.write("ready\n")
open(go).readline()
assert os.pread(fa, na, 0) == want("a/f00"), "A whole, the server gone"
assert os.pread(fa, 1000, 123) == want("a/f00", 123, 1000), "a piece of A, the server gone"
eio("a piece of E, never checked", lambda: os.pread(fe, 100, 10))
assert os.pread(fe, ne, 0) == want("a/f01"), "E whole, the server gone"
assert os.pread(fe, 100, 10) == want("a/f01", 10, 100), "a piece of E, once checked"
eio("a piece of D, never read", lambda: os.pread(fd, 100, 0))
eio("D whole, never read", lambda: os.pread(fd, nd, 0))
eio("a stat of a name never looked up", lambda: os.stat(p + "/a/f23"))
PY
client "$T/b.out" "$T/b.py" "$P" "$SRC"
kill9 b
go b
lines "$T/b.out" >"$T/b.lines"
[ "$(wc -l <"$T/b.lines")" = 1 ] && grep -qE '^dlfs-preload: the dlfs server is gone \(.+: .+\): calls under ' "$T/b.lines" ||
	fail "(b) stderr is not one line saying the server is gone, and why: $(cat "$T/b.out")"

# ---- (c) ----
note "(c) kill -9: the NVMe tier's files are not trusted after their server"
fresh c
NV="$T/nvme"
start -o cache_dir="$NV",ram_cache=128K,stage=none,readahead=0
cat >"$T/c.py" <<'PY'
import errno, json, os, sys, time
p, src, rd, go = sys.argv[1:5]
def want(rel, off=0, n=None):
    b = open(os.path.join(src, rel), "rb").read()
    return b[off:] if n is None else b[off:off + n]
def nvme():
    return json.load(open(p + "/.dlfs/stats"))["tiers"]["direct"]["nvme"]
ff = os.open(p + "/a/f05", os.O_RDONLY)
n = os.fstat(ff).st_size
assert os.pread(ff, n, 0) == want("a/f05"), "F"
# Other chunks through the server push F's out of the 2 RAM slots; the
# tier's writer puts F's in its cache file meanwhile.
others = ["b/f%02d" % i for i in range(24)]
for i in range(600):
    for rel in others[i % 12:i % 12 + 3]:
        assert open(p + "/" + rel, "rb").read(100) == want(rel, 0, 100), rel
    base = nvme()
    assert os.pread(ff, 100, 10) == want("a/f05", 10, 100), "a piece of F"
    if nvme() > base:
        break # F's piece came from the tier: its chunk is not in RAM
    time.sleep(0.05)
else:
    sys.exit("F never came from the NVMe tier directly")
with open(rd, "w") as f:
    f.write("ready\n")
open(go).readline()
for what, call in (("a piece of F", lambda: os.pread(ff, 100, 10)),
                   ("F whole", lambda: os.pread(ff, n, 0))):
    try:
        b = call()
    except OSError as e:
        if e.errno != errno.EIO:
            sys.exit("%s: %r, expected EIO" % (what, e))
        continue
    sys.exit("%s gave %s with the server gone and its cache file changed"
             % (what, "the hole's zeros" if not any(b) else "bytes"))
PY
client "$T/c.out" "$T/c.py" "$P" "$SRC"
kill9 c
inspect stat --json "$DS0" a/f05
expect_ok "dlfs-inspect stat a/f05"
FC=$(json_get "$T/out" container)
FOFF=$(json_get "$T/out" offset)
FSIZE=$(json_get "$T/out" size)
CF=$(printf '%s/%s/%06d.cache' "$NV" "$(ds_id "$DS0")" "$FC")
[ -f "$CF" ] || fail "(c) no cache file $CF"
fallocate -p -o "$FOFF" -l "$FSIZE" "$CF" || fail "(c) fallocate -p on $CF"
go c
