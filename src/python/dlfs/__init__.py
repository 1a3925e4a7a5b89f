"""dlfs: a mounted dataset's control files from Python.

A dlfs mount (or a dlfs-run prefix) has a hidden control directory,
ROOT/.dlfs, that readdir never lists: `info` and `stats` as JSON, and for
every epoch E from 0 to 65535 the views of this node's share of that
epoch's order: `epochs/E/files` (one path a line, relative to ROOT),
`epochs/E/samples/` and `epochs/E/tree/`. This package reads them with
the standard library alone; dlfs.torch adds a PyTorch sampler and imports
torch only when it is imported. See dlfs-python(7).

Every function takes the mount's root (the MOUNTPOINT given to dlfs, or a
dlfs-run prefix) and, for a mount made with -o ctl_dir=NAME, ctl_dir=NAME.
Errors are subclasses of dlfs.Error, each with a message that says what
to do about it.
"""

import errno
import json
import operator
import os

__all__ = [
    "Error", "NotMountedError", "NoViewsError", "EpochRangeError",
    "RankMismatchError", "ResumeError", "MAX_EPOCH", "CTL_DIR",
    "info", "stats", "epoch_files", "epoch_path", "tree", "tree_order",
    "tree_position",
]

#: The last epoch a view exists for (epochs are 0 .. MAX_EPOCH).
MAX_EPOCH = 65535
#: The control directory's name unless the mount says -o ctl_dir=NAME.
CTL_DIR = ".dlfs"
# Bytes of a list read at a time: a few FUSE requests, a few thousand paths.
_READ_SIZE = 1 << 20


class Error(Exception):
    """The base of this package's errors."""


class NotMountedError(Error):
    """The root given is not the root of a dlfs mount or dlfs-run prefix."""


class NoViewsError(Error):
    """The mount has no epoch views, or they are empty."""


class EpochRangeError(Error, ValueError):
    """An epoch that is not an integer from 0 to MAX_EPOCH."""


class RankMismatchError(Error):
    """The mount's rank or number of ranks is not torch.distributed's."""


class ResumeError(Error):
    """A saved state that cannot resume on this mount."""


def _ctl(root, ctl_dir):
    return os.path.join(os.fspath(root), ctl_dir or CTL_DIR)


def _mount_above(path, ctl_dir):
    """The nearest directory above path that holds a dlfs control
    directory, or None."""
    here = os.path.abspath(path)
    while True:
        up = os.path.dirname(here)
        if up == here:
            return None
        here = up
        if os.path.isfile(os.path.join(here, ctl_dir or CTL_DIR, "info")):
            return here


def _not_mounted(root, ctl_dir):
    root = os.fspath(root)
    name = ctl_dir or CTL_DIR
    if not os.path.exists(root):
        return NotMountedError(
            "%s: no such directory: give the mount point of a dlfs mount "
            "(dlfs DATASET MOUNTPOINT) or a dlfs-run prefix" % root)
    if not os.path.isdir(root):
        return NotMountedError(
            "%s: not a directory: give the mount point of a dlfs mount, "
            "not a file in it" % root)
    above = _mount_above(root, ctl_dir)
    if above is not None:
        return NotMountedError(
            "%s is a directory inside the dlfs mount at %s: give the "
            "mount's root, %s" % (root, above, above))
    hint = "" if ctl_dir else (
        "; if it was mounted with -o ctl_dir=NAME, pass ctl_dir=NAME")
    return NotMountedError(
        "%s is not a dlfs mount: it has no %s/info (is the daemon "
        "running? mount a dataset with `dlfs DATASET %s`)%s"
        % (root, name, root, hint))


def _read_json(root, ctl_dir, what):
    path = os.path.join(_ctl(root, ctl_dir), what)
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        raise _not_mounted(root, ctl_dir) from None
    except NotADirectoryError:
        raise _not_mounted(root, ctl_dir) from None
    except OSError as e:
        raise _os_error(path, e, os.fspath(root)) from e
    # Paths that are not UTF-8 come as the lone surrogates that
    # surrogateescape gives their bytes, so os.fsencode gives them back.
    try:
        return json.loads(raw.decode("utf-8", "surrogateescape"))
    except ValueError as e:
        raise Error("%s: not the JSON a dlfs daemon writes (%s): is this "
                    "a dlfs mount?" % (path, e)) from e


def _os_error(path, e, root):
    if e.errno == errno.ENOTCONN:
        return Error("%s: %s: the dlfs daemon of the mount at %s is gone: "
                     "unmount it (fusermount3 -u %s) and mount the dataset "
                     "again" % (path, e.strerror, root, root))
    return Error("%s: %s" % (path, e.strerror or e))


def info(root, ctl_dir=None):
    """The dataset's metadata and the epoch orders' settings
    (ROOT/.dlfs/info) as a dict: path, mountpoint, dataset_id, files,
    chunk_size, ..., shuffle, seed, seed_from, shuffle_window, rank,
    ranks. Raises NotMountedError when root is not a dlfs mount."""
    return _read_json(root, ctl_dir, "info")


def stats(root, ctl_dir=None):
    """The mount's live counters (ROOT/.dlfs/stats) as a dict, read
    afresh at each call. Raises NotMountedError when root is not a dlfs
    mount."""
    return _read_json(root, ctl_dir, "stats")


def _check_epoch(epoch):
    try:
        if isinstance(epoch, bool):
            raise TypeError
        epoch = operator.index(epoch)
    except TypeError:
        raise EpochRangeError(
            "epoch %r is not an integer: epochs are numbered 0 to %d"
            % (epoch, MAX_EPOCH)) from None
    if epoch < 0 or epoch > MAX_EPOCH:
        raise EpochRangeError(
            "epoch %d is out of range: a mount has views of epochs 0 to "
            "%d (a run of more epochs can use epoch %% %d)"
            % (epoch, MAX_EPOCH, MAX_EPOCH + 1))
    return epoch


def _views_info(root, ctl_dir):
    """info(root), once it is known that the mount has epoch views with
    files in them."""
    d = info(root, ctl_dir)
    if "shuffle" not in d or not os.path.isdir(
            os.path.join(_ctl(root, ctl_dir), "epochs")):
        raise NoViewsError(
            "%s: this mount has no epoch views (no %s/epochs): it is "
            "served by a dlfs without them; mount the dataset with this "
            "version's dlfs" % (os.fspath(root), ctl_dir or CTL_DIR))
    if not d.get("files"):
        raise NoViewsError(
            "%s: the dataset %s has no files, so its epoch views are "
            "empty: mount a dataset packed from a tree with files"
            % (os.fspath(root), d.get("path", "?")))
    return d


def epoch_path(root, epoch, view="files", ctl_dir=None):
    """The path of a view of epoch (files, samples or tree), after checking
    that root is a mount with views and that epoch is in range."""
    if view not in ("files", "samples", "tree"):
        raise ValueError("view %r: one of files, samples, tree" % (view,))
    epoch = _check_epoch(epoch)
    _views_info(root, ctl_dir)
    return os.path.join(_ctl(root, ctl_dir), "epochs", str(epoch), view)


def epoch_files(root, epoch, start=0, ctl_dir=None):
    """Yield this node's share of epoch, one path (relative to root, a
    str that os.fsencode turns back into the name's bytes) at a time, in
    reading order, from position start (0: the first).

    The list is read in pieces as it is consumed, never whole: a 10
    million file share costs the memory of one piece. Raises
    NotMountedError, NoViewsError or EpochRangeError before the first
    path, and Error if the mount goes away while the list is read."""
    path = epoch_path(root, epoch, "files", ctl_dir)
    if start < 0:
        raise ValueError("start %d: a position counts from 0" % start)
    return _stream(path, start, os.fspath(root))


def _stream(path, start, root):
    try:
        f = open(path, "rb", buffering=_READ_SIZE)
    except OSError as e:
        raise _os_error(path, e, root) from e
    with f:
        pos = 0
        try:
            for line in f:
                if pos >= start:
                    yield os.fsdecode(line[:-1] if line.endswith(b"\n")
                                      else line)
                pos += 1
        except OSError as e:
            raise _os_error("%s, after %d paths" % (path, pos), e,
                            root) from e


def tree(root, epoch, *parts, ctl_dir=None):
    """The tree view of epoch, or a directory in it: the share's samples
    in their own directories, each named by its position in the share
    (tree/train/cat/000042.jpg), for loaders that take labels from
    directories (torchvision's ImageFolder). Pair it with tree_order:

        ds = ImageFolder(dlfs.tree(root, e, "train"))
        loader = DataLoader(ds, sampler=dlfs.tree_order(ds.samples))

    Raises NotADirectoryError naming the directory when the dataset has
    no such directory."""
    path = os.path.join(epoch_path(root, epoch, "tree", ctl_dir), *parts)
    if not os.path.isdir(path):
        raise NotADirectoryError(
            "%s: no such directory in the tree view: the dataset has no "
            "directory %s" % (path, os.path.join(*parts) if parts else "."))
    return path


def tree_position(path):
    """The position in the share of a sample of a tree (or samples/)
    view, from its name (000042.jpg -> 42)."""
    name = os.path.basename(os.fspath(path))
    digits = name.split(".", 1)[0]
    if not digits.isdigit():
        raise ValueError("%s: not a sample of an epoch view (its name is "
                         "its position, 000042.jpg)" % path)
    return int(digits)


def tree_order(samples):
    """The indices of samples (paths, or tuples whose first item is a path,
    such as ImageFolder's .samples) in the order of the view they are in:
    a list to give a DataLoader as its sampler."""
    def pos(i):
        s = samples[i]
        return tree_position(s[0] if isinstance(s, (tuple, list)) else s)
    return sorted(range(len(samples)), key=pos)
