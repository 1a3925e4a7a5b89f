#!/bin/bash
# configure_build: a build set up before a dependency was installed is
# set up again once it is there (issue 11, item 16: after quickstart then
# check on a fresh machine the MPI test was silently absent), and a test
# that cannot run is there and reports itself skipped.
#  - set up with MPI hidden (a pkg-config that does not know ompi-c): MPI
#    not found, the mpi test still defined, and it exits 77 (skipped);
#  - tools/dev/configure-build again with MPI visible: it says the
#    dependencies changed, sets up again, MPI is found;
#  - once more: nothing to do.
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
chmod +x "$T/bin/pkg-config"

B="$T/b"
mpi_found() { grep -E "Run-time dependency ompi-c found: " "$B/meson-logs/meson-log.txt" | tail -1; }
# mpi_test_env: the DLFS_MPI_BUILT the mpi test gets, or "absent".
mpi_test_env() {
	meson introspect --tests "$B" >"$T/tests.json" || fail "meson introspect --tests $B"
	"$PYTHON" - "$T/tests.json" <<'PY'
import json, sys
t = [x for x in json.load(open(sys.argv[1])) if x["name"] == "mpi"]
print(t[0]["env"].get("DLFS_MPI_BUILT", "unset") if t else "absent")
PY
}

note "set up while MPI is hidden"
PKG_CONFIG="$T/bin/pkg-config" run "$DLFS_SRCDIR/tools/dev/configure-build" "$B"
expect_ok "configure-build without MPI"
mpi_found | grep -q "found: NO" || fail "MPI found though hidden: $(mpi_found)"
[ "$(mpi_test_env)" = 0 ] || fail "the mpi test of a build without MPI: $(mpi_test_env) (want it defined, DLFS_MPI_BUILT=0)"
# It reports itself skipped (77), before it needs anything else.
DLFS_MPI_BUILT=0 DLFS=/bin/true run bash "$DLFS_SRCDIR/tests/mpi/mpi.sh"
expect_rc 77 "the mpi test of a build without MPI"
err_has "built without MPI" "the skip says why"

note "MPI appears: the build is set up again"
run "$DLFS_SRCDIR/tools/dev/configure-build" "$B"
expect_ok "configure-build with MPI"
out_has "dependencies changed" "configure-build says why it sets up again"
mpi_found | grep -q "found: YES" || fail "MPI not found after it appeared: $(mpi_found)"
[ "$(mpi_test_env)" = 1 ] || fail "the mpi test after MPI appeared: $(mpi_test_env)"

note "nothing changed: nothing to do"
run "$DLFS_SRCDIR/tools/dev/configure-build" "$B"
expect_ok "configure-build again"
[ ! -s "$T/out" ] || fail "configure-build set up again with nothing changed: $(cat "$T/out")"
