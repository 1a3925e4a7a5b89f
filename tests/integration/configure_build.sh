#!/bin/bash
# configure_build: a build set up before a dependency was installed is
# set up again once it is there (issue 11, item 16: after quickstart then
# check on a fresh machine the MPI test was silently absent), and a test
# that cannot run is there and reports itself skipped; MPI is found
# whichever is installed, and never the other by accident (issue 29).
#  - set up with MPI hidden (a pkg-config that knows no MPI, an mpicc that
#    fails): meson warns that it found none, naming what it tried; the
#    mpi test is still defined, and exits 77 (skipped), saying why;
#  - -Dmpi=enabled with MPI hidden: the set-up fails, naming what it
#    tried (the compiler itself, meson's mpi dependency, pkg-config mpich);
#  - tools/dev/configure-build again with MPI visible: it says the
#    dependencies changed, sets up again, Open MPI is found, and the MPI
#    tests get Open MPI's own launcher (mpirun.openmpi);
#  - once more: nothing to do;
#  - with MPICH installed too: the default is still Open MPI;
#    -Dmpi_impl=mpich finds MPICH through pkg-config and CC=mpicc.mpich
#    through the compiler, and the MPI tests get hydra (mpiexec.hydra);
#    CC=mpicc.mpich with -Dmpi_impl=openmpi is refused, naming the
#    compiler.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"

: "${DLFS_SRCDIR:=$SRC_ROOT}"
command -v meson >/dev/null || skip "meson not found"
pkg-config --exists ompi-c || skip "MPI (pkg-config ompi-c) not installed: nothing can appear"

mkdir -p "$T/bin"
cat >"$T/bin/pkg-config" <<'PC'
#!/bin/sh
for a in "$@"; do
	case $a in ompi*|mpi*) exit 1 ;; esac
done
exec /usr/bin/pkg-config "$@"
PC
printf '#!/bin/sh\nexit 1\n' >"$T/bin/mpicc"
chmod +x "$T/bin/pkg-config" "$T/bin/mpicc"
HIDE=(env PKG_CONFIG="$T/bin/pkg-config" PATH="$T/bin:$PATH")

B="$T/b"
# mpi_test_env [DIR]: the MPI family and launcher the mpi test gets
# ("FAMILY LAUNCHER", "- -" when empty), or "absent".
mpi_test_env() {
	meson introspect --tests "${1:-$B}" >"$T/tests.json" || fail "meson introspect --tests ${1:-$B}"
	"$PYTHON" - "$T/tests.json" <<'PY'
import json, sys
t = [x for x in json.load(open(sys.argv[1])) if x["name"] == "mpi"]
e = t[0]["env"] if t else None
print("%s %s" % (e.get("DLFS_MPI_FAMILY") or "-", e.get("DLFS_MPIEXEC") or "-") if t else "absent")
PY
}

note "set up while MPI is hidden"
"${HIDE[@]}" "$DLFS_SRCDIR/tools/dev/configure-build" "$B" >"$T/out" 2>"$T/err" ||
	{ cat "$T/out" "$T/err" "$B.setup.log" >&2; fail "configure-build without MPI"; }
grep -q "WARNING: MPI not found; tried the C compiler itself (CC=mpicc), meson's mpi dependency (pkg-config ompi-c, mpicc --showme), pkg-config mpich" "$B.setup.log" ||
	fail "no warning naming what was tried: $(grep -i mpi "$B.setup.log")"
[ "$(mpi_test_env)" = "- -" ] || fail "the mpi test of a build without MPI: $(mpi_test_env) (want it defined, no family, no launcher)"
# It reports itself skipped (77), before it needs anything else, with
# the environment the build gives it.
mapfile -d '' MPI_ENV < <(meson introspect --tests "$B" | "$PYTHON" -c '
import json, sys
e = [x for x in json.load(sys.stdin) if x["name"] == "mpi"][0]["env"]
sys.stdout.write("".join("%s=%s\0" % kv for kv in e.items() if kv[0].startswith("DLFS_MPI")))')
[ "${#MPI_ENV[@]}" = 3 ] || fail "the mpi test's environment: ${MPI_ENV[*]}"
run env "${MPI_ENV[@]}" DLFS=/bin/true bash "$DLFS_SRCDIR/tests/mpi/mpi.sh"
expect_rc 77 "the mpi test of a build without MPI"
err_has "dlfs was built without MPI (packages libopenmpi-dev or libmpich-dev" "the skip says why"

note "-Dmpi=enabled while MPI is hidden: an error naming what was tried"
RC=0
"${HIDE[@]}" meson setup "$T/e" "$DLFS_SRCDIR" -Dmpi=enabled >"$T/out" 2>&1 || RC=$?
[ "$RC" != 0 ] || fail "meson setup -Dmpi=enabled succeeded with no MPI"
grep -q "ERROR: Problem encountered: MPI not found; tried the C compiler itself (CC=mpicc), meson's mpi dependency (pkg-config ompi-c, mpicc --showme), pkg-config mpich. Install libopenmpi-dev or libmpich-dev" "$T/out" ||
	{ cat "$T/out" >&2; fail "-Dmpi=enabled: no error naming what was tried"; }

note "MPI appears: the build is set up again"
run "$DLFS_SRCDIR/tools/dev/configure-build" "$B"
expect_ok "configure-build with MPI"
out_has "dependencies changed" "configure-build says why it sets up again"
[ "$(mpi_test_env)" = "openmpi $(command -v mpirun.openmpi || echo /usr/bin/mpirun)" ] ||
	fail "the mpi test after MPI appeared: $(mpi_test_env) (want Open MPI's own mpirun)"

note "nothing changed: nothing to do"
run "$DLFS_SRCDIR/tools/dev/configure-build" "$B"
expect_ok "configure-build again"
[ ! -s "$T/out" ] || fail "configure-build set up again with nothing changed: $(cat "$T/out")"

pkg-config --exists mpich && command -v mpicc.mpich >/dev/null &&
	command -v mpiexec.hydra >/dev/null ||
	{ note "MPICH (libmpich-dev, mpich) not installed: the choice between two MPIs is not checked"; exit 0; }
note "MPICH installed too: Open MPI by default, MPICH when asked"
HYDRA=$(command -v mpiexec.hydra)
[ "$(mpi_test_env)" = "openmpi $(command -v mpirun.openmpi)" ] || fail "with MPICH installed the default build has $(mpi_test_env)"
run meson setup "$T/m" "$DLFS_SRCDIR" -Dmpi_impl=mpich
expect_ok "meson setup -Dmpi_impl=mpich"
out_has "MPICH family, MPICH_VERSION $(pkg-config --modversion mpich), from pkg-config mpich" "the summary names MPICH"
[ "$(mpi_test_env "$T/m")" = "mpich $HYDRA" ] || fail "-Dmpi_impl=mpich: the mpi test has $(mpi_test_env "$T/m")"
CC=mpicc.mpich run meson setup "$T/c" "$DLFS_SRCDIR"
expect_ok "CC=mpicc.mpich meson setup"
out_has "from the C compiler itself (CC=mpicc)" "the summary says the compiler brings MPI"
[ "$(mpi_test_env "$T/c")" = "mpich $HYDRA" ] || fail "CC=mpicc.mpich: the mpi test has $(mpi_test_env "$T/c")"
CC=mpicc.mpich run meson setup "$T/x" "$DLFS_SRCDIR" -Dmpi_impl=openmpi
expect_fail "CC=mpicc.mpich with -Dmpi_impl=openmpi"
out_has "the C compiler (mpicc.mpich) brings an MPI of the family mpich, not openmpi" "the refusal names the compiler"
