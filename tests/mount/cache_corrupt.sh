#!/bin/bash
# cache_corrupt: a damaged NVMe cache never yields wrong data or a failed
# read. The cache of a dataset is populated (every chunk written, see
# cache_reuse), saved, and damaged in a different way before each remount:
# (a) 16 bytes flipped in DIR/<id>/NNNNNN.cache at the offset of one small
#     file (from dlfs-inspect stat --json): every file reads correctly;
#     nvme.corrupt >= 1; pfs.bytes > 0 but at most two chunks (only the bad
#     chunk is fetched again); the chunk is written again, and a third
#     mount reads everything with pfs.bytes = 0 and nvme.corrupt = 0;
# (b) one .cache file truncated to half its size: every file reads
#     correctly; the PFS supplies at least the chunks cut off and at most
#     that container's data;
# (c) the map file deleted: every file reads correctly; after the unmount
#     the map is back (64 + one byte per chunk), and a remount reads
#     correctly;
# (d) the map's 64-byte header overwritten with garbage: correct reads;
# (e) every .cache file deleted, the map kept: correct reads, and the PFS
#     supplies every chunk (pfs.bytes = data bytes).
# In every round: no read fails, no errors.{checksum,container,io}, the
# daemon exits 0 on unmount and logs nothing bad other than lines about the
# cache. All rounds run; failures are listed at the end.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"
mount_setup
. "$LIB_DIR/cachelib.sh"

cache_dataset 3
[ "$NCONT" -ge 3 ] || fail "test setup: $NCONT containers"
ID=$(ds_id "$DS")
file_map "$SRC" "$DS" "$T/map.json"
NV="$T/nvme"
MNT="$T/mnt"
mkdir "$MNT"
CACHE_LOG_RE='cache|nvme|map'

# rt ROUND [readtree options]: every file reads correctly (soft).
rt() {
	local r=$1
	shift
	tmo "$PYTHON" "$LIB_DIR/readtree.py" "$SRC" "$MNT" "$@" >/dev/null ||
		soft_fail "($r) reads through the mount failed or gave wrong data (see above)"
}
# clean ROUND STATS: no read-path errors outside the cache (soft).
clean() {
	sassert "$2" -- 'errors.checksum == 0' 'errors.container == 0' 'errors.io == 0' ||
		soft_fail "($1) the damaged cache was counted as a dataset error"
}

note "populate $NV"
dlfs_mount "$DS" "$MNT" -o cache_dir="$NV"
readtree "$MNT" "$SRC" >/dev/null
wait_written "$MNT" "$CHUNKS"
check_log "$DLFS_LOG"
dlfs_umount "$MNT"
check_log "$DLFS_LOG"
[ -f "$NV/$ID/map" ] || fail "no $NV/$ID/map after the unmount"
cp -a --sparse=always "$NV" "$T/nvme.pristine"
restore() { rm -rf "$NV"; cp -a --sparse=always "$T/nvme.pristine" "$NV"; }

# ---------------------------------------------------------------- (a)
VICTIM=$("$PYTHON" -c '
import json, sys
m = json.load(open(sys.argv[1]))
print(next(r for r in sorted(m) if r.startswith("small/") and m[r]["size"] >= 1000))' "$T/map.json")
G=$("$PYTHON" -c 'import json, sys; f = json.load(open(sys.argv[1]))[sys.argv[2]]; print(f["container"], f["offset"])' "$T/map.json" "$VICTIM")
read -r VC VOFF <<<"$G"
CF="$NV/$ID/$(printf '%06d' "$VC").cache"
note "(a) 16 bytes flipped in $CF at offset $((VOFF + 100)), inside $VICTIM"
flip "$CF" $((VOFF + 100)) 16
dlfs_mount "$DS" "$MNT" -o cache_dir="$NV"
rt a
must "(a) cmp of the victim" cmp "$SRC/$VICTIM" "$MNT/$VICTIM"
snap "$MNT" "$T/a.json"
sassert "$T/a.json" CS="$CS" DATA="$DATA" -- 'nvme.corrupt >= 1' 'pfs.bytes > 0' 'pfs.bytes <= 2 * CS' \
	'pfs.reads <= 2' 'nvme.hits > 0' ||
	soft_fail "(a) a flipped cached chunk: expected it counted as corrupt and only it fetched from the PFS"
clean a "$T/a.json"
REFETCHED=$(sget "$T/a.json" tiers.pfs.reads)
[ "$REFETCHED" -ge 1 ] && wait_written "$MNT" "$REFETCHED"
check_log "$DLFS_LOG" "$CACHE_LOG_RE"
dlfs_umount "$MNT"
check_log "$DLFS_LOG" "$CACHE_LOG_RE"
note "(a) $(grep -iE "$CACHE_LOG_RE" "$DLFS_LOG" | head -n 1)"
note "(a) third mount: the chunk was cached again"
dlfs_mount "$DS" "$MNT" -o cache_dir="$NV"
rt a
snap "$MNT" "$T/a3.json"
sassert "$T/a3.json" -- 'pfs.bytes == 0' 'nvme.corrupt == 0' 'nvme.hits > 0' ||
	soft_fail "(a) the mount after the repair should read everything from the cache"
clean a "$T/a3.json"
check_log "$DLFS_LOG"
dlfs_umount "$MNT"
check_log "$DLFS_LOG"

# ---------------------------------------------------------------- (b)
restore
BC=$("$PYTHON" -c '
import os, sys
d = sys.argv[1]
fs = sorted((os.path.getsize(os.path.join(d, n)), n) for n in os.listdir(d) if n.endswith(".cache"))
print(fs[-1][1])' "$NV/$ID")
BSZ=$(stat -c %s "$NV/$ID/$BC")
CUT=$((BSZ / 2))
# Bytes of the chunks of that container that end after the cut, and its data.
G=$("$PYTHON" - "$DS/${BC%.cache}.dlc" "$CUT" <<'PY'
import struct, sys
h = open(sys.argv[1], "rb").read(64)
cs, off, size = struct.unpack_from("<QQQ", h, 40)
cut, lost, k = int(sys.argv[2]), 0, 0
while k * cs < size:
    n = min(cs, size - k * cs)
    if off + k * cs + n > cut:
        lost += n
    k += 1
print(lost, size)
PY
)
read -r LOST CDATA <<<"$G"
note "(b) $BC ($BSZ bytes) truncated to $CUT: $LOST bytes of chunks cut off"
truncate -s "$CUT" "$NV/$ID/$BC"
dlfs_mount "$DS" "$MNT" -o cache_dir="$NV"
rt b
rt b --seed 2
snap "$MNT" "$T/b.json"
sassert "$T/b.json" LOST="$LOST" CDATA="$CDATA" -- 'pfs.bytes >= LOST' 'pfs.bytes <= CDATA' 'nvme.hits > 0' ||
	soft_fail "(b) a truncated .cache file: only (at most) its container should come from the PFS"
clean b "$T/b.json"
note "(b) nvme.corrupt $(sget "$T/b.json" tiers.nvme.corrupt), nvme.errors $(sget "$T/b.json" tiers.nvme.errors), pfs.bytes $(sget "$T/b.json" tiers.pfs.bytes)"
wait_settled "$MNT"
check_log "$DLFS_LOG" "$CACHE_LOG_RE"
dlfs_umount "$MNT"
check_log "$DLFS_LOG" "$CACHE_LOG_RE"

# ---------------------------------------------------------------- (c)
restore
note "(c) map deleted"
rm "$NV/$ID/map"
dlfs_mount "$DS" "$MNT" -o cache_dir="$NV"
rt c
snap "$MNT" "$T/c.json"
clean c "$T/c.json"
note "(c) pfs.bytes $(sget "$T/c.json" tiers.pfs.bytes) of $DATA, nvme.hits $(sget "$T/c.json" tiers.nvme.hits)"
wait_settled "$MNT"
check_log "$DLFS_LOG" "$CACHE_LOG_RE"
dlfs_umount "$MNT"
check_log "$DLFS_LOG" "$CACHE_LOG_RE"
if [ ! -f "$NV/$ID/map" ]; then
	soft_fail "(c) no $NV/$ID/map after the unmount"
else
	[ "$(stat -c %s "$NV/$ID/map")" = $((64 + CHUNKS)) ] ||
		soft_fail "(c) the new map is $(stat -c %s "$NV/$ID/map") bytes, expected 64 + $CHUNKS"
fi
dlfs_mount "$DS" "$MNT" -o cache_dir="$NV"
rt c --seed 3
snap "$MNT" "$T/c2.json"
clean c "$T/c2.json"
note "(c) remount: pfs.bytes $(sget "$T/c2.json" tiers.pfs.bytes), nvme.hits $(sget "$T/c2.json" tiers.nvme.hits)"
check_log "$DLFS_LOG" "$CACHE_LOG_RE"
dlfs_umount "$MNT"
check_log "$DLFS_LOG" "$CACHE_LOG_RE"

# ---------------------------------------------------------------- (d)
restore
note "(d) map header overwritten with garbage"
"$PYTHON" -c '
import random, sys
with open(sys.argv[1], "r+b") as f:
    f.write(random.Random(4).randbytes(64))' "$NV/$ID/map"
dlfs_mount "$DS" "$MNT" -o cache_dir="$NV"
rt d
snap "$MNT" "$T/d.json"
clean d "$T/d.json"
note "(d) pfs.bytes $(sget "$T/d.json" tiers.pfs.bytes), nvme.hits $(sget "$T/d.json" tiers.nvme.hits), corrupt $(sget "$T/d.json" tiers.nvme.corrupt)"
wait_settled "$MNT"
check_log "$DLFS_LOG" "$CACHE_LOG_RE"
dlfs_umount "$MNT"
check_log "$DLFS_LOG" "$CACHE_LOG_RE"

# ---------------------------------------------------------------- (e)
restore
note "(e) every .cache file deleted, the map kept"
rm "$NV/$ID"/*.cache
dlfs_mount "$DS" "$MNT" -o cache_dir="$NV"
rt e
snap "$MNT" "$T/e.json"
sassert "$T/e.json" DATA="$DATA" -- 'pfs.bytes == DATA' ||
	soft_fail "(e) with no .cache files every chunk must come from the PFS"
clean e "$T/e.json"
wait_settled "$MNT"
check_log "$DLFS_LOG" "$CACHE_LOG_RE"
dlfs_umount "$MNT"
check_log "$DLFS_LOG" "$CACHE_LOG_RE"
finish
