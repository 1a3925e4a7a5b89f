"""python_ranks.py MNT0 MNT1 SRC E: two torch.distributed (gloo) processes,
rank r over MNTr, rank r of a two-rank dlfs job.

Each builds ImageFolder(MNTr/train) and a ViewSampler at epoch E, reads
its samples through a DataLoader of 2 workers (labels and pixels against
SRC), and the two gather their lists: they are disjoint, together they
are every train file, and each is its mount's list in order. Rank 0 over
rank 1's mount is refused (RankMismatchError). Prints the samples read.
"""
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

T = transforms.ToTensor()


def rank_main(r, mnts, src, e, rdv, out):
    """Puts (r, problems or "", the samples read), also when it fails."""
    bad, got = [], []
    try:
        check_rank(r, mnts, src, e, rdv, bad, got)
    except Exception as err:
        bad.append("rank %d: %r" % (r, err))
    out.put((r, "; ".join(bad), len(got)))


def check_rank(r, mnts, src, e, rdv, bad, got):
    dist.init_process_group("gloo", init_method="file://" + rdv, rank=r,
                            world_size=2)
    mnt = mnts[r]
    ds = ImageFolder(os.path.join(mnt, "train"), transform=T)
    plain = ImageFolder(os.path.join(src, "train"))
    sampler = ViewSampler(ds, mnt)
    sampler.set_epoch(e)
    loader = DataLoader(ds, batch_size=None, sampler=sampler, num_workers=2)
    want = [p for p in dlfs.epoch_files(mnt, e) if p.startswith("train/")]
    for k, (x, y) in enumerate(loader):
        p = want[k]
        got.append(p)
        if y != plain.class_to_idx[p.split("/")[1]] or not torch.equal(
                x, T(plain.loader(os.path.join(src, p)))):
            bad.append("rank %d sample %d (%s): label or pixels differ"
                       % (r, k, p))
    if got != want:
        bad.append("rank %d read %d samples, not its list of %d in order"
                   % (r, len(got), len(want)))
    both = [None, None]
    dist.all_gather_object(both, got)
    if r == 0:
        a, b = set(both[0]), set(both[1])
        every = {os.path.relpath(os.path.join(d, f), src)
                 for d, _, fs in os.walk(os.path.join(src, "train"))
                 for f in fs}
        if a & b:
            bad.append("the ranks share %d samples" % len(a & b))
        if a | b != every or not a or not b:
            bad.append("the ranks read %d + %d samples of %d"
                       % (len(a), len(b), len(every)))
        try:
            ViewSampler(ImageFolder(os.path.join(mnts[1], "train")), mnts[1])
            bad.append("rank 0 over rank 1's mount: no error")
        except dlfs.RankMismatchError as err:
            if "rank 1 of 2" not in str(err) or "rank 0 of 2" not in str(err):
                bad.append("rank 0 over rank 1's mount: %s" % err)
    dist.destroy_process_group()


def main():
    mnts, src, e = sys.argv[1:3], sys.argv[3], int(sys.argv[4])
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    with tempfile.TemporaryDirectory() as d:
        rdv = os.path.join(d, "rdv")
        procs = [ctx.Process(target=rank_main,
                             args=(r, mnts, src, e, rdv, out))
                 for r in (0, 1)]
        for p in procs:
            p.start()
        res = [out.get(timeout=300) for _ in procs]
        for p in procs:
            p.join(120)
    problems = [m for _, m, _ in res if m]
    problems += ["rank exited %s" % p.exitcode for p in procs if p.exitcode]
    if problems:
        sys.exit("FAIL: " + "; ".join(problems))
    print(sum(n for _, _, n in res))


if __name__ == "__main__":
    torch.set_num_threads(1)
    main()
