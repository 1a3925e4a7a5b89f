"""dlfs.torch: a PyTorch sampler that reads a map-style dataset in the
order of a dlfs mount's epoch views. Importing it imports torch.

    ds = torchvision.datasets.ImageFolder("/tmp/ds/train", transform=t)
    sampler = dlfs.torch.ViewSampler(ds, "/tmp/ds")
    loader = DataLoader(ds, batch_size=256, sampler=sampler, num_workers=8)
    for epoch in range(start, epochs):
        sampler.set_epoch(epoch)
        for step, batch in enumerate(loader):
            ...
            save(sampler.state_dict(consumed=(step + 1) * 256))

See dlfs-python(7).
"""

import os

import torch.distributed
from torch.utils.data import Sampler

from . import (CTL_DIR, Error, RankMismatchError, ResumeError,
               _check_epoch, _views_info, epoch_files)

__all__ = ["ViewSampler"]

# What fixes an epoch's share (dlfs(1), "Resuming an epoch"): a saved
# position means the same samples only where these are the same.
_ORDER_KEYS = ("dataset_id", "shuffle", "seed", "shuffle_window", "rank",
               "ranks")


def _sample_paths(dataset, paths):
    """index -> path for the dataset: paths (a sequence, a callable or an
    attribute's name), else the dataset's .samples (torchvision's
    ImageFolder and DatasetFolder: (path, class) pairs)."""
    if isinstance(paths, str):
        if not hasattr(dataset, paths):
            raise TypeError("ViewSampler: the dataset (%s) has no attribute "
                            "%r to take paths from"
                            % (type(dataset).__name__, paths))
        paths = getattr(dataset, paths)
    elif paths is None:
        paths = getattr(dataset, "samples", None)
        if paths is None:
            raise TypeError(
                "ViewSampler: the dataset (%s) has no .samples, so its "
                "files are unknown: pass paths=, a sequence of its paths by "
                "index, a callable index -> path, or the name of the "
                "attribute that holds them" % type(dataset).__name__)
    if callable(paths):
        get = paths
    else:
        def get(i):
            return paths[i]

    def path_of(i):
        p = get(i)
        return p[0] if isinstance(p, (tuple, list)) else p
    return path_of


class _Relative:
    """A sample's path relative to the mount root, as the lists spell it;
    a directory is resolved (realpath) once, only when the path does not
    start with the root as given or resolved."""

    def __init__(self, root, ctl_dir):
        self.roots = [os.path.abspath(root)]
        real = os.path.realpath(root)
        if real != self.roots[0]:
            self.roots.append(real)
        self.real = real
        self.views = (ctl_dir or CTL_DIR) + os.sep
        self.dirs = {}

    def __call__(self, path):
        p = os.path.abspath(os.fspath(path))
        for r in self.roots:
            if p.startswith(r + os.sep):
                return p[len(r) + 1:]
        d, name = os.path.split(p)
        rd = self.dirs.get(d)
        if rd is None:
            real = os.path.realpath(d)
            rd = (real[len(self.real) + 1:] + os.sep
                  if real.startswith(self.real + os.sep)
                  else "" if real == self.real else False)
            self.dirs[d] = rd
        return None if rd is False else rd + name


def _index_of(dataset, root, paths, ctl_dir):
    """{path relative to root: index} over the dataset (a list of indices
    for a path the dataset holds more than once)."""
    path_of = _sample_paths(dataset, paths)
    rel = _Relative(root, ctl_dir)
    index = {}
    for i in range(len(dataset)):
        p = path_of(i)
        r = rel(p)
        if r is None:
            raise Error(
                "ViewSampler: sample %d of the dataset (%s) is not under the "
                "mount root %s: build the dataset over the mount's paths"
                % (i, p, root))
        if r.startswith(rel.views):
            raise Error(
                "ViewSampler: sample %d (%s) is in the mount's control "
                "directory: build the dataset over the plain paths (%s/...), "
                "or, for a dataset over a tree view, sample it with "
                "dlfs.tree_order(dataset.samples)" % (i, p, root))
        had = index.setdefault(r, i)
        if had != i:
            index[r] = (had if isinstance(had, list) else [had]) + [i]
    return index


def _check_distributed(root, rank, ranks):
    if not (torch.distributed.is_available() and
            torch.distributed.is_initialized()):
        return
    world = torch.distributed.get_world_size()
    me = torch.distributed.get_rank()
    if (me, world) != (rank, ranks):
        raise RankMismatchError(
            "the dlfs mount at %s is rank %d of %d (its daemons' MPI job), "
            "but this process is rank %d of %d in torch.distributed: each "
            "training process reads its rank's share of every epoch, so "
            "start one dlfs daemon per training process, in one MPI job of "
            "%d tasks placed as the training's ranks are (srun or mpirun "
            "with the training's layout); or pass check_distributed=False "
            "to read this mount's share as it is"
            % (root, rank, ranks, me, world, world))


class ViewSampler(Sampler):
    """Yields the indices of a map-style dataset in the order of this
    rank's share of an epoch (ROOT/.dlfs/epochs/E/files).

    dataset: a map-style dataset over the mount's plain paths (not a view's):
        torchvision's ImageFolder or DatasetFolder (their .samples), or any
        dataset, with paths= saying where its paths are.
    root: the mount point (or dlfs-run prefix) of the dataset's mount.
    epoch: the first epoch (0); set_epoch(e) moves to another.
    paths: index -> path: a sequence, a callable or an attribute's name.
    ctl_dir: the control directory's name, for a mount with -o ctl_dir.
    check_distributed: when torch.distributed is initialised, its rank and
        world size must be the mount's (RankMismatchError otherwise).

    Samples whose files are not in this rank's share are not yielded, nor
    are files of the mount that the dataset lacks. The lists are read as
    they are consumed; the sampler keeps a dict of the dataset's paths.
    """

    def __init__(self, dataset, root, epoch=0, *, paths=None, ctl_dir=None,
                 check_distributed=True):
        # Sampler.__init__ does nothing, and its signature changed
        # between torch versions: it is not called.
        self.root = os.fspath(root)
        self.ctl_dir = ctl_dir
        self.check_distributed = check_distributed
        d = _views_info(self.root, ctl_dir)
        self.rank, self.ranks = int(d.get("rank", 0)), int(d.get("ranks", 1))
        self._order = {k: d.get(k) for k in _ORDER_KEYS}
        if check_distributed:
            _check_distributed(self.root, self.rank, self.ranks)
        self.epoch = _check_epoch(epoch)
        self._index = _index_of(dataset, self.root, paths, ctl_dir)
        self._n = len(dataset)
        self._skip = 0     # samples of self.epoch the next pass skips
        self._base = 0     # those the current (or last) pass skipped
        self._handed = 0   # samples the current pass has handed out
        self._len = None   # (epoch, samples of the share in the dataset)

    def set_epoch(self, epoch):
        """Read epoch next (its view .dlfs/epochs/<epoch>). A state loaded
        for this epoch stays; for another it is dropped."""
        epoch = _check_epoch(epoch)
        if epoch != self.epoch:
            self.epoch, self._skip, self._base, self._handed = epoch, 0, 0, 0

    def _hits(self, epoch):
        for rel in epoch_files(self.root, epoch, ctl_dir=self.ctl_dir):
            hit = self._index.get(rel)
            if hit is None:
                continue
            if isinstance(hit, list):
                yield from hit
            else:
                yield hit

    def __iter__(self):
        if self.check_distributed:
            _check_distributed(self.root, self.rank, self.ranks)
        epoch, skip = self.epoch, self._skip
        self._skip, self._base, self._handed = 0, skip, 0
        for k, i in enumerate(self._hits(epoch)):
            if k < skip:
                continue
            self._handed += 1
            yield i

    def __len__(self):
        """The samples the next iteration yields: the dataset's samples in
        this rank's share (counted once an epoch, from the list), less
        those a loaded state skips."""
        if self._len is None or self._len[0] != self.epoch:
            self._len = (self.epoch, sum(1 for _ in self._hits(self.epoch)))
        return max(self._len[1] - self._skip, 0)

    def state_dict(self, consumed=None):
        """Where to resume: the epoch and how many of its samples are done
        (state["consumed"], those a resumed pass skipped included).

        consumed: the samples of the current pass the training is done
            with, such as (step + 1) * batch_size. By default, every
            sample this pass has handed out, which is exact with
            num_workers=0; a DataLoader with workers takes samples ahead
            of the training (prefetch_factor batches a worker), so pass
            the count the training loop has seen."""
        if consumed is None:
            consumed = self._handed
        consumed = int(consumed)
        if consumed < 0 or consumed > self._handed:
            raise ValueError(
                "consumed=%d: this pass over epoch %d has handed out %d "
                "samples" % (consumed, self.epoch, self._handed))
        state = {"epoch": self.epoch, "consumed": self._base + consumed,
                 "dataset_len": self._n}
        state.update(self._order)
        return state

    def load_state_dict(self, state):
        """Resume: the next iteration reads epoch state["epoch"] from its
        sample state["consumed"]. Raises ResumeError when this mount's
        order of the epoch is not the saved one (another seed, shuffle,
        dataset or number of ranks), since the count would then name
        other samples."""
        d = _views_info(self.root, self.ctl_dir)
        now = {k: d.get(k) for k in _ORDER_KEYS}
        now["dataset_len"] = self._n
        for k in _ORDER_KEYS + ("dataset_len",):
            if k in state and state[k] != now[k]:
                raise ResumeError(
                    "cannot resume epoch %s at sample %s: the saved state "
                    "has %s=%r, this mount and dataset %r, so the epoch's "
                    "order or share differs: resume at the next epoch "
                    "(set_epoch(%s)), or mount with the saved seed and "
                    "shuffle options on as many nodes"
                    % (state.get("epoch"), state.get("consumed"), k,
                       state[k], now[k], state.get("epoch", 0) + 1))
        epoch = _check_epoch(state["epoch"])
        consumed = int(state["consumed"])
        if consumed < 0:
            raise ResumeError("consumed=%d: a count of samples is never "
                              "negative" % consumed)
        self._order = {k: now[k] for k in _ORDER_KEYS}
        self.epoch, self._skip, self._base, self._handed = (
            epoch, consumed, consumed, 0)
