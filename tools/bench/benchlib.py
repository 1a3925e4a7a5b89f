"""Helpers shared by the benchmarks' Python parts (tools/bench/*.d/).

Each NAME.d/report.py and util.py imports this module with
sys.path.insert(0, <tools/bench>); nothing here runs on import.
"""
import json
import os


def load(meta_path, res_path):
    """The run's meta.tsv as a dict, and its results.jsonl as a list."""
    meta = {}
    with open(meta_path) as f:
        for line in f:
            k, _, v = line.rstrip("\n").partition("\t")
            meta[k] = v
    rows = []
    with open(res_path) as f:
        for line in f:
            line = line.strip()
            if line:
                rows.append(json.loads(line))
    return meta, rows


def fmt(x, nd=0):
    """x with thousands separators and nd decimals; None is "n/a"."""
    if x is None:
        return "n/a"
    return "{:,.{}f}".format(x, nd)


def ratio(a, b):
    """a / b as "1.23x", fewer decimals for large ratios."""
    if a is None or b is None or b == 0:
        return "n/a"
    x = a / b
    nd = 0 if x >= 100 else 1 if x >= 10 else 2
    return "{:.{}f}x".format(x, nd)


def verdict(ok, unknown="not measured"):
    """A target's verdict, bold."""
    if ok is None:
        return unknown
    return "**met**" if ok else "**missed**"


def walk_files(tree):
    """Every regular file under tree, relative, in sorted walk order."""
    out = []
    for dirpath, dirnames, filenames in os.walk(tree):
        dirnames.sort()
        rel = os.path.relpath(dirpath, tree)
        for n in sorted(filenames):
            p = os.path.join(dirpath, n)
            if os.path.isfile(p) and not os.path.islink(p):
                out.append(n if rel == "." else os.path.join(rel, n))
    return out


def dlfs_stats(mnt):
    """A dlfs mount's live counters (MNT/.dlfs/stats)."""
    with open(os.path.join(mnt, ".dlfs", "stats")) as f:
        return json.loads(f.read())
