#!/usr/bin/python3
"""split.py SRC OUT: the baseline for dlfs-pack --split-hdf5, what a
custom conversion script does today: each HDF5 file of SRC is read whole
with h5py, and each sample written with np.save as OUT/FILE/NNNN/D.npy
(the names dlfs-pack --split-hdf5 gives), to be packed as a directory."""
import glob
import os
import sys

import h5py
import numpy as np

src, out = sys.argv[1:3]
for p in sorted(glob.glob(os.path.join(src, "*.h5"))):
    top = os.path.join(out, os.path.basename(p)[:-3])
    with h5py.File(p, "r") as f:
        data = {k: f[k][()] for k in f.keys()}
    n = len(data["hist"])
    w = len(str(n - 1))
    for i in range(n):
        d = os.path.join(top, "%0*d" % (w, i))
        os.makedirs(d)
        for k, v in data.items():
            np.save(os.path.join(d, k + ".npy"), v[i])
