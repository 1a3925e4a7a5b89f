#!/bin/bash
# resume: a job restarted in the middle of an epoch gets the same orders
# (issue 27, item 4). By default the seed comes from the dataset's id,
# so a reader that read K samples of epoch E, lost its daemon (SIGKILL,
# as a job killed mid-epoch) and mounts again reads the remaining files
# in the same order, from the list or from samples/ by name. .dlfs/info
# says where the seed came from; -o seed=random opts out, -o seed=N
# gives the same orders as the default when N is the default's seed.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"
mount_setup


SRC="$T/src"
gentree many "$SRC" --seed 27 --count 300 --per-dir 30 --max-size 20000
DS="$T/ds.dlfs"
pack "$SRC" -o "$DS" -q
expect_ok "pack 300 files"
MNT="$T/mnt"
mkdir "$MNT"
E=3
K=117

# resume.py MNT E SRC FROM TO LIST: read samples FROM..TO-1 of epoch E by
# their names (sorted: the view's order) and check each is the file on
# line FROM+i of LIST (the list before the restart), byte for byte.
cat >"$T/resume.py" <<'PY'
import os, sys
mnt, e, src, lo, hi, lst = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
paths = open(lst).read().splitlines()
view = os.path.join(mnt, ".dlfs", "epochs", e, "samples")
names = sorted(os.listdir(view))
assert len(names) == len(paths), (len(names), len(paths))
for j in range(lo, hi):
    with open(os.path.join(view, names[j]), "rb") as f:
        got = f.read()
    with open(os.path.join(src, paths[j]), "rb") as f:
        want = f.read()
    if got != want:
        sys.exit("sample %s (position %d) is not %s" % (names[j], j, paths[j]))
print(hi - lo)
PY

info() { json_get "$MNT/.dlfs/info" "$1"; }

note "first mount, defaults: the seed comes from the dataset"
dlfs_mount "$DS" "$MNT"
[ "$(info seed_from)" = dataset ] || fail "seed_from is $(info seed_from), want dataset"
SEED=$(info seed)
must "read epoch $E's list" cp "$MNT/.dlfs/epochs/$E/files" "$T/list"
[ "$(wc -l <"$T/list")" = 300 ] || fail "epoch $E lists $(wc -l <"$T/list") files"
[ "$(tmo "$PYTHON" "$T/resume.py" "$MNT" "$E" "$SRC" 0 "$K" "$T/list")" = "$K" ] ||
	fail "the first $K samples of epoch $E"
kill -KILL "$DLFS_PID"
wait_exit "$DLFS_PID" 10
[ "$WAIT_RC" != timeout ] || fail "the daemon survived SIGKILL"

# The dead mount goes first, as a job's epilog removes it: dlfs would
# remove it itself (deadmount.sh), but dlfs_mount's wait could then take
# the dead mount, still listed, for the new one.
tmo fusermount3 -uz "$MNT" || fail "fusermount3 -uz the dead mount"

note "the restarted job: same seed, same order, resumes at $K"
dlfs_mount "$DS" "$MNT"
[ "$(info seed)" = "$SEED" ] || fail "the seed changed across a restart: $(info seed), was $SEED"
[ "$(info seed_from)" = dataset ] || fail "seed_from is $(info seed_from) after the restart"
must "read epoch $E's list again" cp "$MNT/.dlfs/epochs/$E/files" "$T/list2"
cmp -s "$T/list" "$T/list2" || fail "epoch $E's order changed across a restart"
[ "$(tmo "$PYTHON" "$T/resume.py" "$MNT" "$E" "$SRC" "$K" 300 "$T/list")" = $((300 - K)) ] ||
	fail "resuming epoch $E at $K"
# The list resumes the same way: its lines from K on.
tail -n +$((K + 1)) "$MNT/.dlfs/epochs/$E/files" | cmp -s - <(tail -n +$((K + 1)) "$T/list") ||
	fail "epoch $E's list from line $K differs"
must "epoch 4's list" cp "$MNT/.dlfs/epochs/4/files" "$T/list4"
cmp -s "$T/list" "$T/list4" && fail "epochs $E and 4 have the same order"
dlfs_umount "$MNT"

note "-o seed=N with the default's seed: the same orders"
dlfs_mount "$DS" "$MNT" -o "seed=$SEED"
[ "$(info seed_from)" = option ] || fail "seed_from is $(info seed_from) with -o seed"
cmp -s "$T/list" "$MNT/.dlfs/epochs/$E/files" || fail "-o seed=$SEED gives another order"
dlfs_umount "$MNT"

note "-o seed=random: another seed, another order"
dlfs_mount "$DS" "$MNT" -o seed=random
[ "$(info seed_from)" = random ] || fail "seed_from is $(info seed_from) with seed=random"
[ "$(info seed)" != "$SEED" ] || fail "seed=random drew the default seed"
cmp -s "$T/list" "$MNT/.dlfs/epochs/$E/files" && fail "seed=random gives the default order"
dlfs_umount "$MNT"
check_log "$DLFS_LOG"

note "a bad seed: one line, exit 2"
run "$DLFS" "$DS" "$MNT" -f -o seed=tomorrow
expect_rc 2 "seed=tomorrow"
err_has "dlfs: -o seed=tomorrow: a number from 0 to 18446744073709551615, or random" "the error names the choices"
finish
