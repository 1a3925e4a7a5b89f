#!/usr/bin/python3
"""h5data.py: HDF5 sources for the ingest tests, written with h5py, and
checks of what dlfs-pack --split-hdf5 made of them.

  h5data.py gen DIR [--big]
      DIR/climate_a.h5  N=37: images float32 (37,12,10) chunked (5,..)
                        gzip+shuffle; labels int64 (37,); mask uint8 (37,4);
                        flags bool; cplx complex64 (37,3) chunked gzip;
                        rec compound (x <f4, n <i2); be >f8 (37,2); names
                        |S8; grp/ids int32 (group with attributes); sz
                        float32 (37,16) szip when libhdf5 has it; kept
                        whole: mean (12,10); a soft link alias -> /images;
                        attributes on the file, datasets and group
      DIR/climate_b.h5  N=1000 (3-digit names): images uint16 (1000,6,6)
                        contiguous, labels float32 (1000,) chunked (64,)
                        gzip, weights float16 (1000,)
      DIR/empty.h5      N=0: only .meta.h5
      --big adds DIR/big.h5: 300 rows of 256x256 float32 in chunks of 7
      rows, gzip (75 MiB: several 64 MiB read blocks)
  h5data.py check SRCDIR TREE npy|h5 [--only a,b] [--min BYTES]
      every split row equals its sample file under TREE (np.load, plain
      and mmap_mode='r'; or h5py for h5), dtypes, shapes and dataset
      attributes included; each dataset kept whole for its tiny samples
      (npy form, default choice, samples under --min bytes, 1024 unless
      given) equals TOP/NAME.npy; and every .meta.h5 keeps the rest
  h5data.py expect SRCDIR npy|h5 [--only a,b] [--min BYTES]
      prints the relative paths the split must produce, one a line
  h5data.py samples DIR N
      N per-sample files DIR/{train,validation}/data-NNNN.h5 for the
      h5py clients of the mount tests: float32 data (4,96,144) or
      (8,128,192) with NaN and infinities, contiguous, chunked or
      gzip+shuffle; a scalar or an array label; an attribute
Exit 1 with the differences on stderr.
"""
import os
import sys

import h5py
import numpy as np

SZIP = h5py.h5z.filter_avail(h5py.h5z.FILTER_SZIP) and \
    (h5py.h5z.get_filter_info(h5py.h5z.FILTER_SZIP) & 1)


def gen(d, big):
    os.makedirs(d, exist_ok=True)
    rng = np.random.default_rng(10)
    n = 37
    with h5py.File(os.path.join(d, "climate_a.h5"), "w") as f:
        f.attrs["title"] = "climate"
        f.attrs["version"] = np.int32(2)
        f.attrs["bounds"] = np.array([1.5, 2.5, 3.5])
        im = f.create_dataset("images", data=rng.standard_normal((n, 12, 10), dtype=np.float32),
                              chunks=(5, 12, 10), compression="gzip", shuffle=True)
        im[0, 0, :3] = [np.nan, np.inf, -np.inf]
        im.attrs["units"] = "K"
        im.attrs["scale"] = 0.5
        lb = f.create_dataset("labels", data=rng.integers(-5, 5, n, dtype=np.int64))
        lb.attrs["classes"] = ["background", "storm"]
        f.create_dataset("mask", data=rng.integers(0, 255, (n, 4), dtype=np.uint8))
        f.create_dataset("flags", data=rng.integers(0, 2, n).astype(bool))
        f.create_dataset("cplx", data=(rng.standard_normal((n, 3)) + 1j * rng.standard_normal((n, 3))).astype(np.complex64),
                         chunks=(n, 3), compression="gzip")
        rec = np.zeros(n, dtype=[("x", "<f4"), ("n", "<i2")])
        rec["x"] = rng.standard_normal(n)
        rec["n"] = np.arange(n)
        f.create_dataset("rec", data=rec)
        f.create_dataset("be", data=rng.standard_normal((n, 2)).astype(">f8"))
        f.create_dataset("names", data=np.array([b"s%03d" % i for i in range(n)], dtype="S8"))
        g = f.create_group("grp")
        g.attrs["note"] = "a group"
        g.create_dataset("ids", data=np.arange(n, dtype=np.int32) * 3)
        if SZIP:
            f.create_dataset("sz", data=rng.standard_normal((n, 16)).astype(np.float32),
                             chunks=(8, 16), compression="szip")
        f.create_dataset("mean", data=np.full((12, 10), 0.25, np.float32))
        f["alias"] = h5py.SoftLink("/images")
    with h5py.File(os.path.join(d, "climate_b.h5"), "w") as f:
        n = 1000
        f.create_dataset("images", data=rng.integers(0, 65535, (n, 6, 6), dtype=np.uint16))
        f.create_dataset("labels", data=rng.standard_normal(n).astype(np.float32),
                         chunks=(64,), compression="gzip")
        f.create_dataset("weights", data=rng.standard_normal(n).astype(np.float16))
    with h5py.File(os.path.join(d, "empty.h5"), "w") as f:
        f.create_dataset("images", shape=(0, 4), dtype=np.float32)
        f.attrs["empty"] = 1
    if big:
        with h5py.File(os.path.join(d, "big.h5"), "w") as f:
            x = np.arange(300 * 256 * 256, dtype=np.float32).reshape(300, 256, 256)
            x %= 1000.0
            f.create_dataset("x", data=x, chunks=(7, 256, 256), compression="gzip",
                             compression_opts=1)
            f.create_dataset("y", data=np.arange(300, dtype=np.int16))


def sources(src):
    return sorted(n for n in os.listdir(src) if n.endswith(".h5"))


def split_names(f, only, form="h5", below=0):
    """The datasets dlfs-pack splits by default (or the named ones), those
    it keeps whole as one .npy for their tiny samples, and N."""
    found = []
    f.visititems(lambda name, o: found.append(name) if isinstance(o, h5py.Dataset) else None)
    if only:
        return sorted(only), [], f[only[0]].shape[0]
    big = max((d for d in found if f[d].ndim >= 1),
              key=lambda d: f[d].size * f[d].dtype.itemsize)
    n = f[big].shape[0]
    split = [d for d in found if f[d].ndim >= 1 and f[d].shape[0] == n]
    w = width(n)

    def tiny(d):
        first = d.split("/")[0]
        like_dir = len(first) == w and first.isdigit()
        rb = f[d].dtype.itemsize * int(np.prod(f[d].shape[1:], dtype=np.int64))
        return d != big and rb < below and not like_dir
    whole = [d for d in split if form == "npy" and tiny(d)] if below else []
    return [d for d in split if d not in whole], whole, n


def width(n):
    return len(str(max(n - 1, 0)))


def expect(src, form, only=None, below=1024):
    out = []
    for s in sources(src):
        top = s[:-3]
        with h5py.File(os.path.join(src, s), "r") as f:
            names, whole, n = split_names(f, only, form, below)
        out.append(top + "/.meta.h5")
        out += ["%s/%s.npy" % (top, d) for d in whole]
        w = width(n)
        for i in range(n):
            if form == "h5":
                out.append("%s/%0*d.h5" % (top, w, i))
            else:
                out += ["%s/%0*d/%s.npy" % (top, w, i, d) for d in names]
    return out


def row(d, i):
    """Row i of dataset d as an array (a numpy scalar would drop the
    padding of fixed-length strings)."""
    r = d[i:i + 1]
    return r.reshape(r.shape[1:])


def same(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def same_attrs(x, y, errs, what, extra_ok=()):
    kx = set(x.keys())
    ky = set(k for k in y.keys() if k not in extra_ok)
    if kx != ky:
        errs.append("%s: attributes %r vs %r" % (what, sorted(kx), sorted(ky)))
        return
    for k in kx:
        a, b = x[k], y[k]
        if isinstance(a, (str, bytes)) or isinstance(b, (str, bytes)):
            ok = a == b
        else:
            ok = np.array_equal(np.asarray(a), np.asarray(b))
        if not ok:
            errs.append("%s: attribute %s: %r vs %r" % (what, k, a, b))


def check(src, tree, form, only, below=1024):
    errs = []
    count = 0
    for s in sources(src):
        top = s[:-3]
        with h5py.File(os.path.join(src, s), "r") as f:
            names, whole, n = split_names(f, only, form, below)
            w = width(n)
            for d in whole:
                p = "%s/%s/%s.npy" % (tree, top, d)
                if not same(np.load(p), f[d][...]):
                    errs.append("%s: differs from the whole dataset %s" % (p, d))
                count += 1
            for i in range(n):
                if form == "h5":
                    p = "%s/%s/%0*d.h5" % (tree, top, w, i)
                    with h5py.File(p, "r") as g:
                        got = []
                        g.visititems(lambda name, o: got.append(name) if isinstance(o, h5py.Dataset) else None)
                        if sorted(got) != sorted(names):
                            errs.append("%s: datasets %r, expected %r" % (p, got, names))
                            continue
                        for d in names:
                            if not same(g[d][...], row(f[d], i)):
                                errs.append("%s: %s differs from row %d" % (p, d, i))
                            if i == 0:
                                same_attrs(f[d].attrs, g[d].attrs, errs, "%s: %s" % (p, d))
                        count += 1
                else:
                    for d in names:
                        p = "%s/%s/%0*d/%s.npy" % (tree, top, w, i, d)
                        a = np.load(p)
                        m = np.load(p, mmap_mode="r")
                        r = row(f[d], i)
                        if not same(a, r):
                            errs.append("%s: %s %s vs row %d: %s %s" % (
                                p, a.dtype, a.shape, i, r.dtype, r.shape))
                        if not same(np.asarray(m), r):
                            errs.append("%s: differs with mmap_mode='r'" % p)
                        del m
                        count += 1
            check_meta(f, "%s/%s/.meta.h5" % (tree, top), names, n, form, s, errs)
    for e in errs[:30]:
        print("  " + e, file=sys.stderr)
    print("h5data: %d sample files checked, %d differences" % (count, len(errs)), file=sys.stderr)
    return 1 if errs else 0


def check_meta(f, path, names, n, form, source, errs):
    with h5py.File(path, "r") as m:
        same_attrs(f.attrs, m.attrs, errs, path + ": root",
                   extra_ok=("dlfs_source", "dlfs_samples", "dlfs_split", "dlfs_sample_format"))
        want = {"dlfs_source": source, "dlfs_samples": n, "dlfs_sample_format": form}
        for k, v in want.items():
            if m.attrs.get(k) != v:
                errs.append("%s: %s = %r, expected %r" % (path, k, m.attrs.get(k), v))
        if sorted(m.attrs.get("dlfs_split", [])) != sorted(names):
            errs.append("%s: dlfs_split = %r" % (path, m.attrs.get("dlfs_split")))

        def visit(name, o):
            if name == "alias":
                return
            if name not in m:
                errs.append("%s: %s missing" % (path, name))
                return
            c = m[name]
            same_attrs(o.attrs, c.attrs, errs, "%s: %s" % (path, name))
            if isinstance(o, h5py.Dataset):
                if name in names:
                    if c.shape != (0,) + o.shape[1:] or c.dtype != o.dtype:
                        errs.append("%s: placeholder %s is %s %s" % (path, name, c.shape, c.dtype))
                elif not same(c[()], o[()]):
                    errs.append("%s: %s is not kept whole" % (path, name))
        f.visititems(visit)
        if "alias" in f:
            link = m.get("alias", getlink=True)
            if not isinstance(link, h5py.SoftLink) or link.path != "/images":
                errs.append("%s: the soft link alias is %r" % (path, link))


def samples(root, n):
    import h5py
    import numpy as np
    rng = np.random.default_rng(42)
    for sub in ("train", "validation"):
        os.makedirs(os.path.join(root, sub), exist_ok=True)
    for i in range(n):
        sub = "train" if i % 4 else "validation"
        shape = (4, 96, 144) if i % 3 else (8, 128, 192)   # 221 or 786 KiB
        data = rng.standard_normal(shape, dtype=np.float32)
        data[0, 0, :3] = [np.nan, np.inf, -np.inf]
        with h5py.File(os.path.join(root, sub, "data-%04d.h5" % i), "w") as f:
            if i % 3 == 0:
                f.create_dataset("data", data=data)
            elif i % 3 == 1:
                f.create_dataset("data", data=data, chunks=(1, 32, 48))
            else:
                f.create_dataset("data", data=data, chunks=(2, 48, 48),
                                 compression="gzip", shuffle=True)
            if i % 2:
                f.create_dataset("label", data=np.int64(i % 3))
            else:
                f.create_dataset("label", data=rng.integers(
                    0, 3, size=shape[1:], dtype=np.int32))
            f.attrs["sample"] = i


def main():
    a = sys.argv[1:]
    if a and a[0] == "samples":
        samples(a[1], int(a[2]))
        return 0
    if a and a[0] == "gen":
        gen(a[1], "--big" in a)
        return 0
    only = a[a.index("--only") + 1].split(",") if "--only" in a else None
    below = int(a[a.index("--min") + 1]) if "--min" in a else 1024
    if a and a[0] == "check":
        return check(a[1], a[2], a[3], only, below)
    if a and a[0] == "expect":
        print("\n".join(expect(a[1], a[2], only, below)))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
