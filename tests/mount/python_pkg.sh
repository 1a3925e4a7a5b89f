#!/bin/bash
# python_pkg: import dlfs over a mount (issue 42, item 1): info and stats
# as dicts, an epoch's list streamed, the tree view helper, and the errors
# a user meets (a wrong root, a dataset without views, an epoch out of
# range, a mount whose daemon died), each a dlfs exception whose message
# names the way out. The
# package comes from the source tree (PYTHONPATH), not an install.
# Skips (77) without torch/torchvision/PIL.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"
mount_setup
. "$LIB_DIR/pylib.sh"

SRC="$T/src"
DS="$T/ds.dlfs"
images_ds "$DS" 120 30
# A dataset without files: directories only.
mkdir -p "$T/empty/a/b"
pack "$T/empty" -o "$T/empty.dlfs" -q
expect_ok "pack a tree without files"
# A directory that looks like a mount without views.
mkdir -p "$T/noviews/.dlfs"
echo '{"path": "/x.dlfs", "files": 3, "rank": 0, "ranks": 1}' >"$T/noviews/.dlfs/info"

MNT="$T/mnt"
EMNT="$T/emnt"
mkdir "$MNT" "$EMNT"
dlfs_mount "$DS" "$MNT" -o ram_cache=16M
LOG=$DLFS_LOG
dlfs_mount "$T/empty.dlfs" "$EMNT"
ELOG=$DLFS_LOG

got=$(pyrun python_pkg.py "$MNT" "$SRC" "$EMNT" "$T/noviews") ||
	fail "python_pkg.py (see above)"
[ "$got" = 150 ] || fail "python_pkg.py read a list of $got paths, want 150"

# stats, never read on it before: the kernel may answer a read of info
# from its cache even once the daemon is gone.
note "a mount whose daemon is gone"
EPID=$DLFS_PID
kill -KILL "$EPID"
wait_exit "$EPID" 10
[ "$WAIT_RC" != timeout ] || fail "the daemon survived SIGKILL"
(cd "$T" && PYTHONPATH="$DLFS_PYTHONPATH" tmo "$PYTHON" -c '
import sys, dlfs
try:
    dlfs.stats(sys.argv[1])
    sys.exit("FAIL: stats() of a dead mount")
except dlfs.Error as e:
    for w in ("is gone", "fusermount3 -u " + sys.argv[1], "mount the dataset again"):
        if w not in str(e):
            sys.exit("FAIL: stats() of a dead mount: %r lacks %r" % (str(e), w))
' "$EMNT") || fail "import dlfs over a dead mount (see above)"
tmo fusermount3 -u "$EMNT" || fail "fusermount3 -u $EMNT (dead)"

dlfs_umount "$MNT"
check_log "$LOG"
check_log "$ELOG"
exit 0
