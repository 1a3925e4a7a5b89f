# What the tests of import dlfs (tests/mount/python_*.sh) share. Source it
# after lib.sh, once mount_setup has run:
#
#   . "$LIB_DIR/pylib.sh"
#
# It skips the test (77) unless $PYTHON has torch, torchvision and PIL,
# and imports the package from DLFS_PYTHONPATH (tests/meson.build sets it
# to src/python), so no install is needed.

need_py torch torchvision PIL
: "${DLFS_PYTHONPATH:=$SRC_ROOT/src/python}"

# images_ds DS TRAIN [VAL]: an ImageFolder tree in $T/src, TRAIN images
# in train/ and VAL in val/ (none without VAL), packed into DS.
images_ds() {
	mkdir "$T/src"
	gentree images "$T/src/train" --count "$2" --seed "$2"
	[ -z "${3:-}" ] || gentree images "$T/src/val" --count "$3" --seed "$3"
	pack "$T/src" -o "$1" --chunk-size 256K -q
	expect_ok "pack $T/src"
}

# pyrun SCRIPT ARGS...: SCRIPT, beside the test's own script, under tmo,
# from $T (so that nothing of the source tree but the package is
# importable), with the package on the path. Returns its status; its
# output goes to stdout.
_PY_DIR=$(cd "$(dirname "$0")" && pwd)
pyrun() {
	(cd "$T" && PYTHONPATH="$DLFS_PYTHONPATH" tmo "$PYTHON" \
		"$_PY_DIR/$1" "${@:2}")
}
