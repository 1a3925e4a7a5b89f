#!/usr/bin/python3
"""Image-classification tree of small real JPEGs for tools/bench/sampler
(not part of dlfs).

  gen.py DEST COUNT CLASSES SIDE SEED

COUNT RGB JPEGs of SIDE x SIDE pixels (PIL, quality 90) in DEST/classNN/
imgNNNNNNN.jpg, image i in class i % CLASSES: a gradient per class with
seeded noise, so each file differs and decodes as a photo of its size
does. Small, so that decoding them does not hide the I/O. Prints "files
bytes". Image i depends on SEED and i alone, whatever the number of jobs.
"""
import os
import sys
from multiprocessing import Pool

import numpy as np
from PIL import Image


def one(args):
    dest, i, classes, side, seed = args
    c = i % classes
    y, x = np.mgrid[0:side, 0:side]
    rng = np.random.default_rng(seed * 1000003 + i)
    base = np.stack([(x * (c + 1) * 25 // side) % 256,
                     y * 255 // side,
                     ((x + y) * (i % 7 + 1) * 16 // side) % 256],
                    -1).astype(np.int16)
    noise = int(rng.integers(30, 51))
    img = np.clip(base + rng.integers(-noise, noise + 1, base.shape),
                  0, 255).astype(np.uint8)
    path = os.path.join(dest, "class%02d" % c, "img%07d.jpg" % i)
    Image.fromarray(img).save(path, "JPEG", quality=90)
    return os.path.getsize(path)


def main():
    if len(sys.argv) != 6:
        sys.exit("usage: gen.py DEST COUNT CLASSES SIDE SEED")
    dest = sys.argv[1]
    count, classes, side, seed = (int(a) for a in sys.argv[2:6])
    for c in range(classes):
        os.makedirs(os.path.join(dest, "class%02d" % c), exist_ok=True)
    jobs = [(dest, i, classes, side, seed) for i in range(count)]
    with Pool(os.cpu_count() or 1) as p:
        total = sum(p.imap_unordered(one, jobs, chunksize=256))
    print(count, total)


if __name__ == "__main__":
    main()
