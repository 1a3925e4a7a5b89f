#!/bin/bash
# soak: the daemon of the ASan+UBSan build (build-asan/src/daemon/dlfs,
# errors abort) serves 64 threads of random preads (random offsets and
# lengths, each range dropped from the page cache first) over a few
# thousand files for a bounded time, with both cache tiers evicting: an
# NVMe tier of a third of the dataset under the LRU policy and a RAM tier
# of 2 MiB. Every byte must equal the source; no read may fail; the
# daemon must stay up, log no sanitizer report and no error, count no
# errors, evict from the NVMe tier, and exit 0 on fusermount3 -u.
#
# Environment:
#   DLFS_SOAK_SECONDS  how long the readers run (default 45); e.g. 1800
#                      for the long soak
#   DLFS_SOAK_DLFS     the daemon (default: build-asan's, next to the
#                      build under test; skipped if there is none)
#   DLFS_SOAK_FILES    files in the dataset (default 3000)
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
: "${DLFS_SOAK_DLFS:=$SRC_ROOT/build-asan/src/daemon/dlfs}"
[ -x "$DLFS_SOAK_DLFS" ] ||
	skip "no ASan daemon at $DLFS_SOAK_DLFS (meson setup build-asan -Db_sanitize=address,undefined -Db_lundef=false; or set DLFS_SOAK_DLFS)"
DLFS=$DLFS_SOAK_DLFS
mount_setup
SECS=${DLFS_SOAK_SECONDS:-45}
NFILES=${DLFS_SOAK_FILES:-3000}
# Errors abort, so a sanitizer report cannot scroll by unnoticed.
export ASAN_OPTIONS=abort_on_error=1:halt_on_error=1:detect_leaks=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1

SRC="$T/src"
"$PYTHON" - "$SRC" "$NFILES" <<'PY'
import os, random, sys
d, n = sys.argv[1], int(sys.argv[2])
r = random.Random(17)
for i in range(n):
    x = r.random()
    size = (r.randrange(0, 16384) if x < 0.8 else
            r.randrange(16384, 200000) if x < 0.995 else r.randrange(1 << 20, 3 << 20))
    p = os.path.join(d, "d%02d" % (i % 40), "f%05d" % i)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    open(p, "wb").write(r.randbytes(size))
PY
DS="$T/ds.dlfs"
pack "$SRC" -o "$DS" --chunk-size 64K --container-size 8M -q
expect_ok "pack"
DATA=$(du -sb --apparent-size "$SRC" | cut -f1)
CACHE=$((DATA / 3))
note "$NFILES files, $DATA bytes; NVMe tier $CACHE bytes (lru), RAM tier 2M; 64 threads for ${SECS}s"
MNT="$T/mnt"
mkdir -p "$MNT" "$T/nvme"
dlfs_mount "$DS" "$MNT" -o "cache_dir=$T/nvme,cache_size=$CACHE,cache_policy=lru,ram_cache=2M"

st=0
DLFS_CMD_TIMEOUT=$((SECS + 300)) tmo "$PYTHON" "$HERE/soak.py" "$SRC" "$MNT" \
	--seconds "$SECS" --threads 64 --json "$T/soak.json" || st=$?
kill -0 "$DLFS_PID" 2>/dev/null ||
	fail "the daemon died during the soak: $(grep -m3 -E 'Sanitizer|runtime error|SUMMARY' "$DLFS_LOG" || tail -n 3 "$DLFS_LOG")"
[ "$st" = 0 ] || fail "the soak read wrong bytes or got errors: $(cat "$T/soak.json" 2>/dev/null)"
tmo cat "$MNT/.dlfs/stats" >"$T/stats.json" || fail "cannot read $MNT/.dlfs/stats"
"$PYTHON" - "$T/stats.json" "$T/soak.json" <<'PY' || fail "the stats after the soak are wrong (see above)"
import json, sys
s, k = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
nv, ram = s["tiers"]["nvme"], s["tiers"]["ram"]
print("  soak: %d reads, %.0f MiB checked in %.0f s by %d threads; ops.read %d; "
      "ram hits %d misses %d; nvme hits %d written %d evicted %d corrupt %d; pfs reads %d" % (
      k["reads"], k["mib"], k["seconds"], k["threads"], s["ops"]["read"], ram["hits"],
      ram["misses"], nv["hits"], nv["written_chunks"], nv["evicted"], nv["corrupt"],
      s["tiers"]["pfs"]["reads"]), file=sys.stderr)
bad = []
if any(s["errors"].values()):
    bad.append("errors = %r" % s["errors"])
if nv["evicted"] == 0:
    bad.append("the NVMe tier evicted nothing: the soak did not test eviction")
if nv["used_bytes"] > nv["capacity_bytes"]:
    bad.append("nvme used_bytes %d > capacity_bytes %d" % (nv["used_bytes"], nv["capacity_bytes"]))
if ram["used_bytes"] > ram["capacity_bytes"]:
    bad.append("ram used_bytes %d > capacity_bytes %d" % (ram["used_bytes"], ram["capacity_bytes"]))
if s["ops"]["read"] < k["reads"] // 2:
    bad.append("ops.read %d for %d reads: the reads did not reach the daemon" % (s["ops"]["read"], k["reads"]))
for b in bad:
    print("  " + b, file=sys.stderr)
sys.exit(1 if bad else 0)
PY
check_log "$DLFS_LOG"
dlfs_umount "$MNT"
if grep -qE 'Sanitizer|runtime error|SUMMARY:' "$DLFS_LOG"; then
	grep -m 20 -E 'Sanitizer|runtime error|SUMMARY:|#[0-9]+ 0x' "$DLFS_LOG" >&2
	fail "sanitizer report in the daemon log"
fi
check_log "$DLFS_LOG"
