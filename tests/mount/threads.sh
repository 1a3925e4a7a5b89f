#!/bin/bash
# threads: 16 threads of random preads (random offsets and lengths, at and
# past EOF, straddling chunk boundaries, shared and private fds, with page
# cache drops so the daemon keeps serving) over a 20 MiB file and many
# small ones, for several seconds, with a RAM cache of only 8 chunks so
# chunks are evicted and reloaded under concurrency: every byte equals the
# source. Afterwards the daemon served many reads, counted no errors,
# logged none, and exits 0 on fusermount3 -u.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
mount_setup

SRC="$T/src"
mkdir -p "$SRC/small" "$SRC/mid"
"$PYTHON" - "$SRC" <<'PY'
import os, random, sys
r = random.Random(11)
d = sys.argv[1]
open(os.path.join(d, "big20m.bin"), "wb").write(r.randbytes(20 * 2**20))
open(os.path.join(d, "big3m+5.bin"), "wb").write(r.randbytes(3 * 2**20 + 5))
for i in range(300):
    open(os.path.join(d, "small/s%03d" % i), "wb").write(r.randbytes(r.randrange(0, 6000)))
for i in range(20):
    n = r.choice([256 * 1024 - 1, 256 * 1024, 256 * 1024 + 1, r.randrange(1, 700000)])
    open(os.path.join(d, "mid/m%02d" % i), "wb").write(r.randbytes(n))
PY
DS="$T/ds.dlfs"
pack "$SRC" -o "$DS" --chunk-size 256K --container-size 4M -q
expect_ok "pack"
MNT="$T/mnt"
mkdir "$MNT"
dlfs_mount "$DS" "$MNT" -o ram_cache=2M

tmo "$PYTHON" "$HERE/preads.py" "$SRC" "$MNT" "$DS" "$DLFS_INSPECT" --threads 16 --seconds 8 ||
	fail "concurrent random reads returned wrong data or failed (see above)"

tmo cat "$MNT/.dlfs/stats" >"$T/stats.json" || fail "cannot read $MNT/.dlfs/stats"
"$PYTHON" - "$T/stats.json" <<'PY' || fail "stats after the threaded reads are wrong: $(cat "$T/stats.json")"
import json, sys
s = json.load(open(sys.argv[1]))
bad = []
if s["ops"]["read"] < 1000:
    bad.append("ops.read = %d: the reads did not reach the daemon" % s["ops"]["read"])
if any(s["errors"].values()):
    bad.append("errors = %r" % s["errors"])
ram = s["tiers"]["ram"]
if ram["used_bytes"] > ram["capacity_bytes"]:
    bad.append("ram.used_bytes %d > capacity_bytes %d" % (ram["used_bytes"], ram["capacity_bytes"]))
print("  ops.read %d, ram hits %d misses %d, pfs reads %d" % (s["ops"]["read"], ram["hits"], ram["misses"], s["tiers"]["pfs"]["reads"]), file=sys.stderr)
for b in bad:
    print("  " + b, file=sys.stderr)
sys.exit(1 if bad else 0)
PY
check_log "$DLFS_LOG"
dlfs_umount "$MNT"
check_log "$DLFS_LOG"
exit 0
