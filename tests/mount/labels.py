"""labels.py MNT E SRC: the tree view of epoch E keeps each sample's
directory, so torchvision's ImageFolder reads the epoch with its labels.

1. Walking MNT/.dlfs/epochs/E/tree finds every position of the share
   once, each in the directory of the file its list line names, with that
   file's extension; every source directory is there.
2. ImageFolder over tree/train has the classes and class indices of
   ImageFolder over SRC/train. A DataLoader (2 workers) whose sampler
   sorts its samples by name reads the train files of the list in list
   order, each with the label of its source directory and the tensor the
   source image gives.
"""
import os
import sys

import torch
from torch.utils.data import DataLoader
from torchvision import transforms
from torchvision.datasets import ImageFolder

mnt, e, src = sys.argv[1], sys.argv[2], sys.argv[3]
view = os.path.join(mnt, ".dlfs", "epochs", e, "tree")
with open(os.path.join(mnt, ".dlfs", "epochs", e, "files")) as f:
    files = f.read().splitlines()

seen = []
for dp, dns, fns in os.walk(view):
    rel = os.path.relpath(dp, view)
    rel = "" if rel == "." else rel
    for n in fns:
        j = int(n.split(".")[0])
        p = files[j]
        if os.path.dirname(p) != rel:
            sys.exit("tree/%s/%s is %s: not in its directory" % (rel, n, p))
        if os.path.splitext(n)[1] != os.path.splitext(p)[1]:
            sys.exit("tree/%s/%s: not the extension of %s" % (rel, n, p))
        seen.append(j)
if sorted(seen) != list(range(len(files))):
    sys.exit("the tree holds %d samples, the list %d files" % (len(seen), len(files)))
for dp, dns, fns in os.walk(src):
    rel = os.path.relpath(dp, src)
    if not os.path.isdir(os.path.join(view, rel)):
        sys.exit("directory %s is not in the tree view" % rel)

t = transforms.Compose([transforms.Resize((32, 32)), transforms.ToTensor()])
plain = ImageFolder(os.path.join(src, "train"), transform=t)
ds = ImageFolder(os.path.join(view, "train"), transform=t)
if ds.classes != plain.classes or ds.class_to_idx != plain.class_to_idx:
    sys.exit("classes differ: %s vs %s" % (ds.classes, plain.classes))
order = sorted(range(len(ds)), key=lambda i: os.path.basename(ds.samples[i][0]))
want = [p for p in files if p.startswith("train/")]
if len(order) != len(want):
    sys.exit("ImageFolder finds %d samples, the list has %d" % (len(order), len(want)))
loader = DataLoader(ds, batch_size=None, sampler=order, num_workers=2)
n = 0
for k, (x, y) in enumerate(loader):
    p = want[k]
    if y != plain.class_to_idx[p.split("/")[1]]:
        sys.exit("sample %d (%s): label %d" % (k, p, y))
    if not torch.equal(x, t(plain.loader(os.path.join(src, p)))):
        sys.exit("sample %d (%s): another image" % (k, p))
    n += 1
print(n)
