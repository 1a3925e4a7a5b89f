#!/bin/bash
# hostile_tar: archives whose members would escape the dataset root or
# smuggle a path through a symlink ("../evil", "a/../../evil", "/abs/path",
# a hard link to "../x", a symlink "link" then "link/evil") make dlfs-pack
# exit 1 with a "dlfs-pack: ..." message naming the member, write nothing at
# OUT, leave no temp dir, and never touch anything outside.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"

mkdir "$T/o" "$T/work"
mktar() { # FILE SPEC...   SPEC = f:NAME | d:NAME | l:NAME:TARGET | h:NAME:TARGET
	"$PYTHON" - "$@" <<'EOF'
import io, sys, tarfile
out, specs = sys.argv[1], sys.argv[2:]
with tarfile.open(out, "w", format=tarfile.GNU_FORMAT) as tf:
    for s in specs:
        kind, rest = s.split(":", 1)
        ti = tarfile.TarInfo("x")
        ti.mtime = 1600000000
        if kind == "f":
            ti.name = rest
            data = b"evil data for " + rest.encode()
            ti.size = len(data)
            tf.addfile(ti, io.BytesIO(data))
            continue
        if kind == "d":
            ti.name, ti.type, ti.mode = rest, tarfile.DIRTYPE, 0o755
        else:
            name, target = rest.split(":", 1)
            ti.name, ti.linkname = name, target
            ti.type = tarfile.SYMTYPE if kind == "l" else tarfile.LNKTYPE
        tf.addfile(ti)
EOF
}

hostile() { # LABEL EXPECTED_NAME_IN_MESSAGE TARFILE [pack options]
	local label=$1 member=$2 tarf=$3
	shift 3
	note "hostile: $label"
	for order in input sorted; do
		cd "$T/work"
		run "$DLFS_PACK" "$tarf" -o "$T/o/evil.dlfs" --order $order "$@"
		cd "$T"
		LAST_CMD="(in $T/work) dlfs-pack $tarf -o $T/o/evil.dlfs --order $order $*"
		expect_rc 1 "$label (--order $order)"
		err_has "$member" "$label (--order $order): the message must name the member"
		grep -q '^dlfs-pack: ' "$T/err" || { _show; fail "$label: message should start with 'dlfs-pack: '"; }
		assert_empty_dir "$T/o" "$label (--order $order): output parent after the failed pack"
		assert_empty_dir "$T/work" "$label (--order $order): working directory after the failed pack"
		assert_absent "$T/evil" "$label: something was written outside"
		assert_absent "/abs-dlfs-hostile-test" "$label: something was written at /"
	done
}

mktar "$T/t1.tar" f:good.txt f:../evil
hostile "member ../evil" "../evil" "$T/t1.tar"

mktar "$T/t2.tar" f:good.txt d:a f:a/../../evil
hostile "member a/../../evil" "a/../../evil" "$T/t2.tar"

mktar "$T/t3.tar" f:good.txt f:/abs-dlfs-hostile-test/path
hostile "absolute member /abs-dlfs-hostile-test/path" "/abs-dlfs-hostile-test/path" "$T/t3.tar"

mktar "$T/t4.tar" f:good.txt d:sub f:sub/..
hostile "member sub/.." "sub/.." "$T/t4.tar"

# A symlink, then a member "through" it: with extraction-style packers this
# writes outside. In a dataset "link" cannot be both a symlink and a dir.
mktar "$T/t5.tar" f:good.txt l:link:.. f:link/evil
hostile "symlink link -> .. then link/evil" "link" "$T/t5.tar"
mktar "$T/t6.tar" f:good.txt l:link:/tmp f:link/evil
hostile "symlink link -> /tmp then link/evil" "link" "$T/t6.tar"

# A hard link whose target escapes, or is absolute, or does not exist.
mktar "$T/t7.tar" f:good.txt h:hl:../../etc/passwd
hostile "hard link to ../../etc/passwd" "hl" "$T/t7.tar"
mktar "$T/t8.tar" f:good.txt h:hl2:/etc/passwd
hostile "hard link to /etc/passwd" "hl2" "$T/t8.tar"

# The same path twice inside one archive.
mktar "$T/t9.tar" f:dup.txt f:good.txt f:dup.txt
hostile "duplicate member dup.txt" "dup.txt" "$T/t9.tar"

# Hostile members still fail with --skip-errors (only unreadable files are skipped).
hostile "member ../evil with --skip-errors" "../evil" "$T/t1.tar" --skip-errors

# The good case of the same shape passes (the tars above fail because of the
# hostile member, not because of something else in them).
mktar "$T/ok.tar" f:good.txt d:a f:a/b l:link:.. l:abs:/etc/passwd h:hl:good.txt
cd "$T/work"
run "$DLFS_PACK" "$T/ok.tar" -o "$T/o/ok.dlfs"
cd "$T"
LAST_CMD="dlfs-pack ok.tar"
expect_ok "control tar (symlinks to .. and / are fine as targets, hard link to a member)"
inspect cat "$T/o/ok.dlfs" hl
expect_ok "cat hl"
[ "$(cat "$T/out")" = "evil data for good.txt" ] || fail "hard link hl should hold good.txt's content"
inspect stat "$T/o/ok.dlfs" a/b
expect_ok "stat a/b"
inspect stat "$T/o/ok.dlfs" link
grep -qxF "target: .." "$T/out" || { _show; fail "symlink target '..' not kept verbatim"; }
exit 0
