#!/bin/bash
# mpi_busy: a busy or stopped node is waited for, not replaced by PFS
# reads (issue 43). A tree of 640 files (sixteen_dirs), 64K chunks; each
# rank with its own cache_dir, so a home keeps what it read.
# (b) sixteen ranks with both cores kept busy by two shell loops, a slow
#     PFS (tests/util/slowpfs.c: each container read waits 300 ms first,
#     so a home's answers queue behind its PFS reads for seconds), and
#     -o peer_timeout=2000 (the old rule read the PFS after 2 s without an
#     answer, and skipped that home for 10 s): every rank reads its whole
#     share of epoch 1 at once, with the right bytes; the PFS bytes summed
#     over the ranks are at most 1.1 times the containers', every PFS read
#     was a home's (tiers.pfs.why: no substitute, gone or error reads), no
#     peer was found gone, and heartbeats were heard.
# (s) four ranks, defaults: each rank reads the first 20 files of its
#     share; rank 2 is stopped (SIGSTOP), the others read the rest of
#     theirs (they wait on rank 2 for its chunks); 15 s later rank 2 goes
#     on (SIGCONT). The others finish with the right bytes, every PFS read
#     was a home's and the PFS bytes are the containers' at most (each of
#     rank 2's chunks read once, by rank 2), no peer was found gone, and
#     the job ends cleanly. 15 s of silence is past the old rule (a PFS
#     read after 2 s, the home then skipped for 10 s) and a quarter of
#     the default peer_timeout (60 s): a default that took a stopped node
#     for a gone one within 15 s fails here.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"
mount_setup
. "$LIB_DIR/mpilib.sh"
mpi_require

sixteen_dirs
DATA=$(cat "$DS"/*.dlc | wc -c)

# pfs_check TAG MAX_RATIO RANKS...: the PFS bytes summed over RANKS, at
# most MAX_RATIO times the containers'; all reads a home's; none gone.
pfs_check() {
	local tag=$1 max=$2
	shift 2
	"$PYTHON" - "$T" "$tag" "$DATA" "$max" "$@" <<'PY' || soft_fail "($tag) the PFS reads (above)"
import json, sys
t, tag, data, mx, ranks = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), sys.argv[5:]
st = [json.load(open("%s/%s-mnt%s/.dlfs/stats" % (t, tag, r))) for r in ranks]
pfs = sum(s["tiers"]["pfs"]["bytes"] for s in st)
why = {}
for s in st:
    for k, v in s["tiers"]["pfs"].get("why", {"unknown": 1}).items():
        why[k] = why.get(k, 0) + v
peer = {k: sum(s["peer"].get(k, 0) for s in st) for k in
        ("requests", "hits", "timeouts", "lost", "rerouted", "heartbeats_heard")}
lat = max(s["peer"]["latency_us_max"] for s in st)
print("  (%s) PFS bytes %d = %.3f x the containers' %d; why %r; peers %r; "
      "longest answer %.1f s" % (tag, pfs, pfs / data, data, why, peer, lat / 1e6),
      file=sys.stderr)
bad = []
if pfs > mx * data:
    bad.append("PFS bytes %.3f x the containers', more than %.2f" % (pfs / data, mx))
if set(why) != {"home", "miss", "substitute", "gone", "error"} or \
        why["substitute"] or why["gone"] or why["error"] or why["miss"]:
    bad.append("PFS reads that were not a home's: %r" % why)
if peer["timeouts"] or peer["lost"] or peer["rerouted"]:
    bad.append("a peer was found gone")
for b in bad:
    print("  (%s) %s" % (tag, b), file=sys.stderr)
sys.exit(1 if bad else 0)
PY
}

BUSY=()
busy_stop() {
	local p
	for p in "${BUSY[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${BUSY[@]}"; do wait "$p" 2>/dev/null || true; done
	BUSY=()
}
at_exit busy_stop

note "(b) sixteen ranks, both cores busy, every rank reading at once"
NP=16
ALL=$(seq 0 15)
[ -f "${DLFS_SLOWPFS:-}" ] || fail "the slow-PFS shim is missing: DLFS_SLOWPFS=${DLFS_SLOWPFS:-}"
LD_PRELOAD=$DLFS_SLOWPFS DLFS_SLOW_PFS_MS=300 \
	job_start b "cache_dir=NV,stage=none,peer_timeout=2000"
for i in 1 2; do
	(while :; do :; done) &
	BUSY+=($!)
done
read_shares b 1 all $ALL
wait_all 600
busy_stop
check_shares b $ALL
pfs_check b 1.1 $ALL
[ "$(stat_sum b peer.heartbeats_heard $ALL)" -gt 0 ] || note "(b) no heartbeat was needed"
job_stop b

note "(s) four ranks, rank 2 stopped for 15 s mid-epoch"
NP=4
job_start s "cache_dir=NV,stage=none"
read_shares s 1 head 0 1 2 3
wait_all 300
P2=$(pgrep -f -- "$T/s-mnt2 -f")
kill -STOP "$P2"
# Never leave it stopped, whatever happens below.
at_exit sh -c "kill -CONT $P2 2>/dev/null || :"
read_shares s 1 tail 0 1 3
(sleep 15 && kill -CONT "$P2") &
CONT=$!
wait_all 300
wait "$CONT"
note "(s) the others finished $(($(date +%s) - $(stat -c %Y "$T/s-list0"))) s after they began"
read_shares s 1 tail 2
wait_all 300
check_shares s 0 1 2 3
pfs_check s 1.0 0 1 2 3
job_stop s
finish
