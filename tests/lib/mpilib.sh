# Helpers for the MPI mount tests: jobs of NP ranks, one dlfs each, over
# the dataset $DS. Source it after lib.sh and mount_setup, then call
# mpi_require; set DS and NP before starting a job.

MPIRUN=(mpirun --allow-run-as-root --oversubscribe --bind-to none)

# mpi_require: skip (77) unless dlfs was built with MPI and mpirun is here.
mpi_require() {
	[ "${DLFS_MPI_BUILT:-1}" = 1 ] ||
		skip "dlfs was built without MPI (package libopenmpi-dev; tools/check sets the build up again once it is installed)"
	command -v mpirun >/dev/null || skip "mpirun not found (package openmpi-bin)"
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

# job_start TAG OPTS [MPIRUN ARGS...]: start an NP-rank job whose ranks mount
# $T/TAG-mntR (cache dir $T/TAG-nvR when OPTS has cache_dir=NV, replaced);
# wait until every rank's .dlfs/info says it is rank R of NP (at most
# 120 s each: 16 daemons may share 2 busy cores).
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