#!/usr/bin/python3
"""ingest_torch.py SRC.h5 NPY_DIR H5_DIR

A PyTorch Dataset over the per-sample files dlfs-pack --split-hdf5 made
of SRC.h5 (NPY_DIR/NNN/images.npy read with np.load, and labels, mask
and flags, whose samples are tiny, rows of NPY_DIR/{labels,mask,flags}.npy;
H5_DIR/NNN.h5 read with h5py), under DataLoader(num_workers=4,
batch_size=8), gives the same batches as a Dataset that reads rows of
SRC.h5 itself (opened once per worker): same dtypes, shapes and bytes,
unshuffled and shuffled with the same seed. Exit 1 on any difference.
"""
import glob
import os
import sys

import h5py
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

src, npy_dir, h5_dir = sys.argv[1:4]
NAMES = ["images", "labels", "mask", "flags"]


class Rows(Dataset):
    """The loader people write today: rows of the original file."""

    def __init__(self, path):
        self.path, self.f = path, None
        with h5py.File(path, "r") as f:
            self.n = f["images"].shape[0]

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if self.f is None:
            self.f = h5py.File(self.path, "r")
        return tuple(torch.from_numpy(np.asarray(self.f[k][i])) for k in NAMES)


class NpyFiles(Dataset):
    """NNN/NAME.npy per sample, or, for a dataset of tiny samples that
    dlfs-pack kept whole, row i of NAME.npy beside the samples (loaded
    once per worker)."""

    def __init__(self, d):
        self.d = d
        self.dirs = sorted(glob.glob(os.path.join(d, "[0-9]*")))
        self.whole = {}

    def __len__(self):
        return len(self.dirs)

    def one(self, i, k):
        if k not in self.whole:
            p = os.path.join(self.d, k + ".npy")
            self.whole[k] = np.load(p) if os.path.exists(p) else None
        if self.whole[k] is None:
            return np.load(os.path.join(self.dirs[i], k + ".npy"))
        return np.array(self.whole[k][i])  # a copy; 0-d for (N,)

    def __getitem__(self, i):
        return tuple(torch.from_numpy(self.one(i, k)) for k in NAMES)


class H5Files(Dataset):
    def __init__(self, d):
        self.files = sorted(glob.glob(os.path.join(d, "*.h5")))  # not .meta.h5

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        with h5py.File(self.files[i], "r") as f:
            return tuple(torch.from_numpy(np.asarray(f[k][()])) for k in NAMES)


def batches(ds, shuffle):
    g = torch.Generator()
    g.manual_seed(1234)
    return list(DataLoader(ds, batch_size=8, num_workers=4, shuffle=shuffle, generator=g))


def same(x, y):
    # bytes, not torch.equal: NaN rows must match too
    return x.dtype == y.dtype and x.shape == y.shape and x.numpy().tobytes() == y.numpy().tobytes()


errs = []
for shuffle in (False, True):
    want = batches(Rows(src), shuffle)
    for label, ds in (("npy", NpyFiles(npy_dir)), ("h5", H5Files(h5_dir))):
        if len(ds) != len(Rows(src)):
            errs.append("%s: %d samples, expected %d" % (label, len(ds), len(Rows(src))))
            continue
        got = batches(ds, shuffle)
        for b, (x, y) in enumerate(zip(want, got)):
            for k, tx, ty in zip(NAMES, x, y):
                if not same(tx, ty):
                    errs.append("%s shuffle=%s batch %d %s: %s %s vs %s %s" % (
                        label, shuffle, b, k, tx.dtype, tuple(tx.shape), ty.dtype, tuple(ty.shape)))
for e in errs[:20]:
    print("  " + e, file=sys.stderr)
print("ingest_torch: %d differences" % len(errs), file=sys.stderr)
sys.exit(1 if errs else 0)
