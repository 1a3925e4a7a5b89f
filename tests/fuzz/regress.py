#!/usr/bin/python3
"""regress.py CORPUS_DIR [PENDING_DIR]

Writes the hand-made regression inputs of the fuzz targets into
CORPUS_DIR/<target>/regress-<what>, each a real seed (made by tools/fuzz/run
--seed-corpus) with one record made hostile. Each pins a bug that was
fixed: the input crashed its target before the fix, so the `fuzz` suite
replaying it forever keeps the bug away. tools/fuzz/run --seed-corpus runs
this after it rebuilds the seeds. Inputs the fuzzer itself found are
copied in by hand as regress-<what> and kept as they are.

With PENDING_DIR, also writes there the inputs of bugs not fixed yet
(PENDING_DIR/<target>/<what>): they crash today. Whoever fixes one moves
it to CORPUS_DIR/<target>/regress-<what> and its recipe up into main().

The input format is tests/fuzz/fuzzlib.h's: entries of
u8 tag | u16 klen | u32 vlen | key | value.
"""
import os
import struct
import sys

META, INODES, SYMLINKS, DIRENTS, CHUNKS, CONTAINERS, FILE, FLAGS = range(8)


def parse(b):
    out, at = [], 0
    while len(b) - at >= 7:
        tag, kl, vl = struct.unpack_from("<BHI", b, at)
        at += 7
        out.append([tag, b[at:at + kl], b[at + kl:at + kl + vl]])
        at += kl + vl
    return out


def dump(ents):
    return b"".join(struct.pack("<BHI", t, len(k), len(v)) + k + v for t, k, v in ents)


def seeds(d):
    return [os.path.join(d, n) for n in sorted(os.listdir(d)) if not n.startswith("regress-")]


def pick(d, want):
    """The first seed of directory d for which want(entries) holds."""
    for p in seeds(d):
        e = parse(open(p, "rb").read())
        if want(e):
            return e
    sys.exit("regress.py: no seed in %s fits" % d)


def super_of(e):
    return next(x for x in e if x[0] == META and x[1] == b"super")


# Superblock fields: u32 major, u32 minor, 16 id, then u64s from offset 24:
# chunk_size, container_size, align, n_inodes, n_dirs, n_symlinks, n_files,
# first_file_ino, n_containers, total_file_bytes, max_mtime_sec.
def set_super(e, **f):
    s = super_of(e)
    names = ["chunk_size", "container_size", "align", "n_inodes", "n_dirs",
             "n_symlinks", "n_files", "first_file_ino", "n_containers"]
    v = bytearray(s[2])
    for k, x in f.items():
        struct.pack_into("<Q", v, 24 + 8 * names.index(k), x % 2**64)
    s[2] = bytes(v)


def write(top, target, name, e, prefix="regress-"):
    os.makedirs(os.path.join(top, target), exist_ok=True)
    open(os.path.join(top, target, prefix + name), "wb").write(dump(e))


def main():
    top = sys.argv[1]
    for target in ("records", "dataset"):
        d = os.path.join(top, target)
        has_dirents = lambda e: any(x[0] == DIRENTS for x in e) and any(
            x[0] == META and x[1] == b"super" for x in e)
        # n_dirs = 2^64 - 1: the count sums wrapped to what n_inodes said,
        # and verify sized an array by n_dirs + 1 = 0.
        e = pick(d, has_dirents)
        set_super(e, n_dirs=-1, n_symlinks=2, n_files=0, n_inodes=1, first_file_ino=2)
        write(top, target, "super-count-wrap", e)
        # A chunk size near 2^64 wrapped the container checks' sums.
        e = pick(d, has_dirents)
        set_super(e, chunk_size=2**64 - 4096)
        write(top, target, "super-chunk-size", e)
    # Format 1.1: a feature bit this dlfs does not know is refused before
    # any other record is read (an unknown feature may change them all).
    d = os.path.join(top, "records")
    e = pick(d, lambda e: any(x[0] == DIRENTS for x in e) and len(super_of(e)[2]) == 120)
    s = super_of(e)
    s[2] = s[2][:112] + struct.pack("<Q", struct.unpack_from("<Q", s[2], 112)[0] | 1 << 5)
    write(top, "records", "super-unknown-feature", e)
    # Names the format forbids: they overflowed 256-byte buffers
    # (readdir, extract) or led extract out of its directory.
    d = os.path.join(top, "records")
    e = pick(d, lambda e: any(x[0] == DIRENTS for x in e))
    dirents = [x for x in e if x[0] == DIRENTS]
    for x, name in zip(dirents, [b"a/b", b"..", b".", b"x" * 256, b"nul\0"]):
        x[1] = x[1][:8] + name
    write(top, "records", "dirent-bad-names", e)
    d = os.path.join(top, "dataset")
    e = pick(d, lambda e: any(x[0] == DIRENTS and len(x[1]) == 8 + 255 for x in e))
    x = next(x for x in e if x[0] == DIRENTS and len(x[1]) == 8 + 255)
    x[1] = x[1][:8] + b"y" * 300
    write(top, "dataset", "dirent-long-name", e)
    e = pick(d, lambda e: any(x[0] == DIRENTS and x[1][:8] == struct.pack(">Q", 1) and
                              x[2][7] >> 4 == 8 for x in e))
    x = next(x for x in e if x[0] == DIRENTS and x[1][:8] == struct.pack(">Q", 1) and x[2][7] >> 4 == 8)
    x[1] = x[1][:8] + b"../escaped"
    write(top, "dataset", "dirent-dotdot-escape", e)
    # Issue 11 item 4: verify reads a chunk record's length into a buffer
    # of one chunk, and trusts the length.
    e = pick(d, lambda e: any(x[0] == CHUNKS for x in e))
    x = next(x for x in e if x[0] == CHUNKS)
    cs = struct.unpack_from("<Q", super_of(e)[2], 24)[0]
    x[2] = x[2][:8] + struct.pack("<I", cs + 4096) + x[2][12:]
    write(top, "dataset", "verify-chunk-longer-than-chunk-size", e)

    if len(sys.argv) > 2:
        pending(top, sys.argv[2])


def pending(top, out):
    # None today.
    return


main()
