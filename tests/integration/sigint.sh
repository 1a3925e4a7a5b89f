#!/bin/bash
# sigint: SIGINT or SIGTERM while dlfs-pack is writing (--threads 1, 2 GiB
# of input; also while compressing) makes it stop promptly with a non-zero
# status and the message "dlfs-pack: interrupted", leaving no OUT and no
# temp dir behind; an existing OUT being replaced with --force survives the
# interruption intact.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"

# Sparse input: cheap to create and to read, 2 GiB to write.
gentree big "$T/src" --size 512M --count 4 --sparse
mkdir "$T/o"

# interrupt SIGNAL DELAY LABEL [pack args]: start the pack, wait until its
# temp dir exists, wait DELAY more seconds, send SIGNAL, expect a clean failure.
interrupt() {
	local sig=$1 delay=$2 label=$3
	shift 3
	note "$label"
	# Reset SIGINT to its default: a non-interactive shell starts background
	# jobs with SIGINT ignored, which a user at a terminal never has.
	"$PYTHON" -c 'import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
os.execv(sys.argv[1], sys.argv[1:])' "$DLFS_PACK" "$T/src" -o "$T/o/int.dlfs" --threads 1 "$@" \
		>"$T/out" 2>"$T/err" &
	local pid=$! i started=0
	for i in $(seq 3000); do
		if compgen -G "$T/o/.int.dlfs.tmp-*" >/dev/null; then started=1; break; fi
		kill -0 $pid 2>/dev/null || break
		sleep 0.01
	done
	[ $started = 1 ] || { wait $pid || true; fail "$label: the pack never created its temp dir .int.dlfs.tmp-* in $T/o"; }
	sleep "$delay"
	kill -0 $pid 2>/dev/null || { wait $pid || true; fail "$label: the pack finished before the signal could be sent (input too small?)"; }
	kill -s "$sig" $pid
	for i in $(seq 600); do
		kill -0 $pid 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 $pid 2>/dev/null; then
		kill -KILL $pid
		fail "$label: dlfs-pack did not exit within 60 s of SIG$sig"
	fi
	RC=0
	wait $pid || RC=$?
	LAST_CMD="dlfs-pack $T/src -o $T/o/int.dlfs --threads 1 $* (SIG$sig after ${delay}s)"
	[ "$RC" != 0 ] || { _show; fail "$label: exit status 0 after SIG$sig"; }
	err_has "dlfs-pack: interrupted" "$label"
}

interrupt INT 0 "SIGINT as soon as the temp dir appears"
assert_empty_dir "$T/o" "after SIGINT"
interrupt INT 1 "SIGINT after 1 s"
assert_empty_dir "$T/o" "after SIGINT"
interrupt TERM 0.5 "SIGTERM after 0.5 s"
assert_empty_dir "$T/o" "after SIGTERM"
# Compressor threads stop too (2 GiB of zeros: about 4 s to pack here).
interrupt INT 0.5 "SIGINT after 0.5 s, with --compress zstd" --compress zstd
assert_empty_dir "$T/o" "after SIGINT with --compress"

# Replacing an existing dataset with --force: the old one must survive.
mkdir "$T/small"
echo old >"$T/small/f"
pack "$T/small" -o "$T/o/int.dlfs" -q
expect_ok "pack the dataset to be replaced"
(cd "$T/o/int.dlfs" && sha256sum *) >"$T/before"
interrupt INT 0.5 "SIGINT during --force replacement" --force
[ "$(ls -A "$T/o")" = int.dlfs ] || fail "after SIGINT during --force: $T/o holds $(ls -A "$T/o" | tr '\n' ' ')"
(cd "$T/o/int.dlfs" && sha256sum *) >"$T/after"
cmp -s "$T/before" "$T/after" || fail "SIGINT during --force damaged the existing dataset"
inspect cat "$T/o/int.dlfs" f
expect_ok "cat from the old dataset after an interrupted --force"
[ "$(cat "$T/out")" = old ] || fail "old dataset content changed"
exit 0
