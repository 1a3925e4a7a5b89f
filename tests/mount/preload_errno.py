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

# The review's errno findings (1.5), each against the mount's answer.
import ctypes, fcntl
libc = ctypes.CDLL(None, use_errno=True)


def c(name, fn, *a):
    """A libc call through ctypes: its result, or its errno's name."""
    ctypes.set_errno(0)
    r = fn(*a)
    e = ctypes.get_errno()
    print("%s: %s" % (name, errno.errorcode.get(e, e) if r == -1 else r))


call("open", os.open, d, O.O_TMPFILE | O.O_RDWR)
call("open", os.open, d, O.O_TMPFILE | O.O_RDONLY)
call("open", os.open, f, O.O_TMPFILE | O.O_WRONLY)
call("open", os.open, nx + "/", O.O_WRONLY | O.O_CREAT)
call("open", os.open, f + "/", O.O_RDONLY | O.O_CREAT)
call("open", os.open, d + "/", O.O_RDONLY | O.O_CREAT)
call("truncate", os.truncate, d, 0)
call("truncate", os.truncate, f, -1)
call("stat", os.stat, os.path.join(root, "n" * 256))
call("stat", os.stat, os.path.join(d, "n" * 300))
call("stat", os.stat, os.path.join(root, "n" * 255))
buf = ctypes.create_string_buffer(64)
c("readlink(size 0)", libc.readlink, link.encode(), buf, ctypes.c_size_t(0))
c("readlink(nx, size 0)", libc.readlink, nx.encode(), buf, ctypes.c_size_t(0))
fd = os.open(f, os.O_RDONLY)
print("lseek:", os.lseek(fd, 1 << 62, os.SEEK_SET) == 1 << 62)
call("lseek", os.lseek, FD, 1 << 62, os.SEEK_CUR)
call("lseek", os.lseek, FD, (1 << 63) - 1, os.SEEK_END)
call("dup2", os.dup2, 1000, FD)
call("pread", os.pread, FD, 4, 0)
print("F_GETFL %o" % (fcntl.fcntl(fd, fcntl.F_GETFL) & ~0o2000000))
os.close(fd)
fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
print("F_GETFL %o" % fcntl.fcntl(fd, fcntl.F_GETFL))
os.close(fd)
fd = os.open(f, os.O_PATH | os.O_NOFOLLOW)
print("F_GETFL %o" % fcntl.fcntl(fd, fcntl.F_GETFL))
call("fstat", os.fstat, FD)
call("fsync", os.fsync, FD)
call("fdatasync", os.fdatasync, FD)
call("fchmod", os.fchmod, FD, 0o600)
call("fchown", os.fchown, FD, 0, 0)
call("ftruncate", os.ftruncate, FD, 0)
call("getxattr", os.getxattr, FD, "user.dlfs.xxh3")
call("listxattr", os.listxattr, FD)
call("setxattr", os.setxattr, FD, "user.x", b"1")
call("utime", os.utime, FD, (1, 1))
call("posix_fadvise", os.posix_fadvise, FD, 0, 0, os.POSIX_FADV_NORMAL)
call("read", os.read, FD, 1)
os.close(fd)
# AT_EMPTY_PATH with AT_FDCWD is the cwd, which may be in the prefix.
here = os.getcwd()
os.chdir(d)
st = ctypes.create_string_buffer(256)
r = libc.fstatat(-100, b"", st, 0x1000)
print("fstatat(AT_FDCWD, \"\", AT_EMPTY_PATH): %s, ino %s" % (
    r, int.from_bytes(st.raw[8:16], "little") == os.stat(d).st_ino))
os.chdir(here)
# A real dirfd that is a file, then "..": ENOTDIR.
rf = os.path.join(os.path.dirname(root), "errno-file")
open(rf, "w").close()
fd = os.open(rf, os.O_RDONLY)
call("stat(dir_fd=a file, '../ROOT/f')",
     lambda: os.stat(os.path.join("..", os.path.basename(root), rel(f)),
                     dir_fd=fd))
os.close(fd)
os.unlink(rf)
# scandir with a selector that sets errno and says no.
names = []


@ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, use_errno=True)
def sel(ent):
    ctypes.set_errno(errno.EBADF)  # ctypes puts it in errno on return
    name = ctypes.string_at(ent + 19)
    names.append(name)
    return int(len(names) == 1)  # the last one is always said no to


lst = ctypes.c_void_p()
c("scandir(sel)", libc.scandir, root.encode(), ctypes.byref(lst), sel, None)
c("scandir(sel) saw", lambda: len(names))


# What glibc does with its internal calls, interposed (review finding 3).
import termios, array
big = next(p for p in files if os.path.getsize(p) >= 64)
want = open(big, "rb").read()
fd = os.open(big, os.O_RDONLY)
b = bytearray(16)
print("preadv:", os.preadv(fd, [b], 4), bytes(b) == want[4:20])
print("preadv flags:", os.preadv(fd, [b], 8, os.RWF_HIPRI), bytes(b) == want[8:24])
call("preadv(RWF_NOWAIT)", os.preadv, FD, [b], 0, os.RWF_NOWAIT)
call("pwritev", os.pwritev, FD, [b"x"], 0)
os.read(fd, 10)
n = array.array("i", [0])
fcntl.ioctl(fd, termios.FIONREAD, n)
print("FIONREAD:", n[0] == len(want) - 10)
print("FIGETBSZ:", int.from_bytes(fcntl.ioctl(fd, 2, b"\0" * 4), "little"))
print("FIOQSIZE:", int.from_bytes(fcntl.ioctl(fd, 0x5460, b"\0" * 8), "little") ==
      os.fstat(fd).st_blocks * 512)
call("ioctl(FS_IOC_GETFLAGS)", fcntl.ioctl, FD, 0x80086601, b"\0" * 8)
libc.futimes.argtypes = [ctypes.c_int, ctypes.c_void_p]
c("futimes", libc.futimes, fd, None)
def conf(fn, what, name):
    try:
        return fn(what, name)
    except OSError as e:
        return errno.errorcode.get(e.errno, e.errno)


for name in sorted(os.pathconf_names):
    print("pathconf(%s): fd %s, f %s, d %s" % (
        name, conf(os.fpathconf, fd, name), conf(os.pathconf, f, name),
        conf(os.pathconf, d, name)))
fd2 = os.open(big, os.O_RDONLY)
os.closerange(fd2, fd2 + 1)
call("read after closerange", lambda: os.read(fd2, 1))
os.close(fd)
c("remove(f)", libc.remove, f.encode())
c("remove(d)", libc.remove, d.encode())
c("remove(nx)", libc.remove, nx.encode())
call("mkfifo", os.mkfifo, nx)
call("mkfifo", os.mkfifo, f)
c("mkstemp", libc.mkstemp, ctypes.create_string_buffer((d + "/tXXXXXX").encode()))
c("mkstemp(nx)", libc.mkstemp, ctypes.create_string_buffer((nx + "/tXXXXXX").encode()))
c("mkostemps", libc.mkostemps, ctypes.create_string_buffer((d + "/tXXXXXX.x").encode()), 2, 0)
libc.mkdtemp.restype = ctypes.c_char_p
ctypes.set_errno(0)
print("mkdtemp:", libc.mkdtemp(ctypes.create_string_buffer((d + "/tXXXXXX").encode())),
      errno.errorcode.get(ctypes.get_errno()))
libc.lutimes.argtypes = [ctypes.c_char_p, ctypes.c_void_p]
c("lutimes", libc.lutimes, link.encode(), None)
libc.fopen.restype = libc.freopen.restype = ctypes.c_void_p
libc.freopen.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_void_p]
libc.fread.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t, ctypes.c_void_p]
libc.fclose.argtypes = [ctypes.c_void_p]
fp = libc.fopen(b"/dev/null", b"r")
fp = libc.freopen(big.encode(), b"r", fp)
rb = ctypes.create_string_buffer(len(want) + 1)
print("freopen r:", bool(fp), fp and libc.fread(rb, 1, len(want) + 1, fp) == len(want) and
      rb.raw[:len(want)] == want)
fp and libc.fclose(fp)
fp = libc.fopen(b"/dev/null", b"r")
ctypes.set_errno(0)
print("freopen w:", libc.freopen(big.encode(), b"w", fp), errno.errorcode.get(ctypes.get_errno()))
