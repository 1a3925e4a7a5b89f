"""wirecheck.py SOCKET SRC: a client of the wire of src/node/shared/wire.h
(dlfs DATASET --serve SOCKET) that checks every answer against the source
tree SRC, from which the dataset was packed:
  - HELLO: version 3, the root's attributes, the control directory's name;
    another version is refused (EPROTONOSUPPORT);
  - the whole tree walked with READDIR (small and large rooms, resumed by
    cookie) and LOOKUP: the same names, types, modes, sizes, mtimes and
    symlink targets (READLINK) as lstat of the source, and no LOOKUP
    flagged volatile; every file READ
    whole in pieces of odd sizes, and at offsets past its end, with its
    bytes equal to the source's;
  - errors: a name that is not there (ENOENT), READDIR of a file
    (ENOTDIR) or with too little room (EINVAL), READLINK of a file
    (EINVAL), a bad inode (an error, not a crash);
  - STATFS is read-only; the user.dlfs.* xattrs (GETXATTR, LISTXATTR,
    ERANGE when the room is too small, ENODATA on a directory);
  - /.dlfs: info is JSON naming the dataset, stats is JSON, epoch 1's
    files list reads, and its first sample's bytes are its file's; every
    LOOKUP in it is flagged volatile (the client caches none of them);
  - a client that sends garbage is cut off, and the server still answers
    the next one; many connections at once each get their own answers;
  - the shared memory (check_shm below).

wirecheck.py --shm SOCKET [--nvme DATASET]: the shared memory alone, for
a server of dlfs-run (tests/mount/direct.sh):
  - MAP passes 3 descriptors (SCM_RIGHTS) whose sizes (fstat) are the
    reply's; the first, mapped, starts with the magic of
    src/node/shared/shm.h (0x314d4853534c4644, little-endian u64) and
    version 2, and its head gives the same three sizes; its liveness
    word holds a thread id (the server serves);
  - NVFD of container 2**40 is EINVAL; without --nvme (no cache_dir),
    NVFD 0 is ENOENT. With --nvme (a cache_dir whose tier holds chunk 0
    of container 0): NVFD 0 passes one descriptor, read-only, whose bytes
    at that chunk are the container's; NVFD of the container past the
    last is EINVAL. A failed reply passes no descriptor. The head is
    printed on stdout, as JSON.
"""
import errno
import fcntl
import json
import mmap
import os
import socket
import stat
import struct
import sys
import threading

REQ = struct.Struct("=IIQQQ")
REP = struct.Struct("=iIQ")
# struct stat on x86-64 glibc.
STAT = struct.Struct("=QQQIIIiQqqqqqqqqq24x")
DIRENT = struct.Struct("=QQII")
HELLO, LOOKUP, GETATTR, READLINK, READDIR, READ, STATFS, GETXATTR, \
    LISTXATTR, MAP, NVFD = range(1, 12)
# struct dlfs_shm_head of src/node/shared/shm.h.
SHM_HEAD = struct.Struct("<QIIQQQQQIIII" + "Q" * 17)
SHM_FIELDS = ("magic version n_slots slot_size chunk_size data_off n_chunks "
              "n_inodes table_mask n_containers nvme pad table_off slots_off "
              "first_off nv_st_off nv_seq_off loc_off loc_mask name_off "
              "name_sets file_ok_off use_off count_off seen_off meta_size "
              "data_size rw_size alive_off").split()
SHM_MAGIC = 0x314D4853534C4644
SHM_VERSION = 2
assert SHM_HEAD.size == 208 and len(SHM_FIELDS) == 29
MAX_IO = 1 << 20
# struct dlfs_wire_entry's flags (src/node/shared/wire.h)
VOLATILE = 1
WIRE_VERSION = 3
assert STAT.size == 144

bad = 0


def fail(msg):
    global bad
    bad += 1
    print("wirecheck: " + msg, file=sys.stderr)


class WireError(Exception):
    def __init__(self, code):
        super().__init__(errno.errorcode.get(code, str(code)))
        self.code = code


class Conn:
    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.connect(path)

    def recv(self, n):
        buf = bytearray()
        while len(buf) < n:
            got = self.s.recv(n - len(buf))
            if not got:
                raise EOFError("the server closed the connection")
            buf += got
        return bytes(buf)

    def call(self, op, ino=0, off=0, size=0, name=b""):
        self.s.sendall(REQ.pack(op, len(name), ino, off, size) + name)
        status, count, n = REP.unpack(self.recv(REP.size))
        payload = self.recv(n) if n else b""
        if status:
            if n:
                fail("a failed reply carried a payload")
            raise WireError(-status)
        return count, payload


    def call_fds(self, op, ino=0):
        """A request whose reply may pass descriptors: (payload, fds)."""
        self.s.sendall(REQ.pack(op, 0, ino, 0, 0))
        # The descriptors come with the reply's first byte.
        got, fds, flags, _ = socket.recv_fds(self.s, REP.size + 64, 8)
        if flags & socket.MSG_CTRUNC:
            fail("op %d: the descriptors were cut off" % op)
        if not got:
            raise EOFError("the server closed the connection")
        buf = got + (self.recv(REP.size - len(got)) if len(got) < REP.size else b"")
        status, _, n = REP.unpack(buf[:REP.size])
        payload = buf[REP.size:]
        if len(payload) < n:
            payload += self.recv(n - len(payload))
        if status:
            for fd in fds:
                os.close(fd)
            if fds:
                fail("op %d: a failed reply (%d) passed %d descriptors" % (op, status, len(fds)))
            raise WireError(-status)
        return payload, fds


def unstat(b):
    f = STAT.unpack(b[:STAT.size])
    return {"ino": f[1], "nlink": f[2], "mode": f[3], "size": f[8],
            "mtime_ns": f[13] * 10**9 + f[14]}


def hello(c):
    _, p = c.call(HELLO, size=WIRE_VERSION)
    version, max_io, root_ino = struct.unpack_from("=IIQ", p)
    root = unstat(p[16:16 + STAT.size])
    ctl = p[16 + STAT.size:16 + STAT.size + 256].split(b"\0")[0].decode()
    shm, = struct.unpack_from("=I", p, 16 + STAT.size + 256)
    if shm != 1:
        fail("HELLO: the server offers no shared memory (shm %d)" % shm)
    return version, max_io, root_ino, root, ctl


def listdir(c, ino, room):
    names, cookie = {}, 0
    while True:
        count, p = c.call(READDIR, ino=ino, off=cookie, size=room)
        if not count:
            return names
        at = 0
        for _ in range(count):
            ck, eino, mode, nlen = DIRENT.unpack_from(p, at)
            name = p[at + DIRENT.size:at + DIRENT.size + nlen]
            at += (DIRENT.size + nlen + 7) & ~7
            names[name] = (eino, mode)
            cookie = ck
        if at != len(p):
            fail("READDIR payload has %d bytes left over" % (len(p) - at))


def read_all(c, ino, piece):
    out, off = bytearray(), 0
    while True:
        _, p = c.call(READ, ino=ino, off=off, size=piece)
        if not p:
            return bytes(out)
        out += p
        off += len(p)


def expect_err(what, code, fn):
    try:
        fn()
    except WireError as e:
        if e.code != code:
            fail("%s: %s, expected %s" % (what, e, errno.errorcode[code]))
        return
    fail("%s: succeeded, expected %s" % (what, errno.errorcode[code]))


def walk(c, src, ino, rel, pieces):
    names = listdir(c, ino, 64 * 1024 if len(rel) % 2 else 300)
    want = sorted(os.fsencode(n) for n in os.listdir(os.path.join(src, rel)))
    if sorted(names) != want:
        fail("%s/: READDIR lists %r, the source %r" % (rel, sorted(names)[:5], want[:5]))
    files = 0
    for name, (eino, mode) in sorted(names.items()):
        path = os.path.join(src, rel, os.fsdecode(name))
        st = os.lstat(path)
        _, p = c.call(LOOKUP, ino=ino, name=name)
        lino, = struct.unpack_from("=Q", p)
        got = unstat(p[8:])
        if entry_flags(p) != 0:
            fail("%s: LOOKUP flags %#x, expected none" % (path, entry_flags(p)))
        if lino != eino or got["ino"] != eino:
            fail("%s: LOOKUP ino %d, READDIR %d" % (path, lino, eino))
        if stat.S_IFMT(mode) != stat.S_IFMT(st.st_mode):
            fail("%s: READDIR type %o, source %o" % (path, mode, st.st_mode))
        if got["mode"] != st.st_mode or got["mtime_ns"] != st.st_mtime_ns:
            fail("%s: mode %o mtime %d, source %o %d" % (path, got["mode"], got["mtime_ns"], st.st_mode, st.st_mtime_ns))
        _, ga = c.call(GETATTR, ino=lino)
        if unstat(ga) != got:
            fail("%s: GETATTR differs from LOOKUP" % path)
        if stat.S_ISLNK(st.st_mode):
            _, t = c.call(READLINK, ino=lino)
            if t != os.fsencode(os.readlink(path)):
                fail("%s: READLINK %r" % (path, t))
        elif stat.S_ISDIR(st.st_mode):
            files += walk(c, src, lino, os.path.join(rel, os.fsdecode(name)), pieces)
        elif stat.S_ISREG(st.st_mode):
            if got["size"] != st.st_size:
                fail("%s: size %d, source %d" % (path, got["size"], st.st_size))
            data = read_all(c, lino, pieces[files % len(pieces)])
            if data != open(path, "rb").read():
                fail("%s: READ gave other bytes" % path)
            _, past = c.call(READ, ino=lino, off=st.st_size + 10, size=100)
            if past:
                fail("%s: READ past the end gave bytes" % path)
            files += 1
    return files


def check_errors(c, root_ino, a_file, a_dir):
    expect_err("LOOKUP of a missing name", errno.ENOENT,
               lambda: c.call(LOOKUP, ino=root_ino, name=b"no-such-name"))
    expect_err("LOOKUP of a name with '/'", errno.ENOENT,
               lambda: c.call(LOOKUP, ino=root_ino, name=b"a/b"))
    expect_err("READDIR of a file", errno.ENOTDIR,
               lambda: c.call(READDIR, ino=a_file, size=4096))
    expect_err("READDIR with too little room", errno.EINVAL,
               lambda: c.call(READDIR, ino=root_ino, size=100))
    expect_err("READLINK of a file", errno.EINVAL,
               lambda: c.call(READLINK, ino=a_file))
    try:
        c.call(GETATTR, ino=1 << 40)
        fail("GETATTR of a bad inode succeeded")
    except WireError:
        pass
    _, p = c.call(STATFS)
    if not struct.unpack_from("=QQQQQQQQQQQ", p)[9] & os.ST_RDONLY:
        fail("STATFS is not read-only")
    n, _ = c.call(GETXATTR, ino=a_file, name=b"user.dlfs.xxh3", size=0)
    _, v = c.call(GETXATTR, ino=a_file, name=b"user.dlfs.xxh3", size=64)
    if n != 16 or len(v) != 16:
        fail("GETXATTR user.dlfs.xxh3: %d, %r" % (n, v))
    expect_err("GETXATTR with too little room", errno.ERANGE,
               lambda: c.call(GETXATTR, ino=a_file, name=b"user.dlfs.xxh3", size=4))
    expect_err("GETXATTR of a directory", errno.ENODATA,
               lambda: c.call(GETXATTR, ino=a_dir, name=b"user.dlfs.xxh3", size=64))
    _, names = c.call(LISTXATTR, ino=a_file, size=256)
    if b"user.dlfs.container\0" not in names:
        fail("LISTXATTR: %r" % names)


def entry_flags(p):
    """The flags of a LOOKUP's struct dlfs_wire_entry (after the stat)."""
    if len(p) != 8 + STAT.size + 8:
        fail("LOOKUP: an entry of %d bytes" % len(p))
    return struct.unpack_from("=I", p, 8 + STAT.size)[0]


def ctl_lookup(c, parent, name):
    """LOOKUP of a control name: its payload, which must be volatile."""
    _, p = c.call(LOOKUP, ino=parent, name=name)
    if entry_flags(p) != VOLATILE:
        fail("LOOKUP of control name %r: flags %#x, expected volatile"
             % (name, entry_flags(p)))
    return p


def check_ctl(c, root_ino, ctl, src):
    p = ctl_lookup(c, root_ino, ctl.encode())
    cino, = struct.unpack_from("=Q", p)
    p = ctl_lookup(c, cino, b"info")
    info = json.loads(read_all(c, struct.unpack_from("=Q", p)[0], 4096))
    if "path" not in info:
        fail("info has no path: %r" % info)
    p = ctl_lookup(c, cino, b"stats")
    json.loads(read_all(c, struct.unpack_from("=Q", p)[0], 65536))
    p = ctl_lookup(c, cino, b"epochs")
    eino, = struct.unpack_from("=Q", p)
    p = ctl_lookup(c, eino, b"1")
    e1, = struct.unpack_from("=Q", p)
    p = ctl_lookup(c, e1, b"files")
    lst = read_all(c, struct.unpack_from("=Q", p)[0], 1000).split(b"\n")
    first = lst[0]
    p = ctl_lookup(c, e1, b"samples")
    sino, = struct.unpack_from("=Q", p)
    samples = listdir(c, sino, 4096)
    # A name may hold a newline, so count the source's files instead.
    nfiles = sum(1 for d, _, fs in os.walk(src) for f in fs
                 if stat.S_ISREG(os.lstat(os.path.join(d, f)).st_mode))
    if len(samples) != nfiles:
        fail("epoch 1: %d samples, the source has %d files" % (len(samples), nfiles))
    name = min(samples)
    data = read_all(c, samples[name][0], 7777)
    if data != open(os.path.join(os.fsencode(src), first.lstrip(b"/")), "rb").read():
        fail("epoch 1's first sample %r is not %s" % (name, first))


def attack(fd, size, what):
    """A client reopens a read-only descriptor of meta or data read-write
    and tries to write through it (issue 38): the seals refuse a writable
    shared mapping, write(2) and a new size. Where one works it does what
    an attacker would (flips every byte), so the readers after it fail."""
    try:
        w = os.open("/proc/self/fd/%d" % fd, os.O_RDWR)
    except OSError:
        return  # refused already: nothing to write through
    try:
        try:
            m = mmap.mmap(w, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        except OSError:
            pass
        else:
            fail("MAP: %s reopened read-write maps writable" % what)
            with m:
                m[:] = bytes(b ^ 0xFF for b in m[:])
        try:
            os.pwrite(w, b"\0", 0)
        except OSError:
            pass
        else:
            fail("MAP: %s reopened read-write takes write(2)" % what)
        try:
            os.ftruncate(w, size // 2)
        except OSError:
            pass
        else:
            fail("MAP: %s reopened read-write can be shrunk" % what)
    finally:
        os.close(w)


def check_shm(sock, nvme_ds=None, show=False):
    """The checks of --shm; show: print the head (JSON) on stdout."""
    c = Conn(sock)
    hello(c)
    p, fds = c.call_fds(MAP)
    try:
        if len(fds) != 3 or len(p) != 24:
            fail("MAP: %d descriptors and %d bytes, expected 3 and 24" % (len(fds), len(p)))
            return
        sizes = struct.unpack("=QQQ", p)
        for i, fd in enumerate(fds):
            if os.fstat(fd).st_size != sizes[i]:
                fail("MAP: file %d has %d bytes, the reply says %d" % (i, os.fstat(fd).st_size, sizes[i]))
        with mmap.mmap(fds[0], sizes[0], mmap.MAP_SHARED, mmap.PROT_READ) as meta:
            h = dict(zip(SHM_FIELDS, SHM_HEAD.unpack_from(meta, 0)))
            if h["magic"] != SHM_MAGIC or h["version"] != SHM_VERSION:
                fail("MAP: meta starts with magic %#x version %d, expected %#x %d"
                     % (h["magic"], h["version"], SHM_MAGIC, SHM_VERSION))
                return
            # The liveness mutex's futex word holds its owner's thread id
            # (FUTEX_TID_MASK) while the server serves.
            alive, = struct.unpack_from("<I", meta, h["alive_off"])
            if not alive & 0x3FFFFFFF:
                fail("MAP: the liveness word is %#x while the server serves" % alive)
            got = (h["meta_size"], h["data_size"], h["rw_size"])
            if got != sizes:
                fail("MAP: the head's sizes %r are not the reply's %r" % (got, sizes))
            if show:
                print(json.dumps(h))
            g0, = struct.unpack_from("<Q", meta, h["first_off"])
            present = meta[h["nv_st_off"] + g0] & 1
        for i, what in ((0, "meta"), (1, "data")):
            attack(fds[i], sizes[i], what)
        chunk_size, data_off, n_containers = h["chunk_size"], h["data_off"], h["n_containers"]
    finally:
        for fd in fds:
            os.close(fd)
    expect_err("NVFD of container 2**40", errno.EINVAL, lambda: c.call_fds(NVFD, 1 << 40))
    if nvme_ds is None:
        expect_err("NVFD 0 without a cache_dir", errno.ENOENT, lambda: c.call_fds(NVFD, 0))
        return
    expect_err("NVFD of the container past the last", errno.EINVAL,
               lambda: c.call_fds(NVFD, n_containers))
    if not present:
        fail("NVFD: chunk 0 of container 0 is not in the NVMe tier (test setup)")
        return
    p, fds = c.call_fds(NVFD, 0)
    try:
        if len(fds) != 1 or p:
            fail("NVFD 0: %d descriptors and %d bytes, expected 1 and none" % (len(fds), len(p)))
            return
        if fcntl.fcntl(fds[0], fcntl.F_GETFL) & os.O_ACCMODE != os.O_RDONLY:
            fail("NVFD 0: the descriptor is not read-only")
        with open(os.path.join(nvme_ds, "000000.dlc"), "rb") as f:
            f.seek(data_off)
            want = f.read(chunk_size)
        got = os.pread(fds[0], len(want), data_off)
        if got != want:
            fail("NVFD 0: chunk 0 in the cache file (%d bytes) is not the container's (%d)" % (len(got), len(want)))
    finally:
        for fd in fds:
            os.close(fd)


def main():
    if sys.argv[1:2] == ["--shm"]:
        nv = sys.argv[4] if sys.argv[3:4] == ["--nvme"] else None
        check_shm(sys.argv[2], nv, show=True)
        sys.exit(1 if bad else 0)
    sock, src = sys.argv[1], sys.argv[2]
    c = Conn(sock)
    version, max_io, root_ino, root, ctl = hello(c)
    if version != WIRE_VERSION or max_io != MAX_IO or root_ino != 1 or not stat.S_ISDIR(root["mode"]):
        fail("HELLO: %r" % ((version, max_io, root_ino, root),))
    other = Conn(sock)
    expect_err("HELLO of version 99", errno.EPROTONOSUPPORT,
               lambda: other.call(HELLO, size=99))
    files = walk(c, src, root_ino, "", [4096, 65537, MAX_IO, 333])
    print("wirecheck: %d files read whole" % files)
    regular = [n for n in sorted(os.listdir(src))
               if os.path.isfile(os.path.join(src, n)) and not os.path.islink(os.path.join(src, n))]
    dirs = [n for n in sorted(os.listdir(src)) if os.path.isdir(os.path.join(src, n))]
    ino_of = lambda n: struct.unpack_from("=Q", c.call(LOOKUP, ino=root_ino, name=os.fsencode(n))[1])[0]
    check_errors(c, root_ino, ino_of(regular[0]), ino_of(dirs[0]))
    check_ctl(c, root_ino, ctl, src)
    # Garbage: an unknown op; the connection is closed, the server lives.
    g = Conn(sock)
    g.s.sendall(REQ.pack(77, 0, 0, 0, 0))
    try:
        g.recv(1)
        fail("an unknown op got an answer")
    except (EOFError, ConnectionResetError):
        pass
    # Many at once.
    errs = []

    def reader(k):
        try:
            cc = Conn(sock)
            hello(cc)
            name = regular[k % len(regular)]
            data = read_all(cc, ino_of_conn(cc, root_ino, name), 5000)
            if data != open(os.path.join(src, name), "rb").read():
                errs.append(name)
        except Exception as e:  # noqa: BLE001 - reported below
            errs.append(repr(e))

    def ino_of_conn(cc, parent, name):
        return struct.unpack_from("=Q", cc.call(LOOKUP, ino=parent, name=os.fsencode(name))[1])[0]
    ts = [threading.Thread(target=reader, args=(k,)) for k in range(16)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if errs:
        fail("concurrent readers: %r" % errs[:3])
    hello(c)  # the first connection still works
    check_shm(sock)
    sys.exit(1 if bad else 0)


main()
