#!/usr/bin/python3
"""The "## millions" section of RESULTS.md from one run of
tools/bench/millions (not part of dlfs).

  report.py [--section NAME] META.tsv RESULTS.jsonl > section.md

NAME is "millions" (the default), "millions-pack" (--pack-only: the
packs alone) or "millions-lists" (--lists-only: the lists alone). A list
or mount measured in several runs (--list-runs) is shown by its median
run, with the range of the runs.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from benchlib import load, fmt, ratio, verdict  # noqa: E402

MB = 1e6
MIB = 1 << 20


def own_mib(l):
    """The daemon's anonymous memory less its RAM cache's chunks, in MiB
    (the chunk buffers may be partly untouched: never below zero)."""
    return max(0.0, l["anon_kb"] / 1024 - l["ram_bytes"] / MIB)


def main():
    args = sys.argv[1:]
    section = "millions"
    if args[:1] == ["--section"]:
        section, args = args[1], args[2:]
    meta, rows = load(args[0], args[1])
    n = int(meta["files"])
    runs = {}
    for r in rows:
        if r["kind"] == "list" and r.get("build") == "baseline":
            key = ("list-baseline", r["epoch"], None)
        else:
            key = (r["kind"], r.get("tool") or r.get("how") or r.get("epoch"),
                   None if r["kind"] == "list" else r.get("reader"))
        runs.setdefault(key, []).append(r)
    # The median run of each (the lower middle one of an even count).
    by = {k: sorted(v, key=lambda r: r["secs"])[(len(v) - 1) // 2]
          for k, v in runs.items()}

    def spread(key):
        """" (min-max of N runs)" when a figure has several runs."""
        v = [r["secs"] for r in runs.get(key, [])]
        if len(v) < 2:
            return ""
        return " (%.2f-%.2f, %d runs)" % (min(v), max(v), len(v))
    out = []
    w = out.append
    w("## " + section)
    w("")
    if section == "millions":
        w("dlfs at %s files of 0.5-2 KiB in %s directories, against kernel "
          "squashfs of the same tree (tar2sqfs from squashfs-tools-ng, mounted "
          "by the kernel), on local disk, in one run (issue 24). Every "
          "measurement after packing starts from a dropped page cache." % (
              fmt(n), fmt(int(meta["dirs"]))))
    elif section == "millions-lists":
        w("The epoch lists alone (`--lists-only`) at %s files of 0.5-2 KiB "
          "in %s directories, packed by this build from tar shards on local "
          "disk: each run mounts from a dropped page cache and reads epochs "
          "1 and 2 with `wc -l`, 3 with Python; the baseline's daemon and "
          "this build's take turns. Times are the median run, with the "
          "range; section `millions` has the rest of the tree's figures." % (
              fmt(n), fmt(int(meta["dirs"]))))
    else:
        w("dlfs-pack alone (`--pack-only`) at %s files of 0.5-2 KiB in %s "
          "directories, from tar shards on local disk, each pack from a "
          "dropped page cache, in one run; section `millions` has the rest "
          "of the tree's figures." % (fmt(n), fmt(int(meta["dirs"]))))
    w("")
    w("- Run: %s, %s, revision %s." % (meta["date"], meta["machine"], meta["revision"]))
    w("- Reproduce: `%s` (as root)." % meta["command"])
    w("")
    pd, ps = by.get(("pack", "dlfs", None)), by.get(("pack", "squashfs", None))
    fd, fs = by.get(("find", "dlfs", None)), by.get(("find", "squashfs", None))
    table = []  # (what, dlfs, squashfs, dlfs vs squashfs)
    if pd:
        table.append(("pack, s (%s tar shards)" % meta["shards"], "%.1f" % pd["secs"],
                      "%.1f" % ps["secs"] if ps else "n/a",
                      ratio(ps["secs"], pd["secs"]) + " faster" if ps else "n/a"))
        table.append(("pack peak RSS", "%s MiB" % fmt(pd["rss_kb"] / 1024),
                      "%s MiB" % fmt(ps["rss_kb"] / 1024) if ps else "n/a",
                      ratio(pd["rss_kb"], ps["rss_kb"]) if ps else "n/a"))
        table.append(("index (dlfs) / image (squashfs)",
                      "%s MB index, %.1f B a file" % (fmt(pd["index_bytes"] / MB, 1),
                                                      pd["index_bytes"] / n),
                      "%s MB image" % fmt(ps["bytes"] / MB) if ps else "n/a", ""))
    if fd:
        table.append(("cold `find -printf %s`, s", "%.1f" % fd["secs"],
                      "%.1f" % fs["secs"] if fs else "n/a",
                      ratio(fd["secs"], fs["secs"]) if fs else "n/a"))
    for rd in ("c", "python"):
        d, s = by.get(("reads", "dlfs", rd)), by.get(("reads", "squashfs", rd))
        if d:
            table.append(("%s random cold reads, %s reader, files/s" % (
                fmt(int(meta["reads"])), "C" if rd == "c" else "Python"),
                fmt(d["files"] / d["secs"]),
                fmt(s["files"] / s["secs"]) if s else "n/a",
                ratio(d["files"] / d["secs"], s["files"] / s["secs"]) if s else "n/a"))
    # Without squashfs in the run (--pack-only, --lists-only, --no-squashfs),
    # its columns would be n/a throughout: leave them out.
    sq = any(k[1] == "squashfs" for k in by)
    if table:
        w("| what | dlfs | squashfs | dlfs vs squashfs |" if sq else "| what | dlfs |")
        w("|---|---:|---:|---:|" if sq else "|---|---:|")
        for t in table:
            w("| " + " | ".join(t if sq else t[:2]) + " |")
    pb = by.get(("pack", "baseline", None))
    if pd and pb:
        w("")
        w("The baseline's dlfs-pack (%s) packed the same shards first, in this run:" % meta.get("baseline", "?"))
        w("")
        w("| dlfs-pack | time | peak RSS | index | peak RSS / index |")
        w("|---|---:|---:|---:|---:|")
        for name, r in (("baseline", pb), ("this build", pd)):
            w("| %s | %.1f s | %s MiB | %s MB | %s |" % (
                name, r["secs"], fmt(r["rss_kb"] / 1024), fmt(r["index_bytes"] / MB, 1),
                ratio(r["rss_kb"] * 1024, r["index_bytes"])))
        w("| this vs baseline | %s | %s | %s | |" % (
            ratio(pd["secs"], pb["secs"]), ratio(pd["rss_kb"], pb["rss_kb"]),
            ratio(pd["index_bytes"], pb["index_bytes"])))
    if any(k[0] in ("mount", "list") for k in by):
        w("")
        w("The daemon, mounted without and with `cache_dir`:"
          if ("mount", "cache_dir_first", None) in by else "The daemon:")
        w("")
        w("| step | time | daemon RSS | of which anonymous / file |")
        w("|---|---:|---:|---:|")
    for how, label in (("plain", "mount (the PFS's index mapped)"),
                       ("cache_dir_first", "mount with cache_dir, first (the index copied)"),
                       ("cache_dir_again", "mount with cache_dir, again (the copy used)")):
        m = by.get(("mount", how, None))
        if m:
            w("| %s | %s ms | %s MiB | %s / %s MiB |" % (
                label, fmt(m["secs"] * 1000), fmt(m["rss_kb"] / 1024, 1),
                fmt(m["anon_kb"] / 1024, 1), fmt(m["file_kb"] / 1024, 1)))
    for e in (1, 2, 3):
        l = by.get(("list", e, None))
        if l:
            w("| `.dlfs/epochs/%d/files` (%s lines) read by %s | %.2f s%s | %s MiB | %s / %s MiB |" % (
                e, fmt(l["lines"]), "Python" if l.get("reader") == "python" else "`wc -l`",
                l["secs"], spread(("list", e, None)), fmt(l["rss_kb"] / 1024),
                fmt(l["anon_kb"] / 1024), fmt(l["file_kb"] / 1024)))
    if fd:
        w("| cold find, after a fresh mount | %.1f s | %s MiB | %s / %s MiB |" % (
            fd["secs"], fmt(fd["rss_kb"] / 1024), fmt(fd["anon_kb"] / 1024),
            fmt(fd["file_kb"] / 1024)))
    lists = [by.get(("list", e, None)) for e in (1, 2, 3)]
    lists = [l for l in lists if l]
    if lists and all("ram_bytes" in l for l in lists):
        w("")
        w("Reading a list makes its epoch current, and the planner starts loading the epoch's first chunks into the RAM cache (`ram_cache`, default 1 GiB; at most half of it ahead of the readers): those chunk buffers are anonymous memory of the daemon, but they are the data cache, not the list. The daemon's own memory below is its anonymous memory less the RAM cache's bytes (`tiers.ram.used_bytes`). File RSS is the index's pages the daemon has mapped: the page cache of the index (the directory walk of the first list, and the planner's one pass over the inodes), shared and clean.")
        w("")
        w("| list | RAM cache | daemon's own memory (anonymous less RAM cache) |")
        w("|---|---:|---:|")
        for l in lists:
            w("| epoch %d | %s MiB | %s MiB |" % (
                l["epoch"], fmt(l["ram_bytes"] / MIB), fmt(own_mib(l))))
    base = [by.get(("list-baseline", e, None)) for e in (1, 2, 3)]
    if lists and all(base):
        w("")
        w("The same lists from the baseline's daemon (%s), mounted first in this run on the same dataset, from a dropped page cache:" % meta.get("baseline", "?"))
        w("")
        w("| list | baseline | this build | time, this vs baseline | baseline own memory | this build | memory, this vs baseline |")
        w("|---|---:|---:|---:|---:|---:|---:|")
        for b, l in zip(base, lists):
            w("| epoch %d | %.2f s%s | %.2f s%s | %s | %s MiB | %s MiB | %s |" % (
                l["epoch"], b["secs"], spread(("list-baseline", l["epoch"], None)),
                l["secs"], spread(("list", l["epoch"], None)), ratio(l["secs"], b["secs"]),
                fmt(own_mib(b)), fmt(own_mib(l)),
                ratio(own_mib(l), own_mib(b)) if own_mib(b) > 0 else "n/a"))
    w("")
    w("### Goals (issue 24), in this run")
    w("")
    w("| goal | result | verdict |")
    w("|---|---|---|")
    m = by.get(("mount", "plain", None))
    if m:
        w("| mount < 100 ms and < 10 MiB | %s ms, %s MiB | %s |" % (
            fmt(m["secs"] * 1000), fmt(m["rss_kb"] / 1024, 1),
            verdict(m["secs"] < 0.1 and m["rss_kb"] < 10 * 1024)))
    l1, l2 = by.get(("list", 1, None)), by.get(("list", 2, None))
    if l1 and l2:
        worst = max(l["secs"] for l in lists)
        if all("ram_bytes" in l for l in lists):
            mem = max(own_mib(l) for l in lists)
            what = "own memory, anonymous less RAM cache"
        else:
            mem = max(l["rss_kb"] for l in lists) / 1024
            what = "RSS"
        rss = max(l["rss_kb"] for l in lists) / 1024
        slowest = max(max(r["secs"] for r in runs[("list", l["epoch"], None)])
                      for l in lists)
        w("| each epoch list < 2 s and < 200 MiB of daemon memory | %.2f s%s, %s MiB (%s; RSS with the RAM cache and the mapped index: %s MiB) | %s |" % (
            worst, " (median run; slowest run %.2f s)" % slowest
            if slowest != worst else "", fmt(mem), what, fmt(rss),
            verdict(worst < 2 and mem < 200)))
        w("| epoch 2's list no slower than epoch 1's | %.2f s vs %.2f s | %s |" % (
            l2["secs"], l1["secs"], verdict(l2["secs"] <= l1["secs"] * 1.1)))
    if fd and fs:
        w("| cold find ≤ kernel squashfs | %s | %s |" % (
            ratio(fd["secs"], fs["secs"]), verdict(fd["secs"] <= fs["secs"])))
    if pd and ps:
        w("| pack ≥ 2× tar2sqfs | %s | %s |" % (
            ratio(ps["secs"], pd["secs"]), verdict(ps["secs"] >= 2 * pd["secs"])))
    if pd:
        w("| pack peak RSS ≤ the index | %s MiB vs %s MiB | %s |" % (
            fmt(pd["rss_kb"] / 1024), fmt(pd["index_bytes"] / MIB),
            verdict(pd["rss_kb"] * 1024 <= pd["index_bytes"])))
    print("\n".join(out))


if __name__ == "__main__":
    main()
