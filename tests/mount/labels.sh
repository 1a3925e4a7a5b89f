#!/bin/bash
# labels: the tree view (.dlfs/epochs/E/tree/) keeps each sample's
# directory, so a loader that labels by directory reads an epoch in view
# order with its labels (issue 27, item 5). An ImageFolder tree (train/
# and val/, a hard link across classes, a file at the root, a private
# directory) read by torchvision through the view (labels.py); names in
# the wrong directory are not found; a directory keeps its mode, never
# writable; ".." leads back up. Skips (77) without torch/torchvision/PIL.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
mount_setup
need_py torch torchvision PIL

SRC="$T/src"
mkdir "$SRC"
gentree images "$SRC/train" --count 240 --seed 3
gentree images "$SRC/val" --count 60 --seed 4
ln "$SRC/train/class00_cat/img0000.png" "$SRC/train/class01_dog/linked.png"
echo "a dataset card" >"$SRC/README.txt"
mkdir -m 700 "$SRC/private"
echo secret >"$SRC/private/s.bin"
DS="$T/ds.dlfs"
pack "$SRC" -o "$DS" --chunk-size 256K --container-size 2M -q
expect_ok "pack"
MNT="$T/mnt"
mkdir "$MNT"
dlfs_mount "$DS" "$MNT" -o ram_cache=16M
E=2
V="$MNT/.dlfs/epochs/$E"

# 240 images and the hard link (dlfs-pack keeps each name as a file).
got=$(tmo "$PYTHON" "$HERE/labels.py" "$MNT" "$E" "$SRC") ||
	fail "ImageFolder over the tree view (see above)"
[ "$got" = 241 ] || fail "ImageFolder over the tree view read $got samples, want 241"

note "names, modes and parents"
ls "$V" | tr '\n' ' ' | grep -qx "files samples tree " || fail "epoch $E lists $(ls "$V" | tr '\n' ' ')"
[ "$(stat -c %a "$V/tree/private")" = 500 ] ||
	fail "tree/private has mode $(stat -c %a "$V/tree/private"), want 500 (its own 700, not writable)"
[ "$(stat -c %a "$V/tree/train")" = 555 ] || fail "tree/train has mode $(stat -c %a "$V/tree/train")"
[ "$(stat -c %i "$V/tree/train/class01_dog/..")" = "$(stat -c %i "$V/tree/train")" ] ||
	fail "tree/train/class01_dog/.. is not tree/train"
[ "$(stat -c %i "$V/tree/train/..")" = "$(stat -c %i "$V/tree")" ] || fail "tree/train/.. is not tree"
[ "$(stat -c %i "$V/tree/..")" = "$(stat -c %i "$V")" ] || fail "tree/.. is not the epoch"
root=$(ls "$V/tree" | grep '\.txt$') || fail "README.txt is not at the tree's root"
cmp -s "$V/tree/$root" "$SRC/README.txt" || fail "tree/$root is not README.txt"
cat_one=$(ls "$V/tree/train/class00_cat" | head -n 1)
dog_one=$(ls "$V/tree/train/class01_dog" | head -n 1)
cat "$V/tree/train/class01_dog/$cat_one" >/dev/null 2>&1 &&
	fail "sample $cat_one of class00_cat is found under class01_dog"
cat "$V/samples/$dog_one" >/dev/null || fail "samples/$dog_one (a class01_dog sample)"
cmp -s "$V/samples/$dog_one" "$V/tree/train/class01_dog/$dog_one" ||
	fail "tree/train/class01_dog/$dog_one differs from samples/$dog_one"
[ ! -e "$V/tree/train/nosuchclass" ] || fail "a directory the dataset lacks"
[ "$(find "$V/tree" -type f | wc -l)" = "$(wc -l <"$V/files")" ] ||
	fail "the tree holds $(find "$V/tree" -type f | wc -l) files, the list $(wc -l <"$V/files")"

check_log "$DLFS_LOG"
dlfs_umount "$MNT"
check_log "$DLFS_LOG"
exit 0
