#!/usr/bin/python3
"""np_cmp.py SRC MNT NFILES

Every .npy file under SRC is loaded from MNT with np.load (plain) and with
np.load(mmap_mode='r'), and compared with np.load of the source: same
dtype, shape, order and bytes. Every .npz is loaded too (zipfile does
random reads). Then each .npy is mapped with the mmap module and random
slices (and the last partial page) are compared with the source's bytes.
Where numpy refuses something on the source (e.g. mmap of an empty
array), it must refuse it on the mount the same way.
"""
import mmap
import os
import random
import sys

import numpy as np

src, mnt, nfiles = sys.argv[1], sys.argv[2], int(sys.argv[3])
rels = sorted(os.path.relpath(os.path.join(dp, n), src)
              for dp, _, fn in os.walk(src) for n in fn if n.endswith((".npy", ".npz")))
errs = []


def same(x, y):
    return (x.dtype == y.dtype and x.shape == y.shape and
            x.flags.f_contiguous == y.flags.f_contiguous and x.tobytes("A") == y.tobytes("A"))


def outcome(fn):
    try:
        return fn(), None
    except Exception as e:  # noqa: BLE001 - compared below
        return None, type(e).__name__


if len([r for r in rels if r.endswith(".npy")]) != nfiles:
    sys.exit("  found %d .npy files in the source, expected %d" % (len(rels), nfiles))
r = random.Random(9)
for rel in rels:
    a, b = os.path.join(src, rel), os.path.join(mnt, rel)
    if rel.endswith(".npz"):
        with np.load(a) as za, np.load(b) as zb:
            if sorted(za.files) != sorted(zb.files):
                errs.append("%s: members %r vs %r" % (rel, za.files, zb.files))
                continue
            for k in za.files:
                if not same(za[k], zb[k]):
                    errs.append("%s: member %s differs" % (rel, k))
        continue
    for mode in (None, "r"):
        (xa, ea), (xb, eb) = outcome(lambda: np.load(a, mmap_mode=mode)), outcome(lambda: np.load(b, mmap_mode=mode))
        if ea or eb:
            if ea != eb:
                errs.append("%s: np.load(mmap_mode=%r): source %s, mount %s" % (rel, mode, ea or "ok", eb or "ok"))
            continue
        if not same(np.asarray(xa), np.asarray(xb)):
            errs.append("%s: np.load(mmap_mode=%r) differs" % (rel, mode))
        if mode == "r" and xb.ndim and xb.size:
            i = r.randrange(xb.shape[0])
            if np.asarray(xa[i]).tobytes() != np.asarray(xb[i]).tobytes():
                errs.append("%s: mmap row %d differs" % (rel, i))
        del xa, xb
    data = open(a, "rb").read()
    with open(b, "rb") as f:
        m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        try:
            if len(m) != len(data):
                errs.append("%s: mmap length %d, file size %d" % (rel, len(m), len(data)))
            cuts = [(0, 128), (len(data) - len(data) % 4096, len(data)), (max(0, len(data) - 1), len(data))]
            for _ in range(50):
                s = r.randrange(len(data))
                cuts.append((s, s + r.randrange(1, 200000)))
            for s, e in cuts:
                if m[s:e] != data[s:e]:
                    errs.append("%s: mmap[%d:%d] differs" % (rel, s, e))
                    break
            if m[:] != data:
                errs.append("%s: whole mmap differs" % rel)
        finally:
            m.close()
for e in errs[:20]:
    print("  " + e, file=sys.stderr)
print("np_cmp: %d files compared, %d differences" % (len(rels), len(errs)), file=sys.stderr)
sys.exit(1 if errs else 0)
