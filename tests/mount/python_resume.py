"""python_resume.py MODE MNT E K STATE RUN: ViewSampler's state across a
remount, and its errors. A sample is named by its label and the digest of
its pixels, so two runs compare by what the loader gave.

save:   reads epoch E of MNT/train through a DataLoader of 4 workers;
        after K samples (the workers have taken more by then) saves
        state_dict(consumed=K) to STATE, reads on to the end and writes
        the whole run's samples to RUN. Without workers, state_dict() by
        default counts the samples handed out (K after K).
load:   (after a remount) load_state_dict(STATE) in a new sampler, inside
        a torch.distributed group of one: len() is the rest, the loader
        (4 workers) reads the rest, which is RUN from K on, and
        state_dict(consumed=5) 5 samples in counts K + 5; set_epoch(E+1)
        then reads a whole epoch.
        Then the errors: STATE with another seed (as from a mount with
        -o seed=) raises ResumeError naming the seed and the way out, as
        do a state with a negative count and a count past what was handed
        out; a state past the share's end reads nothing (len 0); two
        gloo processes (world 2) over this mount of one rank each get
        RankMismatchError, and construct with check_distributed=False.
Prints the samples read.
"""
import hashlib
import json
import multiprocessing
import os
import sys
import tempfile

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader
from torchvision import transforms
from torchvision.datasets import ImageFolder

import dlfs
from dlfs.torch import ViewSampler

T = transforms.Compose([transforms.Resize((16, 16)), transforms.ToTensor()])


def check(cond, what):
    if not cond:
        sys.exit("FAIL: " + what)


def named(x, y):
    return "%d:%s" % (y, hashlib.sha1(x.numpy().tobytes()).hexdigest())


def loader_of(ds, sampler, workers=4):
    return DataLoader(ds, batch_size=None, sampler=sampler,
                      num_workers=workers)


def save(ds, mnt, e, k, state_path, run_path):
    sampler = ViewSampler(ds, mnt)
    sampler.set_epoch(e)
    run = []
    for x, y in loader_of(ds, sampler):
        run.append(named(x, y))
        if len(run) == k:
            state = sampler.state_dict(consumed=k)
            check(state["consumed"] == k and state["epoch"] == e,
                  "state_dict(consumed=%d): %r" % (k, state))
            with open(state_path, "w") as f:
                json.dump(state, f)
    check(len(run) == len(sampler) > k, "epoch %d: %d samples, len %d"
          % (e, len(run), len(sampler)))
    with open(run_path, "w") as f:
        json.dump(run, f)
    plain = ViewSampler(ds, mnt, epoch=e)
    for n, _ in enumerate(loader_of(ds, plain, workers=0), 1):
        if n == k:
            break
    check(plain.state_dict()["consumed"] == k, "without workers, after %d "
          "samples state_dict() says %r" % (k, plain.state_dict()))
    return len(run)


def load(ds, mnt, e, k, state_path, run_path):
    with open(state_path) as f:
        state = json.load(f)
    with open(run_path) as f:
        run = json.load(f)
    with tempfile.NamedTemporaryFile() as rdv:
        dist.init_process_group("gloo", init_method="file://" + rdv.name,
                                rank=0, world_size=1)
    sampler = ViewSampler(ds, mnt)
    sampler.load_state_dict(state)
    check(sampler.epoch == e, "load_state_dict: epoch %d" % sampler.epoch)
    check(len(sampler) == len(run) - k, "after load_state_dict, len %d, "
          "want %d" % (len(sampler), len(run) - k))
    rest = []
    for x, y in loader_of(ds, sampler):
        rest.append(named(x, y))
        if len(rest) == 5:
            again = sampler.state_dict(consumed=5)
            check(again["consumed"] == k + 5, "5 samples into the resumed "
                  "pass, state_dict(consumed=5) says %r" % again)
    check(rest == run[k:], "resumed at %d, %d samples read, the "
          "uninterrupted run's rest is %d; first difference at %s"
          % (k, len(rest), len(run) - k,
             next((i for i, (a, b) in enumerate(zip(rest, run[k:]))
                   if a != b), min(len(rest), len(run) - k))))
    sampler.set_epoch(e + 1)
    n = sum(1 for _ in sampler)
    check(n == len(run), "epoch %d after a resumed epoch: %d samples, want "
          "%d" % (e + 1, n, len(run)))
    dist.destroy_process_group()
    errors(ds, mnt, e, state)
    return len(rest)


def raises(exc, words, fn, *args):
    try:
        fn(*args)
    except exc as err:
        for w in words:
            check(w in str(err), "%r lacks %r" % (str(err), w))
        return
    sys.exit("FAIL: %s%r raised nothing, want %s" % (fn.__name__, args,
                                                     exc.__name__))


def gloo_rank(rank, rdv, ds, mnt, out):
    """One of two gloo processes: puts one line, empty when all is well."""
    dist.init_process_group("gloo", init_method="file://" + rdv, rank=rank,
                            world_size=2)
    bad = []
    try:
        ViewSampler(ds, mnt)
        bad.append("rank %d: no error" % rank)
    except dlfs.RankMismatchError as err:
        want = ["rank 0 of 1", "rank %d of 2" % rank, mnt,
                "one dlfs daemon per training process",
                "check_distributed=False"]
        lacks = [w for w in want if w not in str(err)]
        if lacks:
            bad.append("rank %d: %r lacks %r" % (rank, str(err), lacks))
    try:
        ViewSampler(ds, mnt, check_distributed=False)
    except dlfs.Error as err:
        bad.append("rank %d: check_distributed=False: %s" % (rank, err))
    dist.destroy_process_group()
    out.put("; ".join(bad))


def errors(ds, mnt, e, state):
    sampler = ViewSampler(ds, mnt)
    state = dict(state, seed=state["seed"] + 1)
    raises(dlfs.ResumeError, ["seed=", "resume at the next epoch",
                              "set_epoch(%d)" % (e + 1)],
           sampler.load_state_dict, state)
    bad = dict(state, consumed=-1)
    bad.pop("seed")
    raises(dlfs.ResumeError, ["consumed=-1"], sampler.load_state_dict, bad)
    raises(ValueError, ["has handed out 0 samples"], sampler.state_dict, 1)
    past = dict(state, seed=state["seed"] - 1, consumed=10 ** 6)
    sampler.load_state_dict(past)
    check(len(sampler) == 0 and not list(sampler), "a state past the end: "
          "len %d" % len(sampler))
    raises(dlfs.EpochRangeError, ["out of range"], sampler.set_epoch, 65536)

    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    with tempfile.TemporaryDirectory() as d:
        rdv = os.path.join(d, "rdv")
        procs = [ctx.Process(target=gloo_rank, args=(r, rdv, ds, mnt, out))
                 for r in (0, 1)]
        for p in procs:
            p.start()
        msgs = [out.get(timeout=120) for _ in procs]
        for p in procs:
            p.join(120)
            check(p.exitcode == 0, "a gloo process exited %s" % p.exitcode)
    check(not any(msgs), "; ".join(m for m in msgs if m))


def main():
    mode, mnt, e, k, state_path = sys.argv[1:6]
    e, k = int(e), int(k)
    ds = ImageFolder(os.path.join(mnt, "train"), transform=T)
    if mode == "save":
        print(save(ds, mnt, e, k, state_path, sys.argv[6]))
    else:
        print(load(ds, mnt, e, k, state_path, sys.argv[6]))


if __name__ == "__main__":
    torch.set_num_threads(1)
    main()
