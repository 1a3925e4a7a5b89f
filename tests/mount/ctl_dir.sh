#!/bin/bash
# ctl_dir: a dataset with an entry '.dlfs' at its root (issue 11, item
# 11). The control directory would hide it, and a listing of the root
# would shadow the control directory with it for the life of the mount.
#  - dlfs-pack packs it with one warning naming -o ctl_dir;
#  - dlfs refuses to mount it (exit 1, one line naming -o ctl_dir);
#  - with -o ctl_dir=NAME both are reachable, NAME is not listed, and
#    dlfs-inspect stats takes MNT/NAME;
#  - a ctl_dir that is not a name is a bad option (exit 2).
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"
mount_setup

mkdir -p "$T/src/.dlfs/sub" "$T/src/a"
echo "user data" >"$T/src/.dlfs/sub/x"
echo "plain" >"$T/src/a/f"
DS="$T/ds.dlfs"
pack "$T/src" -o "$DS"
expect_ok "pack a source with a root .dlfs"
err_has "warning: the dataset has an entry '.dlfs' at its root" "pack warns about the root .dlfs"
err_has "-o ctl_dir=NAME" "the pack warning names the mount option"

MNT="$T/mnt"
mkdir "$MNT"
run "$DLFS" "$DS" "$MNT"
if [ "$RC" = 0 ]; then
	track_mount "$MNT"
	fail "dlfs mounted a dataset whose root .dlfs the control directory hides"
fi
expect_rc 1 "mount of a dataset with a root .dlfs"
err_has "has an entry named '.dlfs' at its root" "the refusal names the entry"
err_has "-o ctl_dir=NAME" "the refusal names the option"
! is_mounted "$MNT" || fail "$MNT is mounted after the refusal"

note "-o ctl_dir=.ctl: the dataset's .dlfs and the control directory"
dlfs_mount "$DS" "$MNT" -o ctl_dir=.ctl
# A listing first, as ImageFolder would: it must not shadow anything.
ls -a "$MNT" >"$T/ls"
grep -qx ".dlfs" "$T/ls" || fail "the dataset's .dlfs is not listed: $(cat "$T/ls")"
! grep -qx ".ctl" "$T/ls" || fail "the control directory is listed"
[ "$(tmo cat "$MNT/.dlfs/sub/x")" = "user data" ] || fail "read of the dataset's .dlfs/sub/x"
tmo cat "$MNT/.ctl/info" >"$T/info" || fail "read of .ctl/info"
"$PYTHON" -c 'import json, sys; json.load(open(sys.argv[1]))' "$T/info" || fail ".ctl/info is not JSON"
[ -d "$MNT/.ctl/epochs" ] || fail ".ctl/epochs is not a directory"
inspect stats "$MNT/.ctl"
expect_ok "dlfs-inspect stats MNT/.ctl"
dlfs_umount "$MNT"
check_log "$DLFS_LOG"

note "a ctl_dir that is not a name"
for bad in a/b .. .; do
	run "$DLFS" "$DS" "$MNT" -o "ctl_dir=$bad"
	expect_rc 2 "-o ctl_dir=$bad"
	err_has "dlfs: -o ctl_dir=$bad:" "-o ctl_dir=$bad is named"
done
