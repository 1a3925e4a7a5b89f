#!/bin/bash
# python_ranks: dlfs.torch.ViewSampler in two torch.distributed (gloo)
# processes, each over its own mount of one two-rank dlfs job under the
# build's MPI launcher (lib/mpilib.sh) (issue 42): their samples are
# disjoint and cover the epoch, each in its mount's list order, with the
# source's labels and pixels; rank 0 over rank 1's mount is refused
# (python_ranks.py). Skips (77) without MPI or torch/torchvision/PIL.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"
mount_setup
. "$LIB_DIR/mpilib.sh"
mpi_require
. "$LIB_DIR/pylib.sh"

DS="$T/ds.dlfs"
images_ds "$DS" 60 10
NP=2
job_start py "ram_cache=16M"
got=$(pyrun python_ranks.py "$T/py-mnt0" "$T/py-mnt1" "$T/src" 3) ||
	fail "python_ranks.py (see above)"
[ "$got" = 60 ] || fail "the two ranks read $got samples, want 60"
job_stop py
for r in 0 1; do check_log "$T/py-log$r"; done
finish
