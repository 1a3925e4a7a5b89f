#!/bin/bash
# python_run: import dlfs under dlfs-run (issue 42): the prefix is a root
# like a mount point, in the program and in its forked DataLoader workers
# (python_run.py). Skips (77) without torch/torchvision/PIL.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"
: "${DLFS_RUN:=$SRC_ROOT/build/tools/dlfs-run}"
: "${DLFS_CMD_TIMEOUT:=120}"
[ -x "$DLFS_RUN" ] || fail "dlfs-run not found: $DLFS_RUN (set DLFS_RUN)"
. "$LIB_DIR/pylib.sh"

DS="$T/ds.dlfs"
images_ds "$DS" 40 10
P=/dlfs/python_run
got=$(cd "$T" && PYTHONPATH="$DLFS_PYTHONPATH" tmo "$DLFS_RUN" --private "$DS:$P" -- \
	"$PYTHON" "$SRC_ROOT/tests/mount/python_run.py" "$P" "$T/src") ||
	fail "python_run.py under dlfs-run (see above)"
[ "$got" = 40 ] || fail "python_run.py read $got samples, want 40"
exit 0
