#!/bin/bash
# inspect: the dlfs-inspect subcommands on a small hand-made tree with known
# names, sizes, modes and mtimes: info, ls, ls -l (exact lines), stat and
# stat --json (exact values), cat (byte-identical to the source, also for
# empty and multi-chunk files), extract into an empty/non-empty dir, the
# error messages for missing paths/datasets, and exit status 2 for usage errors.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"

S="$T/src"
mkdir -p "$S/dir/sub"
printf 'hello world\n' >"$S/hello.txt"
head -c 100000 /dev/urandom >"$S/dir/inner.bin"
head -c $((1024 * 1024 + 3)) /dev/urandom >"$S/big"
: >"$S/empty"
printf 'abc' >"$S/with space"
printf 'x' >"$S/dir/sub/deep"
ln -s hello.txt "$S/link"
ln -s /nonexistent/target "$S/dir/dangling"
chmod 0644 "$S/hello.txt" "$S/big" "$S/empty"
chmod 0600 "$S/dir/inner.bin"
chmod 4755 "$S/with space"
chmod 0755 "$S/dir" "$S/dir/sub"
chmod 1777 "$S"
touch -h -d '2024-01-02 03:04:05.123456789 UTC' "$S/hello.txt" "$S/link"
touch -d '2001-02-03 04:05:06.000000007 UTC' "$S/dir/inner.bin" "$S/big" "$S/empty" "$S/with space" "$S/dir/sub/deep"
touch -h -d '2001-02-03 04:05:06 UTC' "$S/dir/dangling"
touch -d '2023-05-06 07:08:09.5 UTC' "$S/dir/sub"
touch -d '2023-05-06 07:08:09.999999999 UTC' "$S/dir"
touch -d '2020-12-31 23:59:59.000000001 UTC' "$S"

DS="$T/ds.dlfs"
pack "$S" -o "$DS" --chunk-size 64K --container-size 1M -q
expect_ok "pack"

# --- info
inspect info "$DS"
expect_ok "info"
for kv in "format_version: 1.1" "features: path_bound" "chunk_size: 65536" "container_size: 1048576" "align: 1" \
	"order: sorted" "inodes: 11" "files: 6" "dirs: 3" "symlinks: 2" "file_bytes: $((12 + 100000 + 1048579 + 3 + 1))"; do
	grep -qxF "$kv" "$T/out" || { _show; fail "info: no line '$kv'"; }
done
grep -qE '^dataset_id: [0-9a-f]{32}$' "$T/out" || { _show; fail "info: no 'dataset_id: <32 hex>' line"; }
grep -qE '^creator: dlfs-pack ' "$T/out" || { _show; fail "info: no 'creator: dlfs-pack ...' line"; }
ID_TEXT=$(sed -n 's/^dataset_id: //p' "$T/out")
inspect info --json "$DS"
expect_ok "info --json"
cp "$T/out" "$T/info.json"
[ "$(json_get "$T/info.json" dataset_id)" = "$ID_TEXT" ] || fail "info --json dataset_id differs from info"
[ "$(json_get "$T/info.json" files)" = 6 ] || fail "info --json files != 6"
"$PYTHON" - "$T/info.json" <<'EOF' || fail "info --json: wrong key types (see above)"
import json, sys
d = json.load(open(sys.argv[1]))
bad = [k for k in ("format_version", "dataset_id", "order", "creator") if not isinstance(d.get(k), str)]
bad += [] if d.get("features") == ["path_bound"] else ["features"]
bad += [k for k in ("chunk_size", "container_size", "align", "inodes", "files", "dirs", "symlinks",
                    "containers", "file_bytes", "index_bytes") if type(d.get(k)) is not int]
if bad:
    print("  keys missing or of the wrong type:", bad, file=sys.stderr)
sys.exit(1 if bad else 0)
EOF

# --- ls
inspect ls "$DS"
expect_ok "ls root"
printf 'big\ndir\nempty\nhello.txt\nlink\nwith space\n' >"$T/want"
cmp -s "$T/out" "$T/want" || { _show; fail "ls root: expected exactly: $(cat "$T/want" | tr '\n' '|')"; }
for root in / ""; do
	inspect ls "$DS" "$root"
	expect_ok "ls '$root'"
	cmp -s "$T/out" "$T/want" || { _show; fail "ls '$root' differs from ls with no PATH"; }
done
inspect ls "$DS" dir
expect_ok "ls dir"
printf 'dangling\ninner.bin\nsub\n' >"$T/want"
cmp -s "$T/out" "$T/want" || { _show; fail "ls dir: expected dangling, inner.bin, sub"; }
inspect ls "$DS" /dir/./sub
expect_ok "ls /dir/./sub"
[ "$(cat "$T/out")" = deep ] || { _show; fail "ls /dir/./sub: expected 'deep'"; }
inspect ls "$DS" dir/emptydir-missing
expect_rc 1 "ls of a missing path"
err_has "emptydir-missing" "ls of a missing path names it"
inspect ls "$DS" hello.txt
expect_ok "ls of a file"
[ "$(cat "$T/out")" = hello.txt ] || { _show; fail "ls of a file: expected just 'hello.txt'"; }

inspect ls -l "$DS"
expect_ok "ls -l"
cat >"$T/want" <<'EOF'
-rw-r--r-- 1048579 2001-02-03 04:05:06 big
drwxr-xr-x 3 2023-05-06 07:08:09 dir
-rw-r--r-- 0 2001-02-03 04:05:06 empty
-rw-r--r-- 12 2024-01-02 03:04:05 hello.txt
lrwxrwxrwx 9 2024-01-02 03:04:05 link -> hello.txt
-rwsr-xr-x 3 2001-02-03 04:05:06 with space
EOF
if ! cmp -s "$T/out" "$T/want"; then
	diff "$T/want" "$T/out" >&2 || true
	fail "ls -l root: output differs from the expected lines (- expected, + got)"
fi
inspect ls -l "$DS" dir
expect_ok "ls -l dir"
grep -qxF -- "-rw------- 100000 2001-02-03 04:05:06 inner.bin" "$T/out" || { _show; fail "ls -l dir: inner.bin line"; }
grep -qxF -- "lrwxrwxrwx 19 2001-02-03 04:05:06 dangling -> /nonexistent/target" "$T/out" || { _show; fail "ls -l dir: dangling symlink line"; }
grep -qxF -- "drwxr-xr-x 1 2023-05-06 07:08:09 sub" "$T/out" || { _show; fail "ls -l dir: sub line"; }
inspect ls -l "$DS" link
expect_ok "ls -l of a symlink"
[ "$(cat "$T/out")" = "lrwxrwxrwx 9 2024-01-02 03:04:05 link -> hello.txt" ] || { _show; fail "ls -l link: expected its one entry"; }

# --- stat
inspect stat "$DS" hello.txt
expect_ok "stat hello.txt"
for kv in "path: hello.txt" "type: file" "mode: 0644" "size: 12" "mtime: 1704164645.123456789"; do
	grep -qxF "$kv" "$T/out" || { _show; fail "stat hello.txt: no line '$kv'"; }
done
grep -qE '^inode: [0-9]+$' "$T/out" || { _show; fail "stat hello.txt: no inode line"; }
grep -qE '^container: [0-9]+$' "$T/out" || { _show; fail "stat hello.txt: no container line"; }
grep -qE '^offset: [0-9]+$' "$T/out" || { _show; fail "stat hello.txt: no offset line"; }
grep -qE '^xxh3: [0-9a-f]{16}$' "$T/out" || { _show; fail "stat hello.txt: no 'xxh3: <16 hex>' line"; }
grep -q '^target' "$T/out" && { _show; fail "stat of a file prints a target"; }

inspect stat "$DS" /with\ space
expect_ok "stat /with space"
grep -qxF "mode: 4755" "$T/out" || { _show; fail "stat 'with space': mode should be 4755"; }
grep -qxF "mtime: 981173106.000000007" "$T/out" || { _show; fail "stat 'with space': mtime 981173106.000000007"; }
grep -qxF "path: with space" "$T/out" || { _show; fail "stat '/with space': path should have no leading /"; }

inspect stat "$DS" link
expect_ok "stat link"
for kv in "path: link" "type: symlink" "size: 9" "target: hello.txt"; do
	grep -qxF "$kv" "$T/out" || { _show; fail "stat link: no line '$kv'"; }
done
grep -qE '^(container|offset|xxh3):' "$T/out" && { _show; fail "stat of a symlink prints file-only keys"; }

inspect stat "$DS" dir
expect_ok "stat dir"
for kv in "path: dir" "type: dir" "mode: 0755" "size: 3" "mtime: 1683356889.999999999"; do
	grep -qxF "$kv" "$T/out" || { _show; fail "stat dir: no line '$kv'"; }
done
inspect stat "$DS" /
expect_ok "stat /"
for kv in "inode: 1" "type: dir" "mode: 1777" "size: 6" "mtime: 1609459199.000000001"; do
	grep -qxF "$kv" "$T/out" || { _show; fail "stat / (root takes the source dir's mode/mtime): no line '$kv'"; }
done

inspect stat --json "$DS" dir/inner.bin
expect_ok "stat --json"
cp "$T/out" "$T/st.json"
"$PYTHON" - "$T/st.json" <<'EOF' || fail "stat --json dir/inner.bin: wrong values (see above)"
import json, sys
d = json.load(open(sys.argv[1]))
want = {"path": "dir/inner.bin", "type": "file", "mode": "0600", "size": 100000,
        "mtime": "981173106.000000007"}
bad = ["%s: got %r, expected %r" % (k, d.get(k), v) for k, v in want.items() if d.get(k) != v]
for k in ("inode", "container", "offset"):
    if type(d.get(k)) is not int:
        bad.append("%s: %r is not an integer" % (k, d.get(k)))
x = d.get("xxh3")
if not (isinstance(x, str) and len(x) == 16 and all(c in "0123456789abcdef" for c in x)):
    bad.append("xxh3: %r" % (x,))
for b in bad:
    print("  " + b, file=sys.stderr)
sys.exit(1 if bad else 0)
EOF
inspect stat "$DS" dir/inner.bin
grep -qxF "xxh3: $(json_get "$T/st.json" xxh3)" "$T/out" || fail "stat and stat --json disagree on xxh3"
grep -qxF "offset: $(json_get "$T/st.json" offset)" "$T/out" || fail "stat and stat --json disagree on offset"
inspect stat --json "$DS" dir/dangling
expect_ok "stat --json symlink"
cp "$T/out" "$T/st.json"
[ "$(json_get "$T/st.json" target)" = /nonexistent/target ] || fail "stat --json dangling symlink: wrong target"
[ "$(json_get "$T/st.json" type)" = symlink ] || fail "stat --json dangling symlink: type"

inspect stat "$DS" no/such/file
expect_rc 1 "stat of a missing path"
err_has "no/such/file" "stat of a missing path: message names it"
err_has_re "no such file" "stat of a missing path: message says 'No such file or directory'"
[ -s "$T/out" ] && { _show; fail "stat of a missing path printed on stdout"; }
inspect stat "$DS" link/x
expect_fail "stat through a symlink (links are never followed)"
inspect stat "$DS" dir/../hello.txt
expect_fail "stat of a path with '..'"

# --- cat
for p in hello.txt dir/inner.bin big empty "with space" dir/sub/deep; do
	inspect cat "$DS" "$p"
	expect_ok "cat $p"
	cmp -s "$T/out" "$S/$p" || fail "cat $p: output differs from the source file"
	[ -s "$T/err" ] && { _show; fail "cat $p printed on stderr"; }
done
inspect cat "$DS" /dir/./inner.bin
expect_ok "cat /dir/./inner.bin"
cmp -s "$T/out" "$S/dir/inner.bin" || fail "cat /dir/./inner.bin differs"
inspect cat "$DS" dir
expect_rc 1 "cat of a directory"
err_has "dir" "cat of a directory names it"
err_has_re "is a directory" "cat of a directory: 'Is a directory'"
inspect cat "$DS" nope.txt
expect_rc 1 "cat of a missing file"
err_has "nope.txt" "cat of a missing file names it"
# cat and pipes: output into a pipe must work as well as into a file.
timeout 60 "$DLFS_INSPECT" cat "$DS" big | cmp -s - "$S/big" || fail "cat big | cmp: differs through a pipe"

# --- extract
inspect extract "$DS" "$T/x1"
expect_ok "extract into a new dir"
diff_trees "$S" "$T/x1"
compare_trees "$S" "$T/x1" --with-root
mkdir "$T/x2"
inspect extract "$DS" "$T/x2"
expect_ok "extract into an empty dir"
compare_trees "$S" "$T/x2" --with-root
mkdir "$T/x3"
echo keep >"$T/x3/precious"
inspect extract "$DS" "$T/x3"
expect_rc 1 "extract into a non-empty dir"
err_has "x3" "extract into a non-empty dir names it"
[ "$(ls -A "$T/x3")" = precious ] && [ "$(cat "$T/x3/precious")" = keep ] ||
	fail "extract into a non-empty dir touched its contents"
inspect extract "$DS" "$T/nodir/x4"
expect_rc 1 "extract into a dir whose parent is missing"

# --- missing / not-a-dataset
inspect info "$T/missing.dlfs"
expect_rc 1 "info of a missing dataset"
err_has "dlfs-inspect: $T/missing.dlfs: No such file or directory" "info of a missing dataset"
mkdir "$T/notads"
inspect ls "$T/notads"
expect_rc 1 "ls of a directory that is not a dataset"
err_has "notads" "ls of a non-dataset names it"

# --- usage errors: exit 2, nothing on stdout
usage() {
	inspect "$@"
	[ "$RC" = 2 ] || { _show; fail "dlfs-inspect $*: expected exit 2 (usage), got $RC"; }
	[ -s "$T/err" ] || fail "dlfs-inspect $*: usage error without a message"
}
usage
usage bogus "$DS"
usage info
usage info --bogus "$DS"
usage info "$DS" extra
usage ls
usage ls "$DS" dir extra
usage stat "$DS"
usage stat "$DS" a b
usage cat "$DS"
usage verify
usage verify "$DS" extra
usage extract "$DS"
usage ls --json "$DS"
usage cat -l "$DS" hello.txt
inspect --help
expect_ok "--help"
grep -qi usage "$T/out" || { _show; fail "--help: no usage text on stdout"; }
inspect --version
expect_ok "--version"
grep -q '0\.1\.0' "$T/out" || { _show; fail "--version: no version number on stdout"; }
exit 0
