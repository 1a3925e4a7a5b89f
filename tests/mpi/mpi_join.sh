#!/bin/bash
# mpi_join: a rank that dies before it joins (here before MPI_Init,
# killed under Open MPI, exiting 1 under hydra, the launcher told to keep
# the job going: lib/mpilib.sh) leaves the other ranks waiting in MPI for
# ever (issue 11, item 17; issue 23, item 7). With -o join_timeout=5 each
# of the two live ranks gives up after 5 s: one line that says why, exit
# status 1, nothing left mounted.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"
mount_setup
. "$LIB_DIR/mpilib.sh"
mpi_require

mkdir -p "$T/src"
echo data >"$T/src/f"
DS="$T/ds.dlfs"
pack "$T/src" -o "$DS" -q
expect_ok "pack"
# Ranks 0 and 1 run dlfs, each with its own mountpoint, and record their
# exit status; rank 2 dies at once. Every live rank must give up.
for r in 0 1; do
	mkdir "$T/mnt$r"
	track_mount "$T/mnt$r"
done
cat >"$T/rank.sh" <<RANK
#!/bin/sh
# rank.sh DLFS DS DIR: this rank's daemon, its log and exit status in DIR.
# hydra tells the ranks left that one failed with SIGUSR1, sent to this
# shell: it must live to write the status.
trap : USR1
r=\$$MPI_RANK_VAR
"\$1" "\$2" "\$3/mnt\$r" -f -o join_timeout=5 >"\$3/rank\$r.log" 2>&1
echo \$? >"\$3/rank\$r.rc"
RANK
chmod +x "$T/rank.sh"
st=0
timeout -k 10 90 "${MPIRUN[@]}" "${MPI_KEEP_GOING[@]}" \
	-np 2 "$T/rank.sh" "$DLFS" "$DS" "$T" \
	: -np 1 "${MPI_RANK_DIES[@]}" </dev/null >"$T/mpirun.log" 2>&1 || st=$?
for r in 0 1; do
	[ "$st" != 124 ] && [ "$st" != 137 ] ||
		fail "the job hung for 90 s: the live ranks never gave up (rank $r log: $(cat "$T/rank$r.log" 2>/dev/null))"
	[ -f "$T/rank$r.rc" ] || fail "rank $r did not exit (launcher status $st): $(tail -5 "$T/mpirun.log")"
	[ "$(cat "$T/rank$r.rc")" = 1 ] || fail "rank $r exited with $(cat "$T/rank$r.rc"), want 1: $(cat "$T/rank$r.log")"
	grep -q "MPI: not every rank joined the job within 5 s" "$T/rank$r.log" ||
		fail "rank $r did not say why it gave up: $(cat "$T/rank$r.log")"
	! is_mounted "$T/mnt$r" || fail "$T/mnt$r is still mounted after rank $r gave up"
done
