"""gentree.py: where the benchmarks' generated trees put their files (a
module for tokens.py and volumes.py, not run on its own)."""
import os
import sys


def tree_args(prog):
    """DEST FILES PER_DIR SEED from the command line, checked; exits with
    prog's usage otherwise."""
    if len(sys.argv) != 5:
        sys.exit("usage: %s DEST FILES PER_DIR SEED" % prog)
    try:
        files, per_dir, seed = (int(x) for x in sys.argv[2:5])
    except ValueError:
        sys.exit("%s: FILES, PER_DIR and SEED must be integers" % prog)
    if files < 1 or per_dir < 1:
        sys.exit("%s: FILES and PER_DIR must be positive" % prog)
    return sys.argv[1], files, per_dir, seed


def tree_paths(dest, files, per_dir, dir_prefix, file_prefix):
    """(i, path) for files i = 0..files-1: DEST/<dir_prefix>NNN/
    <file_prefix>NNNNNNN.npy, per_dir a directory, each directory made
    before its first file. The widths grow with the counts (at least 3
    and 7 digits), so names sort in number order."""
    ndirs = (files + per_dir - 1) // per_dir
    dw = max(3, len(str(ndirs - 1)))
    fw = max(7, len(str(files - 1)))
    for i in range(files):
        d = os.path.join(dest, "%s%0*d" % (dir_prefix, dw, i // per_dir))
        if i % per_dir == 0:
            os.makedirs(d, exist_ok=True)
        yield i, os.path.join(d, "%s%0*d.npy" % (file_prefix, fw, i))
