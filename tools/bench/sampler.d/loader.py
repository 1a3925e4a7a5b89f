#!/usr/bin/python3
"""One training run's reading for tools/bench/sampler (not part of dlfs).

  loader.py ROOT ORDER EPOCHS WORKERS BATCH [--pfs-dev DEV] [--stats MNT]
            [--drop]

torchvision ImageFolder(ROOT) with ToTensor, a DataLoader of WORKERS
workers, batch BATCH and the default collate, EPOCHS epochs in one
process, as a training script reads:
  shuffle  DataLoader(shuffle=True), its generator seeded with 0 (every
           run sees the same orders)
  view     DataLoader(sampler=dlfs.torch.ViewSampler(ds, ROOT)), with
           sampler.set_epoch(e) before epoch e (0, 1, ...); ROOT is then
           the mount's root, whose top directories are the classes
Epoch 1's time counts the ImageFolder scan and the sampler's set-up (a
training pays both before its first batch); the workers start again each
epoch, as they do by default. --drop: sync and drop the page cache between
epochs (untimed), so that a later epoch reads what a node whose page cache
cannot hold the data set reads. --pfs-dev: the PFS's block device
(/proc/diskstats name), its requests and bytes counted per epoch.
--stats: a dlfs mount whose /.dlfs/stats is sampled around each epoch.
Prints one JSON object: per epoch, samples, secs, samples/s, the label
sum (both orders must give the same), PFS device counters and the dlfs
stats at its end.
"""
import argparse
import json
import os
import sys
import time
import warnings

import torch
from torch.utils.data import DataLoader
from torchvision import datasets, transforms

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from benchlib import dlfs_stats  # noqa: E402


def dev_reads(dev):
    if not dev:
        return 0, 0
    with open("/proc/diskstats") as f:
        for line in f:
            w = line.split()
            if w[2] == dev:
                return int(w[3]), int(w[5]) * 512
    sys.exit("loader.py: no device %s in /proc/diskstats" % dev)


def drop_caches():
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def make_loader(a):
    t0 = time.perf_counter()
    ds = datasets.ImageFolder(a.root, transform=transforms.ToTensor())
    scan = time.perf_counter() - t0
    sampler = None
    if a.order == "view":
        import dlfs.torch
        sampler = dlfs.torch.ViewSampler(ds, a.root)
        dl = DataLoader(ds, batch_size=a.batch, sampler=sampler,
                        num_workers=a.workers)
    else:
        g = torch.Generator()
        g.manual_seed(0)
        dl = DataLoader(ds, batch_size=a.batch, shuffle=True,
                        num_workers=a.workers, generator=g)
    setup = time.perf_counter() - t0
    return ds, sampler, dl, scan, setup


def run_epoch(a, dl, sampler, e):
    if sampler is not None:
        sampler.set_epoch(e)
    n = labels = 0
    r0, b0 = dev_reads(a.pfs_dev)
    t0 = time.perf_counter()
    for x, y in dl:
        n += x.shape[0]
        labels += int(y.sum())
    secs = time.perf_counter() - t0
    r1, b1 = dev_reads(a.pfs_dev)
    return {"epoch": e, "samples": n, "secs": secs, "label_sum": labels,
            "pfs_reqs": r1 - r0, "pfs_bytes": b1 - b0,
            "stats": dlfs_stats(a.stats) if a.stats else None}


def main():
    # More workers than cores is what a user sets: the workers wait on I/O.
    warnings.filterwarnings("ignore", message=".*worker processes in total")
    p = argparse.ArgumentParser()
    p.add_argument("root")
    p.add_argument("order", choices=("shuffle", "view"))
    p.add_argument("epochs", type=int)
    p.add_argument("workers", type=int)
    p.add_argument("batch", type=int)
    p.add_argument("--pfs-dev")
    p.add_argument("--stats")
    p.add_argument("--drop", action="store_true")
    a = p.parse_args()
    torch.manual_seed(0)
    r0, b0 = dev_reads(a.pfs_dev)
    st0 = dlfs_stats(a.stats) if a.stats else None
    ds, sampler, dl, scan, setup = make_loader(a)
    r1, b1 = dev_reads(a.pfs_dev)
    epochs = []
    for e in range(a.epochs):
        if e and a.drop:
            drop_caches()
        r = run_epoch(a, dl, sampler, e)
        if e == 0:
            # The scan and the sampler's set-up come before the first batch.
            r.update(secs=r["secs"] + setup, pfs_reqs=r["pfs_reqs"] + r1 - r0,
                     pfs_bytes=r["pfs_bytes"] + b1 - b0)
        r["samples_s"] = r["samples"] / r["secs"]
        epochs.append(r)
        if r["samples"] != len(ds):
            sys.exit("loader.py: epoch %d read %d samples of %d"
                     % (e, r["samples"], len(ds)))
    print(json.dumps({"samples": len(ds), "classes": len(ds.classes),
                      "scan_secs": scan, "setup_secs": setup,
                      "stats_start": st0, "epochs": epochs}))


if __name__ == "__main__":
    main()
