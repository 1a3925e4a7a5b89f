#!/bin/bash
# stats: MNT/.dlfs/stats counts what happened.
#  - after reading every file once (RAM cache larger than the dataset):
#    valid JSON with all the documented keys; ops.read, ops.lookup > 0;
#    bytes_served >= the sum of the file sizes; every chunk of every
#    container was read from the PFS exactly once (pfs.reads = number of
#    chunks, pfs.bytes = sum of the containers' data sizes, from their
#    headers); the histogram sums to pfs.reads, with no read above the
#    chunk size's bucket and at most one smaller read (the last, short
#    chunk) per container; ram.capacity_bytes = ram_cache; no errors;
#  - after dropping the page cache and reading everything again: ram.hits
#    grew, pfs.reads and pfs.bytes did not, ops.read and bytes_served grew;
#  - dlfs-inspect stats MNT prints "key: value" lines, exit 0; with --json
#    (before or after MNT) valid JSON; on a plain directory exit 1.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"
mount_setup

SRC="$T/src"
mkdir -p "$SRC/a" "$SRC/b/c"
"$PYTHON" - "$SRC" <<'PY'
import os, random, sys
r = random.Random(17)
d = sys.argv[1]
for i in range(200):
    open(os.path.join(d, "a/s%03d" % i), "wb").write(r.randbytes(r.randrange(0, 5000)))
for i, n in enumerate([65535, 65536, 65537, 100000, 300000, 1000003]):
    open(os.path.join(d, "b/c/m%d" % i), "wb").write(r.randbytes(n))
open(os.path.join(d, "empty"), "wb").close()
PY
DS="$T/ds.dlfs"
pack "$SRC" -o "$DS" --chunk-size 64K --container-size 512K -q
expect_ok "pack"
RAM=$((64 << 20))
MNT="$T/mnt"
mkdir "$MNT"
dlfs_mount "$DS" "$MNT" -o ram_cache=64M

# readall: reads every file under MNT in full, after dropping its page
# cache (so the reads reach the daemon); prints the total bytes.
readall() {
	tmo "$PYTHON" - "$MNT" "$SRC" <<'PY' || fail "reading the files through the mount failed"
import os, sys
mnt, src = sys.argv[1], sys.argv[2]
total = 0
for dp, dn, fn in os.walk(src):
    for n in fn:
        rel = os.path.relpath(os.path.join(dp, n), src)
        fd = os.open(os.path.join(mnt, rel), os.O_RDONLY)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        data = b""
        while True:
            b = os.read(fd, 1 << 20)
            if not b:
                break
            data += b
        os.close(fd)
        if data != open(os.path.join(src, rel), "rb").read():
            sys.exit("  %s: content differs from the source" % rel)
        total += len(data)
print(total)
PY
}
SUM=$(readall)
tmo cat "$MNT/.dlfs/stats" >"$T/stats1.json" || fail "cannot read $MNT/.dlfs/stats"
SUM2=$(readall)
[ "$SUM" = "$SUM2" ] || fail "test bug: $SUM != $SUM2"
tmo cat "$MNT/.dlfs/stats" >"$T/stats2.json" || fail "cannot read $MNT/.dlfs/stats the second time"

"$PYTHON" - "$T/stats1.json" "$T/stats2.json" "$DS" "$SUM" "$RAM" <<'PY' || fail "stats are wrong (see above)"
import json, os, struct, sys
bad = []
def load(p):
    try:
        return json.load(open(p))
    except ValueError as e:
        sys.exit("  %s is not valid JSON: %s\n%s" % (p, e, open(p).read()[:500]))
s1, s2 = load(sys.argv[1]), load(sys.argv[2])
ds, total, ram_cap = sys.argv[3], int(sys.argv[4]), int(sys.argv[5])

shape = {"uptime_s": None,
         "ops": ["lookup", "getattr", "readdir", "readdirplus", "read", "readlink",
                 "statfs", "getxattr", "listxattr", "control"],
         "bytes_served": None,
         "tiers": {"ram": ["hits", "misses", "bytes", "capacity_bytes", "used_bytes"],
                   "pfs": ["reads", "bytes", "read_size_hist"]},
         "errors": ["checksum", "container", "io"]}
def check_shape(obj, want, where):
    for k, sub in want.items():
        if k not in obj:
            bad.append("missing key %s%s" % (where, k)); continue
        if sub is None:
            if not isinstance(obj[k], (int, float)) or obj[k] < 0:
                bad.append("%s%s = %r is not a number >= 0" % (where, k, obj[k]))
        elif isinstance(sub, dict):
            check_shape(obj[k], sub, where + k + ".")
        else:
            for kk in sub:
                if kk not in obj[k]:
                    bad.append("missing key %s%s.%s" % (where, k, kk))
                elif kk != "read_size_hist" and not isinstance(obj[k][kk], int):
                    bad.append("%s%s.%s = %r is not an integer" % (where, k, kk, obj[k][kk]))
check_shape(s1, shape, "")
if bad:
    for b in bad: print("  " + b, file=sys.stderr)
    sys.exit(1)

# The containers' chunk counts and data sizes, from their headers.
chunks = data = ncont = 0
cs = None
for n in sorted(os.listdir(ds)):
    if not n.endswith(".dlc"):
        continue
    h = open(os.path.join(ds, n), "rb").read(64)
    cs, data_off, dsize = struct.unpack_from("<QQQ", h, 40)
    chunks += (dsize + cs - 1) // cs
    data += dsize
    ncont += 1

p1, r1 = s1["tiers"]["pfs"], s1["tiers"]["ram"]
if s1["ops"]["read"] <= 0: bad.append("ops.read = %d" % s1["ops"]["read"])
if s1["ops"]["lookup"] <= 0: bad.append("ops.lookup = %d" % s1["ops"]["lookup"])
if s1["bytes_served"] < total:
    bad.append("bytes_served %d < %d bytes read" % (s1["bytes_served"], total))
if p1["bytes"] <= 0: bad.append("tiers.pfs.bytes = %d" % p1["bytes"])
if p1["reads"] != chunks:
    bad.append("tiers.pfs.reads = %d, expected %d (each of the %d chunks once)" % (p1["reads"], chunks, chunks))
if p1["bytes"] != data:
    bad.append("tiers.pfs.bytes = %d, expected %d (the containers' data)" % (p1["bytes"], data))
hist = p1["read_size_hist"]
def kib(label):
    l = label.lstrip(">")
    return int(l[:-1]) * (1024 if l.endswith("M") else 1)
if sum(hist.values()) != p1["reads"]:
    bad.append("read_size_hist sums to %d, pfs.reads is %d" % (sum(hist.values()), p1["reads"]))
csk = cs // 1024
above = sum(v for k, v in hist.items() if kib(k) > csk or k.startswith(">"))
below = sum(v for k, v in hist.items() if kib(k) < csk and not k.startswith(">"))
if above:
    bad.append("%d PFS reads larger than the %d KiB chunk: %r" % (above, csk, hist))
if below > ncont:
    bad.append("%d PFS reads smaller than a chunk, more than one per container (%d): %r" % (below, ncont, hist))
if hist.get("%dK" % csk, 0) < p1["reads"] - ncont:
    bad.append("only %d reads in the %dK bucket: %r" % (hist.get("%dK" % csk, 0), csk, hist))
if r1["capacity_bytes"] != ram_cap:
    bad.append("ram.capacity_bytes = %d, ram_cache was %d" % (r1["capacity_bytes"], ram_cap))
if not 0 < r1["used_bytes"] <= r1["capacity_bytes"]:
    bad.append("ram.used_bytes = %d" % r1["used_bytes"])
if any(s1["errors"].values()): bad.append("errors = %r" % s1["errors"])

p2, r2 = s2["tiers"]["pfs"], s2["tiers"]["ram"]
if r2["hits"] <= r1["hits"]:
    bad.append("second pass: ram.hits %d -> %d did not grow" % (r1["hits"], r2["hits"]))
if p2["reads"] != p1["reads"] or p2["bytes"] != p1["bytes"]:
    bad.append("second pass: pfs.reads %d -> %d, pfs.bytes %d -> %d (the cache holds everything)" %
               (p1["reads"], p2["reads"], p1["bytes"], p2["bytes"]))
if s2["ops"]["read"] <= s1["ops"]["read"]:
    bad.append("second pass: ops.read %d -> %d" % (s1["ops"]["read"], s2["ops"]["read"]))
if s2["bytes_served"] < s1["bytes_served"] + total:
    bad.append("second pass: bytes_served %d -> %d, grew by less than %d" % (s1["bytes_served"], s2["bytes_served"], total))
if s2["uptime_s"] < s1["uptime_s"]:
    bad.append("uptime_s went back: %r -> %r" % (s1["uptime_s"], s2["uptime_s"]))
if s2["ops"]["control"] <= s1["ops"]["control"]:
    bad.append("ops.control did not count reads of .dlfs/stats")
if any(s2["errors"].values()): bad.append("errors = %r" % s2["errors"])
print("  first pass: ops.read %d, pfs %d reads %d bytes (%d chunks, %d containers), ram hits %d; "
      "second pass: ram hits %d, pfs reads %d" % (s1["ops"]["read"], p1["reads"], p1["bytes"], chunks,
      ncont, r1["hits"], r2["hits"], p2["reads"]), file=sys.stderr)
for b in bad:
    print("  " + b, file=sys.stderr)
sys.exit(1 if bad else 0)
PY

note "dlfs-inspect stats"
inspect stats "$MNT"
expect_ok "dlfs-inspect stats MNT"
[ -s "$T/out" ] || fail "dlfs-inspect stats printed nothing"
head -c 1 "$T/out" | grep -q '{' && fail "dlfs-inspect stats (without --json) printed JSON"
grep -qE '^[A-Za-z_.]*pfs[A-Za-z_.]*reads?.*[0-9]' "$T/out" || { _show; fail "dlfs-inspect stats does not show the PFS reads"; }
for args in "--json $MNT" "$MNT --json"; do
	# shellcheck disable=SC2086
	inspect stats $args
	expect_ok "dlfs-inspect stats $args"
	"$PYTHON" -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d["tiers"]["pfs"]["reads"] > 0' "$T/out" ||
		{ _show; fail "dlfs-inspect stats $args: not the stats JSON"; }
done
inspect stats "$SRC"
expect_rc 1 "dlfs-inspect stats on a directory that is not a mount"

check_log "$DLFS_LOG"
dlfs_umount "$MNT"
check_log "$DLFS_LOG"
exit 0
