#!/usr/bin/python3
"""loader.py MODE ROOT WORKERS BATCH LIMIT SEED: one PyTorch epoch over the
samples of the ingest benchmark's dataset, read by DataLoader(num_workers=
WORKERS, batch_size=BATCH); prints one JSON line {"samples", "secs",
"rate", "bytes"}. LIMIT > 0 stops after that many seconds (the rate is
over what was read by then). Every sample is (hist, y, weight).

  rows   ROOT is a directory of the original HDF5 files; a Dataset reads
         row i of them with h5py (each worker opens every file once),
         shuffled globally with SEED: what a loader does without dlfs
  npy    ROOT is a dlfs mount of the npy form: ROOT/FILE/NNNN/{hist,y,
         weight}.npy read with np.load (y and weight, tiny, from the
         whole FILE/{y,weight}.npy that dlfs-pack keeps), shuffled
         globally with SEED
  h5     ROOT is a dlfs mount of the h5 form: ROOT/FILE/NNNN.h5 read with
         h5py, shuffled globally with SEED
  h5list ROOT is a dlfs mount of the h5 form: the per-sample files listed
         in ROOT/.dlfs/epochs/0/files, in that order (dlfs shuffled them,
         and prefetches in that order), read with h5py
"""
import glob
import json
import os
import sys
import time

import h5py
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

NAMES = ("hist", "y", "weight")


class Rows(Dataset):
    def __init__(self, root):
        self.paths = sorted(glob.glob(os.path.join(root, "*.h5")))
        self.index = []
        for k, p in enumerate(self.paths):
            with h5py.File(p, "r") as f:
                self.index += [(k, i) for i in range(f["hist"].shape[0])]
        self.files = None

    def __len__(self):
        return len(self.index)

    def __getitem__(self, n):
        if self.files is None:
            self.files = [h5py.File(p, "r") for p in self.paths]
        k, i = self.index[n]
        f = self.files[k]
        return tuple(torch.from_numpy(np.asarray(f[d][i])) for d in NAMES)


class Npy(Dataset):
    """TOP/i/NAME.npy per sample, or TOP/NAME.npy for a dataset whose
    tiny samples dlfs-pack kept whole (loaded once per worker)."""

    def __init__(self, root):
        self.dirs = sorted(glob.glob(os.path.join(root, "*", "[0-9]*")))
        self.whole = {}

    def __len__(self):
        return len(self.dirs)

    def one(self, d, k):
        top = os.path.dirname(d)
        if (top, k) not in self.whole:
            p = os.path.join(top, k + ".npy")
            self.whole[top, k] = np.load(p) if os.path.exists(p) else None
        a = self.whole[top, k]
        if a is None:
            return np.load(os.path.join(d, k + ".npy"))
        return a[int(os.path.basename(d))]

    def __getitem__(self, n):
        d = self.dirs[n]
        return tuple(torch.from_numpy(np.asarray(self.one(d, k))) for k in NAMES)


class H5Files(Dataset):
    def __init__(self, root):
        self.files = sorted(glob.glob(os.path.join(root, "*", "*.h5")))  # not .meta.h5

    def __len__(self):
        return len(self.files)

    def __getitem__(self, n):
        with h5py.File(self.files[n], "r") as f:
            return tuple(torch.from_numpy(np.asarray(f[k][()])) for k in NAMES)


class H5List(Dataset):
    def __init__(self, root):
        with open(os.path.join(root, ".dlfs", "epochs", "0", "files")) as f:
            self.files = [os.path.join(root, l) for l in f.read().splitlines()
                          if not l.endswith(".meta.h5")]

    def __len__(self):
        return len(self.files)

    def __getitem__(self, n):
        with h5py.File(self.files[n], "r") as f:
            return tuple(torch.from_numpy(np.asarray(f[k][()])) for k in NAMES)


def main():
    mode, root, workers, batch, limit, seed = sys.argv[1:7]
    ds = {"rows": Rows, "npy": Npy, "h5": H5Files, "h5list": H5List}[mode](root)
    g = torch.Generator()
    g.manual_seed(int(seed))
    dl = DataLoader(ds, batch_size=int(batch), num_workers=int(workers),
                    shuffle=mode != "h5list", generator=g)
    t0 = time.monotonic()
    n = nbytes = 0
    for b in dl:
        n += b[0].shape[0]
        nbytes += sum(x.numel() * x.element_size() for x in b)
        if float(limit) > 0 and time.monotonic() - t0 > float(limit):
            break
    secs = time.monotonic() - t0
    print(json.dumps({"samples": n, "secs": round(secs, 3), "rate": round(n / secs, 1),
                      "bytes": nbytes, "total": len(ds)}))


if __name__ == "__main__":
    main()
