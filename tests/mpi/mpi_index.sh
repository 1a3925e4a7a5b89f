#!/bin/bash
# mpi_index: the index is read from the PFS once per job (issue 24), from
# counters, not timings. Four ranks, each with its own mountpoint.
# (a) each rank with its own empty cache dir: one rank copies the index
#     from the PFS and the three others receive it; the index bytes read
#     from the PFS, summed over the ranks, are <= 1.1x the index file; no
#     daemon maps the PFS's index; every rank reads the tree right.
# (b) the same cache dirs in a new job: every rank has a checked copy and
#     reads 0 index bytes from the PFS; the job shares nothing.
# (c) rank 2's copy damaged: it is found out and received again from a
#     rank that has one (0 bytes from the PFS), with a warning naming it.
# (d) no cache dir: the copies are in memory; still <= 1.1x the index.
# (e) an unsealed dataset (packed before index.sum): every rank maps the
#     PFS's index, as before, and reads right.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"
mount_setup
. "$LIB_DIR/mpilib.sh"
mpi_require
NP=4

# 1,800 small files (10 B to 3 KB) in 30 directories: an index of some size.
mpi_tree --seed 24 --dirs 30 --files 60 --dir d%02d --name f%03d \
	--min-size 10 --max-size 3000 -- --chunk-size 64K
[ -f "$DS/index.sum" ] || fail "dlfs-pack wrote no index.sum"
IXB=$(stat -c %s "$DS/index")
# sources TAG: the ranks' index sources, sorted, one line.
sources() {
	local r
	for ((r = 0; r < NP; r++)); do
		"$PYTHON" -c 'import json, sys; print(json.load(open(sys.argv[1]))["index"]["source"])' "$T/$1-mnt$r/.dlfs/stats"
	done | sort | tr '\n' ' '
}

# no_pfs_map TAG: no rank's daemon maps $DS/index.
no_pfs_map() {
	local pid
	for pid in $(pgrep -f "dlfs $DS $T/$1-mnt"); do
		! grep -qF "$DS/index" "/proc/$pid/maps" || fail "$1: daemon $pid maps the PFS's index"
	done
}

read_all() { # TAG: every rank reads the tree right
	local r
	for ((r = 0; r < NP; r++)); do
		tmo diff -r "$SRC" "$T/$1-mnt$r" >&2 || fail "$1: rank $r reads another tree"
	done
}

# shared_once TAG: one rank copied the index from the PFS, the others
# received it; the PFS gave 1.0-1.1x the index; no rank maps the PFS's;
# every rank reads the tree right. Stops the job.
shared_once() {
	local pfs
	[ "$(sources "$1")" = "copied received received received " ] || fail "($1) sources: $(sources "$1")"
	pfs=$(stat_sum "$1" index.pfs_bytes 0 1 2 3)
	[ "$pfs" -le $((IXB * 11 / 10)) ] || fail "($1) the ranks read $pfs index bytes from the PFS, the index has $IXB (at most 1.1x)"
	[ "$pfs" -ge "$IXB" ] || fail "($1) $pfs index bytes from the PFS, fewer than the index ($IXB): not counted"
	no_pfs_map "$1"
	read_all "$1"
	job_stop "$1"
}

note "(a) empty cache dirs: one copy from the PFS, three received"
job_start a "cache_dir=NV"
shared_once a
for r in 0 1 2 3; do check_log "$T/a-log$r"; done

note "(b) the same cache dirs again: no index bytes from the PFS"
for r in 0 1 2 3; do mv "$T/a-nv$r" "$T/b-nv$r"; done
job_start b "cache_dir=NV"
[ "$(sources b)" = "local local local local " ] || fail "(b) sources: $(sources b)"
[ "$(stat_sum b index.pfs_bytes 0 1 2 3)" = 0 ] || fail "(b) index bytes read from the PFS with every copy in place"
no_pfs_map b
read_all b
job_stop b
for r in 0 1 2 3; do check_log "$T/b-log$r"; done

note "(c) rank 2's copy damaged: found out, received again"
for r in 0 1 2 3; do mv "$T/b-nv$r" "$T/c-nv$r"; done
CP=$(ls "$T"/c-nv2/*/index)
printf 'damage' | dd of="$CP" bs=1 seek=$((IXB / 2)) conv=notrunc 2>/dev/null
job_start c "cache_dir=NV"
[ "$(sources c)" = "local local local received " ] || fail "(c) sources: $(sources c)"
[ "$(stat_sum c index.pfs_bytes 0 1 2 3)" = 0 ] || fail "(c) the damaged copy was fetched from the PFS, not from a peer"
grep -q "local copy failed its check: $CP" "$T/c-log2" || fail "(c) rank 2 did not say its copy was damaged: $(cat "$T/c-log2")"
read_all c
job_stop c
for r in 0 1 3; do check_log "$T/c-log$r"; done
check_log "$T/c-log2" "local copy failed its check"

note "(d) no cache dir: copies in memory"
job_start d "ram_cache=1M"
shared_once d

note "(e) an unsealed dataset: the PFS's index, as before"
rm "$DS/index.sum"
job_start e "cache_dir=NV"
[ "$(sources e)" = "pfs pfs pfs pfs " ] || fail "(e) sources: $(sources e)"
read_all e
job_stop e
for r in 0 1 2 3; do check_log "$T/e-log$r"; done
exit 0
