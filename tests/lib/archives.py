#!/usr/bin/python3
"""Archives as users have them, and the trees they extract to, for the
in-place tests (dlfs-pack --in-place; tests/*/inplace.sh).

    archives.py OUT SET

SET is one of:
  wds      WebDataset-style shards OUT/shard-00000{0,1,2}.tar, KEY.jpg,
           KEY.cls, KEY.json members of 10-100 KB in all, a key's three
           side by side;
  imagenet OUT/train.tar, a tar of class tars n0000000K.tar of real
           JPEGs (ILSVRC2012_img_train.tar's shape);
  mixed    OUT/pax.tar (pax: long names and link names, a hard link, a
           symlink, a member larger than a 64K chunk, an empty file),
           OUT/gnu.tar (GNU long names), OUT/ustar.tar (with ustar's
           prefix field, directories and modes) and OUT/coco.zip
           (stored and deflated members, a directory).
Each archive's extracted tree goes to OUT/want/ (nested class tars as
directories named without ".tar"), by Python's tarfile and zipfile, not
by dlfs. Deterministic: the same SET gives the same bytes.
"""
import io
import json
import os
import random
import sys
import tarfile
import zipfile

out, which = sys.argv[1], sys.argv[2]
r = random.Random(41)
os.makedirs(out, exist_ok=True)
want = os.path.join(out, "want")
MT = 1700000000


def add(t, name, data, mtime=MT, mode=0o644):
    ti = tarfile.TarInfo(name)
    ti.size, ti.mtime, ti.mode = len(data), mtime, mode
    t.addfile(ti, io.BytesIO(data))


def wds():
    for s in range(3):
        with tarfile.open(os.path.join(out, f"shard-{s:06d}.tar"), "w") as t:
            for k in range(40):
                key = f"{s:02d}{k:04d}"
                add(t, key + ".jpg", r.randbytes(r.randrange(10_000, 100_000)))
                add(t, key + ".cls", str(r.randrange(1000)).encode())
                add(t, key + ".json", json.dumps({"key": key, "w": r.random()}).encode())


def jpeg(i):
    from PIL import Image
    img = Image.new("RGB", (32 + i % 7, 24 + i % 5),
                    (r.randrange(256), r.randrange(256), r.randrange(256)))
    for _ in range(40):
        img.putpixel((r.randrange(img.width), r.randrange(img.height)),
                     (r.randrange(256), r.randrange(256), r.randrange(256)))
    b = io.BytesIO()
    img.save(b, "JPEG", quality=90)
    return b.getvalue()


def imagenet():
    with tarfile.open(os.path.join(out, "train.tar"), "w") as outer:
        for c in range(4):
            wn = f"n{c:08d}"
            bio = io.BytesIO()
            with tarfile.open(fileobj=bio, mode="w") as inner:
                for j in range(12 + 3 * c):
                    add(inner, f"{wn}_{j}.JPEG", jpeg(c * 100 + j))
            add(outer, wn + ".tar", bio.getvalue())


def mixed():
    with tarfile.open(os.path.join(out, "pax.tar"), "w", format=tarfile.PAX_FORMAT) as t:
        deep = "p/" + "long-directory-name-" * 8 + "/"
        for i in range(25):
            add(t, deep + f"file-{i:03d}-" + "n" * 140 + ".bin",
                r.randbytes(r.randrange(0, 40_000)), MT + i)
        add(t, "p/big.bin", r.randbytes(200_000))
        add(t, "p/empty", b"")
        first = deep + "file-000-" + "n" * 140 + ".bin"
        ti = tarfile.TarInfo("p/hard")
        ti.type, ti.linkname, ti.mtime = tarfile.LNKTYPE, first, MT
        t.addfile(ti)
        ti = tarfile.TarInfo("p/sym-" + "s" * 120)
        ti.type, ti.linkname, ti.mtime = tarfile.SYMTYPE, "big.bin", MT
        t.addfile(ti)
    with tarfile.open(os.path.join(out, "gnu.tar"), "w", format=tarfile.GNU_FORMAT) as t:
        for i in range(20):
            add(t, "g/" + "gnu-long-name-" * 10 + f"{i}.dat", r.randbytes(r.randrange(1, 30_000)))
    with tarfile.open(os.path.join(out, "ustar.tar"), "w", format=tarfile.USTAR_FORMAT) as t:
        ti = tarfile.TarInfo("u/sub")
        ti.type, ti.mode, ti.mtime = tarfile.DIRTYPE, 0o750, MT
        t.addfile(ti)
        for i in range(20):
            add(t, "u/sub/" + "x" * 60 + "/" + f"f{i}.txt",
                (f"line {i}\n" * r.randrange(1, 3000)).encode(), MT, 0o600 if i % 2 else 0o644)
    with zipfile.ZipFile(os.path.join(out, "coco.zip"), "w") as z:
        z.writestr(zipfile.ZipInfo("coco/", (2020, 1, 1, 0, 0, 0)), b"")
        for i in range(30):
            zi = zipfile.ZipInfo(f"coco/img_{i:03d}.jpg", (2020, 1, 1, 0, 0, 0))
            data = r.randbytes(r.randrange(1, 60_000)) if i % 2 else b"abcd" * r.randrange(1, 15_000)
            z.writestr(zi, data, compress_type=zipfile.ZIP_DEFLATED if i % 3 else zipfile.ZIP_STORED)


def extract():
    os.makedirs(want, exist_ok=True)
    for f in sorted(os.listdir(out)):
        p = os.path.join(out, f)
        if f.endswith(".zip"):
            zipfile.ZipFile(p).extractall(want)
        elif f == "train.tar":
            with tarfile.open(p) as t:
                for m in t.getmembers():
                    d = os.path.join(want, m.name[:-4])
                    os.makedirs(d, exist_ok=True)
                    with tarfile.open(fileobj=t.extractfile(m)) as inner:
                        inner.extractall(d)
        elif f.endswith(".tar"):
            with tarfile.open(p) as t:
                t.extractall(want)


{"wds": wds, "imagenet": imagenet, "mixed": mixed}[which]()
extract()
