#!/usr/bin/python3
"""statcmp.py SRC MNT DATASET DLFS_INSPECT

Compares every entry of the source tree SRC with the mounted tree MNT:
the set of paths (walking without following symlinks), and for each entry
(the root included) the file type, permission bits, mtime to the
nanosecond, the size of files and symlinks, and symlink targets (readlink).
Also: readdir's d_ino and d_type agree with lstat, and st_ino of every
entry equals the inode that `dlfs-inspect stat --json DATASET PATH` reports
(the root is inode 1). Prints every difference; exit 1 if there is any.
"""
import json
import os
import stat
import subprocess
import sys

src, mnt, ds, inspect = (os.fsencode(a) for a in sys.argv[1:5])
errs = []


def show(p):
    return repr(p)[2:-1] if p else "<root>"


def walk(top):
    """rel path -> (lstat, {name: (d_ino, d_type kind)}) for every entry."""
    out = {b"": os.lstat(top)}
    dents = {}
    stack = [b""]
    while stack:
        rel = stack.pop()
        here = {}
        with os.scandir(os.path.join(top, rel) if rel else top) as it:
            for e in it:
                kind = ("dir" if e.is_dir(follow_symlinks=False) else
                        "lnk" if e.is_symlink() else
                        "reg" if e.is_file(follow_symlinks=False) else "other")
                here[e.name] = (e.inode(), kind)
                p = os.path.join(rel, e.name) if rel else e.name
                st = os.lstat(os.path.join(top, p))
                out[p] = st
                if stat.S_ISDIR(st.st_mode):
                    stack.append(p)
        dents[rel] = here
    return out, dents


def kind_of(st):
    m = st.st_mode
    return ("dir" if stat.S_ISDIR(m) else "lnk" if stat.S_ISLNK(m) else
            "reg" if stat.S_ISREG(m) else "other")


a, _ = walk(src)
b, bd = walk(mnt)
for p in sorted(set(a) - set(b)):
    errs.append("missing in the mount: %s" % show(p))
for p in sorted(set(b) - set(a)):
    errs.append("extra in the mount: %s" % show(p))

for p in sorted(set(a) & set(b)):
    x, y = a[p], b[p]
    if kind_of(x) != kind_of(y):
        errs.append("%s: type %s in the source, %s in the mount" % (show(p), kind_of(x), kind_of(y)))
        continue
    if stat.S_IMODE(x.st_mode) != stat.S_IMODE(y.st_mode):
        errs.append("%s: mode %04o vs %04o" % (show(p), stat.S_IMODE(x.st_mode), stat.S_IMODE(y.st_mode)))
    if x.st_mtime_ns != y.st_mtime_ns:
        errs.append("%s: mtime_ns %d vs %d" % (show(p), x.st_mtime_ns, y.st_mtime_ns))
    if kind_of(x) in ("reg", "lnk") and x.st_size != y.st_size:
        errs.append("%s: size %d vs %d" % (show(p), x.st_size, y.st_size))
    if kind_of(x) == "lnk":
        ta, tb = os.readlink(os.path.join(src, p)), os.readlink(os.path.join(mnt, p))
        if ta != tb:
            errs.append("%s: symlink target %r vs %r" % (show(p), ta, tb))

# readdir (d_ino, d_type) against lstat in the mount.
for d, ents in bd.items():
    for name, (dino, dkind) in ents.items():
        p = os.path.join(d, name) if d else name
        st = b[p]
        if dino != st.st_ino:
            errs.append("%s: readdir d_ino %d but lstat st_ino %d" % (show(p), dino, st.st_ino))
        if dkind != kind_of(st):
            errs.append("%s: readdir d_type says %s but lstat says %s" % (show(p), dkind, kind_of(st)))

# st_ino against the index.
if b[b""].st_ino != 1:
    errs.append("root: st_ino %d, expected 1" % b[b""].st_ino)
inos = {}
for p in sorted(b):
    if not p:
        continue
    r = subprocess.run([inspect, b"stat", b"--json", ds, p], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=60)
    if r.returncode != 0:
        errs.append("%s: dlfs-inspect stat failed (%d): %s" % (show(p), r.returncode, r.stderr[:200]))
        continue
    j = json.loads(r.stdout.decode("utf-8", "surrogateescape"))
    if j.get("inode") != b[p].st_ino:
        errs.append("%s: st_ino %d in the mount, inode %r in the index" % (show(p), b[p].st_ino, j.get("inode")))
    if b[p].st_ino in inos:
        errs.append("%s: st_ino %d also used by %s" % (show(p), b[p].st_ino, show(inos[b[p].st_ino])))
    inos[b[p].st_ino] = p

for e in errs[:60]:
    print("  " + e, file=sys.stderr)
if len(errs) > 60:
    print("  ... and %d more" % (len(errs) - 60), file=sys.stderr)
print("statcmp: %d entries compared, %d differences" % (len(b), len(errs)), file=sys.stderr)
sys.exit(1 if errs else 0)
