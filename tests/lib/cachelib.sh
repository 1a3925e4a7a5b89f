# shellcheck shell=bash
# Helpers shared by the NVMe-tier and read-ahead mount tests
# (tests/mount/cache_*.sh, readahead.sh). Source it after lib.sh and
# mount_setup:
#
#   . "$(dirname "$0")/../lib/lib.sh"
#   mount_setup
#   . "$LIB_DIR/cachelib.sh"
#
# The interface under test (options, cache directory layout, stats keys)
# is the one of dlfs(1) "NVMe cache tier" / "read-ahead".

# cache_mkdata DEST SEED: a few MiB of pseudo-random files, a function of
# SEED: 150 small files (0..6000 bytes, many to one chunk), 20 medium ones
# (20K..200K, spanning chunks), and files at the 64K chunk boundaries and
# larger than a 1M container.
cache_mkdata() {
	"$PYTHON" - "$1" "$2" <<'PY' || fail "cannot generate the source tree $1"
import os, random, sys
d, r = sys.argv[1], random.Random(int(sys.argv[2]))
for sub in ("small", "mid", "edge"):
    os.makedirs(os.path.join(d, sub), exist_ok=True)
for i in range(150):
    open(os.path.join(d, "small/s%03d" % i), "wb").write(r.randbytes(r.randrange(0, 6000)))
for i in range(20):
    open(os.path.join(d, "mid/m%02d" % i), "wb").write(r.randbytes(r.randrange(20000, 200000)))
for i, n in enumerate([65535, 65536, 65537, 300000, 1000003, 1100000]):
    open(os.path.join(d, "edge/e%d" % i), "wb").write(r.randbytes(n))
open(os.path.join(d, "empty"), "wb").close()
PY
}

# ds_geom DATASET: prints "CHUNKS DATA_BYTES CONTAINERS CHUNK_SIZE", from
# the containers' headers (dlfs-format(5)): chunk k of a container covers
# [data_offset + k*chunk_size, ...) up to data_size bytes of data.
ds_geom() {
	"$PYTHON" - "$1" <<'PY' || fail "cannot read the container headers of $1"
import os, struct, sys
ds = sys.argv[1]
chunks = data = n = 0
cs = 0
for name in sorted(os.listdir(ds)):
    if not name.endswith(".dlc"):
        continue
    h = open(os.path.join(ds, name), "rb").read(64)
    cs, data_off, dsize = struct.unpack_from("<QQQ", h, 40)
    chunks += (dsize + cs - 1) // cs
    data += dsize
    n += 1
print(chunks, data, n, cs)
PY
}

# ds_id DATASET: the dataset_id (32 hex digits) from dlfs-inspect info.
# cache_dataset SEED: the usual test dataset (cache_mkdata SEED packed with
# 64K chunks in 1M containers): sets SRC, DS, and CHUNKS DATA NCONT CS.
cache_dataset() {
	SRC="$T/src"
	cache_mkdata "$SRC" "$1"
	DS="$T/ds.dlfs"
	pack "$SRC" -o "$DS" --chunk-size 64K --container-size 1M -q
	expect_ok "pack"
	# shellcheck disable=SC2034 # not every test uses every number
	read -r CHUNKS DATA NCONT CS <<<"$(ds_geom "$DS")"
}

ds_id() {
	inspect info --json "$1"
	expect_ok "dlfs-inspect info --json $1"
	json_get "$T/out" dataset_id
}

# snap MNT OUT: copies MNT/.dlfs/stats to OUT (and checks it is JSON).
snap() {
	tmo cat "$1/.dlfs/stats" >"$2" || fail "cannot read $1/.dlfs/stats"
	"$PYTHON" -c 'import json, sys; json.load(open(sys.argv[1]))' "$2" 2>/dev/null ||
		fail "$1/.dlfs/stats is not valid JSON: $(head -c 400 "$2")"
}

# sget FILE KEY.PATH...: prints the values (one per line) of dotted keys
# of a stats JSON, e.g. sget s.json tiers.pfs.bytes; "MISSING" if absent.
sget() {
	"$PYTHON" - "$@" <<'PY' || fail "cannot read $2 from $1"
import json, sys
d = json.load(open(sys.argv[1]))
for k in sys.argv[2:]:
    v = d
    for p in k.split("."):
        if not isinstance(v, dict) or p not in v:
            v = "MISSING"
            break
        v = v[p]
    print(json.dumps(v) if isinstance(v, (dict, list)) else v)
PY
}

# stats_shape FILE: every key of /.dlfs/stats that issue 4 documents is
# there and is a number >= 0 (nvme.policy "keep" or "lru", or "none" when
# the tier is off); fails otherwise.
stats_shape() {
	"$PYTHON" - "$1" <<'PY' || fail "$1 lacks documented stats keys (see above): $(head -c 600 "$1")"
import json, sys
d = json.load(open(sys.argv[1]))
want = {
    "tiers.ram": ["hits", "misses", "bytes", "capacity_bytes", "used_bytes", "chunks", "uncached_loads"],
    "tiers.nvme": ["enabled", "hits", "misses", "bytes", "capacity_bytes", "used_bytes", "chunks",
                   "written_chunks", "written_bytes", "write_dropped", "evicted", "corrupt", "errors"],
    "tiers.pfs": ["reads", "bytes"],
    "prefetch": ["enabled", "window_max_bytes", "issued", "used", "wasted"],
    "errors": ["checksum", "container", "io", "nvme"],
}
bad = []
for where, keys in want.items():
    o = d
    for p in where.split("."):
        o = o.get(p) if isinstance(o, dict) else None
    if not isinstance(o, dict):
        bad.append("no object %s" % where)
        continue
    for k in keys:
        v = o.get(k)
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            bad.append("%s.%s = %r, expected an integer >= 0" % (where, k, v))
nv = d.get("tiers", {}).get("nvme", {})
pol = nv.get("policy")
# The spec gives "keep"|"lru"; a tier that is off may say "none".
if pol not in ("keep", "lru") and not (nv.get("enabled") == 0 and pol == "none"):
    bad.append("tiers.nvme.policy = %r, expected \"keep\" or \"lru\"" % (pol,))
if not isinstance(d.get("tiers", {}).get("pfs", {}).get("read_size_hist"), dict):
    bad.append("tiers.pfs.read_size_hist missing")
for b in bad:
    print("  " + b, file=sys.stderr)
sys.exit(1 if bad else 0)
PY
}

# readtree MNT SRC [readtree.py options]: every file (or the --slice)
# read through MNT must equal SRC; prints "FILES BYTES".
readtree() {
	local mnt=$1 src=$2
	shift 2
	tmo "$PYTHON" "$LIB_DIR/readtree.py" "$src" "$mnt" "$@" ||
		fail "reading the files through $mnt ($*) gave errors or wrong data (see above)"
}

# _wait_nvme MNT WANT SECONDS: polls MNT/.dlfs/stats every 0.1 s (in one
# python process) until tiers.nvme.written_chunks >= WANT, or, with WANT
# "settled", until it has not changed for 1.5 s. Leaves the last stats in
# $T/wait.json; exit 1 if 5 s pass without progress short of WANT, or
# SECONDS run out.
_wait_nvme() {
	tmo "$PYTHON" - "$1/.dlfs/stats" "$2" "$3" "$T/wait.json" <<'PY'
import json, sys, time
path, want, secs, out = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
t0 = last_change = time.monotonic()
last = None
while True:
    raw = open(path, "rb").read()
    open(out, "wb").write(raw)
    w = json.loads(raw)["tiers"]["nvme"]["written_chunks"]
    now = time.monotonic()
    if w != last:
        last, last_change = w, now
    if want == "settled":
        if now - last_change >= 1.5:
            sys.exit(0)
    elif w >= int(want):
        sys.exit(0)
    elif now - last_change >= 5:
        sys.exit(1)
    if now - t0 >= secs:
        sys.exit(1)
    time.sleep(0.1)
PY
}

# wait_written MNT WANT [SECONDS]: waits until tiers.nvme.written_chunks
# >= WANT (the background cache writes are done; timeout 30 s). Fails,
# with the counters, if it stops short or the time runs out.
wait_written() {
	_wait_nvme "$1" "$2" "${3:-30}" ||
		fail "tiers.nvme.written_chunks = $(sget "$T/wait.json" tiers.nvme.written_chunks), expected it to reach $2 within ${3:-30}s; nvme: $(sget "$T/wait.json" tiers.nvme | head -c 500)"
}

# wait_settled MNT [SECONDS]: waits until tiers.nvme.written_chunks has not
# changed for 1.5 s (the background writes are over); at most SECONDS (30).
wait_settled() {
	_wait_nvme "$1" settled "${2:-30}" ||
		fail "tiers.nvme.written_chunks still changing after ${2:-30}s (now $(sget "$T/wait.json" tiers.nvme.written_chunks))"
}

# check_private CACHE_DIR ID: CACHE_DIR/ID is a directory of mode 0700,
# and every entry in it is a regular file of mode 0600. Prints the names.
check_private() {
	"$PYTHON" - "$1" "$2" <<'PY' || fail "the cache directory $1/$2 is not private (see above)"
import os, stat, sys
top = os.path.join(sys.argv[1], sys.argv[2])
bad = []
st = os.lstat(top)
if not stat.S_ISDIR(st.st_mode):
    bad.append("%s is not a directory" % top)
elif stat.S_IMODE(st.st_mode) != 0o700:
    bad.append("%s has mode %04o, expected 0700" % (top, stat.S_IMODE(st.st_mode)))
names = sorted(os.listdir(top))
for n in names:
    s = os.lstat(os.path.join(top, n))
    if not stat.S_ISREG(s.st_mode):
        bad.append("%s/%s is not a regular file (mode %o)" % (top, n, s.st_mode))
    elif stat.S_IMODE(s.st_mode) != 0o600:
        bad.append("%s/%s has mode %04o, expected 0600" % (top, n, stat.S_IMODE(s.st_mode)))
for b in bad:
    print("  " + b, file=sys.stderr)
print(" ".join(names))
sys.exit(1 if bad else 0)
PY
}

# flip FILE OFFSET [COUNT]: xor COUNT (1) bytes at OFFSET with 0xff.
flip() {
	"$PYTHON" - "$1" "$2" "${3:-1}" <<'PY' || fail "cannot flip bytes in $1 at $2"
import sys
path, off, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
with open(path, "r+b") as f:
    f.seek(off)
    b = f.read(n)
    if len(b) != n:
        sys.exit("%s: only %d bytes at offset %d" % (path, len(b), off))
    f.seek(off)
    f.write(bytes(x ^ 0xFF for x in b))
PY
}

# bad_opt WHAT NAME=VALUE [MORE ARGS]: `dlfs DATASET MNT -o NAME=VALUE`
# (DS and MNT from the caller; no -f, so a wrong success daemonizes rather
# than hangs) exits 2 with "dlfs: -o NAME=VALUE: " on stderr and leaves
# nothing mounted. Uses soft_fail.
bad_opt() {
	local what=$1 opt=$2 st=0
	shift 2
	tmo "$DLFS" "$DS" "$MNT" -o "$opt" "$@" </dev/null >"$T/bo.out" 2>"$T/bo.err" || st=$?
	if is_mounted "$MNT"; then
		soft_fail "$what: dlfs -o $opt left $MNT mounted (exit $st)"
		timeout 30 fusermount3 -u "$MNT" || timeout 30 fusermount3 -uz "$MNT" || true
	fi
	if [ "$st" != 2 ]; then
		soft_fail "$what: dlfs -o $opt exited $st, expected 2; stderr: $(head -c 300 "$T/bo.err")"
		return 0
	fi
	grep -qF -- "dlfs: -o $opt: " "$T/bo.err" ||
		soft_fail "$what: stderr lacks 'dlfs: -o $opt: ...': $(head -c 300 "$T/bo.err")"
	note "$what: exit 2: $(head -n 1 "$T/bo.err")"
}

# sassert FILE [NAME=VALUE...] -- EXPR...: evaluates each Python EXPR over
# the stats JSON in FILE, where ram, nvme, pfs (the tiers), prefetch,
# errors, ops and s (the whole object) are bound, with attribute access,
# and each NAME=VALUE is an integer variable. Prints every false EXPR with
# the values of the stats it names ("expected nvme.hits > 0; nvme.hits =
# 0"); returns 1 if any was false. Use as: sassert ... || fail "what".
sassert() {
	"$PYTHON" - "$@" <<'PY'
import json, re, sys
args = sys.argv[1:]
path = args.pop(0)
class A(dict):
    def __getattr__(self, k):
        if k not in self:
            raise KeyError("no key %r (have %s)" % (k, ", ".join(sorted(self))))
        return self[k]
def wrap(o):
    if isinstance(o, dict):
        return A({k: wrap(v) for k, v in o.items()})
    return o
s = wrap(json.load(open(path)))
ns = {"s": s, "ops": s.get("ops", A()), "errors": s.get("errors", A()),
      "prefetch": s.get("prefetch", A())}
for t in ("ram", "nvme", "pfs"):
    ns[t] = s.get("tiers", A()).get(t, A())
while args and args[0] != "--":
    k, v = args.pop(0).split("=", 1)
    ns[k] = int(v)
args = args[1:]
bad = 0
for e in args:
    try:
        ok = eval(e, {"__builtins__": {"abs": abs, "min": min, "max": max, "sum": sum, "any": any, "all": all}}, ns)
    except Exception as x:
        print("  cannot evaluate %s: %s" % (e, x), file=sys.stderr)
        bad += 1
        continue
    if not ok:
        vals = []
        for m in sorted(set(re.findall(r"\b(?:s|ram|nvme|pfs|prefetch|errors|ops)(?:\.[A-Za-z_]+)+", e))):
            try:
                vals.append("%s = %s" % (m, json.dumps(eval(m, {}, ns))))
            except Exception:
                vals.append("%s = MISSING" % m)
        for m in sorted(set(re.findall(r"\b[A-Z][A-Z0-9_]*\b", e))):
            if m in ns:
                vals.append("%s = %d" % (m, ns[m]))
        print("  expected %s; saw %s" % (e, ", ".join(vals) or "false"), file=sys.stderr)
        bad += 1
sys.exit(1 if bad else 0)
PY
}
