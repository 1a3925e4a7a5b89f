#!/bin/bash
# mpi: one dlfs per rank, four ranks under the launcher of the build's MPI
# (Open MPI's mpirun or MPICH's mpiexec: lib/mpilib.sh), each rank with its
# own mountpoint ($T/mntR) and cache dir ($T/nvR).
# (a) partition: for epochs 0, 1 and 2 the four ranks' .dlfs/epochs/E/files
#     lists together are every file of the dataset exactly once; epochs 0
#     and 1 differ; every rank reports rank R of 4 and seed 11 in
#     .dlfs/info; samples/ names sort in the files order.
# (b) the same seed in a new job gives the same lists; global positions of
#     each file over 60 epochs are uniform (chi-square, 0.999 quantile).
# (c) PFS traffic: each rank reads its samples/ share of epoch 3 (bytes
#     equal to the files of its list, in order); tiers.pfs.bytes summed over
#     the ranks equals the containers' data bytes, within one chunk per
#     rank; peers served each other (peer.hits > 0 somewhere), and each
#     rank's peer.latency_us_hist counts every answer (sums to its hits).
# (d) plain tree, fresh job: each rank reads every file by its plain path in
#     its own random order; PFS bytes summed stay <= 1.1x the data (not 4x).
#     No seed given: every rank has the dataset's default seed, the same.
# (e) chunked shuffle without any cache dir: PFS reads are whole chunks
#     (only chunk-sized reads, plus at most one short last chunk per
#     container), and over the ranks every chunk is read exactly once.
# (g) staging: stage=all on every rank fills every rank's NVMe tier with
#     every chunk (home chunks from the PFS, the others from their homes):
#     the PFS bytes summed are the data bytes once (within one chunk per
#     rank); then SIGTERM to every rank (as scancel sends) ends the whole
#     job cleanly: the launcher exits 0, nothing is left mounted.
# Every daemon exits 0 after fusermount3 -u, and logs nothing bad. A rank
# killed in a running job: mpi_fault.sh.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"
mount_setup
. "$LIB_DIR/mpilib.sh"
mpi_require
NP=4

# 160 files of 500 B to 40 KB in 4 directories, .jpg, .h5 and .bin.
mpi_tree --seed 5 --dirs 4 --files 40 --ext .jpg,.h5,.bin \
	-- --chunk-size 64K --container-size 512K
NFILES=160
read -r DATA NCONT <<<"$("$PYTHON" - "$DS" <<'PY'
import os, struct, sys
ds = sys.argv[1]
data = n = 0
for f in os.listdir(ds):
    if f.endswith(".dlc"):
        h = open(os.path.join(ds, f), "rb").read(64)
        cs, off, size = struct.unpack_from("<QQQ", h, 40)
        data += size
        n += 1
print(data, n)
PY
)"
CS=65536

# ------------------------------------------------------------ (a) and (c)
note "(a) partition, epochs 0-2"
job_start a "cache_dir=NV,seed=11"
for e in 0 1 2; do
	: >"$T/all$e"
	for ((r = 0; r < NP; r++)); do
		tmo cat "$T/a-mnt$r/.dlfs/epochs/$e/files" >"$T/a-files$e-$r" || fail "rank $r: cannot read epochs/$e/files"
		cat "$T/a-files$e-$r" >>"$T/all$e"
	done
	(cd "$SRC" && find . -type f | sed 's|^\./||' | sort) >"$T/want"
	sort "$T/all$e" | diff -q - "$T/want" >/dev/null ||
		soft_fail "epoch $e: the union of the ranks' lists is not the dataset ($(sort "$T/all$e" | uniq -d | wc -l) duplicates, $(wc -l <"$T/all$e") lines)"
done
cmp -s "$T/all0" "$T/all1" && soft_fail "epochs 0 and 1 have the same order"
for ((r = 0; r < NP; r++)); do
	grep -q "\"seed\": 11," "$T/a-mnt$r/.dlfs/info" || soft_fail "rank $r: .dlfs/info does not say seed 11"
	# samples/ sorted names follow the list, with the extensions kept
	ls "$T/a-mnt$r/.dlfs/epochs/0/samples" >"$T/names$r"
	[ "$(wc -l <"$T/names$r")" = "$(wc -l <"$T/a-files0-$r")" ] || soft_fail "rank $r: samples/ and files differ in length"
	paste -d' ' "$T/names$r" "$T/a-files0-$r" | awk '{ n = $1; f = $2; sub(/^[0-9]+/, "", n); e = f; if (match(f, /\.[^.\/]*$/)) e = substr(f, RSTART); else e = ""; if (n != e) { print; exit 1 } }' ||
		soft_fail "rank $r: a sample name does not keep its file's extension"
done

note "(c) every rank reads its samples/ share of epoch 3"
for ((r = 0; r < NP; r++)); do
	tmo cat "$T/a-mnt$r/.dlfs/epochs/3/files" >"$T/list3-$r"
	( cd "$T/a-mnt$r/.dlfs/epochs/3/samples" && ls | xargs cat ) >"$T/got$r" &
	PIDS+=($!)
done
wait_all
for ((r = 0; r < NP; r++)); do
	(cd "$SRC" && xargs cat <"$T/list3-$r") | cmp -s - "$T/got$r" || soft_fail "rank $r: the samples of epoch 3 are not its files' bytes in order"
done
PFS=$(stat_sum a tiers.pfs.bytes 0 1 2 3)
HITS=$(stat_sum a peer.hits 0 1 2 3)
note "(c) PFS bytes summed $PFS, data $DATA, peer hits $HITS"
[ "$PFS" -ge "$DATA" ] && [ "$PFS" -le $((DATA + NP * CS)) ] ||
	soft_fail "(c) PFS bytes summed over the ranks $PFS, expected the data $DATA (+ at most one chunk per rank)"
[ "$HITS" -gt 0 ] || soft_fail "(c) no chunk came from a peer"
for ((r = 0; r < NP; r++)); do
	"$PYTHON" - "$T/a-mnt$r/.dlfs/stats" <<'PY' || soft_fail "(c) rank $r: peer.latency_us_hist does not count every answer"
import json, sys
p = json.load(open(sys.argv[1]))["peer"]
sys.exit(0 if len(p["latency_us_hist"]) == 20 and sum(p["latency_us_hist"]) == p["hits"] else 1)
PY
done
for ((r = 0; r < NP; r++)); do check_log "$T/a-log$r"; done
job_stop a
for ((r = 0; r < NP; r++)); do check_log "$T/a-log$r" 'fusermount3: failed to unmount'; done

# ------------------------------------------------------------------- (b)
note "(b) the same seed, a new job: the same order; uniform positions"
job_start b "seed=11"
: >"$T/b-all0"
for ((r = 0; r < NP; r++)); do tmo cat "$T/b-mnt$r/.dlfs/epochs/0/files" >>"$T/b-all0"; done
cmp -s "$T/all0" "$T/b-all0" || soft_fail "(b) seed 11 gave another order for epoch 0 in a new job"
for ((e = 10; e < 70; e++)); do
	for ((r = 0; r < NP; r++)); do tmo cat "$T/b-mnt$r/.dlfs/epochs/$e/files"; done >"$T/b-ep$e"
done
"$PYTHON" - "$T" "$NFILES" <<'PY' || soft_fail "(b) global positions are not uniform"
import sys
t, n = sys.argv[1], int(sys.argv[2])
B = 8
count = {}
for e in range(10, 70):
    for pos, f in enumerate(open("%s/b-ep%d" % (t, e)).read().split("\n")[:n]):
        count.setdefault(f, [0] * B)[pos * B // n] += 1
files = sorted(count)[:20]
exp = 60 / B
chi = sum((c - exp) ** 2 / exp for f in files for c in count[f])
# 20 files x 7 degrees of freedom = 140: the 0.999 quantile is about 199.
print("  chi-square %.1f on 140 degrees of freedom" % chi, file=sys.stderr)
sys.exit(0 if chi < 199 else 1)
PY
job_stop b

# ------------------------------------------------------------------- (d)
note "(d) plain tree, each rank in its own random order"
job_start d "cache_dir=NV"
# No seed given: every rank derives the default from the dataset's id
# (the sealed index comes while joining), the same as one mount alone.
for ((r = 0; r < NP; r++)); do
	grep -q '"seed_from": "dataset"' "$T/d-mnt$r/.dlfs/info" ||
		soft_fail "(d) rank $r: .dlfs/info does not say seed_from dataset"
	echo "$(json_get "$T/d-mnt$r/.dlfs/info" seed)" >>"$T/d-seeds"
done
[ "$(sort -u "$T/d-seeds" | wc -l)" = 1 ] || soft_fail "(d) the ranks have different seeds: $(tr '\n' ' ' <"$T/d-seeds")"
mkdir "$T/alone"
dlfs_mount "$DS" "$T/alone"
ALONE=$(json_get "$T/alone/.dlfs/info" seed)
dlfs_umount "$T/alone"
[ "$(head -n 1 "$T/d-seeds")" = "$ALONE" ] ||
	soft_fail "(d) the job's default seed $(head -n 1 "$T/d-seeds") is not a lone mount's, $ALONE"
for ((r = 0; r < NP; r++)); do
	( cd "$T/d-mnt$r" && find . -type f | shuf --random-source=<(yes "$r") | xargs cat | md5sum ) >"$T/d-sum$r" &
	PIDS+=($!)
done
wait_all
WANT=$(cd "$T/d-mnt0" && find . -type f | shuf --random-source=<(yes 0) | (cd "$SRC" && xargs cat) | md5sum)
[ "$(cat "$T/d-sum0")" = "$WANT" ] || soft_fail "(d) rank 0 read wrong bytes through the plain tree"
PFS=$(stat_sum d tiers.pfs.bytes 0 1 2 3)
note "(d) PFS bytes summed $PFS, data $DATA"
[ "$PFS" -le $((DATA * 11 / 10 + NP * CS)) ] || soft_fail "(d) PFS bytes summed $PFS: more than 1.1x the data $DATA"
job_stop d

# ------------------------------------------------------------------- (e)
note "(e) shuffle=chunked, no cache dir"
job_start e "shuffle=chunked,shuffle_window=2,seed=3,readahead=0"
for ((r = 0; r < NP; r++)); do
	( cd "$T/e-mnt$r/.dlfs/epochs/0/samples" && ls | xargs cat >/dev/null ) &
	PIDS+=($!)
done
wait_all
"$PYTHON" - "$T" "$CS" "$NCONT" "$DS" <<'PY' || soft_fail "(e) chunked: PFS reads are not whole chunks, each read once"
import json, os, struct, sys
t, cs, ncont, ds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
chunks = 0
for f in os.listdir(ds):
    if f.endswith(".dlc"):
        size = struct.unpack_from("<QQQ", open(os.path.join(ds, f), "rb").read(64), 40)[2]
        chunks += (size + cs - 1) // cs
bad, reads = [], 0
for r in range(4):
    p = json.load(open("%s/e-mnt%d/.dlfs/stats" % (t, r)))["tiers"]["pfs"]
    reads += p["reads"]
    small = sum(v for k, v in p["read_size_hist"].items() if k != "64K")
    if small > ncont:
        bad.append("rank %d: %d reads not of a whole 64K chunk: %r" % (r, small, p["read_size_hist"]))
# Each chunk is read from the PFS once, by its home, whoever reads it.
if reads != chunks:
    bad.append("%d PFS reads over the ranks for %d chunks" % (reads, chunks))
for b in bad:
    print("  " + b, file=sys.stderr)
sys.exit(1 if bad else 0)
PY
job_stop e

# ------------------------------------------------------------------- (g)
note "(g) stage=all, then SIGTERM to the job"
job_start g "cache_dir=NV,stage=all"
stage_check g || soft_fail "(g) staging did not fill every tier from one PFS read of each chunk"
# As scancel does: SIGTERM to every task of the job at once.
pkill -TERM -f -- "$T/g-mnt[0-9] -f" || soft_fail "(g) no rank to send SIGTERM to"
wait_exit "$JOB_PID" 60
[ "$WAIT_RC" = 0 ] || { cat "$T/g-mpirun.log" >&2; soft_fail "(g) the launcher exited with status $WAIT_RC after SIGTERM to every rank"; }
for ((r = 0; r < NP; r++)); do
	! is_mounted "$T/g-mnt$r" || soft_fail "(g) rank $r still mounted after SIGTERM to the job"
	check_log "$T/g-log$r" 'fusermount3: failed to unmount'
done
finish
