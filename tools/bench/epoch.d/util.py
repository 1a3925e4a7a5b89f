#!/usr/bin/python3
"""Helpers for tools/bench/epoch (not part of dlfs).

  util.py stats MNT
      MNT/.dlfs/stats as one line of JSON.
  util.py wait-tier MNT MAXSEC
      Wait until the NVMe tier of the dlfs mount at MNT has settled:
      tiers.nvme.written_chunks, write_dropped and prefetch.pending
      unchanged for 1 s (the background writer has drained its queue), at
      most MAXSEC seconds. Prints the seconds until the last change (0 when
      already settled) and prefetch.pending at the end.
"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from benchlib import dlfs_stats  # noqa: E402




def wait_tier(mnt, maxsec):
    t0 = time.monotonic()
    last, since = None, t0
    while True:
        s = dlfs_stats(mnt)
        nv = s["tiers"]["nvme"]
        key = (nv["written_chunks"], nv["write_dropped"],
               s.get("prefetch", {}).get("pending", 0))
        now = time.monotonic()
        if key != last:
            last, since = key, now
        elif now - since >= 1.0:
            break
        if now - t0 >= maxsec:
            break
        time.sleep(0.1)
    return max(0.0, since - t0), last[2]


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "stats":
        print(json.dumps(dlfs_stats(args[0])))
    elif cmd == "wait-tier":
        print("%.3f %d" % wait_tier(args[0], float(args[1])))
    else:
        sys.exit("unknown command " + cmd)


if __name__ == "__main__":
    main()
