#!/bin/bash
# exports: libdlfs.so exports exactly the functions the installed headers
# (include/dlfs/) declare, no private helper and nothing missing, each in
# the version node DLFS_0; and src/libdlfs.map lists the same names.
# Also: no src/ folder includes another folder's private header (*_priv.h,
# or a header of format/ or ingest/ outside their shared/ folders, which
# the build does not expose; this catches a path written out in full).
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"

for d in "$SRC_ROOT"/src/*/; do
	t=$(basename "$d")
	for f in "$d"*.[ch] "$d"*/*.[ch]; do
		[ -e "$f" ] || continue # a folder without C (src/python) or subfolders
		{ grep -ho '#include "[^"]*"' "$f" || true; } | sed 's/#include "//; s/"$//' | while read -r h; do
			case $h in
			dlfs/*) ;;
			*..*) echo "$t/$(basename "$f") includes $h" ;;
			*/*) [ -f "$d$h" ] || echo "$t/$(basename "$f") includes $h" ;;
			*_priv.h) [ -f "$d$h" ] || echo "$t/$(basename "$f") includes $h" ;;
			esac
		done
	done
done >"$T/reach"
if [ -s "$T/reach" ]; then
	cat "$T/reach" >&2
	fail "a src/ folder reaches another folder's private header"
fi

[ -n "${LIBDLFS:-}" ] && [ -f "$LIBDLFS" ] || fail "LIBDLFS (the built libdlfs.so) is not set"
"$PYTHON" - "$SRC_ROOT/include/dlfs" "$SRC_ROOT/src/meson.build" \
	"$SRC_ROOT/src/libdlfs.map" >"$T/declared" <<'PY'
import re, sys, os
inc, meson, mapf = sys.argv[1:4]
# The headers meson installs (install_headers in src/meson.build).
installed = re.findall(r"'\.\./include/dlfs/([a-z_]+\.h)'", open(meson).read())
if not installed:
    sys.exit("no install_headers list in " + meson)
names = set()
for h in installed:
    s = open(os.path.join(inc, h)).read()
    s = re.sub(r"/\*.*?\*/", "", s, flags=re.S)
    s = re.sub(r"static inline[^{;]*\{.*?\n\}", "", s, flags=re.S)
    s = re.sub(r"typedef[^;]*;", "", s)
    names |= set(re.findall(r"\b(dlfs_[a-z0-9_]+)\s*\(", s))
listed = set(re.findall(r"^\s+(dlfs_[a-z0-9_]+);", open(mapf).read(), re.M))
if listed != names:
    sys.exit("libdlfs.map and the installed headers differ: map only %s, "
             "headers only %s" % (sorted(listed - names), sorted(names - listed)))
print("\n".join(sorted(names)))
PY
# Each exported function, with the version node it is bound to.
nm -D --defined-only --with-symbol-versions "$LIBDLFS" |
	awk '$2 == "T" { print $3 }' >"$T/versioned"
grep -v '@@DLFS_0$' "$T/versioned" >"$T/unversioned" || true
if [ -s "$T/unversioned" ]; then
	cat "$T/unversioned" >&2
	fail "libdlfs.so exports functions outside the version node DLFS_0"
fi
sed 's/@@DLFS_0$//' "$T/versioned" | sort >"$T/exported"
if ! diff -u "$T/declared" "$T/exported" >"$T/diff"; then
	cat "$T/diff" >&2
	fail "libdlfs.so exports differ from the installed headers (- declared, + exported)"
fi
note "libdlfs.so exports the $(wc -l <"$T/declared") functions of the installed headers, nothing else"
