#!/usr/bin/python3
"""readtree.py SRC MNT [--seed N | --layout MAP.json | --list FILE] [--slice A:B] [--bs BYTES] [--no-drop]

Reads regular files under SRC through MNT, whole, with os.read in pieces
of --bs bytes (default 1 MiB), and compares every byte with the source.
Before reading a file it drops that file's page cache on the mount
(POSIX_FADV_DONTNEED), so the read reaches the daemon, unless --no-drop.

Files are taken in sorted order of their relative paths, or shuffled by
--seed N; --slice A:B keeps entries A..B-1 of the sorted list (before any
shuffle), e.g. --slice 0:50 for the first 50 files. --layout MAP.json
(as written by cachelib.sh's file_map: {rel: {"container", "offset"}})
reads in layout order instead: by container, then offset, so that each
chunk is needed by one run of consecutive files. --list FILE reads the
paths FILE names (one per line, relative to the root, e.g. an epoch
view's MNT/.dlfs/epochs/E/files), in its order, instead.

Every file is read even after a failure. Prints "FILES BYTES" on stdout;
each wrong byte count, wrong content or error (with its errno name) on
stderr; exit 1 if there was any.
"""
import argparse
import errno
import os
import random
import sys

ap = argparse.ArgumentParser()
ap.add_argument("src")
ap.add_argument("mnt")
ap.add_argument("--seed", type=int)
ap.add_argument("--slice")
ap.add_argument("--layout")
ap.add_argument("--list")
ap.add_argument("--bs", type=int, default=1 << 20)
ap.add_argument("--no-drop", action="store_true")
a = ap.parse_args()

rels = []
for dp, dn, fn in os.walk(a.src):
    for n in fn:
        p = os.path.join(dp, n)
        if os.path.isfile(p) and not os.path.islink(p):
            rels.append(os.path.relpath(p, a.src))
rels.sort()
if a.slice:
    lo, hi = a.slice.split(":")
    rels = rels[int(lo or 0):int(hi) if hi else len(rels)]
if a.seed is not None:
    random.Random(a.seed).shuffle(rels)
elif a.list:
    rels = [l for l in open(a.list).read().split("\n") if l]
elif a.layout:
    import json
    m = json.load(open(a.layout))
    rels.sort(key=lambda r: (m[r]["container"], m[r]["offset"], r))

bad = []
total = 0
for rel in rels:
    want = open(os.path.join(a.src, rel), "rb").read()
    try:
        fd = os.open(os.path.join(a.mnt, rel), os.O_RDONLY)
    except OSError as e:
        bad.append("%s: open: %s (%s)" % (rel, errno.errorcode.get(e.errno, e.errno), e.strerror))
        continue
    try:
        if not a.no_drop:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        out = []
        while True:
            b = os.read(fd, a.bs)
            if not b:
                break
            out.append(b)
        got = b"".join(out)
        if got != want:
            if len(got) != len(want):
                bad.append("%s: read %d bytes, expected %d" % (rel, len(got), len(want)))
            else:
                i = next(i for i in range(len(got)) if got[i] != want[i])
                bad.append("%s: WRONG content, first difference at byte %d" % (rel, i))
        total += len(got)
    except OSError as e:
        bad.append("%s: read: %s (%s)" % (rel, errno.errorcode.get(e.errno, e.errno), e.strerror))
    finally:
        os.close(fd)

for b in bad[:30]:
    print("  " + b, file=sys.stderr)
if len(bad) > 30:
    print("  ... and %d more" % (len(bad) - 30), file=sys.stderr)
if bad:
    print("  %d of %d files read wrong or failed" % (len(bad), len(rels)), file=sys.stderr)
print(len(rels), total)
sys.exit(1 if bad else 0)
