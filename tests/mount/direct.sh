#!/bin/bash
# direct: under dlfs-run, libdlfs-preload.so serves reads from the
# server's tiers in shared memory without a request (src/preload/direct.c,
# the rules of src/node/shared/shm.h), and never gives a wrong byte. A
# tree of 240 files up to 160K and a few at the 64K chunk's edges, packed
# in 64K chunks (so files span chunks); each command runs under dlfs-run
# and its processes read PREFIX/.dlfs/stats (tiers.direct, ops) between
# steps (direct.py's programs):
#  (a) defaults: every file read whole by a first process, then by a
#      second: both byte for byte the source's; then tiers.direct.reads
#      and .ram > 0, and the server's ops.read grew during the second
#      pass by at most a tenth of its files (it was served directly);
#  (b) a process's lstat of every entry, its lookups answered from the
#      names table, gives every field a process with the direct path off
#      (the server's answers) gives, and the source's type, mode, mtime,
#      uid, gid (and a file's size and nlink); the server's ops.lookup grew
#      meanwhile by at most the names the table cannot hold by its design
#      (direct.py names, with the head's name_sets: here 10 of 255);
#  (c) eviction under load: -o ram_cache=128K (2 slots of 64K), 4
#      processes of 4 threads each read every file twice in 4K pieces at
#      the same time, in two runs (each a new server): every file's md5
#      is the source's, every time; tiers.direct.reads > 0;
#  (d) the NVMe tier: -o cache_dir=DIR,ram_cache=128K filled by a first
#      run; then one byte flipped in DIR/<id>/<container>.cache inside
#      one file's bytes (its container offset from dlfs-inspect stat):
#      a second run reads that file whole and all the others, byte for
#      byte, the flip is caught (nvme.corrupt > 0) and the others come
#      from the tier directly (direct.nvme > 0); a third, with the flip
#      again, first reads the file whole through the server (the direct
#      path off: the server checks it, and knows it), then every file in
#      4K pieces and whole, directly: still the source's bytes. What is
#      not guaranteed, and not tested: a cache file changed during a run
#      after the file passed its check there (the core and the clients
#      both trust a stable NVMe read of a checked file, shm.h);
#  (e) DLFS_PRELOAD_DIRECT=0: a run's two passes read the same bytes,
#      every read goes to the server and tiers.direct.reads stays 0; in
#      (a)'s run, a third process with it read nothing directly either;
#  (f) after (a)'s second pass, tiers.direct.seen (reads from a file's
#      start handed to the server's views) catches up with the pass's
#      direct reads (all from a file's start), within 10 s of polling,
#      less at most 2;
#  (g) the wire (wirecheck.py --shm): MAP passes 3 descriptors whose sizes
#      are the reply's, the first mapped begins with the magic and version
#      2, its liveness word holds a thread id; meta and data reopened
#      read-write through /proc/self/fd take no writable mapping, write or
#      new size (sealed), and a process reading every file after that gets
#      the source's bytes; NVFD of container 2**40 is EINVAL; NVFD 0 is
#      ENOENT without a
#      cache_dir, and with one a read-only descriptor of the cache file,
#      holding the container's chunk.
# The server logs no error (but (d)'s checksum lines).
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
. "$LIB_DIR/cachelib.sh"
: "${DLFS:=$SRC_ROOT/build/src/daemon/dlfs}"
: "${DLFS_RUN:=$SRC_ROOT/build/tools/dlfs-run}"
: "${DLFS_CMD_TIMEOUT:=120}"
[ -x "$DLFS" ] || fail "daemon not found or not executable: $DLFS (set DLFS)"
[ -x "$DLFS_RUN" ] || fail "dlfs-run not found: $DLFS_RUN (set DLFS_RUN)"
export DLFS_DAEMON=$DLFS
export TMPDIR="$T/tmp"
mkdir "$TMPDIR"
unset XDG_RUNTIME_DIR DLFS_PRELOAD_DIRECT

SRC="$T/src"
gentree many "$SRC" --seed 5 --count 240 --per-dir 40 --max-size 160000
"$PYTHON" - "$SRC/edge" <<'PY' || fail "cannot make $SRC/edge"
import os, random, sys
os.makedirs(sys.argv[1])
r = random.Random(7)
for n in (0, 1, 65535, 65536, 65537, 300000, 1000000):
    open(os.path.join(sys.argv[1], "e%d" % n), "wb").write(r.randbytes(n))
PY
DS="$T/ds.dlfs"
pack "$SRC" -o "$DS" --chunk-size 64K --container-size 1M -q
expect_ok "pack"
read -r CHUNKS _ <<<"$(ds_geom "$DS")"
NF=$(find "$SRC" -type f | wc -l)
NE=$(find "$SRC" -type f -size +0 | wc -l)
NB=$(find "$SRC" -type f -printf '%s\n' | awk '{ s += $1 } END { print s }')
# Every file is read in one piece by readtree.py (1 MiB): each direct
# read of a pass is from a file's start, as (f) counts them.
[ -z "$(find "$SRC" -type f -size +1048575c)" ] || fail "test setup: a file of 1 MiB or more"
P=/dlfs-test/direct
export PYTHON LIB_DIR HERE SRC P

# drun NAME [dlfs-run args] DATASET:PREFIX -- CMD: dlfs-run, its stderr
# (the server's log) in $T/NAME.log; fails unless it exits 0.
drun() {
	local name=$1 st=0
	shift
	timeout -k 10 "$DLFS_CMD_TIMEOUT" "$DLFS_RUN" "$@" </dev/null >"$T/$name.log" 2>&1 || st=$?
	if [ "$st" != 0 ]; then
		tail -n 20 "$T/$name.log" >&2
		fail "dlfs-run ($name) exited with status $st"
	fi
}

# The commands' helpers, under dlfs-run (bash -c "$INNER; ..."):
#   step NAME CMD...: CMD's stdout, stderr and exit status to
#     $OUT/NAME.{out,err,rc}, under a timeout; never fails.
#   snap NAME: PREFIX/.dlfs/stats to $OUT/NAME.json.
step() {
	local n=$1 st=0
	shift
	timeout -k 5 90 "$@" >"$OUT/$n.out" 2>"$OUT/$n.err" || st=$?
	echo "$st" >"$OUT/$n.rc"
}
snap() { cat "$P/.dlfs/stats" >"$OUT/$1.json"; }
INNER="$(declare -f step snap)"

# ok PART NAME WHAT: step NAME exited 0, else fails "(PART) WHAT".
ok() {
	local rc
	rc=$(cat "$OUT/$2.rc" 2>/dev/null || echo missing)
	if [ "$rc" != 0 ]; then
		head -n 20 "$OUT/$2.err" >&2 || true
		fail "($1) $3 (step $2: status $rc)"
	fi
}

# ---------------------------------------------------------------- (a)
note "(a), (b), (e), (f), (g): defaults, two passes, names, the wire"
export OUT="$T/a"
mkdir "$OUT"
drun a "$DS:$P" -- bash -c "$INNER"'
	step pass1 "$PYTHON" "$LIB_DIR/readtree.py" "$SRC" "$P"
	step wait1 "$PYTHON" "$HERE/direct.py" wait-seen "$P/.dlfs/stats" - "$OUT/s1.json" 10
	step pass2 "$PYTHON" "$LIB_DIR/readtree.py" "$SRC" "$P"
	step wait2 "$PYTHON" "$HERE/direct.py" wait-seen "$P/.dlfs/stats" "$OUT/s1.json" "$OUT/s2.json" 10
	step ref env DLFS_PRELOAD_DIRECT=0 "$PYTHON" "$HERE/direct.py" stat "$P" "$OUT/ref.json"
	snap s3
	snap s3b
	step got "$PYTHON" "$HERE/direct.py" stat "$P" "$OUT/got.json"
	snap s4
	step pass3 env DLFS_PRELOAD_DIRECT=0 "$PYTHON" "$LIB_DIR/readtree.py" "$SRC" "$P"
	snap s5
	step wire env -u LD_PRELOAD "$PYTHON" "$HERE/wirecheck.py" --shm "${DLFS_PRELOAD#*=}"
	step pass4 "$PYTHON" "$LIB_DIR/readtree.py" "$SRC" "$P"
'
ok a pass1 "the first process read wrong bytes, or failed"
ok a pass2 "the second process read wrong bytes, or failed"
ok a pass4 "a process after the wire's attempts to write the shared memory read wrong bytes, or failed"
[ "$(cat "$OUT/pass2.out")" = "$NF $NB" ] ||
	fail "(a) the second pass read $(cat "$OUT/pass2.out") (files, bytes), not the source's $NF $NB"
sassert "$OUT/s2.json" R1="$(sget "$OUT/s1.json" ops.read)" NE="$NE" -- \
	's.tiers.direct.reads > 0' 's.tiers.direct.ram > 0' 'ops.read - R1 <= NE // 10' ||
	fail "(a) the second pass was not served directly (stats after it above; R1: ops.read before it)"

# ---------------------------------------------------------------- (f)
sassert "$OUT/s2.json" SEEN1="$(sget "$OUT/s1.json" tiers.direct.seen)" \
	READS1="$(sget "$OUT/s1.json" tiers.direct.reads)" NE="$NE" -- \
	's.tiers.direct.reads - READS1 >= NE - NE // 10' \
	's.tiers.direct.seen - SEEN1 >= s.tiers.direct.reads - READS1 - 2' \
	's.tiers.direct.seen <= s.tiers.direct.reads' ||
	fail "(f) direct.seen did not catch up with the second pass's direct reads from a file's start within $(sget "$OUT/s2.json" waited) s"

# ---------------------------------------------------------------- (b)
ok b ref "lstat of every entry with the direct path off failed"
ok b got "lstat of every entry from the names table failed"
# The names table's sets, from the head MAP gave (wirecheck.py --shm).
[ -s "$OUT/wire.out" ] || fail "(b) MAP gave no head (step wire): no names table to judge"
NAME_SETS=$(json_get "$OUT/wire.out" name_sets)
run "$PYTHON" "$HERE/direct.py" names "$SRC" "$OUT/ref.json" "$OUT/got.json" "$NAME_SETS"
LAST_CMD="direct.py names"
expect_ok "(b) the names table's attributes differ from the server's or the source's"
read -r NAMES MAYMISS <<<"$(cat "$T/out")"
[ "$MAYMISS" -lt $((NAMES / 4)) ] ||
	fail "(b) test setup: $MAYMISS of $NAMES names may miss the names table; the check would say little"
# Between s3b and s4: the lstat process, and a stats read (whose own
# lookups are s3b's less s3's).
L3=$(sget "$OUT/s3.json" ops.lookup)
L3B=$(sget "$OUT/s3b.json" ops.lookup)
ASKED=$(($(sget "$OUT/s4.json" ops.lookup) - L3B - (L3B - L3)))
[ "$ASKED" -le "$MAYMISS" ] ||
	fail "(b) the lstat of every entry asked the server for $ASKED names of $NAMES; at most $MAYMISS may miss the names table"
note "(b) $NAMES names: $ASKED asked the server ($MAYMISS may)"

# ---------------------------------------------------------------- (e)
ok e pass3 "a process with DLFS_PRELOAD_DIRECT=0 read wrong bytes, or failed"
sassert "$OUT/s5.json" R4="$(sget "$OUT/s4.json" ops.read)" D4="$(sget "$OUT/s4.json" tiers.direct.reads)" NE="$NE" -- \
	's.tiers.direct.reads == D4' 'ops.read - R4 >= NE' ||
	fail "(e) a process with DLFS_PRELOAD_DIRECT=0 read directly (D4, R4: direct.reads and ops.read before it)"

# ---------------------------------------------------------------- (g)
ok g wire "MAP or NVFD answered wrong (no cache_dir)"
check_log "$T/a.log"

note "(e) a run with DLFS_PRELOAD_DIRECT=0"
export OUT="$T/e"
mkdir "$OUT"
DLFS_PRELOAD_DIRECT=0 drun e "$DS:$P" -- bash -c "$INNER"'
	step pass1 "$PYTHON" "$LIB_DIR/readtree.py" "$SRC" "$P"
	step pass2 "$PYTHON" "$LIB_DIR/readtree.py" "$SRC" "$P"
	snap s
'
ok e pass1 "the first pass with DLFS_PRELOAD_DIRECT=0 read wrong bytes, or failed"
ok e pass2 "the second pass with DLFS_PRELOAD_DIRECT=0 read wrong bytes, or failed"
sassert "$OUT/s.json" NE="$NE" -- 's.tiers.direct.enabled == 1' 's.tiers.direct.reads == 0' \
	'ops.read >= 2 * NE' ||
	fail "(e) with DLFS_PRELOAD_DIRECT=0, reads were served directly"
check_log "$T/e.log"

# ---------------------------------------------------------------- (c)
# Twice, each time with a new server: a reader that trusted a slot the
# server was refilling gets wrong bytes only now and then (direct.py).
for b in 1 2; do
	note "(c) ram_cache=128K: 4 processes of 4 threads read everything twice ($b of 2)"
	export OUT="$T/c$b" B=$b
	mkdir "$OUT"
	drun "c$b" -o ram_cache=128K "$DS:$P" -- bash -c "$INNER"'
		for k in 1 2 3 4; do
			step load$k "$PYTHON" "$HERE/direct.py" load "$SRC" "$P" --threads 4 --rounds 2 --seed $B$k &
		done
		wait
		snap s
	'
	for k in 1 2 3 4; do
		ok c load$k "process $k of 4 read wrong bytes (or failed) while the RAM tier evicted (run $b of 2)"
	done
	sassert "$OUT/s.json" -- 's.tiers.direct.reads > 0' 's.tiers.ram.capacity_bytes == 131072' ||
		fail "(c) nothing was read directly under load (run $b of 2)"
	check_log "$T/c$b.log"
done

# ---------------------------------------------------------------- (d)
note "(d) the NVMe tier: filled, one byte flipped, read again"
NV="$T/nvme"
export OUT="$T/d1"
mkdir "$OUT"
export CHUNKS DS
drun d1 -o cache_dir="$NV",ram_cache=128K "$DS:$P" -- bash -c "$INNER"'
	step pass "$PYTHON" "$LIB_DIR/readtree.py" "$SRC" "$P"
	step written "$PYTHON" "$HERE/direct.py" wait-nvme "$P/.dlfs/stats" "$CHUNKS" "$OUT/s.json" 60 "$SRC" "$P"
	step wire env -u LD_PRELOAD "$PYTHON" "$HERE/wirecheck.py" --shm "${DLFS_PRELOAD#*=}" --nvme "$DS"
'
ok d pass "filling the NVMe tier: wrong bytes, or a failure"
ok d written "the NVMe tier did not take every chunk within 60 s: $(sget "$OUT/s.json" tiers.nvme)"
ok g wire "MAP or NVFD answered wrong (with a cache_dir)"
check_log "$T/d1.log"
ID=$(ds_id "$DS")
[ -f "$NV/$ID/map" ] || fail "(d) no $NV/$ID/map after the first run"
cp -a --sparse=always "$NV" "$T/nvme.pristine"

# The victim: the largest file (it spans chunks); a byte in its middle.
# (awk reads to the end: sort must not get SIGPIPE under pipefail)
VICTIM=$(cd "$SRC" && find . -type f -printf '%s %P\n' | sort -k1,1nr -k2 | awk '$1 < 200000 && v == "" { v = $2 } END { print v }')
inspect stat --json "$DS" "$VICTIM"
expect_ok "dlfs-inspect stat $VICTIM"
VC=$(json_get "$T/out" container)
VOFF=$(json_get "$T/out" offset)
VSIZE=$(json_get "$T/out" size)
[ "$VSIZE" -gt 65536 ] || fail "test setup: the victim $VICTIM has $VSIZE bytes"
AT=$((VOFF + VSIZE / 2))
CF="$NV/$ID/$(printf '%06d' "$VC").cache"
export VLIST="$T/victim.list"
echo "$VICTIM" >"$VLIST"
flip_victim() {
	rm -rf "$NV"
	cp -a --sparse=always "$T/nvme.pristine" "$NV"
	[ "$(od -An -tx1 -j $((VSIZE / 2)) -N 1 "$SRC/$VICTIM")" = "$(od -An -tx1 -j "$AT" -N 1 "$CF")" ] ||
		fail "test setup: $CF at $AT does not hold byte $((VSIZE / 2)) of $VICTIM"
	flip "$CF" "$AT"
}
note "(d) $VICTIM: byte $((VSIZE / 2)) flipped at offset $AT of $CF"

flip_victim
export OUT="$T/d2"
mkdir "$OUT"
drun d2 -o cache_dir="$NV",ram_cache=128K "$DS:$P" -- bash -c "$INNER"'
	step pass "$PYTHON" "$LIB_DIR/readtree.py" "$SRC" "$P"
	snap s
'
ok d pass "with a flipped byte in the NVMe tier, the files read wrong (or failed)"
sassert "$OUT/s.json" -- 'nvme.corrupt >= 1' 's.tiers.direct.nvme > 0' ||
	fail "(d) the flipped byte was not caught, or nothing came from the NVMe tier directly"
check_log "$T/d2.log" 'failed its checksum'

flip_victim
export OUT="$T/d3"
mkdir "$OUT"
drun d3 -o cache_dir="$NV",ram_cache=128K "$DS:$P" -- bash -c "$INNER"'
	step first env DLFS_PRELOAD_DIRECT=0 "$PYTHON" "$LIB_DIR/readtree.py" "$SRC" "$P" --list "$VLIST"
	snap s1
	step small "$PYTHON" "$LIB_DIR/readtree.py" "$SRC" "$P" --bs 4096
	step whole "$PYTHON" "$LIB_DIR/readtree.py" "$SRC" "$P"
	snap s2
'
ok d first "the flipped file, read whole by the server first, read wrong (or failed)"
ok d small "after the server checked the flipped file, 4K reads were wrong (or failed)"
ok d whole "after the server checked the flipped file, whole reads were wrong (or failed)"
sassert "$OUT/s2.json" N1="$(sget "$OUT/s1.json" tiers.direct.nvme)" -- 'nvme.corrupt >= 1' \
	's.tiers.direct.nvme > N1' ||
	fail "(d) the flipped byte was not caught, or the later reads did not come from the NVMe tier directly"
check_log "$T/d3.log" 'failed its checksum'
exit 0
