#!/usr/bin/python3
"""Tar shards of many small files for tools/bench/millions (not part of
dlfs), written as a stream: nothing is extracted to disk.

  gen.py OUTDIR COUNT DIRS SHARDS SEED
      OUTDIR/shard-KK.tar, K = 0..SHARDS-1: COUNT files of 512-2048
      random bytes (seeded) named dDDDDD/fNNNNNNNN.bin, COUNT/DIRS to a
      directory, directories split whole between the shards. Each shard
      is a complete tar; OUTDIR/shard-KK.end holds the offset of its
      end-of-archive blocks, so that the shards' members can be streamed
      as one archive (stream.py).
  gen.py stream OUTDIR
      Every shard's members, then the last one's end, on stdout: one tar
      archive of the whole tree (tar2sqfs reads a single archive).
  gen.py list OUTFILE COUNT DIRS K SEED
      K distinct file paths of the tree, picked at random (seeded).
"""
import os
import random
import shutil
import sys
import tarfile


def name(i, per_dir):
    return "d%05d/f%08d.bin" % (i // per_dir, i)


def gen(outdir, count, dirs, shards, seed):
    os.makedirs(outdir, exist_ok=True)
    per_dir = (count + dirs - 1) // dirs
    r = random.Random(seed)
    dirs_per_shard = (dirs + shards - 1) // shards
    i = 0
    for k in range(shards):
        last = min(count, (k + 1) * dirs_per_shard * per_dir)
        path = os.path.join(outdir, "shard-%02d.tar" % k)
        with open(path, "wb") as raw:
            tf = tarfile.open(fileobj=raw, mode="w", format=tarfile.GNU_FORMAT)
            # Random bytes from one big draw per shard: cheaper than one
            # call a file, and still incompressible.
            while i < last:
                n = r.randrange(512, 2049)
                ti = tarfile.TarInfo(name(i, per_dir))
                ti.size = n
                ti.mtime = 1700000000
                ti.mode = 0o644
                tf.addfile(ti, _Bytes(r.randbytes(n)))
                i += 1
            end = tf.offset
            tf.close()
        with open(path[:-4] + ".end", "w") as f:
            f.write("%d\n" % end)


class _Bytes:
    """A minimal file object over bytes, for TarInfo data."""

    def __init__(self, b):
        self.b, self.at = b, 0

    def read(self, n=-1):
        if n < 0:
            n = len(self.b) - self.at
        out = self.b[self.at:self.at + n]
        self.at += len(out)
        return out


def stream(outdir):
    shards = sorted(f for f in os.listdir(outdir) if f.endswith(".tar"))
    out = sys.stdout.buffer
    for j, s in enumerate(shards):
        with open(os.path.join(outdir, s), "rb") as f:
            if j + 1 == len(shards):
                shutil.copyfileobj(f, out, 8 << 20)
                continue
            with open(os.path.join(outdir, s[:-4] + ".end")) as e:
                left = int(e.read())
            while left:
                b = f.read(min(left, 8 << 20))
                if not b:
                    raise SystemExit("%s: shorter than its end offset" % s)
                out.write(b)
                left -= len(b)
    out.flush()


def pick(outfile, count, dirs, k, seed):
    per_dir = (count + dirs - 1) // dirs
    with open(outfile, "w") as f:
        for i in random.Random(seed).sample(range(count), k):
            f.write(name(i, per_dir) + "\n")


def main():
    if sys.argv[1] == "stream":
        stream(sys.argv[2])
    elif sys.argv[1] == "list":
        pick(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]),
             int(sys.argv[6]))
    else:
        gen(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]),
            int(sys.argv[5]))


if __name__ == "__main__":
    main()
