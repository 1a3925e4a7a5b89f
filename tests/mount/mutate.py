#!/usr/bin/python3
"""mutate.py: damaged datasets and caches, mounted and read in full.

    mutate.py --dlfs DLFS --pack DLFS_PACK --work DIR
              [--cases N] [--seed S] [--case I[,I...]] [--kinds K,...]
              [--read-timeout SECONDS] [--report FILE] [--list]

Builds a small real dataset (a fixed tree, packed with 16 KiB chunks into
64 KiB containers) and the NVMe cache of a first mount that reads it all.
Then, for each case I in 0..N-1, a mutation drawn from (seed, I) alone:

  index-flip     1 to 4 random bytes of the index file xor'ed
  index-record   one random byte of one record's bytes (superblock,
                 container, chunk, inode, directory entry key or value)
  index-field    one field of one record set to a hostile value (a file's
                 container or offset out of range or another file's, sizes
                 off by one or huge, n_chunks 0, chunk lengths, types...)
  index-rebuild  the index rewritten by mdb_dump/mdb_load with a record
                 added, dropped or renamed (names of 256 bytes, '/' and
                 '..', a directory listing itself, missing records)
  index-cut      the index truncated (at a page boundary or not), or
                 extended with zeros or garbage
  container      a container truncated, extended, flipped (header, data,
                 trailer, footer), deleted or swapped with another
  nvme           the populated cache damaged: .cache bytes flipped,
                 truncated, deleted, made a directory; the map's header or
                 bytes changed, truncated or deleted

applies it to a copy, and mounts the copy (dlfs -f) twice: without
cache_dir, and with cache_dir holding a copy of the populated cache
(even cases) or an empty one (odd cases); nvme cases mount with their
damaged cache only. Each mount lists every directory, stats, reads and
readlinks every entry of the source tree (a reader process, each step
bounded by --read-timeout), then unmounts.

Every outcome must be one of:
  - the exact original bytes (listing, size, target);
  - EIO (never for nvme cases: a damaged cache must not fail a read);
  - ENOENT / ENOTDIR / another listing, only where the mutation may have
    changed names: bytes of a directory entry's key or of LMDB's own page
    structure, or a rebuild that renames or drops entries;
  - another symlink target, only where the mutation changed the bytes of
    a target in the index (targets, like names, modes and times, carry
    no checksum: dlfs(1), "Reads and checksums");
  - the exact bytes of another file of the tree, only where the mutation
    may have pointed a name at another inode: bytes of a directory
    entry's value (the inode it names), of LMDB's page structure, a
    field or rebuild that changes an entry's inode, a cut index. The
    name then leads to another intact file; which inode a name leads to
    carries no checksum either (counted as inos_changed). Bytes that are
    no file's (a size off by one, a neighbour's bytes) stay wrong bytes;
  - the daemon refusing to mount, exiting 1 with a "dlfs: " message
    (never for nvme cases).
Violations: a crash (the daemon died, exited non-zero at unmount, or a
sanitizer reported), a hang (a step got no answer within the timeout),
wrong bytes, another errno, a mount refused without a message.

Prints one line per violation and a summary (cases, mounts, steps, and
the counts of each kind of violation); --report writes them as JSON.
Exit 1 on any violation. A case is reproduced by --case I with the same
--seed (the dataset is always the same); --list prints the cases only.
"""
import argparse
import errno
import json
import os
import random
import re
import shutil
import signal
import stat
import struct
import subprocess
import sys
import time

CS = 16384
CONTAINER = 65536
KINDS = ["index-flip", "index-record", "index-field", "index-rebuild", "index-cut", "container",
         "nvme"]
WEIGHTS = [2, 3, 4, 2, 1, 3, 3]
SAN_RE = re.compile(r"Sanitizer|runtime error:|SUMMARY:|LeakSanitizer")
# "inodes.f" holds the inode blocks of a dataset with feature flags
# (format 1.1, dlfs-format(5)); a 1.0 one has "inodes".
DBS = ["meta", "inodes", "inodes.f", "symlinks", "dirents", "chunks", "containers"]

ap = argparse.ArgumentParser()
ap.add_argument("--dlfs", required=True)
ap.add_argument("--pack", required=True)
ap.add_argument("--work", required=True)
ap.add_argument("--cases", type=int, default=30)
ap.add_argument("--seed", type=int, default=1)
ap.add_argument("--case")
ap.add_argument("--kinds")
ap.add_argument("--read-timeout", type=float, default=15)
ap.add_argument("--report")
ap.add_argument("--list", action="store_true")
A = ap.parse_args()
W = os.path.abspath(A.work)


def log(msg):
    print("[mutate] " + msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- dataset

def make_tree(d):
    r = random.Random(5)
    files = {}
    def put(rel, n):
        p = os.path.join(d, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        b = r.randbytes(n)
        open(p, "wb").write(b)
        files[rel] = b
    for i in range(25):
        put("small/s%02d" % i, 0 if i == 0 else r.randrange(1, 3000))
    for i in range(6):
        put("mid/m%d" % i, r.randrange(10000, 40000))
    put("big/b0", 70000)
    put("deep/a/b/c/f", 100)
    put("n" * 255, 50)
    os.makedirs(os.path.join(d, "emptydir"))
    os.symlink("small/s01", os.path.join(d, "link"))
    for dp, dn, fn in os.walk(d, topdown=False):
        for n in fn + dn:
            os.utime(os.path.join(dp, n), ns=(1600000000 * 10**9,) * 2, follow_symlinks=False)


def mdb_dump(index):
    """{db: [(key bytes, value bytes)]} of every named database."""
    out = subprocess.run(["mdb_dump", "-n", "-a", index], check=True,
                         stdout=subprocess.PIPE).stdout.decode()
    dbs, cur, data, pend = {}, None, False, None
    for line in out.splitlines():
        if line.startswith("database="):
            cur = line.split("=", 1)[1]
            dbs[cur] = []
        elif line == "HEADER=END":
            data, pend = True, None
        elif line == "DATA=END":
            data = False
        elif data and line.startswith(" "):
            b = bytes.fromhex(line[1:])
            if pend is None:
                pend = b
            else:
                dbs[cur].append((pend, b))
                pend = None
    return dbs


def mdb_load(dbs, index):
    """Write a new index file holding dbs."""
    lines = []
    for name in [n for n in DBS if n in dbs]:
        lines += ["VERSION=3", "format=bytevalue", "database=" + name, "type=btree",
                  "mapsize=67108864", "maxreaders=126", "HEADER=END"]
        for k, v in sorted(dbs.get(name, [])):
            lines += [" " + k.hex(), " " + v.hex()]
        lines.append("DATA=END")
    dump = index + ".dump"
    open(dump, "w").write("\n".join(lines) + "\n")
    if os.path.exists(index):
        os.unlink(index)
    subprocess.run(["mdb_load", "-n", "-f", dump, index], check=True,
                   stderr=subprocess.DEVNULL)
    os.unlink(dump)
    if os.path.exists(index + "-lock"):
        os.unlink(index + "-lock")


class Dataset:
    """The pristine dataset: its records and where they lie in the index."""

    def __init__(self, path):
        self.path = path
        self.index = os.path.join(path, "index")
        self.raw = open(self.index, "rb").read()
        self.dbs = mdb_dump(self.index)
        sup = dict(self.dbs["meta"])[b"super"]
        (self.n_inodes, self.n_dirs, self.n_symlinks, self.n_files, self.first_file,
         self.n_containers) = struct.unpack_from("<6Q", sup, 48)
        self.containers = sorted(n for n in os.listdir(path) if n.endswith(".dlc"))
        # Record spans in the index file: (db, key, kind, value offset, length)
        # found as key || value, which is how an LMDB leaf node holds them.
        self.spans = []
        for db, kvs in self.dbs.items():
            for k, v in kvs:
                at = self.raw.find(k + v)
                if at < 0 or self.raw.find(k + v, at + 1) >= 0:
                    continue
                self.spans.append((db, k, "key", at, len(k)))
                self.spans.append((db, k, "value", at + len(k), len(v)))
        minor = struct.unpack_from("<I", sup, 4)[0]
        feat = struct.unpack_from("<Q", sup, 112)[0] if minor >= 1 and len(sup) >= 120 else 0
        self.idb = "inodes.f" if feat else "inodes"
        rs = self.rs = 48 if feat & 1 else 40  # path_bound: + path_hash
        self.inodes = {}  # ino -> (value offset in the file, record bytes)
        for k, v in self.dbs[self.idb]:
            block = struct.unpack(">Q", k)[0]
            at = self.raw.find(k + v)
            for s in range(len(v) // rs):
                self.inodes[block * 16 + s + 1] = (at + len(k) + rs * s if at >= 0 else -1,
                                                   v[rs * s:rs * s + rs])

    def span_of(self, off):
        for sp in self.spans:
            if sp[3] <= off < sp[3] + sp[4]:
                return sp
        return None

    def regular(self):
        return [i for i in range(self.first_file, self.n_inodes + 1)]


# ---------------------------------------------------------------- cases

def xor_at(path, off, x):
    with open(path, "r+b") as f:
        f.seek(off)
        b = f.read(1)
        if not b:
            return False
        f.seek(off)
        f.write(bytes([b[0] ^ x]))
    return True


def write_at(path, off, b):
    with open(path, "r+b") as f:
        f.seek(off)
        f.write(b)


class Case:
    def __init__(self, i):
        self.i = i
        self.r = random.Random("%d/%d" % (A.seed, i))
        kinds = A.kinds.split(",") if A.kinds else KINDS
        w = [WEIGHTS[KINDS.index(k)] for k in kinds]
        self.kind = self.r.choices(kinds, w)[0]
        self.what = ""
        self.names_may_change = False  # ENOENT/ENOTDIR/listings allowed
        self.targets_may_change = False  # symlink targets: no checksum
        self.inos_may_change = False  # a name may lead to another inode
        self.nvme = self.kind == "nvme"


def mutate(c, ds, dsdir, nvdir):
    """Apply case c to the copies dsdir (dataset) and nvdir (cache)."""
    r = c.r
    idx = os.path.join(dsdir, "index")
    size = os.path.getsize(idx)
    if c.kind == "index-flip":
        offs = sorted(r.randrange(size) for _ in range(r.randint(1, 4)))
        for o in offs:
            x = r.randrange(1, 256)
            xor_at(idx, o, x)
            sp = ds.span_of(o)
            if sp is None or (sp[0] == "dirents" and sp[2] == "key"):
                c.names_may_change = True
            if sp is None or (sp[0] == "dirents" and sp[2] == "value"):
                c.inos_may_change = True
            if sp is not None and sp[0] == "symlinks" and sp[2] == "value":
                c.targets_may_change = True
        c.what = "index bytes xor'ed at %s (%s)" % (
            ",".join(map(str, offs)),
            "; ".join(describe_span(ds, ds.span_of(o)) for o in offs))
    elif c.kind == "index-record":
        spans = [s for s in ds.spans if not (s[0] == "meta" and s[1] != b"super")]
        sp = r.choice(spans)
        o = sp[3] + r.randrange(sp[4])
        x = r.randrange(1, 256)
        xor_at(idx, o, x)
        if sp[0] == "dirents" and sp[2] == "key":
            c.names_may_change = True
        if sp[0] == "dirents" and sp[2] == "value":
            c.inos_may_change = True
        if sp[0] == "symlinks" and sp[2] == "value":
            c.targets_may_change = True
        c.what = "index: %s, byte %d xor 0x%02x (file offset %d)" % (
            describe_span(ds, sp), o - sp[3], x, o)
    elif c.kind == "index-field":
        field_mutation(c, ds, idx)
    elif c.kind == "index-rebuild":
        rebuild_mutation(c, ds, idx)
    elif c.kind == "index-cut":
        how = r.choice(["page", "byte", "zeros", "garbage"])
        if how == "page":
            at = r.randrange(1, size // 4096) * 4096
            os.truncate(idx, at)
            c.what = "index truncated to %d bytes (a page boundary)" % at
        elif how == "byte":
            at = r.randrange(1, size)
            os.truncate(idx, at)
            c.what = "index truncated to %d bytes" % at
        else:
            n = r.choice([1, 4096, 65536])
            with open(idx, "ab") as f:
                f.write(bytes(n) if how == "zeros" else r.randbytes(n))
            c.what = "index extended by %d bytes of %s" % (n, how)
        # A cut in LMDB's pages may lose any entry.
        c.names_may_change = True
        c.inos_may_change = True
    elif c.kind == "container":
        container_mutation(c, ds, dsdir)
    elif c.kind == "nvme":
        nvme_mutation(c, ds, nvdir)


def describe_span(ds, sp):
    if sp is None:
        return "LMDB page structure"
    db, k, part, at, n = sp
    if db in ("inodes", "inodes.f"):
        b = struct.unpack(">Q", k)[0]
        return "inode block %d %s" % (b, part)
    if db == "dirents":
        return "dirent %r of dir %d %s" % (k[8:][:40], struct.unpack(">Q", k[:8])[0], part)
    if db == "chunks":
        return "chunk %d/%d %s" % (struct.unpack(">I", k[:4])[0], struct.unpack(">I", k[4:])[0], part)
    if db == "containers":
        return "container %d record %s" % (struct.unpack(">I", k)[0], part)
    if db == "symlinks":
        return "symlink %d target %s" % (struct.unpack(">Q", k)[0], part)
    return "meta %r %s" % (k, part)


def field_mutation(c, ds, idx):
    r = c.r
    choice = r.choice(["inode", "inode", "inode", "container", "chunk", "dirent", "super"])
    if choice == "inode":
        ino = r.choice(ds.regular() + [1, 2, ds.first_file - 1])
        at, rec = ds.inodes[ino]
        mode, nsec, sec, size, loc, h = struct.unpack_from("<IIqQQQ", rec, 0)
        cont, off = loc >> 48, loc & (2**48 - 1)
        others = [struct.unpack_from("<Q", ds.inodes[j][1], 24)[0] for j in ds.regular() if j != ino]
        opts = {
            "container = n_containers": ("loc", (ds.n_containers << 48) | off),
            "container = 0xffff": ("loc", (0xFFFF << 48) | off),
            "container = another": ("loc", (((cont + 1) % ds.n_containers) << 48) | off),
            "offset = another file's": ("loc", r.choice(others)),
            "offset + 1": ("loc", loc + 1),
            "offset - 1": ("loc", loc - 1),
            "offset before the data region": ("loc", (cont << 48) | (CS - 1)),
            "offset = 2^48 - 1": ("loc", (cont << 48) | (2**48 - 1)),
            "size + 1": ("size", size + 1),
            "size - 1": ("size", max(0, size - 1)),
            "size = 0": ("size", 0),
            "size = 2^63": ("size", 2**63),
            "size = 2^64 - 1": ("size", 2**64 - 1),
            "mode = directory": ("mode", stat.S_IFDIR | 0o755),
            "mode = regular file": ("mode", stat.S_IFREG | 0o644),
            "mode = symlink": ("mode", stat.S_IFLNK | 0o777),
            "mode = char device": ("mode", stat.S_IFCHR | 0o644),
            "mode = 0": ("mode", 0),
            "xxh3 xor 1": ("xxh3", h ^ 1),
        }
        name = r.choice(sorted(opts))
        field, val = opts[name]
        vals = {"mode": mode, "size": size, "loc": loc, "xxh3": h}
        vals[field] = val % 2**64
        new = struct.pack("<IIqQQQ", vals["mode"] % 2**32, nsec, sec, vals["size"], vals["loc"],
                          vals["xxh3"]) + rec[40:]
        write_at(idx, at, new)
        c.what = "inode %d: %s" % (ino, name)
    elif choice == "container":
        kvs = ds.dbs["containers"]
        k, v = r.choice(kvs)
        fs, dsz, nch, nf, fi, fx = struct.unpack("<6Q", v)
        opts = {
            "n_chunks = 0": (2, 0), "n_chunks + 1": (2, nch + 1), "n_chunks = 2^32": (2, 2**32),
            "n_chunks = 2^64 - 1": (2, 2**64 - 1),
            "data_size + chunk": (1, dsz + CS), "data_size - 1": (1, dsz - 1), "data_size = 0": (1, 0),
            "file_size - 1": (0, fs - 1), "file_size + 4096": (0, fs + 4096),
            "first_ino + 1": (4, fi + 1), "first_ino = 0": (4, 0), "n_files + 1": (3, nf + 1),
            "n_files = 2^64 - 1": (3, 2**64 - 1), "footer_xxh3 xor 1": (5, fx ^ 1),
        }
        name = r.choice(sorted(opts))
        i, val = opts[name]
        f = [fs, dsz, nch, nf, fi, fx]
        f[i] = val % 2**64
        write_at(idx, ds.raw.find(k + v) + len(k), struct.pack("<6Q", *f))
        c.what = "container %d record: %s" % (struct.unpack(">I", k)[0], name)
    elif choice == "chunk":
        k, v = r.choice(ds.dbs["chunks"])
        h, ln, res = struct.unpack("<QII", v)
        opts = {"length = 0": (h, 0), "length + 1": (h, ln + 1), "length = chunk + 4096": (h, CS + 4096),
                "length = 2^32 - 1": (h, 2**32 - 1), "length - 1": (h, ln - 1), "xxh3 xor 1": (h ^ 1, ln)}
        name = r.choice(sorted(opts))
        nh, nl = opts[name]
        write_at(idx, ds.raw.find(k + v) + len(k), struct.pack("<QII", nh, nl % 2**32, res))
        c.what = "chunk %d/%d record: %s" % (struct.unpack(">I", k[:4])[0], struct.unpack(">I", k[4:])[0], name)
    elif choice == "dirent":
        k, v = r.choice(ds.dbs["dirents"])
        val = struct.unpack("<Q", v)[0]
        ino, typ = val & (2**60 - 1), val >> 60
        files = ds.regular()
        opts = {
            "ino = 0": (0, typ), "ino = n_inodes + 1": (ds.n_inodes + 1, typ),
            "ino = 2^60 - 1": (2**60 - 1, typ), "ino = the root": (1, typ),
            "ino = its parent": (struct.unpack(">Q", k[:8])[0], typ),
            "ino = another file": (r.choice(files), typ),
            "type = directory": (ino, 4), "type = regular": (ino, 8), "type = 0": (ino, 0),
        }
        name = r.choice(sorted(opts))
        ni, nt = opts[name]
        write_at(idx, ds.raw.find(k + v) + len(k), struct.pack("<Q", (nt << 60) | ni))
        c.what = "dirent %r (in dir %d): %s" % (k[8:][:40], struct.unpack(">Q", k[:8])[0], name)
        c.inos_may_change = ni != ino
    else:
        k, v = next(kv for kv in ds.dbs["meta"] if kv[0] == b"super")
        fields = ["chunk_size", "container_size", "align", "n_inodes", "n_dirs", "n_symlinks",
                  "n_files", "first_file_ino", "n_containers", "total_file_bytes"]
        name = r.choice(fields)
        i = fields.index(name)
        old = struct.unpack_from("<Q", v, 24 + 8 * i)[0]
        new = r.choice([old + 1, old - 1, 0, 2**63, old * 2])
        b = bytearray(v)
        struct.pack_into("<Q", b, 24 + 8 * i, new % 2**64)
        write_at(idx, ds.raw.find(k + v) + len(k), bytes(b))
        c.what = "superblock %s %d -> %d" % (name, old, new % 2**64)
        c.names_may_change = True  # n_inodes or n_dirs smaller hide entries


def rebuild_mutation(c, ds, idx):
    r = c.r
    dbs = {k: list(v) for k, v in ds.dbs.items()}
    root = struct.pack(">Q", 1)
    files = ds.regular()
    opts = ["long name", "slash name", "dotdot name", "dot name", "dir lists itself",
            "dir lists root", "drop inode block", "drop chunk record", "drop container record",
            "drop symlink target", "drop dirent", "rename dirent", "empty name",
            "dirent to a missing inode"]
    name = r.choice(opts)
    reg = (8 << 60)
    # Entries added, dropped or renamed change listings and names.
    c.names_may_change = not name.startswith("drop") or name == "drop dirent"
    # New entries name existing files.
    c.inos_may_change = c.names_may_change

    if name == "long name":
        n = r.choice([256, 300, 500])
        dbs["dirents"].append((root + b"L" * n, struct.pack("<Q", reg | r.choice(files))))
        name += " (%d bytes)" % n
    elif name == "slash name":
        dbs["dirents"].append((root + b"../../escape", struct.pack("<Q", reg | r.choice(files))))
    elif name == "dotdot name":
        dbs["dirents"].append((root + b"..", struct.pack("<Q", (4 << 60) | 1)))
    elif name == "dot name":
        dbs["dirents"].append((root + b".", struct.pack("<Q", (4 << 60) | 1)))
    elif name == "empty name":
        dbs["dirents"].append((struct.pack(">Q", 2), struct.pack("<Q", reg | r.choice(files))))
    elif name == "dir lists itself":
        d = r.randrange(2, ds.n_dirs + 1)
        dbs["dirents"].append((struct.pack(">Q", d) + b"self", struct.pack("<Q", (4 << 60) | d)))
    elif name == "dir lists root":
        d = r.randrange(2, ds.n_dirs + 1)
        dbs["dirents"].append((struct.pack(">Q", d) + b"loop", struct.pack("<Q", (4 << 60) | 1)))
    elif name == "dirent to a missing inode":
        dbs["dirents"].append((root + b"ghost", struct.pack("<Q", reg | (ds.n_inodes + 5))))
    elif name.startswith("drop"):
        db = {"drop inode block": ds.idb, "drop chunk record": "chunks",
              "drop container record": "containers", "drop symlink target": "symlinks",
              "drop dirent": "dirents"}[name]
        k, v = r.choice(dbs[db])
        dbs[db].remove((k, v))
        name += " " + describe_span(ds, (db, k, "", 0, 0))
    elif name == "rename dirent":
        k, v = r.choice(dbs["dirents"])
        dbs["dirents"].remove((k, v))
        dbs["dirents"].append((k + b"~", v))
        name += " %r" % k[8:][:40]
    mdb_load(dbs, idx)
    c.what = "index rebuilt: " + name


def container_mutation(c, ds, dsdir):
    r = c.r
    name = r.choice(ds.containers)
    p = os.path.join(dsdir, name)
    size = os.path.getsize(p)
    hdr = open(p, "rb").read(72)
    dsz = struct.unpack_from("<Q", hdr, 56)[0]
    foot = open(p, "rb").read()[-72:]
    toff, tsz = struct.unpack_from("<QQ", foot, 32)
    how = r.choice(["truncate", "truncate", "extend", "flip data", "flip data", "flip header",
                    "flip trailer", "flip footer", "delete", "swap", "zero data page", "empty"])
    if how == "truncate":
        at = r.choice([0, 10, 100, CS, CS + r.randrange(dsz), toff, size - 72, size - 1])
        os.truncate(p, at)
        how += " to %d bytes" % at
    elif how == "extend":
        with open(p, "ab") as f:
            f.write(r.randbytes(r.choice([1, 72, 4096])))
    elif how.startswith("flip"):
        lo, hi = {"flip data": (CS, CS + dsz), "flip header": (0, 72), "flip trailer": (toff, toff + tsz),
                  "flip footer": (size - 72, size)}[how]
        at = r.randrange(lo, hi)
        xor_at(p, at, r.randrange(1, 256))
        how += " at %d" % at
    elif how == "zero data page":
        at = CS + r.randrange(max(1, dsz // 4096)) * 4096
        write_at(p, at, bytes(4096))
        how += " at %d" % at
    elif how == "delete":
        os.unlink(p)
    elif how == "empty":
        os.truncate(p, 0)
    elif how == "swap":
        other = r.choice([n for n in ds.containers if n != name])
        q = os.path.join(dsdir, other)
        os.rename(p, p + ".tmp")
        os.rename(q, p)
        os.rename(p + ".tmp", q)
        how += " with " + other
    c.what = "container %s: %s" % (name, how)


def nvme_mutation(c, ds, nvdir):
    r = c.r
    sub = os.path.join(nvdir, os.listdir(nvdir)[0])
    caches = sorted(n for n in os.listdir(sub) if n.endswith(".cache"))
    mp = os.path.join(sub, "map")
    msize = os.path.getsize(mp)
    how = r.choice(["flip cache", "flip cache", "truncate cache", "delete cache", "cache is a dir",
                    "map bytes", "map header", "truncate map", "delete map", "map all present",
                    "swap caches", "zero cache page"])
    name = r.choice(caches)
    p = os.path.join(sub, name)
    if how == "flip cache":
        at = CS + r.randrange(max(1, os.path.getsize(p) - CS))
        for k in range(r.choice([1, 16])):
            xor_at(p, at + k, 0xFF)
        how += " %s at %d" % (name, at)
    elif how == "zero cache page":
        at = CS + r.randrange(max(1, (os.path.getsize(p) - CS) // 4096)) * 4096
        write_at(p, at, bytes(4096))
        how += " %s at %d" % (name, at)
    elif how == "truncate cache":
        at = r.randrange(os.path.getsize(p))
        os.truncate(p, at)
        how += " %s to %d" % (name, at)
    elif how == "delete cache":
        os.unlink(p)
        how += " " + name
    elif how == "cache is a dir":
        os.unlink(p)
        os.mkdir(p, 0o700)
        how += " " + name
    elif how == "map bytes":
        at = 64 + r.randrange(max(1, msize - 64))
        write_at(mp, at, bytes([r.choice([0, 1, 2, 0x80, 0xFF])]))
        how += " at %d" % at
    elif how == "map header":
        at = r.randrange(64)
        xor_at(mp, at, r.randrange(1, 256))
        how += " byte %d" % at
    elif how == "truncate map":
        at = r.randrange(msize)
        os.truncate(mp, at)
        how += " to %d" % at
    elif how == "delete map":
        os.unlink(mp)
    elif how == "map all present":
        os.unlink(p)
        with open(mp, "r+b") as f:
            f.seek(64)
            f.write(b"\x01" * (msize - 64))
        how += " (and %s deleted)" % name
    elif how == "swap caches":
        other = r.choice([n for n in caches if n != name])
        q = os.path.join(sub, other)
        os.rename(p, p + ".tmp")
        os.rename(q, p)
        os.rename(p + ".tmp", q)
        how += " %s and %s" % (name, other)
    c.what = "nvme cache: " + how


# ---------------------------------------------------------------- mounting

def mounted(mnt):
    m = os.path.realpath(mnt)
    with open("/proc/mounts") as f:
        return any(line.split()[1] == m for line in f)


def unmount(mnt):
    for args in (["fusermount3", "-u", mnt], ["fusermount3", "-uz", mnt], ["umount", "-l", mnt]):
        if not mounted(mnt):
            return
        subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30)


def kill(p):
    if p.poll() is None:
        p.kill()
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            pass


READER = r'''
import errno, json, os, sys
mnt, items = sys.argv[1], json.load(open(sys.argv[2]))
def out(**k):
    sys.stdout.write(json.dumps(k) + "\n"); sys.stdout.flush()
for i, (op, rel) in enumerate(items):
    out(start=i)
    p = os.path.join(mnt, rel) if rel else mnt
    try:
        if op == "list":
            r = sorted(os.fsencode(n).hex() for n in os.listdir(p))
        elif op == "stat":
            st = os.lstat(p); r = [st.st_mode, st.st_size]
        elif op == "readlink":
            r = os.fsencode(os.readlink(p)).hex()
        else:
            fd = os.open(p, os.O_RDONLY)
            try:
                try: os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                except OSError: pass
                b = []
                while True:
                    x = os.read(fd, 1 << 20)
                    if not x: break
                    b.append(x)
                import hashlib
                data = b"".join(b)
                r = [len(data), hashlib.sha1(data).hexdigest()]
            finally:
                os.close(fd)
        out(done=i, ok=r)
    except OSError as e:
        out(done=i, err=errno.errorcode.get(e.errno, str(e.errno)))
out(end=True)
'''


def read_all(mnt, items, expect):
    """Runs the items in a reader process; returns (results, hung_item).
    results[i] = ("ok", value) | ("err", name)."""
    f = os.path.join(W, "items.json")
    json.dump(items, open(f, "w"))
    p = subprocess.Popen([sys.executable, "-c", READER, mnt, f], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True)
    res, cur = {}, None
    import selectors
    sel = selectors.DefaultSelector()
    sel.register(p.stdout, selectors.EVENT_READ)
    hung = None
    buf = ""
    deadline = time.monotonic() + A.read_timeout
    while True:
        if not sel.select(max(0, deadline - time.monotonic())):
            hung = cur
            break
        chunk = os.read(p.stdout.fileno(), 65536).decode()
        if not chunk:
            break
        buf += chunk
        while "\n" in buf:
            line, buf = buf.split("\n", 1)
            m = json.loads(line)
            if "start" in m:
                cur = m["start"]
                deadline = time.monotonic() + A.read_timeout
            elif "done" in m:
                res[m["done"]] = ("ok", m["ok"]) if "ok" in m else ("err", m["err"])
    sel.close()
    return p, res, hung


def mount_and_read(c, dsdir, opts, items, expect, tag):
    """One mount of case c. Returns a list of violations (strings) and
    counts steps in STATS."""
    mnt = os.path.join(W, "mnt")
    os.makedirs(mnt, exist_ok=True)
    logp = os.path.join(W, "case%d-%s.log" % (c.i, tag))
    lf = open(logp, "w")
    args = [A.dlfs, dsdir, mnt, "-f"] + (["-o", opts] if opts else [])
    d = subprocess.Popen(args, stdout=lf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    bad = []
    STATS["mounts"] += 1
    t0 = time.monotonic()
    while not mounted(mnt):
        if d.poll() is not None:
            break
        if time.monotonic() - t0 > 30:
            bad.append(("hang", "%s: not mounted after 30 s" % tag))
            kill(d)
            unmount(mnt)
            return bad
        time.sleep(0.02)
    if d.poll() is not None:
        lf.close()
        text = open(logp, errors="replace").read()
        rc = d.returncode
        if rc < 0 or SAN_RE.search(text):
            bad.append(("crash", "%s: daemon died before mounting (status %d): %s" % (
                tag, rc, first_lines(text))))
        elif c.nvme:
            bad.append(("refused", "%s: mount refused because of a damaged cache (exit %d): %s" % (
                tag, rc, first_lines(text))))
        elif rc != 1 or "dlfs: " not in text:
            bad.append(("refused", "%s: mount refused with exit %d and no 'dlfs: ' message: %s" % (
                tag, rc, first_lines(text))))
        else:
            STATS["refused"] += 1
            RESULTS.append({"case": c.i, "mount": tag, "refused": first_lines(text)})
        return bad
    p, res, hung = read_all(mnt, items, expect)
    alive = d.poll() is None
    STATS["steps"] += len(res)
    for i, (op, rel) in enumerate(items):
        if i not in res:
            continue
        kind, v = res[i]
        want = expect[i]
        what = "%s: %s %s" % (tag, op, rel or "/")
        if kind == "ok":
            if op == "stat":
                # The mode and size of a damaged inode are what the index
                # says (a directory's size is its entry count): counted,
                # not judged. Reads must still give no wrong bytes.
                if v[0] != want[0] or (want[1] is not None and v[1] != want[1]):
                    STATS["stat_differs"] += 1
                continue
            if v == want:
                continue
            if op == "list" and c.names_may_change:
                STATS["names_changed"] += 1
                continue
            if op == "readlink" and c.targets_may_change:
                STATS["targets_changed"] += 1
                continue
            if op == "read" and c.inos_may_change and tuple(v) in FILE_CONTENTS:
                STATS["inos_changed"] += 1
                continue
            cls = "wrong bytes" if op in ("read", "readlink") else "wrong listing"
            bad.append((cls, "%s: returned %s, expected %s" % (what, short(v), short(want))))
        else:
            if v == "EIO" and not c.nvme:
                STATS["eio"] += 1
                continue
            if v in ("ENOENT", "ENOTDIR") and c.names_may_change:
                STATS["names_changed"] += 1
                continue
            if v == "ENOTCONN" and not alive:
                continue  # the crash below says it
            bad.append(("wrong errno", "%s: %s" % (what, v)))
    if hung is not None:
        op, rel = items[hung]
        bad.append(("hang", "%s: %s %s got no answer in %.0f s" % (tag, op, rel or "/", A.read_timeout)))
    if hung is not None or not alive:
        kill(d)
        unmount(mnt)
        kill(p)
    else:
        p.wait(30)
        unmount(mnt)
        try:
            d.wait(30)
        except subprocess.TimeoutExpired:
            bad.append(("hang", "%s: daemon still running 30 s after fusermount3 -u" % tag))
            kill(d)
    lf.close()
    text = open(logp, errors="replace").read()
    if not alive:
        sig = -d.returncode if d.returncode < 0 else 0
        bad.append(("crash", "%s: daemon died during the reads (%s): %s" % (
            tag, ("signal %s" % signal.Signals(sig).name) if sig else "exit %d" % d.returncode,
            san_lines(text) or first_lines(text))))
    elif d.returncode not in (0, None) and hung is None:
        bad.append(("crash", "%s: daemon exited %d at unmount: %s" % (
            tag, d.returncode, san_lines(text) or first_lines(text))))
    if alive and SAN_RE.search(text):
        bad.append(("crash", "%s: sanitizer report in the daemon log: %s" % (tag, san_lines(text))))
    return bad


def short(v):
    s = json.dumps(v)
    return s if len(s) < 80 else s[:77] + "..."


def first_lines(text):
    return " | ".join(text.strip().splitlines()[:3])[:400]


def san_lines(text):
    ls = [l for l in text.splitlines() if SAN_RE.search(l) or " in dlfs_" in l or re.search(r"#\d+ 0x", l)]
    return " | ".join(l.strip() for l in ls[:6])[:600]


# ---------------------------------------------------------------- main

STATS = {"cases": 0, "mounts": 0, "steps": 0, "eio": 0, "names_changed": 0, "targets_changed": 0,
         "inos_changed": 0, "stat_differs": 0,
         "refused": 0}
RESULTS = []
FILE_CONTENTS = set()  # (size, sha1) of every regular file of the tree


def expected(src):
    import hashlib
    items, exp = [], []
    for dp, dn, fn in sorted(os.walk(src)):
        rel = os.path.relpath(dp, src)
        rel = "" if rel == "." else rel
        items.append(("list", rel))
        exp.append(sorted(os.fsencode(n).hex() for n in dn + fn))
        for n in sorted(dn + fn):
            p = os.path.join(dp, n)
            r = os.path.join(rel, n) if rel else n
            st = os.lstat(p)
            items.append(("stat", r))
            exp.append([st.st_mode, st.st_size if not stat.S_ISDIR(st.st_mode) else None])
            if stat.S_ISLNK(st.st_mode):
                items.append(("readlink", r))
                exp.append(os.fsencode(os.readlink(p)).hex())
            elif stat.S_ISREG(st.st_mode):
                data = open(p, "rb").read()
                items.append(("read", r))
                exp.append([len(data), hashlib.sha1(data).hexdigest()])
    return items, exp


def main():
    src = os.path.join(W, "src")
    pristine = os.path.join(W, "pristine.dlfs")
    nvp = os.path.join(W, "nvme.pristine")
    if not os.path.isdir(pristine):
        shutil.rmtree(src, ignore_errors=True)
        make_tree(src)
        subprocess.run([A.pack, src, "-o", pristine, "-q", "--chunk-size", str(CS),
                        "--container-size", str(CONTAINER)], check=True)
    ds = Dataset(pristine)
    items, exp = expected(src)
    FILE_CONTENTS.update(tuple(e) for (op, _), e in zip(items, exp) if op == "read")
    cases = [int(x) for x in A.case.split(",")] if A.case else list(range(A.cases))
    if not os.path.isdir(nvp):
        log("populating the NVMe cache of the pristine dataset")
        os.makedirs(nvp)
        c = Case(-1)
        c.kind, c.nvme = "pristine", True
        # Twice: the cache is written in the background, and the second
        # mount writes what the first had not yet.
        for tag in ("pristine", "pristine2"):
            bad = mount_and_read(c, pristine, "cache_dir=%s,cache_size=64M" % nvp, items, exp, tag)
            for b in bad:
                log("the pristine dataset fails: %s: %s" % b)
            if bad:
                shutil.rmtree(nvp)
                return 1
    if A.list:
        for i in cases:
            c = Case(i)
            cdir = os.path.join(W, "case")
            shutil.rmtree(cdir, ignore_errors=True)
            shutil.copytree(pristine, os.path.join(cdir, "ds.dlfs"))
            shutil.copytree(nvp, os.path.join(cdir, "nvme"))
            mutate(c, ds, os.path.join(cdir, "ds.dlfs"), os.path.join(cdir, "nvme"))
            print("case %d: %s: %s" % (i, c.kind, c.what))
        return 0
    violations = []
    t0 = time.monotonic()
    for i in cases:
        c = Case(i)
        STATS["cases"] += 1
        cdir = os.path.join(W, "case")
        shutil.rmtree(cdir, ignore_errors=True)
        os.makedirs(cdir)
        dsdir = os.path.join(cdir, "ds.dlfs")
        shutil.copytree(pristine, dsdir)
        nv = os.path.join(cdir, "nvme")
        if c.nvme or i % 2 == 0:
            shutil.copytree(nvp, nv)
        else:
            os.makedirs(nv)
        mutate(c, ds, dsdir, nv)
        bad = []
        if not c.nvme:
            bad += mount_and_read(c, dsdir, "", items, exp, "plain")
        bad += mount_and_read(c, dsdir, "cache_dir=%s,cache_size=64M" % nv, items, exp,
                              "nvme-full" if (c.nvme or i % 2 == 0) else "nvme-empty")
        STATS.setdefault("by_kind", {}).setdefault(c.kind, 0)
        STATS["by_kind"][c.kind] += 1
        groups = {}
        for cls, msg in bad:
            violations.append({"case": i, "kind": c.kind, "what": c.what, "class": cls, "msg": msg})
            groups.setdefault(cls, []).append(msg)
        for cls, msgs in groups.items():
            more = " (and %d more)" % (len(msgs) - 3) if len(msgs) > 3 else ""
            print("case %d [%s] %s: %s: %s%s" % (i, c.kind, c.what, cls.upper(),
                                                "; ".join(msgs[:3]), more), flush=True)
        if not bad:
            log("case %d [%s] %s: ok" % (i, c.kind, c.what))
    counts = {}
    failed_cases = {}
    for v in violations:
        counts[v["class"]] = counts.get(v["class"], 0) + 1
        failed_cases.setdefault(v["class"], set()).add(v["case"])
    summary = dict(STATS)
    summary["seconds"] = round(time.monotonic() - t0, 1)
    summary["violations"] = counts
    summary["cases_failed"] = len({v["case"] for v in violations})
    summary["cases_by_class"] = {k: sorted(s) for k, s in failed_cases.items()}
    log("summary: %s" % json.dumps(summary))
    if A.report:
        json.dump({"seed": A.seed, "summary": summary, "violations": violations,
                   "refused": RESULTS}, open(A.report, "w"), indent=1)
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
