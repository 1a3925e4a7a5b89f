#!/bin/bash
# mpi16: sixteen ranks on this host (issue 24, "MPI at 16 ranks"), from
# counters and bytes, with room for 16 daemons sharing 2 cores.
# (s) stage=all: every rank's staging ends with every chunk in its NVMe
#     tier, and the PFS bytes summed over the ranks are the data once
#     (within one chunk per rank): every chunk read from the PFS once per
#     job. Every rank then reads its share of epoch 1 (samples/) with the
#     right bytes. The ranks are unmounted 1 s apart (16 s in all): the job
#     still ends cleanly (the launcher exits 0), each rank waiting for the
#     others' byes.
# A rank killed among sixteen: mpi_fault.sh.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"
mount_setup
. "$LIB_DIR/mpilib.sh"
mpi_require
NP=16

sixteen_dirs
CS=65536
ALL=$(seq 0 15)

note "(s) stage=all on 16 ranks"
job_start s "cache_dir=NV,stage=all"
stage_check s || soft_fail "(s) staging did not fill every tier from one PFS read of each chunk"
read_shares s 1 all $ALL
wait_all
check_shares s $ALL
# One rank after another, 1 s apart: 16 s from the first to leave to the
# last, more than the 10 s a rank waits after the last bye it heard.
JOB_STOP_GAP=1 job_stop s
for r in $ALL; do check_log "$T/s-log$r" 'fusermount3: failed to unmount'; done
finish
