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
tmo "$PYTHON" - "$SRC" <<'PY' || fail "could not generate the images"
import os, random, sys
from PIL import Image, ImageDraw
root = sys.argv[1]
r = random.Random(2024)
classes = ["class%02d_%s" % (i, n) for i, n in enumerate(
    ["cat", "dog", "car", "ship", "frog", "bird", "deer", "horse", "plane", "truck"])]
for c in classes:
    os.makedirs(os.path.join(root, c))
for i in range(1000):
    c = classes[i % 10]
    w, h = r.randrange(24, 97), r.randrange(24, 97)
    mode = r.choice(["RGB", "RGB", "RGB", "L", "RGBA"])
    im = Image.frombytes(mode, (w, h), r.randbytes(w * h * len(mode)))
    d = ImageDraw.Draw(im)
    for _ in range(3):
        x0, y0 = r.randrange(w), r.randrange(h)
        d.rectangle([x0, y0, x0 + r.randrange(1, 30), y0 + r.randrange(1, 30)],
                    fill=tuple(r.randrange(256) for _ in mode) if mode != "L" else r.randrange(256))
    name = os.path.join(root, c, "img%04d" % i)
    if i % 2 and mode != "RGBA":
        im.save(name + ".jpg", quality=r.randrange(60, 96))
    else:
        im.save(name + ".png")
PY
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
