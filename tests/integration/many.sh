#!/bin/bash
# many: a tree of 100,000 small files (1,000 dirs) packs, verifies, extracts
# and diffs identical, and the index costs < 100 bytes per file (the issue's
# target), measured from info --json index_bytes / inodes.
# DLFS_MANY_COUNT overrides the number of files (default 100000).
# Its 200,000 files live in /dev/shm when it is there (DLFS_MANY_TMPDIR
# overrides): a root file system mounted with `discard` (as here) frees
# each file's blocks with a synchronous discard, and removing them took
# over 450 s on a busy machine.
set -euo pipefail
if [ -n "${DLFS_MANY_TMPDIR:-}" ]; then
	export TMPDIR=$DLFS_MANY_TMPDIR
elif [ -d /dev/shm ] && [ -w /dev/shm ]; then
	export TMPDIR=/dev/shm
fi
. "$(dirname "$0")/../lib/lib.sh"

N=${DLFS_MANY_COUNT:-100000}
t0=$(date +%s.%N)
gentree many "$T/src" --count "$N" --per-dir 100 --max-size 512 --seed 5
t1=$(date +%s.%N)

mkdir "$T/ds"
pack "$T/src" -o "$T/ds/many.dlfs"
expect_ok "pack of $N files"
[ "$(ls -A "$T/ds")" = many.dlfs ] || fail "pack left litter: $(ls -A "$T/ds" | tr '\n' ' ')"
t2=$(date +%s.%N)

inspect verify "$T/ds/many.dlfs"
expect_ok "verify of $N files"
grep -qE "^verified: $N files, .*: OK\$" "$T/out" || { _show; fail "verify did not report '$N files ... OK'"; }
t3=$(date +%s.%N)

check_info_counts "$T/ds/many.dlfs" "$T/src"
IB=$(json_get "$T/info.json" index_bytes)
INODES=$(json_get "$T/info.json" inodes)
PER=$("$PYTHON" -c "import sys; print('%.1f' % ($IB / $INODES))")
note "index: $IB bytes for $INODES inodes = $PER bytes/inode (index file $(stat -c %s "$T/ds/many.dlfs/index") bytes)"
"$PYTHON" -c "import sys; sys.exit(0 if $IB / $INODES < 100 else 1)" ||
	fail "index costs $PER bytes per inode, target is < 100 (index_bytes=$IB, inodes=$INODES)"

inspect extract "$T/ds/many.dlfs" "$T/x"
expect_ok "extract of $N files"
t4=$(date +%s.%N)
diff_trees "$T/src" "$T/x"
compare_trees "$T/src" "$T/x" --mtime ns
t5=$(date +%s.%N)

# A few random files through cat.
for p in g000/d00000/file00000.bin g005/d00517/file00042.bin "g$(printf %03d $(((N / 100 - 1) / 100)))/d$(printf %05d $((N / 100 - 1)))/file00099.bin"; do
	[ -f "$T/src/$p" ] || continue
	inspect cat "$T/ds/many.dlfs" "$p"
	expect_ok "cat $p"
	cmp -s "$T/out" "$T/src/$p" || fail "cat $p differs from the source"
done

"$PYTHON" -c "
t0,t1,t2,t3,t4,t5 = $t0,$t1,$t2,$t3,$t4,$t5
print('[many] timings: gentree %.1fs, pack %.1fs, verify %.1fs, extract %.1fs, compare %.1fs' % (t1-t0, t2-t1, t3-t2, t4-t3, t5-t4))" >&2
exit 0
