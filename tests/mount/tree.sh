#!/bin/bash
# tree: the odd tree (odd names, empty files and dirs, symlinks, files
# around and above the chunk size, a 60-level deep path, special modes,
# hard links, odd mtimes), packed with 64K chunks and 1M containers and
# mounted, looks exactly like the source:
#  - diff -r --no-dereference SRC MNT finds nothing;
#  - every entry's type, mode, mtime (ns), size, symlink target match, the
#    st_ino equals the index inode (dlfs-inspect stat --json), root is 1,
#    readdir's d_ino/d_type agree with lstat;
#  - find lists the same paths (so /.dlfs is not listed), ls -a has no .dlfs;
#  - MNT/.dlfs/info is JSON equal to dlfs-inspect info --json (+ mountpoint);
#  - du --apparent-size of all files agrees;
#  - tar of the mount lists the same names as tar of the source, extracts
#    to a tree equal to the source (content, modes, ns mtimes), and tar of a
#    single big file extracts identical bytes;
#  - the daemon logs no error, and exits 0 on fusermount3 -u.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
mount_setup

SRC="$T/src"
gentree odd "$SRC" --seed 3
DS="$T/ds.dlfs"
pack "$SRC" -o "$DS" --chunk-size 64K --container-size 1M -q
expect_ok "pack"
inspect info --json "$DS"
expect_ok "info --json"
cp "$T/out" "$T/inspect-info.json"
[ "$(json_get "$T/inspect-info.json" containers)" -ge 2 ] || fail "test setup: expected several containers"

MNT="$T/mnt"
mkdir "$MNT"
dlfs_mount "$DS" "$MNT"

note "diff -r --no-dereference"
if ! tmo diff -r --no-dereference "$SRC" "$MNT" >"$T/diff.out" 2>&1; then
	head -n 30 "$T/diff.out" | cat -v >&2
	fail "diff -r --no-dereference $SRC $MNT found differences"
fi

note "stat of every entry"
tmo "$PYTHON" "$HERE/statcmp.py" "$SRC" "$MNT" "$DS" "$DLFS_INSPECT" ||
	fail "stat fields in the mount differ from the source (see above)"

note "find and ls -a"
(cd "$SRC" && tmo find . -printf '%P\0') | sort -z >"$T/find.src"
(cd "$MNT" && tmo find . -printf '%P\0') | sort -z >"$T/find.mnt"
if ! cmp -s "$T/find.src" "$T/find.mnt"; then
	diff <(tr '\0' '\n' <"$T/find.src" | cat -v) <(tr '\0' '\n' <"$T/find.mnt" | cat -v) | head -n 20 >&2 || true
	fail "find lists different paths in the mount and the source"
fi
tmo find "$MNT" -name .dlfs >"$T/find.dlfs"
[ ! -s "$T/find.dlfs" ] || fail "find MNT lists the control directory: $(cat "$T/find.dlfs")"
tmo ls -a "$MNT" >"$T/ls.mnt"
ls -a "$SRC" >"$T/ls.src"
! grep -qx '.dlfs' "$T/ls.mnt" || fail "ls -a MNT lists .dlfs"
cmp -s "$T/ls.src" "$T/ls.mnt" || { diff "$T/ls.src" "$T/ls.mnt" >&2 || true; fail "ls -a of the root differs"; }

note "MNT/.dlfs/info"
[ -d "$MNT/.dlfs" ] || fail "$MNT/.dlfs is not reachable as a directory"
tmo cat "$MNT/.dlfs/info" >"$T/info.json" || fail "cannot read $MNT/.dlfs/info"
tree_counts "$SRC" >"$T/counts.json"
"$PYTHON" - "$T/info.json" "$T/inspect-info.json" "$T/counts.json" "$MNT" <<'PY' || fail "MNT/.dlfs/info is wrong: $(head -c 500 "$T/info.json")"
import json, sys, os
try:
    info = json.load(open(sys.argv[1]))
except ValueError as e:
    sys.exit("  not valid JSON: %s" % e)
ref = json.load(open(sys.argv[2]))
counts = json.load(open(sys.argv[3]))
bad = []
for k, v in ref.items():
    if info.get(k) != v:
        bad.append("%s: %r in .dlfs/info, %r from dlfs-inspect info --json" % (k, info.get(k), v))
if info.get("files") != counts["files"]:
    bad.append("files: %r, the source has %d" % (info.get("files"), counts["files"]))
mp = info.get("mountpoint")
if not isinstance(mp, str) or os.path.realpath(mp) != os.path.realpath(sys.argv[4]):
    bad.append("mountpoint: %r, expected %r" % (mp, sys.argv[4]))
for b in bad:
    print("  " + b, file=sys.stderr)
sys.exit(1 if bad else 0)
PY

note "du --apparent-size of the files"
fbytes() { # DIR: apparent size in bytes of all regular files, hard links counted per name
	(cd "$1" && tmo find . -type f -print0 | tmo du -bl --apparent-size --files0-from=- -c | tail -n 1 | cut -f1)
}
DSRC=$(fbytes "$SRC")
DMNT=$(fbytes "$MNT")
[ "$DSRC" = "$DMNT" ] || fail "du --apparent-size of the files: source $DSRC, mount $DMNT"
[ "$DMNT" = "$(json_get "$T/inspect-info.json" file_bytes)" ] || fail "du of the mount $DMNT != file_bytes of the dataset"

note "tar"
tmo tar c -C "$SRC" . | tar t | sort >"$T/tar.src"
tmo tar c -C "$MNT" . 2>"$T/tar.err" | tar t | sort >"$T/tar.mnt" || fail "tar c of the mount failed: $(head -n 5 "$T/tar.err")"
[ ! -s "$T/tar.err" ] || fail "tar c of the mount complained: $(head -n 5 "$T/tar.err")"
cmp -s "$T/tar.src" "$T/tar.mnt" || { diff "$T/tar.src" "$T/tar.mnt" | head -n 20 >&2 || true; fail "tar t lists different names"; }
mkdir "$T/x"
tmo tar c --format=posix -C "$MNT" . | tmo tar x --warning=no-timestamp -C "$T/x" || fail "tar c | tar x of the mount failed"
compare_trees "$SRC" "$T/x" --mtime ns --with-root
for f in sizes/1m+3 sizes/64k+1 empty.txt "names/with space.txt"; do
	tmo tar c -C "$MNT" "$f" | tar xO --warning=no-timestamp >"$T/one" || fail "tar of $f"
	cmp "$T/one" "$SRC/$f" || fail "tar of MNT/$f does not extract the source's bytes"
done

check_log "$DLFS_LOG"
dlfs_umount "$MNT"
check_log "$DLFS_LOG"
exit 0
