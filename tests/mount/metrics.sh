#!/bin/bash
# metrics: MNT/.dlfs/metrics, the counters in Prometheus text, and
# dlfs-inspect top (issue 27):
#  - after reading every file through a FUSE mount: .dlfs lists metrics;
#    `promtool check metrics` (Debian's prometheus) takes the file as
#    served, padding and all, with exit 0 and no lint at all; its values
#    agree with .dlfs/stats read in between (bytes served, PFS reads and
#    bytes, RAM hits and misses, files read), each chunk was read from
#    the PFS once, every histogram's +Inf bucket equals its _count, the
#    PFS latency histogram counts every PFS read, dlfs_info names the
#    dataset id, the mountpoint and the fuse front end;
#  - a second pass from the RAM tier: the RAM tier's bytes grow by what
#    was served, its latency histogram counts reads, the PFS's do not;
#  - dlfs-inspect top MNT -n 3 -i 0.5 while a reader runs, piped: a
#    header and three rows, a nonzero files/s and MB/s among them; it
#    ends with 0 on SIGINT; a directory that is not a mount (1), bad -i
#    and -n (2) are refused with one clear line;
#  - through dlfs-run (dlfs --serve): the same file passes promtool, says
#    front_end="serve", and its served plus direct bytes cover every byte
#    read; dlfs-inspect top runs under dlfs-run too, and top --socket
#    watches a dlfs-run server from outside its command (refusing a
#    directory with the sockets it holds, a file, a socket gone);
#  - every series carries a mount label, first: the mountpoint, or the
#    server's socket, so that two mounts on a node never collide.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"
mount_setup
: "${DLFS_RUN:=$SRC_ROOT/build/tools/dlfs-run}"
[ -x "$DLFS_RUN" ] || fail "dlfs-run not found: $DLFS_RUN (set DLFS_RUN)"
command -v promtool >/dev/null ||
	fail "promtool not found (Debian package prometheus: tools/dev/deps check)"

SRC="$T/src"
mkdir -p "$SRC/a" "$SRC/b"
"$PYTHON" - "$SRC" <<'PY'
import os, random, sys
r = random.Random(27)
d = sys.argv[1]
for i in range(300):
    open(os.path.join(d, "a/s%03d" % i), "wb").write(r.randbytes(r.randrange(1, 9000)))
for i, n in enumerate([65536, 100000, 300001]):
    open(os.path.join(d, "b/m%d" % i), "wb").write(r.randbytes(n))
PY
DS="$T/ds.dlfs"
pack "$SRC" -o "$DS" --chunk-size 64K --container-size 512K -q
expect_ok "pack"
MNT="$T/mnt"
mkdir "$MNT"
dlfs_mount "$DS" "$MNT" -o ram_cache=64M

# promcheck FILE WHAT: promtool takes FILE, exit 0, nothing printed.
promcheck() {
	local st=0
	tmo promtool check metrics <"$1" >"$T/prom.out" 2>&1 || st=$?
	if [ "$st" != 0 ] || [ -s "$T/prom.out" ]; then
		cat "$T/prom.out" >&2
		fail "$2: promtool check metrics exited $st or printed lint"
	fi
}

# The exposition format's samples as {series: value}, for the checks.
cat >"$T/prom.py" <<'PY'
import re
MOUNTS = set()  # the mount labels seen: every series has one, first
def load(path):
    out = {}
    for line in open(path):
        line = line.rstrip("\n")
        if not line.strip() or line.startswith("#"):
            continue
        key, val = line.rsplit(" ", 1)
        g = re.match(r'^(\w+)\{mount="((?:[^"\\]|\\.)*)",?(.*)\}$', key)
        if not g:
            raise SystemExit("a series without the mount label first: " + key)
        MOUNTS.add(g.group(2))
        key = g.group(1) + ("{%s}" % g.group(3) if g.group(3) else "")
        out[key] = float(val)
    return out
def histograms(m):
    """{family{labels without le}: (buckets by le, sum, count)}"""
    h = {}
    for k, v in m.items():
        g = re.match(r'^(\w+)_bucket\{(.*?),?le="([^"]+)"\}$', k)
        if g:
            base = g.group(1) + ("{%s}" % g.group(2) if g.group(2) else "")
            h.setdefault(base, {})[g.group(3)] = v
    return h
def series(base, suffix):
    """dlfs_x{a="b"} -> dlfs_x_sum{a="b"}"""
    if "{" in base:
        n, l = base.split("{", 1)
        return n + suffix + "{" + l
    return base + suffix
PY

# readall: every file under MNT in full, past the page cache, checked
# against SRC; prints the bytes read.
readall() {
	local out
	out=$(tmo "$PYTHON" "$LIB_DIR/readtree.py" "$SRC" "$MNT") ||
		fail "reading the files through the mount failed"
	echo "${out#* }"
}

# snap TAG: MNT's metrics and stats, once two reads of the metrics agree
# on what the stats are compared with (background reads may still end).
snap() {
	local tag=$1 i
	for ((i = 0; i < 300; i++)); do
		tmo cat "$MNT/.dlfs/metrics" >"$T/$tag.prom" || fail "cannot read $MNT/.dlfs/metrics"
		tmo cat "$MNT/.dlfs/stats" >"$T/$tag.json" || fail "cannot read $MNT/.dlfs/stats"
		tmo cat "$MNT/.dlfs/metrics" >"$T/$tag.prom2" || fail "cannot read $MNT/.dlfs/metrics"
		"$PYTHON" - "$T/$tag.prom" "$T/$tag.prom2" "$T" <<'PY' && return 0
import sys
sys.path.insert(0, sys.argv[3])
import prom
a, b = prom.load(sys.argv[1]), prom.load(sys.argv[2])
keys = ["dlfs_pfs_reads_total", "dlfs_served_bytes_total", "dlfs_pfs_reads_in_flight",
        'dlfs_tier_hits_total{tier="ram"}', 'dlfs_tier_misses_total{tier="ram"}']
sys.exit(0 if all(a[k] == b[k] for k in keys) and a["dlfs_pfs_reads_in_flight"] == 0 else 1)
PY
		sleep 0.2
	done
	fail "the counters did not settle within 60 s"
}

note "after one pass: promtool, and the values against .dlfs/stats"
ls -a "$MNT/.dlfs" | grep -qx metrics || fail ".dlfs does not list metrics: $(ls -a "$MNT/.dlfs" | tr '\n' ' ')"
SUM=$(readall)
snap one
promcheck "$T/one.prom" "after one pass"
tmo cat "$MNT/.dlfs/info" >"$T/info.json"

"$PYTHON" - "$T" "$DS" "$SUM" "$MNT" "$SRC" <<'PY' || fail "the metrics are wrong (see above)"
import json, os, struct, sys
T, ds, total, mnt, src = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
sys.path.insert(0, T)
import prom
m = prom.load(T + "/one.prom")
s = json.load(open(T + "/one.json"))
info = json.load(open(T + "/info.json"))
bad = []
def eq(key, want, what):
    got = m.get(key)
    if got != want:
        bad.append("%s = %r, but %s is %r" % (key, got, what, want))
chunks = data = 0
for n in sorted(os.listdir(ds)):
    if n.endswith(".dlc"):
        cs, _, dsize = struct.unpack_from("<QQQ", open(os.path.join(ds, n), "rb").read(64), 40)
        chunks += (dsize + cs - 1) // cs
        data += dsize
eq("dlfs_served_bytes_total", s["bytes_served"], "stats bytes_served")
eq("dlfs_pfs_reads_total", s["tiers"]["pfs"]["reads"], "stats tiers.pfs.reads")
eq("dlfs_pfs_reads_total", chunks, "the number of chunks")
eq('dlfs_tier_read_bytes_total{tier="pfs"}', s["tiers"]["pfs"]["bytes"], "stats tiers.pfs.bytes")
eq('dlfs_tier_read_bytes_total{tier="pfs"}', data, "the containers' data")
eq('dlfs_tier_hits_total{tier="ram"}', s["tiers"]["ram"]["hits"], "stats tiers.ram.hits")
eq('dlfs_tier_misses_total{tier="ram"}', s["tiers"]["ram"]["misses"], "stats tiers.ram.misses")
eq('dlfs_tier_read_bytes_total{tier="ram"}', s["tiers"]["ram"]["served_bytes"], "stats tiers.ram.served_bytes")
eq("dlfs_files_read_total", s["files_read"], "stats files_read")
eq("dlfs_ram_capacity_bytes", 64 << 20, "ram_cache")
eq('dlfs_tier_read_seconds_count{tier="pfs"}', chunks, "the number of chunks")
eq("dlfs_pfs_read_size_bytes_count", chunks, "the number of chunks")
if m.get("dlfs_served_bytes_total", 0) < total:
    bad.append("dlfs_served_bytes_total %r < %d bytes read" % (m.get("dlfs_served_bytes_total"), total))
nfiles = sum(len(f) for _, _, f in os.walk(src))
if m.get("dlfs_files_read_total", 0) < nfiles:
    bad.append("dlfs_files_read_total %r < %d files read" % (m.get("dlfs_files_read_total"), nfiles))
if not m.get('dlfs_tier_read_seconds_sum{tier="pfs"}', 0) > 0:
    bad.append("the PFS reads took no time")
want_info = 'dlfs_info{dataset_id="%s",dataset="%s",mountpoint="%s",front_end="fuse",rank="0",ranks="1"}' % (
    info["dataset_id"], info["path"], mnt)
eq(want_info, 1, "the mount's identity")
if prom.MOUNTS != {mnt}:
    bad.append("mount labels %r, want only the mountpoint %r" % (sorted(prom.MOUNTS), mnt))
hs = prom.histograms(m)
if len(hs) != 5:
    bad.append("%d histogram series, want 5 (4 tiers, PFS sizes): %r" % (len(hs), sorted(hs)))
for base, b in hs.items():
    count = m.get(prom.series(base, "_count"))
    if "+Inf" not in b or b["+Inf"] != count:
        bad.append("%s: +Inf bucket %r, _count %r" % (base, b.get("+Inf"), count))
    if prom.series(base, "_sum") not in m:
        bad.append("%s: no _sum" % base)
    vals = [v for k, v in sorted(b.items(), key=lambda kv: float(kv[0]))]
    if vals != sorted(vals):
        bad.append("%s: buckets not cumulative: %r" % (base, b))
if any(v for k, v in m.items() if k.startswith("dlfs_errors_total")):
    bad.append("errors: %r" % {k: v for k, v in m.items() if k.startswith("dlfs_errors_total")})
for b in bad:
    print("  " + b, file=sys.stderr)
sys.exit(1 if bad else 0)
PY

note "a second pass, from the RAM tier"
SUM2=$(readall)
snap two
promcheck "$T/two.prom" "after the second pass"
"$PYTHON" - "$T" "$SUM2" <<'PY' || fail "the second pass's metrics are wrong (see above)"
import sys
T, total = sys.argv[1], int(sys.argv[2])
sys.path.insert(0, T)
import prom
a, b = prom.load(T + "/one.prom"), prom.load(T + "/two.prom")
d = lambda k: b[k] - a[k]
bad = []
ram = 'dlfs_tier_read_bytes_total{tier="ram"}'
if d(ram) != d("dlfs_served_bytes_total") or d(ram) < total:
    bad.append("RAM bytes grew by %d, served bytes by %d, %d bytes read" % (d(ram), d("dlfs_served_bytes_total"), total))
if d('dlfs_tier_read_seconds_count{tier="ram"}') <= 0:
    bad.append("no RAM read was timed")
if d('dlfs_tier_read_seconds_count{tier="pfs"}') or d("dlfs_pfs_reads_total"):
    bad.append("the PFS was read again")
for x in bad:
    print("  " + x, file=sys.stderr)
sys.exit(1 if bad else 0)
PY

note "dlfs-inspect top while a reader runs"
# The reader: passes over the files, past the page cache, until told to
# stop (at most 120 s); $T/reading once its first pass is done.
(
	end=$((SECONDS + 120))
	while [ ! -e "$T/stop" ] && [ "$SECONDS" -lt "$end" ]; do
		"$PYTHON" "$LIB_DIR/readtree.py" "$SRC" "$MNT" >/dev/null || exit 1
		: >"$T/reading"
	done
) &
READER=$!
for ((i = 0; i < 600; i++)); do
	[ -e "$T/reading" ] && break
	kill -0 "$READER" 2>/dev/null || fail "the reader died"
	sleep 0.1
done
[ -e "$T/reading" ] || fail "the reader did not finish a pass in 60 s"
inspect top "$MNT" -n 3 -i 0.5
touch "$T/stop"
expect_ok "dlfs-inspect top MNT -n 3 -i 0.5"
[ ! -s "$T/err" ] || { _show; fail "dlfs-inspect top wrote to stderr"; }
"$PYTHON" - "$T/out" <<'PY' || { _show; fail "dlfs-inspect top's rows are wrong (see above)"; }
import sys
lines = open(sys.argv[1]).read().splitlines()
head = lines[0].split() if lines else []
want = ["time", "files/s", "MB/s", "ram", "nvme", "peer", "pfs", "ram%", "nvme%", "pfs-q"]
if head != want:
    sys.exit("  header %r, want %r" % (head, want))
rows = [l.split() for l in lines[1:]]
wide = [l for l in lines if len(l) > 80]
if wide:
    sys.exit("  lines wider than 80 columns: %r" % wide)
if len(rows) != 3 or any(len(r) != len(want) for r in rows):
    sys.exit("  want 3 rows of %d columns: %r" % (len(want), rows))
if not any(float(r[1]) > 0 and float(r[2]) > 0 for r in rows):
    sys.exit("  no row shows files/s and MB/s above 0 while a reader runs: %r" % rows)
PY
wait_exit "$READER" 60
[ "$WAIT_RC" = 0 ] || fail "the reader ended with $WAIT_RC"

note "top ends cleanly on SIGINT"
: >"$T/top.out" # there before the child opens it
"$DLFS_INSPECT" top "$MNT" -i 0.1 >"$T/top.out" 2>"$T/top.err" &
TOP=$!
for ((i = 0; i < 600; i++)); do
	[ "$(wc -l <"$T/top.out")" -ge 2 ] && break
	kill -0 "$TOP" 2>/dev/null || break
	sleep 0.1
done
[ "$(wc -l <"$T/top.out")" -ge 2 ] || { cat "$T/top.err" >&2; fail "top printed no row within 60 s"; }
kill -INT "$TOP"
wait_exit "$TOP" 30
[ "$WAIT_RC" = 0 ] || fail "top ended with $WAIT_RC after SIGINT, not 0"

note "top refuses bad input"
inspect top "$SRC" -n 1
expect_rc 1 "top on a directory that is not a mount"
err_has "not a dlfs mount" "top on a directory that is not a mount"
for bad in "-i 0" "-i x" "-i" "-n 0" "-n 1.5" "-q"; do
	# shellcheck disable=SC2086
	inspect top "$MNT" $bad
	expect_rc 2 "top $bad"
	[ "$(grep -c '' "$T/err")" = 2 ] && grep -q '^usage: dlfs-inspect top' "$T/err" ||
		{ _show; fail "top $bad: want one line saying why, then the usage"; }
done
inspect top
expect_rc 2 "top without a mountpoint"

check_log "$DLFS_LOG"
dlfs_umount "$MNT"
check_log "$DLFS_LOG"

note "paths that are not UTF-8 (issue 38): promtool takes the page, .dlfs/info is JSON"
# A path is any bytes; the text format and JSON are UTF-8. The dataset,
# the mountpoint and the cache_dir each hold a byte 0xff.
B=$'\xff'
DSB="$T/ds$B.dlfs"
cp -a "$DS" "$DSB"
MNTB="$T/mnt$B"
mkdir "$MNTB" "$T/cache$B"
dlfs_mount "$DSB" "$MNTB" -o "ram_cache=16M,cache_dir=$T/cache$B"
cat "$MNTB/a/s000" >/dev/null
tmo cat "$MNTB/.dlfs/metrics" >"$T/bad.prom"
tmo cat "$MNTB/.dlfs/info" >"$T/bad.info"
dlfs_umount "$MNTB"
promcheck "$T/bad.prom" "with a path that is not UTF-8"
grep -q $'\xef\xbf\xbd' "$T/bad.prom" ||
	fail "the metrics should show the byte 0xff as U+FFFD"
"$PYTHON" - "$T/bad.info" "$DSB" "$MNTB" <<'PY' || fail ".dlfs/info with a path that is not UTF-8 (see above)"
import json, os, sys
raw = open(sys.argv[1], "rb").read()
info = json.loads(raw.decode("utf-8"))   # strict: the page must be UTF-8
want = {os.fsencode(sys.argv[2]), os.fsencode(sys.argv[3])}
got = {os.fsencode(v) for v in info.values() if isinstance(v, str)}
missing = want - got
if missing:
    print("  .dlfs/info lacks %r (its strings, fsencoded: %r)" % (missing, got), file=sys.stderr)
    sys.exit(1)
PY
check_log "$DLFS_LOG"

note "through dlfs-run (dlfs --serve)"
export DLFS_DAEMON=$DLFS
export TMPDIR="$T/tmp"
mkdir "$TMPDIR"
unset XDG_RUNTIME_DIR
P=/dlfs-test/metrics
# --private: the server is the test's own and ends with dlfs-run.
timeout -k 10 "$DLFS_CMD_TIMEOUT" "$DLFS_RUN" --private -o ram_cache=64M "$DS:$P" -- bash -c '
	set -e
	for pass in 1 2; do
		"$1" "$5/readtree.py" "$6" "$4"
	done
	cat "$4/.dlfs/metrics" >"$2/serve.prom"
	"$3" top "$4" -n 1 -i 0.2 >"$2/serve.top"
' _ "$PYTHON" "$T" "$DLFS_INSPECT" "$P" "$LIB_DIR" "$SRC" >"$T/serve.out" 2>&1 ||
	{ cat "$T/serve.out" >&2; fail "reading through dlfs-run failed"; }
promcheck "$T/serve.prom" "through dlfs-run"
"$PYTHON" - "$T" "$(head -n 1 "$T/serve.out" | cut -d' ' -f2)" <<'PY' || fail "the metrics through dlfs-run are wrong (see above)"
import sys
T, total = sys.argv[1], int(sys.argv[2])
sys.path.insert(0, T)
import prom
m = prom.load(T + "/serve.prom")
bad = []
if not any(k.startswith("dlfs_info{") and 'front_end="serve"' in k for k in m):
    bad.append("no dlfs_info with front_end=\"serve\"")
# The server's series carry its socket as their mount label.
if len(prom.MOUNTS) != 1 or not next(iter(prom.MOUNTS)).startswith("/"):
    bad.append("mount labels %r, want the server's socket" % sorted(prom.MOUNTS))
got = m["dlfs_served_bytes_total"] + sum(v for k, v in m.items() if k.startswith("dlfs_direct_read_bytes_total"))
if got < 2 * total:
    bad.append("served and direct bytes %d < %d read in two passes" % (got, 2 * total))
for x in bad:
    print("  " + x, file=sys.stderr)
sys.exit(1 if bad else 0)
PY
[ "$(grep -c '' "$T/serve.top")" = 2 ] || { cat "$T/serve.top" >&2; fail "top under dlfs-run: want a header and a row"; }

note "top --socket: a dlfs-run server watched from outside its command (issue 39, item 6)"
NODE="$TMPDIR/dlfs-run-$(id -u)"
# The command ends once told, or once the test's directory is gone (a
# failed test kills dlfs-run at exit, which leaves its command running).
"$DLFS_RUN" -o ram_cache=32M "$DS:$P" -- bash -c '
	while [ ! -e "$1/outside.stop" ] && [ -d "$1" ]; do cat "$2/a/s000" >/dev/null 2>&1; sleep 0.05; done
' _ "$T" "$P" >"$T/outside.out" 2>&1 &
RUN=$!
SOCK=
for ((i = 0; i < 600; i++)); do
	SOCK=$(compgen -G "$NODE/*.sock" | head -n 1 || true)
	[ -n "$SOCK" ] && break
	kill -0 "$RUN" 2>/dev/null || break
	sleep 0.1
done
[ -n "$SOCK" ] || { cat "$T/outside.out" >&2; fail "no server socket appeared in $NODE"; }
inspect top --socket "$SOCK" -n 2 -i 0.2
expect_ok "top --socket SOCK -n 2"
[ "$(grep -c '' "$T/out")" = 3 ] && head -n 1 "$T/out" | grep -q 'files/s' ||
	{ _show; fail "top --socket: want a header and two rows"; }
inspect top --socket "$NODE"
expect_rc 2 "top --socket on the node directory"
err_has "a directory; give one of: $SOCK" "top --socket on the node directory names its socket"
inspect top --socket "$T/src"
expect_rc 2 "top --socket on a directory without sockets"
err_has "no dlfs-run server's socket" "top --socket on a directory without sockets"
inspect top --socket "$DS/index"
expect_rc 2 "top --socket on a file"
err_has "not a socket" "top --socket on a file"
inspect top "$MNT" --socket "$SOCK"
expect_rc 2 "top with both a mountpoint and --socket"
: >"$T/outside.stop"
wait_exit "$RUN" 60
[ "$WAIT_RC" = 0 ] || { cat "$T/outside.out" >&2; fail "dlfs-run of the watched server ended with $WAIT_RC"; }
inspect top --socket "$SOCK" -n 1
expect_rc 1 "top --socket once the server has ended"
exit 0
