#!/bin/bash
# verify_corrupt: damage is detected, reported precisely, and contained.
# A flipped byte in one small file's data: verify exits 1 naming exactly that
# file (not its neighbours in the same chunk), cat of it fails with an I/O
# error, cat of the neighbours works. Damaged container header/footer, a
# truncated, missing or foreign (other dataset id) container, an index with
# an unknown format major version, and a truncated/garbage index all give a
# clean exit 1 naming the file at fault; the rest of the dataset stays readable.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"

gentree odd "$T/src/odd" --seed 31 --no-symlinks
mkdir "$T/src/victims"
"$PYTHON" - "$T/src/victims" <<'EOF'
import os, random, sys
r = random.Random(7)
d = sys.argv[1]
for i in range(30):  # 30 x 1000 bytes: all in one 64 KiB chunk
    open(os.path.join(d, "s%02d" % i), "wb").write(r.randbytes(1000))
for i in range(10):  # 10 x 150 KiB: several containers
    open(os.path.join(d, "m%d" % i), "wb").write(r.randbytes(150 * 1024))
for p in os.listdir(d):
    os.utime(os.path.join(d, p), ns=(1600000000123456789, 1600000000123456789))
EOF
DS="$T/ds.dlfs"
PACKOPTS=(--chunk-size 64K --container-size 1M -q)
pack "$T/src" -o "$DS" "${PACKOPTS[@]}"
expect_ok "pack"
inspect verify "$DS"
expect_ok "verify of the intact dataset"
NCONT=$(ls "$DS" | grep -c '\.dlc$')
[ "$NCONT" -ge 3 ] || fail "expected >= 3 containers, got $NCONT"
# All file paths, for "no other file is named" checks.
(cd "$T/src" && find . -type f | sed 's|^\./||') >"$T/allfiles"

# loc PATH -> sets C (container file name) and OFF (offset) from stat --json.
loc() {
	inspect stat --json "$DS" "$1"
	expect_ok "stat --json $1"
	cp "$T/out" "$T/st.json"
	C=$(printf '%06d.dlc' "$(json_get "$T/st.json" container)")
	OFF=$(json_get "$T/st.json" offset)
}
flip() { # FILE OFFSET: xor one byte with 0xff
	"$PYTHON" - "$1" "$2" <<'EOF'
import sys
with open(sys.argv[1], "r+b") as f:
    f.seek(int(sys.argv[2])); b = f.read(1)
    f.seek(int(sys.argv[2])); f.write(bytes([b[0] ^ 0xFF]))
EOF
}
# only_named VICTIM...: stderr of the last verify names these files and no other.
only_named() {
	"$PYTHON" - "$T/err" "$T/allfiles" "$@" <<'EOF' || { _show; fail "verify must name exactly: $*"; }
import sys
err = open(sys.argv[1], "rb").read()
victims = [v.encode() for v in sys.argv[3:]]
bad = 0
for v in victims:
    if b"verify: " + v + b": " not in err:
        print("  not named: %r" % v, file=sys.stderr); bad = 1
for p in open(sys.argv[2], "rb").read().split(b"\n"):
    if p and p not in victims and b"verify: " + p + b": " in err:
        print("  wrongly named: %r" % p, file=sys.stderr); bad = 1
sys.exit(bad)
EOF
}

note "one flipped byte in a small file"
loc victims/s15
flip "$DS/$C" $((OFF + 100))
inspect verify "$DS"
expect_rc 1 "verify with a flipped byte in victims/s15"
err_has "dlfs-inspect: verify: victims/s15: checksum mismatch (container $C, offset " "verify message"
only_named victims/s15
grep -qE ': 1 damaged files?$' "$T/out" || { _show; fail "verify summary should end with '1 damaged files'"; }
inspect cat "$DS" victims/s15
expect_rc 1 "cat of the damaged file"
err_has "victims/s15" "cat of the damaged file names it"
err_has_re "input/output error|checksum mismatch|damaged|corrupt" "cat of the damaged file: I/O error or checksum message"
for n in s14 s16 s00 s29; do
	inspect cat "$DS" victims/$n
	expect_ok "cat of victims/$n (same chunk as the damaged file)"
	cmp -s "$T/out" "$T/src/victims/$n" || fail "cat victims/$n differs from the source"
done
inspect extract "$DS" "$T/x"
expect_rc 1 "extract of a dataset with a damaged file"
err_has "victims/s15" "extract names the damaged file"
rm -rf "$T/x"
flip "$DS/$C" $((OFF + 100))
inspect verify "$DS"
expect_ok "verify after flipping the byte back"

note "one flipped byte deep inside a multi-chunk file"
loc odd/sizes/1m+3
flip "$DS/$C" $((OFF + 700001))
inspect verify "$DS"
expect_rc 1 "verify with a flipped byte in odd/sizes/1m+3"
only_named odd/sizes/1m+3
inspect cat "$DS" odd/sizes/1m+3
expect_rc 1 "cat of the damaged large file"
err_has "odd/sizes/1m+3" "cat of the damaged large file names it"
flip "$DS/$C" $((OFF + 700001))

cp -a "$DS" "$T/pristine.dlfs"
restore() { rm -rf "$DS"; cp -a "$T/pristine.dlfs" "$DS"; }

# A file in container 1 (not 0) and one in another container.
loc victims/m5
VC=$C VOFF=$OFF
loc victims/s03
OC=$C
[ "$VC" != "$OC" ] || fail "test setup: victims/m5 and victims/s03 should be in different containers"

note "damaged container header and footer"
flip "$DS/$VC" 30
inspect verify "$DS"
expect_rc 1 "verify with a damaged header of $VC"
err_has "$VC" "damaged header: the container is named"
err_has "victims/m5" "damaged header: its files are reported"
inspect cat "$DS" victims/m5
expect_rc 1 "cat from a container with a damaged header"
err_has "$VC" "cat from a container with a damaged header names it"
inspect cat "$DS" victims/s03
expect_ok "cat from another container while $VC is damaged"
restore
SZ=$(stat -c %s "$DS/$VC")
flip "$DS/$VC" $((SZ - 1))
inspect verify "$DS"
expect_rc 1 "verify with a damaged footer of $VC"
err_has "$VC" "damaged footer: the container is named"
restore
flip "$DS/$VC" $((SZ - 100))
inspect verify "$DS"
expect_rc 1 "verify with a damaged trailer of $VC"
err_has "$VC" "damaged trailer: the container is named"
restore

note "truncated container"
truncate -s $((VOFF + 10)) "$DS/$VC"
inspect verify "$DS"
expect_rc 1 "verify with $VC truncated"
err_has "$VC" "truncated container: named by verify"
err_has_re "truncat" "truncated container: verify says truncated"
inspect cat "$DS" victims/m5
expect_rc 1 "cat from a truncated container"
err_has "$VC" "cat from a truncated container names it"
err_has_re "truncat" "cat from a truncated container says truncated"
inspect cat "$DS" victims/s03
expect_ok "cat from an intact container while $VC is truncated"
cmp -s "$T/out" "$T/src/victims/s03" || fail "victims/s03 content"
restore

note "missing container"
rm "$DS/$VC"
inspect verify "$DS"
expect_rc 1 "verify with $VC missing"
err_has "$VC" "missing container: named by verify"
err_has "victims/m5" "missing container: its files are reported"
inspect cat "$DS" victims/m5
expect_rc 1 "cat from a missing container"
err_has "$VC" "cat from a missing container names it"
err_has_re "no such file" "cat from a missing container: reason"
inspect cat "$DS" victims/s03
expect_ok "cat from an intact container while $VC is missing"
inspect ls "$DS" victims
expect_ok "ls while a container is missing"
restore

note "container from another dataset (same sizes, other dataset id)"
cp -a "$T/src" "$T/src2"
touch -d '2001-01-01 00:00:00.5 UTC' "$T/src2/victims/m9"   # only the id changes in container 0
pack "$T/src2" -o "$T/other.dlfs" "${PACKOPTS[@]}"
expect_ok "pack the other dataset"
cmp -s "$T/other.dlfs/000000.dlc" "$DS/000000.dlc" && fail "test setup: container 0 is identical in both datasets"
[ "$(stat -c %s "$T/other.dlfs/000000.dlc")" = "$(stat -c %s "$DS/000000.dlc")" ] ||
	note "container 0 sizes differ between the datasets; the size check may fire first"
# A non-empty file that lives in container 0.
F0=
while IFS= read -r f; do
	[ -s "$T/src/$f" ] || continue
	loc "$f"
	if [ "$C" = 000000.dlc ]; then F0=$f; break; fi
done <"$T/allfiles"
[ -n "$F0" ] || fail "test setup: no non-empty file found in 000000.dlc"
cp "$T/other.dlfs/000000.dlc" "$DS/000000.dlc"
inspect verify "$DS"
expect_rc 1 "verify with a foreign 000000.dlc"
err_has "000000.dlc" "foreign container: named by verify"
err_has_re "dataset id" "foreign container: message mentions the dataset id"
inspect cat "$DS" "$F0"
expect_rc 1 "cat from a foreign container"
err_has_re "dataset id" "cat from a foreign container: message mentions the dataset id"
restore

note "index with an unknown format major version"
inspect info --json "$DS"
cp "$T/out" "$T/info.json"
ID=$(json_get "$T/info.json" dataset_id)
patch_super() { # MAJOR MINOR: rewrite the version fields of every copy of the super record
	"$PYTHON" - "$DS/index" "$ID" "$1" "$2" <<'EOF' || fail "could not find the super record in the index"
import struct, sys
path, did, major, minor = sys.argv[1], bytes.fromhex(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
data = bytearray(open(path, "rb").read())
n = 0
for old in (struct.pack("<II", 1, 1), struct.pack("<II", 1, 7)):
    pat = old + did
    i = data.find(pat)
    while i >= 0:
        data[i:i + 8] = struct.pack("<II", major, minor)
        n += 1
        i = data.find(pat, i + 1)
if n == 0:
    sys.exit(1)
open(path, "wb").write(data)
EOF
}
patch_super 99 0
for cmd in "info" "info --json" "ls" "ls -l" "stat victims/s03" "stat --json victims/s03" "cat victims/s03" "verify" "extract $T/x"; do
	set -- $cmd
	c=$1
	shift
	opts=() args=()
	for a in "$@"; do case $a in -*) opts+=("$a") ;; *) args+=("$a") ;; esac; done
	inspect "$c" "${opts[@]}" "$DS" "${args[@]}"
	expect_rc 1 "dlfs-inspect $cmd on an index with format_major 99"
	err_has "unsupported format version" "dlfs-inspect $cmd (format 99)"
	err_has "$DS/index" "dlfs-inspect $cmd (format 99): message names the index file"
	err_has "99" "dlfs-inspect $cmd (format 99): message names the version"
	[ -s "$T/out" ] && { _show; fail "dlfs-inspect $cmd (format 99) printed on stdout"; }
	rm -rf "$T/x"
done
restore
patch_super 1 7
inspect info "$DS"
expect_ok "info with format 1.7 (a newer minor version is accepted)"
inspect cat "$DS" victims/s03
expect_ok "cat with format 1.7"
restore

note "damaged index"
ISZ=$(stat -c %s "$DS/index")
for how in half zero garbage; do
	case $how in
	half) truncate -s $((ISZ / 2)) "$DS/index" ;;
	zero) : >"$DS/index" ;;
	garbage) head -c 16384 /dev/urandom | dd of="$DS/index" conv=notrunc status=none ;;
	esac
	for cmd in info ls verify; do
		inspect $cmd "$DS"
		expect_fail "dlfs-inspect $cmd with a $how index"
		[ "$RC" = 1 ] || { _show; fail "dlfs-inspect $cmd with a $how index: expected exit 1, got $RC"; }
		err_has "$DS/index" "dlfs-inspect $cmd with a $how index: message names the index"
	done
	inspect cat "$DS" victims/s03
	expect_fail "cat with a $how index"
	restore
done
rm -f "$DS/index"
inspect info "$DS"
expect_rc 1 "info with no index"
err_has "$DS/index" "missing index: named"
restore

# The index against its seal (index.sum, issue 24): its last byte changed
# is named as the index's damage, whatever else it breaks.
printf 'X' | dd of="$DS/index" bs=1 seek=$((ISZ - 1)) conv=notrunc status=none
inspect verify "$DS"
expect_rc 1 "verify of an index that does not match its seal"
err_has "dlfs-inspect: verify: index: its checksum is not the one its seal (index.sum) gives: damaged" \
	"verify names the index that does not match its seal"
grep -q "; the index is damaged\$" "$T/out" || { _show; fail "verify's summary does not say the index is damaged"; }
restore
printf 'junk' >"$DS/index.sum"
inspect verify "$DS"
expect_rc 1 "verify with a damaged seal"
err_has "index.sum: " "verify names the damaged seal"
rm "$DS/index.sum"
inspect verify "$DS"
expect_ok "verify of a dataset without a seal (packed before index.sum)"
grep -q ": OK (no index seal" "$T/out" || { _show; fail "verify does not say the dataset has no seal"; }
restore
inspect verify "$DS"
expect_ok "verify of the restored dataset (the test's own damage is undone)"
exit 0
