#!/usr/bin/python3
"""preload_errno.py ROOT
Prints, one a line, what each of a list of calls on the odd tree under
ROOT gives: the result's shape, or the errno name. Run on a FUSE mount of
the dataset and through libdlfs-preload.so, the two outputs must be the
same (preload.sh compares them).
"""
import errno
import os
import sys

root = sys.argv[1]
d = os.path.join(root, "emptydir")
files = sorted(os.path.join(dp, n) for dp, _, fs in os.walk(root) for n in fs
               if not os.path.islink(os.path.join(dp, n)))
f = files[0]
link = next(os.path.join(dp, n) for dp, _, fs in os.walk(root) for n in sorted(fs)
            if os.path.islink(os.path.join(dp, n)) and os.path.exists(os.path.join(dp, n)))
nx = os.path.join(root, "no-such")


def rel(p):
    return os.path.relpath(p, root) if isinstance(p, str) and p.startswith(root) else p


def show(v):
    if isinstance(v, os.stat_result):
        return "stat(mode=%o,size=%d)" % (v.st_mode, v.st_size)
    if isinstance(v, int) and v > 2:
        return "int"
    if isinstance(v, bytes):
        return "bytes(%d)" % len(v)
    return repr(v)


def call(name, fn, *a):
    args = tuple("fd" if x is FD else rel(x) for x in a)
    a = tuple(fd if x is FD else x for x in a)
    try:
        v = fn(*a)
        if name.startswith("open") and isinstance(v, int):
            os.close(v)
            v = "fd"
        r = show(v)
    except OSError as e:
        r = errno.errorcode.get(e.errno, str(e.errno))
    print("%s%r: %s" % (name, args, r))


O = os
FD = object()  # the fd opened below, printed as "fd" (its number may differ)
fd = -1
call("open", os.open, f, O.O_RDONLY)
call("open", os.open, f, O.O_RDONLY | O.O_CREAT)
call("open", os.open, f, O.O_RDONLY | O.O_TRUNC)
call("open", os.open, f, O.O_WRONLY)
call("open", os.open, f, O.O_RDWR)
call("open", os.open, f, O.O_WRONLY | O.O_CREAT | O.O_EXCL)
call("open", os.open, f, O.O_RDONLY | O.O_DIRECTORY)
call("open", os.open, f + "/", O.O_RDONLY)
call("open", os.open, f + "/x", O.O_RDONLY)
call("open", os.open, d, O.O_RDONLY)
call("open", os.open, d, O.O_WRONLY)
call("open", os.open, d, O.O_RDONLY | O.O_CREAT)
call("open", os.open, nx, O.O_RDONLY)
call("open", os.open, nx, O.O_WRONLY | O.O_CREAT)
call("open", os.open, nx + "/x", O.O_WRONLY | O.O_CREAT)
call("open", os.open, link, O.O_RDONLY | O.O_NOFOLLOW)
call("stat", os.stat, f)
call("stat", os.stat, nx)
call("lstat", os.lstat, link)
call("access", os.access, f, os.W_OK)
call("access", os.access, f, os.R_OK)
call("access", os.access, d, os.X_OK)
call("mkdir", os.mkdir, d)
call("mkdir", os.mkdir, nx)
call("rmdir", os.rmdir, d)
call("rmdir", os.rmdir, f)
call("unlink", os.unlink, f)
call("unlink", os.unlink, nx)
call("rmdir", os.rmdir, nx)
call("rename", os.rename, f, nx)
call("rename", os.rename, nx, f)
call("rename", os.rename, nx + "/a", f)
call("chmod", os.chmod, nx, 0o644)
call("link", os.link, f, nx)
call("symlink", os.symlink, "t", nx)
call("symlink", os.symlink, "t", f)
call("chmod", os.chmod, f, 0o644)
call("chown", os.chown, f, 0, 0)
call("utime", os.utime, f, (1, 1))
call("truncate", os.truncate, f, 0)
call("readlink", os.readlink, f)
call("readlink", os.readlink, nx)
call("listdir", os.listdir, f)
call("setxattr", os.setxattr, f, "user.x", b"1")
call("getxattr", os.getxattr, f, "user.nope")
call("getxattr", os.getxattr, d, "user.dlfs.xxh3")
call("listxattr", os.listxattr, d)
fd = os.open(f, os.O_RDONLY)
call("write", os.write, FD, b"x")
call("ftruncate", os.ftruncate, FD, 0)
call("fchmod", os.fchmod, FD, 0o600)
call("lseek", os.lseek, FD, -1, os.SEEK_SET)
call("lseek", os.lseek, FD, 0, os.SEEK_END)
call("pread", os.pread, FD, 10, 1 << 40)
os.close(fd)
fd = os.open(d, os.O_RDONLY)
call("read", os.read, FD, 10)
os.close(fd)
