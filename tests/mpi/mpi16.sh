#!/bin/bash
# mpi16: sixteen ranks on this host (issue 24, "MPI at 16 ranks"), from
# counters and bytes, with room for 16 daemons sharing 2 cores.
# (s) stage=all: every rank's staging ends with every chunk in its NVMe
#     tier, and the PFS bytes summed over the ranks are the data once
#     (within one chunk per rank): every chunk read from the PFS once per
#     job. Every rank then reads its share of epoch 1 (samples/) with the
#     right bytes. The ranks are unmounted 1 s apart (16 s in all): the job
#     still ends cleanly (mpirun exits 0), each rank waiting for the others'
#     byes.
# (k) a rank killed (SIGKILL) in the middle of an epoch, under mpirun
#     --enable-recovery with peer_timeout=1500: the other fifteen have read
#     the first half of their shares, and read the rest, then the whole
#     tree (so each asks the dead rank for its chunks, however fast the
#     machine), with the right bytes within 300 s (no hang); they count the
#     dead rank's silence as peer timeouts or lost peers, and exit within
#     40 s of their unmount.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"
mount_setup
. "$LIB_DIR/mpilib.sh"
mpi_require
NP=16

SRC="$T/src"
"$PYTHON" - "$SRC" <<'PY'
import os, random, sys
r = random.Random(16)
d = sys.argv[1]
for k in range(16):
    os.makedirs(os.path.join(d, "c%02d" % k))
    for i in range(40):
        open(os.path.join(d, "c%02d/s%03d.bin" % (k, i)), "wb").write(
            r.randbytes(r.randrange(500, 40000)))
PY
DS="$T/ds.dlfs"
pack "$SRC" -o "$DS" --chunk-size 64K --container-size 1M -q
expect_ok "pack"
CS=65536
# read_shares TAG EPOCH PART RANKS...: each rank reads its share of EPOCH
# through samples/ in the background, all of it (PART all), its first 20
# files (head) or the others (tail, appended); then check_shares compares
# the bytes with the files of its list, in order.
read_shares() {
	local tag=$1 e=$2 part=$3 r sel
	shift 3
	case $part in
	all) sel=cat ;;
	head) sel="head -n 20" ;;
	tail) sel="tail -n +21" ;;
	*) fail "read_shares: bad part $part" ;;
	esac
	for r in "$@"; do
		[ "$part" = tail ] || tmo cat "$T/$tag-mnt$r/.dlfs/epochs/$e/files" >"$T/$tag-list$r"
		[ "$part" = tail ] || : >"$T/$tag-got$r"
		( cd "$T/$tag-mnt$r/.dlfs/epochs/$e/samples" && ls | $sel | xargs cat ) >>"$T/$tag-got$r" &
		PIDS+=($!)
	done
}
check_shares() {
	local tag=$1 r
	shift
	for r in "$@"; do
		(cd "$SRC" && xargs cat <"$T/$tag-list$r") | cmp -s - "$T/$tag-got$r" ||
			soft_fail "($tag) rank $r read wrong bytes"
	done
}
ALL=$(seq 0 15)

note "(s) stage=all on 16 ranks"
job_start s "cache_dir=NV,stage=all"
stage_check s || soft_fail "(s) staging did not fill every tier from one PFS read of each chunk"
read_shares s 1 all $ALL
wait_all
check_shares s $ALL
# One rank after another, 1 s apart: 16 s from the first to leave to the
# last, more than the 10 s a rank waits after the last bye it heard.
JOB_STOP_GAP=1 job_stop s
for r in $ALL; do check_log "$T/s-log$r" 'fusermount3: failed to unmount'; done

note "(k) rank 5 killed in the middle of epoch 1"
job_start k "cache_dir=NV,seed=5,peer_timeout=1500" --enable-recovery
LIVE=$(seq 0 15 | grep -vx 5)
# Mid-epoch whatever the machine's speed: every live rank has read the
# first half of its share, and reads the rest after the kill.
read_shares k 1 head $LIVE
wait_all 300
P5=$(pgrep -f -- "$T/k-mnt5 -f" || true)
[ -n "$P5" ] || fail "(k) cannot find rank 5's daemon"
kill -KILL "$P5"
timeout 20 fusermount3 -uz "$T/k-mnt5" 2>/dev/null || true
read_shares k 1 tail $LIVE
# Rank 5's chunks are its home range; a live rank has few of them in its
# tier, so reading the whole tree asks rank 5 for the rest.
for r in $LIVE; do
	( cd "$T/k-mnt$r" && find c* -type f | sort | xargs cat ) >"$T/k-tree$r" &
	PIDS+=($!)
done
wait_all 300
check_shares k $LIVE
( cd "$SRC" && find c* -type f | sort | xargs cat ) >"$T/k-tree"
for r in $LIVE; do
	cmp -s "$T/k-tree" "$T/k-tree$r" || soft_fail "(k) rank $r read wrong bytes from the tree"
done
TMO=$(stat_sum k peer.timeouts $LIVE)
LOST=$(stat_sum k peer.lost $LIVE)
note "(k) peer timeouts $TMO, lost $LOST"
[ $((TMO + LOST)) -gt 0 ] || soft_fail "(k) no peer timeout or lost request was counted with rank 5 dead"
for r in $LIVE; do timeout 30 fusermount3 -u "$T/k-mnt$r" || soft_fail "(k) rank $r: fusermount3 -u failed"; done
for r in $LIVE; do
	p=$(pgrep -f -- "$T/k-mnt$r -f" || true)
	[ -n "$p" ] || continue
	for ((i = 0; i < 400; i++)); do
		kill -0 "$p" 2>/dev/null || break
		sleep 0.1
	done
	! kill -0 "$p" 2>/dev/null || soft_fail "(k) rank $r still running 40 s after its unmount"
done
kill "$JOB_PID" 2>/dev/null || true
finish
