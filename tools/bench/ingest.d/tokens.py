#!/usr/bin/python3
"""tokens.py DEST COUNT SEED: a tokenised-text-like set for the ingest
benchmark's compression rows: COUNT .npy files of uint16 token ids, as a
tokeniser writes a corpus, 100 a directory (DEST/DDD/docNNNNNN.npy).

Each document is 2,048 to 6,143 tokens (uniform) drawn independently from
a Zipf-like law over a 50,257-token vocabulary (GPT-2's size): token id r
has weight 1 / (r + 2.7) (Zipf-Mandelbrot, exponent 1; 11.7 bits of
entropy a token). Small ids are the frequent ones, as in a BPE
vocabulary, whose ids follow the order its merges were learnt in.
Independent draws have no phrase structure: zstd gets only the skew of
the law (about 1.26x at level 3), less than from real text. ~8 KiB a
document on average. Written one document at a time (a stream: memory
does not grow with COUNT); the same COUNT and SEED give the same bytes."""
import os
import sys

import numpy as np

VOCAB = 50257
PER_DIR = 100


def main():
    dest, count, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    rng = np.random.default_rng(seed)
    w = 1.0 / (np.arange(VOCAB) + 2.7)
    cdf = np.cumsum(w / w.sum())
    cdf[-1] = 1.0
    for i in range(count):
        d = os.path.join(dest, "%03d" % (i // PER_DIR))
        if i % PER_DIR == 0:
            os.makedirs(d, exist_ok=True)
        n = int(rng.integers(2048, 6144))
        ids = np.searchsorted(cdf, rng.random(n), side="right")
        np.save(os.path.join(d, "doc%06d.npy" % i), ids.astype(np.uint16))


if __name__ == "__main__":
    main()
