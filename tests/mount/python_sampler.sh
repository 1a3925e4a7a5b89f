#!/bin/bash
# python_sampler: dlfs.torch.ViewSampler under a DataLoader of 4 workers,
# started by fork and by spawn (issue 42, item 2): the loader reads an
# ImageFolder over the mount in the order of the epoch's list, with the
# labels and pixels of the source, in two epochs (set_epoch); datasets
# that give their paths another way; the datasets it must refuse
# (python_sampler.py). Skips (77) without torch/torchvision/PIL.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
mount_setup
need_py torch torchvision PIL
: "${DLFS_PYTHONPATH:=$SRC_ROOT/src/python}"

SRC="$T/src"
mkdir "$SRC"
gentree images "$SRC/train" --count 100 --seed 7
gentree images "$SRC/val" --count 30 --seed 8
DS="$T/ds.dlfs"
pack "$SRC" -o "$DS" --chunk-size 256K -q
expect_ok "pack"
MNT="$T/mnt"
mkdir "$MNT"
dlfs_mount "$DS" "$MNT" -o ram_cache=16M

# 2 epochs of 100 train samples by fork and by spawn, 30 val samples twice.
got=$(cd "$T" && PYTHONPATH="$DLFS_PYTHONPATH" tmo "$PYTHON" \
	"$HERE/python_sampler.py" "$MNT" "$SRC") || fail "python_sampler.py (see above)"
[ "$got" = 460 ] || fail "python_sampler.py read $got samples, want 460"

dlfs_umount "$MNT"
check_log "$DLFS_LOG"
exit 0
