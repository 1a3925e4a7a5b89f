#!/bin/bash
# epilog_race: the Slurm epilog (root) never unmounts another job's mount
# while the job's user races it (issue 38, item 1). The user of job 200
# owns its directory (as the prolog makes it) and, while the epilog of job
# 200 runs, loops in it: mv a b; ln -s <job 201's directory> a; rm -f a;
# mv b a. Job 200's mount at a/m is dead (its daemon SIGKILLed, as Slurm
# ends a job's processes before the epilog); job 201's at dlfs-201/m
# (another user's, here root's) is live. 100 rounds, each with a new dead
# mount of job 200 and a new race loop:
#  - job 201's mount is never touched: the same mount ID from the first
#    round to the last, its daemon alive, and a file reads right at the
#    end;
#  - after each epilog, no dlfs mount is left under job 200's directory
#    (the directory itself may stay: the loop writes in it meanwhile);
#  - the epilog says "unmounted" for job 200's mount in every round.
# The old epilog (umount -l of the path mountinfo shows) unmounted job
# 201's mount within a few rounds (200 rounds took 160-210 s of the
# check; 100 keep a margin of tens over that). Skips (77) when not root.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"
mount_setup
. "$LIB_DIR/userlib.sh"
. "$LIB_DIR/slurmlib.sh"
make_user epilog_race.sh
: "${DLFS_DETACH:=$SRC_ROOT/build/tools/dlfs-detach}"
[ -x "$DLFS_DETACH" ] || fail "dlfs-detach not found: $DLFS_DETACH (set DLFS_DETACH)"
export DLFS_DETACH
: "${EPILOG:=$SRC_ROOT/tools/slurm/dlfs-epilog}"
ROUNDS=${EPILOG_RACE_ROUNDS:-100}

SRC="$T/src"
mkdir -p "$SRC/d"
echo "job data" >"$SRC/d/f"
DS="$T/ds.dlfs"
pack "$SRC" -o "$DS" -q
expect_ok "pack"
# The base is like /tmp: root's, sticky, and the user reaches it.
chmod 0755 "$T"
B="$T/jobs"
mkdir -m 1777 "$B"
export DLFS_SLURM_BASE=$B

# Job 201: another user's job (root's here), live for the whole test.
mkdir -m 0700 "$B/dlfs-201" "$B/dlfs-201/m"
SLURM_JOB_ID=201 dlfs_mount "$DS" "$B/dlfs-201/m"
PID201=$DLFS_PID
# mount_id PATH: the ID of the dlfs mount at PATH (no space in PATH).
mount_id() {
	awk -v m="$1" '{
		for (i = 7; $i != "-"; i++)
			;
		if ($5 == m && $(i + 1) == "fuse.dlfs")
			print $1
	}' /proc/self/mountinfo
}
ID201=$(mount_id "$B/dlfs-201/m")
[ -n "$ID201" ] || fail "job 201's mount is not in mountinfo"

# The user's loop, in job 200's directory, until the file stop appears.
cat >"$T/race.sh" <<'SH'
#!/bin/sh
cd "$1" || exit 1
while [ ! -e "$2" ]; do
	mv a b 2>/dev/null
	ln -s "$3" a 2>/dev/null
	rm -f a
	mv b a 2>/dev/null
done
SH
chmod 0755 "$T/race.sh"

touched=0 stayed=0
for ((r = 1; r <= ROUNDS; r++)); do
	J="$B/dlfs-200"
	mkdir -m 0700 "$J" "$J/a" "$J/a/m"
	chown -R "$NU_UID:$NU_GID" "$J"
	# A dead mount: its daemon killed, as Slurm ends the job's processes.
	dlfs_mount "$DS" "$J/a/m"
	kill -KILL "$DLFS_PID"
	wait_exit "$DLFS_PID" 30
	rm -f "$T/stop"
	setpriv --reuid="$NU_UID" --regid="$NU_GID" --clear-groups -- \
		"$T/race.sh" "$J" "$T/stop" "$B/dlfs-201" &
	RACE=$!
	st=0
	SLURM_JOB_ID=200 timeout -k 5 120 "$EPILOG" 2>"$T/epilog.err" || st=$?
	: >"$T/stop"
	wait "$RACE" || true
	[ "$st" = 0 ] || fail "round $r: the epilog exited $st: $(cat "$T/epilog.err")"
	if [ "$(mount_id "$B/dlfs-201/m")" != "$ID201" ]; then
		touched=$((touched + 1))
		note "round $r: job 201's mount was touched; the epilog said: $(tr '\n' '|' <"$T/epilog.err")"
		# Mount it again, to count the rounds that touch it.
		kill -TERM "$PID201" 2>/dev/null || true
		wait_exit "$PID201" 30
		fusermount3 -uz "$B/dlfs-201/m" 2>/dev/null || true
		SLURM_JOB_ID=201 dlfs_mount "$DS" "$B/dlfs-201/m"
		PID201=$DLFS_PID
		ID201=$(mount_id "$B/dlfs-201/m")
	fi
	left=$(dlfs_mounts_under "$J")
	if [ -n "$left" ]; then
		stayed=$((stayed + 1))
		note "round $r: the epilog left job 200's mounts: $left; it said: $(tr '\n' '|' <"$T/epilog.err")"
		for m in $left; do umount -l "$m"; done # the race is over
	elif ! grep -q "dlfs-epilog: job 200: unmounted " "$T/epilog.err"; then
		fail "round $r: the epilog did not say it unmounted job 200's mount: $(cat "$T/epilog.err")"
	fi
	# The directory itself may stay: the user's loop writes in it while
	# the epilog removes it.
	rm -rf "$J"
done
[ "$touched$stayed" = 00 ] ||
	fail "of $ROUNDS rounds, $touched touched job 201's mount and $stayed left job 200's"
kill -0 "$PID201" || fail "job 201's daemon is gone"
cmp "$SRC/d/f" "$B/dlfs-201/m/d/f" || fail "job 201's mount does not read right after the rounds"
note "$ROUNDS rounds: job 201's mount (ID $ID201) untouched"
dlfs_umount "$B/dlfs-201/m"
