#!/usr/bin/python3
"""Helpers for tools/bench/inplace (not part of dlfs).

  util.py list MANIFEST OUT SEED|sorted
      The files of gen.py's MANIFEST in one order (shuffled with
      random.Random(SEED), or as the archives hold them), twice: OUT.tree
      (paths as the extracted tree and a dlfs mount show them) and
      OUT.arch (ARCHIVE/PATH, as one archivemount a shard under a
      directory named for it shows them), line N of both the same file.
  util.py pids PATTERN
      The RSS (KiB) summed over the processes whose command line holds
      PATTERN, and how many they are: "kib count".
"""
import os
import random
import sys


def make_list(manifest, out, seed):
    with open(manifest) as f:
        rows = [line.rstrip("\n").split("\t", 1) for line in f if line.strip()]
    if seed != "sorted":
        random.Random(int(seed)).shuffle(rows)
    with open(out + ".tree", "w") as t, open(out + ".arch", "w") as a:
        for arc, path in rows:
            t.write(path + "\n")
            a.write(arc + "/" + path + "\n")


def pids_rss(pattern):
    kib = n = 0
    me = os.getpid()
    for p in os.listdir("/proc"):
        if not p.isdigit() or int(p) == me:
            continue
        try:
            with open("/proc/%s/cmdline" % p, "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode("utf-8", "replace")
            if pattern not in cmd:
                continue
            with open("/proc/%s/status" % p) as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        kib += int(line.split()[1])
                        n += 1
        except OSError:
            continue
    print(kib, n)


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "list" and len(args) == 3:
        make_list(*args)
    elif cmd == "pids" and len(args) == 1:
        pids_rss(args[0])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
