#!/usr/bin/python3
"""The jobs of tools/bench/scale (not part of dlfs).

  run.py gen-tar OUT.tar COUNT PER_DIR SEED
      COUNT files of 512-2048 bytes (seeded), PER_DIR to a directory, as a
      tar written as a stream (nothing extracted to disk).
  run.py data-bytes DS
      The data bytes of dataset DS (its containers' data regions).
  run.py job --ranks N --mode sealed|python|unsealed --ds DS --pfs-run DIR
             --run DIR --dlfs BIN --pfs-sim BIN --loop /dev/loopK
             --threads T --reader BIN --pyreader PY
      One job of N ranks (see tools/bench/scale); prints one JSON row.
"""
import argparse
import io
import json
import os
import random
import shutil
import struct
import subprocess
import sys
import tarfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from benchlib import dlfs_stats  # noqa: E402

READY_S = 300     # longest wait for a job's ranks to be mounted and joined
WALK_S = 1800     # for a find of the whole tree
EPOCH_S = 3600



def launcher():
    """The MPI launcher and its options (tools/bench/lib.sh: bench_mpi)."""
    cmd = os.environ.get("BENCH_MPIRUN", "").split()
    if not cmd:
        raise SystemExit("BENCH_MPIRUN is not set: run tools/bench/scale, "
                         "which sets it from the MPI dlfs is built with")
    return cmd


def gen_tar(out, count, per_dir, seed):
    r = random.Random(seed)
    with tarfile.open(out, "w", format=tarfile.GNU_FORMAT) as tf:
        for i in range(count):
            n = r.randrange(512, 2049)
            ti = tarfile.TarInfo("d%05d/f%07d.bin" % (i // per_dir, i))
            ti.size = n
            ti.mtime = 1700000000
            tf.addfile(ti, io.BytesIO(r.randbytes(n)))


def data_bytes(ds):
    tot = 0
    for f in sorted(os.listdir(ds)):
        if f.endswith(".dlc"):
            with open(os.path.join(ds, f), "rb") as h:
                hdr = h.read(72)
            _cs, _off, size = struct.unpack_from("<QQQ", hdr, 40)
            tot += size
    return tot


def device(loop):
    """(read requests, bytes) of the loop device so far."""
    name = os.path.basename(loop)
    with open("/proc/diskstats") as f:
        for line in f:
            p = line.split()
            if p[2] == name:
                return int(p[3]), int(p[5]) * 512
    raise SystemExit("no %s in /proc/diskstats" % name)


def drop_caches():
    subprocess.run(["sync"], check=True)
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def rank_datasets(a, n):
    """Rank r's own dataset directory: a separate copy of the index (its
    own page cache), the containers hard-linked."""
    top = os.path.join(a.pfs_run, "n%d" % n)
    shutil.rmtree(top, ignore_errors=True)
    out = []
    for r in range(n):
        d = os.path.join(top, "ds%d.dlfs" % r)
        os.makedirs(d)
        for f in sorted(os.listdir(a.ds)):
            src, dst = os.path.join(a.ds, f), os.path.join(d, f)
            if f.endswith(".dlc"):
                os.link(src, dst)
            elif f == "index" or (f == "index.sum" and a.mode != "unsealed"):
                shutil.copyfile(src, dst)
        out.append(d)
    subprocess.run(["sync"], check=True)
    return out


def ready(mnt, n):
    try:
        with open(os.path.join(mnt, ".dlfs", "info")) as f:
            return ('"ranks": %d' % n) in f.read()
    except OSError:
        return False


def wait_settled(mnts, maxsec=120):
    """Until the NVMe tiers and read-ahead of every mount stop moving."""
    t0 = time.monotonic()
    last, since = None, t0
    while time.monotonic() - t0 < maxsec:
        key = []
        for m in mnts:
            s = dlfs_stats(m)
            key.append((s["tiers"]["nvme"]["written_chunks"],
                        s["prefetch"]["pending"], s["peer"]["served"]))
        if key != last:
            last, since = key, time.monotonic()
        elif time.monotonic() - since >= 1.0:
            return
        time.sleep(0.1)


def upper_edge(hist, q):
    """The upper edge (µs) of the latency bucket (powers of two from
    16 µs) that holds quantile q of hist."""
    want, acc = q * sum(hist), 0
    for i, v in enumerate(hist):
        acc += v
        if acc >= want:
            return 16 << i
    return None


def busy_loops(n):
    """n processes that keep a CPU each busy: a node whose cores are full
    of loader workers."""
    return [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(n)]


def job(a):
    n = a.ranks
    busy = busy_loops(2) if a.mode == "busy" else []
    tag = "%s-n%d" % (a.mode, n)
    dss = rank_datasets(a, n)
    mnts, nvs = [], []
    for r in range(n):
        m = os.path.join(a.run, tag, "mnt%d" % r)
        v = os.path.join(a.run, tag, "nv%d" % r)
        os.makedirs(m)
        mnts.append(m)
        nvs.append(v)
    rank_sh = os.path.join(a.run, "rank.sh")
    with open(rank_sh, "w") as f:
        f.write("#!/bin/sh\n# rank.sh TAGDIR DSTOP: one rank's dlfs\n"
                "R=${OMPI_COMM_WORLD_RANK:-$PMI_RANK}\n"
                'exec "%s" "$2/ds$R.dlfs" "$1/mnt$R" -f '
                '-o "cache_dir=$1/nv$R" >"$1/log$R" 2>&1\n' % a.dlfs)
    os.chmod(rank_sh, 0o755)
    drop_caches()
    row = {"kind": "job", "mode": a.mode, "ranks": n}
    dev0 = device(a.loop)
    t0 = time.monotonic()
    job = subprocess.Popen(
        [a.pfs_sim, "exec", "--"] + launcher() + ["-np", str(n), rank_sh,
         os.path.join(a.run, tag), os.path.dirname(dss[0])],
        stdin=subprocess.DEVNULL, stdout=open(os.path.join(a.run, tag, "mpirun.log"), "w"),
        stderr=subprocess.STDOUT)
    try:
        while not all(ready(m, n) for m in mnts):
            if job.poll() is not None:
                raise SystemExit("%s: the job ended before every rank was ready: %s"
                                 % (tag, open(os.path.join(a.run, tag, "mpirun.log")).read()[-2000:]))
            if time.monotonic() - t0 > READY_S:
                raise SystemExit("%s: not every rank ready after %d s" % (tag, READY_S))
            time.sleep(0.02)
        row["ready_s"] = time.monotonic() - t0
        dev1 = device(a.loop)
        row["mount_dev_reqs"], row["mount_dev_bytes"] = dev1[0] - dev0[0], dev1[1] - dev0[1]
        stats = [dlfs_stats(m) for m in mnts]
        row["index_pfs_bytes"] = sum(s["index"]["pfs_bytes"] for s in stats)
        row["index_sources"] = sorted(s["index"]["source"] for s in stats)
        row["index_seconds_max"] = max(s["index"]["seconds"] for s in stats)
        if a.mode != "python":
            # Every rank walks the whole tree at once: metadata only.
            t1 = time.monotonic()
            walks = [subprocess.Popen(["timeout", str(WALK_S), "find", m, "-type", "f"],
                                      stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
                     for m in mnts]
            counts = [len(w.communicate()[0].splitlines()) for w in walks]
            row["walk_s"] = time.monotonic() - t1
            row["walk_files"] = counts
            dev2 = device(a.loop)
            row["index_dev_reqs"] = dev2[0] - dev0[0]
            row["index_dev_bytes"] = dev2[1] - dev0[1]
        if a.mode != "unsealed":
            devb = device(a.loop)
            reader = ([a.reader] if a.mode in ("sealed", "busy")
                      else ["/usr/bin/python3", a.pyreader])
            t2 = time.monotonic()
            readers = [subprocess.Popen(
                [a.pfs_sim, "exec", "--", "timeout", str(EPOCH_S)] + reader +
                [m, os.path.join(m, ".dlfs", "epochs", "1", "files"), str(a.threads)],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE) for m in mnts]
            outs = [r.communicate() for r in readers]
            row["epoch_s"] = time.monotonic() - t2
            res = []
            for (o, e), r in zip(outs, readers):
                try:
                    res.append(json.loads(o))
                except ValueError:
                    raise SystemExit("%s: a reader failed (%d): %s" % (tag, r.returncode, e[-500:]))
            row["epoch_files"] = sum(x["files"] for x in res)
            row["epoch_bytes"] = sum(x["bytes"] for x in res)
            row["epoch_errors"] = sum(x["errors"] for x in res)
            wait_settled(mnts)
            deve = device(a.loop)
            row["epoch_dev_reqs"] = deve[0] - devb[0]
            row["epoch_dev_bytes"] = deve[1] - devb[1]
            stats = [dlfs_stats(m) for m in mnts]
            row["data_pfs_bytes"] = sum(s["tiers"]["pfs"]["bytes"] for s in stats)
            row["data_pfs_reads"] = sum(s["tiers"]["pfs"]["reads"] for s in stats)
            # The histogram's buckets are "at most 4K, 8K, ...": those up
            # to 512K are the reads of less than 1 MiB (but for any of
            # 512 KiB-1 MiB, which fall in "1M").
            small = 0
            for s in stats:
                for k, v in s["tiers"]["pfs"]["read_size_hist"].items():
                    if k.endswith("K"):
                        small += v
            row["data_pfs_reads_small"] = small
            hist = [0] * 20
            hits = lat = 0
            why = {}
            for s in stats:
                p = s["peer"]
                hits += p["hits"]
                lat += p["latency_us_avg"] * p["hits"]
                for i, v in enumerate(p.get("latency_us_hist", [])):
                    hist[i] += v
                for k, v in s["tiers"]["pfs"].get("why", {}).items():
                    why[k] = why.get(k, 0) + v
            row["peer_hits"] = hits
            row["peer_lat_mean_us"] = lat / hits if hits else None
            row["peer_lat_p50_us"] = upper_edge(hist, 0.50) if hits else None
            row["peer_lat_p99_us"] = upper_edge(hist, 0.99) if hits else None
            row["data_pfs_why"] = why
            for k in ("requests", "timeouts", "lost", "rerouted", "heartbeats_sent",
                      "mpi_lag_us_max"):
                vals = [s["peer"].get(k, 0) for s in stats]
                row["peer_" + k] = max(vals) if k.endswith("_max") else sum(vals)
    finally:
        for b in busy:
            b.kill()
            b.wait()
        for m in mnts:
            subprocess.run(["timeout", "30", "fusermount3", "-u", m],
                           stderr=subprocess.DEVNULL)
        try:
            job.wait(timeout=120)
        except subprocess.TimeoutExpired:
            job.kill()
        row["mpirun_rc"] = job.returncode
        shutil.rmtree(os.path.join(a.pfs_run, "n%d" % n), ignore_errors=True)
        shutil.rmtree(os.path.join(a.run, tag), ignore_errors=True)
    print(json.dumps(row), flush=True)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "gen-tar":
        gen_tar(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]))
        return
    if len(sys.argv) > 1 and sys.argv[1] == "data-bytes":
        print(data_bytes(sys.argv[2]))
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("cmd", choices=["job"])
    ap.add_argument("--ranks", type=int, required=True)
    ap.add_argument("--mode", choices=["sealed", "python", "unsealed", "busy"],
                    required=True)
    for k in ("ds", "pfs-run", "run", "dlfs", "pfs-sim", "loop", "reader", "pyreader"):
        ap.add_argument("--" + k, required=True)
    ap.add_argument("--threads", type=int, default=8)
    job(ap.parse_args())


if __name__ == "__main__":
    main()
