#!/bin/bash
# slurm: dlfs in Slurm batch jobs, on a real one-node cluster of Debian's
# slurm-wlm (tests/lib/slurmlib.sh: private munged, slurmctld, slurmd;
# proctrack/cgroup, task/affinity), with the shipped recipe
# (tools/slurm/dlfs-slurm.sh, sourced by the job scripts) and the shipped
# prolog and epilog (tools/slurm/dlfs-prolog, dlfs-epilog, which slurmd
# runs). Each job mounts a dataset of 300 images with dlfs_slurm_mount
# and reads it with a PyTorch DataLoader (loader.py, in an srun step: the
# daemons' step must not hold the job's CPU), comparing every byte with
# the source.
#   (a) the prolog alone, outside Slurm: it makes the job's directory
#       for the job's user, mode 0700, and replaces a symlink already
#       there without touching its target. The epilog alone: with
#       nothing left it says and does nothing; the daemon of "job 9001"
#       (SLURM_JOB_ID in its environment) and its mount under the job's
#       directory are stopped and removed while "job 9002"'s stay and
#       read right; then 9002's dead mount (daemon SIGKILLed) is removed.
#   (t) a job reads until Slurm ends it at its time limit; it runs
#       beside every job below (two jobs share the node), and holds the
#       NVMe tier of the cache_dir they all share. It is submitted with
#       --time=2; once the jobs below are done, its limit is brought down
#       to one minute (scontrol update, as an admin does), so Slurm ends
#       it at its next check of the limits instead of at two minutes.
#   (n) a job (a bash script; the others are /bin/sh) that ends
#       normally: exit 0; with the tier of the shared cache_dir held by
#       the other job, its mount runs without it (and says so) and reads
#       right.
#   (c) scancel while the loader reads.
#   (k) the daemon and then the script SIGKILLed (an OOM kill): only the
#       epilog is left to remove the dead mount, and does.
#   (e) a dataset that does not exist: dlfs_slurm_mount fails at once,
#       saying which node and why, and the mount made before it still
#       reads; the job's exit status is the script's.
# After each job: no dlfs mount under its directory (findmnt -t
# fuse.dlfs), no dlfs daemon of the job, its directory gone, the epilog
# had nothing to do except in (k), and the time-limit job's mount still
# reads right (while that job runs: a machine so slow that its limit
# comes first says the check was skipped). Skips (77) when not root or without Slurm, munge or torch.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
mount_setup
. "$LIB_DIR/slurmlib.sh"
slurm_require
need_py torch
trap _slurm_cleanup EXIT

RECIPE="$SRC_ROOT/tools/slurm/dlfs-slurm.sh"
PROLOG="$SRC_ROOT/tools/slurm/dlfs-prolog"
EPILOG="$SRC_ROOT/tools/slurm/dlfs-epilog"
LOADER="$HERE/loader.py"
: "${DLFS_DETACH:=$SRC_ROOT/build/tools/dlfs-detach}"
export DLFS_DETACH

SRC="$T/src"
mkdir "$SRC"
gentree images "$SRC" --count 300
DS="$T/ds.dlfs"
pack "$SRC" -o "$DS" --chunk-size 256K --container-size 2M -q
expect_ok "pack"
export DLFS_SLURM_BASE="$T/jobs" DLFS DLFS_SLURM_TIMEOUT=120
mkdir "$DLFS_SLURM_BASE"
NV="$T/nvme"

# jobdir_clean ID WHAT: nothing of job ID is left on the node.
jobdir_clean() {
	local m p
	m=$(dlfs_mounts_under "$DLFS_SLURM_BASE/dlfs-$1")
	[ -z "$m" ] || fail "$2: job $1 left dlfs mounts: $m"
	p=$(job_daemons "$1")
	[ -z "$p" ] || fail "$2: job $1 left dlfs daemons: $p"
	assert_absent "$DLFS_SLURM_BASE/dlfs-$1" "$2: the job's directory"
}

note "(a) the epilog alone"
run env SLURM_JOB_ID=9000 "$EPILOG"
expect_ok "epilog with nothing left"
[ ! -s "$T/err" ] || fail "the epilog with nothing left said: $(cat "$T/err")"
for j in 9001 9002; do
	mkdir -p "$DLFS_SLURM_BASE/dlfs-$j/data"
	SLURM_JOB_ID=$j dlfs_mount "$DS" "$DLFS_SLURM_BASE/dlfs-$j/data"
done
run env SLURM_JOB_ID=9001 "$EPILOG"
expect_ok "epilog of job 9001"
err_has "dlfs-epilog: job 9001: dlfs daemons still running:" "the epilog names the daemon it stops"
[ -z "$(job_daemons 9001)" ] || fail "the epilog left job 9001's daemon"
jobdir_clean 9001 "epilog of job 9001"
[ -n "$(job_daemons 9002)" ] || fail "the epilog of job 9001 stopped job 9002's daemon"
F1=$(cd "$SRC" && find . -type f -print -quit)
cmp "$SRC/$F1" "$DLFS_SLURM_BASE/dlfs-9002/data/$F1" ||
	fail "job 9002's mount does not read right after job 9001's epilog"
# A dead mount (its daemon SIGKILLed) is removed too.
kill -KILL "$DLFS_PID"
wait_exit "$DLFS_PID" 10
run env SLURM_JOB_ID=9002 "$EPILOG"
expect_ok "epilog of job 9002"
err_has "dlfs-epilog: job 9002: unmounted $DLFS_SLURM_BASE/dlfs-9002/data" \
	"the epilog removes a dead mount"
jobdir_clean 9002 "epilog of job 9002"

note "(a) the prolog alone"
B=$DLFS_SLURM_BASE
run env SLURM_JOB_ID=9003 SLURM_JOB_UID=65534 SLURM_JOB_GID=65534 "$PROLOG"
expect_ok "prolog"
[ ! -s "$T/err" ] || fail "the prolog said: $(cat "$T/err")"
[ "$(stat -c %u:%g:%a "$B/dlfs-9003")" = 65534:65534:700 ] ||
	fail "the prolog made $B/dlfs-9003 $(stat -c %u:%g:%a "$B/dlfs-9003"), expected 65534:65534:700"
# Taken before the job (a symlink another user left in a shared /tmp).
ln -s "$T" "$B/dlfs-9004"
run env SLURM_JOB_ID=9004 SLURM_JOB_UID=65534 "$PROLOG"
expect_ok "prolog over a symlink"
err_has "dlfs-prolog: job 9004: $B/dlfs-9004 was there before the job: replacing it" "the prolog says"
[ ! -L "$B/dlfs-9004" ] && [ "$(stat -c %u:%a "$B/dlfs-9004")" = 65534:700 ] ||
	fail "the prolog did not replace the symlink $B/dlfs-9004"
[ -d "$T/src" ] || fail "the prolog removed the symlink's target"
rm -r "$B/dlfs-9003" "$B/dlfs-9004"

# The prolog and epilog run by slurmd log to $T/prolog.log, epilog.log.
for s in prolog epilog; do
	cat >"$T/$s.sh" <<EOF
#!/bin/sh
DLFS_SLURM_BASE="$DLFS_SLURM_BASE" DLFS_DETACH="$DLFS_DETACH" "$SRC_ROOT/tools/slurm/dlfs-$s" 2>>"$T/$s.log"
EOF
	chmod +x "$T/$s.sh"
	: >"$T/$s.log"
done
SLURM_PROLOG="$T/prolog.sh" SLURM_EPILOG="$T/epilog.sh" slurm_start

# job_script TAG LOADER_ARGS [BEFORE_END]: a batch script, for /bin/sh
# (or $JOB_SHELL).
job_script() {
	cat >"$T/$1.sh" <<EOF
#!${JOB_SHELL:-/bin/sh}
set -e
. "$RECIPE"
cat /proc/self/cgroup >"$T/$1.cgroup"
dlfs_slurm_mount "$DS" data -o ram_cache=32M,cache_dir=$NV
echo "\$DLFS_MNT" >"$T/$1.mnt"
srun -n 1 "$PYTHON" "$LOADER" "$SRC" "\$DLFS_MNT" $2
${3:-}
EOF
}
submit() {
	job_submit -n 1 -o "$T/job-%j.out" "$@"
}
# tl_reads WHAT: the time-limit job's mount still reads right. Checked
# while that job runs: on a machine slow enough that its time limit comes
# first, the check is said to be skipped (the job's end is checked last).
TL_READS=0
tl_reads() {
	if [ "$(job_field "$TL" JobState)" != RUNNING ]; then
		note "$1: the time-limit job has ended already ($(job_field "$TL" JobState)); its mount's reads are not checked"
		return 0
	fi
	local st=0
	tmo "$PYTHON" "$LIB_DIR/readtree.py" "$SRC" "$(cat "$T/tl.mnt")" --slice 0:40 >/dev/null || st=$?
	if [ "$(job_field "$TL" JobState)" != RUNNING ]; then
		note "$1: the time-limit job reached its limit during the check; not counted"
		return 0
	fi
	[ "$st" = 0 ] || fail "$1: the time-limit job's mount reads: readtree.py exited with status $st"
	TL_READS=$((TL_READS + 1))
}
# epilog_quiet ID: the epilog had nothing to do for job ID.
epilog_quiet() {
	! grep -F "epilog: job $1:" "$T/epilog.log" ||
		fail "the epilog had to clean up after job $1 (above)"
}

note "(t) a job that runs out of time while reading"
job_script tl "--forever --started $T/tl.started"
TL=$(submit --time=2 "$T/tl.sh")
job_wait_file "$TL" "$T/tl.started" 120
grep -q "freezer:/slurm_$SLURM_NODE/" "$T/tl.cgroup" ||
	grep -q 'proctrack/linuxproc' "$SLURM_CONF" ||
	fail "the job is not in a Slurm cgroup: $(cat "$T/tl.cgroup")"
[ "$(stat -c %u:%a "$DLFS_SLURM_BASE/dlfs-$TL")" = 0:700 ] ||
	fail "the prolog's job directory is $(stat -c %u:%a "$DLFS_SLURM_BASE/dlfs-$TL"), expected 0:700"

note "(n) a job that ends normally, beside it"
JOB_SHELL=/bin/bash job_script n ""
N=$(submit "$T/n.sh")
job_wait_state "$N" 120 COMPLETED
[ "$(job_field "$N" ExitCode)" = 0:0 ] || { job_show "$N"; fail "job $N exit code $(job_field "$N" ExitCode)"; }
grep -q '^300 ' "$T/job-$N.out" || { job_show "$N"; fail "job $N's loader did not read 300 files"; }
grep -q 'in use by another dlfs mount of this dataset.*running without the NVMe tier' "$T/job-$N.out" ||
	{ job_show "$N"; fail "job $N: a second mount of the dataset in one cache_dir did not say it runs without the tier"; }
jobdir_clean "$N" "normal end"
epilog_quiet "$N"
tl_reads "after the normal job"

note "(c) scancel while reading"
job_script c "--forever --started $T/c.started"
C=$(submit "$T/c.sh")
job_wait_file "$C" "$T/c.started" 120
scancel "$C"
job_wait_state "$C" 60 CANCELLED
jobdir_clean "$C" "scancel"
epilog_quiet "$C"
tl_reads "after the cancelled job"

note "(k) the daemon and the script SIGKILLed"
job_script k "" 'd=$(for p in $(scontrol listpids "$SLURM_JOB_ID" | awk "NR > 1 { print \$1 }"); do
	[ "$(cat /proc/$p/comm 2>/dev/null)" = dlfs ] && echo $p; done)
[ -n "$d" ] || { echo "no dlfs in the job" >&2; exit 5; }
kill -KILL $d
while kill -0 $d 2>/dev/null; do sleep 0.1; done
stat -f "$DLFS_MNT" 2>"'"$T"'/k.dead" || true
kill -KILL $$'
K=$(submit "$T/k.sh")
job_wait_state "$K" 120 FAILED
grep -q 'Transport endpoint is not connected' "$T/k.dead" ||
	{ job_show "$K"; fail "job $K: the mount was not dead: $(cat "$T/k.dead")"; }
grep -qF "dlfs-epilog: job $K: unmounted $DLFS_SLURM_BASE/dlfs-$K/data" "$T/epilog.log" ||
	fail "the epilog did not remove job $K's dead mount: $(cat "$T/epilog.log")"
jobdir_clean "$K" "SIGKILL"
tl_reads "after the killed job"

note "(e) a dataset that does not exist"
cat >"$T/e.sh" <<EOF
#!/bin/sh
. "$RECIPE"
dlfs_slurm_mount "$DS" ok || exit 4
ok=\$DLFS_MNT
if dlfs_slurm_mount "$T/missing.dlfs" data; then
	exit 5
fi
cmp "$SRC/$F1" "\$ok/$F1" || exit 6
exit 3
EOF
E=$(submit "$T/e.sh")
job_wait_state "$E" 60 FAILED
[ "$(job_field "$E" ExitCode)" = 3:0 ] || { job_show "$E"; fail "job $E exit code $(job_field "$E" ExitCode), expected 3:0"; }
grep -q "dlfs-slurm: $SLURM_NODE: dlfs exited with status 1 before .*/data was ready" "$T/job-$E.out" ||
	{ job_show "$E"; fail "job $E: dlfs_slurm_mount did not say which node failed"; }
grep -q "$T/missing.dlfs" "$T/job-$E.out" ||
	{ job_show "$E"; fail "job $E: dlfs's own message is not in the job's output"; }
jobdir_clean "$E" "failed mount"
epilog_quiet "$E"

note "(t) its time limit down to one minute ($TL_READS checks of its mount ran while it lived)"
# On a machine so slow that its two minutes are over, it has ended (or
# is ending) already.
if ! scontrol update JobId="$TL" TimeLimit=1 2>"$T/err"; then
	[ "$(job_field "$TL" JobState)" != RUNNING ] ||
		slurm_fail "scontrol update JobId=$TL TimeLimit=1: $(cat "$T/err")"
	note "(t) the time-limit job had ended already: $(cat "$T/err")"
fi
job_wait_state "$TL" 210 TIMEOUT
jobdir_clean "$TL" "time limit"
epilog_quiet "$TL"
[ -z "$(dlfs_mounts_under "$T")" ] || fail "dlfs mounts left: $(dlfs_mounts_under "$T")"
[ -z "$(job_daemons)" ] || fail "dlfs daemons left: $(job_daemons)"
exit 0
