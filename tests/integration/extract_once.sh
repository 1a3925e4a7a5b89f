#!/bin/bash
# extract_once: dlfs-inspect extract, and cat of many files, read each
# chunk once, as verify does (issue 38, item 7: extract of a compressed
# dataset decompressed a whole chunk for every file, 7 min 39 s for
# 10,001 files where verify took 0.2 s):
#  - a tree of thousands of small compressible files (tens a chunk) and
#    gentree's odd tree, packed compressed in sorted and shuffled order
#    and uncompressed, extracts byte for byte (modes, mtimes, symlinks,
#    directories), and under strace the extract reads the containers no
#    more often than verify does, and no more than once a chunk (plus
#    each container's header and footer), never once a file;
#  - cat of every file at once, in name order, reads as few, and writes
#    the files' bytes one after the other; a missing one among them is
#    named and the rest still written;
#  - the progress line: on a terminal (script(1)), unless -q; never when
#    standard error is not one.
# Counts, not timings: what is counted is read system calls on the
# .dlc files (strace -y names each descriptor's file).
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"

command -v strace >/dev/null || skip "strace is not installed"
strace -f -qq -e trace=none true 2>/dev/null || skip "strace cannot trace here (ptrace refused)"

gentree odd "$T/src" --seed 21
"$PYTHON" - "$T/src/many" <<'PY'
import os, sys
d = sys.argv[1]
for g in range(6):
    os.makedirs(f"{d}/g{g}")
    for i in range(400):
        with open(f"{d}/g{g}/s{i:04d}.txt", "w") as f:
            f.write("".join(f"sample {g}/{i}, line {j}: the quick brown fox\n"
                            for j in range(20 + i % 23)))
PY
NFILES=$(find "$T/src" -type f -printf . | wc -c)

# reads FILE: read system calls on container files in strace output FILE.
reads() { grep -c '^[0-9]* *\(pread64\|read\|preadv\|preadv2\)(.*\.dlc>' "$1" || true; }
# traced NAME ARGS...: dlfs-inspect ARGS under strace, the trace in
# $T/NAME.trace. LeakSanitizer cannot run under ptrace (an ASan build):
# leaks are the untraced runs' to find.
traced() {
	local name=$1
	shift
	LAST_CMD="strace dlfs-inspect $*"
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
		run strace -f -qq -y -e trace=pread64,read,preadv,preadv2 \
		-o "$T/$name.trace" "$DLFS_INSPECT" "$@"
}

# check DS HOW [compressed]: verify, then extract, of DS under strace;
# the extract reads no more than verify, and (compressed: info counts
# the chunks) at most a chunk once; the tree is the source's.
check() {
	local ds=$1 how=$2 containers vr xr CHUNKS=
	inspect info --json "$ds"
	expect_ok "info ($how)"
	containers=$(json_get "$T/out" containers)
	[ "${3:-}" != compressed ] || CHUNKS=$(json_get "$T/out" chunks)
	traced verify verify "$ds"
	expect_ok "verify ($how)"
	vr=$(reads "$T/verify.trace")
	rm -rf "$T/x"
	traced extract extract "$ds" "$T/x"
	expect_ok "extract ($how)"
	[ ! -s "$T/err" ] || { _show; fail "extract ($how): stderr is not a terminal, yet it printed"; }
	xr=$(reads "$T/extract.trace")
	note "$how: $NFILES files, ${CHUNKS:-?} chunks, $containers containers: verify $vr container reads, extract $xr"
	[ "$vr" -gt 0 ] && [ "$xr" -gt 0 ] || fail "$how: strace saw no container reads (verify $vr, extract $xr)"
	[ "$xr" -le $((vr + 2)) ] ||
		fail "$how: extract read the containers $xr times, verify $vr: more than verify"
	if [ -n "${CHUNKS:-}" ]; then
		[ "$xr" -le $((CHUNKS + 3 * containers + 2)) ] ||
			fail "$how: extract read the containers $xr times for $CHUNKS chunks in $containers containers"
	fi
	[ $((10 * xr)) -lt "$NFILES" ] ||
		fail "$how: $xr container reads for $NFILES files: not far below one a file"
	compare_trees "$T/src" "$T/x"
	diff_trees "$T/src" "$T/x"
}

CS=(--chunk-size 64K --container-size 1M -q)
pack "$T/src" -o "$T/c.dlfs" "${CS[@]}" --compress zstd
expect_ok "pack --compress zstd"
inspect info "$T/c.dlfs"
CHUNKS=$(awk '$1 == "chunks:" {print $2}' "$T/out")
raw=$(awk '$1 == "raw_chunks:" {print $2}' "$T/out")
[ "$CHUNKS" -ge 20 ] && [ $((NFILES / CHUNKS)) -ge 20 ] && [ "$raw" -lt "$CHUNKS" ] ||
	{ _show; fail "want >= 20 chunks, mostly compressed, of >= 20 files each: $NFILES files, $CHUNKS chunks, $raw raw"; }
check "$T/c.dlfs" "compressed, sorted" compressed

pack "$T/src" -o "$T/s.dlfs" "${CS[@]}" --compress zstd --order shuffle:3
expect_ok "pack --compress zstd --order shuffle:3"
check "$T/s.dlfs" "compressed, shuffled" compressed

pack "$T/src" -o "$T/u.dlfs" "${CS[@]}" --compress none
expect_ok "pack --compress none"
check "$T/u.dlfs" "uncompressed"

note "cat of every file at once, in name order"
(cd "$T/src" && find . -type f -print0 | LC_ALL=C sort -z | sed -z 's|^\./||') >"$T/list"
(cd "$T/src" && xargs -0 cat --) <"$T/list" >"$T/want"
mapfile -d '' FILES <"$T/list"
[ "${#FILES[@]}" = "$NFILES" ] || fail "listed ${#FILES[@]} files, want $NFILES"
inspect info --json "$T/c.dlfs"
containers=$(json_get "$T/out" containers)
traced cat cat "$T/c.dlfs" -- "${FILES[@]}"
expect_ok "cat of $NFILES files"
cmp -s "$T/out" "$T/want" || fail "cat of $NFILES files: not their bytes one after the other"
cr=$(reads "$T/cat.trace")
note "cat of $NFILES files: $cr container reads, $CHUNKS chunks"
[ "$cr" -le $((CHUNKS + 3 * containers + 2)) ] ||
	fail "cat of $NFILES files read the containers $cr times for $CHUNKS chunks in $containers containers"

note "cat: a missing file among others"
inspect cat "$T/c.dlfs" "${FILES[0]}" no/such/file "${FILES[1]}"
expect_rc 1 "cat with a missing file"
err_has "no/such/file" "cat names the missing file"
cat -- "$T/src/${FILES[0]}" "$T/src/${FILES[1]}" >"$T/want2"
cmp -s "$T/out" "$T/want2" || fail "cat with a missing file: the others are not written"

note "the progress line, on a terminal only"
if command -v script >/dev/null; then
	for q in "" -q; do
		rm -rf "$T/x"
		LAST_CMD="script dlfs-inspect extract $q"
		run script -qfec "$(printf '%q ' "$DLFS_INSPECT" extract $q "$T/c.dlfs" "$T/x")" /dev/null
		expect_ok "extract $q on a terminal"
		if [ -z "$q" ]; then
			grep -aq "extract: [0-9]*/$NFILES files, " "$T/out" ||
				{ _show; fail "extract on a terminal: no progress line"; }
		else
			[ ! -s "$T/out" ] || { _show; fail "extract -q on a terminal printed"; }
		fi
		compare_trees "$T/src" "$T/x"
	done
else
	note "script(1) not installed: the progress line is not checked"
fi
