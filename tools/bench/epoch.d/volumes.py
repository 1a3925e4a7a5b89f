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

import numpy as np

from gentree import tree_args, tree_paths

SIDE = 64
MIN_MEAN, MAX_MEAN = 2.0, 8.0


def main():
    dest, files, per_dir, seed = tree_args("volumes.py")
    for i, path in tree_paths(dest, files, per_dir, "v", "vol"):
        rng = np.random.default_rng([seed, 1, i])
        mean = rng.uniform(MIN_MEAN, MAX_MEAN)
        vol = rng.poisson(mean, size=(SIDE, SIDE, SIDE)).astype(np.float32)
        np.save(path, vol)


if __name__ == "__main__":
    main()
