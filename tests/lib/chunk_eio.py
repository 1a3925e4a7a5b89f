#!/usr/bin/python3
"""Read every file of a damaged dataset through its mount: EIO for exactly
the files with bytes in one chunk, the right bytes for every other.

    chunk_eio.py SRC MNT MAP CONTAINER LO HI MIN_BAD [reverse]

MAP is file_map's JSON (tests/lib/lib.sh): each file's container, offset
(in the container's data stream) and size. The damaged chunk is
[LO, HI) of CONTAINER's stream. Fails unless at least MIN_BAD files gave
EIO and at least one read right; prints "BAD GOOD". The files are read
in their paths' order; with "reverse", in the opposite one, so that no
read-ahead stream forms (each file read alone stays alone).
"""
import errno
import json
import os
import sys

src, mnt = sys.argv[1], sys.argv[2]
m = json.load(open(sys.argv[3]))
cont, lo, hi, min_bad = (int(a) for a in sys.argv[4:8])
reverse = sys.argv[8:9] == ["reverse"]
bad = good = 0
errs = []
for rel in sorted(m, reverse=reverse):
    f = m[rel]
    hit = (f["container"] == cont and f["size"] > 0 and f["offset"] < hi
           and f["offset"] + f["size"] > lo)
    try:
        got = open(os.path.join(mnt, rel), "rb").read()
        if hit:
            errs.append("%s: read %d bytes, expected EIO" % (rel, len(got)))
        elif got != open(os.path.join(src, rel), "rb").read():
            errs.append("%s: wrong bytes" % rel)
        else:
            good += 1
    except OSError as e:
        if hit and e.errno == errno.EIO:
            bad += 1
        else:
            errs.append("%s: %s" % (rel, errno.errorcode.get(e.errno, e.errno)))
if bad < min_bad or good == 0:
    errs.append("%d files failed, %d read: want at least %d and 1" % (bad, good, min_bad))
for e in errs[:20]:
    print("  " + e, file=sys.stderr)
print(bad, good)
sys.exit(1 if errs else 0)
