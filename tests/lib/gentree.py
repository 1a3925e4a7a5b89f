#!/usr/bin/python3
"""Deterministic source-tree generator for the dlfs integration tests.

    gentree.py odd  DEST [--seed N] [--no-nonutf8] [--no-hardlink]
                         [--no-symlinks] [--no-deep] [--small N]
    gentree.py many DEST [--seed N] [--count N] [--per-dir N] [--max-size N]
    gentree.py big  DEST [--seed N] --size BYTES [--count N] [--sparse]
    gentree.py images DEST [--seed N] [--count N]
    gentree.py classes DEST [--seed N] --dirs K --files N [--dir FMT]
                            [--name FMT] [--ext E,E...] [--min-size N]
                            [--max-size N] [--text]

"odd": every kind of entry dlfs must keep: empty files and dirs, nested empty
dirs, symlinks (relative, absolute, dangling, to dirs, loops, long and
non-UTF-8 targets), names with spaces, tabs, newlines, non-UTF-8 bytes, a
255-byte name, a 60-level deep path, files around the 64 KiB chunk size used
by the tests (64K-1, 64K, 64K+1, 128K, 200K, 1M+3), special permission bits
(suid, sgid, sticky, read-only dirs), hard links, and mtimes with nanoseconds
(including before 1970 and after 2038).

"many": COUNT small files spread over directories of PER-DIR files each.

"big": COUNT files of SIZE bytes each (pseudo-random, or sparse zeros).

"images": an ImageFolder tree of COUNT small JPEG and PNG images in 10
class directories, for the PyTorch tests (needs PIL).

"classes": K directories (named by FMT from 0, "c%d") of N files each
("s%03d" plus the extensions in turn, none by default) of random bytes,
MIN-SIZE to MAX-SIZE (500 to 40000); with --text, every fourth file
(s003.bin, ...) only: the others are text (.txt) of 200 to 6000 words of
300, which compresses. The MPI tests' trees (tests/lib/mpilib.sh).

Everything (names, contents, modes, mtimes) is a function of the seed alone;
running twice with the same arguments gives identical trees. DEST must not
exist (or be an empty directory). Standard library only (but "images");
paths are bytes.
"""

import argparse
import os
import random
import stat
import sys

CHUNK = 64 * 1024


def die(msg):
    sys.stderr.write("gentree: %s\n" % msg)
    sys.exit(1)


class Tree:
    def __init__(self, root, seed):
        self.root = os.fsencode(root)
        self.rng = random.Random(seed)
        # (path, mode, mtime_ns) applied at the end, deepest first, so that
        # creating children does not disturb a directory's mtime or need
        # write permission on it.
        self.dirs = []
        self.files = []  # (path, mode, mtime_ns)
        self.links = []  # (path, mtime_ns)

    def p(self, rel):
        if isinstance(rel, str):
            rel = os.fsencode(rel)
        return os.path.join(self.root, rel) if rel else self.root

    def mtime(self):
        # Seconds between 1990 and 2030, random nanoseconds.
        s = self.rng.randrange(631152000, 1893456000)
        ns = self.rng.randrange(0, 1000000000)
        return s * 1000000000 + ns

    def data(self, size):
        return self.rng.randbytes(size)

    def mkdir(self, rel, mode=0o755, mtime=None):
        path = self.p(rel)
        os.makedirs(path, exist_ok=True)
        self.dirs.append((path, mode, self.mtime() if mtime is None else mtime))
        return path

    def file(self, rel, size=None, mode=0o644, mtime=None, content=None):
        path = self.p(rel)
        if content is None:
            if size is None:
                size = self.rng.randrange(0, 3000)
            content = self.data(size)
        with open(path, "wb") as f:
            f.write(content)
        self.files.append((path, mode, self.mtime() if mtime is None else mtime))
        return path

    def symlink(self, rel, target, mtime=None):
        path = self.p(rel)
        if isinstance(target, str):
            target = os.fsencode(target)
        os.symlink(target, path)
        self.links.append((path, self.mtime() if mtime is None else mtime))
        return path

    def finish(self):
        for path, mode, mt in self.files:
            os.chmod(path, mode)
            os.utime(path, ns=(mt, mt))
        for path, mt in self.links:
            os.utime(path, ns=(mt, mt), follow_symlinks=False)
        # Deepest directories first; parents after their children.
        for path, mode, mt in sorted(self.dirs, key=lambda d: -d[0].count(b"/")):
            os.chmod(path, mode)
            os.utime(path, ns=(mt, mt))


def prepare_root(dest):
    d = os.fsencode(dest)
    if os.path.lexists(d):
        if not os.path.isdir(d) or os.listdir(d):
            die("%s exists and is not an empty directory" % dest)
    else:
        os.makedirs(d)
    return d


def gen_odd(a):
    prepare_root(a.dest)
    t = Tree(a.dest, a.seed)
    t.mkdir(b"", 0o755)

    # Empty things.
    t.file("empty.txt", 0)
    t.mkdir("emptydir", 0o755)
    t.mkdir("nested/empty/dirs/a/b/c", 0o755)
    for d in ("nested", "nested/empty", "nested/empty/dirs",
              "nested/empty/dirs/a", "nested/empty/dirs/a/b"):
        t.mkdir(d, 0o755)
    t.file("nested/empty/zero", 0)

    # Odd names.
    t.mkdir("names", 0o755)
    for name in ("with space.txt", "tab\there", "new\nline", " leading space",
                 "trailing space ", "-dash", ".hidden", "back\\slash",
                 "star*q?[br]", "quote'\"", "semi;colon&amp|pipe",
                 "ünïcødé-日本語.txt", "emoji-\U0001F600"):
        t.file(os.path.join(b"names", os.fsencode(name)))
    if not a.no_nonutf8:
        t.file(b"names/bin\xff\xfe.dat")
        t.file(b"names/latin1-\xe9t\xe9")
        t.mkdir(b"names/dir-\x80\x81", 0o755)
        t.file(b"names/dir-\x80\x81/inside")
    long_name = b"L" * 251 + b".txt"
    assert len(long_name) == 255
    t.file(b"names/" + long_name, 100)
    t.mkdir(b"names/" + b"D" * 255, 0o755)
    t.file(b"names/" + b"D" * 255 + b"/" + b"f" * 255, 10)

    # Deep tree: 60 levels.
    if not a.no_deep:
        rel = b"deep"
        t.mkdir(rel, 0o755)
        for i in range(1, 61):
            rel += b"/level%02d" % i
            t.mkdir(rel, 0o755)
        t.file(rel + b"/leaf.txt", 123)

    # Sizes around the chunk size.
    t.mkdir("sizes", 0o755)
    for name, size in (("one", 1), ("4k", 4096), ("64k-1", CHUNK - 1),
                       ("64k", CHUNK), ("64k+1", CHUNK + 1),
                       ("128k", 2 * CHUNK), ("200k", 200 * 1024),
                       ("1m+3", 1024 * 1024 + 3)):
        t.file("sizes/" + name, size)

    # Modes.
    t.mkdir("modes", 0o755)
    for mode in (0o600, 0o755, 0o444, 0o400, 0o640, 0o777, 0o000, 0o4755,
                 0o2755, 0o1644):
        t.file("modes/m%04o" % mode, 50, mode=mode)
    t.mkdir("modes/d2775", 0o2775)
    t.file("modes/d2775/child", 10)
    t.mkdir("modes/d1777", 0o1777)
    t.mkdir("modes/d0500", 0o500)
    t.file("modes/d0500/child", 10, mode=0o400)
    t.mkdir("modes/d0700", 0o700)
    t.mkdir("modes/d0000", 0o000)

    # Times: nanosecond edge values, before 1970, after 2038.
    t.mkdir("times", 0o755)
    t.file("times/ns0", 5, mtime=1600000000 * 10**9)
    t.file("times/ns999999999", 5, mtime=1600000000 * 10**9 + 999999999)
    t.file("times/pre1970", 5, mtime=-1000000000 * 10**9 + 123456789)
    t.file("times/post2038", 5, mtime=4102444800 * 10**9 + 987654321)
    t.file("times/epoch", 5, mtime=0)
    t.mkdir("times/olddir", 0o755, mtime=-86400 * 10**9 + 5)

    # Symlinks.
    if not a.no_symlinks:
        t.mkdir("links", 0o755)
        t.symlink("links/rel", "../names/with space.txt")
        t.symlink("links/abs", "/etc/hostname")
        t.symlink("links/dangling", "does/not/exist")
        t.symlink("links/todir", "../nested")
        t.symlink("links/dot", ".")
        t.symlink("links/loop1", "loop2")
        t.symlink("links/loop2", "loop1")
        t.symlink("links/long", "x/" * 500 + "end")
        t.symlink("links/spaces", "a b\tc")
        if not a.no_nonutf8:
            t.symlink(b"links/bin\xfe", b"target\xff\xfe")
        t.symlink("toplink", "sizes/one")

    # Hard links become independent copies in dlfs.
    if not a.no_hardlink:
        t.mkdir("hard", 0o755)
        t.file("hard/a", 777)
        os.link(t.p("hard/a"), t.p("hard/b"))

    # A bunch of small files so chunks and containers fill up.
    t.mkdir("small", 0o755)
    for i in range(a.small):
        t.file("small/f%03d" % i, t.rng.randrange(0, 3000))
    t.mkdir("small/sub", 0o750)
    for i in range(10):
        t.file("small/sub/g%02d" % i, t.rng.randrange(0, 70000))

    t.finish()


def gen_many(a):
    prepare_root(a.dest)
    root = os.fsencode(a.dest)
    rng = random.Random(a.seed)
    blob = rng.randbytes(a.max_size + 65536)
    ndirs = (a.count + a.per_dir - 1) // a.per_dir
    made = 0
    dirs = []
    base_mt = 1700000000 * 10**9
    for d in range(ndirs):
        # Two levels: group/dir, to have some nesting.
        drel = b"g%03d/d%05d" % (d // 100, d)
        dpath = os.path.join(root, drel)
        os.makedirs(dpath, exist_ok=True)
        dirs.append(dpath)
        n = min(a.per_dir, a.count - made)
        for i in range(n):
            size = rng.randrange(0, a.max_size + 1)
            off = rng.randrange(0, 65536)
            fp = os.path.join(dpath, b"file%05d.bin" % i)
            fd = os.open(fp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            try:
                os.write(fd, blob[off:off + size])
                mt = base_mt + made * 1000003
                os.utime(fd, ns=(mt, mt))
            finally:
                os.close(fd)
            made += 1
    # Directory mtimes, deepest first.
    groups = sorted({os.path.dirname(d) for d in dirs})
    for i, d in enumerate(dirs + groups + [root]):
        mt = base_mt + i * 7
        os.utime(d, ns=(mt, mt))


def gen_big(a):
    prepare_root(a.dest)
    root = os.fsencode(a.dest)
    rng = random.Random(a.seed)
    for i in range(a.count):
        fp = os.path.join(root, b"big%03d.bin" % i)
        with open(fp, "wb") as f:
            if a.sparse:
                f.truncate(a.size)
            else:
                left = a.size
                block = rng.randbytes(1 << 20)
                n = 0
                while left > 0:
                    # Vary blocks cheaply so they are not all identical.
                    piece = block[n % 4096:] + block[:n % 4096]
                    piece = piece[:min(left, len(piece))]
                    f.write(piece)
                    left -= len(piece)
                    n += 1


def gen_images(a):
    """An ImageFolder tree: 10 class directories, count small images of
    random sizes and modes (RGB, L, RGBA) with drawn rectangles, every
    other one a JPEG (not RGBA), the rest PNG. Needs PIL."""
    from PIL import Image, ImageDraw
    r = random.Random(a.seed)
    classes = ["class%02d_%s" % (i, n) for i, n in enumerate(
        ["cat", "dog", "car", "ship", "frog", "bird", "deer", "horse",
         "plane", "truck"])]
    for c in classes:
        os.makedirs(os.path.join(a.dest, c))
    for i in range(a.count):
        c = classes[i % 10]
        w, h = r.randrange(24, 97), r.randrange(24, 97)
        mode = r.choice(["RGB", "RGB", "RGB", "L", "RGBA"])
        im = Image.frombytes(mode, (w, h), r.randbytes(w * h * len(mode)))
        d = ImageDraw.Draw(im)
        for _ in range(3):
            x0, y0 = r.randrange(w), r.randrange(h)
            d.rectangle([x0, y0, x0 + r.randrange(1, 30), y0 + r.randrange(1, 30)],
                        fill=tuple(r.randrange(256) for _ in mode) if mode != "L" else r.randrange(256))
        name = os.path.join(a.dest, c, "img%04d" % i)
        if i % 2 and mode != "RGBA":
            im.save(name + ".jpg", quality=r.randrange(60, 96))
        else:
            im.save(name + ".png")


def gen_classes(a):
    r = random.Random(a.seed)
    exts = a.ext.split(",")
    for k in range(a.dirs):
        os.makedirs(os.path.join(a.dest, a.dir % k))
        for i in range(a.files):
            p = os.path.join(a.dest, a.dir % k, a.name % i)
            if a.text and i % 4 != 3:
                words = ["w%d" % r.randrange(300)
                         for _ in range(r.randrange(200, 6000))]
                with open(p + ".txt", "w") as f:
                    f.write(" ".join(words))
                continue
            ext = ".bin" if a.text else exts[i % len(exts)]
            with open(p + ext, "wb") as f:
                f.write(r.randbytes(r.randrange(a.min_size, a.max_size)))


def parse_size(s):
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    s = s.strip()
    if s and s[-1].upper() in mult:
        return int(s[:-1]) * mult[s[-1].upper()]
    return int(s)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="kind", required=True)
    o = sub.add_parser("odd")
    o.add_argument("dest")
    o.add_argument("--seed", type=int, default=1)
    o.add_argument("--no-nonutf8", action="store_true")
    o.add_argument("--no-hardlink", action="store_true")
    o.add_argument("--no-symlinks", action="store_true")
    o.add_argument("--no-deep", action="store_true")
    o.add_argument("--small", type=int, default=60,
                   help="number of small files in small/")
    m = sub.add_parser("many")
    m.add_argument("dest")
    m.add_argument("--seed", type=int, default=1)
    m.add_argument("--count", type=int, default=100000)
    m.add_argument("--per-dir", type=int, default=100)
    m.add_argument("--max-size", type=int, default=512)
    b = sub.add_parser("big")
    b.add_argument("dest")
    b.add_argument("--seed", type=int, default=1)
    b.add_argument("--size", type=parse_size, required=True)
    b.add_argument("--count", type=int, default=1)
    b.add_argument("--sparse", action="store_true")
    im = sub.add_parser("images")
    im.add_argument("dest")
    im.add_argument("--seed", type=int, default=2024)
    im.add_argument("--count", type=int, default=1000)
    c = sub.add_parser("classes")
    c.add_argument("dest")
    c.add_argument("--seed", type=int, default=1)
    c.add_argument("--dirs", type=int, required=True)
    c.add_argument("--files", type=int, required=True)
    c.add_argument("--dir", default="c%d")
    c.add_argument("--name", default="s%03d")
    c.add_argument("--ext", default="")
    c.add_argument("--min-size", type=int, default=500)
    c.add_argument("--max-size", type=int, default=40000)
    c.add_argument("--text", action="store_true")
    a = ap.parse_args()
    os.umask(0o022)
    {"odd": gen_odd, "many": gen_many, "big": gen_big,
     "images": gen_images, "classes": gen_classes}[a.kind](a)


if __name__ == "__main__":
    main()
