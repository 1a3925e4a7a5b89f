#!/usr/bin/python3
"""gen.py DIR FILES EVENTS: the ingest benchmark's HDF5 sources, HEP CNN
style: FILES files of EVENTS events each, "hist" float32 (EVENTS, 64, 64)
sparse counts (Poisson, mean 0.3), "y" int64 (EVENTS,), "weight" float32
(EVENTS,), and a file attribute. Even-numbered files are contiguous,
odd-numbered ones chunked 64 events a chunk with shuffle + gzip (level 4),
as h5py writes them."""
import os
import sys

import h5py
import numpy as np

d, files, events = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
os.makedirs(d, exist_ok=True)
for k in range(files):
    rng = np.random.default_rng(k)
    with h5py.File(os.path.join(d, "events%03d.h5" % k), "w") as f:
        x = rng.poisson(0.3, (events, 64, 64)).astype(np.float32)
        kw = dict(chunks=(64, 64, 64), compression="gzip", compression_opts=4,
                  shuffle=True) if k % 2 else {}
        f.create_dataset("hist", data=x, **kw)
        f.create_dataset("y", data=rng.integers(0, 2, events).astype(np.int64))
        f.create_dataset("weight", data=rng.random(events).astype(np.float32))
        f.attrs["run"] = k
