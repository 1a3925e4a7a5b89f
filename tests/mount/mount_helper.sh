#!/bin/bash
# mount_helper: the ways a user mounts and unmounts.
#  - `mount -t fuse.dlfs DATASET MNT -o ram_cache=64M`: mounted (type
#    fuse.dlfs, ro), serves the tree, the option reached the daemon
#    (ram.capacity_bytes), `umount MNT` unmounts and the daemon exits.
#    mount(8) resets PATH for its helpers, so unless this dlfs is installed
#    in a standard directory, the same chain is tested as
#    `mount -t fuse 'DLFS#DATASET'` and as `mount.fuse3 DATASET MNT -t dlfs`
#    with a PATH holding a `dlfs` symlink (what mount -t fuse.dlfs runs);
#  - the same from an fstab line `DATASET MNT fuse.dlfs ram_cache=32M,nofail
#    0 0` (or `DLFS#DATASET MNT fuse ...`), with mount -T FSTAB MNT;
#  - SIGTERM, and SIGINT, to a `dlfs -f` daemon started with '&' from this
#    script (so with SIGINT ignored on entry): exit status 0 and MNT no
#    longer in /proc/mounts;
#  - without -f, five times: dlfs returns 0, and the very next command
#    (ls MNT, cat MNT/.dlfs/info) works; fusermount3 -u then ends the daemon.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"
mount_setup

SRC="$T/src"
mkdir -p "$SRC/x/y" "$SRC/z"
"$PYTHON" - "$SRC" <<'PY'
import os, random, sys
r = random.Random(23)
for i in range(30):
    open(os.path.join(sys.argv[1], ("x/y/f%02d" if i % 2 else "x/g%02d") % i), "wb").write(r.randbytes(r.randrange(0, 200000)))
os.symlink("x/y", os.path.join(sys.argv[1], "lnk"))
PY
DS="$T/ds.dlfs"
pack "$SRC" -o "$DS" --chunk-size 64K --container-size 1M -q
expect_ok "pack"
MNT="$T/mnt"
mkdir "$MNT"
mkdir "$T/bin"
ln -s "$(realpath "$DLFS")" "$T/bin/dlfs"

# daemon_of MNT: prints the pid of the dlfs process serving MNT, if any.
daemon_of() {
	"$PYTHON" - "$1" <<'PY'
import os, sys
want = {sys.argv[1], os.path.realpath(sys.argv[1])}
for p in os.listdir("/proc"):
    if not p.isdigit() or int(p) == os.getpid():
        continue
    try:
        argv = open("/proc/%s/cmdline" % p, "rb").read().split(b"\0")
    except OSError:
        continue
    if argv and os.path.basename(argv[0]) == b"dlfs" and any(os.fsdecode(a) in want for a in argv[1:]):
        print(p)
PY
}
# wait_gone PID: the (not necessarily child) process PID exits within 30 s.
# A zombie counts as gone: reaping a daemonized process is init's business.
wait_gone() {
	local i
	for ((i = 0; i < 600; i++)); do
		kill -0 "$1" 2>/dev/null || return 0
		[ "$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null)" != Z ] || return 0
		sleep 0.05
	done
	fail "$2: daemon $1 still running 30 s later"
}
# served WHAT: the mount at MNT serves the source tree.
served() {
	if ! tmo diff -r --no-dereference "$SRC" "$MNT" >"$T/diff.out" 2>&1; then
		head -n 20 "$T/diff.out" >&2
		fail "$1: the mount does not serve the source tree"
	fi
}
# capacity_is BYTES WHAT: the daemon got the ram_cache option.
capacity_is() {
	tmo cat "$MNT/.dlfs/stats" >"$T/stats.json" || fail "$2: cannot read .dlfs/stats"
	local got
	got=$("$PYTHON" -c 'import json, sys; print(json.load(open(sys.argv[1]))["tiers"]["ram"]["capacity_bytes"])' "$T/stats.json")
	[ "$got" = "$1" ] || fail "$2: ram.capacity_bytes is $got, expected $1 (the -o ram_cache option did not reach the daemon?)"
}
# mounted_as_dlfs WHAT: /proc/mounts shows MNT as fuse.dlfs, read-only.
mounted_as_dlfs() {
	local line
	line=$(awk -v m="$(realpath "$MNT")" '$2 == m' /proc/mounts)
	[ -n "$line" ] || fail "$1: $MNT not in /proc/mounts"
	echo "$line" | awk '{ exit !($3 == "fuse.dlfs") }' || fail "$1: mount type is not fuse.dlfs: $line"
	echo "$line" | awk '{ exit !($4 ~ /(^|,)ro(,|$)/) }' || fail "$1: not mounted read-only: $line"
}

# helper_mount WHAT BYTES CMD...: CMD mounts the dataset on MNT through
# mount(8)/mount.fuse3; it must then serve the tree with ram_cache=BYTES,
# and `umount MNT` must unmount it and end the daemon.
helper_mount() {
	local what=$1 bytes=$2 st=0 pid
	shift 2
	note "$what"
	tmo "$@" </dev/null >"$T/mount.out" 2>&1 || st=$?
	track_mount "$MNT"
	[ "$st" = 0 ] || fail "$what: '$*' exited $st: $(cat "$T/mount.out")"
	pid=$(daemon_of "$MNT" | head -n 1)
	[ -n "$pid" ] || fail "$what: no dlfs process serving $MNT"
	_DLFS_PIDS+=("$pid")
	mounted_as_dlfs "$what"
	served "$what"
	capacity_is "$bytes" "$what"
	tmo umount "$MNT" >"$T/umount.out" 2>&1 || fail "$what: umount $MNT failed: $(cat "$T/umount.out")"
	! is_mounted "$MNT" || fail "$what: $MNT is still mounted after umount"
	wait_gone "$pid" "$what: umount"
}

# mount(8) runs its helpers with PATH reset to the standard directories, so
# `mount -t fuse.dlfs` finds only an installed dlfs. If the dlfs under test
# is installed there, use it that way; otherwise run the same chain with the
# program named explicitly (mount -t fuse 'DLFS#DATASET'), and run
# mount.fuse3 the way mount -t fuse.dlfs does, with our PATH.
STDPATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
STD_DLFS=$(PATH=$STDPATH command -v dlfs || true)
if [ -n "$STD_DLFS" ] && cmp -s "$STD_DLFS" "$DLFS"; then
	helper_mount "mount -t fuse.dlfs" $((64 << 20)) mount -t fuse.dlfs "$DS" "$MNT" -o ram_cache=64M
	printf '%s %s fuse.dlfs ram_cache=32M,nofail 0 0\n' "$DS" "$MNT" >"$T/fstab"
else
	note "the dlfs under test is not installed in mount(8)'s PATH ($STDPATH): testing mount -t fuse 'DLFS#DATASET' and mount.fuse3 -t dlfs instead of mount -t fuse.dlfs"
	helper_mount "mount.fuse3 DATASET MNT -t dlfs (as mount -t fuse.dlfs runs it)" $((64 << 20)) \
		env PATH="$T/bin:$PATH" mount.fuse3 "$DS" "$MNT" -t dlfs -o ram_cache=64M
	helper_mount "mount -t fuse DLFS#DATASET" $((48 << 20)) mount -t fuse "$DLFS#$DS" "$MNT" -o ram_cache=48M
	printf '%s#%s %s fuse ram_cache=32M,nofail 0 0\n' "$DLFS" "$DS" "$MNT" >"$T/fstab"
fi
helper_mount "fstab line '$(cat "$T/fstab")'" $((32 << 20)) mount -T "$T/fstab" "$MNT"

for sig in TERM INT; do
	note "SIG$sig to dlfs -f"
	LOG="$T/dlfs-sig$sig.log"
	# Started with '&' from this script, so with SIGINT ignored, as a
	# user's job script starts it (issue 23, item 4): dlfs must take
	# SIGINT all the same.
	"$DLFS" "$DS" "$MNT" -f </dev/null >"$LOG" 2>&1 &
	PID=$!
	track_mount "$MNT" "$PID" "$LOG"
	wait_mounted "$MNT" "$PID" "$LOG"
	served "dlfs -f before SIG$sig"
	kill -"$sig" "$PID"
	wait_exit "$PID" 30
	[ "$WAIT_RC" != timeout ] || fail "dlfs -f still running 30 s after SIG$sig"
	[ "$WAIT_RC" = 0 ] || soft_fail "dlfs -f exited with status $WAIT_RC after SIG$sig, expected 0 (it did unmount)"
	! is_mounted "$MNT" || fail "$MNT still in /proc/mounts after SIG$sig to the daemon"
	check_log "$LOG"
done

note "without -f: ready when dlfs returns"
for i in 1 2 3 4 5; do
	st=0
	tmo "$DLFS" "$DS" "$MNT" -o ram_cache=16M </dev/null >"$T/bg.out" 2>"$T/bg.err" || st=$?
	track_mount "$MNT"
	[ "$st" = 0 ] || fail "dlfs $DS $MNT (no -f) exited $st: $(cat "$T/bg.err")"
	ls "$MNT" >"$T/ls.mnt" 2>"$T/ls.err" || fail "round $i: ls MNT right after dlfs returned failed: $(cat "$T/ls.err")"
	ls "$SRC" >"$T/ls.src"
	cmp -s "$T/ls.src" "$T/ls.mnt" || fail "round $i: ls MNT right after dlfs returned: '$(tr '\n' ' ' <"$T/ls.mnt")', expected '$(tr '\n' ' ' <"$T/ls.src")'"
	tmo cat "$MNT/.dlfs/info" >/dev/null || fail "round $i: MNT/.dlfs/info not readable"
	PID=$(daemon_of "$MNT" | head -n 1)
	[ -n "$PID" ] || fail "round $i: no dlfs process serving $MNT"
	_DLFS_PIDS+=("$PID")
	[ "$i" != 1 ] || served "dlfs without -f"
	grep -iE -- "$DLFS_LOG_BAD_RE" "$T/bg.err" "$T/bg.out" && fail "round $i: dlfs printed an error"
	timeout 30 fusermount3 -u "$MNT" || fail "round $i: fusermount3 -u failed"
	! is_mounted "$MNT" || fail "round $i: still mounted after fusermount3 -u"
	wait_gone "$PID" "round $i: fusermount3 -u"
done
finish
