# Sourced by tools/check: build DIR [meson setup options...] sets DIR up
# (again, when a dependency appeared: MPI installed by tools/dev/deps) and
# builds it, its ninja output in DIR.ninja.log, shown when it fails.
build() {
  local dir=$1; shift
  tools/dev/configure-build "$dir" "$@" || return 1
  ninja -C "$dir" >"$dir.ninja.log" 2>&1 || { cat "$dir.ninja.log"; return 1; }
}
