#!/usr/bin/python3
"""preload_mp.py SRC P
Every regular file under SRC is read through P (the same tree, served
through libdlfs-preload.so) by a Pool(4) of each start method, fork, spawn
and forkserver (the children keep LD_PRELOAD), and its SHA-256 compared
with the source's. Then an fd opened before fork reads the right bytes in
the child and, after the child is gone, in the parent. Exit 1 on any
difference.
"""
import hashlib, multiprocessing as mp, os, sys
src, p = sys.argv[1], sys.argv[2]
rels = sorted(os.path.relpath(os.path.join(d, n), src)
              for d, _, fs in os.walk(src) for n in fs
              if not os.path.islink(os.path.join(d, n)))
def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()
def job(rel):
    return rel, digest(os.path.join(p, rel))
if __name__ == "__main__":
    want = {r: digest(os.path.join(src, r)) for r in rels}
    for method in ("fork", "spawn", "forkserver"):
        with mp.get_context(method).Pool(4) as pool:
            got = dict(pool.map(job, rels, chunksize=7))
        bad = [r for r in rels if got.get(r) != want[r]]
        if bad:
            sys.exit("%s: %d files differ, e.g. %s" % (method, len(bad), bad[:3]))
    # An fd opened before fork reads in the child, and after the child
    # has gone, in the parent.
    big = max(rels, key=lambda r: os.path.getsize(os.path.join(src, r)))
    fd = os.open(os.path.join(p, big), os.O_RDONLY)
    pid = os.fork()
    if pid == 0:
        ok = os.pread(fd, 1 << 20, 0) == open(os.path.join(src, big), "rb").read(1 << 20)
        os._exit(0 if ok else 1)
    _, st = os.waitpid(pid, 0)
    if st != 0:
        sys.exit("the forked child read wrong bytes of an inherited fd")
    if os.read(fd, 100) != open(os.path.join(src, big), "rb").read(100):
        sys.exit("the parent's fd after fork reads wrong bytes")
    os.close(fd)
    print("fork, spawn, forkserver: %d files each" % len(rels))
    # subprocess (vfork, then exec) closes and dups descriptors in the
    # child, in the parent's memory: the parent's dataset fd must still be
    # known, and read, afterwards.
    import subprocess
    fd = os.open(os.path.join(p, big), os.O_RDONLY)
    for _ in range(3):
        subprocess.run(["true"], check=True)
        subprocess.run(["true"], check=True, pass_fds=[fd])
    if os.pread(fd, 4096, 0) != open(os.path.join(src, big), "rb").read(4096):
        sys.exit("a dataset fd reads wrong bytes after subprocess")
    st = os.fstat(fd)
    if st.st_size != os.path.getsize(os.path.join(src, big)):
        sys.exit("a dataset fd's fstat is wrong after subprocess")
    os.close(fd)
    # A shell that cd's into the prefix runs programs there.
    out = subprocess.run(["sh", "-c", 'cd "$1" && pwd && ls', "_", p],
                         check=True, stdout=subprocess.PIPE).stdout.decode()
    want = p + "\n" + "".join(n + "\n" for n in sorted(os.listdir(src)))
    if out != want:
        sys.exit("sh -c 'cd P && pwd && ls' printed %r" % out[:200])
    print("subprocess: the parent's fds intact; cd in a shell")
