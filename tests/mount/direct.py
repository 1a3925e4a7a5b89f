#!/usr/bin/python3
"""direct.py: the programs of direct.sh (dlfs-run's reads served from the
server's shared memory, src/node/shared/shm.h), one per subcommand:

  stat ROOT OUT.json
      lstat of every entry under ROOT (walked without following symlinks,
      the root left out): {rel: {field: value}} with every struct stat
      field Python gives, and the parent directory's st_ino.
  names SRC REF.json GOT.json NAME_SETS
      GOT (a process whose lookups came from the names table) has the
      same attributes as REF (one whose lookups the server answered, all
      fields) and as the source (type, mode, mtime, uid, gid; size and
      nlink of files). Prints "NAMES MAYMISS": MAYMISS is how many names
      may be missing from the table by its design: those longer than
      DLFS_SHM_NAME_MAX and those in a set of more than DLFS_SHM_NAME_WAYS
      names (NAME_SETS sets, the head's name_sets; the hash is shm.h's,
      copied here). A second process's lookups of the others never reach
      the server. Exit 1 on a difference.
  wait-seen STATS BASE.json OUT.json SECONDS
      Polls STATS until tiers.direct.seen has grown since BASE ("-": a
      fresh server) by as much as tiers.direct.reads (every direct read
      of the pass was from a file's start), or SECONDS pass; the last
      stats go to OUT, with "waited" (seconds) added. Never fails: the
      caller judges OUT.
  wait-nvme STATS WANT OUT.json SECONDS [SRC MNT]
      Polls STATS until tiers.nvme.written_chunks >= WANT (the NVMe
      tier's background writes are done), or SECONDS pass; the last
      stats go to OUT. Exit 1 if they ran out. With SRC and MNT: when
      the count has not moved for 2 s and the writer dropped writes
      (tiers.nvme.write_dropped: its queue was full, as on a busy
      machine), reads every file of SRC through MNT again, which queues
      each dropped chunk again.
  load SRC MNT --threads N --rounds R --seed S
      N threads each read every file of SRC through MNT, R times, in
      pieces of PIECE bytes, and compare each file's md5 with the
      source's. Half the threads go in sorted order, so that the
      processes run together over the same chunks; the others in an
      order of their own. Prints "READS FILES"; every wrong file on
      stderr; exit 1 if there was any, or an error.
"""
import hashlib
import json
import os
import random
import stat
import sys
import threading
import time

FIELDS = ("st_ino", "st_dev", "st_mode", "st_nlink", "st_uid", "st_gid",
          "st_rdev", "st_size", "st_blksize", "st_blocks", "st_atime_ns",
          "st_mtime_ns", "st_ctime_ns")
# src/node/shared/shm.h
NAME_MAX_SHM = 64
NAME_WAYS = 4
M64 = (1 << 64) - 1
# load's reads: small pieces make many reads that a RAM slot serves
# while the server refills the other. Measured, with a reader that skips
# dlfs_shm_slot_same: one run of direct.sh's (c) read wrong bytes in 8
# of 12 tries with 4 KiB pieces, in 1 of 6 with a mix of sizes up to 1
# MiB; (c) runs twice.
PIECE = 4096


def files_of(src):
    out = []
    for dp, _, fn in os.walk(src):
        for n in fn:
            p = os.path.join(dp, n)
            if os.path.isfile(p) and not os.path.islink(p):
                out.append(os.path.relpath(p, src))
    return sorted(out)


def cmd_stat(root, out):
    res = {}
    for dp, dn, fn in os.walk(root):
        pino = os.lstat(dp).st_ino
        for n in dn + fn:
            p = os.path.join(dp, n)
            st = os.lstat(p)
            d = {f: getattr(st, f) for f in FIELDS}
            d["parent"] = pino
            d["name_len"] = len(os.fsencode(n))
            d["name"] = os.fsencode(n).hex()
            res[os.path.relpath(p, root)] = d
    with open(out, "w") as f:
        json.dump(res, f)


def name_hash(parent, name):
    """dlfs_shm_name_hash of shm.h."""
    h = (14695981039346656037 ^ parent) * 1099511628211 & M64
    for c in name:
        h = (h ^ c) * 1099511628211 & M64
    return h ^ (h >> 31)


def cmd_names(src, ref_path, got_path, sets):
    ref = json.load(open(ref_path))
    got = json.load(open(got_path))
    errs = []
    if sorted(ref) != sorted(got):
        errs.append("the entries differ: %d vs %d" % (len(ref), len(got)))
    for rel in sorted(set(ref) & set(got)):
        r, g = ref[rel], got[rel]
        for f in FIELDS:
            if r[f] != g[f]:
                errs.append("%s: %s %r from the names table, %r from the server" % (rel, f, g[f], r[f]))
        s = os.lstat(os.path.join(src, rel))
        want = {"st_mode": s.st_mode, "st_mtime_ns": s.st_mtime_ns,
                "st_uid": s.st_uid, "st_gid": s.st_gid}
        if stat.S_ISREG(s.st_mode):
            # A directory's nlink is dlfs's own (1), not the source's.
            want["st_size"] = s.st_size
            want["st_nlink"] = s.st_nlink
        for f, v in want.items():
            if g[f] != v:
                errs.append("%s: %s %r, the source's %r" % (rel, f, g[f], v))
    per_set = {}
    long_names = 0
    for d in ref.values():
        if d["name_len"] > NAME_MAX_SHM:
            long_names += 1
            continue
        k = name_hash(d["parent"], bytes.fromhex(d["name"])) & (sets - 1)
        per_set[k] = per_set.get(k, 0) + 1
    crowded = sum(v for v in per_set.values() if v > NAME_WAYS)
    for e in errs[:20]:
        print("  " + e, file=sys.stderr)
    if len(errs) > 20:
        print("  ... and %d more" % (len(errs) - 20), file=sys.stderr)
    print(len(ref), long_names + crowded)
    return 1 if errs else 0


def direct(path):
    return json.loads(open(path, "rb").read())["tiers"]["direct"]


def cmd_wait_seen(stats, base, out, secs):
    b = {"seen": 0, "reads": 0} if base == "-" else json.load(open(base))["tiers"]["direct"]
    t0 = time.monotonic()
    while True:
        raw = open(stats, "rb").read()
        d = json.loads(raw)
        x = d["tiers"]["direct"]
        waited = time.monotonic() - t0
        if x["seen"] - b["seen"] >= x["reads"] - b["reads"] or waited >= secs:
            break
        time.sleep(0.05)
    d["waited"] = round(waited, 2)
    with open(out, "w") as f:
        json.dump(d, f)
    return 0


def cmd_wait_nvme(stats, want, out, secs, src=None, mnt=None):
    t0 = last_change = time.monotonic()
    last = None
    while True:
        raw = open(stats, "rb").read()
        nv = json.loads(raw)["tiers"]["nvme"]
        w, now = nv["written_chunks"], time.monotonic()
        if w >= want or now - t0 >= secs:
            break
        if w != last:
            last, last_change = w, now
        elif src and nv["write_dropped"] and now - last_change >= 2:
            # A busy machine's writer dropped chunks (its queue was full:
            # reads never wait for it); each is queued again when read.
            for r in files_of(src):
                with open(os.path.join(mnt, r), "rb") as f:
                    while f.read(1 << 20):
                        pass
            last_change = time.monotonic()
        time.sleep(0.05)
    with open(out, "wb") as f:
        f.write(raw)
    return 0 if w >= want else 1


def cmd_load(src, mnt, threads, rounds, seed):
    rels = files_of(src)
    want = {r: hashlib.md5(open(os.path.join(src, r), "rb").read()).hexdigest() for r in rels}
    lock = threading.Lock()
    bad, errs, count = [], [], [0]

    def worker(i):
        rng = random.Random(seed * 1000 + i)
        reads = 0
        for rnd in range(rounds):
            order = list(rels)
            if i % 2:
                rng.shuffle(order)
            for rel in order:
                try:
                    fd = os.open(os.path.join(mnt, rel), os.O_RDONLY)
                except OSError as e:
                    with lock:
                        errs.append("%s: open: %s" % (rel, e))
                    continue
                h = hashlib.md5()
                off = 0
                try:
                    while True:
                        b = os.pread(fd, PIECE, off)
                        reads += 1
                        if not b:
                            break
                        h.update(b)
                        off += len(b)
                except OSError as e:
                    with lock:
                        errs.append("%s: pread at %d: %s" % (rel, off, e))
                    continue
                finally:
                    os.close(fd)
                if h.hexdigest() != want[rel]:
                    with lock:
                        bad.append("%s: WRONG bytes (md5 %s, %d bytes), thread %d round %d"
                                   % (rel, h.hexdigest(), off, i, rnd))
        with lock:
            count[0] += reads

    ts = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    for m in (bad + errs)[:20]:
        print("  " + m, file=sys.stderr)
    print(count[0], len(rels) * threads * rounds)
    return 1 if bad or errs else 0


def main():
    a = sys.argv[1:]
    if a[:1] == ["stat"] and len(a) == 3:
        return cmd_stat(a[1], a[2])
    if a[:1] == ["names"] and len(a) == 5:
        return cmd_names(a[1], a[2], a[3], int(a[4]))
    if a[:1] == ["wait-seen"] and len(a) == 5:
        return cmd_wait_seen(a[1], a[2], a[3], float(a[4]))
    if a[:1] == ["wait-nvme"] and len(a) in (5, 7):
        return cmd_wait_nvme(a[1], int(a[2]), a[3], float(a[4]), *a[5:])
    if a[:1] == ["load"] and len(a) == 9 and a[3::2] == ["--threads", "--rounds", "--seed"]:
        return cmd_load(a[1], a[2], int(a[4]), int(a[6]), int(a[8]))
    sys.exit(__doc__)


sys.exit(main())
