#!/bin/bash
# roundtrip: the "odd" tree (every kind of name, size, mode, mtime, symlink)
# survives dlfs-pack -> dlfs-inspect verify/extract unchanged, for every
# --order and for --align 4096, with 64 KiB chunks and 1 MiB containers so
# that many chunks and several containers are used. Also checks info --json
# counts, and stat/ls/layout of every entry via dscheck.py.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"

gentree odd "$T/src" --seed 11
COUNTS=$(tree_counts "$T/src")
NFILES=$("$PYTHON" -c 'import json,sys; print(json.loads(sys.argv[1])["files"])' "$COUNTS")
NBYTES=$("$PYTHON" -c 'import json,sys; print(json.loads(sys.argv[1])["bytes"])' "$COUNTS")

# roundtrip NAME ORDER ALIGN CHUNK CONTAINER [extra pack args...]
roundtrip() {
	local name=$1 order=$2 align=$3 chunk=$4 csize=$5
	shift 5
	local out="$T/ds/$name.dlfs" x="$T/x-$name"
	note "config $name: $*"
	mkdir -p "$T/ds"
	pack "$T/src" -o "$out" "$@"
	expect_ok "pack ($name)"
	[ -d "$out" ] || fail "pack ($name) exited 0 but $out is not a directory"
	[ -f "$out/index" ] || fail "pack ($name): no $out/index"
	[ "$(ls -A "$T/ds")" = "$name.dlfs" ] || fail "pack ($name) left litter next to OUT: $(ls -A "$T/ds" | tr '\n' ' ')"

	inspect verify "$out"
	expect_ok "verify ($name)"
	grep -qE "^verified: $NFILES files, [0-9]+ chunks, [0-9]+ containers, $NBYTES bytes: OK\$" "$T/out" ||
		{ _show; fail "verify ($name): stdout lacks 'verified: $NFILES files, M chunks, K containers, $NBYTES bytes: OK'"; }

	check_info_counts "$out" "$T/src"
	local k v
	for k in chunk_size:$chunk container_size:$csize align:$align order:$order; do
		v=$(json_get "$T/info.json" "${k%%:*}")
		[ "$v" = "${k#*:}" ] || fail "info --json ($name): ${k%%:*} is '$v', expected '${k#*:}'"
	done
	NCONT=$(json_get "$T/info.json" containers)
	echo "$NCONT" >"$T/ncont-$name.json"

	inspect extract "$out" "$x"
	expect_ok "extract ($name)"
	diff_trees "$T/src" "$x"
	compare_trees "$T/src" "$x" --mtime ns --with-root
	"$PYTHON" "$(dirname "$0")/dscheck.py" "$DLFS_INSPECT" "$out" "$T/src" \
		--chunk "$chunk" --align "$align" --order "$order" \
		--layout-out "$T/layout-$name.json" ||
		fail "stat/ls/layout check of $out ($name) against the source failed (see above)"
	chmod -R u+rwx "$x"
	rm -rf "$x" "$out"
}

C64=65536
M1=1048576
roundtrip sorted sorted 1 $C64 $M1 --chunk-size 64K --container-size 1M --order sorted
[ "$(cat "$T/ncont-sorted.json")" -ge 3 ] ||
	fail "expected at least 3 containers with --container-size 1M and ~3.5 MB of data, got $(cat "$T/ncont-sorted.json")"
roundtrip input input 1 $C64 $M1 --chunk-size 64K --container-size 1M --order input
roundtrip size size 1 $C64 $M1 --chunk-size 64K --container-size 1M --order size
roundtrip shuffle7 shuffle:7 1 $C64 $M1 --chunk-size 64K --container-size 1M --order shuffle:7
roundtrip shuffle8 shuffle:8 1 $C64 $M1 --chunk-size 64K --container-size 1M --order shuffle:8 --threads 3
roundtrip align4k sorted 4096 $C64 $M1 --chunk-size 64K --container-size 1M --align 4096
roundtrip align64k sorted 65536 $C64 $M1 --chunk-size 64KiB --container-size 1MiB --align 64K --order sorted
# Defaults: 4 MiB chunks, 4 GiB containers, sorted, align 1: one container.
roundtrip default sorted 1 4194304 4294967296
[ "$(cat "$T/ncont-default.json")" = 1 ] || fail "default options: expected 1 container, got $(cat "$T/ncont-default.json")"

# The orders really differ from each other.
cmp -s "$T/layout-sorted.json" "$T/layout-shuffle7.json" && fail "--order shuffle:7 laid files out exactly like sorted"
cmp -s "$T/layout-shuffle7.json" "$T/layout-shuffle8.json" && fail "--order shuffle:7 and shuffle:8 gave the same layout"
cmp -s "$T/layout-sorted.json" "$T/layout-size.json" && fail "--order size laid files out exactly like sorted"
cmp -s "$T/layout-sorted.json" "$T/layout-default.json" || fail "default order is not the same layout as --order sorted"
cmp -s "$T/layout-sorted.json" "$T/layout-align4k.json" || fail "--align changed the file order"

# -q: nothing at all on stderr; without it a summary is printed.
pack "$T/src" -o "$T/q.dlfs" -q --chunk-size 64K
expect_ok "pack -q"
[ -s "$T/err" ] && { _show; fail "pack -q printed on stderr"; }
[ -s "$T/out" ] && { _show; fail "pack -q printed on stdout"; }
pack "$T/src" -o "$T/s.dlfs" --chunk-size 64K
expect_ok "pack (summary)"
[ -s "$T/err" ] || fail "pack without -q printed no summary on stderr"
grep -q "$NFILES" "$T/err" || { _show; fail "pack summary does not mention the file count $NFILES"; }
exit 0
