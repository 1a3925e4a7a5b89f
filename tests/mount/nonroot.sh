#!/bin/bash
# nonroot: dlfs for a user who is not root (issue 27, item 3), as a
# throwaway user this test makes (useradd; userdel at exit).
#  - /dev/fuse made usable by all (mode 0666, as Debian ships it; its own
#    mode and group are put back at exit, on every path): the user mounts with
#    `dlfs DS MNT -f` on a directory of its own, reads every file (bytes
#    compared with the source), unmounts with `fusermount3 -u`, and the
#    daemon exits 0 with a clean log;
#  - the same with -o cache_dir=DIR in a directory the user owns: the
#    tier is on and fills (nvme.written_chunks reaches the dataset's
#    chunks), its files belong to the user; a remount reads every file
#    from it (nvme.hits > 0, nothing from the PFS);
#  - what a failed mount says, one hint line each and only the one that
#    applies, with exit status 1 and nothing left mounted or running:
#    /dev/fuse back at 0600 (the line names /dev/fuse, its mode, and mode
#    0666 to ask for), or 0660 for a group the user is not in (it names
#    the group too); -o allow_other without user_allow_other in
#    /etc/fuse.conf (names /etc/fuse.conf; left out, with a note, where
#    the real file has the line: the test never edits it); a mountpoint
#    the user may not write to (names it). A cache_dir the user may not
#    create is refused before mounting, naming it, with no warning first.
# fusermount3 missing or not setuid root are tests/unit/test_mounthint.c's.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"
mount_setup
. "$LIB_DIR/cachelib.sh"
[ "$(id -u)" = 0 ] || skip "needs root: makes a user and changes /dev/fuse's mode"
[ -c /dev/fuse ] || skip "/dev/fuse is not a character device"
. "$LIB_DIR/userlib.sh"
make_user nonroot.sh

# The device's mode, put back at exit whatever happens (registered after
# the user, so it runs before userdel).
DEV_MODE=$(stat -c %a /dev/fuse)
DEV_GID=$(stat -c %g /dev/fuse)
at_exit chgrp "$DEV_GID" /dev/fuse
at_exit chmod "$DEV_MODE" /dev/fuse
note "/dev/fuse has mode $DEV_MODE, group $DEV_GID; both are put back at exit"

# $AS CMD...: CMD as the user, with its groups, HOME in $T.
mkdir -m 0700 "$T/home"
chown "$NU_UID:$NU_GID" "$T/home"
AS="$T/as"
printf '#!/bin/sh\nHOME=%s exec setpriv --reuid=%s --regid=%s --init-groups -- "$@"\n' \
	"$T/home" "$NU_UID" "$NU_GID" >"$AS"
chmod 0755 "$AS"

# ------------------------------------------------------------ the data
SRC="$T/src"
cache_mkdata "$SRC" 27
DS="$T/ds.dlfs"
pack "$SRC" -o "$DS" --chunk-size 64K --container-size 1M -q
expect_ok "pack"
read -r CHUNKS _ NCONT _ <<<"$(ds_geom "$DS")"
ID=$(ds_id "$DS")
FILES=$(tree_counts "$SRC" | "$PYTHON" -c 'import json, sys; d = json.load(sys.stdin); print(d["files"], d["bytes"])')
# mktemp made $T 0700: the user must reach the dataset, the source (to
# compare) and its own directories in it.
chmod 0711 "$T"
chmod -R a+rX "$SRC" "$DS"
MNT="$T/mnt"
NV="$T/nvme"
mkdir -m 0755 "$MNT"
mkdir -m 0700 "$NV"
chown "$NU_UID:$NU_GID" "$MNT" "$NV"
for f in "$DLFS" "$LIB_DIR/readtree.py" "$DS/index"; do
	"$AS" test -r "$f" ||
		skip "$NU cannot read $f (a directory above it is not searchable by others)"
done

# ------------------------------------------------------------ helpers
# user_mount LOG ARGS...: as the user, `dlfs DS MNT -f ARGS` in the
# background; waits until the user sees MNT mounted. Sets PID.
user_mount() {
	local log=$1 i st
	shift
	"$AS" "$DLFS" "$DS" "$MNT" -f "$@" </dev/null >"$log" 2>&1 &
	PID=$!
	track_mount "$MNT" "$PID" "$log"
	# Root may not stat a FUSE mount of another user without
	# allow_other: the user looks.
	for ((i = 0; i < DLFS_MOUNT_TIMEOUT * 20; i++)); do
		if is_mounted "$MNT" && timeout 10 "$AS" mountpoint -q "$MNT"; then
			return 0
		fi
		if ! kill -0 "$PID" 2>/dev/null; then
			st=0
			wait "$PID" || st=$?
			head -n 20 "$log" >&2
			fail "dlfs as $NU $* exited with status $st before $MNT was mounted"
		fi
		sleep 0.05
	done
	fail "dlfs as $NU $*: $MNT not mounted after ${DLFS_MOUNT_TIMEOUT}s"
}

# user_umount: as the user, fusermount3 -u MNT; the daemon exits 0.
user_umount() {
	tmo "$AS" fusermount3 -u "$MNT" 2>"$T/fusermount.err" ||
		fail "fusermount3 -u $MNT as $NU: $(cat "$T/fusermount.err")"
	! is_mounted "$MNT" || fail "$MNT is still mounted after fusermount3 -u"
	wait_exit "$PID" 30
	[ "$WAIT_RC" = 0 ] || fail "the daemon of $NU exited with '$WAIT_RC' after fusermount3 -u"
}

# user_read WHAT: as the user, every file through MNT equals the source.
user_read() {
	tmo "$AS" "$PYTHON" "$LIB_DIR/readtree.py" "$SRC" "$MNT" >"$T/read.out" ||
		fail "$1: $NU's reads through $MNT gave errors or wrong bytes (see above)"
	[ "$(cat "$T/read.out")" = "$FILES" ] ||
		fail "$1: read '$(cat "$T/read.out")' (files bytes), the source has '$FILES'"
}

# user_stats OUT: MNT/.dlfs/stats, read by the user.
user_stats() {
	tmo "$AS" cat "$MNT/.dlfs/stats" >"$1" || fail "$NU cannot read $MNT/.dlfs/stats"
}

# wait_filled: the user's NVMe tier holds every chunk (written in the
# background): polls the stats, for at most 60 s.
wait_filled() {
	local i w
	for ((i = 0; i < 300; i++)); do
		user_stats "$T/fill.json"
		w=$(sget "$T/fill.json" tiers.nvme.written_chunks)
		[ "$w" -lt "$CHUNKS" ] || return 0
		sleep 0.2
	done
	fail "the NVMe tier wrote $w of $CHUNKS chunks in 60 s: $(sget "$T/fill.json" tiers.nvme)"
}

# refused WHAT MNT WANT [ARGS...]: as the user, `dlfs DS MNT ARGS` (no
# -f: a wrong success goes to the background instead of hanging) exits
# 1 after "cannot mount", with one hint line, which holds WANT; nothing is
# mounted and no process of the user is left.
refused() {
	local what=$1 mnt=$2 want=$3 st=0
	shift 3
	tmo "$AS" "$DLFS" "$DS" "$mnt" "$@" </dev/null >"$T/ref.out" 2>"$T/ref.err" || st=$?
	track_mount "$mnt"
	note "$what: exit $st: $(grep '^dlfs: ' "$T/ref.err" | tr '\n' '|')"
	! is_mounted "$mnt" || fail "$what: $mnt is mounted"
	[ -z "$(pgrep -u "$NU_UID")" ] || fail "$what: processes of $NU left: $(pgrep -a -u "$NU_UID")"
	[ "$st" = 1 ] || fail "$what: dlfs exited $st, expected 1: $(cat "$T/ref.err")"
	grep -qxF "dlfs: cannot mount on $mnt" "$T/ref.err" ||
		fail "$what: no 'dlfs: cannot mount on $mnt': $(cat "$T/ref.err")"
	grep '^dlfs: ' "$T/ref.err" | grep -vxF "dlfs: cannot mount on $mnt" >"$T/hints" || true
	[ "$(wc -l <"$T/hints")" = 1 ] ||
		fail "$what: expected one hint line, got: $(cat "$T/hints")"
	grep -qF -- "$want" "$T/hints" || fail "$what: the hint lacks '$want': $(cat "$T/hints")"
}

# ------------------------------------------------------------ mounts
chmod 0666 /dev/fuse
note "mount as $NU, read every file, fusermount3 -u"
user_mount "$T/dlfs-1.log"
user_read "plain mount"
user_stats "$T/s1.json"
sassert "$T/s1.json" -- 'nvme.enabled == 0' 'pfs.bytes > 0' || fail "plain mount: stats"
user_umount
check_log "$T/dlfs-1.log"

note "cache_dir in $NV, a directory of $NU's: the tier fills"
user_mount "$T/dlfs-2.log" -o cache_dir="$NV/c"
user_read "first cache_dir mount"
wait_filled
sassert "$T/fill.json" CHUNKS="$CHUNKS" -- 'nvme.enabled == 1' \
	'nvme.written_chunks == CHUNKS' 'nvme.errors == 0' 'errors.nvme == 0' ||
	fail "first cache_dir mount: the tier did not fill"
user_umount
check_log "$T/dlfs-2.log"
n=$(find "$NV/c/$ID" -name '*.cache' -user "$NU_UID" | wc -l)
[ "$n" = "$NCONT" ] || fail "$NV/c/$ID holds $n .cache files of $NU, expected $NCONT: $(ls -ln "$NV/c/$ID")"

note "remount, same cache_dir: every file from the tier"
user_mount "$T/dlfs-3.log" -o cache_dir="$NV/c"
user_read "second cache_dir mount"
user_stats "$T/s3.json"
sassert "$T/s3.json" -- 'nvme.enabled == 1' 'nvme.hits > 0' 'pfs.bytes == 0' ||
	fail "second cache_dir mount: the reads did not come from the NVMe tier"
user_umount
check_log "$T/dlfs-3.log"

# ------------------------------------------------------------ failures
chmod 0600 /dev/fuse
refused "/dev/fuse at 0600" "$MNT" "dlfs: /dev/fuse: Permission denied: mode 0600"
grep -qF "mode 0666 (as Debian ships it)" "$T/hints" || fail "the /dev/fuse hint does not say what to ask for: $(cat "$T/hints")"
grep -qF "dlfs-run" "$T/hints" || fail "the /dev/fuse hint does not name dlfs-run: $(cat "$T/hints")"
# A group the user is not in may read and write it: membership is
# another way.
OTHER_GID=65534
OTHER_GROUP=$(getent group "$OTHER_GID" | cut -d: -f1)
[ -n "$OTHER_GROUP" ] || OTHER_GROUP=$OTHER_GID
chgrp "$OTHER_GID" /dev/fuse
chmod 0660 /dev/fuse
refused "/dev/fuse at 0660, group $OTHER_GROUP" "$MNT" "dlfs: /dev/fuse: Permission denied: mode 0660"
grep -qF "or membership of group $OTHER_GROUP;" "$T/hints" || fail "the /dev/fuse hint does not name its group: $(cat "$T/hints")"
chgrp "$DEV_GID" /dev/fuse
chmod 0666 /dev/fuse

if grep -qE '^[[:space:]]*user_allow_other[[:space:]]*(#.*)?$' /etc/fuse.conf 2>/dev/null; then
	note "/etc/fuse.conf has user_allow_other: -o allow_other is not refused here (not tested; the file is not edited)"
else
	refused "-o allow_other" "$MNT" "dlfs: -o allow_other: /etc/fuse.conf" -o allow_other
fi

mkdir -m 0755 "$T/rootmnt"
refused "a mountpoint of root's" "$T/rootmnt" "dlfs: mountpoint $T/rootmnt: Permission denied (mode 0755, owner root)"

# A cache_dir the user may not create is refused before mounting (README).
st=0
tmo "$AS" "$DLFS" "$DS" "$MNT" -o cache_dir="$T/rootmnt/c" </dev/null >"$T/ref.out" 2>"$T/ref.err" || st=$?
! is_mounted "$MNT" || fail "cache_dir of root's: $MNT is mounted"
[ "$st" = 1 ] || fail "cache_dir of root's: dlfs exited $st, expected 1: $(cat "$T/ref.err")"
grep -qF "dlfs: cache_dir $T/rootmnt/c: Permission denied" "$T/ref.err" ||
	fail "cache_dir of root's: the refusal does not name it: $(cat "$T/ref.err")"
# One line, the real cause alone: no warning about the index's copy
# before it (issue 39, item 3).
! grep -qi "warning" "$T/ref.err" ||
	fail "cache_dir of root's: a warning comes before the refusal: $(cat "$T/ref.err")"

# And with all that, a mount works again.
user_mount "$T/dlfs-4.log"
user_umount
finish
