#!/bin/bash
# slurm_mpi: dlfs launched by srun itself, with no mpirun, on a private
# one-node cluster (tests/lib/slurmlib.sh), in the srun --mpi plug-in the
# build's MPI speaks (lib/mpilib.sh: pmix for Debian's Open MPI, pmi2 for
# its MPICH), and in one it does not.
# (p) srun -n 2 dlfs-pack: one job of two ranks (rank 0 alone prints the
#     summary), whose dataset is byte for byte a lone process's.
# (m) srun -n 2 dlfs, each task its own mountpoint: each says it is rank
#     R of 2, both read the whole tree right, and between them chunks came
#     from a peer; after fusermount3 -u the step exits 0.
# (x) the other plug-in: dlfs-pack and dlfs fail and no dataset is made.
#     An MPI that starts each task as a job of one (MPICH under
#     --mpi=pmix) is refused by each task with one line naming srun, the
#     plug-in and the sizes, not run as N lone copies, and nothing is
#     left mounted. (Open MPI under --mpi=pmi2 ends the process inside
#     MPI_Init, with _exit: the daemon, which mounts before it joins,
#     leaves a dead mount, which its next mount there or the Slurm
#     epilog clears.)
# Skips (77) without MPI, root, Slurm or munge.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"
mount_setup
. "$LIB_DIR/mpilib.sh"
mpi_require
. "$LIB_DIR/slurmlib.sh"
slurm_require
trap _slurm_cleanup EXIT

SRC="$T/src"
"$PYTHON" - "$SRC" <<'PY'
import os, random, sys
r = random.Random(29)
d = sys.argv[1]
for k in range(4):
    os.makedirs(os.path.join(d, "d%d" % k))
    for i in range(30):
        open(os.path.join(d, "d%d/f%02d" % (k, i)), "wb").write(r.randbytes(r.randrange(100, 30000)))
PY
pack "$SRC" -o "$T/one.dlfs" --chunk-size 64K --container-size 256K -q
expect_ok "pack with one process"
slurm_start

note "(p) srun -n 2 --mpi=$MPI_SRUN dlfs-pack"
run srun -n 2 --mpi="$MPI_SRUN" "$DLFS_PACK" "$SRC" -o "$T/two.dlfs" --chunk-size 64K --container-size 256K
expect_ok "srun --mpi=$MPI_SRUN dlfs-pack"
[ "$(grep -c '^dlfs-pack: wrote ' "$T/err")" = 1 ] || { _show; fail "(p) expected one summary, from rank 0 of one job"; }
for f in $(ls "$T/one.dlfs"); do
	cmp "$T/one.dlfs/$f" "$T/two.dlfs/$f" >&2 || fail "(p) $f differs between one process and srun's two"
done

note "(m) srun -n 2 --mpi=$MPI_SRUN dlfs"
DS="$T/one.dlfs"
NP=2
MPIRUN=(srun --mpi="$MPI_SRUN")
MPI_RANK_VAR=SLURM_PROCID
job_start m "cache_dir=NV"
for r in 0 1; do
	tmo diff -r "$SRC" "$T/m-mnt$r" >&2 || fail "(m) rank $r reads another tree"
done
HITS=$(stat_sum m peer.hits 0 1)
[ "$HITS" -gt 0 ] || fail "(m) no chunk came from a peer"
job_stop m
for r in 0 1; do check_log "$T/m-log$r"; done

note "(x) srun --mpi=$MPI_SRUN_NOT, which this MPI does not speak"
run srun -n 2 --mpi="$MPI_SRUN_NOT" "$DLFS_PACK" "$SRC" -o "$T/bad.dlfs" -q
expect_fail "srun --mpi=$MPI_SRUN_NOT dlfs-pack"
assert_absent "$T/bad.dlfs" "(x) dlfs-pack under the wrong plug-in"
cp "$T/err" "$T/x-pack.err"
for r in 0 1; do
	mkdir "$T/x-mnt$r"
	track_mount "$T/x-mnt$r"
done
# Bounded: daemons that wrongly ran alone would stay mounted.
DLFS_TEST_TIMEOUT=60 run srun -n 2 --mpi="$MPI_SRUN_NOT" sh -c "exec \"$DLFS\" \"$DS\" \"$T/x-mnt\$SLURM_PROCID\" -f -o join_timeout=20"
expect_fail "srun --mpi=$MPI_SRUN_NOT dlfs"
if [ "$DLFS_MPI_FAMILY" = mpich ]; then
	for r in 0 1; do
		! is_mounted "$T/x-mnt$r" || fail "(x) rank $r left a mount"
	done
	want="srun --mpi=$MPI_SRUN_NOT started 2 processes (SLURM_STEP_NUM_TASKS=2), but MPI sees 1"
	[ "$(grep -cF "dlfs-pack: $want" "$T/x-pack.err")" = 2 ] || { cat "$T/x-pack.err" >&2; fail "(x) dlfs-pack: not refused by each task, naming srun and the sizes"; }
	[ "$(grep -cF "dlfs: MPI: $want" "$T/err")" = 2 ] || { _show; fail "(x) dlfs: not refused by each task, naming srun and the sizes"; }
fi
exit 0
