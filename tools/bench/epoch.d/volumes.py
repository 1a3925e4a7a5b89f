#!/usr/bin/python3
"""volumes.py DEST FILES PER_DIR SEED: a scientific-volume dataset (not
part of dlfs), the compressible set of the benchmarks whose files are
large enough that the PFS, not the per-file cost, bounds an epoch: FILES
float32 .npy grids of 64x64x64 (1 MiB each, like one CosmoFlow
sub-volume of particle counts), DEST/vNNN/volNNNNNNN.npy, PER_DIR a
directory. Each voxel is a Poisson count around a per-volume mean drawn
from 2 to 8: zstd's default level shrinks 4 MiB chunks of them about 7x
(dlfs-inspect info: 7.02 on 953 files in tools/bench/epoch --quick). A
function of SEED and the file's number only, so any machine makes the
same bytes. Run with /usr/bin/python3 (numpy)."""
import os
import sys

import numpy as np

SIDE = 64
MIN_MEAN, MAX_MEAN = 2.0, 8.0


def main():
    if len(sys.argv) != 5:
        sys.exit("usage: volumes.py DEST FILES PER_DIR SEED")
    dest = sys.argv[1]
    files, per_dir, seed = (int(x) for x in sys.argv[2:5])
    if files < 1 or per_dir < 1:
        sys.exit("volumes.py: FILES and PER_DIR must be positive")
    ndirs = (files + per_dir - 1) // per_dir
    dw = max(3, len(str(ndirs - 1)))
    fw = max(7, len(str(files - 1)))
    for i in range(files):
        d = os.path.join(dest, "v%0*d" % (dw, i // per_dir))
        if i % per_dir == 0:
            os.makedirs(d, exist_ok=True)
        rng = np.random.default_rng([seed, 1, i])
        mean = rng.uniform(MIN_MEAN, MAX_MEAN)
        vol = rng.poisson(mean, size=(SIDE, SIDE, SIDE)).astype(np.float32)
        np.save(os.path.join(d, "vol%0*d.npy" % (fw, i)), vol)


if __name__ == "__main__":
    main()
