#!/bin/bash
# repro: packing is a pure function of the tree and the layout options. The
# same tree packed twice (other OUT name, --threads 1 vs 8, a copy of the
# tree at another path, created in another order) gives byte-identical
# datasets, index included; changing one file's mtime (by 1 ns), content,
# mode, a symlink target, or a layout option changes the dataset id, and
# undoing the change gives the original id back.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"

gentree odd "$T/src" --seed 41
mkdir "$T/ds"
OPTS=(--chunk-size 64K --container-size 1M -q)

same() { # A B LABEL: every file of the two datasets is byte-identical
	local a=$1 b=$2 label=$3
	[ "$(ls -A "$a")" = "$(ls -A "$b")" ] || fail "$label: different file lists: $(ls -A "$a" | tr '\n' ' ') vs $(ls -A "$b" | tr '\n' ' ')"
	local f
	for f in $(ls -A "$a"); do
		cmp "$a/$f" "$b/$f" >&2 || fail "$label: $f differs between $a and $b"
	done
}
id_of() {
	inspect info --json "$1"
	expect_ok "info --json $1"
	cp "$T/out" "$T/info.json"
	json_get "$T/info.json" dataset_id
}

pack "$T/src" -o "$T/ds/a.dlfs" "${OPTS[@]}"
expect_ok "pack a"
pack "$T/src" -o "$T/ds/b-other-name.dlfs" "${OPTS[@]}"
expect_ok "pack b"
same "$T/ds/a.dlfs" "$T/ds/b-other-name.dlfs" "two packs of the same tree"
[ "$(ls "$T/ds/a.dlfs" | grep -c '\.dlc$')" -ge 3 ] || fail "expected several containers"

pack "$T/src" -o "$T/ds/t1.dlfs" "${OPTS[@]}" --threads 1
expect_ok "pack --threads 1"
pack "$T/src" -o "$T/ds/t8.dlfs" "${OPTS[@]}" --threads 8
expect_ok "pack --threads 8"
same "$T/ds/t1.dlfs" "$T/ds/t8.dlfs" "--threads 1 vs --threads 8"
same "$T/ds/a.dlfs" "$T/ds/t8.dlfs" "default threads vs --threads 8"
pack "$T/src" -o "$T/ds/t13.dlfs" "${OPTS[@]}" --threads 13
expect_ok "pack --threads 13"
same "$T/ds/a.dlfs" "$T/ds/t13.dlfs" "--threads 13"

# A copy at another path, with its entries created in reverse order (so the
# file system lists directories differently): same dataset.
"$PYTHON" - "$T/src" "$T/copy/deeper/src" <<'EOF'
import os, shutil, stat, sys
src, dst = (os.fsencode(a) for a in sys.argv[1:])
os.makedirs(dst)
def copy(s, d):
    for n in sorted(os.listdir(s), reverse=True):
        sp, dp = os.path.join(s, n), os.path.join(d, n)
        st = os.lstat(sp)
        if stat.S_ISDIR(st.st_mode):
            os.mkdir(dp); copy(sp, dp)
        elif stat.S_ISLNK(st.st_mode):
            os.symlink(os.readlink(sp), dp)
        else:
            shutil.copyfile(sp, dp)
        if not stat.S_ISLNK(st.st_mode):
            os.chmod(dp, stat.S_IMODE(st.st_mode))
        os.utime(dp, ns=(st.st_mtime_ns, st.st_mtime_ns), follow_symlinks=False)
copy(src, dst)
st = os.lstat(src)
os.chmod(dst, stat.S_IMODE(st.st_mode))
os.utime(dst, ns=(st.st_mtime_ns, st.st_mtime_ns))
EOF
pack "$T/copy/deeper/src" -o "$T/ds/copy.dlfs" "${OPTS[@]}"
expect_ok "pack of the copy"
same "$T/ds/a.dlfs" "$T/ds/copy.dlfs" "a copy of the tree at another path"

# Shuffle with a seed is reproducible too, and --order input of one dir.
for o in shuffle:7 input size; do
	pack "$T/src" -o "$T/ds/o1.dlfs" "${OPTS[@]}" --order $o --threads 2
	expect_ok "pack --order $o"
	pack "$T/src" -o "$T/ds/o2.dlfs" "${OPTS[@]}" --order $o --threads 7
	expect_ok "pack --order $o"
	same "$T/ds/o1.dlfs" "$T/ds/o2.dlfs" "--order $o twice"
	rm -rf "$T/ds/o1.dlfs" "$T/ds/o2.dlfs"
done
# A tar of the tree packs reproducibly as well (spooled and streamed).
tar --format=pax -C "$T/src" -cf "$T/src.tar" .
for o in sorted input; do
	pack "$T/src.tar" -o "$T/ds/tar1.dlfs" "${OPTS[@]}" --order $o
	expect_ok "pack tar --order $o"
	pack "$T/src.tar" -o "$T/ds/tar2.dlfs" "${OPTS[@]}" --order $o --threads 1
	expect_ok "pack tar --order $o"
	same "$T/ds/tar1.dlfs" "$T/ds/tar2.dlfs" "tar --order $o twice"
	rm -rf "$T/ds/tar1.dlfs" "$T/ds/tar2.dlfs"
done

ID0=$(id_of "$T/ds/a.dlfs")
N=0
# changed LABEL: pack the current tree; its id must differ from ID0.
changed() {
	N=$((N + 1))
	pack "$T/src" -o "$T/ds/c$N.dlfs" "${OPTS[@]}" "${@:2}"
	expect_ok "pack after: $1"
	local id
	id=$(id_of "$T/ds/c$N.dlfs")
	[ "$id" != "$ID0" ] || fail "dataset id unchanged after: $1"
	rm -rf "$T/ds/c$N.dlfs"
}
unchanged() {
	N=$((N + 1))
	pack "$T/src" -o "$T/ds/c$N.dlfs" "${OPTS[@]}"
	expect_ok "pack after undoing: $1"
	same "$T/ds/a.dlfs" "$T/ds/c$N.dlfs" "after undoing: $1"
	rm -rf "$T/ds/c$N.dlfs"
}
mtime_ns() { "$PYTHON" -c 'import os,sys; print(os.lstat(sys.argv[1]).st_mtime_ns)' "$1"; }
set_mtime_ns() { "$PYTHON" -c 'import os,sys; t=int(sys.argv[2]); os.utime(sys.argv[1], ns=(t,t), follow_symlinks=False)' "$1" "$2"; }

F="$T/src/sizes/200k"
MT=$(mtime_ns "$F")
set_mtime_ns "$F" $((MT + 1))
changed "mtime of sizes/200k + 1 ns"
set_mtime_ns "$F" "$MT"
unchanged "mtime of sizes/200k"

cp -p "$F" "$T/saved"
"$PYTHON" - "$F" <<'EOF2'
import sys
with open(sys.argv[1], "r+b") as f:
    f.seek(150000); b = f.read(1); f.seek(150000); f.write(bytes([b[0] ^ 1]))
EOF2
set_mtime_ns "$F" "$MT"
changed "one byte of sizes/200k (same size, same mtime)"
cp -p "$T/saved" "$F"
unchanged "content of sizes/200k"

chmod 0600 "$F"
changed "mode of sizes/200k"
chmod 0644 "$F"
unchanged "mode of sizes/200k"

# A symlink target (same length), keeping every mtime.
L="$T/src/links/rel"
LMT=$(mtime_ns "$L") DMT=$(mtime_ns "$T/src/links") OLD=$(readlink "$L")
relink() {
	rm "$L"
	ln -s "$1" "$L"
	set_mtime_ns "$L" "$LMT"
	set_mtime_ns "$T/src/links" "$DMT"
}
relink "../names/with space.txX"
changed "target of links/rel"
relink "$OLD"
unchanged "target of links/rel"

# Renaming one file (same content, mode, mtime).
LMT2=$(mtime_ns "$T/src/small")
mv "$T/src/small/f010" "$T/src/small/f010x"
set_mtime_ns "$T/src/small" "$LMT2"
changed "name of small/f010"
mv "$T/src/small/f010x" "$T/src/small/f010"
set_mtime_ns "$T/src/small" "$LMT2"
unchanged "name of small/f010"

# Layout options are part of the id.
changed "--align 4096" --align 4096
changed "--chunk-size 128K" --chunk-size 128K
changed "--container-size 2M" --container-size 2M
changed "--order size" --order size
changed "--order shuffle:1" --order shuffle:1
exit 0
