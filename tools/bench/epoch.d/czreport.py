"""The compress group's part of the "## epoch" section (report.py calls
section()): compressed datasets (dlfs-pack --compress zstd, issue 28)
against the same sets uncompressed and kernel squashfs with zstd.

Rows of tools/bench/epoch it reads: "czset" (set, files, bytes, dirs);
"build" with labels cz_SET_u, cz_SET_z (bytes of the containers, "info":
dlfs-inspect info --json) and cz_SET_sqfs (the image's bytes); "read"
with labels cz_SET_SYS, SYS one of plain, sqfs, u1, u2, z1, z2.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from benchlib import fmt, ratio, verdict  # noqa: E402

SETS = (("npy", "npy samples", True), ("tokens", "tokenised text", True),
        ("volumes", "1 MiB volumes", True),
        ("jpeg", "JPEGs", False))  # (key, name, compressible)
SYSTEMS = (
    ("plain", "plain tree on the PFS"),
    ("sqfs", "kernel squashfs, `-comp zstd`, image on the PFS"),
    ("u1", "dlfs epoch 1, uncompressed (empty NVMe tier)"),
    ("z1", "dlfs epoch 1, `--compress zstd` (empty NVMe tier)"),
    ("u2", "dlfs epoch 2, uncompressed (NVMe tier)"),
    ("z2", "dlfs epoch 2, `--compress zstd` (NVMe tier)"),
)
READERS = (("c", "C"), ("py", "Python"))
NEAR = 0.97  # a miss by less than 3%: said, never counted as met


def delta(r, *path):
    """after - before of a /.dlfs/stats counter of a read row, or None."""
    a, b = r.get("stats_after"), r.get("stats_before")
    if not a:
        return None

    def get(s):
        for k in path:
            s = s[k]
        return s
    return get(a) - (get(b) if b else 0)


def section(w, meta, rows, cap_mb):
    """Write the section through w (one line a call). @return the lines
    for the Targets list (C reader), [] when the group did not run."""
    sets = {r["set"]: r for r in rows if r["kind"] == "czset"}
    if not sets:
        return []
    builds = {r["label"]: r for r in rows
              if r["kind"] == "build" and r["label"].startswith("cz_")}
    reads = {}
    for r in rows:
        if r["kind"] == "read" and r["label"].startswith("cz_"):
            reads[(r["label"], r.get("reader", "c"))] = r

    def row(s, k, rd):
        return reads.get(("cz_%s_%s" % (s, k), rd))

    def mbs(s, k, rd):
        r = row(s, k, rd)
        x = r and r["r"]
        return x["bytes"] / x["secs"] / 1e6 if x and x["secs"] > 0 else None

    def fps(s, k, rd):
        r = row(s, k, rd)
        x = r and r["r"]
        return x["files"] / x["secs"] if x and x["secs"] > 0 else None

    def info(s, v):
        return (builds.get("cz_%s_%s" % (s, v)) or {}).get("info") or {}

    def sqfs_ratio(s):
        b = builds.get("cz_%s_sqfs" % s)
        return sets[s]["bytes"] / b["bytes"] if b and b["bytes"] else None

    w("### Compressed datasets: compressible and incompressible sets")
    w("")
    w("The same files three ways, each on the PFS: dlfs-packed as they are "
      "(uncompressed), packed with `dlfs-pack --compress zstd` (zstd level "
      "3, each chunk alone, stored raw when it would not save a 32nd "
      "of it and a 4 KiB page), and kernel squashfs `mksquashfs TREE IMG %s` (its default "
      "level, 15, and 128 KiB blocks; built outside the group, "
      "loop-mounted, cold). Sets of about %s MB of file bytes each, made "
      "once on the PFS and reused:" % (
          meta.get("cz_sqfs_opts", "-comp zstd"), meta.get("cz_mb", "?")))
    w("")
    w("- npy: %s." % meta.get("cz_npy", "?"))
    w("- tokens: %s." % meta.get("cz_tokens", "?"))
    if meta.get("cz_volumes"):
        w("- volumes: %s." % meta["cz_volumes"])
    w("- jpeg: %s." % meta.get("cz_jpeg", "?"))
    w("")
    w("Passes as R's (8 threads, every file once, epoch 1's random order; "
      "epoch 2 another), per reader from the same state: dlfs epoch 1 on "
      "an empty cache_dir, then a remount on it and epoch 2, the page "
      "cache dropped before each. The plain tree of small files is "
      "IOPS-bound and steady: its passes stop starting files after %s s "
      "(a partial epoch, for context only). Served MB/s: the file bytes "
      "the reader got / its time (\"effective\"). PFS device MB: what the "
      "PFS's loop device served during the pass (squashfs: the image's "
      "blocks it read); dlfs tier MB: `tiers.pfs.bytes` of `.dlfs/stats` "
      "(stored bytes read from the containers). Ratio: file bytes / "
      "stored bytes (dlfs-inspect info; squashfs: / the image's size, "
      "metadata and its duplicate detection included)."
      % meta.get("cz_plain_limit", "?"))
    w("")
    w("| set | files | directories | file MB | dlfs-pack s | `--compress "
      "zstd` s | stored MB | ratio | raw chunks / chunks | squashfs zstd "
      "MB | squashfs ratio | mksquashfs s |")
    w("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
      "| ---: | ---: |")
    for s, name, _ in SETS:
        if s not in sets:
            continue
        x, z = sets[s], info(s, "z")
        bu, bz = builds.get("cz_%s_u" % s), builds.get("cz_%s_z" % s)
        bq = builds.get("cz_%s_sqfs" % s)
        w("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            name, fmt(x["files"]), fmt(x["dirs"]), fmt(x["bytes"] / 1e6),
            fmt(bu["secs"], 1) if bu else "-",
            fmt(bz["secs"], 1) if bz else "-",
            fmt(z["stored_bytes"] / 1e6) if "stored_bytes" in z else "-",
            fmt(z.get("ratio"), 2) if "ratio" in z else "-",
            "%s / %s" % (fmt(z["raw_chunks"]), fmt(z["chunks"]))
            if "chunks" in z else "-",
            fmt(bq["bytes"] / 1e6) if bq else "-",
            fmt(sqfs_ratio(s), 2) if sqfs_ratio(s) else "-",
            fmt(bq["secs"], 1) if bq else "-"))
    w("")
    w("| set | system | reader | files/s | served MB/s | x dlfs "
      "uncompressed, same epoch | served, % of cap | epoch s "
      "| PFS device MB | dlfs tier MB |")
    w("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    partial = []
    for s, name, _ in SETS:
        for k, sname in SYSTEMS:
            for rd, rname in READERS:
                r = row(s, k, rd)
                if not r:
                    continue
                x = r["r"]
                if not x["complete"]:
                    partial.append("%s, %s (%s)" % (name, sname, rname))
                tb = delta(r, "tiers", "pfs", "bytes")
                m = mbs(s, k, rd)
                w("| %s | %s%s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                    name, sname, "" if x["complete"] else " (partial)",
                    rname, fmt(fps(s, k, rd)), fmt(m, 1),
                    ratio(m, mbs(s, "u2" if k[-1] == "2" else "u1", rd)),
                    "-" if k in ("u2", "z2") or m is None
                    else "{:.0f}%".format(100.0 * m / cap_mb),
                    fmt(x["secs"], 1), fmt(r["pfs_bytes"] / 1e6),
                    fmt(tb / 1e6) if tb is not None else "-"))
    w("")
    if partial:
        w("Partial epochs (their files/s is the rate until they stopped): "
          "%s." % ", ".join(partial))
        w("")

    # ---------------------------------------------------------- goals
    def g_cap(s, rd):
        m, q = mbs(s, "z1", rd), info(s, "z").get("ratio")
        if m is None or not q:
            return "not measured"
        top = q * cap_mb
        return "%s MB/s = %.2f × (ratio %s × %s MB/s): %s" % (
            fmt(m), m / top, fmt(q, 2), fmt(cap_mb),
            verdict(m >= 0.9 * top))

    def g_vs(a, b, goal, strict=False):
        def f(s, rd):
            x, y = mbs(s, a, rd), mbs(s, b, rd)
            if x is None or y is None:
                return "not measured"
            ok = x > goal * y if strict else x >= goal * y
            near = (not ok and goal == 1.0 and x >= NEAR * y)
            return "%s: %s%s" % (ratio(x, y), verdict(ok),
                                 " (within 3%)" if near else "")
        return f

    goals = []
    for s, name, comp in SETS:
        if s not in sets:
            continue
        if comp:
            goals += [(s, name, "epoch 1, `--compress zstd`: served MB/s "
                       "≥ 0.9 × ratio × cap", g_cap),
                      (s, name, "epoch 1, `--compress zstd` > kernel "
                       "squashfs zstd", g_vs("z1", "sqfs", 1.0, True))]
        else:
            goals.append((s, name, "epoch 1, `--compress zstd` ≥ 1.0x "
                          "uncompressed", g_vs("z1", "u1", 1.0)))
        goals.append((s, name, "epoch 2, `--compress zstd` within 5% of "
                      "uncompressed (≥ 0.95x)", g_vs("z2", "u2", 0.95)))
    w("Goals (issue 28), as ratios in this run, each reader against "
      "itself:")
    w("")
    w("| set | goal | C | Python |")
    w("| --- | --- | --- | --- |")
    for s, name, goal, fn in goals:
        w("| %s | %s | %s | %s |" % (name, goal, fn(s, "c"), fn(s, "py")))
    w("")
    w("\"within 3%\": missed by less than 3%; still a miss.")
    w("")
    return ["compressed datasets (`--compress zstd`), %s: %s: %s" % (
        name, goal, fn(s, "c")) for s, name, goal, fn in goals]
