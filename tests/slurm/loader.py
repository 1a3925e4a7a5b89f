#!/usr/bin/python3
"""loader.py SRC MNT [--forever] [--started FILE]

A PyTorch DataLoader (2 workers, batches of 16, shuffled) over every
regular file under MNT: each sample is the file's bytes as a uint8
tensor. The file list must equal SRC's, and every sample must equal the
source file's bytes. Prints "FILES BYTES" for one pass and exits 0, or
names the first differences on stderr and exits 1. --started FILE is
written once the first pass has checked out; --forever then reads pass
after pass until killed (for a job that is cancelled or runs out of
time while reading), a second apart: the job's mount stays in use
without taking the CPUs the tests that run beside it need.
"""
import argparse
import os
import sys
import time
import warnings

import torch
from torch.utils.data import DataLoader, Dataset


def tree(top):
    out = []
    for dp, _, fn in os.walk(top):
        out += [os.path.relpath(os.path.join(dp, n), top) for n in fn
                if os.path.isfile(os.path.join(dp, n))]
    return sorted(out)


class Files(Dataset):
    def __init__(self, root, names):
        self.root, self.names = root, names

    def __len__(self):
        return len(self.names)

    def __getitem__(self, i):
        with open(os.path.join(self.root, self.names[i]), "rb") as f:
            return i, torch.frombuffer(bytearray(f.read()), dtype=torch.uint8)


def as_list(batch):
    return batch


def one_pass(ds, src, seed):
    g = torch.Generator()
    g.manual_seed(seed)
    dl = DataLoader(ds, batch_size=16, shuffle=True, num_workers=2,
                    collate_fn=as_list, generator=g)
    seen, nbytes, errs = set(), 0, []
    for batch in dl:
        for i, t in batch:
            want = open(os.path.join(src, ds.names[i]), "rb").read()
            if t.numpy().tobytes() != want:
                errs.append("%s: %d bytes differ from the source's %d" %
                            (ds.names[i], t.numel(), len(want)))
            seen.add(i)
            nbytes += t.numel()
    if len(seen) != len(ds):
        errs.append("read %d of %d files" % (len(seen), len(ds)))
    return nbytes, errs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("src")
    ap.add_argument("mnt")
    ap.add_argument("--forever", action="store_true")
    ap.add_argument("--started")
    a = ap.parse_args()
    torch.set_num_threads(1)
    warnings.filterwarnings("ignore", message="This DataLoader will create")
    names = tree(a.mnt)
    if names != tree(a.src):
        print("loader: the mount lists %d files, the source %d" %
              (len(names), len(tree(a.src))), file=sys.stderr)
        return 1
    ds = Files(a.mnt, names)
    seed = 0
    while True:
        nbytes, errs = one_pass(ds, a.src, seed)
        for e in errs[:20]:
            print("loader: " + e, file=sys.stderr)
        if errs:
            return 1
        if seed == 0:
            print(len(names), nbytes, flush=True)
            if a.started:
                open(a.started, "w").close()
        if not a.forever:
            return 0
        seed += 1
        time.sleep(1)


if __name__ == "__main__":
    sys.exit(main())
