#!/bin/bash
# errors: dlfs-pack fails cleanly (exit 1, "dlfs-pack: <context>: <reason>"
# naming the path, no OUT, no temp dir) on a missing/dangling source, an
# unreadable file or dir (and --skip-errors leaves just that file out), a
# duplicate path across sources, a name > 255 bytes, a non-archive or
# truncated archive, an existing OUT (untouched without --force, replaced
# with it); bad options exit 2 naming the option; fifos, sockets and device
# nodes are skipped with exactly one warning each.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"

O="$T/o"
mkdir "$O"
mkdir -p "$T/src/d"
echo hello >"$T/src/a.txt"
echo world >"$T/src/d/b.txt"

# must_fail LABEL RC NAME_IN_MESSAGE ARGS...: pack fails with RC, names it, leaves nothing.
must_fail() {
	local label=$1 rc=$2 name=$3
	shift 3
	pack "$@"
	expect_rc "$rc" "$label"
	[ -z "$name" ] || err_has "$name" "$label: the message must name '$name'"
	grep -q '^dlfs-pack: ' "$T/err" || { _show; fail "$label: message should start with 'dlfs-pack: '"; }
	[ -s "$T/out" ] && { _show; fail "$label: printed on stdout (it is not used)"; }
	assert_empty_dir "$O" "$label: output parent"
}

note "an output whose directory is missing, or a file (issue 39)"
must_fail "missing output directory" 1 "the directory it goes in, $O/none" "$T/src" -o "$O/none/x.dlfs"
err_has_re "no such file" "missing output directory: reason"
must_fail "output directory is a file" 1 "the directory it goes in, $T/src/a.txt" "$T/src" -o "$T/src/a.txt/x.dlfs"
err_has_re "not a directory" "output directory is a file: reason"

note "missing and dangling sources"
must_fail "missing source" 1 "$T/nonexistent" "$T/nonexistent" -o "$O/x.dlfs"
err_has_re "no such file" "missing source: reason"
must_fail "missing second source" 1 "$T/nonexistent2" "$T/src" "$T/nonexistent2" -o "$O/x.dlfs"
ln -s "$T/nowhere" "$T/dangling"
must_fail "dangling symlink as source" 1 "$T/dangling" "$T/dangling" -o "$O/x.dlfs"
must_fail "missing OUT parent" 1 "$T/noparent" "$T/src" -o "$T/noparent/x.dlfs"

note "not an archive / truncated archive"
printf 'a,b\n1,2\n' >"$T/labels.csv"
must_fail "non-archive source file" 1 "labels.csv" "$T/labels.csv" -o "$O/x.dlfs"
head -c 300000 /dev/urandom >"$T/src/rand.bin"
tar -C "$T/src" -czf "$T/full.tar.gz" .
head -c 20000 "$T/full.tar.gz" >"$T/cut.tar.gz"
must_fail "truncated tar.gz" 1 "cut.tar.gz" "$T/cut.tar.gz" -o "$O/x.dlfs"
must_fail "truncated tar.gz (--order input)" 1 "cut.tar.gz" "$T/cut.tar.gz" -o "$O/x.dlfs" --order input
rm "$T/src/rand.bin"

note "duplicate paths"
mkdir -p "$T/s2/d" "$T/s3/a.txt"
echo other >"$T/s2/d/b.txt"
must_fail "same file in two dirs" 1 "d/b.txt" "$T/src" "$T/s2" -o "$O/x.dlfs"
must_fail "file in one source, dir in the other" 1 "a.txt" "$T/src" "$T/s3" -o "$O/x.dlfs"
tar -C "$T/s2" -cf "$T/s2.tar" .
must_fail "same file in a dir and a tar" 1 "d/b.txt" "$T/src" "$T/s2.tar" -o "$O/x.dlfs"
must_fail "same tar twice" 1 "d/b.txt" "$T/s2.tar" "$T/s2.tar" -o "$O/x.dlfs"
# Dirs present in several sources merge; the first source's metadata wins.
mkdir -p "$T/s4/d"
echo c >"$T/s4/d/c.txt"
chmod 0700 "$T/s4/d"
chmod 0750 "$T/src/d"
pack "$T/src" "$T/s4" -o "$O/merge.dlfs" -q
expect_ok "dir + dir merge"
inspect ls "$O/merge.dlfs" d
[ "$(tr '\n' ' ' <"$T/out")" = "b.txt c.txt " ] || { _show; fail "merged d/ should hold b.txt c.txt"; }
inspect stat "$O/merge.dlfs" d
grep -qxF "mode: 0750" "$T/out" || { _show; fail "merged d/: first source's mode 0750 should win"; }
rm -rf "$O/merge.dlfs"

note "name too long"
"$PYTHON" - "$T/long.tar" "$T/long255.tar" <<'EOF'
import io, sys, tarfile
for out, n in ((sys.argv[1], 300), (sys.argv[2], 255)):
    with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as tf:
        for name in ("ok.txt", "d/" + "n" * (n - 4) + ".bin"):
            ti = tarfile.TarInfo(name)
            ti.size = 3
            tf.addfile(ti, io.BytesIO(b"abc"))
EOF
must_fail "300-byte name in a tar" 1 "nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn" "$T/long.tar" -o "$O/x.dlfs"
err_has_re "too long|more than 255|255 bytes" "300-byte name: reason"
pack "$T/long255.tar" -o "$O/l255.dlfs" -q
expect_ok "255-byte name in a tar"
rm -rf "$O/l255.dlfs"

note "OUT exists"
pack "$T/src" -o "$O/ds.dlfs" -q
expect_ok "first pack"
(cd "$O/ds.dlfs" && find . -type f -exec sha256sum {} + | sort) >"$T/before"
ID1=$("$DLFS_INSPECT" info --json "$O/ds.dlfs" | "$PYTHON" -c 'import json,sys; print(json.load(sys.stdin)["dataset_id"])')
echo new >"$T/src/new.txt"
pack "$T/src" -o "$O/ds.dlfs" -q
expect_rc 1 "pack onto an existing OUT without --force"
err_has "$O/ds.dlfs" "existing OUT: message names it"
err_has_re "exists" "existing OUT: reason"
(cd "$O/ds.dlfs" && find . -type f -exec sha256sum {} + | sort) >"$T/after"
cmp -s "$T/before" "$T/after" || fail "existing OUT was modified by a pack without --force"
[ "$(ls -A "$O")" = ds.dlfs ] || fail "litter after refusing an existing OUT: $(ls -A "$O" | tr '\n' ' ')"
for f in --force -f; do
	pack "$T/src" -o "$O/ds.dlfs" -q $f
	expect_ok "pack onto an existing OUT with $f"
	[ "$(ls -A "$O")" = ds.dlfs ] || fail "litter after $f: $(ls -A "$O" | tr '\n' ' ')"
	inspect info --json "$O/ds.dlfs"
	cp "$T/out" "$T/info.json"
	[ "$(json_get "$T/info.json" files)" = 3 ] || fail "$f did not replace OUT (files != 3)"
	[ "$(json_get "$T/info.json" dataset_id)" != "$ID1" ] || fail "$f: dataset id unchanged"
	inspect cat "$O/ds.dlfs" new.txt
	expect_ok "cat new.txt after $f"
done
# --force over a dataset with more containers: no stale containers remain.
head -c 300000 /dev/urandom >"$T/src/r1"
pack "$T/src" -o "$O/ds.dlfs" -q --force --chunk-size 4K --container-size 64K
expect_ok "--force (many containers)"
rm "$T/src/r1"
pack "$T/src" -o "$O/ds.dlfs" -q --force --chunk-size 4K --container-size 64K
expect_ok "--force (one container)"
[ "$(ls "$O/ds.dlfs" | tr '\n' ' ')" = "000000.dlc index index.sum " ] ||
	fail "--force left stale files in OUT: $(ls "$O/ds.dlfs" | tr '\n' ' ')"
inspect verify "$O/ds.dlfs"
expect_ok "verify after --force"
rm -rf "$O/ds.dlfs"
echo file >"$O/plainfile"
pack "$T/src" -o "$O/plainfile" -q
expect_rc 1 "OUT is an existing regular file, no --force"
[ "$(cat "$O/plainfile")" = file ] || fail "existing regular file OUT was modified"
rm "$O/plainfile"
rm "$T/src/new.txt"

note "bad options"
bad() { # OPTION_NAME_IN_MESSAGE ARGS...
	local name=$1
	shift
	pack "$@"
	[ "$RC" = 2 ] || { _show; fail "dlfs-pack $*: expected exit 2 (usage), got $RC"; }
	[ -z "$name" ] || err_has "$name" "dlfs-pack $*: message must name '$name'"
	assert_empty_dir "$O" "dlfs-pack $* (usage error)"
}
S="$T/src"
bad --chunk-size "$S" -o "$O/x.dlfs" --chunk-size 1000
bad --chunk-size "$S" -o "$O/x.dlfs" --chunk-size 5000
bad --chunk-size "$S" -o "$O/x.dlfs" --chunk-size 0
bad --chunk-size "$S" -o "$O/x.dlfs" --chunk-size 2G
bad --chunk-size "$S" -o "$O/x.dlfs" --chunk-size 4Q
bad --chunk-size "$S" -o "$O/x.dlfs" --chunk-size -4096
bad --chunk-size "$S" -o "$O/x.dlfs" --chunk-size ""
bad --container-size "$S" -o "$O/x.dlfs" --chunk-size 64K --container-size 32K
bad --order "$S" -o "$O/x.dlfs" --order bogus
bad --order "$S" -o "$O/x.dlfs" --order shuffle:abc
bad --order "$S" -o "$O/x.dlfs" --order shuffle:-1
bad --order "$S" -o "$O/x.dlfs" --order shuffle:18446744073709551616
bad --threads "$S" -o "$O/x.dlfs" --threads 0
bad --threads "$S" -o "$O/x.dlfs" --threads x
bad --threads "$S" -o "$O/x.dlfs" --threads -3
bad --align "$S" -o "$O/x.dlfs" --align 3
bad --align "$S" -o "$O/x.dlfs" --align 0
bad --align "$S" -o "$O/x.dlfs" --chunk-size 64K --align 128K
bad --bogus "$S" -o "$O/x.dlfs" --bogus
# A misspelt option names the one meant (issue 39, item 4).
bad "unknown option --chunk-sise: did you mean --chunk-size?" "$S" -o "$O/x.dlfs" --chunk-sise 4M
bad "unknown option --comprss: did you mean --compress?" "$S" -o "$O/x.dlfs" --comprss=zstd
bad "unknown option -x" "$S" -o "$O/x.dlfs" -x
bad "--compress needs a value" "$S" -o "$O/x.dlfs" --compress
bad "" "$S"
bad "" -o "$O/x.dlfs"
bad "" "$S" -o
bad ""
pack --help
expect_ok "--help"
grep -qi usage "$T/out" || { _show; fail "--help: no usage on stdout"; }
pack --version
expect_ok "--version"
grep -q '0\.1\.0' "$T/out" || { _show; fail "--version: no 0.1.0 on stdout"; }
# Valid edge values are accepted.
pack "$S" -o "$O/e.dlfs" -q --chunk-size 4K --container-size 4KiB --align 4096 --order shuffle:18446744073709551615 --threads 1
expect_ok "edge option values (4K chunk = container, align = chunk, max seed, 1 thread)"
inspect verify "$O/e.dlfs"
expect_ok "verify edge options"
rm -rf "$O/e.dlfs"
pack "$S" -o "$O/e.dlfs" -q --chunk-size 1G --container-size 1GB --order shuffle
expect_ok "--chunk-size 1G (upper limit)"
rm -rf "$O/e.dlfs"

note "special files"
SP="$T/special"
mkdir -p "$SP/sub"
echo keep >"$SP/keep.txt"
echo keep2 >"$SP/sub/keep2.txt"
mkfifo "$SP/sub/a-fifo"
"$PYTHON" -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])' "$SP/a-socket"
HAVE_DEV=0
if mknod "$SP/sub/a-chardev" c 1 3 2>/dev/null; then HAVE_DEV=1; else note "mknod not permitted: device node case not run"; fi
# Expected tree without the special files.
mkdir -p "$T/special-want/sub"
cp -a "$SP/keep.txt" "$T/special-want/"
cp -a "$SP/sub/keep2.txt" "$T/special-want/sub/"
touch -r "$SP/sub" "$T/special-want/sub"
for order in sorted input; do
	pack "$SP" -o "$O/sp.dlfs" --order $order
	expect_ok "pack with a fifo and a socket (--order $order)"
	for n in a-fifo a-socket; do
		c=$(grep -c -- "$n" "$T/err" || true)
		[ "$c" = 1 ] || { _show; fail "expected exactly one warning line naming $n, got $c"; }
	done
	grep -qE '^dlfs-pack: warning: skipping .*sub/a-fifo: fifo$' "$T/err" || { _show; fail "fifo warning format: 'dlfs-pack: warning: skipping <path>: fifo'"; }
	grep -qE '^dlfs-pack: warning: skipping .*a-socket: socket$' "$T/err" || { _show; fail "socket warning format: 'dlfs-pack: warning: skipping <path>: socket'"; }
	if [ $HAVE_DEV = 1 ]; then
		[ "$(grep -c -- a-chardev "$T/err")" = 1 ] || { _show; fail "expected exactly one warning naming a-chardev"; }
	fi
	inspect extract "$O/sp.dlfs" "$T/spx"
	expect_ok "extract special"
	diff_trees "$T/special-want" "$T/spx"
	inspect stat "$O/sp.dlfs" sub/a-fifo
	expect_rc 1 "stat of the skipped fifo"
	rm -rf "$O/sp.dlfs" "$T/spx"
done
rm -rf "$SP"

note "unreadable files"
# Root reads everything; drop CAP_DAC_OVERRIDE/CAP_DAC_READ_SEARCH so that
# permission bits apply to the packer.
NOCAP=()
if [ "$(id -u)" = 0 ]; then
	if command -v setpriv >/dev/null &&
		setpriv --bounding-set=-dac_override,-dac_read_search -- true 2>/dev/null; then
		NOCAP=(setpriv --bounding-set=-dac_override,-dac_read_search --)
	else
		note "SKIP sub-case: running as root and cannot drop CAP_DAC_OVERRIDE (no setpriv): unreadable-file cases not run"
		NOCAP=(skip)
	fi
fi
if [ "${NOCAP[0]:-}" != skip ]; then
	U="$T/unread"
	mkdir -p "$U/d" "$U/locked"
	echo fine >"$U/fine.txt"
	echo secret >"$U/d/secret.txt"
	echo hidden >"$U/locked/inner.txt"
	chmod 000 "$U/d/secret.txt"
	run "${NOCAP[@]}" "$DLFS_PACK" "$U" -o "$O/u.dlfs" -q
	LAST_CMD="${NOCAP[*]} dlfs-pack $U -o $O/u.dlfs -q"
	expect_rc 1 "unreadable file without --skip-errors"
	err_has "d/secret.txt" "unreadable file: message names it"
	err_has_re "permission denied" "unreadable file: reason"
	assert_empty_dir "$O" "unreadable file"
	run "${NOCAP[@]}" "$DLFS_PACK" "$U" -o "$O/u.dlfs" --skip-errors
	LAST_CMD="${NOCAP[*]} dlfs-pack $U -o $O/u.dlfs --skip-errors"
	expect_ok "unreadable file with --skip-errors"
	grep -qE '^dlfs-pack: warning: skipping .*d/secret\.txt: Permission denied$' "$T/err" ||
		{ _show; fail "--skip-errors: expected 'dlfs-pack: warning: skipping <path>/d/secret.txt: Permission denied'"; }
	inspect stat "$O/u.dlfs" d/secret.txt
	expect_rc 1 "the skipped file is not in the dataset"
	inspect cat "$O/u.dlfs" fine.txt
	expect_ok "other files are in the dataset"
	[ "$(cat "$T/out")" = fine ] || fail "fine.txt content"
	inspect verify "$O/u.dlfs"
	expect_ok "verify after --skip-errors"
	rm -rf "$O/u.dlfs"
	chmod 644 "$U/d/secret.txt"
	# An unreadable directory.
	chmod 000 "$U/locked"
	run "${NOCAP[@]}" "$DLFS_PACK" "$U" -o "$O/u.dlfs" -q
	LAST_CMD="${NOCAP[*]} dlfs-pack $U -o $O/u.dlfs -q"
	expect_rc 1 "unreadable directory without --skip-errors"
	err_has "locked" "unreadable directory: message names it"
	assert_empty_dir "$O" "unreadable directory"
	chmod 755 "$U/locked"
	# An unreadable source.
	chmod 000 "$U"
	run "${NOCAP[@]}" "$DLFS_PACK" "$U" -o "$O/u.dlfs" -q
	LAST_CMD="${NOCAP[*]} dlfs-pack $U -o $O/u.dlfs -q"
	expect_rc 1 "unreadable source directory"
	err_has "$U" "unreadable source: message names it"
	assert_empty_dir "$O" "unreadable source"
	chmod 755 "$U"
	chmod 000 "$T/s2.tar"
	run "${NOCAP[@]}" "$DLFS_PACK" "$T/s2.tar" -o "$O/u.dlfs" -q
	LAST_CMD="${NOCAP[*]} dlfs-pack $T/s2.tar -o $O/u.dlfs -q"
	expect_rc 1 "unreadable tar source"
	err_has "s2.tar" "unreadable tar: message names it"
	assert_empty_dir "$O" "unreadable tar"
	chmod 644 "$T/s2.tar"
fi
exit 0
