#!/bin/bash
# python_resume: dlfs.torch.ViewSampler resumes mid-epoch across a
# remount (issue 42, items 2 and 3). A DataLoader of 4 workers reads
# epoch E; the state after K samples is saved, the run goes on to the end;
# the daemon is unmounted and mounted again; a new sampler that loads the
# state reads exactly the uninterrupted run's samples from K on. Then the
# state with another seed is refused (ResumeError), and two
# torch.distributed processes over a mount of one rank get
# RankMismatchError (python_resume.py). Skips (77) without
# torch/torchvision/PIL.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"
mount_setup
. "$LIB_DIR/pylib.sh"

SRC="$T/src"
DS="$T/ds.dlfs"
images_ds "$DS" 80
MNT="$T/mnt"
mkdir "$MNT"
E=4
K=29

# py MODE: python_resume.py MODE on the mount.
py() {
	pyrun python_resume.py "$1" "$MNT" $E $K "$T/state.json" "$T/run.json" ||
		fail "python_resume.py $1 (see above)"
}

dlfs_mount "$DS" "$MNT" -o ram_cache=16M
got=$(py save)
[ "$got" = 80 ] || fail "the uninterrupted epoch read $got samples, want 80"
dlfs_umount "$MNT"
check_log "$DLFS_LOG"

note "mounted again: resume at sample $K"
dlfs_mount "$DS" "$MNT" -o ram_cache=16M
got=$(py load)
[ "$got" = $((80 - K)) ] || fail "the resumed epoch read $got samples, want $((80 - K))"
dlfs_umount "$MNT"
check_log "$DLFS_LOG"
exit 0
