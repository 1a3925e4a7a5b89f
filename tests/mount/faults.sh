#!/bin/bash
# faults: damage is contained, reported, and never served as data.
# (a) one flipped byte in victims/s15's data: reading it fails with EIO,
#     and again on a second read (nothing bad cached); every other file reads
#     correctly (files sharing the damaged 64K chunk are named as such if
#     they fail); the daemon log names victims/s15 (or its container and
#     offset); stats errors.checksum >= 1.
# (b) one container deleted: its non-empty files give EIO, all others read
#     correctly; the log names the container; stats count the error.
# (c) one container truncated in the middle of victims/m5: every file of
#     that container with bytes in the chunk of the cut or after it gives
#     EIO (m5 among them); all other files read correctly, those of that
#     container in the chunks before the cut too.
# (d) kill -9 of a `dlfs -f` daemon: the mount answers ENOTCONN
#     ("Transport endpoint is not connected"), fusermount3 -u works, and a
#     remount serves the tree correctly.
# (e) bad starts: missing dataset, index with a garbage first 4 KiB, index
#     with format version 99, dataset that is a file or has no index,
#     missing mountpoint, mountpoint that is a regular file, -o
#     ram_cache=lots, too small a ram_cache, an unknown -o option, a
#     misspelt one (named, with the one meant), no arguments, a
#     mountpoint that is not empty, a mountpoint dlfs serves already
#     (named with its pid, and not stacked): each exits non-zero (1 for dataset/mountpoint errors, 2 for
#     usage errors) with a "dlfs: " message naming the culprit, and nothing
#     is left mounted.
# In (a)-(c) the daemon must not crash, and exits 0 on fusermount3 -u.
# All parts run; failures are listed at the end.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
mount_setup

SRC="$T/src"
mkdir -p "$SRC/victims" "$SRC/other"
"$PYTHON" - "$SRC" <<'PY'
import os, random, sys
r = random.Random(7)
d = sys.argv[1]
for i in range(30):  # 30 x 1000 bytes: together in one 64 KiB chunk
    open(os.path.join(d, "victims/s%02d" % i), "wb").write(r.randbytes(1000))
for i in range(10):  # 10 x 150 KiB: several chunks each, several containers
    open(os.path.join(d, "victims/m%d" % i), "wb").write(r.randbytes(150 * 1024))
for i in range(40):
    open(os.path.join(d, "other/o%02d" % i), "wb").write(r.randbytes(r.randrange(0, 20000)))
open(os.path.join(d, "other/empty"), "wb").close()
PY
DS="$T/ds.dlfs"
pack "$SRC" -o "$DS" --chunk-size 64K --container-size 512K -q
expect_ok "pack"
NCONT=$(find "$DS" -name "*.dlc" | wc -l)
[ "$NCONT" -ge 3 ] || fail "test setup: expected >= 3 containers, got $NCONT"
cp -a "$DS" "$T/pristine.dlfs"
restore() { rm -rf "$DS"; cp -a "$T/pristine.dlfs" "$DS"; }
inspect info --json "$DS"
expect_ok "info --json"
cp "$T/out" "$T/info.json"
CS=$(json_get "$T/info.json" chunk_size)

# Where every file is: {rel: {"container", "offset", "size"}}.
file_map "$SRC" "$DS" "$T/map.json"
loc() { # REL -> C (container file name), CNO, OFF
	CNO=$("$PYTHON" -c 'import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]]["container"])' "$T/map.json" "$1")
	OFF=$("$PYTHON" -c 'import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]]["offset"])' "$T/map.json" "$1")
	C=$(printf '%06d.dlc' "$CNO")
}
flip() { # FILE OFFSET: xor one byte with 0xff
	"$PYTHON" - "$1" "$2" <<'PY'
import sys
with open(sys.argv[1], "r+b") as f:
    f.seek(int(sys.argv[2])); b = f.read(1)
    f.seek(int(sys.argv[2])); f.write(bytes([b[0] ^ 0xFF]))
PY
}
# expect MODE CONTAINER_NO POS: writes $T/expect.json for faultread.py.
#   flip: the byte at POS of the container is damaged;
#   missing: the container is gone; cut: the container ends at POS, and
#   its chunks that end before POS are still served.
expect() {
	"$PYTHON" - "$T/map.json" "$1" "$2" "$3" "$CS" "${4:-}" >"$T/expect.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
mode, cno, pos, cs, victim = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
k0 = (pos - cs) // cs
cstart, cend = cs + k0 * cs, cs + (k0 + 1) * cs  # the chunk holding POS
must, may, notes = [], [], {}
for rel, f in m.items():
    if f["container"] != cno or f["size"] == 0:
        continue
    lo, hi = f["offset"], f["offset"] + f["size"]
    if lo < cend and hi > cstart and mode != "missing":
        notes[rel] = "shares the damaged 64K chunk [%d, %d) of container %d" % (cstart, cend, cno)
    if mode == "flip":
        if rel == victim:
            must.append(rel)
    elif mode == "missing":
        must.append(rel)
    elif mode == "cut" and (hi - 1 - cs) // cs >= k0:
        must.append(rel)
print(json.dumps({"must_fail": must, "may_fail": may, "notes": notes}))
PY
}
CRASH_RE='sanitizer|abort|assert|segv|segmentation|leak|double free|core dumped|stack smash'
no_crash() { # LOG WHAT
	if grep -iE -- "$CRASH_RE" "$1" >"$T/crash" 2>/dev/null; then
		soft_fail "$2: the daemon log shows a crash: $(head -n 3 "$T/crash")"
	fi
}
# stat_errors: prints errors.checksum errors.container errors.io
stat_errors() {
	tmo cat "$MNT/.dlfs/stats" >"$T/stats.json" || { echo "? ? ?"; return; }
	"$PYTHON" -c 'import json, sys; e = json.load(open(sys.argv[1]))["errors"]; print(e["checksum"], e["container"], e["io"])' "$T/stats.json" || echo "? ? ?"
}
MNT="$T/mnt"
mkdir "$MNT"

# ---------------------------------------------------------------- (a)
note "(a) a flipped byte in victims/s15"
loc victims/s15
flip "$DS/$C" $((OFF + 100))
expect flip "$CNO" $((OFF + 100)) victims/s15
dlfs_mount "$DS" "$MNT"
tmo "$PYTHON" "$HERE/faultread.py" "$SRC" "$MNT" "$T/expect.json" ||
	soft_fail "(a) flipped byte in victims/s15 ($C offset $((OFF + 100))): reads not as expected (see above)"
for n in s14 s16; do
	st=0
	tmo cat "$MNT/victims/$n" >/dev/null 2>"$T/cat.err" || st=$?
	[ "$st" = 0 ] || note "(a) cat victims/$n (same chunk as the damage): $(cat "$T/cat.err")"
done
expect_errno "Input/output error" "(a) cat of the damaged file" cat "$MNT/victims/s15"
read -r E_SUM E_CONT E_IO < <(stat_errors)
[ "$E_SUM" != "?" ] && [ "$E_SUM" -ge 1 ] || soft_fail "(a) stats errors.checksum = $E_SUM, expected >= 1 ($(tr -d "\n" <"$T/stats.json" | head -c 300))"
"$PYTHON" - "$DLFS_LOG" victims/s15 "$C" "$((OFF + 100))" "$OFF" "$CS" <<'PY' || soft_fail "(a) the daemon log does not name victims/s15 or $C and its offset: $(head -c 600 "$DLFS_LOG")"
import sys
log, victim, cont, pos, off, cs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
chunk = cs + (pos - cs) // cs * cs
for line in open(log, errors="replace"):
    if victim in line or (cont in line and any(str(x) in line for x in (off, chunk, pos))):
        sys.exit(0)
sys.exit(1)
PY
no_crash "$DLFS_LOG" "(a)"
dlfs_umount "$MNT"
restore

# ---------------------------------------------------------------- (b)
loc victims/m5
VC=$C VCNO=$CNO VOFF=$OFF
note "(b) container $VC deleted"
rm "$DS/$VC"
expect missing "$VCNO" 0
dlfs_mount "$DS" "$MNT"
tmo "$PYTHON" "$HERE/faultread.py" "$SRC" "$MNT" "$T/expect.json" ||
	soft_fail "(b) container $VC deleted: reads not as expected (see above)"
expect_errno "Input/output error" "(b) cat of victims/m5 from the deleted container" cat "$MNT/victims/m5"
read -r E_SUM E_CONT E_IO < <(stat_errors)
[ "$E_CONT" != "?" ] && [ $((E_CONT + E_IO)) -ge 1 ] || soft_fail "(b) stats errors.container + errors.io = $E_CONT + $E_IO, expected >= 1"
grep -qF "$VC" "$DLFS_LOG" || soft_fail "(b) the daemon log does not name $VC: $(head -c 600 "$DLFS_LOG")"
no_crash "$DLFS_LOG" "(b)"
dlfs_umount "$MNT"
restore

# ---------------------------------------------------------------- (c)
note "(c) container $VC truncated inside victims/m5"
truncate -s $((VOFF + 10)) "$DS/$VC"
expect cut "$VCNO" $((VOFF + 10))
dlfs_mount "$DS" "$MNT"
tmo "$PYTHON" "$HERE/faultread.py" "$SRC" "$MNT" "$T/expect.json" ||
	soft_fail "(c) container $VC truncated at $((VOFF + 10)): reads not as expected (see above)"
expect_errno "Input/output error" "(c) cat of victims/m5 from the truncated container" cat "$MNT/victims/m5"
read -r E_SUM E_CONT E_IO < <(stat_errors)
[ "$E_CONT" != "?" ] && [ $((E_CONT + E_IO)) -ge 1 ] || soft_fail "(c) stats errors.container + errors.io = $E_CONT + $E_IO, expected >= 1"
grep -qE -- "$VC|victims/m5" "$DLFS_LOG" || soft_fail "(c) the daemon log names neither $VC nor victims/m5: $(head -c 600 "$DLFS_LOG")"
no_crash "$DLFS_LOG" "(c)"
dlfs_umount "$MNT"
restore

# ---------------------------------------------------------------- (d)
note "(d) kill -9 of the daemon"
dlfs_mount "$DS" "$MNT"
must "(d) read before the kill" cmp "$SRC/victims/m1" "$MNT/victims/m1"
kill -KILL "$DLFS_PID"
wait_exit "$DLFS_PID" 10
[ "$WAIT_RC" = 137 ] || fail "(d) the daemon did not die of SIGKILL (status $WAIT_RC)"
expect_errno "Transport endpoint is not connected" "(d) ls of the mount after kill -9" ls "$MNT"
expect_errno "Transport endpoint is not connected" "(d) cat of a file after kill -9" cat "$MNT/victims/m2"
is_mounted "$MNT" || fail "(d) $MNT vanished from /proc/mounts on its own after kill -9"
st=0
timeout 30 fusermount3 -u "$MNT" 2>"$T/fu.err" || st=$?
[ "$st" = 0 ] || fail "(d) fusermount3 -u of the dead mount failed ($st): $(cat "$T/fu.err")"
! is_mounted "$MNT" || fail "(d) $MNT still mounted after fusermount3 -u"
dlfs_mount "$DS" "$MNT"
if ! tmo diff -r --no-dereference "$SRC" "$MNT" >"$T/diff.out" 2>&1; then
	head -n 10 "$T/diff.out" >&2
	soft_fail "(d) the remount does not serve the tree correctly"
fi
check_log "$DLFS_LOG"
dlfs_umount "$MNT"

# ---------------------------------------------------------------- (e)
note "(e) bad starts"
# bad_start WHAT WANT_RC 'STRING|STRING...' ARGS...: dlfs ARGS (no -f: a
# wrong success daemonizes rather than hanging) exits WANT_RC with a
# "dlfs: " message containing each STRING, and leaves nothing mounted.
bad_start() {
	local what=$1 want=$2 strs=$3 st=0 s
	shift 3
	tmo "$DLFS" "$@" </dev/null >"$T/bs.out" 2>"$T/bs.err" || st=$?
	if is_mounted "$MNT"; then
		soft_fail "(e) $what: dlfs $* left $MNT mounted (exit $st)"
		timeout 30 fusermount3 -u "$MNT" || timeout 30 fusermount3 -uz "$MNT" || true
	fi
	if [ "$st" = 0 ] || [ "$st" -ge 124 ]; then
		soft_fail "(e) $what: dlfs $* exited $st, expected $want; stderr: $(head -c 300 "$T/bs.err")"
		return 0
	fi
	[ "$st" = "$want" ] || soft_fail "(e) $what: dlfs $* exited $st, expected $want; stderr: $(head -c 300 "$T/bs.err")"
	grep -q '^dlfs: ' "$T/bs.err" || [ "$want" = 2 ] ||
		soft_fail "(e) $what: no message starting 'dlfs: ' on stderr: $(head -c 300 "$T/bs.err")"
	IFS='|' read -ra ss <<<"$strs"
	for s in "${ss[@]}"; do
		grep -qiF -- "$s" "$T/bs.err" ||
			soft_fail "(e) $what: stderr does not mention '$s': $(head -c 300 "$T/bs.err")"
	done
	note "(e) $what: exit $st: $(head -n 1 "$T/bs.err")"
	no_crash "$T/bs.err" "(e) $what"
}
bad_start "missing dataset" 1 "$T/nope.dlfs|No such file or directory" "$T/nope.dlfs" "$MNT"

cp -a "$T/pristine.dlfs" "$T/garbage.dlfs"
"$PYTHON" -c 'import random, sys
with open(sys.argv[1], "r+b") as f: f.write(random.Random(1).randbytes(4096))' "$T/garbage.dlfs/index"
bad_start "index with a garbage first 4 KiB" 1 "$T/garbage.dlfs/index" "$T/garbage.dlfs" "$MNT"

cp -a "$T/pristine.dlfs" "$T/v99.dlfs"
ID=$(json_get "$T/info.json" dataset_id)
"$PYTHON" - "$T/v99.dlfs/index" "$ID" <<'PY' || fail "test setup: could not find the super record in the index"
import struct, sys
path, did = sys.argv[1], bytes.fromhex(sys.argv[2])
data = bytearray(open(path, "rb").read())
pat = struct.pack("<II", 1, 1) + did
n, i = 0, data.find(pat)
while i >= 0:
    data[i:i + 8] = struct.pack("<II", 99, 0)
    n += 1
    i = data.find(pat, i + 1)
if n == 0:
    sys.exit(1)
open(path, "wb").write(data)
PY
bad_start "index with format version 99" 1 "unsupported format version" "$T/v99.dlfs" "$MNT"

printf 'not a dataset\n' >"$T/file.dlfs"
bad_start "dataset is a regular file" 1 "$T/file.dlfs" "$T/file.dlfs" "$MNT"
# One line, the real cause first: no warning about the index's seal or
# its copy before it (issue 39, item 3).
no_warning() {
	! grep -qi "warning" "$T/bs.err" ||
		soft_fail "(e) $1: a warning comes before the error: $(head -c 300 "$T/bs.err")"
}
no_warning "dataset is a regular file"
: >"$T/cachefile"
bad_start "cache_dir is a regular file" 1 "cache_dir $T/cachefile|Not a directory" "$DS" "$MNT" -o cache_dir="$T/cachefile"
no_warning "cache_dir is a regular file"
mkdir "$T/noindex.dlfs"
bad_start "dataset without an index" 1 "$T/noindex.dlfs" "$T/noindex.dlfs" "$MNT"
bad_start "missing mountpoint" 1 "$T/nomnt" "$DS" "$T/nomnt"
printf 'x\n' >"$T/afile"
bad_start "mountpoint is a regular file" 1 "$T/afile|not a directory" "$DS" "$T/afile"
bad_start "-o ram_cache=lots" 2 "ram_cache" "$DS" "$MNT" -o ram_cache=lots
bad_start "-o ram_cache=100K (less than two 64K chunks)" 2 "ram_cache" "$DS" "$MNT" -o ram_cache=100K
bad_start "-o an unknown option" 2 "no_such_opt" "$DS" "$MNT" -o no_such_opt=1
bad_start "-o a misspelt option" 2 "unknown option -o ram_cahce|did you mean ram_cache?" "$DS" "$MNT" -o ram_cahce=2G
bad_start "no arguments" 2 "usage"
bad_start "no mountpoint" 2 "usage" "$DS"
# A mount that would hide something is refused, with the override named;
# with it, the mount goes on (issue 39).
mkdir "$T/full"
: >"$T/full/theirs"
bad_start "a mountpoint that is not empty" 1 "$T/full is not empty|'theirs'|-o nonempty" "$DS" "$T/full"
mkdir "$T/busy"
dlfs_mount "$DS" "$T/busy"
bad_start "a mountpoint dlfs already serves" 1 "already mounted by dlfs (pid $DLFS_PID)|fusermount3 -u $T/busy|-o nonempty" "$DS" "$T/busy"
[ "$(grep -c " $T/busy fuse.dlfs " /proc/mounts)" = 1 ] || soft_fail "(e) a second mount was stacked on $T/busy"
dlfs_umount "$T/busy"
dlfs_mount "$DS" "$T/full" -o nonempty
[ -e "$T/full/theirs" ] && soft_fail "(e) -o nonempty: the mount does not cover the directory"
dlfs_umount "$T/full"
[ -e "$T/full/theirs" ] || soft_fail "(e) the directory's entry is gone after the unmount"
grep -F "$T" /proc/mounts && fail "(e) something under $T is still mounted"
finish
