#!/usr/bin/python3
"""tokens.py DEST FILES PER_DIR SEED: a tokenised-text-like dataset (not
part of dlfs), the compressible set of the benchmarks that is not float
data: FILES uint16 .npy arrays, DEST/sNNN/docNNNNNNN.npy, PER_DIR a
directory, each a document of 2,048 to 6,144 tokens (uniform; mean 4,096,
~8 KiB) drawn independently from a Zipf distribution (exponent 1.0) over a
vocabulary of 50,257 ids (GPT-2's size). As with a BPE vocabulary, frequent
tokens have low ids: rank r gets an id from a seeded shuffle of its block
of 1,024 ranks. A function of SEED and the file's number only, so any
machine makes the same bytes. Run with /usr/bin/python3 (numpy)."""
import os
import sys

import numpy as np

VOCAB = 50257
EXPONENT = 1.0
MIN_TOKENS, MAX_TOKENS = 2048, 6144
BLOCK = 1024


def vocabulary(seed):
    """cdf over ranks, and the id of each rank."""
    p = 1.0 / np.arange(1, VOCAB + 1, dtype=np.float64) ** EXPONENT
    cdf = np.cumsum(p / p.sum())
    cdf[-1] = 1.0
    rng = np.random.default_rng([seed, 0])
    ids = np.arange(VOCAB, dtype=np.uint16)
    for a in range(0, VOCAB, BLOCK):
        rng.shuffle(ids[a:a + BLOCK])
    return cdf, ids


def main():
    if len(sys.argv) != 5:
        sys.exit("usage: tokens.py DEST FILES PER_DIR SEED")
    dest = sys.argv[1]
    files, per_dir, seed = (int(x) for x in sys.argv[2:5])
    if files < 1 or per_dir < 1:
        sys.exit("tokens.py: FILES and PER_DIR must be positive")
    cdf, ids = vocabulary(seed)
    ndirs = (files + per_dir - 1) // per_dir
    dw = max(3, len(str(ndirs - 1)))
    fw = max(7, len(str(files - 1)))
    for i in range(files):
        d = os.path.join(dest, "s%0*d" % (dw, i // per_dir))
        if i % per_dir == 0:
            os.makedirs(d, exist_ok=True)
        rng = np.random.default_rng([seed, 1, i])
        n = int(rng.integers(MIN_TOKENS, MAX_TOKENS + 1))
        doc = ids[np.searchsorted(cdf, rng.random(n), side="right")]
        np.save(os.path.join(d, "doc%0*d.npy" % (fw, i)), doc)


if __name__ == "__main__":
    main()
