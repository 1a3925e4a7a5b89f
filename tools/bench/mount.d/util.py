#!/usr/bin/python3
"""Helpers for tools/bench/mount (not part of dlfs).

  util.py gen-files DEST COUNT PER_DIR DIST SEED
      DIST: lognormal:MEDIAN:SIGMA:MIN:MAX (bytes) or fixed:SIZE.
      Files DEST/dNNN/fNNNNNNN; contents are slices of a seeded 64 MiB
      pseudo-random pool (incompressible, no two files equal).
  util.py gen-jpeg DEST COUNT CLASSES SEED
      COUNT 320x320 RGB JPEGs (quality 95, ~95 KiB) in DEST/classNN/.
  util.py list TREE OUT SEED|sorted
      Every regular file under TREE (relative paths), sorted, then (unless
      "sorted") shuffled with random.Random(SEED), one per line into OUT.
  util.py evict PATH...
      posix_fadvise(DONTNEED) on every regular file (dirs: recursively).
  util.py sizes TREE
      Prints "files bytes" of the regular files under TREE.
"""
import os
import random
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from benchlib import walk_files  # noqa: E402


def gen_files(dest, count, per_dir, dist, seed):
    from multiprocessing import Process

    rnd = random.Random(seed)
    kind, *a = dist.split(":")
    if kind == "fixed":
        sizes = [int(a[0])] * count
    elif kind == "lognormal":
        import math

        median, sigma, lo, hi = float(a[0]), float(a[1]), int(a[2]), int(a[3])
        mu = math.log(median)
        sizes = [min(hi, max(lo, int(rnd.lognormvariate(mu, sigma))))
                 for _ in range(count)]
    else:
        sys.exit("bad DIST " + dist)
    pool_size = 64 << 20
    stride = 1000003  # prime
    span = pool_size - max(sizes)
    assert span > 0
    pool = memoryview(random.Random(seed + 1).randbytes(pool_size))
    ndirs = (count + per_dir - 1) // per_dir
    dw = max(3, len(str(ndirs - 1)))
    fw = max(7, len(str(count - 1)))
    for d in range(ndirs):
        os.makedirs(os.path.join(dest, "d%0*d" % (dw, d)), exist_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC
    jobs = os.cpu_count() or 1

    def work(k):
        for d in range(k, ndirs, jobs):
            dpath = os.path.join(dest, "d%0*d" % (dw, d))
            for i in range(d * per_dir, min(count, (d + 1) * per_dir)):
                off = i * stride % span
                buf = pool[off:off + sizes[i]]
                fd = os.open("%s/f%0*d" % (dpath, fw, i), flags, 0o644)
                while buf:
                    buf = buf[os.write(fd, buf):]
                os.close(fd)

    ps = [Process(target=work, args=(k,)) for k in range(jobs)]
    for p in ps:
        p.start()
    for p in ps:
        p.join()
    if any(p.exitcode for p in ps):
        sys.exit("generation failed")


def gen_jpeg(dest, count, classes, seed):
    import numpy as np
    from PIL import Image

    side = 320
    y, x = np.mgrid[0:side, 0:side]
    for c in range(classes):
        os.makedirs(os.path.join(dest, "class%02d" % c), exist_ok=True)
    for i in range(count):
        c = i % classes
        rng = np.random.default_rng(seed * 1000003 + i)
        base = np.stack([(x * (c + 1) * 25 // side) % 256,
                         (y * 255 // side),
                         ((x + y) * (i % 7 + 1) * 16 // side) % 256],
                        -1).astype(np.int16)
        noise = int(rng.integers(70, 91))
        img = np.clip(base + rng.integers(-noise, noise + 1, base.shape),
                      0, 255).astype(np.uint8)
        Image.fromarray(img).save(
            os.path.join(dest, "class%02d" % c, "img%06d.jpg" % i),
            "JPEG", quality=95)




def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "gen-files":
        gen_files(args[0], int(args[1]), int(args[2]), args[3], int(args[4]))
    elif cmd == "gen-jpeg":
        gen_jpeg(args[0], int(args[1]), int(args[2]), int(args[3]))
    elif cmd == "list":
        files = walk_files(args[0])
        if args[2] != "sorted":
            random.Random(int(args[2])).shuffle(files)
        with open(args[1], "w") as f:
            f.writelines(p + "\n" for p in files)
    elif cmd == "evict":
        for a in args:
            paths = ([os.path.join(a, p) for p in walk_files(a)]
                     if os.path.isdir(a) else [a])
            for p in paths:
                fd = os.open(p, os.O_RDONLY | os.O_CLOEXEC)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                os.close(fd)
    elif cmd == "sizes":
        files = walk_files(args[0])
        total = sum(os.lstat(os.path.join(args[0], p)).st_size for p in files)
        print(len(files), total)
    else:
        sys.exit("unknown command " + cmd)


if __name__ == "__main__":
    main()
