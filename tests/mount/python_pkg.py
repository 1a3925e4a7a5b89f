"""python_pkg.py MNT SRC EMPTY_MNT NOVIEWS: import dlfs over a mount.

MNT mounts SRC (an ImageFolder tree, train/ and val/); EMPTY_MNT mounts
a dataset without files; NOVIEWS is a directory that looks like a mount
whose control directory has no epochs/ (as a dlfs without views would
serve). Checks:
1. import dlfs does not import torch; info() and stats() are the control files' JSON as dicts.
2. epoch_files(MNT, E) is the list .dlfs/epochs/E/files, line by line,
   and from start=K its lines K onwards; it reads the list a piece at a
   time (with a small piece, the list's file offset after the first path
   is short of the list's size).
3. tree(MNT, E, "train") + tree_order read by ImageFolder give the
   share's train samples in list order, each with its source's label.
4. A wrong root (missing, a file, a directory inside the mount, a plain
   directory), a dataset without views (EMPTY_MNT, NOVIEWS) and an epoch
   out of range each raise their dlfs error, with a message that names
   the way out.
"""
import os
import sys

import dlfs


def check(cond, what):
    if not cond:
        sys.exit("FAIL: " + what)


check("torch" not in sys.modules, "import dlfs imported torch")
mnt, src, empty, noviews = sys.argv[1:5]
E = 5


# 1. info and stats.
inf = dlfs.info(mnt)
check(isinstance(inf, dict), "info is a %s" % type(inf))
check(inf["mountpoint"] == os.path.abspath(mnt), "info mountpoint %r" % inf)
check(inf["ranks"] == 1 and inf["rank"] == 0, "rank %r" % inf)
n_src = sum(len(fs) for _, _, fs in os.walk(src))
check(inf["files"] == n_src, "info files %d, the source has %d"
      % (inf["files"], n_src))
st = dlfs.stats(mnt)
check(isinstance(st, dict) and st, "stats is %r" % (st,))

# 2. epoch_files is the list, streamed.
with open(os.path.join(mnt, ".dlfs", "epochs", str(E), "files"), "rb") as f:
    raw = f.read()
lines = [os.fsdecode(x) for x in raw.split(b"\n")[:-1]]
check(len(lines) == n_src, "the list has %d lines" % len(lines))
got = list(dlfs.epoch_files(mnt, E))
check(got == lines, "epoch_files(%d) differs from the list" % E)
check(list(dlfs.epoch_files(mnt, E, start=37)) == lines[37:],
      "epoch_files(start=37) is not lines 37 onwards")
check(list(dlfs.epoch_files(mnt, E + 1)) != lines,
      "epoch %d has epoch %d's order" % (E + 1, E))
check(sorted(got) == sorted(os.path.relpath(os.path.join(d, n), src)
                            for d, _, fs in os.walk(src) for n in fs),
      "the list is not the source's files")
dlfs._READ_SIZE = 512
gen = dlfs.epoch_files(mnt, E)
check(next(gen) == lines[0], "the first path")
fds = os.listdir("/proc/self/fd")
offs = []
for fd in fds:
    try:
        if os.readlink("/proc/self/fd/" + fd).endswith("/epochs/%d/files" % E):
            with open("/proc/self/fdinfo/" + fd) as f:
                offs.append(int(f.readline().split()[1]))
    except OSError:
        pass
check(len(offs) == 1, "the list is open %d times while it is read" % len(offs))
check(offs[0] < len(raw) // 2, "after one path, %d bytes of the %d-byte "
      "list were read: not a piece at a time" % (offs[0], len(raw)))
check([lines[0]] + list(gen) == lines, "epoch_files in small pieces")
dlfs._READ_SIZE = 1 << 20

# 3. The tree view and tree_order, through ImageFolder.
from torchvision.datasets import ImageFolder  # noqa: E402

tv = dlfs.tree(mnt, E, "train")
check(tv == os.path.join(mnt, ".dlfs", "epochs", str(E), "tree", "train"),
      "tree() is %s" % tv)
ds = ImageFolder(tv)
plain = ImageFolder(os.path.join(src, "train"))
want = [p for p in lines if p.startswith("train/")]
order = dlfs.tree_order(ds.samples)
check(len(order) == len(want), "tree_order: %d samples, the list's train/ "
      "has %d" % (len(order), len(want)))
for k, i in enumerate(order):
    path, label = ds.samples[i]
    check(dlfs.tree_position(path) == lines.index(want[k]),
          "tree sample %s is not at position %d" % (path, k))
    check(label == plain.class_to_idx[want[k].split("/")[1]],
          "tree sample %s: label %d, its source %s" % (path, label, want[k]))
    with open(path, "rb") as a, open(os.path.join(src, want[k]), "rb") as b:
        check(a.read() == b.read(), "tree sample %s is not %s"
              % (path, want[k]))


# 4. Errors.
def raises(exc, words, fn, *args, **kw):
    try:
        fn(*args, **kw)
    except exc as e:
        msg = str(e)
        for w in words:
            check(w in msg, "%s(%r): the message %r lacks %r"
                  % (fn.__name__, args, msg, w))
        check(isinstance(e, dlfs.Error), "%r is not a dlfs.Error" % e)
        return
    except Exception as e:
        sys.exit("FAIL: %s%r raised %r, want %s" % (fn.__name__, args, e,
                                                   exc.__name__))
    sys.exit("FAIL: %s%r raised nothing, want %s" % (fn.__name__, args,
                                                     exc.__name__))


missing = os.path.join(src, "nosuch")
raises(dlfs.NotMountedError, [missing, "no such directory"], dlfs.info,
       missing)
a_file = os.path.join(mnt, want[0])
raises(dlfs.NotMountedError, [a_file, "not a directory"], dlfs.stats, a_file)
inside = os.path.join(mnt, "train")
raises(dlfs.NotMountedError, [inside, "inside the dlfs mount at " + mnt,
                              "give the mount's root"],
       dlfs.epoch_files, inside, 0)
raises(dlfs.NotMountedError, [src, "not a dlfs mount", "ctl_dir=NAME"],
       dlfs.info, src)
raises(dlfs.NotMountedError, [mnt, "not a dlfs mount"], dlfs.info, mnt,
       ctl_dir=".other")
raises(dlfs.NoViewsError, [empty, "has no files", "views are empty"],
       dlfs.epoch_files, empty, 0)
raises(dlfs.NoViewsError, [noviews, "no epoch views"], dlfs.epoch_files,
       noviews, 0)
for bad in (-1, dlfs.MAX_EPOCH + 1, 10 ** 9):
    raises(dlfs.EpochRangeError, ["epoch %d is out of range" % bad,
                                  "0 to 65535"], dlfs.epoch_files, mnt, bad)
for bad in ("3", 2.0, None, True):
    raises(dlfs.EpochRangeError, ["not an integer"], dlfs.epoch_files,
           mnt, bad)
check(next(dlfs.epoch_files(mnt, dlfs.MAX_EPOCH)) in lines,
      "the last epoch's list")
try:
    dlfs.tree(mnt, E, "nosuchclass")
    sys.exit("FAIL: tree() of a missing directory")
except NotADirectoryError as e:
    check("nosuchclass" in str(e), "tree(): %s" % e)
print(len(lines))
