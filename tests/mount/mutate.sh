#!/bin/bash
# mutate: damaged datasets and NVMe caches never crash or hang the daemon
# and never give wrong bytes: every read of every file returns the
# original bytes or fails with EIO (see mutate.py for the cases and the
# exact rules). Seeded and reproducible.
#
# Environment:
#   DLFS_MUTATE_CASES  cases to run (default 100, about a minute and a
#                      half with the ASan daemon)
#   DLFS_MUTATE_SEED   the seed the cases are drawn from (default 1)
#   DLFS_MUTATE_DLFS   the daemon to test (default: the ASan build's,
#                      build-asan/src/daemon/dlfs, which reports memory
#                      errors that do not crash; else $DLFS)
#   DLFS_MUTATE_KINDS  only these kinds, comma-separated (mutate.py)
# A failing case is reproduced with its number (the work dir keeps the
# dataset, the damaged copy and the daemon logs):
#   tests/mount/mutate.py --dlfs build-asan/src/daemon/dlfs \
#     --pack build/tools/dlfs-pack --work /tmp/m --seed 1 --case N
# It runs in the mount suite; longer runs: DLFS_MUTATE_CASES=1000.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
mount_setup
command -v mdb_dump >/dev/null && command -v mdb_load >/dev/null ||
	skip "mdb_dump/mdb_load not found (Debian package lmdb-utils)"

if [ -z "${DLFS_MUTATE_DLFS:-}" ]; then
	DLFS_MUTATE_DLFS=$DLFS
	[ ! -x "$SRC_ROOT/build-asan/src/daemon/dlfs" ] ||
		DLFS_MUTATE_DLFS=$SRC_ROOT/build-asan/src/daemon/dlfs
fi
# A memory error aborts the daemon, so that it counts as a crash; leaks
# are the soak's business.
export ASAN_OPTIONS=abort_on_error=1:detect_leaks=0
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
CASES=${DLFS_MUTATE_CASES:-100}
SEED=${DLFS_MUTATE_SEED:-1}
note "daemon $DLFS_MUTATE_DLFS, $CASES cases, seed $SEED"
W="$T/work"
mkdir -p "$W/mnt"
track_mount "$W/mnt"
args=(--dlfs "$DLFS_MUTATE_DLFS" --pack "$DLFS_PACK" --work "$W"
      --cases "$CASES" --seed "$SEED" --report "$T/mutate.json")
[ -z "${DLFS_MUTATE_KINDS:-}" ] || args+=(--kinds "$DLFS_MUTATE_KINDS")
st=0
# Six seconds a case at most (a hang costs --read-timeout), and setup.
timeout -k 10 $((120 + 6 * CASES)) "$PYTHON" "$HERE/mutate.py" "${args[@]}" || st=$?
[ "$st" != 124 ] && [ "$st" != 137 ] || fail "mutate.py timed out"
[ "$st" = 0 ] || fail "damaged datasets or caches gave crashes, hangs, wrong bytes or errnos (see above; seed $SEED)"
