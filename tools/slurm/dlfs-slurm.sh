# dlfs-slurm.sh: mount dlfs datasets from a Slurm batch script.
# POSIX sh; source it, do not run it. See dlfs-slurm(7).
#
#   . /usr/local/share/dlfs/slurm/dlfs-slurm.sh
#   dlfs_slurm_mount /lustre/ds/imagenet.dlfs imagenet -o cache_dir=/nvme/$USER/dlfs
#   srun python train.py --data "$DLFS_MNT/train"
#
# dlfs_slurm_mount DATASET NAME [DLFS OPTIONS...]
#   On every node of the job, one `dlfs DATASET DIR/NAME -f OPTIONS` in a
#   background step (srun --overlap, one task a node, so the job's own
#   steps keep every CPU); then waits until every node's mount is ready
#   (.dlfs/info says the job's number of ranks), at most
#   DLFS_SLURM_TIMEOUT seconds (300). Sets DLFS_MNT to DIR/NAME and
#   returns 0; or says which node failed and why, stops the daemons and
#   returns 1 (2 for bad arguments). The first call sets the EXIT trap
#   (and INT, TERM, HUP traps that exit) that unmounts everything.
# dlfs_slurm_umount
#   Unmounts every NAME on every node and waits for the daemons to exit
#   (at most DLFS_SLURM_TIMEOUT seconds, then SIGTERM, then SIGKILL). A
#   script with its own EXIT trap calls it from there.
#
# DIR is DLFS_SLURM_BASE/dlfs-$SLURM_JOB_ID on each node (DLFS_SLURM_BASE
# defaults to /tmp; it must match the admins' prolog and epilog). DLFS
# names the daemon (default: dlfs, from PATH); DLFS_SLURM_SRUN_ARGS adds
# options to the daemon's srun (e.g. --mpi=pmix).
#
# On scancel or a time limit, Slurm sends SIGTERM to the task of every
# step: the daemons' task passes it on to its daemon, which unmounts its
# node and exits, with no new step needed (the job is ending and could
# not start one). A daemon still there after KillWait is killed; the
# epilog then removes its dead mount.

_dlfs_slurm_names=
_dlfs_slurm_pids=
_dlfs_slurm_sig=
_dlfs_slurm_trapped=

_dlfs_slurm_say() {
	echo "dlfs-slurm: $*" >&2
}

# One task a node, sharing the job's CPUs and memory with its other steps
# (--overlap), not bound to one CPU.
_dlfs_slurm_srun() {
	# shellcheck disable=SC2086 # DLFS_SLURM_SRUN_ARGS is a list of words
	srun --quiet --overlap --cpu-bind=none -N "$_dlfs_slurm_nn" -n "$_dlfs_slurm_nn" \
		--ntasks-per-node=1 ${DLFS_SLURM_SRUN_ARGS:-} "$@"
}

# The daemon's task on each node: DIR NAME DLFS DATASET MNT ARGS...
# DIR must be this user's own directory (the prolog makes it; a
# directory of another user there is refused, never used). The daemon's
# exit status goes to DIR/.NAME.status for the wait below.
_dlfs_slurm_task='
dir=$1 name=$2
shift 2
umask 077
host=$(hostname -s)
if ! mkdir -m 700 "$dir" 2>/dev/null; then
	if [ -L "$dir" ] || [ ! -d "$dir" ] ||
	   [ "$(stat -c %u "$dir")" != "$(id -u)" ]; then
		echo "dlfs-slurm: $host: $dir is not a directory of this user: refusing to mount there" >&2
		exit 1
	fi
fi
rm -f "$dir/.$name.status"
if ! mkdir "$dir/$name" 2>/dev/null && [ ! -d "$dir/$name" ]; then
	echo "dlfs-slurm: $host: cannot make the mountpoint $dir/$name" >&2
	echo 1 >"$dir/.$name.status"
	exit 1
fi
# Slurm sends the SIGTERM of scancel and of a time limit to the task
# (this shell) alone, and SIGKILL to all once the task has exited: pass
# the signal on to the daemon, which unmounts, and outlive it.
trap "kill -TERM \$pid 2>/dev/null" HUP INT TERM
"$@" &
pid=$!
while :; do
	wait $pid
	st=$?
	kill -0 $pid 2>/dev/null || break
done
echo $st >"$dir/.$name.status"
# A clean unmount: nothing of this mount is left for the epilog.
[ $st != 0 ] || { rm -f "$dir/.$name.status"; rmdir "$dir/$name"; } 2>/dev/null
exit $st
'

# The wait on each node: MNT CTL RANKS STATUS SECONDS. Reads of the
# control file are bounded: under MPI a mount answers only once its node
# has joined the job.
_dlfs_slurm_wait='
mnt=$1 ctl=$2 n=$3 status=$4
end=$(($(date +%s) + $5))
host=$(hostname -s)
while :; do
	if timeout 5 cat "$mnt/$ctl/info" 2>/dev/null |
	   grep -Eq "\"ranks\": $n([^0-9]|\$)"; then
		exit 0
	fi
	if [ -e "$status" ]; then
		echo "dlfs-slurm: $host: dlfs exited with status $(cat "$status") before $mnt was ready (its messages are above)" >&2
		exit 1
	fi
	if [ "$(date +%s)" -ge "$end" ]; then
		echo "dlfs-slurm: $host: $mnt not ready after $5 s" >&2
		exit 1
	fi
	sleep 0.2
done
'

dlfs_slurm_mount() {
	if [ $# -lt 2 ]; then
		_dlfs_slurm_say "usage: dlfs_slurm_mount DATASET NAME [dlfs options...]"
		return 2
	fi
	if [ -z "${SLURM_JOB_ID:-}" ]; then
		_dlfs_slurm_say "not inside a Slurm job (SLURM_JOB_ID is not set)"
		return 2
	fi
	_dlfs_slurm_ds=$1 _dlfs_slurm_name=$2
	shift 2
	case $_dlfs_slurm_name in
	'' | . | .. | *[!A-Za-z0-9._-]*)
		_dlfs_slurm_say "NAME '$_dlfs_slurm_name': use letters, digits, '.', '_' and '-'"
		return 2
		;;
	esac
	case " $_dlfs_slurm_names " in
	*" $_dlfs_slurm_name "*)
		_dlfs_slurm_say "$_dlfs_slurm_name is already mounted by this job"
		return 2
		;;
	esac
	case $_dlfs_slurm_ds in
	/*) ;;
	*) _dlfs_slurm_ds=$PWD/$_dlfs_slurm_ds ;;
	esac
	# The control directory, if -o ctl_dir=NAME renamed it.
	_dlfs_slurm_ctl=$(printf '%s\n' "$*" |
		sed -n 's/.*ctl_dir=\([^, ]*\).*/\1/p')
	: "${_dlfs_slurm_ctl:=.dlfs}"
	_dlfs_slurm_nn=${SLURM_JOB_NUM_NODES:-${SLURM_NNODES:-1}}
	_dlfs_slurm_tmo=${DLFS_SLURM_TIMEOUT:-300}
	DLFS_SLURM_DIR=${DLFS_SLURM_BASE:-/tmp}/dlfs-$SLURM_JOB_ID
	_dlfs_slurm_mnt=$DLFS_SLURM_DIR/$_dlfs_slurm_name
	_dlfs_slurm_status=$DLFS_SLURM_DIR/.$_dlfs_slurm_name.status

	if [ -z "$_dlfs_slurm_trapped" ]; then
		_dlfs_slurm_trapped=1
		trap dlfs_slurm_umount EXIT
		trap '_dlfs_slurm_sig=1; exit 129' HUP
		trap '_dlfs_slurm_sig=1; exit 130' INT
		trap '_dlfs_slurm_sig=1; exit 143' TERM
	fi
	_dlfs_slurm_srun --job-name="dlfs-$_dlfs_slurm_name" \
		sh -c "$_dlfs_slurm_task" dlfs-slurm "$DLFS_SLURM_DIR" \
		"$_dlfs_slurm_name" "${DLFS:-dlfs}" "$_dlfs_slurm_ds" \
		"$_dlfs_slurm_mnt" -f "$@" </dev/null &
	_dlfs_slurm_pid=$!

	_dlfs_slurm_srun --job-name="dlfs-wait-$_dlfs_slurm_name" \
		sh -c "$_dlfs_slurm_wait" dlfs-slurm-wait "$_dlfs_slurm_mnt" \
		"$_dlfs_slurm_ctl" "$_dlfs_slurm_nn" "$_dlfs_slurm_status" \
		"$_dlfs_slurm_tmo" </dev/null &
	_dlfs_slurm_wpid=$!
	# The daemons' step ending first (srun refused it, or every daemon
	# failed) is a failure: the waits get 10 s to say which node, then
	# are stopped.
	_dlfs_slurm_end=
	while kill -0 "$_dlfs_slurm_wpid" 2>/dev/null; do
		if [ -z "$_dlfs_slurm_end" ] &&
		   ! kill -0 "$_dlfs_slurm_pid" 2>/dev/null; then
			_dlfs_slurm_end=$(($(date +%s) + 10))
		fi
		if [ -n "$_dlfs_slurm_end" ] &&
		   [ "$(date +%s)" -ge "$_dlfs_slurm_end" ]; then
			kill "$_dlfs_slurm_wpid" 2>/dev/null || :
			break
		fi
		sleep 0.2
	done
	if wait "$_dlfs_slurm_wpid" && kill -0 "$_dlfs_slurm_pid" 2>/dev/null; then
		_dlfs_slurm_names="$_dlfs_slurm_names $_dlfs_slurm_name"
		_dlfs_slurm_pids="$_dlfs_slurm_pids $_dlfs_slurm_pid"
		DLFS_MNT=$_dlfs_slurm_mnt
		_dlfs_slurm_say "$_dlfs_slurm_ds is mounted at $DLFS_MNT on $_dlfs_slurm_nn node(s)"
		return 0
	fi
	_dlfs_slurm_say "mounting $_dlfs_slurm_ds at $_dlfs_slurm_mnt failed"
	# This mount only: those made before stay.
	_dlfs_slurm_down "$_dlfs_slurm_name" "$_dlfs_slurm_pid"
	return 1
}

# Waits up to $1 seconds for the background job $2 to end.
_dlfs_slurm_reap() {
	_dlfs_slurm_end=$(($(date +%s) + $1))
	while kill -0 "$2" 2>/dev/null; do
		[ "$(date +%s)" -lt "$_dlfs_slurm_end" ] || return 1
		sleep 0.2
	done
	wait "$2" 2>/dev/null
	return 0
}

dlfs_slurm_umount() {
	[ -z "$_dlfs_slurm_names" ] ||
		_dlfs_slurm_down "$_dlfs_slurm_names" "$_dlfs_slurm_pids"
	_dlfs_slurm_names='' _dlfs_slurm_pids=''
	return 0
}

# Unmounts the names $1 on every node and reaps their daemons' steps $2.
_dlfs_slurm_down() {
	_dlfs_slurm_nn=${SLURM_JOB_NUM_NODES:-${SLURM_NNODES:-1}}
	_dlfs_slurm_tmo=${DLFS_SLURM_TIMEOUT:-300}
	DLFS_SLURM_DIR=${DLFS_SLURM_BASE:-/tmp}/dlfs-$SLURM_JOB_ID
	# Under a signal the job is ending: Slurm has signalled the daemons
	# and would refuse a new step.
	if [ -z "$_dlfs_slurm_sig" ]; then
		# shellcheck disable=SC2086 # the names are one word each
		_dlfs_slurm_srun --job-name=dlfs-umount sh -c '
			dir=$1
			shift
			for n in "$@"; do
				fusermount3 -u "$dir/$n" 2>/dev/null ||
					fusermount3 -uz "$dir/$n" 2>/dev/null
			done
			exit 0' dlfs-slurm-umount "$DLFS_SLURM_DIR" $1 </dev/null ||
			_dlfs_slurm_say "the unmount step failed; stopping the daemons"
	fi
	for _dlfs_slurm_pid in $2; do
		_dlfs_slurm_reap "$_dlfs_slurm_tmo" "$_dlfs_slurm_pid" && continue
		# srun passes SIGTERM on to the daemons, which unmount.
		_dlfs_slurm_say "daemons still running after $_dlfs_slurm_tmo s: SIGTERM"
		kill -TERM "$_dlfs_slurm_pid" 2>/dev/null || :
		_dlfs_slurm_reap 30 "$_dlfs_slurm_pid" ||
			kill -KILL "$_dlfs_slurm_pid" 2>/dev/null || :
	done
}
