"""python_run.py PREFIX SRC: import dlfs in a program under dlfs-run,
where PREFIX exists only through libdlfs-preload.so.

1. epoch_files(PREFIX, 2) is .dlfs/epochs/2/files, and info() counts the
   source's files.
2. ViewSampler over ImageFolder(PREFIX/train) yields the list's order, and
   a DataLoader of 2 forked workers reads each sample with its source's
   label and pixels.
3. A directory under PREFIX is refused, naming PREFIX as the root.
Prints the samples read.
"""
import os
import sys

import torch
from torch.utils.data import DataLoader
from torchvision import transforms
from torchvision.datasets import ImageFolder

import dlfs
from dlfs.torch import ViewSampler


def check(cond, what):
    if not cond:
        sys.exit("FAIL: " + what)


prefix, src = sys.argv[1:3]
with open(os.path.join(prefix, ".dlfs", "epochs", "2", "files")) as f:
    lines = f.read().splitlines()
check(list(dlfs.epoch_files(prefix, 2)) == lines, "epoch_files(2)")
check(dlfs.info(prefix)["files"] == len(lines), "info files")

t = transforms.ToTensor()
ds = ImageFolder(os.path.join(prefix, "train"), transform=t)
plain = ImageFolder(os.path.join(src, "train"))
sampler = ViewSampler(ds, prefix, epoch=2)
want = [p for p in lines if p.startswith("train/")]
got = [os.path.relpath(ds.samples[i][0], prefix) for i in sampler]
check(got == want, "the sampler's order is not the list's")
loader = DataLoader(ds, batch_size=None, sampler=sampler, num_workers=2,
                    multiprocessing_context="fork")
n = 0
for k, (x, y) in enumerate(loader):
    p = want[k]
    check(y == plain.class_to_idx[p.split("/")[1]], "%s: label %d" % (p, y))
    check(torch.equal(x, t(plain.loader(os.path.join(src, p)))),
          "%s: pixels differ from the source" % p)
    n += 1
check(n == len(want), "%d samples, want %d" % (n, len(want)))
try:
    dlfs.info(os.path.join(prefix, "train"))
    sys.exit("FAIL: info() of a directory in the prefix")
except dlfs.NotMountedError as e:
    check("give the mount's root, " + prefix in str(e), str(e))
print(n)
