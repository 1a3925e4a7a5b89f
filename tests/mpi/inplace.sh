#!/bin/bash
# mpi inplace: dlfs-pack --in-place on 4 ranks (under the launcher of the
# build's MPI: lib/mpilib.sh) over WebDataset-style shards and pax, GNU,
# ustar and zip archives (tests/lib/archives.py) writes the index and
# seal of one process, byte for byte (cmp), and the dataset mounts and
# reads as the extracted trees (diff -r). Each archive is read by the
# worker threads of exactly one rank, and every rank reads some (seen
# with strace when installed). Two archives on 4 ranks: the same index as
# one process's. A shard cut short in another rank's share fails the job
# with one message, from rank 0, the one process's, and nothing is left
# beside OUT. Skips (77) when dlfs-pack was built without MPI or its
# launcher is missing.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"
mount_setup
. "$LIB_DIR/mpilib.sh"
mpi_require
NP=4

for s in wds mixed; do
	tmo "$PYTHON" "$LIB_DIR/archives.py" "$T/$s" "$s" ||
		fail "test setup: cannot make the $s archives"
done
mkdir "$T/want" "$T/ds"
cp -a "$T"/wds/want/. "$T"/mixed/want/. "$T/want/"
ALL=("$T"/wds/shard-*.tar "$T"/mixed/pax.tar "$T"/mixed/gnu.tar "$T"/mixed/ustar.tar "$T"/mixed/coco.zip)
ARGS=(--in-place --chunk-size 64K -q)

pack "${ARGS[@]}" "${ALL[@]}" -o "$T/ds/one.dlfs"
expect_ok "dlfs-pack --in-place in one process"

# Each rank under strace (when there is one), to see what it reads.
mpi_traced_pack
st=0
tmo "${MPIRUN[@]}" -np $NP "$T/rank.sh" "${ARGS[@]}" "${ALL[@]}" -o "$T/ds/mpi.dlfs" >"$T/mpirun.log" 2>&1 || st=$?
[ "$st" = 0 ] || { cat "$T/mpirun.log" >&2; fail "$NP ranks of dlfs-pack --in-place exited with $st"; }

note "byte-identical to one process"
[ "$(ls "$T/ds/mpi.dlfs" | tr '\n' ' ')" = "index index.sum " ] ||
	fail "the dataset holds more than the index and its seal: $(ls "$T/ds/mpi.dlfs")"
for f in index index.sum; do
	cmp "$T/ds/one.dlfs/$f" "$T/ds/mpi.dlfs/$f" >&2 || fail "$f differs between one process and $NP ranks"
done

note "mounted, it reads as the extracted trees"
inspect verify "$T/ds/mpi.dlfs"
expect_ok "verify the dataset $NP ranks indexed"
mkdir "$T/mnt"
dlfs_mount "$T/ds/mpi.dlfs" "$T/mnt"
diff_trees "$T/want" "$T/mnt"
check_log "$DLFS_LOG"
dlfs_umount "$T/mnt"

if command -v strace >/dev/null; then
	note "each archive read by one rank's workers"
	# A rank's first thread is dlfs-pack's own; its workers open the
	# archives they read.
	all=""
	for ((r = 0; r < NP; r++)); do
		main=$(head -n 1 "$T/trace.$r" | cut -d' ' -f1)
		read=$(grep -E '^[0-9]+ +openat\(AT_FDCWD, "[^"]*/(shard-[0-9]+\.tar|pax\.tar|gnu\.tar|ustar\.tar|coco\.zip)", O_RDONLY' "$T/trace.$r" |
			grep -v "^$main " | grep -oE '[a-z0-9-]+\.(tar|zip)"' | sort -u | tr -d '"')
		[ -n "$read" ] || fail "rank $r read no archive"
		all="$all $read"
	done
	[ -z "$(echo $all | tr ' ' '\n' | sort | uniq -d)" ] || fail "two ranks read the same archive:$all"
	[ "$(echo $all | tr ' ' '\n' | sort -u | wc -l)" = "${#ALL[@]}" ] || fail "the ranks did not read every archive:$all"
else
	note "strace not installed: which rank reads what is not checked"
fi

note "more ranks than archives: those without one idle, the same index"
TWO=("$T"/mixed/pax.tar "$T"/wds/shard-000001.tar)
pack "${ARGS[@]}" "${TWO[@]}" -o "$T/ds/one2.dlfs"
expect_ok "dlfs-pack --in-place of two archives in one process"
st=0
tmo "${MPIRUN[@]}" -np $NP "$DLFS_PACK" "${ARGS[@]}" "${TWO[@]}" -o "$T/ds/mpi2.dlfs" >"$T/mpirun.log" 2>&1 || st=$?
[ "$st" = 0 ] || { cat "$T/mpirun.log" >&2; fail "$NP ranks of dlfs-pack --in-place over two archives exited with $st"; }
for f in index index.sum; do
	cmp "$T/ds/one2.dlfs/$f" "$T/ds/mpi2.dlfs/$f" >&2 || fail "two archives: $f differs between one process and $NP ranks"
done
rm -rf "$T/ds/one2.dlfs" "$T/ds/mpi2.dlfs"

note "a shard cut short in another rank's share fails the job"
head -c 300000 "$T/wds/shard-000002.tar" >"$T/wds/shard-000002-cut.tar"
BAD=("$T"/wds/shard-00000[01].tar "$T/wds/shard-000002-cut.tar" "$T"/mixed/pax.tar "$T"/mixed/coco.zip)
pack "${ARGS[@]}" "${BAD[@]}" -o "$T/ds/bad1.dlfs"
expect_rc 1 "one process, a cut shard"
want=$(grep '^dlfs-pack: ' "$T/err")
echo "$want" | grep -q "shard-000002-cut.tar" || fail "one process: no message naming the cut shard: $want"
st=0
tmo "${MPIRUN[@]}" -np $NP "$DLFS_PACK" "${ARGS[@]}" "${BAD[@]}" -o "$T/ds/bad.dlfs" >"$T/mpirun.log" 2>&1 || st=$?
[ "$st" != 0 ] || fail "the job succeeded with a cut shard"
[ "$(grep -c '^dlfs-pack: ' "$T/mpirun.log")" = 1 ] || { cat "$T/mpirun.log" >&2; fail "expected one message, from rank 0"; }
[ "$(grep '^dlfs-pack: ' "$T/mpirun.log")" = "$want" ] || { cat "$T/mpirun.log" >&2; fail "not the one process's message: $want"; }
[ "$(ls -A "$T/ds" | tr '\n' ' ')" = "mpi.dlfs one.dlfs " ] || fail "left behind: $(ls -A "$T/ds")"
exit 0
