#!/bin/bash
# readonly: the mount is read-only and says so.
#  - touch (new and existing), mkdir, rm, rmdir, mv (inside and out of the
#    mount), chmod, chown, truncate, `echo x >> f`, `echo x > f`, ln -s, ln,
#    mkfifo, cp into it, setfattr, open(O_RDWR) all fail with EROFS
#    ("Read-only file system"), and nothing changes;
#  - df MNT works: type fuse.dlfs, size between the file bytes and the
#    dataset's size on disk, nothing free, inodes = the dataset's inodes;
#    statvfs: bsize 4096, namemax 255, ST_RDONLY;
#  - getfattr user.dlfs.{container,offset,xxh3} of every file equal
#    dlfs-inspect stat --json; listxattr has exactly those three; a missing
#    attribute is ENODATA; directories have none;
#  - the daemon logs no error and exits 0 on fusermount3 -u.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"
mount_setup

SRC="$T/src"
mkdir -p "$SRC/d/sub" "$SRC/e"
"$PYTHON" - "$SRC" <<'PY'
import os, random, sys
r = random.Random(5)
d = sys.argv[1]
open(os.path.join(d, "a.txt"), "wb").write(b"hello\n")
open(os.path.join(d, "d/big"), "wb").write(r.randbytes(300000))
open(os.path.join(d, "d/sub/small"), "wb").write(r.randbytes(777))
open(os.path.join(d, "empty"), "wb").close()
for i in range(20):
    open(os.path.join(d, "d/f%02d" % i), "wb").write(r.randbytes(r.randrange(1, 5000)))
os.symlink("a.txt", os.path.join(d, "link"))
PY
DS="$T/ds.dlfs"
pack "$SRC" -o "$DS" --chunk-size 64K --container-size 128K -q
expect_ok "pack"
inspect info --json "$DS"
expect_ok "info --json"
cp "$T/out" "$T/info.json"
MNT="$T/mnt"
mkdir "$MNT" "$T/outside"
dlfs_mount "$DS" "$MNT"

note "writes fail with EROFS"
RO="Read-only file system"
expect_errno "$RO" "touch a new file" touch "$MNT/new"
expect_errno "$RO" "touch an existing file" touch "$MNT/a.txt"
expect_errno "$RO" "mkdir" mkdir "$MNT/newdir"
expect_errno "$RO" "mkdir in a subdirectory" mkdir "$MNT/d/newdir"
expect_errno "$RO" "rm" rm -f "$MNT/a.txt"
expect_errno "$RO" "rm -rf" rm -rf "$MNT/d"
expect_errno "$RO" "rmdir" rmdir "$MNT/e"
expect_errno "$RO" "mv inside the mount" mv "$MNT/a.txt" "$MNT/b.txt"
expect_errno "$RO" "mv a directory" mv "$MNT/d" "$MNT/e/"
expect_errno "$RO" "mv out of the mount" mv "$MNT/d/sub/small" "$T/outside/"
expect_errno "$RO" "chmod" chmod 600 "$MNT/a.txt"
expect_errno "$RO" "chmod a directory" chmod 700 "$MNT/d"
expect_errno "$RO" "chown" chown 1:1 "$MNT/a.txt"
expect_errno "$RO" "truncate" truncate -s 0 "$MNT/a.txt"
expect_errno "$RO" "append" bash -c 'echo x >> "$1"' _ "$MNT/a.txt"
expect_errno "$RO" "overwrite" bash -c 'echo x > "$1"' _ "$MNT/a.txt"
expect_errno "$RO" "create by redirection" bash -c 'echo x > "$1"' _ "$MNT/d/newfile"
expect_errno "$RO" "ln -s" ln -s a.txt "$MNT/newlink"
expect_errno "$RO" "ln" ln "$MNT/a.txt" "$MNT/hardlink"
expect_errno "$RO" "mkfifo" mkfifo "$MNT/fifo"
expect_errno "$RO" "cp into the mount" cp "$SRC/a.txt" "$MNT/d/copy"
expect_errno "$RO" "open O_RDWR" "$PYTHON" -c 'import os, sys; os.open(sys.argv[1], os.O_RDWR)' "$MNT/a.txt"
expect_errno "$RO" "open O_WRONLY|O_TRUNC" "$PYTHON" -c 'import os, sys; os.open(sys.argv[1], os.O_WRONLY | os.O_TRUNC)' "$MNT/d/big"
expect_errno "$RO" "utime" "$PYTHON" -c 'import os, sys; os.utime(sys.argv[1], (0, 0))' "$MNT/d"
if command -v setfattr >/dev/null; then
	expect_errno "$RO" "setfattr" setfattr -n user.x -v 1 "$MNT/a.txt"
	expect_errno "$RO" "setfattr -x" setfattr -x user.dlfs.xxh3 "$MNT/a.txt"
else
	note "setfattr not installed (package attr): setfattr checks skipped"
fi
[ ! -e "$T/outside/small" ] || cmp -s "$T/outside/small" "$SRC/d/sub/small" ||
	fail "mv out of the mount left a wrong copy behind"
if ! tmo diff -r --no-dereference "$SRC" "$MNT" >"$T/diff.out" 2>&1; then
	head -n 20 "$T/diff.out" >&2
	fail "the mount changed after the write attempts"
fi

note "df and statvfs"
tmo df "$MNT" >"$T/df.out" || fail "df $MNT failed"
tmo df -B1 --output=fstype,size,used,avail,itotal,target "$MNT" >"$T/df.out" || fail "df --output $MNT failed"
cat "$T/df.out" >&2
DSBYTES=$(du -sb --apparent-size "$DS" | cut -f1)
"$PYTHON" - "$T/df.out" "$T/info.json" "$MNT" "$DSBYTES" <<'PY' || fail "df/statvfs figures are wrong"
import json, os, sys
lines = open(sys.argv[1]).read().split("\n")
info = json.load(open(sys.argv[2]))
mnt, dsbytes = sys.argv[3], int(sys.argv[4])
fstype, size, used, avail, itotal, target = lines[1].split(None, 5)
bad = []
if fstype != "fuse.dlfs":
    bad.append("fstype %r, expected fuse.dlfs" % fstype)
if os.path.realpath(target) != os.path.realpath(mnt):
    bad.append("target %r, expected %r" % (target, mnt))
size, used, avail, itotal = int(size), int(used), int(avail), int(itotal)
if not info["file_bytes"] <= size <= dsbytes + 4096:
    bad.append("size %d not within [file_bytes %d, dataset bytes on disk %d]" % (size, info["file_bytes"], dsbytes))
if avail != 0:
    bad.append("avail %d, expected 0" % avail)
if used != size:
    bad.append("used %d != size %d (nothing is free)" % (used, size))
if itotal != info["inodes"]:
    bad.append("inodes %d, expected %d" % (itotal, info["inodes"]))
sv = os.statvfs(mnt)
if sv.f_bsize != 4096:
    bad.append("f_bsize %d, expected 4096" % sv.f_bsize)
if sv.f_namemax != 255:
    bad.append("f_namemax %d, expected 255" % sv.f_namemax)
if not sv.f_flag & os.ST_RDONLY:
    bad.append("f_flag %#x lacks ST_RDONLY" % sv.f_flag)
if sv.f_bfree != 0 or sv.f_bavail != 0:
    bad.append("f_bfree %d f_bavail %d, expected 0" % (sv.f_bfree, sv.f_bavail))
if sv.f_files != info["inodes"]:
    bad.append("f_files %d, expected %d" % (sv.f_files, info["inodes"]))
for b in bad:
    print("  " + b, file=sys.stderr)
sys.exit(1 if bad else 0)
PY

note "xattrs"
if command -v getfattr >/dev/null; then
	(cd "$SRC" && find . -type f | sed 's|^\./||' | sort) >"$T/files"
	while IFS= read -r f; do
		inspect stat --json "$DS" "$f"
		expect_ok "dlfs-inspect stat --json $f"
		cp "$T/out" "$T/st.json"
		tmo getfattr -d -m '^user\.dlfs\.' -e text --absolute-names "$MNT/$f" >"$T/gfa" 2>"$T/gfa.err" ||
			fail "getfattr -d $MNT/$f failed: $(cat "$T/gfa.err")"
		"$PYTHON" - "$T/st.json" "$T/gfa" "$f" <<'PY' || fail "xattrs of $f do not match dlfs-inspect stat --json"
import json, sys
st = json.load(open(sys.argv[1]))
got = {}
for line in open(sys.argv[2]):
    line = line.rstrip("\n")
    if not line or line.startswith("#"):
        continue
    k, v = line.split("=", 1)
    got[k] = v.strip('"')
want = {"user.dlfs.container": str(st["container"]),
        "user.dlfs.offset": str(st["offset"]),
        "user.dlfs.xxh3": str(st["xxh3"]).lower()}
if {k: v.lower() for k, v in got.items()} != want:
    print("  %s: getfattr %r, dlfs-inspect %r" % (sys.argv[3], got, want), file=sys.stderr)
    sys.exit(1)
PY
	done <"$T/files"
	expect_errno "No such attribute" "getfattr of a missing attribute" getfattr -n user.dlfs.nope "$MNT/a.txt"
	tmo getfattr -d -m - --absolute-names "$MNT/d" >"$T/gfa.dir" || fail "getfattr -d of a directory failed"
	[ ! -s "$T/gfa.dir" ] || fail "a directory has xattrs: $(cat "$T/gfa.dir")"
	"$PYTHON" - "$MNT" <<'PY' || fail "listxattr is wrong"
import os, sys
m = sys.argv[1]
names = sorted(os.listxattr(os.path.join(m, "d/big")))
want = ["user.dlfs.container", "user.dlfs.offset", "user.dlfs.xxh3"]
if names != want:
    sys.exit("  listxattr(d/big) = %r, expected %r" % (names, want))
if os.listxattr(os.path.join(m, "e")):
    sys.exit("  listxattr of a directory = %r, expected []" % os.listxattr(os.path.join(m, "e")))
x = os.getxattr(os.path.join(m, "d/big"), "user.dlfs.xxh3")
if len(x) != 16 or any(c not in b"0123456789abcdefABCDEF" for c in x):
    sys.exit("  user.dlfs.xxh3 = %r, expected 16 hex digits" % x)
PY
else
	note "getfattr not installed (package attr): xattr checks skipped"
fi

check_log "$DLFS_LOG"
dlfs_umount "$MNT"
check_log "$DLFS_LOG"
exit 0
