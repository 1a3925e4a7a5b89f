#!/usr/bin/python3
"""torch_cmp.py SRC MNT NCLASSES NIMAGES

torchvision ImageFolder (Resize((48, 48)) then ToTensor) over SRC and over
MNT, each read by a DataLoader(num_workers=4, batch_size=32): the class
lists, class_to_idx, sample paths (relative) and labels are identical, and
every batch is identical (torch.equal on images and labels), for
shuffle=False and for shuffle=True with the same seeded generator.
"""
import os
import sys
import warnings

import torch
from torch.utils.data import DataLoader
from torchvision import datasets, transforms

src, mnt, ncls, nimg = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
torch.set_num_threads(1)
warnings.filterwarnings("ignore", message="This DataLoader will create")
tf = transforms.Compose([transforms.Resize((48, 48)), transforms.ToTensor()])
a = datasets.ImageFolder(src, transform=tf)
b = datasets.ImageFolder(mnt, transform=tf)
errs = []
if a.classes != b.classes:
    errs.append("classes: source %r, mount %r" % (a.classes, b.classes))
if len(b.classes) != ncls:
    errs.append("the mount has %d classes, expected %d: %r" % (len(b.classes), ncls, b.classes))
if a.class_to_idx != b.class_to_idx:
    errs.append("class_to_idx differs")
ra = [(os.path.relpath(p, src), t) for p, t in a.samples]
rb = [(os.path.relpath(p, mnt), t) for p, t in b.samples]
if ra != rb:
    errs.append("samples (path, label) differ: %d vs %d, first difference %r" %
                (len(ra), len(rb), next(((x, y) for x, y in zip(ra, rb) if x != y), None)))
if len(rb) != nimg:
    errs.append("the mount has %d samples, expected %d" % (len(rb), nimg))
if a.targets != b.targets:
    errs.append("targets differ")
if errs:
    for e in errs:
        print("  " + e, file=sys.stderr)
    sys.exit(1)

for shuffle in (False, True):
    ga = torch.Generator().manual_seed(7)
    gb = torch.Generator().manual_seed(7)
    la = DataLoader(a, batch_size=32, shuffle=shuffle, num_workers=4, generator=ga)
    lb = DataLoader(b, batch_size=32, shuffle=shuffle, num_workers=4, generator=gb)
    n = seen = 0
    for i, ((xa, ya), (xb, yb)) in enumerate(zip(la, lb)):
        if not torch.equal(ya, yb):
            errs.append("shuffle=%s batch %d: labels differ: %r vs %r" % (shuffle, i, ya.tolist(), yb.tolist()))
        if xa.shape != xb.shape or not torch.equal(xa, xb):
            errs.append("shuffle=%s batch %d: image tensors differ" % (shuffle, i))
        n += 1
        seen += len(yb)
        if len(errs) > 5:
            break
    if not errs and (n != (nimg + 31) // 32 or seen != nimg):
        errs.append("shuffle=%s: %d batches / %d samples, expected %d / %d" %
                    (shuffle, n, seen, (nimg + 31) // 32, nimg))
    print("torch_cmp: shuffle=%s: %d batches, %d samples compared" % (shuffle, n, seen), file=sys.stderr)
for e in errs:
    print("  " + e, file=sys.stderr)
sys.exit(1 if errs else 0)
