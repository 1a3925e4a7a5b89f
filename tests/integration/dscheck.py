#!/usr/bin/python3
"""Check a packed dlfs dataset entry by entry against its source tree, through
`dlfs-inspect stat --json` and `dlfs-inspect ls` (helper for the integration
tests; not a test by itself).

    dscheck.py INSPECT DATASET SRC --chunk N --align N --order ORDER
               [--layout-out FILE] [--no-root]

For every entry of SRC: stat --json gives the right type, mode, size, mtime
(ns) and symlink target. For every directory whose names hold no newline,
`ls DIR` prints exactly the names in byte order. Inodes: root is 1, then
directories, then symlinks, then files. Files: offset >= 4096, offset a
multiple of --align, a file no larger than a chunk does not straddle a chunk
boundary (offsets relative to the data_offset in the container's header),
and (container, offset) strictly increases with the inode number
for non-empty files. --order sorted|input: siblings are laid out in byte
order of their names; size: sizes never decrease, equal sizes in path order.
--expect-seq FILE: the files must be laid out in exactly this order (one
repr(bytes path) a line). --layout-out writes the file paths in inode (= layout) order, one repr() a
line, so that callers can compare layouts.
"""

import argparse
import decimal
import json
import os
import stat
import subprocess
import sys

errs = []


def err(msg):
    errs.append(msg)


def show(p):
    return repr(p)[1:]


def run(inspect, *args):
    r = subprocess.run([inspect] + list(args), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=120)
    return r.returncode, r.stdout, r.stderr


def parse_json(raw, what):
    try:
        return json.loads(raw.decode("utf-8", "surrogateescape"),
                          parse_float=decimal.Decimal)
    except ValueError as e:
        err("%s: output is not valid JSON (%s): %r" % (what, e, raw[:300]))
        return None


def norm_mode(v):
    if isinstance(v, str):
        return int(v, 8)
    return v


def norm_container(v):
    if isinstance(v, str):
        v = v[:-4] if v.endswith(".dlc") else v
        return int(v, 10)
    return v


def mtime_ok(d, want_ns):
    """Accepts "sec.nsec" strings or numbers, {"sec","nsec"} objects, or
    mtime_sec/mtime_nsec keys. Exact to the nanosecond."""
    sec, nsec = divmod(want_ns, 10**9)
    exact = decimal.Decimal(want_ns) / decimal.Decimal(10**9)
    if "mtime_sec" in d and "mtime_nsec" in d:
        return (int(d["mtime_sec"]), int(d["mtime_nsec"])) == (sec, nsec)
    v = d.get("mtime")
    if isinstance(v, dict):
        return (int(v.get("sec")), int(v.get("nsec"))) == (sec, nsec)
    if isinstance(v, str):
        if "." in v:
            a, b = v.split(".", 1)
            if len(b) == 9 and (int(a), int(b)) == (sec, nsec):
                return True  # struct style: floor seconds . nanoseconds
        try:
            return decimal.Decimal(v) == exact
        except decimal.InvalidOperation:
            return False
    if isinstance(v, (int, decimal.Decimal)):
        return decimal.Decimal(v) == exact
    return False


def is_utf8(b):
    try:
        b.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


def data_offset(ds, c, cache={}):
    """data_offset field of container c's header (u64 LE at byte 48)."""
    if c not in cache:
        with open(os.path.join(ds, "%06d.dlc" % c), "rb") as f:
            h = f.read(72)
        cache[c] = int.from_bytes(h[48:56], "little") if len(h) == 72 else None
    return cache[c]


def walk(top):
    out = {}
    for dp, dn, fn in os.walk(top):
        for n in dn + fn:
            p = os.path.join(dp, n)
            out[os.path.relpath(p, top)] = os.lstat(p)
    return out


def pathkey(p):
    return p.split(b"/")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("inspect")
    ap.add_argument("dataset")
    ap.add_argument("src")
    ap.add_argument("--chunk", type=int, required=True)
    ap.add_argument("--align", type=int, default=1)
    ap.add_argument("--order", default="sorted")
    ap.add_argument("--layout-out")
    ap.add_argument("--expect-seq",
                    help="file of repr(path) lines: the expected layout order")
    ap.add_argument("--no-root", action="store_true",
                    help="do not compare the root's mode/mtime with SRC")
    a = ap.parse_args()
    src = os.fsencode(a.src)
    ds = a.dataset
    entries = walk(src)

    # Root.
    rc, out, e = run(a.inspect, "stat", "--json", ds, "/")
    if rc != 0:
        err("stat --json / failed (exit %d): %r" % (rc, e[:300]))
        root = None
    else:
        root = parse_json(out, "stat --json /")
    if root is not None:
        if root.get("inode") != 1:
            err("root inode is %r, expected 1" % root.get("inode"))
        if root.get("type") != "dir":
            err("root type is %r, expected dir" % root.get("type"))
        if not a.no_root:
            st = os.lstat(src)
            if norm_mode(root.get("mode")) != stat.S_IMODE(st.st_mode):
                err("root mode %r, source %04o" % (root.get("mode"), stat.S_IMODE(st.st_mode)))
            if not mtime_ok(root, st.st_mtime_ns):
                err("root mtime %r, source %d ns" % (root.get("mtime"), st.st_mtime_ns))

    info = {}
    for p, st in sorted(entries.items()):
        rc, out, e = run(a.inspect, "stat", "--json", ds, p)
        if rc != 0:
            err("%s: stat --json failed (exit %d): %r" % (show(p), rc, e[:300]))
            continue
        d = parse_json(out, "stat --json %s" % show(p))
        if d is None:
            continue
        info[p] = d
        typ = ("dir" if stat.S_ISDIR(st.st_mode) else
               "symlink" if stat.S_ISLNK(st.st_mode) else "file")
        if d.get("type") != typ:
            err("%s: type %r, expected %r" % (show(p), d.get("type"), typ))
            continue
        if typ == "symlink":
            tgt = os.readlink(os.path.join(src, p))
            got = d.get("target")
            ok = False
            if isinstance(got, str):
                # JSON cannot carry raw bytes: accept the bytes as
                # surrogate escapes, or (for a non-UTF-8 target only) each
                # byte mapped to U+0000..U+00FF.
                ok = got.encode("utf-8", "surrogateescape") == tgt
                if not ok and not is_utf8(tgt):
                    ok = got == tgt.decode("latin-1")
            if not ok:
                err("%s: target %r, expected %r" % (show(p), got, tgt))
            if d.get("size") != len(tgt):
                err("%s: symlink size %r, expected %d" % (show(p), d.get("size"), len(tgt)))
            continue
        if norm_mode(d.get("mode")) != stat.S_IMODE(st.st_mode):
            err("%s: mode %r, expected %04o" % (show(p), d.get("mode"), stat.S_IMODE(st.st_mode)))
        if not mtime_ok(d, st.st_mtime_ns):
            err("%s: mtime %r, expected %d ns" % (show(p), d.get("mtime"), st.st_mtime_ns))
        if typ == "dir":
            n = len(os.listdir(os.path.join(src, p)))
            if d.get("size") != n:
                err("%s: directory size %r, expected its %d entries" % (show(p), d.get("size"), n))
        if typ == "file":
            if d.get("size") != st.st_size:
                err("%s: size %r, expected %d" % (show(p), d.get("size"), st.st_size))
            x = d.get("xxh3")
            if not (isinstance(x, str) and len(x) == 16 and
                    all(c in "0123456789abcdef" for c in x.lower())):
                err("%s: xxh3 %r is not 16 hex digits" % (show(p), x))

    # ls of every directory without newlines in its names.
    for p, st in sorted(entries.items()) + [(b"", None)]:
        if st is not None and not stat.S_ISDIR(st.st_mode):
            continue
        names = sorted(os.listdir(os.path.join(src, p) if p else src))
        if any(b"\n" in n for n in names):
            continue
        args = ["ls", ds] + ([p] if p else [])
        rc, out, e = run(a.inspect, *args)
        want = b"".join(n + b"\n" for n in names)
        if rc != 0:
            err("ls %s failed (exit %d): %r" % (show(p) or "/", rc, e[:300]))
        elif out != want:
            err("ls %s: got %r, expected %r" % (show(p) or "/", out[:400], want[:400]))

    # Inode classes.
    def inos(kind):
        return [d["inode"] for d in info.values() if d.get("type") == kind]
    di, si, fi = inos("dir"), inos("symlink"), inos("file")
    if di and min(di) <= 1:
        err("a directory other than the root has inode <= 1")
    classes = [c for c in (di, si, fi) if c]
    for lo, hi in zip(classes, classes[1:]):
        if max(lo) >= min(hi):
            err("inode classes overlap: expected dirs < symlinks < files")
    allinos = [1] + di + si + fi
    if len(set(allinos)) != len(allinos):
        err("inode numbers are not unique")
    elif sorted(allinos) != list(range(1, len(allinos) + 1)):
        err("inode numbers are not dense 1..%d" % len(allinos))

    # File layout.
    files = sorted(((d["inode"], p, d) for p, d in info.items()
                    if d.get("type") == "file"), key=lambda t: t[0])
    prev = None
    for ino, p, d in files:
        size = d["size"]
        if size == 0:
            continue
        try:
            c = norm_container(d["container"])
            off = d["offset"]
        except (KeyError, ValueError, TypeError) as e:
            err("%s: bad container/offset in stat --json: %r" % (show(p), e))
            continue
        do = data_offset(ds, c)
        if do is None or do < 4096 or do % 4096:
            err("container %06d.dlc: bad data_offset %r in its header" % (c, do))
            continue
        if off < do:
            err("%s: offset %d lies before the data region (%d)" % (show(p), off, do))
        rel = off - do
        if rel % a.align:
            err("%s: offset %d (%d in the data region) is not a multiple of --align %d" %
                (show(p), off, rel, a.align))
        if size <= a.chunk:
            first, last = rel // a.chunk, (rel + size - 1) // a.chunk
            if first != last:
                err("%s: %d bytes at offset %d straddle chunks %d..%d (chunk %d)" %
                    (show(p), size, off, first, last, a.chunk))
        if prev is not None and (c, off) <= prev[0]:
            err("%s (inode %d) at container %d offset %d is not after %s at %r" %
                (show(p), ino, c, off, show(prev[1]), prev[0]))
        prev = ((c, off + size - 1), p)

    order = a.order.split(":")[0]
    seq = [p for _, p, _ in files]
    if order in ("sorted", "input") and not a.expect_seq:
        pos = {p: i for i, p in enumerate(seq)}
        bydir = {}
        for p in seq:
            bydir.setdefault(os.path.dirname(p), []).append(p)
        for dname, ps in bydir.items():
            if ps != sorted(ps):
                err("--order %s: files of %s are not laid out in name order: %r" %
                    (a.order, show(dname) or "/", [show(os.path.basename(x)) for x in ps][:10]))
    elif order == "size":
        for p1, p2 in zip(seq, seq[1:]):
            s1, s2 = info[p1]["size"], info[p2]["size"]
            # Ties by path: accept component-wise or plain byte order.
            if s2 < s1 or (s2 == s1 and p2 < p1 and pathkey(p2) < pathkey(p1)):
                err("--order size: %s (size %d) is laid out after %s (size %d)" %
                    (show(p2), s2, show(p1), s1))
                break
    if a.expect_seq:
        import ast
        want = [ast.literal_eval(l) for l in open(a.expect_seq) if l.strip()]
        if seq != want:
            for i, (x, y) in enumerate(zip(seq, want)):
                if x != y:
                    break
            else:
                i = min(len(seq), len(want))
            err("layout order differs from the expected one at file #%d: got %r, expected %r "
                "(%d files vs %d expected)" % (i, seq[i:i + 3], want[i:i + 3], len(seq), len(want)))
    if a.layout_out:
        with open(a.layout_out, "w") as f:
            for p in seq:
                f.write(repr(p) + "\n")

    for e in errs[:60]:
        print("  " + e, file=sys.stderr)
    if len(errs) > 60:
        print("  ... and %d more" % (len(errs) - 60), file=sys.stderr)
    sys.exit(1 if errs else 0)


if __name__ == "__main__":
    main()
