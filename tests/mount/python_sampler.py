"""python_sampler.py MNT SRC: dlfs.torch.ViewSampler under a DataLoader of
4 workers started by fork, then by spawn (one process: torch is imported
once, and each spawned worker imports it again).

1. ImageFolder over MNT/train: in epochs 0 and 3 (set_epoch), the loader
   gives the train/ files of .dlfs/epochs/E/files in list order, each
   with its source directory's label and the pixels its source image
   gives; len(sampler) is their number.
2. A dataset that is not torchvision's, over MNT/val, with its paths
   given by an attribute name and by a callable: the val/ files in list
   order. A dataset over other paths, or over a view's, is refused.
Prints the samples read.
"""
import os
import sys

import torch
from torch.utils.data import DataLoader, Dataset
from torchvision import transforms
from torchvision.datasets import ImageFolder

import dlfs
from dlfs.torch import ViewSampler

T = transforms.Compose([transforms.Resize((16, 16)), transforms.ToTensor()])


class Files(Dataset):
    """A dataset of raw bytes over a list of paths."""

    def __init__(self, files):
        self.files = files

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        with open(self.files[i], "rb") as f:
            return f.read()


def check(cond, what):
    if not cond:
        sys.exit("FAIL: " + what)


def listed(mnt, e, top):
    with open(os.path.join(mnt, ".dlfs", "epochs", str(e), "files")) as f:
        return [p for p in f.read().splitlines() if p.startswith(top)]


def read_train(mnt, src, ctx):
    """Epochs 0 and 3 of MNT/train through 4 workers started by ctx."""
    ds = ImageFolder(os.path.join(mnt, "train"), transform=T)
    plain = ImageFolder(os.path.join(src, "train"))
    sampler = ViewSampler(ds, mnt)
    # Persistent: one start of 4 workers (a torch import each with spawn)
    # serves both epochs, and the sampler still runs in this process.
    loader = DataLoader(ds, batch_size=8, sampler=sampler, num_workers=4,
                        multiprocessing_context=ctx, persistent_workers=True)
    n = 0
    for e in (0, 3):
        sampler.set_epoch(e)
        want = listed(mnt, e, "train/")
        check(len(sampler) == len(want), "epoch %d: len(sampler) %d, the "
              "list has %d train files" % (e, len(sampler), len(want)))
        k = 0
        for x, y in loader:
            for b in range(len(y)):
                p = want[k]
                check(y[b] == plain.class_to_idx[p.split("/")[1]],
                      "epoch %d sample %d (%s): label %d" % (e, k, p, y[b]))
                ref = T(plain.loader(os.path.join(src, p)))
                check(torch.equal(x[b], ref), "epoch %d sample %d (%s): "
                      "pixels differ from the source" % (e, k, p))
                k += 1
        check(k == len(want), "epoch %d: %d samples, want %d"
              % (e, k, len(want)))
        n += k
    return n


def main():
    mnt, src = sys.argv[1:3]
    n = sum(read_train(mnt, src, ctx) for ctx in ("fork", "spawn"))
    check(listed(mnt, 0, "train/") != listed(mnt, 3, "train/"),
          "epochs 0 and 3 have one order")

    val = sorted(os.path.join(mnt, "val", d, f)
                 for d in os.listdir(os.path.join(mnt, "val"))
                 for f in os.listdir(os.path.join(mnt, "val", d)))
    files = Files(val)
    want = listed(mnt, 2, "val/")
    for paths in ("files", lambda i: val[i]):
        s = ViewSampler(files, mnt, epoch=2, paths=paths)
        got = [os.path.relpath(val[i], mnt) for i in s]
        check(got == want, "val/ by paths=%r: not the list's order" % paths)
        n += len(got)
    try:
        ViewSampler(Files([os.path.join(src, "val", "x.png")]), mnt,
                    paths="files")
        sys.exit("FAIL: a dataset outside the mount")
    except dlfs.Error as e:
        check("not under the mount root" in str(e), str(e))
    tv = ImageFolder(dlfs.tree(mnt, 0, "train"))
    try:
        ViewSampler(tv, mnt)
        sys.exit("FAIL: a dataset over the tree view")
    except dlfs.Error as e:
        check("tree_order" in str(e), str(e))
    try:
        ViewSampler(object(), mnt)
        sys.exit("FAIL: a dataset without paths")
    except TypeError as e:
        check("paths=" in str(e), str(e))
    print(n)


if __name__ == "__main__":
    main()
