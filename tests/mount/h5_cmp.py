#!/usr/bin/python3
"""h5_cmp.py SRC MNT NFILES

Every *.h5 file under SRC is opened with h5py under MNT and compared with
the source: the same dataset names, and for "data" and "label" the same
dtype, shape and bytes (NaNs included); also a few hyperslab reads. First
sequentially, then from 4 processes in a shuffled order (as tf.data's
interleave would). Exit 1 on any difference.
"""
import multiprocessing
import os
import random
import sys

import h5py
import numpy as np

src, mnt, nfiles = sys.argv[1], sys.argv[2], int(sys.argv[3])
rels = sorted(os.path.relpath(os.path.join(dp, n), src)
              for dp, _, fn in os.walk(src) for n in fn if n.endswith(".h5"))


def same(x, y):
    return x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes()


def check(rel):
    errs = []
    with h5py.File(os.path.join(src, rel), "r") as fa, h5py.File(os.path.join(mnt, rel), "r") as fb:
        ka, kb = sorted(fa.keys()), sorted(fb.keys())
        if ka != kb:
            return ["%s: datasets %r vs %r" % (rel, ka, kb)]
        for k in ka:
            xa, xb = fa[k][()], fb[k][()]
            xa, xb = np.asarray(xa), np.asarray(xb)
            if not same(xa, xb):
                errs.append("%s: %s differs (%s %s vs %s %s)" % (rel, k, xa.dtype, xa.shape, xb.dtype, xb.shape))
        d1, d2 = fa["data"], fb["data"]
        if d1.ndim == 3:
            for sl in ((0, slice(None), slice(None)), (slice(None), slice(3, 17), slice(5, 90)),
                       (-1, -1, slice(None))):
                if not same(np.asarray(d1[sl]), np.asarray(d2[sl])):
                    errs.append("%s: data[%r] differs" % (rel, sl))
        if dict(fa.attrs) .keys() != dict(fb.attrs).keys():
            errs.append("%s: attributes differ" % rel)
    return errs


if __name__ == "__main__":
    if len(rels) != nfiles:
        sys.exit("  found %d .h5 files in the source, expected %d" % (len(rels), nfiles))
    errs = []
    for rel in rels:
        errs += check(rel)
    order = rels[:]
    random.Random(5).shuffle(order)
    with multiprocessing.Pool(4) as pool:
        for e in pool.imap_unordered(check, order, chunksize=4):
            errs += e
    for e in errs[:20]:
        print("  " + e, file=sys.stderr)
    print("h5_cmp: %d files compared twice, %d differences" % (len(rels), len(errs)), file=sys.stderr)
    sys.exit(1 if errs else 0)
