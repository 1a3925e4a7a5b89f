#!/usr/bin/python3
"""soak.py SRC MNT --seconds S [--threads N] [--seed N] [--json OUT]

N threads (default 64) pread random files of SRC through MNT for S
seconds, at random offsets (uniform, or at 0, EOF, past EOF, and around
64 KiB boundaries) and random lengths (1 byte to 2 MiB), and compare every
byte with the source, held in memory. Before each read the range is
dropped from the page cache (POSIX_FADV_DONTNEED), so that reads reach the
daemon and its tiers, not the kernel's cache. Files are picked half the
time from a small hot set, so that the cache tiers both hit and evict.

Unlike preads.py it does not stop at the first failure: it counts reads,
bytes, mismatches and errors (by errno) over the whole run, prints them
as one JSON line on stdout (and to --json), and the first 20 failures on
stderr. Exit 1 if any read was wrong or failed, or fewer than 100 reads
completed.
"""
import argparse
import errno
import json
import os
import random
import sys
import threading
import time

ap = argparse.ArgumentParser()
ap.add_argument("src")
ap.add_argument("mnt")
ap.add_argument("--seconds", type=float, required=True)
ap.add_argument("--threads", type=int, default=64)
ap.add_argument("--seed", type=int, default=1)
ap.add_argument("--json")
a = ap.parse_args()

files = []
for dp, dn, fn in os.walk(a.src):
    for n in fn:
        p = os.path.join(dp, n)
        if os.path.isfile(p) and not os.path.islink(p):
            rel = os.path.relpath(p, a.src)
            files.append((rel, open(p, "rb").read()))
files.sort()
hot = files[:: max(1, len(files) // 50)]
BOUND = 65536
PAGE = os.sysconf("SC_PAGE_SIZE")

lock = threading.Lock()
tot = {"reads": 0, "bytes": 0, "mismatches": 0, "errors": {}, "threads": a.threads}
fails = []
stop = time.monotonic() + a.seconds


def fail(msg):
    with lock:
        if len(fails) < 20:
            fails.append(msg)


def worker(i):
    r = random.Random(a.seed * 7919 + i)
    fds = {}
    reads = nbytes = bad = 0
    errs = {}
    try:
        while time.monotonic() < stop:
            rel, data = r.choice(hot) if r.random() < 0.5 else r.choice(files)
            size = len(data)
            x = r.random()
            if x < 0.6:
                off = r.randrange(0, size + 1)
            elif x < 0.9:
                b = r.randrange(0, size // BOUND + 1) * BOUND
                off = max(0, b + r.choice([-4097, -1, 0, 1, 4095]))
            else:
                off = r.choice([0, size, size + 1, max(0, size - 1)])
            y = r.random()
            ln = (r.randrange(1, 64) if y < 0.3 else
                  r.randrange(1, 2 * BOUND + 2) if y < 0.8 else r.randrange(1, 2 << 20))
            fd = fds.get(rel)
            if fd is None:
                if len(fds) >= 8:  # keep within the fd limit
                    os.close(fds.pop(next(iter(fds))))
                try:
                    fd = fds[rel] = os.open(os.path.join(a.mnt, rel), os.O_RDONLY)
                except OSError as e:
                    name = errno.errorcode.get(e.errno, str(e.errno))
                    errs[name] = errs.get(name, 0) + 1
                    fail("%s: open: %s" % (rel, name))
                    continue
            try:
                # DONTNEED drops only the pages wholly inside the range it
                # is given: round out to pages, or short reads keep theirs.
                lo = off - off % PAGE
                os.posix_fadvise(fd, lo, -(-(off + ln) // PAGE) * PAGE - lo,
                                 os.POSIX_FADV_DONTNEED)
                got = os.pread(fd, ln, off)
            except OSError as e:
                name = errno.errorcode.get(e.errno, str(e.errno))
                errs[name] = errs.get(name, 0) + 1
                fail("%s: pread(len=%d, off=%d): %s" % (rel, ln, off, name))
                continue
            want = data[off:off + ln]
            reads += 1
            nbytes += len(got)
            if got != want:
                bad += 1
                at = next((j for j in range(min(len(got), len(want))) if got[j] != want[j]),
                          min(len(got), len(want)))
                fail("%s: pread(len=%d, off=%d) returned %d bytes, expected %d; first "
                     "difference at +%d" % (rel, ln, off, len(got), len(want), at))
    finally:
        for fd in fds.values():
            os.close(fd)
        with lock:
            tot["reads"] += reads
            tot["bytes"] += nbytes
            tot["mismatches"] += bad
            for k, v in errs.items():
                tot["errors"][k] = tot["errors"].get(k, 0) + v


t0 = time.monotonic()
ts = [threading.Thread(target=worker, args=(i,)) for i in range(a.threads)]
for t in ts:
    t.start()
for t in ts:
    t.join()
tot["seconds"] = round(time.monotonic() - t0, 1)
tot["files"] = len(files)
tot["mib"] = round(tot["bytes"] / 2**20, 1)
line = json.dumps(tot)
print(line)
if a.json:
    open(a.json, "w").write(line + "\n")
for f in fails:
    print("  FAIL " + f, file=sys.stderr)
sys.exit(1 if tot["mismatches"] or tot["errors"] or tot["reads"] < 100 else 0)
