"""Read an image tree with torchvision ImageFolder + DataLoader; print JSON.

usage: loader.py ROOT [WORKERS] [EPOCHS] [--view] [--drop]
Prints one line an epoch: {"epoch": e, "samples": n, "seconds": s,
"samples_per_s": r, "classes": k, "checksum": c, "stats": ...} where
checksum sums every decoded pixel value (0-255) and label, so two trees
with the same content give the same number whatever their order.
--view: ROOT is a dlfs mount, read in the order of its epoch views, as a
training script would: a dlfs.torch.ViewSampler, and set_epoch(e) before
epoch e; "stats" is then dlfs.stats(ROOT) at the end of the epoch.
Otherwise the tree is read in its own order (shuffle=False).
--drop: drop the page cache between epochs (root only), so that a later
epoch reads from dlfs's tiers, not from the kernel's copy.
"""
import json
import os
import sys
import time
import warnings

import torch
from torch.utils.data import DataLoader
from torchvision import datasets, transforms


def drop_cache():
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def main():
    flags = {a for a in sys.argv[1:] if a.startswith("--")}
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    root = args[0]
    workers = int(args[1]) if len(args) > 1 else 4
    epochs = int(args[2]) if len(args) > 2 else 1
    tf = transforms.Compose([transforms.Resize((64, 64)), transforms.ToTensor()])
    ds = datasets.ImageFolder(root, transform=tf)
    sampler = None
    if "--view" in flags:
        import dlfs
        import dlfs.torch
        sampler = dlfs.torch.ViewSampler(ds, root)
    dl = DataLoader(ds, batch_size=64, num_workers=workers, shuffle=False,
                    sampler=sampler)
    for epoch in range(epochs):
        if epoch and "--drop" in flags:
            drop_cache()
        if sampler is not None:
            sampler.set_epoch(epoch)
        total, checksum = 0, 0
        t0 = time.perf_counter()
        for x, y in dl:
            total += len(y)
            # Whole numbers, so that the sum does not depend on the order.
            checksum += int((x * 255).round().long().sum()) + int(y.sum())
        dt = time.perf_counter() - t0
        print(json.dumps({"epoch": epoch, "samples": total, "seconds": dt,
                          "samples_per_s": total / dt,
                          "classes": len(ds.classes), "checksum": checksum,
                          "stats": dlfs.stats(root) if sampler else None}),
              flush=True)


if __name__ == "__main__":
    # More workers than cores is deliberate: the readers wait on I/O.
    warnings.filterwarnings("ignore", message=".*worker processes in total.*")
    torch.set_num_threads(1)
    main()
