#!/usr/bin/python3
"""preload_spawn.py SRC P NIMAGES
torchvision ImageFolder over SRC and over P (the same tree through
libdlfs-preload.so), read by DataLoader(num_workers=4) whose workers are
started with spawn (fresh interpreters that get the library from
LD_PRELOAD, not from a fork): every batch identical. torch_cmp.py does
the same with fork, the default.
"""
import sys
import warnings

import torch
from torch.utils.data import DataLoader
from torchvision import datasets, transforms


def main():
    src, p, nimg = sys.argv[1], sys.argv[2], int(sys.argv[3])
    torch.set_num_threads(1)
    warnings.filterwarnings("ignore", message="This DataLoader will create")
    tf = transforms.Compose([transforms.Resize((48, 48)), transforms.ToTensor()])
    a = datasets.ImageFolder(src, transform=tf)
    b = datasets.ImageFolder(p, transform=tf)
    if a.classes != b.classes or a.targets != b.targets or len(b) != nimg:
        sys.exit("preload_spawn: ImageFolder differs: %d classes / %d samples through the preload"
                 % (len(b.classes), len(b)))
    la = DataLoader(a, batch_size=32, num_workers=4, multiprocessing_context="spawn")
    lb = DataLoader(b, batch_size=32, num_workers=4, multiprocessing_context="spawn")
    n = 0
    for i, ((xa, ya), (xb, yb)) in enumerate(zip(la, lb)):
        if not torch.equal(ya, yb) or not torch.equal(xa, xb):
            sys.exit("preload_spawn: batch %d differs" % i)
        n += len(yb)
    if n != nimg:
        sys.exit("preload_spawn: %d samples, expected %d" % (n, nimg))
    print("preload_spawn: %d samples compared" % n, file=sys.stderr)


if __name__ == "__main__":
    main()
