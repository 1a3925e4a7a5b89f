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

import numpy as np

from gentree import tree_args, tree_paths

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
    dest, files, per_dir, seed = tree_args("tokens.py")
    cdf, ids = vocabulary(seed)
    for i, path in tree_paths(dest, files, per_dir, "s", "doc"):
        rng = np.random.default_rng([seed, 1, i])
        n = int(rng.integers(MIN_TOKENS, MAX_TOKENS + 1))
        doc = ids[np.searchsorted(cdf, rng.random(n), side="right")]
        np.save(path, doc)


if __name__ == "__main__":
    main()
