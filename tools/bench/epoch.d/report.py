#!/usr/bin/python3
"""Render the "## epoch" (or "## epoch --quick") section of RESULTS.md.

  report.py META.tsv RESULTS.jsonl OUT.md

META.tsv: "key<TAB>value" lines written by tools/bench/epoch.
RESULTS.jsonl: one JSON object per measurement (kinds read, copy, loader,
build, cache, find, czset; see tools/bench/epoch; czreport.py renders the
compress group's). A read row's "reader" is "c"
or "py" (rows of older runs, without it, are C's).
"""
import sys
import os

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from benchlib import load, fmt, ratio, verdict  # noqa: E402
import czreport  # noqa: E402

READS = [
    ("plain", "plain tree on the PFS"),
    ("staged", "staged: `cp -a` to local disk, then read"),
    ("local", "plain tree on local disk (the staged copy's read only)"),
    ("sqfs", "kernel squashfs, image on the PFS (loop)"),
    ("sqfuse", "squashfuse_ll, image on the PFS"),
    ("dlfs1", "dlfs epoch 1 (empty NVMe tier)"),
    ("dlfs1_alt", "dlfs epoch 1, `pfs_io=%s`"),
    ("dlfs2", "dlfs epoch 2 (remounted, NVMe tier)"),
    ("run1", "dlfs-run epoch 1 (no FUSE, empty NVMe tier)"),
    ("run2", "dlfs-run epoch 2 (no FUSE, a new dlfs-run, NVMe tier)"),
    ("view", "dlfs epoch 1, view order (empty NVMe tier)"),
    ("view_all", "dlfs epoch 1, view order, `stage=all` (empty NVMe tier)"),
    ("nocache", "dlfs epoch 1, no NVMe tier (RAM tier 1 GiB)"),
    ("nocache_view", "dlfs epoch 1, no NVMe tier, view order"),
    ("nocache_chunked", "dlfs epoch 1, no NVMe tier, view order, "
     "`shuffle=chunked`"),
    ("floor", "the FUSE floor: nullfs (no storage), cold"),
    ("floor_io", "the FUSE floor with local I/O: nullfs, one O_DIRECT read "
     "per file from local disk, cold"),
]
READERS = (("c", "C"), ("py", "Python"))

# repeated passes, best counts
HOT = ("sqfs_hot", "hot", "floor_hot", "run_hot", "run_hot_huge")
HOT_WHO = {"hot": "dlfs", "run_hot": "dlfs-run",
           "run_hot_huge": "dlfs-run"}  # hot rows with a goal
LOCAL = ("local", "dlfs2", "run2", "floor", "floor_io")  # not reading the PFS

# Dataset T: tiny files on local disk, each system's cold random reads.
TINY = [
    ("tiny_local", "tiny files: plain tree on local disk"),
    ("tiny_sqfs", "tiny files: kernel squashfs, image on local disk"),
    ("tiny_sqfuse", "tiny files: squashfuse_ll, image on local disk"),
    ("tiny_dlfs", "tiny files: dlfs, no cache_dir, image on local disk"),
]


def pct(a, b):
    if a is None or b is None or b == 0:
        return "n/a"
    return "{:.0f}%".format(100.0 * a / b)


def tier(r, *path):
    """after - before of a /.dlfs/stats counter of a read row."""
    a, b = r.get("stats_after"), r.get("stats_before")
    if not a:
        return None
    if r.get("from_mount"):  # counted from the mount: since the daemon began
        b = None

    def get(s):
        for k in path:
            s = s[k]
        return s
    return get(a) - (get(b) if b else 0)


def ceiling(w, res, reads, fps, cap_mb, bps, readers):
    """The model ceiling of an epoch 1 under a global shuffle, from this
    run's figures: the PFS streams the N_c chunks in first-use order in
    T_s = chunk bytes / cap; a reader in a random order of N_f files has
    met about N_c ln N_c of them when the last chunk arrives, and serves
    the rest after T_s at a FUSE server's cold rate R at best (nullfs
    cold, the floor). T >= T_s + (N_f - N_c ln N_c) / R."""
    import math
    e1 = reads.get(("dlfs1", "c"))
    if not e1 or not e1.get("stats_after"):
        return
    n_c = tier(e1, "tiers", "pfs", "reads")
    t_s = tier(e1, "tiers", "pfs", "bytes") / bps
    if not n_c or t_s <= 0:
        return
    rows = []
    for rd, rname in READERS:
        v, r = res.get(("dlfs1", rd)), fps("floor", rd)
        if rd not in readers or not v or not r:
            continue
        n_f = v["files"]
        rest = max(0.0, n_f - n_c * math.log(n_c))
        t = t_s + rest / r
        top = v["bytes"] / t / 1e6
        got = v["bytes"] / v["secs"] / 1e6
        vw = res.get(("view", rd))
        vgot = vw["bytes"] / vw["secs"] / 1e6 if vw else None
        rows.append("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
            rname, fmt(r), fmt(t_s, 2), fmt(rest), fmt(t, 2),
            pct(top, cap_mb), pct(got, cap_mb),
            pct(vgot, cap_mb) if vgot else "-"))
    if not rows:
        return
    w("Epoch 1 under a global shuffle, model ceiling from this run: the "
      "PFS streams dlfs epoch 1's %s chunk reads in first-use order in "
      "T_s = their bytes / the cap; a reader in a random order of N_f "
      "files has met about N_c ln N_c of them when the last chunk "
      "arrives, and serves the others after T_s at R files/s at best, "
      "R = nullfs cold (a FUSE server with no storage). Ceiling = file "
      "bytes / (T_s + (N_f - N_c ln N_c) / R), against the cap. A "
      "chunk-local order (`shuffle=chunked`) is not bound by it." % fmt(n_c))
    w("")
    w("| reader | R files/s | T_s s | files after T_s | T min s "
      "| ceiling, % of cap | dlfs epoch 1, % of cap "
      "| dlfs view order, % of cap |")
    w("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for x in rows:
        w(x)
    w("")


def main():
    meta, rows = load(sys.argv[1], sys.argv[2])
    out = []
    w = out.append
    bps = float(meta["bps"])
    cap_mb = bps / 1e6
    dlc = float(meta["dlc_bytes"]) if meta.get("dlc_bytes") else None
    for r in rows:  # rows of runs before the Python reader are C's
        r.setdefault("reader", "c")

    # Read rows by (label, reader); copies and builds by label.
    reads = {}
    for r in rows:
        if r["kind"] == "read":
            lab = "dlfs1_alt" if r["label"] == "dlfs1_direct" else r["label"]
            old = reads.get((lab, r["reader"]))
            # Hot passes are repeated: the fastest counts.
            if old is None or (lab in HOT and
                               r["r"]["secs"] < old["r"]["secs"]):
                reads[(lab, r["reader"])] = r
    copies = {r["label"]: r for r in rows if r["kind"] == "copy"}
    # (The compress group's are czreport's.)
    builds = {r["label"]: r for r in rows if r["kind"] == "build"
              and not r["label"].startswith("cz_")}
    finds = {r["label"]: r for r in rows if r["kind"] == "find"}
    readers = [rd for rd, _ in READERS
               if any(k[1] == rd for k in reads)]

    # Per (system, reader): files, bytes, seconds (staged adds its copy).
    res = {}
    for key, _ in READS:
        for rd in readers:
            if key == "staged":
                if ("local", rd) in reads and "staged" in copies:
                    x = reads[("local", rd)]
                    c = copies["staged"]
                    res[(key, rd)] = dict(
                        files=x["r"]["files"], bytes=x["r"]["bytes"],
                        secs=x["r"]["secs"] + c["secs"],
                        pfs_bytes=c["pfs_bytes"] + x["pfs_bytes"],
                        pfs_reqs=c["pfs_reqs"] + x["pfs_reqs"],
                        complete=x["r"]["complete"], row=None)
                continue
            if (key, rd) in reads:
                x = reads[(key, rd)]
                fm = x.get("from_mount") or {}  # rows timed from the mount
                res[(key, rd)] = dict(
                    files=x["r"]["files"], bytes=x["r"]["bytes"],
                    secs=fm.get("secs", x["r"]["secs"]),
                    pfs_bytes=fm.get("pfs_bytes", x["pfs_bytes"]),
                    pfs_reqs=fm.get("pfs_reqs", x["pfs_reqs"]),
                    complete=x["r"]["complete"], row=x)
    for key in ("sqfs_hot", "hot", "sqfs_hot_warmup", "hot_warmup",
                "floor_hot", "floor_hot_warmup", "run_hot",
                "run_hot_warmup", "run_hot_huge", "run_hot_huge_warmup") + \
            tuple(k for k, _ in TINY):
        for rd in readers:
            x = reads.get((key, rd))
            if x:
                res[(key, rd)] = dict(
                    files=x["r"]["files"], bytes=x["r"]["bytes"],
                    secs=x["r"]["secs"], pfs_bytes=x["pfs_bytes"],
                    pfs_reqs=x["pfs_reqs"], complete=x["r"]["complete"],
                    row=x)

    def measured(items):
        """(item, reader, reader name, result) of every measured pass of
        items, whose first field is the pass key; both readers, in order."""
        for it in items:
            for rd, rname in READERS:
                v = res.get((it[0], rd))
                if v:
                    yield it, rd, rname, v

    def fps(k, rd="c"):
        v = res.get((k, rd))
        return v["files"] / v["secs"] if v and v["secs"] > 0 else None

    def mbs(k, rd="c"):
        v = res.get((k, rd))
        return v["bytes"] / v["secs"] / 1e6 if v and v["secs"] > 0 else None

    def served_x(k, rd="c"):
        """PFS device bytes / file bytes served, of a read row."""
        v = res.get((k, rd))
        return v["pfs_bytes"] / v["bytes"] if v and v["bytes"] else None

    def find_best(k):
        f = finds.get(k)
        return min(f["secs"]) if f and f["secs"] else None

    dflt = meta.get("pfs_io_default")
    names = dict(READS)
    if dflt:
        names["dlfs1"] = "dlfs epoch 1 (empty NVMe tier, default `pfs_io=%s`)" % dflt
    names["dlfs1_alt"] = names["dlfs1_alt"] % meta.get("pfs_io_other", "direct")

    w("## " + meta.get("section", "epoch"))
    w("")
    w("Whole epochs over a simulated parallel file system: dlfs with its "
      "NVMe tier (and without it, in epoch-view order, page-cache hot, "
      "under `find`, and without FUSE through `dlfs-run`) against the plain tree, a staged local copy, "
      "kernel squashfs and squashfuse_ll, on the same files in the same "
      "run, each read by a C and by a Python reader; and datasets packed "
      "with `--compress zstd` against the same sets uncompressed and "
      "kernel squashfs with zstd. Generated by "
      "`tools/bench/epoch`; do not edit by hand.")
    w("")
    w("- Date: %s; dlfs revision `%s`" % (meta["date"], meta["revision"]))
    w("- Machine: %s" % meta["machine"])
    w("- Reproduce (as root, from the repository root): `ninja -C build && "
      "%s`. It brings the simulated PFS up and down itself "
      "(`tools/bench/pfs-sim up --iops %s --bps %s`, `... down`); "
      "`tools/bench/pfs-sim up && tools/bench/pfs-sim calibrate` measures "
      "what the caps give." % (meta["command"], meta["iops"], meta["bps"]))
    if meta.get("only"):
        w("- Partial run: only `%s`%s." % (
            meta["only"], "" if meta.get("only") == "compress"
            else " (and the plain tree)"))
    w("- Simulated PFS caps: **%s IOPS, %s MB/s** (%s). Every process "
      "under test runs inside the capped cgroup (`tools/bench/pfs-sim exec "
      "-- CMD`), FUSE daemons included." % (
          meta["iops"], fmt(cap_mb), meta["pfs"]))
    w("- Local disk (\"node-local NVMe\"): %s." % meta["local"])
    w("- Tools: %s" % meta["versions"])
    if meta.get("r_desc"):
        w("- Dataset R: %s." % meta["r_desc"])
    if meta.get("j_desc"):
        w("- Dataset J (DataLoader): %s." % meta["j_desc"])
    if meta.get("t_desc"):
        w("- Dataset T (tiny files): %s." % meta["t_desc"])
    w("- Every measured pass is cold unless marked hot: `sync; echo 3 > "
      "/proc/sys/vm/drop_caches` right before it (mounts first, so FUSE "
      "daemons start with empty caches; the `stage=all` view row drops "
      "before the mount instead: see below). Readers, "
      "%s threads each, every file once, in list order: C "
      "(`mount.d/reader.c`: openat, read(2) of 1 MiB to EOF, close) and "
      "Python (`epoch.d/pyread.py` under /usr/bin/python3: open, "
      "`f.read()`, close, as DataLoader workers do). Each reader's pass "
      "starts from the same state: a fresh mount, a fresh cache_dir for "
      "an epoch 1, and the epoch 1 + epoch 2 sequence run once per "
      "reader. Epoch E reads a random order of seed 41+E (every baseline "
      "reads epoch 1's order); the view rows read `MNT/.dlfs/epochs/1/"
      "files` (`-o seed=%s`, so both readers get one list) as the "
      "reader's list, and each reader's clock starts before it reads its "
      "list (reading the view makes it, and sets the daemon loading the "
      "epoch's chunks). `stage=all` reads the PFS from the mount on: its "
      "rows drop the caches before the mount and are timed from the start "
      "of the mount (mount included, its PFS MB too)."
      % (meta["threads"], meta.get("view_seed", "?")))
    w("- Commands: plain: the tree on the PFS. staged: `cp -a TREE LOCAL` "
      "inside the group, then `sync` (counted), then a cold read of the "
      "copy. kernel squashfs: `mksquashfs TREE PFS/R.sqfs -noI -noD -noF "
      "-noX -noappend -no-duplicates` (built outside the group), `mount -t "
      "squashfs -o loop,ro`. squashfuse_ll: `squashfuse_ll PFS/R.sqfs MNT`. "
      "dlfs: `dlfs-pack TREE -o PFS/R.dlfs -q`, `dlfs PFS/R.dlfs MNT -o "
      "cache_dir=LOCAL/nvme%s` (a new empty cache_dir for each epoch 1; "
      "epoch 2 unmounts, drops caches and remounts on the same one); "
      "view: `-o seed=%s,cache_dir=...`, LIST = "
      "`MNT/.dlfs/epochs/1/files`; view_all: the same plus `stage=all`; "
      "nocache: no `cache_dir` (nocache_view: in view order; "
      "nocache_chunked: in view order with `-o shuffle=chunked`); "
      "hot: `-o ram_cache=%s,cache_dir=...` "
      "(1.1x the containers, at most a quarter of RAM), a cold warm-up pass, then the measured "
      "passes with nothing dropped (kernel squashfs the same way); floor: "
      "`nullfs TREE.tsv MNT` (`find TREE -type f -printf '%%P\\t%%s\\n'`), "
      "its bdi's `read_ahead_kb` set to 1024, cold, then hot as above; "
      "floor_io: `nullfs TREE.tsv MNT LOCAL/R.backing`, cold; dlfs-run: "
      "`dlfs-run -o cache_dir=LOCAL/nvme-run PFS/R.dlfs:PREFIX -- bash "
      "epoch.d/runpass ...` inside the group (PREFIX does not exist; "
      "runpass runs the reader, so the reader has the preload, and reads "
      "`PREFIX/.dlfs/stats` around it), the page cache dropped right "
      "before it: epoch 1 with an empty cache_dir, epoch 2 a new "
      "dlfs-run on the same one, hot as above in one dlfs-run; find: "
      "`find MNT -printf '%%s\\n'` on a fresh mount, caches dropped, best "
      "of %s."
      % ((", " + meta["dlfs_opts"]) if meta.get("dlfs_opts") else "",
         meta.get("view_seed", "?"), meta.get("hot_ram_cache", "?"),
         meta.get("find_runs", "?")))
    w("- PFS MB and requests: what the PFS's loop device served during the "
      "pass (/proc/diskstats; metadata included). dlfs tier MB: "
      "`tiers.pfs.bytes` of `MNT/.dlfs/stats` (chunk bytes the daemon read "
      "from the containers). % of cap: file bytes / time against the bps "
      "cap. MB = 10^6 bytes.")
    busy = [r["busy"] for r in rows if r.get("busy") is not None]
    if busy:
        w("- Before each cold pass the script waits for the CPUs to be < "
          "10%% busy (up to %s s); busy %% seen: min %d, max %d."
          % (meta.get("quiet", "30"), min(busy), max(busy)))
        noisy = ["%s%s%s (%d%%)" % (
            r["label"], " epoch %d" % r["epoch"] if r["kind"] == "loader"
            else "", " " + r["reader"] if r["kind"] == "read" else "",
            r["busy"])
            for r in rows if r.get("busy") is not None and r["busy"] >= 10]
        if noisy:
            w("  Other work kept the CPUs busy before: %s; those figures "
              "are less reliable." % ", ".join(noisy))
    foreign = ["%s (%s)" % (r["label"], r["reader"]) for r in rows
               if r["kind"] == "read" and r.get("foreign_drops")]
    if foreign:
        w("- Another process dropped the page cache during (or, for a hot "
          "pass, before) these passes (`drop_pagecache` of /proc/vmstat): "
          "%s. A hot pass among them was partly cold." % ", ".join(foreign))
    w("")

    # ---------------------------------------------------------- cases
    w("### Every case against its baseline, C and Python readers")
    w("")
    w("Each ratio is against the same reader's baseline pass (the Python "
      "plain tree is the Python baseline); \"met\"/\"missed\" is the goal "
      "for that reader.")
    w("")
    w("| case | baseline | C files/s | C vs baseline | Py files/s "
      "| Py vs baseline | goal | C | Py |")
    w("| --- | --- | ---: | ---: | ---: | ---: | --- | --- | --- |")
    ebase = {"plain": "-", "staged": "plain", "local": "plain",
             "sqfs": "plain", "sqfuse": "plain", "dlfs1": "plain",
             "dlfs1_alt": "plain", "dlfs2": "local", "view": "plain",
             "view_all": "plain", "nocache": "plain",
             "nocache_view": "plain", "nocache_chunked": "plain",
             "floor": "local", "floor_io": "local",
             "run1": "dlfs1", "run2": "local"}
    bname = {"plain": "plain tree on the PFS",
             "local": "plain tree on local disk",
             "dlfs1": "dlfs epoch 1 (FUSE mount)",
             "sqfs_hot": "kernel squashfs, hot", "-": "-"}

    def g_cap(k, rd):
        m = mbs(k, rd)
        if m is None:
            return "not measured"
        return "%s of the cap: %s" % (pct(m, cap_mb), verdict(m >= 0.85 * cap_mb))

    def g_local(k, rd, goal=0.9):
        a, b = fps(k, rd), fps("local", rd)
        if a is None or b is None:
            return "not measured"
        return "%s: %s" % (ratio(a, b), verdict(a >= goal * b))

    def g_local1(k, rd):
        return g_local(k, rd, 1.0)

    def g_dlfs1(k, rd):
        a, b = fps(k, rd), fps("dlfs1", rd)
        if a is None or b is None:
            return "not measured"
        return "%s dlfs epoch 1: %s" % (ratio(a, b), verdict(a >= b))

    def g_nocache(k, rd):
        a, b, x = fps(k, rd), fps("plain", rd), served_x(k, rd)
        if a is None or b is None or x is None:
            return "not measured"
        return "PFS %s served, %s plain: %s" % (
            ratio(x, 1.0), ratio(a, b), verdict(x <= 1.5 and a >= b))

    def g_hot(k, rd):
        a, b = fps(k, rd), fps("sqfs_hot", rd)
        if a is None or b is None:
            return "not measured"
        # A "hot" pass that read more than 1% of its bytes from the PFS
        # was partly cold (at full size the kernel squashfs image and its
        # pages need not fit in RAM together): no verdict from it.
        for key, who in (("sqfs_hot", "kernel squashfs"), (k, HOT_WHO[k])):
            x = served_x(key, rd)
            if x is not None and x > 0.01:
                return "%s: no verdict, the %s pass was not hot (PFS %s " \
                       "the bytes served)" % (ratio(a, b), who, ratio(x, 1.0))
        return "%s: %s" % (ratio(a, b), verdict(a >= b))

    cases = [(k, names[k], ebase[k]) for k, _ in READS]
    goals = {
        "dlfs1": ("≥ 85% of the bps cap (file MB/s)", g_cap),
        "dlfs1_alt": ("≥ 85% of the bps cap (file MB/s)", g_cap),
        "dlfs2": ("≥ 0.9x plain tree on local disk", g_local),
        "view": ("≥ 1.0x dlfs epoch 1 (plain paths)", g_dlfs1),
        "view_all": ("≥ 1.0x dlfs epoch 1 (plain paths)", g_dlfs1),
        "nocache": ("PFS bytes ≤ 1.5x bytes served, and ≥ 1.0x plain",
                    g_nocache),
        "nocache_view": ("PFS bytes ≤ 1.5x bytes served, and ≥ 1.0x "
                         "plain", g_nocache),
        "nocache_chunked": ("PFS bytes ≤ 1.5x bytes served, and ≥ 1.0x "
                            "plain", g_nocache),
        "hot": ("≥ 1.0x kernel squashfs hot (design: ≥ 0.8x)", g_hot),
        "run1": ("≥ 1.0x dlfs epoch 1 (the FUSE mount)", g_dlfs1),
        "run2": ("≥ 1.0x plain tree on local disk", g_local1),
        "run_hot": ("≥ 1.0x kernel squashfs hot", g_hot),
        "run_hot_huge": ("≥ 1.0x kernel squashfs hot", g_hot),
    }
    hot_cases = [("sqfs_hot", "kernel squashfs, page cache hot", "-"),
                 ("hot", "dlfs, page cache hot (`ram_cache` > dataset)",
                  "sqfs_hot"),
                 ("run_hot", "dlfs-run, RAM tier hot (`ram_cache` > "
                  "dataset)", "sqfs_hot"),
                 ("run_hot_huge", "dlfs-run, RAM tier hot, in huge pages "
                  "(`vm.nr_hugepages` set)", "sqfs_hot")]
    cases += hot_cases + [("floor_hot", "the FUSE floor: nullfs, page "
                           "cache hot", "sqfs_hot")]

    def g_tiny(k, rd):
        a, b = fps(k, rd), fps("tiny_sqfuse", rd)
        if a is None or b is None:
            return "not measured"
        return "%s: %s" % (ratio(a, b), verdict(a >= b))
    names.update(TINY)
    ebase.update(tiny_local="-", tiny_sqfs="tiny_local",
                 tiny_sqfuse="tiny_local", tiny_dlfs="tiny_sqfuse")
    bname.update(tiny_local="tiny files: plain tree on local disk",
                 tiny_sqfuse="tiny files: squashfuse_ll")
    goals["tiny_dlfs"] = ("≥ 1.0x squashfuse_ll", g_tiny)
    cases += [(k, n, ebase[k]) for k, n in TINY]
    partial = []
    for k, name, bk in cases:
        if not any((k, rd) in res for rd in readers):
            continue
        cells = []
        for rd in ("c", "py"):
            v = res.get((k, rd))
            if not v:
                cells += ["-", "-"]
                continue
            if not v["complete"]:
                partial.append("%s (%s)" % (name, rd))
            base_k = k if bk == "-" else bk
            cells += [fmt(fps(k, rd)), ratio(fps(k, rd), fps(base_k, rd))]
        goal, fn = goals.get(k, ("baseline" if bk == "-" else "-", None))
        vc = fn(k, "c") if fn and "c" in readers else "-"
        vp = fn(k, "py") if fn and "py" in readers else "-"
        w("| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            name, bname.get(bk, bk), cells[0], cells[1], cells[2], cells[3],
            goal, vc, vp))
    if finds:
        sq, dl = find_best("sqfs"), find_best("dlfs")
        for k, name, bk in (("sqfs", "`find` stat walk, kernel squashfs", "-"),
                            ("dlfs", "`find` stat walk, dlfs", "sqfs")):
            f = finds.get(k)
            if not f:
                continue
            rate = f["entries"] / find_best(k) if find_best(k) else None
            brate = (finds[bk]["entries"] / find_best(bk)
                     if bk in finds and find_best(bk) else None)
            if bk == "-":
                goal, vc = "baseline", "-"
            else:
                goal = "time ≤ 1.0x kernel squashfs (design: ≤ 1.5x)"
                vc = ("time %s: %s" % (ratio(dl, sq), verdict(dl <= sq))
                      if dl and sq else "-")
            w("| %s (entries/s) | %s | %s | %s | - | - | %s | %s | - |" % (
                name, "-" if bk == "-" else "kernel squashfs `find`",
                fmt(rate), ratio(rate, brate) if bk != "-" else "1.00x",
                goal, vc))
    w("")
    if partial:
        w("Partial epochs (stopped by --limit): %s." % ", ".join(partial))
        w("")

    # ---------------------------------------------------------- reads
    w("### One epoch, 8 threads, dataset R: every pass")
    w("")
    w("| system | reader | files/s | MB/s | x plain | % of bps cap | epoch s "
      "| PFS MB read | PFS requests | dlfs tier MB from PFS |")
    w("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for (key, _), rd, rname, v in measured(READS):
        tmb = None
        if v["row"] is not None and v["row"].get("stats_after"):
            tmb = tier(v["row"], "tiers", "pfs", "bytes") / 1e6
        label = names[key]
        if key == "staged":
            label += " (copy %s s incl. sync)" % fmt(copies["staged"]["secs"], 1)
        w("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            label, rname, fmt(fps(key, rd)), fmt(mbs(key, rd), 1),
            ratio(fps(key, rd), fps("plain", rd)),
            pct(mbs(key, rd), cap_mb) if key not in LOCAL else "-",
            fmt(v["secs"], 1),
            fmt(v["pfs_bytes"] / 1e6), fmt(v["pfs_reqs"]),
            fmt(tmb) if tmb is not None else "-"))
    w("")
    w("x plain: against the same reader's plain-tree pass.")
    w("")
    notes = []
    for key in ("dlfs1", "dlfs1_alt", "dlfs2", "run1", "run2", "view",
                "view_all", "nocache", "nocache_view", "nocache_chunked"):
        r = reads.get((key, "c"))
        if not r or not r.get("stats_after"):
            continue
        s = r["stats_after"]
        nv = s["tiers"]["nvme"]
        pf = s.get("prefetch", {})
        ru = s.get("read_unit")
        hist = {k: v for k, v in s["tiers"]["pfs"]["read_size_hist"].items() if v}
        tb = tier(r, "tiers", "pfs", "bytes")
        dev = (r.get("from_mount") or {}).get("pfs_bytes", r["pfs_bytes"])
        amp = (" The PFS device served %s the bytes dlfs read from the "
               "containers." % ratio(dev, tb)) if tb else ""
        unit = (" read_unit now `%s` (%s switches, %s files read alone)."
                % (ru["now"], fmt(ru["switches"]), fmt(ru["file_reads"]))
                if ru else "")
        dr = s["tiers"].get("direct") or {}
        if dr.get("enabled"):
            unit += (" Served by the clients themselves (tiers.direct): "
                     "%s reads (%s from RAM, %s from the NVMe tier, %s "
                     "checked whole), %s MB." % (
                         fmt(tier(r, "tiers", "direct", "reads")),
                         fmt(tier(r, "tiers", "direct", "ram")),
                         fmt(tier(r, "tiers", "direct", "nvme")),
                         fmt(tier(r, "tiers", "direct", "checked")),
                         fmt(tier(r, "tiers", "direct", "bytes") / 1e6)))
        notes.append(
            "%s: container reads %s (sizes %s), NVMe hits %s (%s MB), "
            "chunks written to the tier %s, not cached (queue full) %s, "
            "prefetch issued/used/wasted/pending/planned %s/%s/%s/%s/%s, "
            "staged (fill) chunks %s; the tier settled %s s after the pass "
            "(not counted).%s%s" % (
                key, fmt(tier(r, "tiers", "pfs", "reads")),
                ", ".join("%s: %d" % kv for kv in hist.items()) or "none",
                fmt(tier(r, "tiers", "nvme", "hits")),
                fmt(tier(r, "tiers", "nvme", "bytes") / 1e6),
                fmt(nv["written_chunks"]), fmt(nv["write_dropped"]),
                pf.get("issued", "?"), pf.get("used", "?"),
                pf.get("wasted", "?"), pf.get("pending", "?"),
                pf.get("planned", "?"),
                fmt(s.get("fill", {}).get("swept")),
                r.get("settle_secs"), amp, unit))
    if notes:
        w("dlfs counters of the C passes (`/.dlfs/stats`, since its mount; "
          "run1, run2: `PREFIX/.dlfs/stats` through the preload, since "
          "its server started):")
        w("")
        for n in notes:
            w("- " + n)
        w("")
    if builds:
        w("Images (built outside the group, not timed above): %s." % "; ".join(
            "%s %s MB in %s s" % (k, fmt(b["bytes"] / 1e6), fmt(b["secs"], 1))
            for k, b in builds.items()))
        w("")

    # ---------------------------------------------------------- nocache
    nrows = [(k, rd) for k in ("dlfs1", "view", "nocache", "nocache_view",
                               "nocache_chunked")
             for rd, _ in READERS if (k, rd) in res]
    if any(k.startswith("nocache") for k, _ in nrows):
        w("### No NVMe tier: RAM tier 1 GiB, smaller than the dataset")
        w("")
        w("Bytes served: file bytes the reader got. PFS device: the loop "
          "device's bytes during the pass (metadata included); tier: "
          "`tiers.pfs.bytes` (what dlfs read from the containers). "
          "dlfs epoch 1 and view (with an NVMe tier) for comparison.")
        w("")
        w("| system | reader | files/s | x plain | MB served | PFS device MB "
          "| x served | tier MB | x served | PFS requests | read_unit now |")
        w("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
        for k, rd in nrows:
            v = res[(k, rd)]
            r = v["row"]
            tb = tier(r, "tiers", "pfs", "bytes") if r.get("stats_after") else None
            ru = (r.get("stats_after") or {}).get("read_unit")
            w("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                names[k], dict(READERS)[rd], fmt(fps(k, rd)),
                ratio(fps(k, rd), fps("plain", rd)), fmt(v["bytes"] / 1e6),
                fmt(v["pfs_bytes"] / 1e6), ratio(v["pfs_bytes"], v["bytes"]),
                fmt(tb / 1e6) if tb is not None else "-",
                ratio(tb, v["bytes"]) if tb is not None else "-",
                fmt(v["pfs_reqs"]),
                "`%s` (%s switches)" % (ru["now"], ru["switches"]) if ru else "-"))
        w("")

    # ---------------------------------------------------------- hot
    if any(k in ("hot", "sqfs_hot", "floor_hot", "run_hot")
           for k, _ in res):
        w("### Page cache hot")
        w("")
        w("Each mounted once (dlfs-run: started once): a cold warm-up pass "
          "(C reader, epoch 1's "
          "order), then the measured passes in the same order with "
          "nothing dropped%s. dlfs and dlfs-run: `-o ram_cache=%s,"
          "cache_dir=...`. A hot "
          "pass served by the page cache sends dlfs no lookups or reads; "
          "through dlfs-run no page cache serves a read: the server's RAM "
          "tier serves each, read by the client from shared memory "
          "(lookups / reads count only what still reached the server; "
          "the last column's third figure, the reads the clients served "
          "themselves)."
          % ((", %s per reader, the fastest shown" % meta["hot_runs"])
             if meta.get("hot_runs") else "",
             meta.get("hot_ram_cache", "?")))
        w("")
        w("| system | reader | warm-up files/s (cold) | hot files/s "
          "| hot MB/s | x kernel squashfs hot | PFS MB during the hot pass "
          "| dlfs lookups / reads during the hot pass |")
        w("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
        for (k, wk, name), rd, rname, v in measured(
                (("sqfs_hot", "sqfs_hot_warmup", "kernel squashfs"),
                 ("hot", "hot_warmup", "dlfs"),
                 ("run_hot", "run_hot_warmup", "dlfs-run"),
                 ("run_hot_huge", "run_hot_huge_warmup",
                  "dlfs-run, huge pages"),
                 ("floor_hot", "floor_hot_warmup", "nullfs (the FUSE floor)"))):
            r = v["row"]
            ops = "-"
            if r.get("stats_after") and r.get("stats_before"):
                ops = "%s / %s" % (fmt(tier(r, "ops", "lookup")),
                                   fmt(tier(r, "ops", "read")))
                if (r["stats_after"]["tiers"].get("direct") or {}).get(
                        "enabled"):
                    ops += " / %s" % fmt(tier(r, "tiers", "direct", "reads"))
            w("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
                name, rname, fmt(fps(wk, "c")), fmt(fps(k, rd)),
                fmt(mbs(k, rd), 1), ratio(fps(k, rd), fps("sqfs_hot", rd)),
                fmt(v["pfs_bytes"] / 1e6), ops))
        w("")

    # ---------------------------------------------------------- floor
    if any(k in ("floor", "floor_hot") for k, _ in res):
        w("### The FUSE floor")
        w("")
        w("nullfs (`tools/bench/epoch.d/nullfs.c`) serves R's names and "
          "sizes from one static buffer: no storage, no index, no cache of "
          "its own, set up as dlfs is by default (no open, 1 MiB kernel "
          "read-ahead, the same worker count). Its passes cost only the "
          "FUSE requests (a lookup and a read per cold file; Python's "
          "`open()` adds an ioctl, TCGETS, that FUSE sends to every "
          "server), so a FUSE server that answers from user space can "
          "hardly beat it here. Cold: "
          "caches dropped before the pass, like dlfs epoch 2; hot: "
          "mounted once, a C warm-up, nothing dropped. With local I/O "
          "(floor_io): the same server also reads each file's bytes from "
          "one file on local disk, one O_DIRECT pread per read request, "
          "as a FUSE server with a local disk cache must at least do "
          "(dlfs epoch 2 does that too, plus its index, tiers and "
          "checksums).")
        w("")
        w("| comparison | C | Python |")
        w("| --- | ---: | ---: |")
        for a, b, what in (
                ("floor", "local", "nullfs cold vs the plain tree on local disk"),
                ("dlfs2", "floor", "dlfs epoch 2 vs nullfs cold"),
                ("floor_io", "local", "nullfs with local I/O, cold, vs the "
                 "plain tree on local disk"),
                ("dlfs2", "floor_io", "dlfs epoch 2 vs nullfs with local "
                 "I/O, cold"),
                ("floor_hot", "sqfs_hot", "nullfs hot vs kernel squashfs hot"),
                ("hot", "floor_hot", "dlfs hot vs nullfs hot"),
                ("run2", "floor", "dlfs-run epoch 2 vs nullfs cold"),
                ("run_hot", "floor_hot", "dlfs-run hot vs nullfs hot")):
            w("| %s | %s | %s |" % (what, ratio(fps(a, "c"), fps(b, "c")),
                                    ratio(fps(a, "py"), fps(b, "py"))))
        w("")
        ceiling(w, res, reads, fps, cap_mb, bps, readers)

    # ---------------------------------------------------------- find
    if finds:
        w("### `find` of the whole tree, cold")
        w("")
        w("`find MNT -printf '%s\\n' | wc -l` inside the group, on a fresh "
          "mount with the page cache dropped, once per run.")
        w("")
        w("| system | runs s | best s | entries | entries/s | time x kernel squashfs |")
        w("| --- | --- | ---: | ---: | ---: | ---: |")
        for k, name in (("sqfs", "kernel squashfs"), ("dlfs", "dlfs")):
            f = finds.get(k)
            if not f:
                continue
            best = find_best(k)
            w("| %s | %s | %s | %s | %s | %s |" % (
                name, ", ".join(fmt(x, 2) for x in f["secs"]), fmt(best, 2),
                fmt(f["entries"]), fmt(f["entries"] / best if best else None),
                ratio(best, find_best("sqfs"))))
        w("")

    # ---------------------------------------------------------- tiny
    if any(k.startswith("tiny_") for k, _ in res):
        w("### Tiny files on local disk, random cold reads")
        w("")
        w("Dataset T: %s. Each pass reads the same list (8 threads, each "
          "file whole), cold, on a fresh mount; the images are on the same "
          "local disk as the tree (`mksquashfs` as for R; dlfs mounted "
          "without cache_dir). Disk MB / requests: what the local disk "
          "served during the pass." % meta.get("t_desc", "?"))
        w("")
        w("| system | reader | files/s | x plain tree | x kernel squashfs "
          "| x squashfuse_ll | disk MB read | disk requests | per file KiB |")
        w("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for (k, name), rd, rname, v in measured(TINY):
            r = v["row"]
            lb, lr = r.get("local_bytes"), r.get("local_reqs")
            w("| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                name[len("tiny files: "):], rname, fmt(fps(k, rd)),
                ratio(fps(k, rd), fps("tiny_local", rd)),
                ratio(fps(k, rd), fps("tiny_sqfs", rd)),
                ratio(fps(k, rd), fps("tiny_sqfuse", rd)),
                fmt(lb / 1e6, 1) if lb is not None else "-",
                fmt(lr) if lr is not None else "-",
                fmt(lb / 1024 / v["files"], 1)
                if lb is not None and v["files"] else "-"))
        w("")

    # ---------------------------------------------------------- policy
    pol = [r for r in rows if r["kind"] == "read" and "policy" in r]
    if pol:
        w("### NVMe tier smaller than the dataset: cache_size=%s (half of "
          "the %s MB of containers), %d epochs per policy"
          % (meta.get("policy_cache_size", "?"), fmt(dlc / 1e6) if dlc else "?",
             max(r["epoch"] for r in pol)))
        w("")
        w("Each policy starts from an empty cache_dir; each epoch is a fresh "
          "mount (page cache dropped) reading a new random order, so "
          "`tiers.pfs.bytes` counts that epoch alone.")
        w("")
        w("| policy | epoch | files/s | x plain | PFS MB (tiers.pfs.bytes) "
          "| x containers | NVMe hits | NVMe MB read | evicted chunks |")
        w("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for r in pol:
            x = r["r"]
            f = x["files"] / x["secs"] if x["secs"] > 0 else None
            pb = tier(r, "tiers", "pfs", "bytes")
            w("| %s | %d | %s | %s | %s | %s | %s | %s | %s |" % (
                r["policy"], r["epoch"], fmt(f), ratio(f, fps("plain")),
                fmt(pb / 1e6), ratio(pb, dlc) if dlc else "n/a",
                fmt(tier(r, "tiers", "nvme", "hits")),
                fmt(tier(r, "tiers", "nvme", "bytes") / 1e6),
                fmt(r["stats_after"]["tiers"]["nvme"]["evicted"])))
        w("")

    # ---------------------------------------------------------- loader
    lds = [r for r in rows if r["kind"] == "loader"]
    ltot = {}
    if lds:
        w("### PyTorch DataLoader, dataset J, 2 cold epochs")
        w("")
        w("`mount.d/loader.py ROOT 1 4 64 0`: ImageFolder + ToTensor, 4 "
          "workers, batch 64, shuffle; one process per epoch, inside the "
          "group, page cache dropped before each. Epoch time = ImageFolder "
          "scan + the epoch (worker start-up included). staged counts `cp "
          "-a` + `sync` of the JPEG tree; dlfs epoch 2 is a remount on the "
          "same cache_dir.")
        w("")
        w("| system | copy s | epoch 1 s | epoch 2 s | samples/s epoch 1 "
          "| samples/s epoch 2 | 2 epochs s (incl. copy) "
          "| samples/s over 2 epochs | x staged | PFS MB read |")
        w("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        names = {"plain": "plain tree on the PFS",
                 "staged": "staged to local disk",
                 "dlfs": "dlfs (epoch 2 from the NVMe tier)",
                 "dlfs_tree": "dlfs tree view, in its order (epoch 1 only)"}
        lrows = {}
        for sysn in ("plain", "staged", "dlfs", "dlfs_tree"):
            ep = {r["epoch"]: r for r in lds if r["label"] == sysn}
            if not ep:
                continue
            n = ep[min(ep)]["l"]["samples"]
            t = {e: r["l"]["scan_secs"] + r["l"]["epoch_secs"][0]
                 for e, r in ep.items()}
            c = copies.get("jstaged") if sysn == "staged" else None
            pfsb = sum(r["pfs_bytes"] for r in ep.values()) + \
                (c["pfs_bytes"] if c else 0)
            total = (c["secs"] if c else 0.0) + sum(t.values()) \
                if len(t) == 2 else None
            ltot[sysn] = (n, total)
            lrows[sysn] = (n, t, c["secs"] if c else None, pfsb, total)
        staged_total = ltot.get("staged", (0, None))[1]
        for sysn, (n, t, copy, pfsb, total) in lrows.items():
            w("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                names[sysn], fmt(copy, 1) if copy else "-",
                fmt(t.get(1), 1), fmt(t.get(2), 1),
                fmt(n / t[1] if t.get(1) else None),
                fmt(n / t[2] if t.get(2) else None),
                fmt(total, 1), fmt(2 * n / total if total else None),
                ratio(staged_total, total) if total else "n/a",
                fmt(pfsb / 1e6)))
        w("")
        w("x staged: time of staged (copy + 2 epochs) / time of the row's "
          "2 epochs (higher is better).")
        w("")
        if "dlfs_tree" in lrows and "dlfs" in lrows:
            tt = lrows["dlfs_tree"][1].get(1)
            td = lrows["dlfs"][1].get(1)
            tp = lrows.get("plain", (0, {}))[1].get(1)
            w("dlfs tree view: `loader.py MNT/.dlfs/epochs/1/tree 1 4 64 0 "
              "name` (ImageFolder over the view, a sampler in name order: "
              "the view's order, labels from the directories), fresh "
              "cache_dir. Epoch 1 samples/s: %s the dlfs row's epoch 1 "
              "(DataLoader shuffle over the plain path), %s plain's." % (
                  ratio(td, tt) if td and tt else "n/a",
                  ratio(tp, tt) if tp and tt else "n/a"))
            w("")

    cz_targets = czreport.section(w, meta, rows, cap_mb)

    # ---------------------------------------------------------- targets
    w("### Targets (design, \"Performance goals\"), details of the C passes")
    w("")
    e1 = mbs("dlfs1")
    iops = float(meta["iops"])

    def device(k):
        # What the PFS device did during the pass, against its caps.
        v = res.get((k, "c"))
        if not v or v["secs"] <= 0:
            return ""
        return ("; the PFS device served %s requests/s (%s of %s IOPS) and "
                "%s MB/s (%s of the cap), %s KiB per request" % (
                    fmt(v["pfs_reqs"] / v["secs"]),
                    pct(v["pfs_reqs"] / v["secs"], iops), fmt(iops),
                    fmt(v["pfs_bytes"] / v["secs"] / 1e6),
                    pct(v["pfs_bytes"] / v["secs"] / 1e6, cap_mb),
                    fmt(v["pfs_bytes"] / max(v["pfs_reqs"], 1) / 1024)))
    w("- dlfs epoch 1 >= 85%% of the bandwidth cap (file bytes / time vs "
      "%s MB/s): %s MB/s = %s of the cap, %s the plain tree%s: %s"
      % (fmt(cap_mb), fmt(e1, 1), pct(e1, cap_mb),
         ratio(fps("dlfs1"), fps("plain")), device("dlfs1"),
         verdict(None if e1 is None else e1 >= 0.85 * cap_mb)))
    if ("dlfs1_alt", "c") in res:
        d = mbs("dlfs1_alt")
        w("  - with `pfs_io=%s`: %s MB/s = %s of the cap%s: %s"
          % (meta.get("pfs_io_other", "direct"), fmt(d, 1), pct(d, cap_mb),
             device("dlfs1_alt"),
             verdict(None if d is None else d >= 0.85 * cap_mb)))
    e2, loc = fps("dlfs2"), fps("local")
    w("- dlfs epoch 2 >= 0.9x the plain tree on local disk (the staged "
      "copy's read pass, without the copy): %s files/s vs %s = %s: %s"
      % (fmt(e2), fmt(loc), ratio(e2, loc),
         verdict(None if e2 is None or loc is None else e2 >= 0.9 * loc)))
    if e2 is not None and fps("staged") is not None:
        w("  - against staged including its copy: %s" % ratio(e2, fps("staged")))
    if ("dlfs2", "c") in reads and reads[("dlfs2", "c")].get("stats_after"):
        pb = tier(reads[("dlfs2", "c")], "tiers", "pfs", "bytes")
        w("- dlfs epoch 2 reads nothing from the PFS (`tiers.pfs.bytes` "
          "~0, at most 1%% of the containers): %s bytes: %s"
          % (fmt(pb), verdict(pb <= 0.01 * (dlc or 0))))
    if ltot.get("dlfs") and ltot.get("staged") and ltot["dlfs"][1] and \
            ltot["staged"][1]:
        dt, st = ltot["dlfs"][1], ltot["staged"][1]
        w("- PyTorch DataLoader, dlfs epochs 1+2 >= staged including "
          "staging (copy + 2 epochs on local disk): %s s vs %s s, %s: %s"
          % (fmt(dt, 1), fmt(st, 1), ratio(st, dt), verdict(dt <= st)))
    else:
        w("- PyTorch DataLoader, dlfs epochs 1+2 >= staged including "
          "staging: not measured")
    for x in cz_targets:
        w("- " + x)
    w("")
    with open(sys.argv[3], "w") as f:
        f.write("\n".join(out))


if __name__ == "__main__":
    main()
