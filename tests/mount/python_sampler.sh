#!/bin/bash
# python_sampler: dlfs.torch.ViewSampler under a DataLoader of 4 workers,
# started by fork and by spawn (issue 42, item 2): the loader reads an
# ImageFolder over the mount in the order of the epoch's list, with the
# labels and pixels of the source, in two epochs (set_epoch); datasets
# that give their paths another way; the datasets it must refuse
# (python_sampler.py). Skips (77) without torch/torchvision/PIL.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"
mount_setup
. "$LIB_DIR/pylib.sh"

SRC="$T/src"
DS="$T/ds.dlfs"
images_ds "$DS" 100 30
MNT="$T/mnt"
mkdir "$MNT"
dlfs_mount "$DS" "$MNT" -o ram_cache=16M

# 2 epochs of 100 train samples by fork and by spawn, 30 val samples twice.
got=$(pyrun python_sampler.py "$MNT" "$SRC") || fail "python_sampler.py (see above)"
[ "$got" = 460 ] || fail "python_sampler.py read $got samples, want 460"

dlfs_umount "$MNT"
check_log "$DLFS_LOG"
exit 0
