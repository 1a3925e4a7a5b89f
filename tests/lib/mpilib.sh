# Helpers for the MPI tests: the launcher, and jobs of NP ranks, one dlfs
# each, over the dataset $DS. Source it after lib.sh and mount_setup, then
# call mpi_require; set DS and NP before starting a job.
#
# The build chose the launcher of the MPI it found (tests/meson.build):
#   DLFS_MPI_FAMILY  openmpi or mpich (MPICH and its kin); empty: no MPI
#   DLFS_MPIEXEC     that MPI's launcher (mpirun.openmpi, mpiexec.hydra),
#                    or empty, and then
#   DLFS_MPI_SKIP    why there is none
# mpi_require sets, from the family:
#   MPIRUN          the launcher with its options for this machine: four
#                   or sixteen ranks on two cores, as root, unbound
#   MPI_RANK_VAR    the variable that holds a rank's number there
#   MPI_KEEP_GOING  the options that keep a job going when a rank dies
#                   (by default either launcher ends the whole job)
#   MPI_RANK_DIES   a command for a rank that dies before it joins, in a
#                   way the launcher lets the others go on past (with
#                   MPI_KEEP_GOING)
#   MPI_SRUN        the srun --mpi plug-in this MPI speaks, and
#   MPI_SRUN_NOT    one it does not (Debian's Open MPI is built for PMIx,
#                   its MPICH for PMI)

# mpi_require: skip (77), saying why, unless the build has MPI and its
# launcher; then set MPIRUN and the others above.
mpi_require() {
	[ -n "${DLFS_MPIEXEC:-}" ] ||
		skip "${DLFS_MPI_SKIP:-no MPI launcher given: run it with meson test, which gives the launcher of the build (DLFS_MPIEXEC, DLFS_MPI_FAMILY)}"
	[ -x "$DLFS_MPIEXEC" ] || skip "the build's MPI launcher $DLFS_MPIEXEC is gone (set the build up again)"
	case ${DLFS_MPI_FAMILY:-} in
	openmpi)
		MPIRUN=("$DLFS_MPIEXEC" --allow-run-as-root --oversubscribe --bind-to none)
		MPI_RANK_VAR=OMPI_COMM_WORLD_RANK
		MPI_KEEP_GOING=(--enable-recovery)
		MPI_RANK_DIES=(sh -c 'kill -KILL $$')
		MPI_SRUN=pmix MPI_SRUN_NOT=pmi2
		;;
	mpich)
		# hydra: root and more ranks than cores need nothing; it
		# binds nothing unless told to.
		MPIRUN=("$DLFS_MPIEXEC")
		MPI_RANK_VAR=PMI_RANK
		MPI_KEEP_GOING=(-disable-auto-cleanup)
		# hydra (4.0.2) ends the job when a signal kills a rank,
		# -disable-auto-cleanup or not; past a rank that exits it
		# goes on (and sends the others SIGUSR1).
		MPI_RANK_DIES=(sh -c 'exit 1')
		MPI_SRUN=pmi2 MPI_SRUN_NOT=pmix
		;;
	*) skip "no options known for the launcher of an MPI of family '${DLFS_MPI_FAMILY:-}' ($DLFS_MPIEXEC)" ;;
	esac
}

# mpi_traced_pack: writes $T/rank.sh, which runs dlfs-pack with its
# arguments, under strace when there is one, so a test sees which files
# each rank opens: its openat calls, every thread's, go to $T/trace.RANK,
# each line led by the thread's id (the first line's is dlfs-pack's own
# thread). Call it after mpi_require.
mpi_traced_pack() {
	cat >"$T/rank.sh" <<RANK_SH
#!/bin/sh
R=\$$MPI_RANK_VAR
if command -v strace >/dev/null; then
	exec strace -f -qq -e trace=openat -o "$T/trace.\$R" "$DLFS_PACK" "\$@"
fi
exec "$DLFS_PACK" "\$@"
RANK_SH
	chmod +x "$T/rank.sh"
}

# mpi_require_survival: skip (77), saying why, unless the build's MPI lets
# the live ranks of a job go on (with MPI_KEEP_GOING) when one is killed.
# Open MPI does (mpirun --enable-recovery; srun --no-kill). Debian's MPICH
# 4.0.2 (ch4:ucx) does not: a rank SIGKILLed ends its job under hydra: by
# default hydra stops the others; with -disable-auto-cleanup its proxy
# fails writing to the dead rank (broken pipe), or, with
# MPIR_CVAR_ENABLE_FT=1, the live ranks abort in MPI_Test (an assertion
# in ch4_request.h).
mpi_require_survival() {
	case $DLFS_MPI_FAMILY in
	openmpi) ;;
	mpich) skip "MPICH (Debian's 4.0.2, ch4:ucx, under hydra) ends the whole job when a rank is killed: the live ranks cannot go on past a dead one (lib/mpilib.sh)" ;;
	*) skip "not known whether an MPI of family '$DLFS_MPI_FAMILY' lets a job go on past a dead rank" ;;
	esac
}

# mpi_tree GENTREE_ARGS... -- PACK_ARGS...: $SRC ($T/src), the tree that
# `gentree.py classes` makes with GENTREE_ARGS (K directories of N random
# files, lib/gentree.py), packed into $DS ($T/ds.dlfs) with PACK_ARGS.
mpi_tree() {
	local gen=()
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		gen+=("$1")
		shift
	done
	[ $# -eq 0 ] || shift
	SRC="$T/src"
	DS="$T/ds.dlfs"
	gentree classes "$SRC" "${gen[@]}"
	pack "$SRC" -o "$DS" "$@" -q
	expect_ok "pack $*"
}

# sixteen_dirs: $SRC, 16 directories of 40 random files (500 B to 40 KB),
# packed into $DS (chunks of 64K, containers of 1M): for jobs of up to
# sixteen ranks (mpi16.sh, mpi_fault.sh).
sixteen_dirs() {
	mpi_tree --seed 16 --dirs 16 --files 40 --dir c%02d --ext .bin \
		-- --chunk-size 64K --container-size 1M
}

# read_shares TAG EPOCH PART RANKS...: each rank reads its share of EPOCH
# through samples/ in the background, all of it (PART all), its first 20
# files (head) or the others (tail, appended); then check_shares compares
# the bytes with the files of its list ($SRC/...), in order.
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

# The readers started in the background (never the job itself: a bare
# `wait` would wait for mpirun). wait_all [SECS]: each must finish within
# SECS (default 120).
PIDS=()
wait_all() {
	local p secs=${1:-120}
	for p in "${PIDS[@]}"; do
		wait_exit "$p" "$secs"
		[ "$WAIT_RC" != timeout ] || fail "a reader hung for $secs s"
		[ "$WAIT_RC" = 0 ] || soft_fail "a reader failed with status $WAIT_RC"
	done
	PIDS=()
}

# job_start TAG OPTS [MPIRUN ARGS...]: start an NP-rank job (MPIRUN -n NP,
# each rank's number in $MPI_RANK_VAR: srun's too) whose ranks mount
# $T/TAG-mntR (cache dir $T/TAG-nvR when OPTS has cache_dir=NV, replaced);
# wait until every rank's .dlfs/info says it is rank R of NP (at most
# 120 s each: 16 daemons may share 2 busy cores).
JOB_PID=
job_start() {
	local tag=$1 opts=$2 r i
	shift 2
	cat >"$T/$tag.sh" <<EOF
#!/bin/sh
R=\$$MPI_RANK_VAR
exec "$DLFS" "$DS" "$T/$tag-mnt\$R" -f -o "\$(echo '$opts' | sed "s|NV|$T/$tag-nv\$R|")" >"$T/$tag-log\$R" 2>&1
EOF
	chmod +x "$T/$tag.sh"
	for ((r = 0; r < NP; r++)); do
		mkdir -p "$T/$tag-mnt$r"
		track_mount "$T/$tag-mnt$r" "" "$T/$tag-log$r"
	done
	"${MPIRUN[@]}" "$@" -n $NP "$T/$tag.sh" </dev/null >"$T/$tag-mpirun.log" 2>&1 &
	JOB_PID=$!
	_DLFS_PIDS+=("$JOB_PID")
	for ((r = 0; r < NP; r++)); do
		for ((i = 0; i < 1200; i++)); do
			if timeout 5 grep -q "\"rank\": $r, \"ranks\": $NP" "$T/$tag-mnt$r/.dlfs/info" 2>/dev/null; then
				break
			fi
			kill -0 "$JOB_PID" 2>/dev/null || { cat "$T/$tag-mpirun.log" "$T/$tag-log"* >&2; fail "$tag: the job ended before rank $r was mounted"; }
			sleep 0.1
		done
		[ "$i" -lt 1200 ] || { cat "$T/$tag-log$r" >&2; fail "$tag: rank $r not ready after 120 s"; }
	done
}

# job_stop TAG [RANKS...]: fusermount3 -u the ranks' mounts (all NP by
# default; JOB_STOP_GAP seconds apart when set), then mpirun must exit 0
# within 60 s.
job_stop() {
	local tag=$1 r
	shift
	local ranks=("$@")
	[ ${#ranks[@]} -gt 0 ] || mapfile -t ranks < <(seq 0 $((NP - 1)))
	for r in "${ranks[@]}"; do
		timeout 30 fusermount3 -u "$T/$tag-mnt$r" || soft_fail "$tag: fusermount3 -u rank $r failed"
		[ -z "${JOB_STOP_GAP:-}" ] || sleep "$JOB_STOP_GAP"
	done
	wait_exit "$JOB_PID" 60
	[ "$WAIT_RC" = 0 ] || { cat "$T/$tag-mpirun.log" >&2; soft_fail "$tag: the launcher exited with status $WAIT_RC after the unmounts"; }
}

stat_sum() { # TAG KEY RANKS...: the sum of one stats key over ranks
	local tag=$1 key=$2
	shift 2
	"$PYTHON" - "$key" "$@" <<PY
import json, sys
key, ranks = sys.argv[1], sys.argv[2:]
tot = 0
for r in ranks:
    d = json.load(open("$T/$tag-mnt%s/.dlfs/stats" % r))
    for k in key.split("."):
        d = d[k]
    tot += d
print(tot)
PY
}


# stage_check TAG: with stage=all, wait (at most 120 s) until every rank's
# staging is done and its NVMe tier holds every chunk; then the PFS bytes
# summed over the ranks must be the data once (within one chunk per rank:
# a chunk two ranks missed at once). Needs CS (the chunk size).
stage_check() {
	"$PYTHON" - "$T" "$1" "$DS" "$CS" "$NP" <<'PY'
import json, os, struct, sys, time
t, tag, ds, cs, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
chunks = data = 0
for f in os.listdir(ds):
    if f.endswith(".dlc"):
        size = struct.unpack_from("<QQQ", open(os.path.join(ds, f), "rb").read(64), 40)[2]
        chunks += (size + cs - 1) // cs
        data += size
end = time.time() + 120
while True:
    st = [json.load(open("%s/%s-mnt%d/.dlfs/stats" % (t, tag, r))) for r in range(n)]
    full = all(s["stage"]["done"] and s["tiers"]["nvme"]["chunks"] == chunks for s in st)
    if full or time.time() > end:
        break
    time.sleep(0.2)
pfs = sum(s["tiers"]["pfs"]["bytes"] for s in st)
print("  nvme chunks %r of %d; PFS bytes summed %d, data %d" %
      ([s["tiers"]["nvme"]["chunks"] for s in st], chunks, pfs, data), file=sys.stderr)
sys.exit(0 if full and data <= pfs <= data + n * cs else 1)
PY
}