#!/bin/bash
# mpi_compress: a compressed dataset (dlfs-pack --compress zstd) on four
# ranks (the launcher of the build's MPI: lib/mpilib.sh), one dlfs per
# rank with its own cache dir. Each rank
# reads every file by its plain path in its own random order:
#  - every rank reads the source's bytes;
#  - the PFS serves the stored (compressed) bytes about once for the job,
#    not once per rank: summed tiers.pfs.bytes <= 1.1x the stored bytes
#    (plus a chunk per rank), and >= them;
#  - the ranks got chunks from each other (peer.hits > 0 summed): a
#    home node sends its chunks decompressed, and the asking rank checks
#    them against the logical bytes' checksum (no peer errors);
#  - each zstd chunk is decompressed about once for the job (by a decode
#    or a background thread of the rank that read it from the PFS), and
#    never by a FUSE worker (decompressed.caller == 0 on every rank).
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"
mount_setup
. "$LIB_DIR/mpilib.sh"
mpi_require
NP=4

# 160 files in 4 directories: text, and every fourth one incompressible
# (70 to 150 KB): raw chunks among the zstd ones.
mpi_tree --seed 29 --dirs 4 --files 40 --text --min-size 70000 \
	--max-size 150000 -- --chunk-size 64K --container-size 512K --compress zstd
inspect info "$DS"
expect_ok "info"
CS=65536
STORED=$(awk '$1 == "stored_bytes:" {print $2}' "$T/out")
CHUNKS=$(awk '$1 == "chunks:" {print $2}' "$T/out")
RAW=$(awk '$1 == "raw_chunks:" {print $2}' "$T/out")
Z=$((CHUNKS - RAW))
[ "$Z" -gt 8 ] && [ "$RAW" -gt 0 ] || fail "test setup: $Z zstd and $RAW raw chunks of $CHUNKS, want some of each"
note "$CHUNKS chunks ($Z zstd), $STORED stored bytes"

job_start z "cache_dir=NV"
for ((r = 0; r < NP; r++)); do
	( cd "$T/z-mnt$r" && find . -type f | shuf --random-source=<(yes "$r") >"$T/z-list$r" &&
	  xargs cat <"$T/z-list$r" | md5sum ) >"$T/z-sum$r" &
	PIDS+=($!)
done
wait_all
for ((r = 0; r < NP; r++)); do
	WANT=$(cd "$SRC" && xargs cat <"$T/z-list$r" | md5sum)
	[ "$(cat "$T/z-sum$r")" = "$WANT" ] || soft_fail "rank $r read wrong bytes"
	[ "$(stat_sum z decompressed.caller "$r")" = 0 ] ||
		soft_fail "rank $r: a FUSE worker decompressed chunks: $(grep -o '"decompressed": {[^}]*}' "$T/z-mnt$r/.dlfs/stats")"
done
PFS=$(stat_sum z tiers.pfs.bytes 0 1 2 3)
HITS=$(stat_sum z peer.hits 0 1 2 3)
PERR=$(stat_sum z errors.peer 0 1 2 3)
UNZ=$(( $(stat_sum z decompressed.decode_threads 0 1 2 3) + $(stat_sum z decompressed.background 0 1 2 3) ))
note "PFS bytes summed $PFS, stored $STORED; peer hits $HITS, peer errors $PERR; $UNZ of $Z zstd chunks decompressed"
[ "$PFS" -ge "$STORED" ] && [ "$PFS" -le $((STORED * 11 / 10 + NP * CS)) ] ||
	soft_fail "PFS bytes summed $PFS: want the stored bytes $STORED about once"
[ "$HITS" -gt 0 ] || soft_fail "no rank got a chunk from a peer"
[ "$PERR" = 0 ] || soft_fail "$PERR peer errors: a peer's decompressed chunk failed its check"
[ "$UNZ" -ge "$Z" ] && [ "$UNZ" -le $((Z * 11 / 10 + NP)) ] ||
	soft_fail "$UNZ decompressions for $Z zstd chunks: want each about once for the job"
job_stop z
for ((r = 0; r < NP; r++)); do
	check_log "$T/z-log$r"
done
finish
