#!/bin/bash
# compress: a compressed dataset (dlfs-pack --compress zstd, issue 28
# item 1) served by the daemon. The tree has a compressible part (text,
# uint16 arrays: zstd chunks) and an incompressible one (random bytes:
# raw chunks), 64K chunks in 1M containers.
#  - without cache_dir, with -o read_unit=file: every file reads byte for
#    byte; the daemon reads chunks all the same (.dlfs/stats read_unit
#    says chunk, no file reads) and logs why; with readahead=0 every load
#    is a demand miss, and the decode threads decompress every zstd
#    chunk, the FUSE workers none (stats decompressed);
#  - with cache_dir: epoch 1 reads every file and writes every chunk to
#    the NVMe tier (decompressed), each zstd chunk decompressed once, by
#    the decode or the background threads, never by a FUSE worker; a
#    remount's epoch 2 reads every file
#    from the tier (nvme hits > 0, pfs bytes and reads 0, no corrupt
#    chunk): the tier's chunks are checked against the logical bytes'
#    checksum, not the stored ones' (a text file over 1 MiB is read
#    there by its chunks, the small ones whole);
#  - 16 bytes flipped in the tier's copy of a compressed chunk: counted
#    corrupt, that chunk read again from the PFS, every file right;
#  - one byte flipped in a stored zstd chunk (chunk 0 of container 0):
#    reading gives EIO for exactly the files with bytes in that chunk and
#    the right bytes for every other, without cache_dir and with a fresh
#    one (twice: the chunk is never cached); the daemon stays up, counts
#    errors.checksum and logs the mismatch.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"
mount_setup
. "$LIB_DIR/cachelib.sh"

SRC="$T/src"
mkdir -p "$SRC"
"$PYTHON" - "$SRC" <<'PY' || fail "cannot generate the source tree"
import os, random, struct, sys
d, r = sys.argv[1], random.Random(28)
for sub in ("a_text", "b_npy", "c_rnd"):
    os.makedirs(os.path.join(d, sub))
for i in range(60):
    with open(f"{d}/a_text/t{i:02d}.txt", "w") as f:
        f.write("".join(f"line {j} of sample {i}: the quick brown fox\n"
                        for j in range(100 + 53 * i)))
# Larger than the 1 MiB a file is checked whole from the NVMe tier
# (DLFS_FETCH_FILE_CHECK_MAX): read there by its chunks.
with open(f"{d}/a_text/big.txt", "w") as f:
    f.write("".join(f"row {j}: lorem ipsum dolor sit amet\n" for j in range(50000)))
for i in range(12):
    n = 9000 + 7000 * i
    with open(f"{d}/b_npy/a{i:02d}.npy", "wb") as f:
        f.write(b"".join(struct.pack("<H", (j * 7 + i) % 500) for j in range(n)))
for i in range(40):
    open(f"{d}/c_rnd/r{i:02d}", "wb").write(r.randbytes(r.randrange(0, 6000)))
for i, n in enumerate([65535, 65537, 300000, 1100000]):
    open(f"{d}/c_rnd/e{i}", "wb").write(r.randbytes(n))
open(f"{d}/empty", "wb").close()
PY
DS="$T/ds.dlfs"
pack "$SRC" -o "$DS" --chunk-size 64K --container-size 1M --compress zstd -q
expect_ok "pack --compress zstd"
read -r CHUNKS DATA NCONT CS <<<"$(ds_geom "$DS")"
inspect info "$DS"
expect_ok "info"
cp "$T/out" "$T/info.out"
RAW=$(awk '$1 == "raw_chunks:" {print $2}' "$T/out")
[ "$RAW" -gt 0 ] && [ "$RAW" -lt "$CHUNKS" ] ||
	fail "test setup: $RAW of $CHUNKS chunks raw, want some of each"
# Chunk 0 of container 0 is a zstd frame, stored first at the data offset.
"$PYTHON" - "$DS/000000.dlc" "$CS" <<'PY' || fail "test setup: chunk 0 of container 0 is not a zstd frame"
import sys
f = open(sys.argv[1], "rb")
f.seek(int(sys.argv[2]))
sys.exit(f.read(4) != b"\x28\xb5\x2f\xfd")
PY
ID=$(ds_id "$DS")
file_map "$SRC" "$DS" "$T/map.json"
note "dataset $ID: $NCONT containers, $CHUNKS chunks ($RAW raw), $DATA data bytes"
MNT="$T/mnt"
mkdir "$MNT"

# ---------------------------------------------------------------- no cache
note "no cache_dir, -o read_unit=file,readahead=0"
dlfs_mount "$DS" "$MNT" -o read_unit=file,readahead=0
readtree "$MNT" "$SRC" --seed 3 >/dev/null
snap "$MNT" "$T/s0.json"
sassert "$T/s0.json" -- 's.read_unit.option == "chunk"' 's.read_unit.now == "chunk"' \
	's.read_unit.file_reads == 0' 'pfs.reads > 0' 'not any(errors.values())' ||
	fail "a compressed dataset must be read by chunks"
# The PFS counters count what it served: the stored bytes, each chunk
# once here (the default RAM tier holds them all).
STORED=$(awk '$1 == "stored_bytes:" {print $2}' "$T/info.out")
sassert "$T/s0.json" STORED="$STORED" CHUNKS="$CHUNKS" -- \
	'pfs.reads == CHUNKS' 'pfs.bytes == STORED' ||
	fail "tiers.pfs.bytes must count the stored (compressed) bytes the PFS served"
ZCHUNKS=$((CHUNKS - RAW))
sassert "$T/s0.json" Z="$ZCHUNKS" -- 's.decompressed.decode_threads == Z' \
	's.decompressed.background == 0' 's.decompressed.caller == 0' ||
	fail "demand misses: the decode threads decompress every zstd chunk, the FUSE workers none"

grep -qF "read_unit=file: the dataset is compressed" "$DLFS_LOG" ||
	fail "the daemon did not say why read_unit=file is not used: $(head -c 400 "$DLFS_LOG")"
check_log "$DLFS_LOG"
dlfs_umount "$MNT"
check_log "$DLFS_LOG"

# ---------------------------------------------------------------- NVMe tier
NV="$T/nvme"
note "cache_dir: epoch 1 populates $NV"
dlfs_mount "$DS" "$MNT" -o cache_dir="$NV"
readtree "$MNT" "$SRC" >/dev/null
wait_written "$MNT" "$CHUNKS"
snap "$MNT" "$T/s1.json"
sassert "$T/s1.json" DATA="$DATA" CHUNKS="$CHUNKS" -- \
	'pfs.reads == CHUNKS' 'nvme.written_chunks == CHUNKS' 'nvme.written_bytes == DATA' \
	'nvme.corrupt == 0' 'not any(errors.values())' ||
	fail "epoch 1: every chunk read once and cached"
sassert "$T/s1.json" Z="$ZCHUNKS" -- 's.decompressed.caller == 0' \
	's.decompressed.decode_threads + s.decompressed.background == Z' ||
	fail "epoch 1: each zstd chunk decompressed once, never by a FUSE worker"
check_log "$DLFS_LOG"
dlfs_umount "$MNT"
check_log "$DLFS_LOG"
cp -a --sparse=always "$NV" "$T/nvme.pristine"

note "remount: epoch 2 from the NVMe tier"
dlfs_mount "$DS" "$MNT" -o cache_dir="$NV"
readtree "$MNT" "$SRC" --seed 9 >/dev/null
snap "$MNT" "$T/s2.json"
sassert "$T/s2.json" -- 'nvme.hits > 0' 'nvme.misses == 0' 'pfs.bytes == 0' 'pfs.reads == 0' \
	'nvme.corrupt == 0' 'not any(errors.values())' \
	'sum(s.decompressed.values()) == 0' ||
	fail "epoch 2: every read should come from the NVMe tier, with no decompression"
check_log "$DLFS_LOG"
dlfs_umount "$MNT"
check_log "$DLFS_LOG"

note "a damaged chunk in the NVMe tier"
VICTIM=$("$PYTHON" -c '
import json, sys
m = json.load(open(sys.argv[1]))
print(next(r for r in sorted(m) if r.startswith("a_text/") and m[r]["size"] >= 1000))' "$T/map.json")
read -r VC VOFF <<<"$("$PYTHON" -c 'import json, sys; f = json.load(open(sys.argv[1]))[sys.argv[2]]; print(f["container"], f["offset"])' "$T/map.json" "$VICTIM")"
flip "$NV/$ID/$(printf '%06d' "$VC").cache" $((VOFF + 100)) 16
dlfs_mount "$DS" "$MNT" -o cache_dir="$NV"
readtree "$MNT" "$SRC" >/dev/null
snap "$MNT" "$T/s3.json"
sassert "$T/s3.json" -- 'nvme.corrupt >= 1' 'pfs.reads >= 1' 'pfs.reads <= 2' 'nvme.hits > 0' \
	'errors.checksum == 0' ||
	fail "a damaged cached chunk: counted corrupt and read again from the PFS"
check_log "$DLFS_LOG" 'cache|nvme'
dlfs_umount "$MNT"
check_log "$DLFS_LOG" 'cache|nvme'

# ---------------------------------------------------------------- a bad chunk
note "one byte flipped in stored chunk 0 of container 0"
flip "$DS/000000.dlc" $((CS + 7))
# expect_chunk0_eio ROUND: EIO for exactly the files with bytes in
# [CS, 2 CS) of container 0, the right bytes for every other.
expect_chunk0_eio() {
	tmo "$PYTHON" "$LIB_DIR/chunk_eio.py" "$SRC" "$MNT" "$T/map.json" 0 "$CS" $((2 * CS)) 1 ||
		fail "$1: wrong results reading the damaged dataset (see above)"
}
for round in "no cache_dir" "fresh cache_dir" "the same cache_dir again"; do
	case $round in
	no*) dlfs_mount "$DS" "$MNT" ;;
	*) dlfs_mount "$DS" "$MNT" -o cache_dir="$T/nvme2" ;;
	esac
	n=$(expect_chunk0_eio "$round")
	note "$round: $n (EIO, right)"
	mountpoint -q "$MNT" && kill -0 "$DLFS_PID" || fail "$round: the daemon died"
	snap "$MNT" "$T/b.json"
	sassert "$T/b.json" -- 'errors.checksum >= 1' || fail "$round: the bad chunk is not counted"
	grep -qF "checksum mismatch" "$DLFS_LOG" ||
		fail "$round: the daemon did not log the mismatch: $(head -c 400 "$DLFS_LOG")"
	check_log "$DLFS_LOG" 'checksum mismatch'
	dlfs_umount "$MNT"
	check_log "$DLFS_LOG" 'checksum mismatch'
done
exit 0
