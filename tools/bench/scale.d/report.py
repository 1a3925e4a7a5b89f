#!/usr/bin/python3
"""The "## scale" section of RESULTS.md from one run of tools/bench/scale
(not part of dlfs).

  report.py META.tsv RESULTS.jsonl > section.md
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from benchlib import load, fmt, ratio, verdict  # noqa: E402

MB = 1e6


def main():
    meta, rows = load(sys.argv[1], sys.argv[2])
    ix = int(meta["index_bytes"])
    data = int(meta["data_bytes"])
    jobs = {(r["mode"], r["ranks"]): r for r in rows if r.get("kind") == "job"}
    ns = sorted({r["ranks"] for r in jobs.values()})
    out = []
    w = out.append
    w("## scale")
    w("")
    w("How the PFS load of one job grows with its number of nodes: N dlfs "
      "daemons, one MPI rank each, on one host against the simulated PFS "
      "(issue 24). Each rank has its own mountpoint, empty cache_dir and "
      "its own copy of the index file on the PFS (its own page cache, as a "
      "node has); the containers are shared. Ranks are oversubscribed on "
      "2 cores: byte and request counts are exact, times are not what N "
      "real nodes would see.")
    w("")
    w("- Run: %s, %s, revision %s." % (meta["date"], meta["machine"], meta["revision"]))
    w("- Reproduce: `%s` (as root; `--quick` for 1, 2, 4 ranks and 50,000 files)." % meta["command"])
    if meta.get("mpi"):
        w("- MPI: %s." % meta["mpi"])
    w("- Dataset: %s files of 0.5-2 KiB, 1,000 a directory; index %s MB, data %s MB. "
      "PFS cap %s IOPS, %s MB/s." % (fmt(int(meta["files"])), fmt(ix / MB, 1),
                                     fmt(data / MB, 1), meta["iops"],
                                     fmt(int(meta["bps"]) / MB)))
    w("- **sealed**: this dlfs (the index shared while the ranks join). "
      "**unsealed**: the baseline, the same dataset without `index.sum`, so "
      "every rank maps its index from the PFS, as dlfs did before.")
    w("")
    w("### The index: PFS reads for mount plus a `find` of the whole tree on every rank")
    w("")
    w("| N | sealed: PFS bytes | × index | requests | unsealed: PFS bytes | × index | requests | sealed vs unsealed |")
    w("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n in ns:
        s, u = jobs.get(("sealed", n)), jobs.get(("unsealed", n))
        if not s or not u:
            continue
        w("| %d | %s MB | %s | %s | %s MB | %s | %s | %s |" % (
            n, fmt(s["index_dev_bytes"] / MB, 1), ratio(s["index_dev_bytes"], ix),
            fmt(s["index_dev_reqs"]), fmt(u["index_dev_bytes"] / MB, 1),
            ratio(u["index_dev_bytes"], ix), fmt(u["index_dev_reqs"]),
            ratio(s["index_dev_bytes"], u["index_dev_bytes"])))
    w("")
    w("Counted at the PFS device (the loop device's reads, /proc/diskstats) "
      "from the job's start until every rank's walk ended; the walk reads "
      "no file data. The daemons' own count of index bytes they read "
      "(`index.pfs_bytes`, summed over the ranks) and where each rank's "
      "index came from:")
    w("")
    w("| N | index.pfs_bytes, sealed | sources |")
    w("|---:|---:|---|")
    for n in ns:
        s = jobs.get(("sealed", n))
        if s:
            src = {}
            for x in s["index_sources"]:
                src[x] = src.get(x, 0) + 1
            w("| %d | %s MB (%s) | %s |" % (
                n, fmt(s["index_pfs_bytes"] / MB, 1), ratio(s["index_pfs_bytes"], ix),
                ", ".join("%d %s" % (v, k) for k, v in sorted(src.items()))))
    w("")
    w("### Epoch 1: data, requests, times")
    w("")
    w("| N | ready, s | unsealed ready, s | walk, s | epoch 1 C, s | epoch 1 Python, s | data PFS bytes | × data | daemon PFS reads | reads ≤ 512 KiB | device requests | peer latency mean / p99 |")
    w("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n in ns:
        s, p = jobs.get(("sealed", n)), jobs.get(("python", n))
        u = jobs.get(("unsealed", n))
        if not s:
            continue
        lat = "n/a"
        if s.get("peer_lat_mean_us") is not None:
            lat = "%s µs / ≤ %s µs" % (fmt(s["peer_lat_mean_us"]), fmt(s["peer_lat_p99_us"]))
        w("| %d | %.2f | %s | %.1f | %.1f | %s | %s MB | %s | %s | %s | %s | %s |" % (
            n, s["ready_s"], "%.2f" % u["ready_s"] if u else "n/a", s["walk_s"],
            s["epoch_s"], "%.1f" % p["epoch_s"] if p else "n/a",
            fmt(s["data_pfs_bytes"] / MB, 1), ratio(s["data_pfs_bytes"], data),
            fmt(s["data_pfs_reads"]), fmt(s["data_pfs_reads_small"]),
            fmt(s["epoch_dev_reqs"]), lat))
    w("")
    w("Ready: from the launcher's start until every rank's `.dlfs/info` says "
      "it is one of N (the index shared, the dataset open); N=1 runs alone, "
      "without MPI (`-np 1` is no launch of several tasks), so N=2 "
      "is the first with MPI's start-up. Unsealed ready: the baseline, "
      "each rank mapping its index from the PFS. Data PFS bytes: "
      "`tiers.pfs.bytes` summed over the ranks after epoch 1 and the NVMe "
      "fill settled. Reads ≤ 512 KiB: the daemons' read-size histogram "
      "(its buckets cannot tell 512 KiB-1 MiB from 1 MiB). p99 is the upper "
      "edge of the latency bucket (powers of two from 16 µs) that holds it.")
    w("")
    busy_ns = [n for n in ns if ("busy", n) in jobs and ("sealed", n) in jobs]
    if busy_ns:
        w("### Busy nodes: the same epoch with both cores loaded (issue 43)")
        w("")
        w("| N | load | data PFS bytes | × data | daemon PFS reads | reads ≤ 512 KiB | "
          "why: home / miss / substitute / gone / error | peers gone | "
          "peer latency p50 / p99 | MPI thread's latest wake |")
        w("|---:|---|---:|---:|---:|---:|---|---:|---:|---:|")
        for n in busy_ns:
            for mode, cpu in (("sealed", "none"), ("busy", "2 busy loops")):
                r = jobs[(mode, n)]
                why = r.get("data_pfs_why", {})
                lat = "n/a"
                if r.get("peer_lat_p50_us") is not None:
                    lat = "≤ %s µs / ≤ %s µs" % (fmt(r["peer_lat_p50_us"]),
                                               fmt(r["peer_lat_p99_us"]))
                w("| %d | %s | %s MB | %s | %s | %s | %s | %s | %s | %s |" % (
                    n, cpu, fmt(r["data_pfs_bytes"] / MB, 1),
                    ratio(r["data_pfs_bytes"], data), fmt(r["data_pfs_reads"]),
                    fmt(r["data_pfs_reads_small"]),
                    " / ".join(fmt(why.get(k, 0)) for k in
                               ("home", "miss", "substitute", "gone", "error")),
                    fmt(r.get("peer_timeouts", 0) + r.get("peer_lost", 0)), lat,
                    "%s ms" % fmt(r.get("peer_mpi_lag_us_max", 0) / 1000, 1)))
        w("")
        w("Why: `tiers.pfs.why` summed over the ranks (home: the chunk's "
          "home read it; miss: read with no peer asked; substitute: for a "
          "gone home; gone: the job was ending; error: a peer's answer "
          "failed). Peers gone: ranks found gone by their silence or by "
          "MPI. The MPI thread's latest wake: how late, at worst, it woke "
          "from an idle wait on the busiest rank.")
        w("")
    w("### Goals (issue 24), in this run")
    w("")
    worst_ix = max((jobs[("sealed", n)]["index_dev_bytes"] / ix for n in ns
                    if ("sealed", n) in jobs), default=None)
    worst_data = max((jobs[("sealed", n)]["data_pfs_bytes"] / data for n in ns
                      if ("sealed", n) in jobs), default=None)
    mpi_ns = [n for n in ns if n > 1 and ("sealed", n) in jobs]
    ready = [jobs[("sealed", n)]["ready_s"] for n in mpi_ns]
    w("| goal | result | verdict |")
    w("|---|---|---|")
    w("| index bytes per job ≈ 1× the index at every N | at most %s | %s |" % (
        "%.2fx" % worst_ix if worst_ix is not None else "n/a",
        verdict(worst_ix is not None and worst_ix <= 1.1)))
    w("| data bytes ≈ 1× the dataset | at most %s | %s |" % (
        "%.2fx" % worst_data if worst_data is not None else "n/a",
        verdict(worst_data is not None and worst_data <= 1.1)))
    if busy_ns:
        worst_busy = max(jobs[("busy", n)]["data_pfs_bytes"] / data for n in busy_ns)
        w("| data bytes ≤ 1.1× the dataset with the cores busy (issue 43) | at most %.2fx | %s |" % (
            worst_busy, verdict(worst_busy <= 1.1)))
    w("| ready time flat in N | %s s at N=%d, %s s at N=%d (%s) | %s |" % (
        "%.2f" % ready[0] if ready else "n/a", mpi_ns[0] if mpi_ns else 0,
        "%.2f" % ready[-1] if ready else "n/a", mpi_ns[-1] if mpi_ns else 0,
        ratio(ready[-1], ready[0]) if ready else "n/a",
        "not judged here: %d ranks share 2 cores" % mpi_ns[-1] if mpi_ns else "n/a"))
    nf = int(meta["files"])
    problems = []
    for r in rows:
        if r.get("kind") != "job":
            continue
        what = "%s N=%d" % (r["mode"], r["ranks"])
        if r.get("mpirun_rc"):
            problems.append("%s: the MPI launcher exited with %s" % (what, r["mpirun_rc"]))
        if r.get("epoch_errors"):
            problems.append("%s: %d read errors" % (what, r["epoch_errors"]))
        if "epoch_files" in r and r["epoch_files"] != nf:
            problems.append("%s: epoch 1 read %d files of %d" % (what, r["epoch_files"], nf))
        bad = [c for c in r.get("walk_files", []) if c != nf]
        if bad:
            problems.append("%s: a walk found %d files of %d" % (what, bad[0], nf))
    w("")
    if problems:
        w("Problems seen: " + "; ".join(problems) + ".")
    else:
        w("Every walk found all %s files on every rank, and each epoch 1 read "
          "each file once over the ranks, without an error." % fmt(nf))
    print("\n".join(out))


if __name__ == "__main__":
    main()
