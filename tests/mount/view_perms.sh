#!/bin/bash
# view_perms: the epoch views never let a caller read what the plain path
# would refuse (issue 11, item 3). Mounted with allow_other, a user who may
# not search a 0700 directory gets EACCES for a file under it by its
# plain path, and must get the same through .dlfs/epochs/E/samples/. Files
# under searchable directories stay readable through the view, and the
# list of every path (.dlfs/epochs/E/files) is refused too, since it names
# files the user could not list. A 0750 directory is searchable by the
# group: a member of it reads the file through the view; others do not.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"
mount_setup
[ "$(id -u)" = 0 ] || skip "needs root: reads as other users (runuser)"
command -v setpriv >/dev/null || skip "setpriv not found (util-linux)"

mkdir -p "$T/src/open/sub" "$T/src/secret/deep" "$T/src/team"
echo "public bytes" >"$T/src/open/sub/p.txt"
echo "secret bytes" >"$T/src/secret/deep/s.txt"
echo "team bytes" >"$T/src/team/t.txt"
chmod 0644 "$T/src/open/sub/p.txt" "$T/src/secret/deep/s.txt" "$T/src/team/t.txt"
chmod 0755 "$T/src/open" "$T/src/open/sub" "$T/src/secret/deep"
chmod 0700 "$T/src/secret"
chmod 0750 "$T/src/team"
DS="$T/ds.dlfs"
pack "$T/src" -o "$DS"
expect_ok "pack"

# The mount point must be reachable by the other users.
chmod 0711 "$T"
MNT="$T/mnt"
mkdir -m 0755 "$MNT"
# Every inode shows the daemon's uid and gid: run it with group GRP, the
# group of "a member" below.
GRP=12345
printf '#!/bin/sh\nexec setpriv --regid=%s --keep-groups "%s" "$@"\n' "$GRP" "$DLFS" >"$T/dlfs-gid"
chmod +x "$T/dlfs-gid"
DLFS="$T/dlfs-gid" dlfs_mount "$DS" "$MNT" -o allow_other,seed=3
[ "$(stat -c %g "$MNT/team")" = "$GRP" ] || fail "the mount's group is $(stat -c %g "$MNT/team"), not $GRP"

# $AS UID GID CMD...: CMD as that user, with that group only (a script,
# so that tmo can run it).
AS="$T/as"
printf '#!/bin/sh\nu=$1 g=$2\nshift 2\nexec setpriv --reuid="$u" --regid="$g" --groups="$g" "$@"\n' >"$AS"
chmod +x "$AS"
OTHER=65534        # nobody, not in the group
MEMBER=65533       # another uid, in the group

# Where each file sits in epoch 1 (as root, who may read the list).
tmo cat "$MNT/.dlfs/epochs/1/files" >"$T/files" || fail "root reads the files list"
pos() {
	local n
	n=$(grep -nxF "$1" "$T/files" | cut -d: -f1)
	[ -n "$n" ] || fail "$1 is not in epoch 1's list: $(cat "$T/files")"
	printf '%d' $((n - 1))
}
sample() {
	local j
	j=$(pos "$1")
	printf '%s' "$MNT/.dlfs/epochs/1/samples/$j.txt"
}
S_SECRET=$(sample secret/deep/s.txt)
S_OPEN=$(sample open/sub/p.txt)
S_TEAM=$(sample team/t.txt)

note "the plain paths, as the kernel checks them"
expect_errno "Permission denied" "other reads secret/deep/s.txt" "$AS" $OTHER $OTHER cat "$MNT/secret/deep/s.txt"
[ "$(tmo "$AS" $OTHER $OTHER cat "$MNT/open/sub/p.txt")" = "public bytes" ] || fail "other reads open/sub/p.txt"

note "the views refuse the same reads"
expect_errno "Permission denied" "other reads secret/deep/s.txt through samples/" "$AS" $OTHER $OTHER cat "$S_SECRET"
[ "$(tmo "$AS" $OTHER $OTHER cat "$S_OPEN")" = "public bytes" ] || fail "other reads open/sub/p.txt through samples/"
expect_errno "Permission denied" "other reads the files list (it names secret/...)" "$AS" $OTHER $OTHER cat "$MNT/.dlfs/epochs/1/files"

note "a 0750 directory: its group reads through the view, others do not"
[ "$(tmo "$AS" $MEMBER $GRP cat "$MNT/team/t.txt")" = "team bytes" ] || fail "a group member reads team/t.txt"
[ "$(tmo "$AS" $MEMBER $GRP cat "$S_TEAM")" = "team bytes" ] || fail "a group member reads team/t.txt through samples/"
expect_errno "Permission denied" "other reads team/t.txt through samples/" "$AS" $OTHER $OTHER cat "$S_TEAM"
expect_errno "Permission denied" "a group member reads secret/... through samples/" "$AS" $MEMBER $GRP cat "$S_SECRET"

note "the tree view: directories keep their modes"
T_SECRET="$MNT/.dlfs/epochs/1/tree/secret/deep/$(basename "$S_SECRET")"
T_OPEN="$MNT/.dlfs/epochs/1/tree/open/sub/$(basename "$S_OPEN")"
T_TEAM="$MNT/.dlfs/epochs/1/tree/team/$(basename "$S_TEAM")"
expect_errno "Permission denied" "other reads secret/deep/s.txt through tree/" "$AS" $OTHER $OTHER cat "$T_SECRET"
expect_errno "Permission denied" "other lists tree/secret" "$AS" $OTHER $OTHER ls "$MNT/.dlfs/epochs/1/tree/secret"
[ "$(tmo "$AS" $OTHER $OTHER cat "$T_OPEN")" = "public bytes" ] || fail "other reads open/sub/p.txt through tree/"
[ "$(tmo "$AS" $MEMBER $GRP cat "$T_TEAM")" = "team bytes" ] || fail "a group member reads team/t.txt through tree/"
expect_errno "Permission denied" "other reads team/t.txt through tree/" "$AS" $OTHER $OTHER cat "$T_TEAM"

note "root reads everything, after the others tried (no cached refusal or grant)"
[ "$(tmo cat "$S_SECRET")" = "secret bytes" ] || fail "root reads the secret file through samples/"
[ "$(tmo cat "$T_SECRET")" = "secret bytes" ] || fail "root reads the secret file through tree/"
# And the page the kernel now caches for root must not serve the others.
expect_errno "Permission denied" "other reads the secret sample after root read it" "$AS" $OTHER $OTHER cat "$S_SECRET"

dlfs_umount "$MNT"
check_log "$DLFS_LOG"
finish
