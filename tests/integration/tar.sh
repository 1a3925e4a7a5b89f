#!/bin/bash
# tar: archives as sources. The odd tree tarred by GNU tar (gnu and pax
# formats; plain, gzip, xz, zstd) packs to the same tree as the directory
# (mtimes to the second for gnu, to the ns for pax), with both the streaming
# (--order input) and the spooled (sorted/size) paths. A directory + a tar
# merge (first source's dir metadata wins), parentless tar members get
# implied 0755 dirs, a late dir member sets its dir's metadata, zip works.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"

gentree odd "$T/src" --seed 21
# libarchive (3.6.2 at least) misreads a pax mtime before 1970 that has a
# fraction ("mtime=-999999999.876543211" comes back as -999999999 s +
# 876543211 ns), so pre-1970 times are whole seconds here; roundtrip.sh
# covers them with nanoseconds through directory sources.
"$PYTHON" - "$T/src" <<'EOF'
import os, sys
for dp, dn, fn in os.walk(sys.argv[1]):
    for n in dn + fn:
        p = os.path.join(dp, n)
        t = os.lstat(p).st_mtime_ns
        if t < 0 and t % 10**9:
            t -= t % 10**9
            os.utime(p, ns=(t, t), follow_symlinks=False)
EOF
mkdir "$T/ds"

tar_case() { # NAME TARFILE MTIME_PRECISION [pack options...]
	local name=$1 tarf=$2 prec=$3
	shift 3
	note "tar case $name"
	pack "$tarf" -o "$T/ds/$name.dlfs" --chunk-size 64K --container-size 1M -q "$@"
	expect_ok "pack $name"
	[ "$(ls -A "$T/ds")" = "$name.dlfs" ] || fail "pack $name left litter: $(ls -A "$T/ds" | tr '\n' ' ')"
	inspect verify "$T/ds/$name.dlfs"
	expect_ok "verify $name"
	check_info_counts "$T/ds/$name.dlfs" "$T/src"
	inspect extract "$T/ds/$name.dlfs" "$T/x"
	expect_ok "extract $name"
	diff_trees "$T/src" "$T/x"
	compare_trees "$T/src" "$T/x" --mtime "$prec"
	if [ "$prec" = ns ]; then
		local seqopt=()
		if [ "${ORDER:-sorted}" = input ]; then
			# --order input: files in archive member order.
			"$PYTHON" - "$tarf" >"$T/seq" <<'EOF'
import os, sys, tarfile
with tarfile.open(sys.argv[1], encoding="utf-8", errors="surrogateescape") as tf:
    for m in tf:
        if m.isfile() or m.islnk():
            n = os.fsencode(m.name)
            while n.startswith(b"./"):
                n = n[2:]
            print(repr(n))
EOF
			seqopt=(--expect-seq "$T/seq")
		fi
		"$PYTHON" "$(dirname "$0")/dscheck.py" "$DLFS_INSPECT" "$T/ds/$name.dlfs" "$T/src" \
			--chunk 65536 --order "${ORDER:-sorted}" --no-root "${seqopt[@]}" ||
			fail "stat/ls/layout check of $name against the source failed (see above)"
	fi
	chmod -R u+rwx "$T/x"
	rm -rf "$T/x" "$T/ds/$name.dlfs"
}

# GNU format: mtimes in whole seconds.
tar -C "$T/src" -cf "$T/gnu.tar" .
tar_case gnu "$T/gnu.tar" s
tar_case gnu-input "$T/gnu.tar" s --order input
tar -C "$T/src" -cJf "$T/gnu.tar.xz" .
tar_case gnu-xz "$T/gnu.tar.xz" s --order size

# pax: nanosecond mtimes and raw byte names.
tar --format=pax -C "$T/src" -cf "$T/pax.tar" .
ORDER=sorted tar_case pax "$T/pax.tar" ns
ORDER=input tar_case pax-input "$T/pax.tar" ns --order input
tar --format=pax -C "$T/src" -czf "$T/pax.tar.gz" .
ORDER=size tar_case pax-gz "$T/pax.tar.gz" ns --order size
if command -v zstd >/dev/null; then
	tar --format=pax --zstd -C "$T/src" -cf "$T/pax.tar.zst" .
	ORDER=shuffle tar_case pax-zst "$T/pax.tar.zst" ns --order shuffle:3
else
	note "zstd not installed: tar.zst case not run"
fi
# Members named without "./" (tar run on the top-level names).
(cd "$T/src" && tar --format=pax -cf "$T/plain.tar" -- *)
ORDER=sorted tar_case plain-names "$T/plain.tar" ns

# The same tree from a dir and from its tar: same dataset id (the id depends
# on the content, not on where it came from), when mtimes are exact (pax) and
# the root's mode/mtime agree (they come from the dir source / default).
# Not asserted: the root differs between the two by design.

# --- a directory and a tar merged.
A="$T/A" B="$T/B"
mkdir -p "$A/common/deeper" "$A/onlya" "$B/common/sub" "$B/onlyb" "$B/common/deeper"
echo a1 >"$A/common/a1"
echo fa >"$A/onlya/f"
echo top >"$A/top.txt"
echo ad >"$A/common/deeper/ad"
echo b1 >"$B/common/b1"
echo b2 >"$B/common/sub/b2"
echo bd >"$B/common/deeper/bd"
echo g >"$B/onlyb/g"
ln -s ../top.txt "$B/onlyb/lnk"
chmod 0750 "$A/common"
chmod 0700 "$B/common"
chmod 0711 "$A/common/deeper"
chmod 0701 "$B/common/deeper"
chmod 0755 "$A" "$B"
"$PYTHON" - "$A" "$B" <<'EOF'
import os, sys
for i, top in enumerate(sys.argv[1:]):
    for dp, dn, fn in sorted(os.walk(top, topdown=False)):
        for n in fn + dn:
            p = os.path.join(dp, n)
            t = (1500000000 + 1000 * i + len(p)) * 10**9 + 100 * len(p) + i
            os.utime(p, ns=(t, t), follow_symlinks=False)
    for dp, dn, fn in os.walk(top, topdown=False):
        t = (1400000000 + 1000 * i + len(dp)) * 10**9 + 7 + i
        os.utime(dp, ns=(t, t))
EOF
tar --format=pax -C "$B" -cf "$T/b.tar" .

# expected_merge FIRST SECOND DEST ROOTFROM: union of the two trees; every
# directory takes its mode/mtime from FIRST if FIRST has it; DEST's root from ROOTFROM.
expected_merge() {
	mkdir "$3"
	cp -a "$1/." "$3/"
	cp -a "$2/." "$3/"
	"$PYTHON" - "$1" "$2" "$3" "$4" <<'EOF'
import os, stat, sys
first, second, dest, rootfrom = sys.argv[1:]
dirs = set()
for top in (first, second):
    for dp, dn, fn in os.walk(top):
        for n in dn:
            dirs.add(os.path.relpath(os.path.join(dp, n), top))
for rel in sorted(dirs, key=lambda r: -r.count("/")):
    src = os.path.join(first, rel)
    if not os.path.isdir(src):
        src = os.path.join(second, rel)
    st = os.lstat(src)
    os.chmod(os.path.join(dest, rel), stat.S_IMODE(st.st_mode))
    os.utime(os.path.join(dest, rel), ns=(st.st_mtime_ns, st.st_mtime_ns))
st = os.lstat(rootfrom)
os.chmod(dest, stat.S_IMODE(st.st_mode))
os.utime(dest, ns=(st.st_mtime_ns, st.st_mtime_ns))
EOF
}

note "merge: dir then tar"
expected_merge "$A" "$B" "$T/want1" "$A"
pack "$A" "$T/b.tar" -o "$T/ds/m1.dlfs" -q
expect_ok "pack dir + tar"
inspect verify "$T/ds/m1.dlfs"
expect_ok "verify dir + tar"
inspect extract "$T/ds/m1.dlfs" "$T/x"
expect_ok "extract dir + tar"
diff_trees "$T/want1" "$T/x"
compare_trees "$T/want1" "$T/x" --mtime ns --with-root
check_info_counts "$T/ds/m1.dlfs" "$T/want1"
rm -rf "$T/x"

note "merge: tar then dir (dirs from the tar, root from the first directory source)"
chmod 0705 "$A"
touch -d '2011-11-11 11:11:11.111111111 UTC' "$A"
expected_merge "$B" "$A" "$T/want2" "$A"
pack "$T/b.tar" "$A" -o "$T/ds/m2.dlfs" -q --order input
expect_ok "pack tar + dir"
inspect extract "$T/ds/m2.dlfs" "$T/x"
expect_ok "extract tar + dir"
diff_trees "$T/want2" "$T/x"
compare_trees "$T/want2" "$T/x" --mtime ns --with-root
inspect stat "$T/ds/m2.dlfs" common
grep -qxF "mode: 0700" "$T/out" || { _show; fail "tar + dir: common/ should keep the tar's mode 0700 (first source wins)"; }
rm -rf "$T/x"

# --- members without parent directory entries, "./" and "//" in names, and
# a directory member that comes after its children.
"$PYTHON" - "$T/noparents.tar" <<'EOF'
import io, sys, tarfile
def add(tf, name, data=b"", mtime=0, mode=0o644, typ=tarfile.REGTYPE, link=""):
    ti = tarfile.TarInfo(name)
    ti.type, ti.mode, ti.mtime, ti.linkname = typ, mode, mtime, link
    ti.size = len(data) if typ == tarfile.REGTYPE else 0
    tf.addfile(ti, io.BytesIO(data) if typ == tarfile.REGTYPE else None)
with tarfile.open(sys.argv[1], "w", format=tarfile.PAX_FORMAT) as tf:
    add(tf, "p/q/r.txt", b"r" * 100, mtime=1600000000)
    add(tf, "x/y", b"yy", mtime=1700000123)            # the newest mtime
    add(tf, "./z", b"z", mtime=1500000000)
    add(tf, "a//b", b"b", mtime=1500000001)
    add(tf, "late/child", b"c", mtime=1500000002)
    add(tf, "late/sub/l", b"", mtime=1500000002, typ=tarfile.SYMTYPE, link="../child")
    add(tf, "late", mtime=1234567890, mode=0o700, typ=tarfile.DIRTYPE)
EOF
for order in sorted input; do
	pack "$T/noparents.tar" -o "$T/ds/np-$order.dlfs" -q --order $order
	expect_ok "pack tar without parent entries (--order $order)"
	DS="$T/ds/np-$order.dlfs"
	inspect ls "$DS"
	expect_ok "ls"
	[ "$(tr '\n' ' ' <"$T/out")" = "a late p x z " ] || { _show; fail "tar without parents ($order): root should list a late p x z"; }
	for p in p p/q x a late/sub /; do
		inspect stat "$DS" "$p"
		expect_ok "stat $p"
		grep -qxF "type: dir" "$T/out" || { _show; fail "implied dir $p is not a dir"; }
		grep -qxF "mode: 0755" "$T/out" || { _show; fail "implied dir $p: mode should be 0755"; }
		grep -qxF "mtime: 1700000123.000000000" "$T/out" || { _show; fail "implied dir $p: mtime should be the newest in the tree (1700000123)"; }
	done
	inspect stat "$DS" late
	grep -qxF "mode: 0700" "$T/out" || { _show; fail "dir member after its children: its mode 0700 is lost"; }
	grep -qxF "mtime: 1234567890.000000000" "$T/out" || { _show; fail "dir member after its children: its mtime is lost"; }
	inspect cat "$DS" p/q/r.txt
	expect_ok "cat p/q/r.txt"
	[ "$(cat "$T/out")" = "$(printf 'r%.0s' $(seq 100))" ] || fail "p/q/r.txt content"
	inspect cat "$DS" a/b
	expect_ok "cat a/b ('a//b' in the tar)"
	inspect stat "$DS" late/sub/l
	grep -qxF "target: ../child" "$T/out" || { _show; fail "late/sub/l target"; }
	inspect verify "$DS"
	expect_ok "verify ($order)"
done

# --- zip
"$PYTHON" - "$T/a.zip" <<'EOF'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1], "w", zipfile.ZIP_DEFLATED) as z:
    z.writestr("zd/one.txt", b"one\n" * 1000)
    z.writestr("two.txt", b"two")
    z.writestr("emptyd/", b"")
EOF
pack "$T/a.zip" -o "$T/ds/zip.dlfs" -q
expect_ok "pack zip"
inspect cat "$T/ds/zip.dlfs" zd/one.txt
expect_ok "cat zip member"
[ "$(wc -c <"$T/out")" = 4000 ] || fail "zip: zd/one.txt should be 4000 bytes"
inspect stat "$T/ds/zip.dlfs" emptyd
grep -qxF "type: dir" "$T/out" || { _show; fail "zip: emptyd/ should be a directory"; }
exit 0
