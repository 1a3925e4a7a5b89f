#!/usr/bin/python3
"""preads.py SRC MNT DATASET DLFS_INSPECT [--threads N] [--seconds S] [--seed N]

N threads (default 16) do os.pread at random offsets and lengths on the
files under MNT for S seconds (default 5) and compare every byte with the
same files under SRC (held in memory). Offsets are biased to the hard
cases: 0, EOF, past EOF, just before EOF, and both sides of every chunk
boundary of the container (computed from dlfs-inspect stat --json and the
dataset's chunk size). Half the reads share one fd per file across
threads, half open and close their own; one in 50 reads first drops the
file's page cache (POSIX_FADV_DONTNEED) so reads keep reaching the daemon.
Exit 1 at the first mismatch or error (with the file, offset, length).
"""
import argparse
import json
import os
import random
import subprocess
import sys
import threading
import time

ap = argparse.ArgumentParser()
ap.add_argument("src")
ap.add_argument("mnt")
ap.add_argument("ds")
ap.add_argument("inspect")
ap.add_argument("--threads", type=int, default=16)
ap.add_argument("--seconds", type=float, default=5)
ap.add_argument("--seed", type=int, default=1)
a = ap.parse_args()

info = json.loads(subprocess.run([a.inspect, "info", "--json", a.ds], check=True,
                                 stdout=subprocess.PIPE).stdout)
CS = info["chunk_size"]

files = []  # (rel, data, interesting offsets)
for dp, dn, fn in os.walk(a.src):
    for n in fn:
        p = os.path.join(dp, n)
        rel = os.path.relpath(p, a.src)
        data = open(p, "rb").read()
        st = json.loads(subprocess.run([a.inspect, "stat", "--json", a.ds, rel], check=True,
                                       stdout=subprocess.PIPE).stdout)
        size = len(data)
        offs = {0, size, size + 1, size + 4096, size + (1 << 20), max(0, size - 1), max(0, size - 7)}
        off = st.get("offset", 0)
        # Container chunk k covers [CS*(k+1), CS*(k+2)) (data region starts
        # at one chunk size); also the boundaries if it started at 4096.
        for base in (CS, 4096, 0):
            k = (off - base) // CS + 1
            while True:
                b = base + k * CS - off  # file offset of a chunk boundary
                if b > size:
                    break
                if b > 0:
                    for d in (-4097, -4096, -1, 0, 1, 4095):
                        if 0 <= b + d:
                            offs.add(b + d)
                k += 1
        files.append((rel, data, sorted(offs)))
files.sort()
big = [f for f in files if len(f[1]) > 4 * CS]
print("preads: %d files (%d big), chunk %d, %d threads, %.1f s" %
      (len(files), len(big), CS, a.threads, a.seconds), file=sys.stderr)

shared = {rel: os.open(os.path.join(a.mnt, rel), os.O_RDONLY) for rel, _, _ in files}
stop = time.monotonic() + a.seconds
failed = []
counts = [0] * a.threads
nbytes = [0] * a.threads


def worker(i):
    r = random.Random(a.seed * 1000 + i)
    try:
        while time.monotonic() < stop and not failed:
            rel, data, offs = r.choice(big) if big and r.random() < 0.5 else r.choice(files)
            size = len(data)
            x = r.random()
            if x < 0.5:
                off = r.choice(offs)
            elif x < 0.95:
                off = r.randrange(0, size + 1)
            else:
                off = size + r.randrange(0, 1 << 30)
            y = r.random()
            if y < 0.3:
                ln = r.randrange(1, 64)
            elif y < 0.7:
                ln = r.randrange(1, 2 * CS + 2)
            elif y < 0.9:
                ln = r.randrange(1, 1 << 20)
            else:
                ln = r.choice([4096, 131072, CS, CS + 1, 4 * CS])
            own = r.random() < 0.5
            fd = os.open(os.path.join(a.mnt, rel), os.O_RDONLY) if own else shared[rel]
            try:
                if r.random() < 0.02:
                    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                got = os.pread(fd, ln, off)
            finally:
                if own:
                    os.close(fd)
            want = data[off:off + ln]
            if got != want:
                where = next((j for j in range(min(len(got), len(want))) if got[j] != want[j]),
                             min(len(got), len(want)))
                failed.append("%s: pread(len=%d, off=%d) returned %d bytes, expected %d; "
                              "first difference at +%d" % (rel, ln, off, len(got), len(want), where))
                return
            counts[i] += 1
            nbytes[i] += len(got)
    except Exception as e:  # noqa: BLE001 - any error fails the test
        failed.append("thread %d: %s: %r" % (i, type(e).__name__, e))


ts = [threading.Thread(target=worker, args=(i,)) for i in range(a.threads)]
for t in ts:
    t.start()
for t in ts:
    t.join()
for fd in shared.values():
    os.close(fd)
print("preads: %d reads, %.1f MiB compared" % (sum(counts), sum(nbytes) / 2**20), file=sys.stderr)
if failed:
    for f in failed[:10]:
        print("  MISMATCH " + f, file=sys.stderr)
    sys.exit(1)
if sum(counts) < a.threads * 10:
    sys.exit("  too few reads completed: %d" % sum(counts))
