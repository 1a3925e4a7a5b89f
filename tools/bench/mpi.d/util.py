#!/usr/bin/python3
"""Helpers for tools/bench/mpi (not part of dlfs).

  util.py sizes TREE OUT.json
      {relative path: size} of every regular file under TREE.
  util.py share LIST R W OUT
      Positions [R*N/W, (R+1)*N/W) of LIST (N lines) into OUT: the share of
      rank R of W, as dlfs(1) "Epoch views" defines it.
  util.py list-bytes SIZES.json LIST
      Prints "files bytes" of the files named in LIST.
  util.py spot-check MNT TREE LIST K SEED
      Compares K files of LIST (a seeded random pick) byte for byte between
      MNT and TREE; prints the number of files that differ (0 = all equal)
      and names the first few on stderr.
  util.py stats MNT...
      A JSON list of MNT/.dlfs/stats, one per mount.
  util.py wait-tiers MAXSEC MNT...
      Waits until the NVMe tier and the read-ahead of every mount have
      settled (tiers.nvme.written_chunks, write_dropped, prefetch.pending
      and peer.served unchanged for 1 s), at most MAXSEC s. Prints the
      seconds until the last change.
  util.py blkio CGROUP MAJ:MIN
      Prints "reads bytes" of the group's Read counters for the device
      (blkio.throttle.io_serviced, io_service_bytes).
"""
import json
import os
import random
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from benchlib import walk_files, dlfs_stats  # noqa: E402




def read_list(path):
    with open(path) as f:
        return [ln for ln in f.read().split("\n") if ln]




def wait_tiers(maxsec, mnts):
    t0 = time.monotonic()
    last, since = None, t0
    while True:
        key = []
        for m in mnts:
            s = dlfs_stats(m)
            nv = s["tiers"]["nvme"]
            key.append((nv["written_chunks"], nv["write_dropped"],
                        s.get("prefetch", {}).get("pending", 0),
                        s.get("peer", {}).get("served", 0)))
        now = time.monotonic()
        if key != last:
            last, since = key, now
        elif now - since >= 1.0:
            break
        if now - t0 >= maxsec:
            break
        time.sleep(0.1)
    return max(0.0, since - t0)


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "sizes":
        tree = args[0]
        sizes = {p: os.lstat(os.path.join(tree, p)).st_size
                 for p in walk_files(tree)}
        with open(args[1], "w") as f:
            json.dump(sizes, f)
    elif cmd == "share":
        lines = read_list(args[0])
        r, w = int(args[1]), int(args[2])
        n = len(lines)
        with open(args[3], "w") as f:
            f.writelines(p + "\n" for p in lines[r * n // w:(r + 1) * n // w])
    elif cmd == "list-bytes":
        with open(args[0]) as f:
            sizes = json.load(f)
        lines = read_list(args[1])
        missing = [p for p in lines if p not in sizes]
        if missing:
            sys.exit("list-bytes: %d names not in the tree, e.g. %r"
                     % (len(missing), missing[0]))
        print(len(lines), sum(sizes[p] for p in lines))
    elif cmd == "spot-check":
        mnt, tree, lst, k, seed = args[0], args[1], args[2], int(args[3]), int(args[4])
        lines = read_list(lst)
        pick = random.Random(seed).sample(lines, min(k, len(lines)))
        bad = []
        for p in pick:
            try:
                with open(os.path.join(mnt, p), "rb") as f:
                    a = f.read()
            except OSError as e:
                a = repr(e).encode()
            with open(os.path.join(tree, p), "rb") as f:
                b = f.read()
            if a != b:
                bad.append(p)
        for p in bad[:5]:
            print("spot-check: %s differs from %s" % (os.path.join(mnt, p),
                                                     os.path.join(tree, p)),
                  file=sys.stderr)
        print(len(bad))
    elif cmd == "stats":
        print(json.dumps([dlfs_stats(m) for m in args]))
    elif cmd == "wait-tiers":
        print("%.3f" % wait_tiers(float(args[0]), args[1:]))
    elif cmd == "blkio":
        cg, mm = args
        vals = []
        for name in ("blkio.throttle.io_serviced",
                     "blkio.throttle.io_service_bytes"):
            v = 0
            with open(os.path.join(cg, name)) as f:
                for line in f:
                    p = line.split()
                    if len(p) == 3 and p[0] == mm and p[1] == "Read":
                        v = int(p[2])
            vals.append(v)
        print(*vals)
    else:
        sys.exit("unknown command " + cmd)


if __name__ == "__main__":
    main()
