#!/bin/bash
# pytorch: 1,000 deterministic images (JPEG and PNG, RGB, L and RGBA, sizes
# 24..96 px) in 10 class folders, packed and mounted; torchvision
# ImageFolder + DataLoader(num_workers=4, batch_size=32, Resize + ToTensor)
# over the mount and over the source give the same classes (10: no .dlfs
# class), the same samples and labels, and torch.equal batches, unshuffled
# and shuffled with the same seed. Skips (77) without torch/torchvision/PIL.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
mount_setup
need_py torch torchvision PIL

SRC="$T/src"
mkdir "$SRC"
gentree images "$SRC" --count 1000
DS="$T/ds.dlfs"
pack "$SRC" -o "$DS" --chunk-size 256K --container-size 2M -q
expect_ok "pack"
MNT="$T/mnt"
mkdir "$MNT"
dlfs_mount "$DS" "$MNT" -o ram_cache=16M

tmo "$PYTHON" "$HERE/torch_cmp.py" "$SRC" "$MNT" 10 1000 ||
	fail "ImageFolder/DataLoader over the mount differs from the source (see above)"

check_log "$DLFS_LOG"
dlfs_umount "$MNT"
check_log "$DLFS_LOG"
exit 0
