#!/bin/bash
# cache_size: the NVMe tier stays within -o cache_size, and the two
# policies behave as documented. The dataset has ~5 MiB in 64K chunks;
# cache_size is 40% of the containers' data bytes; ram_cache=2M and
# readahead=0 (a pass in layout order evicts the previous pass's RAM
# chunks before it reaches them, so every pass goes down to the tiers).
# (a) cache_policy=keep (the default): every file reads correctly, twice,
#     in layout order (container, offset: each chunk is loaded once a pass);
#     nvme.capacity_bytes = cache_size, nvme.used_bytes <= it after each
#     pass; the cache fills up (used >= cache_size - 2 chunks) and nothing
#     is evicted; the first pass reads each chunk from the PFS once (more
#     only for RAM-full "uncached loads": pfs.reads <= chunks +
#     ram.uncached_loads), the second between (data - cache_size) and that
#     plus 3 chunks (plus one per uncached load) (hit rate ~ capacity/data);
#     the allocated size of the cache dir (du -sB1) stays <= cache_size +
#     one chunk + 64 KiB + 4 KiB per container (map, lock, directories,
#     partial blocks).
# (b) cache_policy=lru, fresh cache dir: two passes, all correct; used <=
#     capacity = cache_size; chunks are evicted (evicted > 0, written bytes
#     > cache_size) yet du stays within the same bound (holes are punched);
#     a remount reads correctly from what is left, with nvme.hits > 0 and
#     nvme.corrupt = 0 (the map matches the data).
# (c) bad values: cache_policy=bogus, cache_size=lots, cache_size=10X,
#     readahead=lots, prefetch_threads=many, pfs_io=bogus, shuffle=bogus,
#     shuffle_window=0, seed=abc, stage=bogus, and cache_size or stage=home
#     without a cache_dir each exit 2 with
#     "dlfs: -o NAME=VALUE: ..." on stderr and leave nothing mounted.
# No daemon logs an error line. All parts run; failures are listed at the end.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"
mount_setup
. "$LIB_DIR/cachelib.sh"

cache_dataset 4
CAP=$((DATA * 4 / 10))
SLACK=$((CS + 65536 + 4096 * NCONT))
MNT="$T/mnt"
mkdir "$MNT"
note "$CHUNKS chunks, $DATA data bytes, cache_size $CAP, du slack $SLACK"
file_map "$SRC" "$DS" "$T/map.json"
OPTS="ram_cache=2M,readahead=0,cache_size=$CAP"

# du_ok WHAT DIR: allocated bytes of DIR <= CAP + SLACK (soft).
du_ok() {
	local a
	a=$(du -sB1 "$2" | cut -f1)
	note "$1: du -sB1 $2 = $a"
	[ "$a" -le $((CAP + SLACK)) ] ||
		soft_fail "$1: the cache dir takes $a bytes on disk, more than cache_size $CAP + slack $SLACK: $(du -aB1 "$2" | sort -n | tail -n 5 | tr '\n' ' ')"
}

# ---------------------------------------------------------------- (a)
NV="$T/nvme"
note "(a) cache_policy keep (default)"
dlfs_mount "$DS" "$MNT" -o "cache_dir=$NV,$OPTS"
readtree "$MNT" "$SRC" --layout "$T/map.json" >/dev/null
wait_settled "$MNT"
snap "$MNT" "$T/a1.json"
stats_shape "$T/a1.json"
sassert "$T/a1.json" CAP="$CAP" DATA="$DATA" CHUNKS="$CHUNKS" -- 'nvme.enabled == 1' 'nvme.policy == "keep"' \
	'pfs.bytes >= DATA' 'pfs.reads <= CHUNKS + ram.uncached_loads' \
	'nvme.capacity_bytes == CAP' 'nvme.used_bytes <= nvme.capacity_bytes' \
	'nvme.written_bytes <= CAP' 'nvme.evicted == 0' 'prefetch.enabled == 0' ||
	soft_fail "(a) keep, after the first pass"
du_ok "(a) after pass 1" "$NV"
readtree "$MNT" "$SRC" --layout "$T/map.json" >/dev/null
wait_settled "$MNT"
snap "$MNT" "$T/a2.json"
P1=$(sget "$T/a1.json" tiers.pfs.bytes)
U1=$(sget "$T/a1.json" tiers.ram.uncached_loads)
sassert "$T/a2.json" CAP="$CAP" CS="$CS" DATA="$DATA" P1="$P1" U1="$U1" -- \
	'nvme.used_bytes <= nvme.capacity_bytes' 'nvme.used_bytes >= CAP - 2 * CS' \
	'nvme.evicted == 0' 'nvme.hits > 0' \
	'pfs.bytes - P1 >= DATA - CAP' 'pfs.bytes - P1 <= DATA - CAP + (3 + ram.uncached_loads - U1) * CS' \
	'nvme.corrupt == 0' 'nvme.errors == 0' 'not any(errors.values())' ||
	soft_fail "(a) keep, second pass: expected the PFS to supply what did not fit (data $DATA - cache_size $CAP)"
note "(a) pass 1: pfs $P1 bytes in $(sget "$T/a1.json" tiers.pfs.reads) reads, $U1 uncached loads; pass 2: pfs $(( $(sget "$T/a2.json" tiers.pfs.bytes) - P1 )) bytes, nvme hits $(sget "$T/a2.json" tiers.nvme.hits), used $(sget "$T/a2.json" tiers.nvme.used_bytes) of $CAP"
du_ok "(a) after pass 2" "$NV"
check_log "$DLFS_LOG"
dlfs_umount "$MNT"
check_log "$DLFS_LOG"
du_ok "(a) after the unmount" "$NV"

# ---------------------------------------------------------------- (b)
NV2="$T/nvme-lru"
note "(b) cache_policy=lru"
dlfs_mount "$DS" "$MNT" -o "cache_dir=$NV2,cache_policy=lru,$OPTS"
readtree "$MNT" "$SRC" >/dev/null
wait_settled "$MNT"
snap "$MNT" "$T/b1.json"
sassert "$T/b1.json" CAP="$CAP" -- 'nvme.policy == "lru"' 'nvme.capacity_bytes == CAP' \
	'nvme.used_bytes <= nvme.capacity_bytes' ||
	soft_fail "(b) lru, after the first pass"
du_ok "(b) after pass 1" "$NV2"
readtree "$MNT" "$SRC" --seed 2 >/dev/null
wait_settled "$MNT"
snap "$MNT" "$T/b2.json"
sassert "$T/b2.json" CAP="$CAP" -- 'nvme.used_bytes <= nvme.capacity_bytes' 'nvme.evicted > 0' \
	'nvme.written_bytes > CAP' 'nvme.corrupt == 0' 'nvme.errors == 0' 'not any(errors.values())' ||
	soft_fail "(b) lru, second pass: expected eviction within cache_size"
du_ok "(b) after pass 2" "$NV2"
check_log "$DLFS_LOG"
dlfs_umount "$MNT"
check_log "$DLFS_LOG"
du_ok "(b) after the unmount" "$NV2"
dlfs_mount "$DS" "$MNT" -o "cache_dir=$NV2,cache_policy=lru,$OPTS"
readtree "$MNT" "$SRC" --seed 3 >/dev/null
snap "$MNT" "$T/b3.json"
sassert "$T/b3.json" CAP="$CAP" DATA="$DATA" -- 'nvme.hits > 0' 'nvme.corrupt == 0' \
	'pfs.bytes >= DATA - CAP' 'nvme.used_bytes <= nvme.capacity_bytes' 'not any(errors.values())' ||
	soft_fail "(b) lru, remount: what is left in the cache must be what the map says"
wait_settled "$MNT"
du_ok "(b) remount" "$NV2"
check_log "$DLFS_LOG"
dlfs_umount "$MNT"
check_log "$DLFS_LOG"

# ---------------------------------------------------------------- (c)
note "(c) bad values"
NVB="$T/nvme-bad"
bad_opt "(c) cache_policy=bogus" cache_policy=bogus -o "cache_dir=$NVB"
bad_opt "(c) cache_size=lots" cache_size=lots -o "cache_dir=$NVB"
bad_opt "(c) cache_size=10X" cache_size=10X -o "cache_dir=$NVB"
bad_opt "(c) readahead=lots" readahead=lots
bad_opt "(c) prefetch_threads=many" prefetch_threads=many
bad_opt "(c) pfs_io=bogus" pfs_io=bogus
bad_opt "(c) cache_size=1G without cache_dir" cache_size=1G
bad_opt "(c) shuffle=bogus" shuffle=bogus
bad_opt "(c) shuffle_window=0" shuffle_window=0
bad_opt "(c) seed=abc" seed=abc
bad_opt "(c) stage=bogus" stage=bogus -o "cache_dir=$NVB"
bad_opt "(c) stage=home without cache_dir" stage=home
grep -F "$T" /proc/mounts && soft_fail "(c) something under $T is still mounted"
finish
