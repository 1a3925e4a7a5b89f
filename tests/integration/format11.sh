#!/bin/bash
# format11: format 1.1 (dlfs-format(5) VERSIONS), through dlfs-inspect.
#  - a format-1.0 dataset packed by the last 1.0 dlfs-pack
#    (tests/fixtures/v10.dlfs) still opens, verifies and extracts, byte for
#    byte, and info says 1.0 with no features;
#  - a feature bit this dlfs does not know is refused by every command,
#    with a message that names the bit and the dataset (issue 28);
#  - a directory entry pointed at another intact file's inode (issue 11,
#    left undone: its bytes were served with no error) is refused by cat,
#    ls -l, verify (which names exactly that path) and extract, while
#    every other file reads right.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"
. "$LIB_DIR/ixlib.sh"

note "a format-1.0 dataset from the fixtures"
DS="$T/v10.dlfs"
cp -a "$SRC_ROOT/tests/fixtures/v10.dlfs" "$DS"
chmod -R u+w "$DS"
inspect info "$DS"
expect_ok "info of the 1.0 dataset"
for kv in "format_version: 1.0" "features: none" "files: 5" "dirs: 4" "symlinks: 1"; do
	grep -qxF "$kv" "$T/out" || { _show; fail "info of 1.0: no line '$kv'"; }
done
inspect verify "$DS"
expect_ok "verify of the 1.0 dataset"
grep -q "OK$" "$T/out" || { _show; fail "verify of 1.0: not OK (a seal it has must match)"; }
check_cat() { # DS PATH WANT-BYTES-AS-PRINTF
	inspect cat "$1" "$2"
	expect_ok "cat $2"
	printf "$3" | cmp -s - "$T/out" || { _show; fail "cat $2 of $1: wrong bytes"; }
}
check_cat "$DS" a/x 'hello from format 1.0\n'
check_cat "$DS" a/y 'the second file\n'
check_cat "$DS" a/sub/z 'deep\n'
check_cat "$DS" empty ''
inspect cat "$DS" big
[ "$(tr -d q <"$T/out" | wc -c)" = 0 ] && [ "$(wc -c <"$T/out")" = 5000 ] ||
	fail "cat big of the 1.0 dataset: not 5000 bytes of q"
inspect stat --json "$DS" link
grep -q '"target": "a/x"' "$T/out" || { _show; fail "stat link of 1.0: target is not a/x"; }
inspect extract "$DS" "$T/x10"
expect_ok "extract of the 1.0 dataset"
[ "$(cat "$T/x10/a/sub/z")" = deep ] && [ "$(readlink "$T/x10/link")" = a/x ] &&
	[ -d "$T/x10/emptydir" ] && [ ! -s "$T/x10/empty" ] ||
	fail "extract of the 1.0 dataset: wrong tree"
[ "$(stat -c %Y "$T/x10/a/x")" = 1577836800 ] || fail "extract of 1.0: wrong mtime"

note "a feature bit this dlfs does not know"
mkdir -p "$T/src/a"
printf 'one\n' >"$T/src/a/x"
printf 'two\n' >"$T/src/a/y"
printf 'three\n' >"$T/src/b"
printf 'four\n' >"$T/src/a/z"
DS0="$T/ds0.dlfs"
pack "$T/src" -o "$DS0" --chunk-size 64K -q
expect_ok "pack"
inspect info "$DS0"
for kv in "format_version: 1.1" "features: path_bound"; do
	grep -qxF "$kv" "$T/out" || { _show; fail "info of a new pack: no line '$kv'"; }
done
for base in "$DS0" "$SRC_ROOT/tests/fixtures/v10.dlfs"; do
	DS="$T/ds.dlfs"
	rm -rf "$DS"
	cp -a "$base" "$DS"
	chmod -R u+w "$DS"
	rm -f "$DS/index.sum"
	"$IXEDIT" "$DS/index" feature 5 || fail "ixedit feature 5"
	for cmd in info ls verify "cat a/x" "extract $T/xf"; do
		set -- $cmd
		c=$1
		shift
		inspect "$c" "$DS" "$@"
		expect_rc 1 "dlfs-inspect $cmd with feature bit 5 ($(basename "$base"))"
		err_has "$DS: feature bit 5 (0x20) is not known to this dlfs: a newer dlfs-pack made it" \
			"dlfs-inspect $cmd with feature bit 5"
		[ -s "$T/out" ] && { _show; fail "dlfs-inspect $cmd with an unknown feature printed on stdout"; }
		[ ! -e "$T/xf" ] || fail "extract with an unknown feature made its target"
	done
done

note "an entry pointed at another file's inode"
DS="$T/ds.dlfs"
rm -rf "$DS"
cp -a "$DS0" "$DS"
rm -f "$DS/index.sum"
X=$(DS0=$DS0 ino_of a/x)
Y=$(DS0=$DS0 ino_of a/y)
"$IXEDIT" "$DS/index" point a/x a/y || fail "ixedit point a/x a/y"
inspect cat "$DS" a/x
expect_rc 1 "cat of a/x, which now leads to a/y's inode"
err_has "entry 'x' of directory inode 2 leads to inode $Y, whose record is another name's: damaged directory entry" \
	"cat of the pointed entry names parent, name and inode"
[ -s "$T/out" ] && { _show; fail "cat of the pointed entry printed a/y's bytes"; }
check_cat "$DS" a/y 'two\n'
check_cat "$DS" a/z 'four\n'
check_cat "$DS" b 'three\n'
inspect ls -l "$DS" a
expect_rc 1 "ls -l of a/ with the pointed entry"
err_has "entry 'x' of directory inode 2" "ls -l names the pointed entry"
inspect ls "$DS" a
expect_ok "ls of a/ (names only)"
inspect verify "$DS"
expect_rc 1 "verify with the pointed entry"
grep -c "^dlfs-inspect: verify: " "$T/err" | grep -qx 1 || { _show; fail "verify: not exactly one damage line"; }
err_has "dlfs-inspect: verify: a/x: $DS/index: entry 'x' of directory inode 2 leads to inode $Y" \
	"verify names the pointed entry by its path"
grep -q "damaged directory entries" "$T/out" || { _show; fail "verify's summary does not say entries are damaged"; }
inspect extract "$DS" "$T/xp"
expect_rc 1 "extract with the pointed entry"
err_has "entry 'x' of directory inode 2 leads to inode $Y" "extract names the pointed entry"
# The inode that lost its only entry is intact, and found by number.
inspect verify "$DS0"
expect_ok "verify of the intact dataset"
[ "$X" != "$Y" ] || fail "a/x and a/y have one inode"
exit 0
