#!/bin/bash
# hostile_index: an index is data, and the tools must survive any of it.
# Records are rewritten with tests/util/ixedit (dlfs-format(5) layouts):
#   - extract never writes outside its target: directory entries named
#     "..", "../x", an absolute path, "l/x" under a symlink l it made, or
#     a directory named twice, are refused as damage (issue 11, item 2);
#   - a name longer than 255 bytes is damage, not a stack overflow
#     (item 5); so is an inode whose type disagrees with its number;
#   - verify survives a chunk record longer than the chunk size and inode
#     records outside (or out of order inside) their container, and names
#     each damaged file by path (item 4).
# Every failure must be a clean exit 1 with a message: never a crash.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"
. "$LIB_DIR/ixlib.sh"

mkdir -p "$T/src/d" "$T/outside"
"$PYTHON" - "$T/src" <<'EOF'
import os, random, sys
r = random.Random(5)
d = sys.argv[1]
for n in ("a", "b", "c", "m", "d/x", "d/y"):
    open(os.path.join(d, n), "wb").write(r.randbytes(3000))
open(os.path.join(d, "big"), "wb").write(r.randbytes(200000))  # 4 chunks
open(os.path.join(d, "e"), "wb").close()
EOF
ln -s "$T/outside" "$T/src/l"
DS0="$T/ds0.dlfs"
pack "$T/src" -o "$DS0" --chunk-size 64K -q
expect_ok "pack"
inspect verify "$DS0"
expect_ok "verify of the intact dataset"

fresh() { rm -rf "$DS" "$T/x"; cp -a "$DS0" "$DS"; mkdir -p "$T/x"; }
DS="$T/ds.dlfs"
# no_escape: nothing was written beside the target or through l.
no_escape() {
	assert_absent "$T/evil" "$1: a file beside the target"
	[ -z "$(ls -A "$T/outside")" ] || fail "$1: extract wrote into $T/outside through a symlink: $(ls -A "$T/outside")"
	[ ! -e "$T/abs-evil" ] || fail "$1: extract wrote an absolute path"
}

note "extract: an entry named ../evil"
fresh
rename a ../evil
inspect extract "$DS" "$T/x/out"
expect_fail "extract of an entry named ../evil"
err_has_re "damaged" "extract of ../evil says the index is damaged"
no_escape "../evil"
inspect ls "$DS"
expect_fail "ls of a directory with an entry named ../evil"

note "extract: an absolute name"
fresh
rename a "$T/abs-evil"
inspect extract "$DS" "$T/x/out"
expect_fail "extract of an absolute name"
no_escape "absolute name"

note "extract: an entry under a symlink the extraction made"
fresh
rename m l/evil
inspect extract "$DS" "$T/x/out"
expect_fail "extract of l/evil with l a symlink"
no_escape "l/evil"

note "extract: entries named . and .."
for n in . ..; do
	fresh
	rename a "$n"
	inspect extract "$DS" "$T/x/out"
	expect_fail "extract of an entry named $n"
	err_has_re "damaged" "an entry named $n is damage"
	no_escape "$n"
done

note "extract: a directory named twice"
fresh
v=$("$IXEDIT" "$DS/index" get dirents "$(root_key d)")
ix put dirents "$(root_key d2)" "$v"
inspect extract "$DS" "$T/x/out"
expect_fail "extract of a directory named twice"
# Format 1.1: d's record is bound to the name d, so d2 never reaches it.
err_has "entry 'd2' of directory inode 1 leads to inode" "a directory named twice is named as damage"
err_has "another name's" "a directory named twice: its record is another name's"
# Format 1.0 has no binding: extract's own check must hold there.
DS10="$T/v10.dlfs"
cp -a "$SRC_ROOT/tests/fixtures/v10.dlfs" "$DS10"
chmod -R u+w "$DS10"
rm -f "$DS10/index.sum"
v=$("$IXEDIT" "$DS10/index" get dirents "$(root_key a)")
"$IXEDIT" "$DS10/index" put dirents "$(root_key a2)" "$v" || fail "ixedit on the 1.0 fixture"
rm -rf "$T/x10"
inspect extract "$DS10" "$T/x10"
expect_fail "extract of a 1.0 dataset with a directory named twice"
err_has "named twice" "a directory named twice in a 1.0 dataset is named as damage"

note "an inode whose type disagrees with its number (a file made a directory)"
fresh
inode_set "$(ino_of c)" mode $((0040755))
inspect extract "$DS" "$T/x/out"
expect_fail "extract of a file inode typed as a directory"
err_has_re "inode [0-9]+ is damaged" "the inode is named as damaged"
inspect verify "$DS"
expect_rc 1 "verify of a file inode typed as a directory"
err_has "verify: c: " "verify names c"

note "a name of 500 bytes (more than 255)"
fresh
LONG=$(printf 'A%.0s' $(seq 500))
rename a "$LONG"
inspect extract "$DS" "$T/x/out"
expect_fail "extract of a 500-byte name"
err_has_re "damaged" "a 500-byte name is damage"
inspect ls "$DS"
expect_fail "ls of a 500-byte name"
err_has_re "damaged" "ls: a 500-byte name is damage"

note "verify: a chunk record longer than the chunk size"
fresh
ix put chunks 0000000000000000 "$("$PYTHON" -c '
import struct, sys
print(struct.pack("<QII", 0, 0xffffff00, 0).hex())')"
inspect verify "$DS"
expect_rc 1 "verify with a chunk record of 4 GiB"
err_has "000000.dlc" "the chunk's container is named"
err_has_re "chunk 0 of container 0.*damaged" "the chunk record is named as damaged"
grep -qE ': [0-9]+ files checked|files' "$T/out" || { _show; fail "verify did not finish its walk"; }

note "verify: an inode outside its container"
fresh
inode_set "$(ino_of b)" offset $((1 << 40))
inspect verify "$DS"
expect_rc 1 "verify with b's inode outside its container"
err_has "verify: b: " "b is named by its path"
err_has_re "verify: b: .*inode record is damaged" "b's inode record is named as damaged"
if grep -q "verify: c: \|verify: a: \|verify: big: " "$T/err"; then
	_show
	fail "an intact file is named"
fi

note "verify: an empty file whose offset lies past the data"
fresh
inode_set "$(ino_of e)" offset $((64 * 1024 + 10 * 65536))
inspect verify "$DS"
# An empty file has no bytes to find: its offset may be refused as
# damage or ignored, but never used to read.
[ "$RC" = 0 ] || [ "$RC" = 1 ] || { _show; fail "verify with e's offset past the data: exit $RC"; }
[ "$RC" = 0 ] || err_has "verify: e: " "e is named by its path"

note "verify: a file whose record points at another file's bytes"
fresh
inode_set "$(ino_of big)" offset "$(offset_of a)"
inspect verify "$DS"
expect_rc 1 "verify with big pointing at a's bytes"
err_has "verify: big: " "big is named by its path"
for f in a b c m d/x d/y; do
	if grep -qF "verify: $f: " "$T/err"; then _show; fail "intact $f is named"; fi
done
inode_set "$(ino_of m)" offset "$(offset_of a)"
inspect verify "$DS"
expect_rc 1 "verify with m pointing back at a's bytes"
err_has "verify: m: " "m (out of layout order) is named by its path"
if grep -qF "verify: a: " "$T/err"; then _show; fail "intact a is named"; fi
