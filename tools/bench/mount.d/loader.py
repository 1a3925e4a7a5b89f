#!/usr/bin/python3
"""PyTorch DataLoader throughput for tools/bench/mount (not part of dlfs).

  loader.py ROOT EPOCHS [WORKERS] [BATCH] [WARMUP] [ORDER]

torchvision ImageFolder(ROOT) with PIL decoding + ToTensor, DataLoader with
shuffle=True (generator seeded with 0, so every system sees the same order),
WORKERS workers (default 4), batch BATCH (default 64). WARMUP untimed
warm-up epochs (default 1; 0 times a cold first epoch, as tools/bench/epoch
does), then EPOCHS timed epochs (worker start-up included, as in training).
Prints one JSON object: samples, per-epoch seconds, samples/s of the median
epoch, and the ImageFolder scan time.
"""
import json
import os
import statistics
import sys
import time
import warnings

import torch
from torch.utils.data import DataLoader
from torchvision import datasets, transforms


def main():
    # 4 workers on a 2-CPU machine is the benchmark's point, not a mistake.
    warnings.filterwarnings("ignore", message=".*worker processes in total")
    root = sys.argv[1]
    epochs = int(sys.argv[2])
    workers = int(sys.argv[3]) if len(sys.argv) > 3 else 4
    batch = int(sys.argv[4]) if len(sys.argv) > 4 else 64
    warmup = int(sys.argv[5]) if len(sys.argv) > 5 else 1
    order = sys.argv[6] if len(sys.argv) > 6 else "shuffle"
    if order not in ("shuffle", "name"):
        sys.exit("loader.py: ORDER is shuffle or name, not %s" % order)
    torch.manual_seed(0)
    t0 = time.perf_counter()
    ds = datasets.ImageFolder(root, transform=transforms.ToTensor())
    scan = time.perf_counter() - t0
    g = torch.Generator()
    g.manual_seed(0)
    if order == "name":
        by_name = sorted(range(len(ds)),
                         key=lambda i: os.path.basename(ds.samples[i][0]))
        dl = DataLoader(ds, batch_size=batch, sampler=by_name,
                        num_workers=workers)
    else:
        dl = DataLoader(ds, batch_size=batch, shuffle=True,
                        num_workers=workers, generator=g)
    secs = []
    for e in range(warmup + epochs):
        n = 0
        t0 = time.perf_counter()
        for x, y in dl:
            n += x.shape[0]
        dt = time.perf_counter() - t0
        if n != len(ds):
            sys.exit("epoch saw %d of %d samples" % (n, len(ds)))
        if e >= warmup:
            secs.append(dt)
    med = statistics.median(secs)
    print(json.dumps({"samples": len(ds), "classes": len(ds.classes),
                      "epoch_secs": secs, "samples_s": len(ds) / med,
                      "scan_secs": scan}))


if __name__ == "__main__":
    main()
