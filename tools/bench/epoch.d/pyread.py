#!/usr/bin/python3
"""Parallel whole-file reader in Python for tools/bench/epoch (not part of
dlfs): the same work as mount.d/reader.c, done the way a PyTorch
DataLoader's workers do it.

  pyread.py ROOT LIST THREADS [LIMIT_S]

LIST holds one path per line, relative to ROOT. THREADS threads take the
next path in list order (a shared counter), open(ROOT/path, 'rb'),
f.read() (the whole file in one call) and close it. After LIMIT_S seconds
(0 = no limit) no new file is started, so a very slow system gives a
partial, still valid, rate. The clock starts before LIST is read (it may
be a dlfs epoch view, made when it is read). Prints the same JSON object
as reader.c:
  {"files": n, "bytes": n, "secs": s, "errors": n, "listed": n,
   "complete": true|false, "io_read_bytes": n}
Exits 1 when a file could not be read (after printing the object).
Run it with /usr/bin/python3 (the interpreter the benchmarks measure).
"""
import itertools
import json
import os
import sys
import threading
import time


def io_read_bytes():
    try:
        with open("/proc/self/io") as f:
            for line in f:
                if line.startswith("read_bytes:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return -1


def main():
    if len(sys.argv) not in (4, 5):
        sys.stderr.write("usage: pyread.py ROOT LIST THREADS [LIMIT_S]\n")
        return 2
    root = sys.argv[1]
    threads = int(sys.argv[3])
    limit = float(sys.argv[4]) if len(sys.argv) > 4 else 0.0
    if not 1 <= threads <= 1024:
        sys.stderr.write("pyread: bad thread count\n")
        return 2
    if not os.path.isdir(root):
        sys.stderr.write("pyread: %s: not a directory\n" % root)
        return 1
    t_start = time.monotonic()
    with open(sys.argv[2], "rb") as f:
        paths = [os.path.join(root, p.decode("utf-8", "surrogateescape"))
                 for p in f.read().split(b"\n") if p]
    counter = itertools.count()  # next() is atomic under the GIL
    totals = {"files": 0, "bytes": 0, "errors": 0}
    lock = threading.Lock()

    def worker():
        files = nbytes = errors = 0
        while True:
            if limit > 0 and time.monotonic() - t_start > limit:
                break
            i = next(counter)
            if i >= len(paths):
                break
            try:
                with open(paths[i], "rb") as f:
                    nbytes += len(f.read())
                files += 1
            except OSError as e:
                if errors < 5:
                    sys.stderr.write("pyread: %s: %s\n" % (paths[i], e))
                errors += 1
        with lock:
            totals["files"] += files
            totals["bytes"] += nbytes
            totals["errors"] += errors

    ts = [threading.Thread(target=worker) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    secs = time.monotonic() - t_start
    print(json.dumps({"files": totals["files"], "bytes": totals["bytes"],
                      "secs": round(secs, 6), "errors": totals["errors"],
                      "listed": len(paths),
                      "complete": totals["files"] == len(paths),
                      "io_read_bytes": io_read_bytes()}))
    return 1 if totals["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
