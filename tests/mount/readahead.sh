#!/bin/bash
# readahead: sequential read-ahead (-o readahead, prefetch_threads) and the
# other issue-4 read options. The dataset: one 8 MiB file in 64K chunks
# (128 chunks), 300 small files, 1M containers.
# (a) default options (RAM cache larger than the dataset): prefetch.enabled
#     1, window_max_bytes = 64M; reading the big file front to back (128K
#     reads, cold page cache) gives its exact bytes, with prefetch.issued >
#     0, prefetch.used > 0, used + wasted <= issued, and no chunk read from
#     the PFS twice (pfs.reads <= chunks of the containers the file spans);
# (b) readahead=0: enabled 0, window_max_bytes 0, issued = used = wasted
#     = 0 after the same read, bytes correct;
# (c) readahead=1M: window_max_bytes = 1M, bytes correct, issued > 0;
# (d) small files in random order, ram_cache of 8 chunks: all correct;
#     used + wasted <= issued (the numbers are reported);
# (e) prefetch_threads=1 and 8, pfs_io=direct and pfs_io=buffered: every
#     file reads correctly, each chunk from the PFS once (pfs.bytes = the
#     containers' data bytes).
# (f) read_unit=file (as the defaults choose when the data outgrows the
#     RAM tier), the small files read one by one in their containers'
#     order: a stream forms after two steps and stays, its read-ahead
#     chunks found in the RAM tier counting as steps; at most the files
#     of each container's first four chunks are read alone (65 of 300
#     here: three chunks' and the first of the fourth, whose step makes
#     the stream; a stream that saw only its misses ended at each one past
#     its window, and read three chunks' files alone in every five: 151).
# (g) the same over a dataset of several containers (1,300 small files,
#     1M containers of 16 chunks), read in order as shards are: the
#     stream goes on from the end of one container into the next one's
#     chunk 0, so only files of the first container's first four chunks
#     are read alone (64 here: three chunks' and the first of the fourth,
#     whose step makes the stream; one that began again in each container
#     read as many in each).
# No errors counted, no error logged, the daemon exits 0 on unmount.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"
mount_setup
. "$LIB_DIR/cachelib.sh"

SRC="$T/src"
mkdir -p "$SRC/small"
"$PYTHON" - "$SRC" <<'PY'
import os, random, sys
r = random.Random(21)
d = sys.argv[1]
open(os.path.join(d, "big.bin"), "wb").write(r.randbytes(8 << 20))
for i in range(300):
    open(os.path.join(d, "small/s%03d" % i), "wb").write(r.randbytes(r.randrange(0, 6000)))
PY
DS="$T/ds.dlfs"
pack "$SRC" -o "$DS" --chunk-size 64K --container-size 1M -q
expect_ok "pack"
G=$(ds_geom "$DS")
# shellcheck disable=SC2034 # not every test uses every number
read -r CHUNKS DATA NCONT CS <<<"$G"
file_map "$SRC" "$DS" "$T/map.json"
# Chunks of the containers that hold big.bin (from their headers).
BIGCHUNKS=$("$PYTHON" - "$T/map.json" "$DS" <<'PY'
import json, os, struct, sys
f = json.load(open(sys.argv[1]))["big.bin"]
h = open(os.path.join(sys.argv[2], "%06d.dlc" % f["container"]), "rb").read(64)
cs, off, size = struct.unpack_from("<QQQ", h, 40)
print((size + cs - 1) // cs)
PY
)
note "$CHUNKS chunks in $NCONT containers; big.bin's container has $BIGCHUNKS"
MNT="$T/mnt"
mkdir "$MNT"

# seqread: reads MNT/big.bin front to back in 128K reads after dropping
# its page cache; its bytes must equal the source's.
seqread() {
	tmo "$PYTHON" - "$SRC/big.bin" "$MNT/big.bin" <<'PY' || fail "sequential read of big.bin gave wrong data or failed (see above)"
import os, sys
want = open(sys.argv[1], "rb").read()
fd = os.open(sys.argv[2], os.O_RDONLY)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
out, pos = [], 0
while True:
    b = os.read(fd, 128 << 10)
    if not b:
        break
    if b != want[pos:pos + len(b)]:
        sys.exit("  big.bin: wrong bytes in [%d, %d)" % (pos, pos + len(b)))
    pos += len(b)
os.close(fd)
if pos != len(want):
    sys.exit("  big.bin: read %d bytes, expected %d" % (pos, len(want)))
PY
}

# ---------------------------------------------------------------- (a)
note "(a) default read-ahead"
dlfs_mount "$DS" "$MNT"
snap "$MNT" "$T/a0.json"
stats_shape "$T/a0.json"
sassert "$T/a0.json" -- 'prefetch.enabled == 1' 'prefetch.window_max_bytes == 64 << 20' \
	'prefetch.issued == 0' 'nvme.enabled == 0' ||
	fail "(a) defaults: read-ahead on with a 64M window, no NVMe tier without cache_dir"
seqread
snap "$MNT" "$T/a1.json"
sassert "$T/a1.json" BIGCHUNKS="$BIGCHUNKS" -- 'prefetch.issued > 0' 'prefetch.used > 0' \
	'prefetch.used + prefetch.wasted <= prefetch.issued' 'pfs.reads <= BIGCHUNKS' \
	'not any(errors.values())' ||
	fail "(a) a sequential read of an 8 MiB file: expected read-ahead to fetch chunks that the reader then used"
note "(a) prefetch: $(sget "$T/a1.json" prefetch | tr -d '\n') pfs.reads $(sget "$T/a1.json" tiers.pfs.reads)"
check_log "$DLFS_LOG"
dlfs_umount "$MNT"
check_log "$DLFS_LOG"

# ---------------------------------------------------------------- (b)
note "(b) readahead=0"
dlfs_mount "$DS" "$MNT" -o readahead=0
seqread
snap "$MNT" "$T/b.json"
sassert "$T/b.json" -- 'prefetch.enabled == 0' 'prefetch.window_max_bytes == 0' \
	'prefetch.issued == 0' 'prefetch.used == 0' 'prefetch.wasted == 0' \
	'pfs.reads > 0' 'not any(errors.values())' ||
	fail "(b) readahead=0 must turn prefetching off"
check_log "$DLFS_LOG"
dlfs_umount "$MNT"
check_log "$DLFS_LOG"

# ---------------------------------------------------------------- (c)
note "(c) readahead=1M"
dlfs_mount "$DS" "$MNT" -o readahead=1M
seqread
snap "$MNT" "$T/c.json"
sassert "$T/c.json" -- 'prefetch.enabled == 1' 'prefetch.window_max_bytes == 1 << 20' \
	'prefetch.issued > 0' 'prefetch.used + prefetch.wasted <= prefetch.issued' \
	'not any(errors.values())' ||
	fail "(c) readahead=1M"
check_log "$DLFS_LOG"
dlfs_umount "$MNT"
check_log "$DLFS_LOG"

# ---------------------------------------------------------------- (d)
note "(d) small files in random order, ram_cache=512K"
dlfs_mount "$DS" "$MNT" -o ram_cache=512K
readtree "$MNT" "$SRC" --slice 1: --seed 7 >/dev/null
readtree "$MNT" "$SRC" --slice 1: --seed 8 >/dev/null
snap "$MNT" "$T/d.json"
sassert "$T/d.json" -- 'prefetch.used + prefetch.wasted <= prefetch.issued' \
	'not any(errors.values())' ||
	fail "(d) random reads of small files"
note "(d) prefetch: $(sget "$T/d.json" prefetch | tr -d '\n'), pfs.reads $(sget "$T/d.json" tiers.pfs.reads)"
check_log "$DLFS_LOG"
dlfs_umount "$MNT"
check_log "$DLFS_LOG"

# ---------------------------------------------------------------- (e)
for o in prefetch_threads=1 prefetch_threads=8 pfs_io=direct pfs_io=buffered; do
	note "(e) -o $o"
	dlfs_mount "$DS" "$MNT" -o "$o"
	readtree "$MNT" "$SRC" >/dev/null
	seqread
	snap "$MNT" "$T/e.json"
	sassert "$T/e.json" DATA="$DATA" -- 'pfs.bytes == DATA' 'not any(errors.values())' ||
		fail "(e) -o $o: every file, each chunk read from the PFS once"
	check_log "$DLFS_LOG"
	dlfs_umount "$MNT"
	check_log "$DLFS_LOG"
done

# in_order TAG SRC MAP DS PREFIX SCOPE: reads the files of MAP under
# PREFIX through MNT in their containers' order (a file's chunk counted
# from its container's data offset, in the header), each against SRC's
# bytes; prints the most files that may be read alone: those of the
# first four chunks of each container (SCOPE each) or of the first one
# only (SCOPE first). Fails on wrong bytes or when the files span fewer
# than 8 chunks, or with SCOPE first fewer than 3 containers (too few to
# tell).
in_order() {
	"$PYTHON" - "$MNT" "$@" "$CS" <<'PY'
import json, os, struct, sys
mnt, tag, src, mp, ds, prefix, scope, cs = sys.argv[1:9]
mp, cs = json.load(open(mp)), int(cs)
def data_off(c, memo={}):
    if c not in memo:
        h = open(os.path.join(ds, "%06d.dlc" % c), "rb").read(64)
        memo[c] = struct.unpack_from("<QQQ", h, 40)[1]
    return memo[c]
files = sorted((v["container"], v["offset"] - data_off(v["container"]), k)
               for k, v in mp.items() if k.startswith(prefix) and v["size"] > 0)
seen, bound = {}, 0
for c, off, rel in files:
    with open(os.path.join(mnt, rel), "rb") as f, open(os.path.join(src, rel), "rb") as g:
        if f.read() != g.read():
            sys.exit("%s %s: wrong bytes" % (tag, rel))
    ks = seen.setdefault(c, [])
    if off // cs not in ks:
        ks.append(off // cs)
    bound += len(ks) <= 4 and (scope == "each" or c == files[0][0])
chunks = sum(len(v) for v in seen.values())
if chunks < 8 or (scope == "first" and len(seen) < 3):
    sys.exit("%s the files span %d chunks in %d containers: too few to tell"
             % (tag, chunks, len(seen)))
print(bound)
PY
}

# ---------------------------------------------------------------- (f)
note "(f) read_unit=file, small files in their containers' order"
dlfs_mount "$DS" "$MNT" -o read_unit=file
BOUND=$(in_order "(f)" "$SRC" "$T/map.json" "$DS" small/ each) ||
	fail "(f) reading the small files in order"
snap "$MNT" "$T/f.json"
sassert "$T/f.json" BOUND="$BOUND" -- 's.read_unit.file_reads <= BOUND' 'prefetch.used > 0' \
	'not any(errors.values())' ||
	fail "(f) a sequential reader in file mode read more than its first four chunks' files alone (at most $BOUND)"
note "(f) file_reads $(sget "$T/f.json" read_unit.file_reads) (at most $BOUND), prefetch: $(sget "$T/f.json" prefetch | tr -d '\n')"
check_log "$DLFS_LOG"
dlfs_umount "$MNT"
check_log "$DLFS_LOG"

# ---------------------------------------------------------------- (g)
note "(g) read_unit=file, small files of several containers in order"
SRC2="$T/src2"
mkdir -p "$SRC2/many"
"$PYTHON" - "$SRC2/many" <<'PY'
import os, random, sys
r = random.Random(22)
for i in range(1300):
    open(os.path.join(sys.argv[1], "m%04d" % i), "wb").write(r.randbytes(r.randrange(1000, 5000)))
PY
DS2="$T/ds2.dlfs"
pack "$SRC2" -o "$DS2" --chunk-size 64K --container-size 1M -q
expect_ok "pack of (g)"
file_map "$SRC2" "$DS2" "$T/map2.json"
dlfs_mount "$DS2" "$MNT" -o read_unit=file
BOUND=$(in_order "(g)" "$SRC2" "$T/map2.json" "$DS2" many/ first) ||
	fail "(g) reading the files of several containers in order"
snap "$MNT" "$T/g.json"
sassert "$T/g.json" BOUND="$BOUND" -- 's.read_unit.file_reads <= BOUND' 'prefetch.used > 0' \
	'not any(errors.values())' ||
	fail "(g) a sequential reader in file mode began its stream again in each container (files read alone: at most $BOUND, those of the first container's first four chunks)"
note "(g) file_reads $(sget "$T/g.json" read_unit.file_reads) (at most $BOUND), prefetch: $(sget "$T/g.json" prefetch | tr -d '\n')"
check_log "$DLFS_LOG"
dlfs_umount "$MNT"
check_log "$DLFS_LOG"
exit 0
