#!/bin/bash
# cache_reuse: the NVMe tier (-o cache_dir) survives a remount and is
# private to its dataset.
#  - first mount, cache_dir missing: every file reads correctly; stats have
#    every documented key; nvme.enabled 1, policy "keep", capacity_bytes ~
#    the containers' data bytes (the default, far below 90% of free space);
#    every chunk is read from the PFS once and, in the background, written
#    to the cache once (written_chunks = chunks, written_bytes = data bytes,
#    nvme.chunks = chunks, nothing dropped, evicted, corrupt or in error);
#    nvme.used_bytes <= capacity_bytes. (No check that nvme.hits is 0: a
#    reader may find a chunk on NVMe that another reader's load from the
#    PFS wrote there a moment before it was ready in RAM.)
#  - the cache dir is created 0700 and DIR/<dataset_id> is 0700; the
#    daemon holds an flock on DIR/<id>/lock while mounted;
#  - a second daemon on the same dataset and cache_dir, while the first
#    runs: mounts, reads correctly, nvme.enabled 0, and logs one line
#    about it (at most two);
#  - after unmount: the lock is free; DIR/<id> holds exactly lock, map,
#    NNNNNN.cache for every container, and the index's copy (index,
#    index.ok), each 0600; map is 64 bytes +
#    one per chunk; every file's bytes lie at its offset in its
#    container's .cache file (the documented layout);
#  - remount, same cache_dir: every file reads correctly with
#    tiers.pfs.bytes = 0 and pfs.reads = 0, nvme.hits > 0, nvme.misses 0,
#    nvme.bytes >= the file bytes, nothing new written;
#  - a second dataset on the same cache_dir: its own DIR/<id2> (0700,
#    files 0600); correct reads with pfs.bytes = its data bytes and
#    pfs.bytes = its data (it never sees the first's chunks); and afterwards the
#    first dataset still reads with pfs.bytes = 0.
# No daemon logs an error line (except the second daemon's one line).
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"
mount_setup
. "$LIB_DIR/cachelib.sh"

SRC="$T/src" SRC2="$T/src2"
cache_mkdata "$SRC" 1
cache_mkdata "$SRC2" 2
DS="$T/ds.dlfs" DS2="$T/ds2.dlfs"
pack "$SRC" -o "$DS" --chunk-size 64K --container-size 1M -q
expect_ok "pack $DS"
pack "$SRC2" -o "$DS2" --chunk-size 64K --container-size 1M -q
expect_ok "pack $DS2"
G=$(ds_geom "$DS")
# shellcheck disable=SC2034 # not every test uses every number
read -r CHUNKS DATA NCONT CS <<<"$G"
G=$(ds_geom "$DS2")
read -r CHUNKS2 DATA2 _ _ <<<"$G"
[ "$NCONT" -ge 3 ] && [ "$CHUNKS" -ge 30 ] || fail "test setup: $NCONT containers, $CHUNKS chunks"
ID=$(ds_id "$DS")
ID2=$(ds_id "$DS2")
[ "$ID" != "$ID2" ] || fail "test setup: both datasets have the id $ID"
FILEBYTES=$(tree_counts "$SRC" | "$PYTHON" -c 'import json, sys; print(json.load(sys.stdin)["bytes"])')
note "dataset $ID: $NCONT containers, $CHUNKS chunks, $DATA data bytes; dataset 2 $ID2: $CHUNKS2 chunks"

NV="$T/nvme"
MNT="$T/mnt" MNT2="$T/mnt2"
mkdir "$MNT" "$MNT2"
# The default cache_size is the data bytes unless 90% of the free space is less.
FREE90=$("$PYTHON" -c 'import os, sys; v = os.statvfs(sys.argv[1]); print(v.f_bavail * v.f_frsize * 9 // 10)' "$T")
[ "$FREE90" -gt $((DATA * 4)) ] || skip "too little free space under $T for the default-size check"

# ---------------------------------------------------------------- first mount
note "first mount: populate $NV"
dlfs_mount "$DS" "$MNT" -o cache_dir="$NV"
LOG1=$DLFS_LOG
snap "$MNT" "$T/s0.json"
stats_shape "$T/s0.json"
sassert "$T/s0.json" -- 'nvme.enabled == 1' 'nvme.policy == "keep"' ||
	fail "first mount: the NVMe tier is not on with the default policy"
sassert "$T/s0.json" DATA="$DATA" NCONT="$NCONT" -- 'nvme.capacity_bytes >= DATA' \
	'nvme.capacity_bytes <= DATA + 4096 * NCONT' ||
	fail "first mount: the default cache_size should be the containers' data bytes ($DATA, from their headers), each container's last chunk rounded up to 4 KiB"
INFO_ID=$(tmo cat "$MNT/.dlfs/info" | "$PYTHON" -c 'import json, sys; print(json.load(sys.stdin)["dataset_id"])') ||
	fail "cannot read dataset_id from $MNT/.dlfs/info"
[ "$INFO_ID" = "$ID" ] || fail ".dlfs/info dataset_id $INFO_ID, dlfs-inspect info says $ID"
[ -d "$NV/$ID" ] || fail "the daemon did not create $NV/$ID (cache_dir holds: $(ls -A "$NV" 2>&1))"
m=$(stat -c %a "$NV")
[ "$m" = 700 ] || fail "the daemon created cache_dir $NV with mode $m, expected 700"
m=$(stat -c %a "$NV/$ID")
[ "$m" = 700 ] || fail "$NV/$ID has mode $m, expected 700"
[ -f "$NV/$ID/lock" ] || fail "no $NV/$ID/lock while mounted"
st=0
flock -n -E 99 "$NV/$ID/lock" true || st=$?
[ "$st" = 99 ] || fail "$NV/$ID/lock is not flock()ed by the daemon while mounted (flock -n got status $st)"

RT=$(readtree "$MNT" "$SRC")
wait_written "$MNT" "$CHUNKS"
snap "$MNT" "$T/s1.json"
sassert "$T/s1.json" DATA="$DATA" CHUNKS="$CHUNKS" -- \
	'pfs.bytes == DATA' 'pfs.reads == CHUNKS' \
	'nvme.written_chunks == CHUNKS' 'nvme.written_bytes == DATA' 'nvme.chunks == CHUNKS' \
	'nvme.misses > 0' \
	'nvme.used_bytes >= DATA' 'nvme.used_bytes <= nvme.capacity_bytes' \
	'nvme.write_dropped == 0' 'nvme.evicted == 0' 'nvme.corrupt == 0' 'nvme.errors == 0' \
	'not any(errors.values())' ||
	fail "first mount, after reading every file ($RT) once: stats wrong"

# ---------------------------------------------------------------- second daemon
note "a second daemon on the same dataset and cache_dir"
dlfs_mount "$DS" "$MNT2" -o cache_dir="$NV"
LOGB=$DLFS_LOG
readtree "$MNT2" "$SRC" --seed 5 >/dev/null
snap "$MNT2" "$T/sb.json"
sassert "$T/sb.json" -- 'nvme.enabled == 0' 'nvme.written_chunks == 0' 'nvme.hits == 0' ||
	fail "a second daemon on a cache_dir in use must run without the NVMe tier"
dlfs_umount "$MNT2"
n=$(grep -ciE 'cache|nvme|lock' "$LOGB" || true)
[ "$n" -ge 1 ] && [ "$n" -le 2 ] ||
	fail "the second daemon logged $n lines about the cache in use, expected 1 (or 2): $(head -c 600 "$LOGB")"
check_log "$LOGB" 'cache|nvme|lock'
note "second daemon said: $(grep -iE 'cache|nvme|lock' "$LOGB" | head -n 1)"

check_log "$LOG1"
dlfs_umount "$MNT"
check_log "$LOG1"

# ---------------------------------------------------------------- layout
st=0
flock -n -E 99 "$NV/$ID/lock" true || st=$?
[ "$st" = 0 ] || fail "$NV/$ID/lock still locked after the daemon exited (flock -n status $st)"
NAMES=$(check_private "$NV" "$ID")
WANT="$("$PYTHON" -c 'import sys; n = int(sys.argv[1]); print(" ".join(["%06d.cache" % i for i in range(n)] + ["index", "index.ok", "lock", "map"]))' "$NCONT")"
[ "$NAMES" = "$WANT" ] || fail "$NV/$ID holds '$NAMES', expected '$WANT'"
MAPSZ=$(stat -c %s "$NV/$ID/map")
[ "$MAPSZ" = $((64 + CHUNKS)) ] || fail "$NV/$ID/map is $MAPSZ bytes, expected 64 + $CHUNKS (one byte per chunk)"
file_map "$SRC" "$DS" "$T/map.json"
"$PYTHON" - "$SRC" "$NV/$ID" "$T/map.json" <<'PY' || fail "the .cache files do not hold the files' bytes at the containers' offsets"
import json, os, sys
src, top, m = sys.argv[1], sys.argv[2], json.load(open(sys.argv[3]))
bad = []
for rel, f in sorted(m.items()):
    if f["size"] == 0:
        continue
    p = os.path.join(top, "%06d.cache" % f["container"])
    with open(p, "rb") as fh:
        fh.seek(f["offset"])
        got = fh.read(f["size"])
    if got != open(os.path.join(src, rel), "rb").read():
        bad.append("%s: not at offset %d of %s" % (rel, f["offset"], p))
for b in bad[:10]:
    print("  " + b, file=sys.stderr)
sys.exit(1 if bad else 0)
PY
# Sparse and no larger than the container (same offsets).
for f in "$NV/$ID"/*.cache; do
	c="$DS/$(basename "$f" .cache).dlc"
	[ "$(stat -c %s "$f")" -le "$(stat -c %s "$c")" ] ||
		fail "$f ($(stat -c %s "$f") bytes) is larger than its container $c ($(stat -c %s "$c"))"
done

# ---------------------------------------------------------------- remount
note "remount on the populated cache"
dlfs_mount "$DS" "$MNT" -o cache_dir="$NV"
readtree "$MNT" "$SRC" --seed 9 >/dev/null
snap "$MNT" "$T/s2.json"
sassert "$T/s2.json" CHUNKS="$CHUNKS" FILEBYTES="$FILEBYTES" -- \
	'nvme.enabled == 1' 'pfs.bytes == 0' 'pfs.reads == 0' 'nvme.hits > 0' 'nvme.misses == 0' \
	'nvme.bytes >= FILEBYTES' 'nvme.chunks == CHUNKS' 'nvme.written_chunks == 0' \
	'nvme.corrupt == 0' 'nvme.errors == 0' 'not any(errors.values())' ||
	fail "remount: every read should come from the NVMe tier, none from the PFS"
check_log "$DLFS_LOG"
dlfs_umount "$MNT"
check_log "$DLFS_LOG"

# ---------------------------------------------------------------- dataset 2
note "a second dataset on the same cache_dir"
dlfs_mount "$DS2" "$MNT" -o cache_dir="$NV"
readtree "$MNT" "$SRC2" >/dev/null
wait_written "$MNT" "$CHUNKS2"
snap "$MNT" "$T/s3.json"
sassert "$T/s3.json" DATA2="$DATA2" CHUNKS2="$CHUNKS2" -- \
	'nvme.enabled == 1' 'pfs.bytes == DATA2' 'nvme.written_chunks == CHUNKS2' \
	'nvme.corrupt == 0' 'not any(errors.values())' ||
	fail "dataset 2 on a cache_dir used by dataset 1: it must see none of dataset 1's chunks"
check_log "$DLFS_LOG"
dlfs_umount "$MNT"
check_log "$DLFS_LOG"
check_private "$NV" "$ID2" >/dev/null
NAMES1=$(check_private "$NV" "$ID")
[ "$NAMES1" = "$WANT" ] || fail "dataset 2 changed $NV/$ID: now '$NAMES1'"
[ "$(ls -A "$NV" | sort | tr '\n' ' ')" = "$(printf '%s\n' "$ID" "$ID2" | sort | tr '\n' ' ')" ] ||
	fail "$NV holds '$(ls -A "$NV" | tr '\n' ' ')', expected only $ID and $ID2"

note "dataset 1 again"
dlfs_mount "$DS" "$MNT" -o cache_dir="$NV"
readtree "$MNT" "$SRC" >/dev/null
snap "$MNT" "$T/s4.json"
sassert "$T/s4.json" -- 'pfs.bytes == 0' 'nvme.hits > 0' 'not any(errors.values())' ||
	fail "dataset 1 after dataset 2 used the same cache_dir: its cache should be intact"
check_log "$DLFS_LOG"
dlfs_umount "$MNT"
check_log "$DLFS_LOG"
exit 0
