#!/bin/bash
# mpi_join: a rank that dies before it joins (here killed before
# MPI_Init, under mpirun --enable-recovery, which keeps the job going)
# leaves the other ranks waiting in MPI for ever (issue 11, item 17).
# With -o join_timeout=5 the live rank gives up after 5 s: one line that
# says why, exit status 1, nothing left mounted.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
mount_setup
[ "${DLFS_MPI_BUILT:-1}" = 1 ] ||
	skip "dlfs was built without MPI (package libopenmpi-dev; tools/check sets the build up again once it is installed)"
command -v mpirun >/dev/null || skip "mpirun not found (package openmpi-bin)"

mkdir -p "$T/src"
echo data >"$T/src/f"
DS="$T/ds.dlfs"
pack "$T/src" -o "$DS" -q
expect_ok "pack"
MNT="$T/mnt0"
mkdir "$MNT"
track_mount "$MNT"

# Rank 0 runs dlfs and records its exit status; rank 1 dies at once.
st=0
timeout -k 10 90 mpirun --allow-run-as-root --oversubscribe --bind-to none \
	--enable-recovery \
	-np 1 sh -c '"$1" "$2" "$3" -f -o join_timeout=5 >"$4" 2>&1; echo $? >"$5"' \
	sh "$DLFS" "$DS" "$MNT" "$T/rank0.log" "$T/rank0.rc" \
	: -np 1 sh -c 'kill -KILL $$' </dev/null >"$T/mpirun.log" 2>&1 || st=$?
[ "$st" != 124 ] && [ "$st" != 137 ] ||
	fail "the job hung for 90 s: the live rank never gave up (log: $(cat "$T/rank0.log"))"
[ -f "$T/rank0.rc" ] || fail "rank 0 did not exit (mpirun status $st): $(tail -5 "$T/mpirun.log")"
[ "$(cat "$T/rank0.rc")" = 1 ] || fail "rank 0 exited with $(cat "$T/rank0.rc"), want 1: $(cat "$T/rank0.log")"
grep -q "MPI: not every rank joined the job within 5 s" "$T/rank0.log" ||
	fail "rank 0 did not say why it gave up: $(cat "$T/rank0.log")"
! is_mounted "$MNT" || fail "$MNT is still mounted after rank 0 gave up"
