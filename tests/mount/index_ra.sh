#!/bin/bash
# index_ra: a cold index is read in the kernel's read-around windows, not a
# 4 KiB page per fault (issue 9: a cold `find`, and epoch 1's lookups, paid
# one PFS I/O operation per index page). From the page cache, not timings:
# the index of 6,000 files is evicted, the dataset is mounted and one file
# is looked up; then at least half of min(index size, the read-ahead of the
# disk under it) must be resident (fincore). With every fault a single
# page (LMDB's MDB_NORDAHEAD), a dozen pages are.
# Skipped where the index cannot be evicted (a tmpfs) or the disk reads
# ahead less than 64 KiB.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"
mount_setup
command -v fincore >/dev/null || skip "no fincore (util-linux)"

SRC="$T/src"
"$PYTHON" - "$SRC" <<'PY'
import os, sys
for d in range(20):
    p = os.path.join(sys.argv[1], "d%02d" % d)
    os.makedirs(p)
    for i in range(300):
        with open(os.path.join(p, "f%05d" % (d * 300 + i)), "wb") as f:
            f.write(b"%d\n" % i)
PY
DS="$T/ds.dlfs"
pack "$SRC" -o "$DS" -q
expect_ok "pack"
IX="$DS/index"
sync "$IX"

resident() { fincore --bytes --noheadings --output RES "$IX"; }
evict() {
	"$PYTHON" -c 'import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)' "$IX"
}
evict
size=$(stat -c %s "$IX")
[ "$(resident)" -lt $((size / 4)) ] || skip "the index stays in memory when evicted (tmpfs?)"
dev=$(mountpoint -d "$(stat -c %m "$IX")")
ra_kb=$(cat "/sys/class/bdi/$dev/read_ahead_kb" 2>/dev/null || echo 0)
[ "$ra_kb" -ge 64 ] || skip "the disk under $T reads ahead $ra_kb KiB"
want=$((ra_kb * 1024))
[ "$want" -le "$size" ] || want=$size
note "index $size bytes, disk read-ahead $ra_kb KiB"

MNT="$T/mnt"
mkdir "$MNT"
evict
dlfs_mount "$DS" "$MNT"
stat "$MNT/d13/f03917" >/dev/null || fail "stat of one file through the mount failed"
got=$(resident)
dlfs_umount "$MNT"
note "after mount and one lookup: $got bytes of the index resident"
[ "$got" -ge $((want / 2)) ] ||
	fail "a cold mount and lookup left $got bytes of the index resident, want >= $((want / 2)): the index is read a page per fault"
check_log "$DLFS_LOG"
