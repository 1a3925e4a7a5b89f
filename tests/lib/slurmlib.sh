# A private one-node Slurm cluster for the Slurm tests (tests/slurm/).
# Source it after lib.sh and mount_setup, then call slurm_require and
# slurm_start. Everything lives in $T/slurm: munged with its own key and
# socket, slurmctld and slurmd on free ports, with their own state, spool,
# logs and slurm.conf (exported as SLURM_CONF, which sbatch, srun, squeue,
# scancel and scontrol read, and which every job inherits). System
# services are neither used nor touched. At exit, also on failure: every
# job is cancelled, slurmd, slurmctld and munged are stopped, what their
# jobs left (dlfs daemons, mounts under $T, the cgroups slurmd made) is
# removed, then lib.sh's cleanup runs.
#
# The node is this host (hostname -s) with the CPUs and memory slurmd -C
# finds; jobs run as root; TaskPlugin is task/affinity (srun accepts
# --cpu-bind); ProctrackType is proctrack/cgroup where cgroup
# v1's freezer is mounted (what sites run: it ends every process of a
# job, also those that left its process group), else proctrack/linuxproc.
# KillWait=5 and OverTimeLimit=0 keep the jobs that are cancelled or run
# out of time short. SLURM_PROLOG / SLURM_EPILOG, if set before
# slurm_start, become Prolog= and Epilog=.

SLURM_BINS=(slurmctld slurmd sbatch srun squeue scancel scontrol sinfo munged mungekey)

# slurm_require: skip (77) unless root with the Slurm and munge binaries.
slurm_require() {
	[ "$(id -u)" = 0 ] || skip "needs root (slurmd runs the jobs as root here)"
	local b
	for b in "${SLURM_BINS[@]}"; do
		command -v "$b" >/dev/null ||
			skip "$b not found (Debian packages slurm-wlm and munge)"
	done
	SLURM_NODE=$(hostname -s)
	# A slurmd of this host's own cluster would share the cgroups of the
	# node's name (slurm_NODE) with ours.
	if pgrep -x slurmd >/dev/null; then
		fail "a slurmd is already running here (pid $(pgrep -x slurmd | tr '\n' ' ')): its job cgroups (slurm_$SLURM_NODE) would be shared with the test's; stop it to run this test"
	fi
}

# free_ports N: N free TCP ports on 127.0.0.1, one a line.
free_ports() {
	"$PYTHON" - "$1" <<'PY'
import socket, sys
s = [socket.socket() for _ in range(int(sys.argv[1]))]
for x in s:
    x.bind(("127.0.0.1", 0))
print("\n".join(str(x.getsockname()[1]) for x in s))
PY
}

SLURM_PIDS=()
_SLURM_CGROUPS=()

# slurm_start: write the configuration, start munged, slurmctld and
# slurmd, and wait (at most 60 s) until the node is idle.
slurm_start() {
	local S="$T/slurm" ports cg hw i
	mkdir -p "$S/munge" "$S/state" "$S/spool" "$S/log"
	# munged wants its socket's directory reachable by every user.
	chmod 711 "$T" "$S"
	chmod 755 "$S/munge"
	mungekey -c -k "$S/munge/key" || fail "mungekey failed"
	munged --foreground --socket="$S/munge/socket" --key-file="$S/munge/key" \
		--pid-file="$S/munge/pid" --seed-file="$S/munge/seed" \
		--log-file="$S/log/munged.log" >"$S/log/munged.out" 2>&1 &
	SLURM_PIDS+=($!)
	for ((i = 0; i < 300; i++)); do
		[ -S "$S/munge/socket" ] && break
		kill -0 "${SLURM_PIDS[0]}" 2>/dev/null || break
		sleep 0.1
	done
	[ -S "$S/munge/socket" ] || fail "munged did not start: $(cat "$S/log/munged.out")"

	mapfile -t ports < <(free_ports 2)
	hw=$(slurmd -C | sed -n 's/^NodeName=[^ ]* //p')
	[ -n "$hw" ] || fail "slurmd -C printed no node line"
	local proctrack=proctrack/cgroup
	if [ ! -d /sys/fs/cgroup/freezer ]; then
		proctrack=proctrack/linuxproc
		note "no cgroup v1 freezer at /sys/fs/cgroup/freezer: proctrack/linuxproc"
	fi
	# The cgroups slurmd makes, removed at exit unless they were here.
	for cg in /sys/fs/cgroup/*/; do
		[ -e "${cg}slurm_$SLURM_NODE" ] || _SLURM_CGROUPS+=("${cg}slurm_$SLURM_NODE")
	done
	cat >"$S/slurm.conf" <<EOF
ClusterName=dlfstest
SlurmctldHost=$SLURM_NODE(127.0.0.1)
SlurmctldPort=${ports[0]}
SlurmdPort=${ports[1]}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$S/munge/socket
StateSaveLocation=$S/state
SlurmdSpoolDir=$S/spool
SlurmctldPidFile=$S/slurmctld.pid
SlurmdPidFile=$S/slurmd.pid
SlurmctldLogFile=$S/log/slurmctld.log
SlurmdLogFile=$S/log/slurmd.log
SlurmctldDebug=${SLURM_DEBUG_LEVEL:-info}
SlurmdDebug=${SLURM_DEBUG_LEVEL:-info}
MailProg=/bin/true
ProctrackType=$proctrack
TaskPlugin=task/affinity
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
ReturnToService=2
KillWait=5
OverTimeLimit=0
InactiveLimit=0
MinJobAge=600
${SLURM_PROLOG:+Prolog=$SLURM_PROLOG}
${SLURM_EPILOG:+Epilog=$SLURM_EPILOG}
NodeName=$SLURM_NODE $hw NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=test Nodes=$SLURM_NODE Default=YES MaxTime=INFINITE State=UP
EOF
	cat >"$S/cgroup.conf" <<EOF
CgroupPlugin=cgroup/v1
CgroupMountpoint=/sys/fs/cgroup
EOF
	export SLURM_CONF="$S/slurm.conf"
	slurmctld -D -i -f "$SLURM_CONF" </dev/null >"$S/log/slurmctld.out" 2>&1 &
	SLURM_PIDS+=($!)
	slurmd -D -f "$SLURM_CONF" -N "$SLURM_NODE" </dev/null >"$S/log/slurmd.out" 2>&1 &
	SLURM_PIDS+=($!)
	for ((i = 0; i < 600; i++)); do
		[ "$(sinfo -h -o %t 2>/dev/null)" = idle ] && return 0
		for cg in "${SLURM_PIDS[@]}"; do
			kill -0 "$cg" 2>/dev/null || slurm_fail "a Slurm daemon exited at start"
		done
		sleep 0.1
	done
	slurm_fail "the node is not idle after 60 s: $(sinfo -h 2>&1)"
}

# slurm_fail MSG: fail, showing the end of the Slurm daemons' logs.
slurm_fail() {
	local f
	for f in "$T"/slurm/log/*.out; do
		echo "--- $f (last 15 lines):" >&2
		tail -n 15 "$f" >&2
	done
	fail "$@"
}

# job_submit ARGS...: sbatch --parsable ARGS; prints the job id.
job_submit() {
	local id
	id=$(sbatch --parsable "$@") || slurm_fail "sbatch $* failed"
	echo "$id"
}

# job_field ID FIELD: one field of `scontrol show job ID` (JobState, ...).
job_field() {
	scontrol -o show job "$1" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$2=//p"
}

# job_wait_state ID SECS STATE...: wait until the job's state is one of
# STATEs and no longer completing (its epilog has run); fail after SECS.
job_wait_state() {
	local id=$1 secs=$2 i st
	shift 2
	for ((i = 0; i < secs * 5; i++)); do
		st=$(job_field "$id" JobState)
		if [ -z "$(squeue -h -j "$id" -t CG 2>/dev/null)" ]; then
			for s in "$@"; do
				[ "$st" != "$s" ] || return 0
			done
		fi
		sleep 0.2
	done
	job_show "$id"
	slurm_fail "job $id is $st after $secs s, expected $*"
}

# job_wait_file ID FILE SECS: wait until FILE exists; fail if the job
# ends first or after SECS.
job_wait_file() {
	local i
	for ((i = 0; i < $3 * 5; i++)); do
		[ ! -e "$2" ] || return 0
		case $(job_field "$1" JobState) in
		PENDING | RUNNING) ;;
		*) job_show "$1"; fail "job $1 ended before $2 appeared" ;;
		esac
		sleep 0.2
	done
	job_show "$1"
	fail "no $2 after $3 s (job $1)"
}

# job_show ID: the job's record and its output ($T/job-ID.out).
job_show() {
	echo "--- scontrol show job $1:" >&2
	scontrol show job "$1" >&2 2>&1
	echo "--- output of job $1:" >&2
	cat "$T/job-$1.out" >&2 2>/dev/null
}

# The pids of dlfs daemons whose environment says job $1 (any of this
# cluster's jobs with no $1).
job_daemons() {
	local p want=${1:+SLURM_JOB_ID=$1}
	for p in /proc/[0-9]*; do
		[ "$(cat "$p/comm" 2>/dev/null)" = dlfs ] || continue
		tr '\0' '\n' 2>/dev/null <"$p/environ" |
			grep -qx "${want:-SLURM_CONF=$SLURM_CONF}" && echo "${p#/proc/}"
	done
	return 0
}

# dlfs_mounts_under DIR: the dlfs mounts (live or dead) under DIR.
dlfs_mounts_under() {
	{ findmnt -rn -t fuse.dlfs -o TARGET || true; } |
		awk -v d="$1/" 'index($0, d) == 1'
}

_slurm_cleanup() {
	local rc=$? i p m
	set +e
	if [ -n "${SLURM_CONF:-}" ] && [ "${#SLURM_PIDS[@]}" -gt 2 ]; then
		scancel --quiet --full $(squeue -h -o %i 2>/dev/null) 2>/dev/null
		for ((i = 0; i < 150; i++)); do
			[ -n "$(squeue -h 2>/dev/null)" ] || break
			sleep 0.2
		done
	fi
	for ((i = ${#SLURM_PIDS[@]} - 1; i >= 0; i--)); do
		p=${SLURM_PIDS[i]}
		kill -TERM "$p" 2>/dev/null || continue
		wait_exit "$p" 20
		[ "$WAIT_RC" != timeout ] || kill -KILL "$p" 2>/dev/null
	done
	# What a failed run may have left: daemons and step daemons of this
	# cluster (their environment names its slurm.conf), then mounts.
	if [ -n "${SLURM_CONF:-}" ]; then
		for p in /proc/[0-9]*; do
			tr '\0' '\n' 2>/dev/null <"$p/environ" |
				grep -qx "SLURM_CONF=$SLURM_CONF" || continue
			[ "${p#/proc/}" != $$ ] && kill -KILL "${p#/proc/}" 2>/dev/null
		done
	fi
	for m in $(findmnt -rn -o TARGET | awk -v d="$T/" 'index($0, d) == 1' | sort -r); do
		umount -l "$m" 2>/dev/null
	done
	for m in "${_SLURM_CGROUPS[@]}"; do
		[ -d "$m" ] && find "$m" -depth -type d -exec rmdir {} + 2>/dev/null
	done
	(exit "$rc")
	_mount_cleanup
}
