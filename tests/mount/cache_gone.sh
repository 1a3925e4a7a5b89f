#!/bin/bash
# cache_gone: the cache_dir vanishing under a live mount costs speed, never
# a read. ram_cache holds 2 chunks and each file's page cache is dropped
# before it is read, so every pass goes down to the tiers.
#  - half the files are read, the cache writes settle (some chunks cached);
#  - `rm -rf` of the cache_dir while mounted; two passes over every file
#    in random orders: every byte correct, no read error;
#  - the cache_dir made again, empty, while mounted: a pass reads correctly;
#  - the cache_dir replaced by a regular file while mounted: a pass reads
#    correctly;
#  - the removal is noticed: nvme.errors and errors.nvme >= 1, and one log
#    line says the cache directory was removed;
#  - no errors.{checksum,container,io}; the daemon exits 0 on unmount and
#    logs nothing bad other than lines about the cache;
#  - a remount on the cache_dir (missing again) re-creates it: nvme.enabled
#    1, every file correct, pfs.bytes = the data bytes (no stale chunk is
#    served), and DIR/<id> is 0700 with files 0600.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"
mount_setup
. "$LIB_DIR/cachelib.sh"

cache_dataset 6
ID=$(ds_id "$DS")
NV="$T/nvme"
MNT="$T/mnt"
mkdir "$MNT"
CACHE_RE='cache|nvme|map|lock'

# stage=none: chunks reach the tier only as they are read, so some are
# still to be written when the directory goes.
dlfs_mount "$DS" "$MNT" -o "cache_dir=$NV,ram_cache=128K,stage=none"
readtree "$MNT" "$SRC" --slice 0:90 >/dev/null
wait_settled "$MNT"
snap "$MNT" "$T/s0.json"
sassert "$T/s0.json" -- 'nvme.enabled == 1' 'nvme.written_chunks > 0' ||
	fail "reading half the files cached nothing"
[ -d "$NV/$ID" ] || fail "no $NV/$ID after caching $(sget "$T/s0.json" tiers.nvme.written_chunks) chunks"

note "rm -rf $NV while mounted"
rm -rf "$NV"
[ ! -e "$NV" ] || fail "test setup: $NV still there"
readtree "$MNT" "$SRC" --seed 1 >/dev/null
readtree "$MNT" "$SRC" --seed 2 >/dev/null
is_mounted "$MNT" || fail "the mount went away after the cache dir was removed"

note "$NV made again, empty"
mkdir "$NV"
readtree "$MNT" "$SRC" --seed 3 >/dev/null

note "$NV replaced by a regular file"
rm -rf "$NV"
printf 'not a directory\n' >"$NV"
readtree "$MNT" "$SRC" --seed 4 >/dev/null
snap "$MNT" "$T/s1.json"
sassert "$T/s1.json" -- 'errors.checksum == 0' 'errors.container == 0' 'errors.io == 0' \
	'nvme.corrupt == 0' ||
	fail "a vanished cache dir was counted as a dataset error or as corrupt data"
sassert "$T/s1.json" -- 'nvme.errors >= 1' 'errors.nvme >= 1' ||
	fail "the removed cache dir was not noticed (nvme.errors, errors.nvme)"
grep -qiE 'cache directory removed' "$DLFS_LOG" ||
	fail "the daemon log does not say the cache directory was removed"
[ "$(grep -ciE 'cache directory removed' "$DLFS_LOG")" -le 1 ] ||
	fail "the removed cache dir was logged more than once"
note "nvme: errors $(sget "$T/s1.json" tiers.nvme.errors), errors.nvme $(sget "$T/s1.json" errors.nvme), hits $(sget "$T/s1.json" tiers.nvme.hits), written $(sget "$T/s1.json" tiers.nvme.written_chunks)"
check_log "$DLFS_LOG" "$CACHE_RE"
dlfs_umount "$MNT"
check_log "$DLFS_LOG" "$CACHE_RE"

note "remount: $NV is re-created"
rm -f "$NV"
dlfs_mount "$DS" "$MNT" -o "cache_dir=$NV"
readtree "$MNT" "$SRC" >/dev/null
snap "$MNT" "$T/s2.json"
sassert "$T/s2.json" DATA="$DATA" -- 'nvme.enabled == 1' 'pfs.bytes == DATA' \
	'nvme.corrupt == 0' 'not any(errors.values())' ||
	fail "remount on a re-created cache dir"
wait_written "$MNT" "$CHUNKS"
check_private "$NV" "$ID" >/dev/null
check_log "$DLFS_LOG"
dlfs_umount "$MNT"
check_log "$DLFS_LOG"
exit 0
