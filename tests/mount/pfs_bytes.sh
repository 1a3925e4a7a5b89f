#!/bin/bash
# pfs_bytes: what the PFS reads, from the counters (tiers.pfs.*), not from
# timings. Dataset: 600 files of 20-60 KiB in 256K chunks (several files
# per chunk, as a training set; a file read alone costs its 4 KiB pages,
# which for files of a few KiB alone would be more than 1.5x).
# (a) No cache_dir, a RAM tier of a quarter of the dataset, every file read
#     once in random order: the PFS reads at most 1.5x the dataset, every
#     byte correct (files are read alone once whole chunks would be evicted
#     before their neighbours are read: read_unit.now = "file").
#     No false read-ahead: a random reader that lands on the chunk after
#     its last one (once in ~90 reads here) is no stream, so at most 2
#     chunks are read ahead in the whole pass.
# (b) The control: the same with -o read_unit=chunk reads more than 1.5x,
#     so (a) measures what it claims.
# (c) With cache_dir and the epoch view: reading every file in the order of
#     .dlfs/epochs/1/files reads every chunk from the PFS exactly once
#     (pfs.reads = chunks, pfs.bytes = data), with the plan followed
#     (fill.planned > 0); the same with -o stage=none (the plan alone).
# (e) No cache_dir, a RAM tier of a half, every file read in the order of
#     the epoch view: at least half the files come out of bags, read in
#     merged runs, so the PFS sees at most 0.9x the reads of the same
#     order on a mount that did not list the view (no plan: about a read a
#     file, the control), still at most 1.5x the dataset, every byte
#     correct. (With 5 files a chunk and RAM for half the data, few
#     neighbours are in one window: bags merge little here; tools/bench/
#     sampler measures a training set's shape.)
# (d) An NVMe tier of a quarter of the dataset with cache_policy=lru, the
#     RAM tier a quarter, two epochs in random order on one mount: the
#     PFS reads at most 1.5x the dataset per epoch. (A full LRU tier that
#     took every missed chunk whole, evicting another, read ~4x.)
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"
mount_setup
. "$LIB_DIR/cachelib.sh"

SRC="$T/src"
"$PYTHON" - "$SRC" <<'PY' || fail "cannot generate the source tree"
import os, random, sys
d, r = sys.argv[1], random.Random(9)
for i in range(600):
    sub = os.path.join(d, "c%02d" % (i % 15))
    os.makedirs(sub, exist_ok=True)
    open(os.path.join(sub, "f%04d.bin" % i), "wb").write(r.randbytes(r.randrange(20480, 61440)))
PY
DS="$T/ds.dlfs"
pack "$SRC" -o "$DS" --chunk-size 256K -q
expect_ok "pack"
read -r CHUNKS DATA NCONT CS <<<"$(ds_geom "$DS")"
RAM=$((DATA / 4 / CS * CS))
note "$CHUNKS chunks, $DATA data bytes, RAM tier $RAM"
MNT="$T/mnt"
mkdir "$MNT"

# (a), (b): RAM a quarter of the dataset, no cache_dir, random order.
for unit in auto chunk; do
	dlfs_mount "$DS" "$MNT" -o "ram_cache=$RAM,read_unit=$unit"
	readtree "$SRC" "$MNT" --seed 5 >/dev/null
	snap "$MNT" "$T/$unit.json"
	dlfs_umount "$MNT"
	note "read_unit=$unit: pfs $(sget "$T/$unit.json" tiers.pfs.bytes) bytes in $(sget "$T/$unit.json" tiers.pfs.reads) reads for $DATA of data; read ahead $(sget "$T/$unit.json" prefetch.issued) chunks"
done
sassert "$T/auto.json" DATA="$DATA" -- '2 * pfs.bytes <= 3 * DATA' \
	's.read_unit.now == "file"' 'not any(errors.values())' ||
	fail "(a) read_unit=auto with a RAM tier of a quarter: more than 1.5x the dataset from the PFS"
sassert "$T/auto.json" -- 'prefetch.issued <= 2' ||
	fail "(a) a random reader was taken for a sequential stream: chunks read ahead"
sassert "$T/chunk.json" DATA="$DATA" -- '2 * pfs.bytes > 3 * DATA' ||
	fail "(b) read_unit=chunk should read more than 1.5x here: the test measures nothing"

# (c): the epoch view with an NVMe tier: each chunk once.
for stage in auto none; do
	NV="$T/nvme-$stage"
	dlfs_mount "$DS" "$MNT" -o "cache_dir=$NV,seed=7,stage=$stage"
	cp "$MNT/.dlfs/epochs/1/files" "$T/e1-$stage"
	[ "$(wc -l <"$T/e1-$stage")" -eq 600 ] || fail "(c) the epoch list has $(wc -l <"$T/e1-$stage") lines, not 600"
	readtree "$SRC" "$MNT" --list "$T/e1-$stage" >/dev/null
	wait_settled "$MNT"
	snap "$MNT" "$T/view-$stage.json"
	dlfs_umount "$MNT"
	note "view, stage=$stage: pfs $(sget "$T/view-$stage.json" tiers.pfs.bytes) bytes in $(sget "$T/view-$stage.json" tiers.pfs.reads) reads; planned $(sget "$T/view-$stage.json" fill.planned)"
	sassert "$T/view-$stage.json" DATA="$DATA" CHUNKS="$CHUNKS" -- \
		'pfs.reads == CHUNKS' 'pfs.bytes == DATA' 's.fill.planned > 0' \
		'not any(errors.values())' ||
		fail "(c) stage=$stage: epoch 1 through the view read some chunk from the PFS more than once (or never)"
done
# (e): the view's order, RAM a half, no cache_dir: bags.
for plan in view none; do
	dlfs_mount "$DS" "$MNT" -o "ram_cache=$((2 * RAM)),seed=7"
	# Listing the view makes its epoch the plan; the control reads the
	# same list from a file without listing it.
	[ $plan = none ] || cp "$MNT/.dlfs/epochs/1/files" "$T/e1-bags"
	readtree "$SRC" "$MNT" --list "$T/e1-auto" >/dev/null
	snap "$MNT" "$T/bags-$plan.json"
	dlfs_umount "$MNT"
	note "view order, plan $plan, RAM a half: pfs $(sget "$T/bags-$plan.json" tiers.pfs.bytes) bytes in $(sget "$T/bags-$plan.json" tiers.pfs.reads) reads; bags $(sget "$T/bags-$plan.json" fill.bags.loaded), their files read $(sget "$T/bags-$plan.json" fill.bags.hits)"
done
cmp -s "$T/e1-bags" "$T/e1-auto" ||
	fail "(e) the same seed gave another epoch list"
sassert "$T/bags-view.json" DATA="$DATA" -- '2 * s.fill.bags.hits >= 600' \
	'2 * pfs.bytes <= 3 * DATA' 'not any(errors.values())' ||
	fail "(e) the view's order with a RAM tier of a half: half its files not from bags, or more than 1.5x the dataset from the PFS"
V=$(sget "$T/bags-view.json" tiers.pfs.reads)
N=$(sget "$T/bags-none.json" tiers.pfs.reads)
[ "$N" -ge 540 ] ||
	fail "(e) control: without a plan the same order should read about a file a read, not $N for 600 files"
[ $((10 * V)) -le $((9 * N)) ] ||
	fail "(e) the view's order read $V times from the PFS, not at most 0.9x the $N without a plan"

# (d): a full LRU tier smaller than the dataset, random order.
NV="$T/nvme-lru"
dlfs_mount "$DS" "$MNT" -o "cache_dir=$NV,cache_size=$RAM,cache_policy=lru,ram_cache=$RAM"
readtree "$SRC" "$MNT" --seed 11 >/dev/null
readtree "$SRC" "$MNT" --seed 12 >/dev/null
wait_settled "$MNT"
snap "$MNT" "$T/lru.json"
dlfs_umount "$MNT"
note "lru tier of a quarter, 2 epochs: pfs $(sget "$T/lru.json" tiers.pfs.bytes) bytes in $(sget "$T/lru.json" tiers.pfs.reads) reads for 2 x $DATA; nvme hits $(sget "$T/lru.json" tiers.nvme.hits)"
sassert "$T/lru.json" DATA="$DATA" -- 'pfs.bytes <= 3 * DATA' \
	'nvme.hits > 0' 'not any(errors.values())' ||
	fail "(d) an LRU NVMe tier of a quarter of the dataset: more than 1.5x the dataset per epoch from the PFS"
check_log "$DLFS_LOG"
