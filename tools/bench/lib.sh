# shellcheck shell=bash
# Shared helpers for the benchmarks under tools/bench/ (sourced, not run).
#
# Each benchmark owns one "## NAME" section of tools/bench/RESULTS.md and
# replaces only that section (bench_write_section), so benchmarks can be run
# and rerun independently.

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BENCH_REPO=$(cd "$BENCH_DIR/../.." && pwd)
BENCH_RESULTS=${BENCH_RESULTS:-$BENCH_DIR/RESULTS.md}
BENCH_PY=/usr/bin/python3

bench_log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
bench_die() { printf '%s: error: %s\n' "${0##*/}" "$*" >&2; exit 1; }

# Install the Debian packages the benchmarks and their baselines need
# (tools/dev/deps bench: only the missing ones, with apt-get).
bench_deps() {
	[ "$(id -u)" = 0 ] || return 0
	"$BENCH_REPO/tools/dev/deps" bench >&2 || bench_die "tools/dev/deps bench failed"
}

# bench_mpi BINARY [try]: the launcher of the MPI that BINARY is linked
# with. Debian names each family's own launcher (mpirun.openmpi,
# mpiexec.hydra); the plain mpirun is an alternative that may be the
# other family's, and a launcher of the wrong family starts N lone
# copies. Sets
#   MPI_FAMILY   openmpi or mpich
#   MPIRUN       (array) the launcher and its options for more ranks than
#                cores, as root, unbound; add -np N and the command
#   MPI_LAUNCHER the launcher's name (mpirun.openmpi, mpiexec.hydra)
#   MPI_VERSION  one line naming the launcher and its version
#   BENCH_MPIRUN MPIRUN as one string, for the Python helpers (exported)
# A rank's number is ${OMPI_COMM_WORLD_RANK:-$PMI_RANK} under either.
# Without MPI in BINARY, or without its launcher: dies, or with try set,
# returns 1 (MPI_FAMILY empty) after saying why.
# shellcheck disable=SC2034 # MPI_VERSION, MPI_FAMILY: for the callers
bench_mpi() {
	local bin=$1 try=${2:-} libs l why=
	MPI_FAMILY='' MPI_VERSION='' MPI_LAUNCHER=''
	MPIRUN=()
	libs=$(ldd "$bin" 2>/dev/null) || libs=
	case $libs in
	*libmpich.so*)
		for l in mpiexec.hydra mpiexec.mpich; do
			command -v "$l" >/dev/null && { MPIRUN=("$(command -v "$l")"); break; }
		done
		[ ${#MPIRUN[@]} -gt 0 ] || why="$bin is built against MPICH, and neither mpiexec.hydra nor mpiexec.mpich is installed (apt-get install mpich)"
		MPI_FAMILY=mpich
		;;
	*libmpi.so*)
		command -v mpirun.openmpi >/dev/null &&
			MPIRUN=("$(command -v mpirun.openmpi)" --allow-run-as-root --oversubscribe --bind-to none)
		[ ${#MPIRUN[@]} -gt 0 ] || why="$bin is built against Open MPI, and mpirun.openmpi is not installed (apt-get install openmpi-bin)"
		MPI_FAMILY=openmpi
		;;
	*) why="$bin is built without MPI (apt-get install libopenmpi-dev or libmpich-dev, then meson setup --reconfigure BUILD && ninja -C BUILD)" ;;
	esac
	if [ -n "$why" ]; then
		MPI_FAMILY=''
		MPIRUN=()
		[ "$try" = try ] || bench_die "$why"
		bench_log "no MPI: $why"
		return 1
	fi
	MPI_LAUNCHER=${MPIRUN[0]##*/}
	if [ "$MPI_FAMILY" = mpich ]; then
		MPI_VERSION="$MPI_LAUNCHER (MPICH) $("${MPIRUN[0]}" --version 2>&1 | awk '$1 == "Version:" { print $2; exit }')"
	else
		MPI_VERSION=$("${MPIRUN[0]}" --version 2>&1 | head -n 1)
	fi
	BENCH_MPIRUN="${MPIRUN[*]}"
	export BENCH_MPIRUN
}

# Seconds since the epoch with nanoseconds.
bench_now() { date +%s.%N; }

# Float arithmetic: bench_calc '1.5 * 2'.
bench_calc() { "$BENCH_PY" -c "print('%.6f' % ($1))"; }

# bench_pfs_up PFS_SIM DIR: is the simulated PFS in DIR mounted? (Its
# status is read whole first: under pipefail, "status | grep -q" fails
# with SIGPIPE whenever grep stops reading at its match.)
bench_pfs_up() {
	local st
	st=$("$1" status --dir "$2" 2>/dev/null) || return 1
	grep -q '^mount:.*mnt' <<<"$st"
}

# True when the page cache can be dropped (root and a writable knob).
bench_can_drop() { [ "$(id -u)" = 0 ] && [ -w /proc/sys/vm/drop_caches ]; }

# Write back everything, then drop page cache, dentries and inodes.
bench_drop_caches() {
	sync
	echo 3 >/proc/sys/vm/drop_caches
}

# Read every regular file under DIR into the page cache. (GNU tar skips
# reading when its output is /dev/null, so it cannot be used for this.)
bench_prewarm() {
	find "$1" -type f -print0 | xargs -0 -n 2000 -P "$(nproc)" cat >/dev/null
}

# One-line description of the machine and of the filesystem holding DIR.
bench_machine() {
	local dir=$1 mem cpu fs
	mem=$(awk '/^MemTotal:/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)
	cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)
	fs=$(df -PT "$dir" | awk 'NR == 2 { print $2 " on " $1 }')
	printf '%s CPUs (%s), %s RAM, Linux %s, work dir %s (%s)\n' \
		"$(nproc)" "$cpu" "$mem" "$(uname -r)" "$dir" "$fs"
}

# The repository's commit (with -dirty when the work tree has changes).
bench_revision() {
	git -C "$BENCH_REPO" describe --always --dirty 2>/dev/null || echo unknown
}

# bench_write_section NAME FILE: replace section "## NAME" of RESULTS.md
# (from its heading to the next "## " heading) with the contents of FILE,
# which must start with that heading. Appends the section when missing and
# creates RESULTS.md when needed. Other sections are left byte-identical.
bench_write_section() {
	"$BENCH_PY" - "$BENCH_RESULTS" "$1" "$2" <<'EOF'
import os, sys
path, name, src = sys.argv[1:4]
head = "## " + name
new = open(src).read().rstrip("\n") + "\n"
if not new.startswith(head + "\n"):
    sys.exit("section file must start with %r" % head)
try:
    lines = open(path).read().splitlines(keepends=True)
except FileNotFoundError:
    lines = ["# dlfs benchmark results\n", "\n",
             "Each benchmark under `tools/bench/` writes its own `## NAME` "
             "section here\n",
             "and replaces only that section when rerun. Add new sections "
             "at the end.\n"]
out, i, done = [], 0, False
while i < len(lines):
    if lines[i].rstrip("\n") == head and not done:
        j = i + 1
        while j < len(lines) and not lines[j].startswith("## "):
            j += 1
        out.append(new)
        if j < len(lines):
            out.append("\n")
        i, done = j, True
    else:
        out.append(lines[i])
        i += 1
if not done:
    while out and out[-1].strip() == "":
        out.pop()
    out.append("\n")
    out.append(new)
tmp = path + ".tmp"
with open(tmp, "w") as f:
    f.writelines(out)
os.replace(tmp, path)
EOF
}

# Busy and total CPU jiffies of the whole machine, from /proc/stat.
bench_cpu_jiffies() {
	awk '/^cpu / { t = 0; for (i = 2; i <= NF; i++) t += $i;
		print t - $5 - $6, t; exit }' /proc/stat
}

# bench_wait_quiet MAXSEC: wait until the machine is mostly idle (other
# work on it, e.g. a test suite, would skew the timings): busy < 10% over
# 2 s. Gives up after MAXSEC seconds. Prints the busy % last seen.
bench_wait_quiet() {
	local max=$1 start=$SECONDS b0 t0 b1 t1 pct
	while :; do
		read -r b0 t0 < <(bench_cpu_jiffies)
		sleep 2
		read -r b1 t1 < <(bench_cpu_jiffies)
		pct=$(( (b1 - b0) * 100 / (t1 - t0 > 0 ? t1 - t0 : 1) ))
		if [ "$pct" -lt 10 ] || [ $((SECONDS - start)) -ge "$max" ]; then
			echo "$pct"
			return
		fi
	done
}

# bench_lock [MAXSEC]: hold /var/tmp/dlfs-bench.lock until the script exits,
# so that two benchmarks (which drop caches and saturate the disk) never run
# at the same time on one machine. Waits up to MAXSEC (default 7200) for it.
bench_lock() {
	exec 9>>/var/tmp/dlfs-bench.lock
	if ! flock -n 9; then
		bench_log "waiting for another benchmark (/var/tmp/dlfs-bench.lock)"
		flock -w "${1:-7200}" 9 || bench_die "another benchmark holds /var/tmp/dlfs-bench.lock"
	fi
}

# Prints a warning when the kernel proactively pages out idle memory (DAMON
# "pageout" schemes, as on some VMs): page cache then goes cold about
# min-age seconds after its last use, so a "warm" run is only warm if it
# reads each file soon after the prewarm. Prints nothing otherwise.
bench_reclaim_note() {
	local k s age aggr
	for k in /sys/kernel/mm/damon/admin/kdamonds/*; do
		[ "$(cat "$k/state" 2>/dev/null)" = on ] || continue
		for s in "$k"/contexts/*/schemes/*; do
			[ "$(cat "$s/action" 2>/dev/null)" = pageout ] || continue
			age=$(cat "$s/access_pattern/age/min")
			aggr=$(cat "$s/../../monitoring_attrs/intervals/aggr_us")
			printf 'the kernel pages out memory idle for %s s (DAMON pageout scheme, %s): page cache goes cold that long after its last read, so warm runs of trees that take longer than that to prewarm and pack are partly cold\n' \
				"$(( age * aggr / 1000000 ))" "$k"
			return
		done
	done
}
