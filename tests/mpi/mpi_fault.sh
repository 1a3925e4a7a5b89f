#!/bin/bash
# mpi_fault: a rank killed (SIGKILL) in a running job, the launcher told
# to keep the job going (lib/mpilib.sh, MPI_KEEP_GOING), with
# peer_timeout=1500: the live ranks pay peer timeouts and PFS reads, never
# a hang or wrong bytes, and leave cleanly.
# (f) four ranks, rank 2 killed once the job has started: ranks 0, 1 and 3
#     read their shares of epoch 1 (samples/) with the right bytes.
# (k) sixteen ranks on 2 cores, rank 5 killed in the middle of epoch 1:
#     the other fifteen have read the first half of their shares, and read
#     the rest, then the whole tree (so each asks the dead rank for its
#     chunks, however fast the machine), with the right bytes within 300 s.
# In both, the live ranks count the dead rank's silence as peer timeouts
# or lost peers, and each exits within 40 s of its unmount. Skips (77)
# with an MPI that cannot go on past a dead rank (MPICH here:
# mpi_require_survival says why).
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"
mount_setup
. "$LIB_DIR/mpilib.sh"
mpi_require
mpi_require_survival

sixteen_dirs

# kill_rank TAG R: SIGKILL rank R's daemon and drop its dead mount.
kill_rank() {
	local p
	p=$(pgrep -f -- "$T/$1-mnt$2 -f" || true)
	[ -n "$p" ] || fail "($1) cannot find rank $2's daemon"
	kill -KILL "$p"
	timeout 20 fusermount3 -uz "$T/$1-mnt$2" 2>/dev/null || true
}

# survived TAG RANKS...: the ranks counted the dead one's silence; each
# unmounts, and its daemon exits within 40 s; then the job is ended.
survived() {
	local tag=$1 r p i tmo lost
	shift
	tmo=$(stat_sum "$tag" peer.timeouts "$@")
	lost=$(stat_sum "$tag" peer.lost "$@")
	note "($tag) peer timeouts $tmo, lost $lost"
	[ $((tmo + lost)) -gt 0 ] || soft_fail "($tag) no peer timeout or lost request was counted with a rank dead"
	for r in "$@"; do
		timeout 30 fusermount3 -u "$T/$tag-mnt$r" || soft_fail "($tag) rank $r: fusermount3 -u failed"
	done
	for r in "$@"; do
		p=$(pgrep -f -- "$T/$tag-mnt$r -f" || true)
		[ -n "$p" ] || continue
		for ((i = 0; i < 400; i++)); do
			kill -0 "$p" 2>/dev/null || break
			sleep 0.1
		done
		! kill -0 "$p" 2>/dev/null || soft_fail "($tag) rank $r still running 40 s after its unmount"
	done
	kill "$JOB_PID" 2>/dev/null || true
	wait_exit "$JOB_PID" 30
}

note "(f) four ranks, rank 2 killed; the others read through the PFS"
NP=4
job_start f "cache_dir=NV,seed=5,peer_timeout=1500" "${MPI_KEEP_GOING[@]}"
kill_rank f 2
read_shares f 1 all 0 1 3
wait_all
check_shares f 0 1 3
survived f 0 1 3

note "(k) sixteen ranks, rank 5 killed in the middle of epoch 1"
NP=16
job_start k "cache_dir=NV,seed=5,peer_timeout=1500" "${MPI_KEEP_GOING[@]}"
LIVE=$(seq 0 15 | grep -vx 5)
# Mid-epoch whatever the machine's speed: every live rank has read the
# first half of its share, and reads the rest after the kill.
read_shares k 1 head $LIVE
wait_all 300
kill_rank k 5
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
survived k $LIVE
finish
