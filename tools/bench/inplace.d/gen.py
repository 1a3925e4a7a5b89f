#!/usr/bin/python3
"""Archives for tools/bench/inplace (not part of dlfs), written as streams
straight to their place (no extracted tree is made here).

  gen.py shards DEST N_SHARDS SHARD_BYTES SEED MANIFEST
      WebDataset-style shards DEST/shard-NNNNNN.tar of about SHARD_BYTES
      each: per key KEY.jpg (10-100 KB, uniform), KEY.cls (a class
      number) and KEY.json (a small record), side by side; keys unique
      across shards, so the shards extract to one flat directory.
  gen.py nested DEST CLASSES PER_CLASS SEED MANIFEST
      DEST/train.tar, ImageNet's ILSVRC2012_img_train.tar shape: a tar of
      class tars nNNNNNNNN.tar, each holding PER_CLASS files
      nNNNNNNNN_J.JPEG of log-normal sizes around 110 KiB (12 KiB..1 MiB).
  gen.py many DEST MEMBERS SIZE SEED MANIFEST
      DEST/many.tar: MEMBERS members of SIZE bytes in directories of
      1,000 (dNNNN/fNNNNNNNN), for the mount-time rows.
Each prints "members bytes" (member data, headers excluded; a nested
tar's members are its class tars' members), and writes MANIFEST: a line
"ARCHIVE<TAB>PATH" a file, PATH as the extracted tree (and an in-place
mount) shows it, ARCHIVE the outer archive's name without ".tar". Contents are slices of a
seeded pseudo-random pool: incompressible, deterministic for a SEED.
"""
import io
import json
import math
import os
import random
import sys
import tarfile

MTIME = 1700000000
POOL = 64 << 20


class Pool:
    """Slices of one seeded random buffer: distinct, incompressible."""

    def __init__(self, seed):
        self.buf = memoryview(random.Random(seed).randbytes(POOL))
        self.at = 0

    def take(self, n):
        assert n <= POOL // 2
        off = self.at % (POOL - n)
        self.at += 1000003  # a prime stride
        return self.buf[off:off + n]


MANIFEST = []


def add(t, name, data):
    ti = tarfile.TarInfo(name)
    ti.size, ti.mtime, ti.mode = len(data), MTIME, 0o644
    t.addfile(ti, io.BytesIO(data))


def open_out(path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    # A large buffer: the tar module writes 512-byte headers one by one.
    return tarfile.open(fileobj=open(path + ".tmp", "wb", buffering=8 << 20),
                        mode="w", format=tarfile.USTAR_FORMAT)


def close_out(t, path):
    f = t.fileobj
    t.close()
    f.close()
    os.replace(path + ".tmp", path)


def shards(dest, n_shards, shard_bytes, seed):
    r, pool = random.Random(seed), Pool(seed + 1)
    members = total = key = 0
    for s in range(n_shards):
        path = os.path.join(dest, "shard-%06d.tar" % s)
        t = open_out(path)
        size = 0
        while size < shard_bytes:
            k = "%09d" % key
            jpg = pool.take(r.randrange(10_000, 100_001))
            cls = str(r.randrange(1000)).encode()
            js = json.dumps({"key": k, "cls": int(cls), "w": r.random()}).encode()
            for ext, data in (("jpg", jpg), ("cls", cls), ("json", js)):
                add(t, k + "." + ext, data)
                MANIFEST.append("shard-%06d\t%s.%s" % (s, k, ext))
                size += 512 + (len(data) + 511) // 512 * 512
                members += 1
                total += len(data)
            key += 1
        close_out(t, path)
    return members, total


def nested(dest, classes, per_class, seed):
    r, pool = random.Random(seed), Pool(seed + 1)
    mu = math.log(110 << 10)
    path = os.path.join(dest, "train.tar")
    outer = open_out(path)
    members = total = 0
    for c in range(classes):
        wn = "n%08d" % (1440764 + 37 * c)
        bio = io.BytesIO()
        with tarfile.open(fileobj=bio, mode="w", format=tarfile.USTAR_FORMAT) as inner:
            for j in range(per_class):
                n = min(1 << 20, max(12 << 10, int(r.lognormvariate(mu, 0.5))))
                add(inner, "%s_%d.JPEG" % (wn, j), pool.take(n))
                MANIFEST.append("train\t%s/%s_%d.JPEG" % (wn, wn, j))
                members += 1
                total += n
        add(outer, wn + ".tar", bio.getbuffer())
    close_out(outer, path)
    return members, total


def many(dest, count, size, seed):
    pool = Pool(seed + 1)
    path = os.path.join(dest, "many.tar")
    t = open_out(path)
    for i in range(count):
        add(t, "d%04d/f%08d" % (i // 1000, i), pool.take(size))
        MANIFEST.append("many\td%04d/f%08d" % (i // 1000, i))
    close_out(t, path)
    return count, count * size


def main():
    if len(sys.argv) != 7 or sys.argv[1] not in ("shards", "nested", "many"):
        sys.exit(__doc__)
    kind, dest = sys.argv[1], sys.argv[2]
    a, b, seed = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    members, total = globals()[kind](dest, a, b, seed)
    with open(sys.argv[6], "w") as f:
        f.writelines(m + "\n" for m in MANIFEST)
    print(members, total)


if __name__ == "__main__":
    main()
