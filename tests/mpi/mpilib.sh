# Helpers for the MPI mount tests: jobs of NP ranks, one dlfs each, over
# the dataset $DS, with mpirun as in ${MPIRUN[@]}. Source it after lib.sh
# and mount_setup, with DS, NP and MPIRUN set.

# The readers started in the background (never the job itself: a bare
# `wait` would wait for mpirun). Each must finish within 120 s.
PIDS=()
wait_all() {
	local p
	for p in "${PIDS[@]}"; do
		wait_exit "$p" 120
		[ "$WAIT_RC" != timeout ] || fail "a reader hung for 120 s"
		[ "$WAIT_RC" = 0 ] || soft_fail "a reader failed with status $WAIT_RC"
	done
	PIDS=()
}

# job_start TAG OPTS [MPIRUN ARGS...]: start a 4-rank job whose ranks mount
# $T/TAG-mntR (cache dir $T/TAG-nvR when OPTS has cache_dir=NV, replaced);
# wait until every rank's .dlfs/info says it is rank R of 4.
JOB_PID=
job_start() {
	local tag=$1 opts=$2 r i
	shift 2
	cat >"$T/$tag.sh" <<EOF
#!/bin/sh
R=\$OMPI_COMM_WORLD_RANK
exec "$DLFS" "$DS" "$T/$tag-mnt\$R" -f -o "\$(echo '$opts' | sed "s|NV|$T/$tag-nv\$R|")" >"$T/$tag-log\$R" 2>&1
EOF
	chmod +x "$T/$tag.sh"
	for ((r = 0; r < NP; r++)); do
		mkdir -p "$T/$tag-mnt$r"
		track_mount "$T/$tag-mnt$r" "" "$T/$tag-log$r"
	done
	"${MPIRUN[@]}" "$@" -np $NP "$T/$tag.sh" </dev/null >"$T/$tag-mpirun.log" 2>&1 &
	JOB_PID=$!
	_DLFS_PIDS+=("$JOB_PID")
	for ((r = 0; r < NP; r++)); do
		for ((i = 0; i < 300; i++)); do
			if timeout 5 grep -q "\"rank\": $r, \"ranks\": $NP" "$T/$tag-mnt$r/.dlfs/info" 2>/dev/null; then
				break
			fi
			kill -0 "$JOB_PID" 2>/dev/null || { cat "$T/$tag-mpirun.log" "$T/$tag-log"* >&2; fail "$tag: the job ended before rank $r was mounted"; }
			sleep 0.1
		done
		[ "$i" -lt 300 ] || { cat "$T/$tag-log$r" >&2; fail "$tag: rank $r not ready after 30 s"; }
	done
}

# job_stop TAG [RANKS...]: fusermount3 -u the ranks' mounts, then mpirun
# must exit 0 within 60 s.
job_stop() {
	local tag=$1 r
	shift
	local ranks=("$@")
	[ ${#ranks[@]} -gt 0 ] || ranks=(0 1 2 3)
	for r in "${ranks[@]}"; do
		timeout 30 fusermount3 -u "$T/$tag-mnt$r" || soft_fail "$tag: fusermount3 -u rank $r failed"
	done
	wait_exit "$JOB_PID" 60
	[ "$WAIT_RC" = 0 ] || { cat "$T/$tag-mpirun.log" >&2; soft_fail "$tag: mpirun exited with status $WAIT_RC after the unmounts"; }
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
