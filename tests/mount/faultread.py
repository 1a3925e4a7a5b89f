#!/usr/bin/python3
"""faultread.py SRC MNT EXPECT.json

Reads every regular file under SRC through MNT (whole file, os.read in
1 MiB pieces) and checks the outcome against EXPECT.json:
  {"must_fail": [rel...], "may_fail": [rel...], "notes": {rel: text}}
- must_fail: the read fails with EIO; read again (after dropping the
  page cache) it still fails with EIO (nothing was cached);
- may_fail: either EIO or exactly the source's bytes;
- every other file: exactly the source's bytes.
Never wrong data, never another errno. Prints every violation (with the
note for that file) and a summary; exit 1 on any violation.
"""
import errno
import json
import os
import sys

src, mnt = sys.argv[1], sys.argv[2]
exp = json.load(open(sys.argv[3]))
must, may, notes = set(exp.get("must_fail", [])), set(exp.get("may_fail", [])), exp.get("notes", {})


def read(path):
    """-> (bytes, None) or (None, errno)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as e:
        return None, e.errno
    try:
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        except OSError:
            pass
        out = []
        while True:
            b = os.read(fd, 1 << 20)
            if not b:
                return b"".join(out), None
            out.append(b)
    except OSError as e:
        return None, e.errno
    finally:
        os.close(fd)


def what(data, err, want):
    if err is not None:
        return "error %s (%s)" % (errno.errorcode.get(err, err), os.strerror(err))
    return "correct data" if data == want else "WRONG data (%d bytes, expected %d)" % (len(data), len(want))


rels = sorted(os.path.relpath(os.path.join(dp, n), src) for dp, _, fn in os.walk(src) for n in fn)
bad = []
n_ok = n_eio = 0
for rel in rels:
    want = open(os.path.join(src, rel), "rb").read()
    data, err = read(os.path.join(mnt, rel))
    note = (" [%s]" % notes[rel]) if rel in notes else ""
    if err == errno.EIO:
        n_eio += 1
    elif err is None and data == want:
        n_ok += 1
    if rel in must:
        if err != errno.EIO:
            bad.append("%s: expected EIO, got %s%s" % (rel, what(data, err, want), note))
            continue
        data, err = read(os.path.join(mnt, rel))
        if err != errno.EIO:
            bad.append("%s: second read: expected EIO again, got %s%s" % (rel, what(data, err, want), note))
    elif rel in may:
        if err != errno.EIO and not (err is None and data == want):
            bad.append("%s: expected EIO or correct data, got %s%s" % (rel, what(data, err, want), note))
    elif not (err is None and data == want):
        bad.append("%s: expected correct data, got %s%s" % (rel, what(data, err, want), note))
missing = (must | may) - set(rels)
if missing:
    bad.append("test bug: expected files not in the source: %r" % sorted(missing))
print("faultread: %d files: %d correct, %d EIO (%d must fail, %d may)" %
      (len(rels), n_ok, n_eio, len(must), len(may)), file=sys.stderr)
for b in bad[:30]:
    print("  " + b, file=sys.stderr)
if len(bad) > 30:
    print("  ... and %d more" % (len(bad) - 30), file=sys.stderr)
sys.exit(1 if bad else 0)
