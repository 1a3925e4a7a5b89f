#!/bin/bash
# compress: dlfs-pack --compress zstd[:LEVEL] (issue 28 item 1), through
# dlfs-inspect:
#  - a compressible tree (gentree's odd tree, text, npy-like uint16
#    arrays) and an incompressible one (random bytes) verify and extract
#    byte for byte; info shows the codec and the ratio; the random
#    chunks are all stored raw, the text ones compressed;
#  - the compressed pack's dataset id differs from the uncompressed one;
#  - chunks are compressed by several threads (--threads, one per CPU at
#    most), yet packs with --threads 1, 2 and 8 of a tree of compressed
#    and raw chunks over many containers are byte-identical, index and
#    every container, and verify;
#  - a flipped byte in a stored zstd chunk fails cat (EIO) for exactly
#    the files of that chunk, and verify names it;
#  - a chunk record with a wrong sum (the logical bytes' checksum) fails
#    verify after decompression, naming the chunk;
#  - without --compress (and without --split-hdf5) a tree is packed
#    uncompressed, as with --compress none;
#  - a bad --compress value is one clear error, exit 2.
# The daemon serving one: tests/mount/compress.sh.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"

CS=65536
note "a compressible tree"
gentree odd "$T/src" --seed 11
"$PYTHON" - "$T/src/z" <<'PY'
import os, struct, sys
d = sys.argv[1]
os.makedirs(d + "/text")
os.makedirs(d + "/npy")
for i in range(40):
    with open(f"{d}/text/t{i:02d}.txt", "w") as f:
        f.write("".join(f"line {j} of sample {i}: the quick brown fox\n"
                        for j in range(200 + 37 * i)))
for i in range(12):
    n = 9000 + 1000 * i
    hdr = b"{'descr': '<u2', 'fortran_order': False, 'shape': (%d,), }" % n
    hdr += b" " * (63 - len(hdr) % 64) + b"\n"
    with open(f"{d}/npy/a{i:02d}.npy", "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr)
        f.write(b"".join(struct.pack("<H", (j * 7 + i) % 500)
                         for j in range(n)))
PY
pack "$T/src" -o "$T/c.dlfs" --chunk-size 64K --compress zstd -q
expect_ok "pack --compress zstd"
pack "$T/src" -o "$T/u.dlfs" --chunk-size 64K -q
expect_ok "pack without --compress"
inspect info "$T/c.dlfs"
expect_ok "info"
for kv in "format_version: 1.1" "features: path_bound compressed" "compress: zstd:3"; do
	grep -qxF "$kv" "$T/out" || { _show; fail "info: no line '$kv'"; }
done
cp "$T/out" "$T/cinfo"
ratio=$(awk '$1 == "ratio:" {print $2}' "$T/cinfo")
awk -v r="$ratio" 'BEGIN {exit !(r > 2.0)}' || { cat "$T/cinfo" >&2; fail "ratio $ratio: the text and arrays should compress more than 2x"; }
data=$(awk '$1 == "data_bytes:" {print $2}' "$T/cinfo")
stored=$(awk '$1 == "stored_bytes:" {print $2}' "$T/cinfo")
[ "$stored" -lt "$data" ] || fail "stored bytes $stored not below data bytes $data"
csize=$(cat "$T/c.dlfs"/*.dlc | wc -c)
usize=$(cat "$T/u.dlfs"/*.dlc | wc -c)
[ "$csize" -lt "$usize" ] || fail "compressed containers ($csize) not smaller than uncompressed ($usize)"
inspect info "$T/u.dlfs"
grep -qxF "features: path_bound" "$T/out" || { _show; fail "an uncompressed pack has other features"; }
grep -q "^compress:" "$T/out" && fail "an uncompressed pack shows a codec"
cid=$(awk '$1 == "dataset_id:" {print $2}' "$T/cinfo")
uid=$(awk '$1 == "dataset_id:" {print $2}' "$T/out")
[ "$cid" != "$uid" ] || fail "compressed and uncompressed packs share the id $cid"
inspect info --json "$T/c.dlfs"
expect_ok "info --json"
[ "$(json_get "$T/out" compress)" = zstd:3 ] || fail "info --json: compress is not zstd:3"
inspect verify "$T/c.dlfs"
expect_ok "verify of the compressed dataset"
out_has "OK" "verify"
inspect extract "$T/c.dlfs" "$T/x"
expect_ok "extract of the compressed dataset"
compare_trees "$T/src" "$T/x"
pack "$T/src" -o "$T/c9.dlfs" --chunk-size 64K --compress zstd:9 -q
expect_ok "pack --compress zstd:9"
inspect info "$T/c9.dlfs"
out_has "compress: zstd:9" "info of a level-9 pack"

note "an incompressible tree: stored raw"
"$PYTHON" - "$T/rnd" <<'PY'
import os, random, sys
os.makedirs(sys.argv[1])
r = random.Random(5)
for i in range(6):
    with open(f"{sys.argv[1]}/r{i}.bin", "wb") as f:
        f.write(r.randbytes(30000 + 41000 * i))
PY
pack "$T/rnd" -o "$T/r.dlfs" --chunk-size 64K --compress zstd -q
expect_ok "pack of random bytes"
inspect info "$T/r.dlfs"
chunks=$(awk '$1 == "chunks:" {print $2}' "$T/out")
raw=$(awk '$1 == "raw_chunks:" {print $2}' "$T/out")
[ "$chunks" -gt 3 ] && [ "$raw" = "$chunks" ] || { _show; fail "random data: $raw of $chunks chunks raw, want all"; }
out_has "ratio: 1.00" "info of random data"
inspect verify "$T/r.dlfs"
expect_ok "verify of random data"
inspect extract "$T/r.dlfs" "$T/rx"
expect_ok "extract of random data"
compare_trees "$T/rnd" "$T/rx"

note "compressed by 1, 2 and 8 threads: byte-identical"
# Text, arrays and random files, in 64K chunks over containers of 512K:
# compressed and raw chunks side by side, more chunks than the window of
# --threads 1 (4), stored offsets carried across many containers.
mkdir "$T/mix"
cp -a "$T/src/z" "$T/rnd" "$T/mix/"
"$PYTHON" - "$T/mix/more" <<'PY'
import os, random, sys
d = sys.argv[1]
os.makedirs(d)
r = random.Random(8)
for i in range(60):
    with open(f"{d}/m{i:02d}.txt", "w") as f:
        # a few random words per line: compressible, not trivially
        f.write("".join(" ".join(r.choice(["alpha", "beta", "gamma",
                "delta", "%d" % r.randrange(10 ** 6)]) for _ in range(8)) + "\n"
                for _ in range(r.randrange(200, 4000))))
    if i % 5 == 0:
        with open(f"{d}/r{i:02d}.bin", "wb") as f:
            f.write(r.randbytes(r.randrange(1000, 200000)))
PY
MIXOPTS=(--chunk-size 64K --container-size 512K --compress zstd -q)
for t in 1 2 8; do
	pack "$T/mix" -o "$T/t$t.dlfs" "${MIXOPTS[@]}" --threads $t
	expect_ok "pack --compress zstd --threads $t"
done
inspect info "$T/t1.dlfs"
nc=$(awk '$1 == "containers:" {print $2}' "$T/out")
chunks=$(awk '$1 == "chunks:" {print $2}' "$T/out")
raw=$(awk '$1 == "raw_chunks:" {print $2}' "$T/out")
[ "$nc" -ge 4 ] && [ "$raw" -gt 0 ] && [ "$raw" -lt "$chunks" ] && [ "$chunks" -ge 40 ] ||
	{ _show; fail "want >= 4 containers, >= 40 chunks, some raw and some zstd: $nc, $chunks, $raw raw"; }
for t in 2 8; do
	[ "$(ls -A "$T/t1.dlfs")" = "$(ls -A "$T/t$t.dlfs")" ] || fail "--threads $t: other files than --threads 1"
	for f in $(ls -A "$T/t1.dlfs"); do
		cmp "$T/t1.dlfs/$f" "$T/t$t.dlfs/$f" >&2 || fail "--threads 1 vs $t: $f differs"
	done
done
inspect verify "$T/t8.dlfs"
expect_ok "verify of the --threads 8 pack"
inspect extract "$T/t8.dlfs" "$T/tx"
expect_ok "extract of the --threads 8 pack"
compare_trees "$T/mix" "$T/tx"

note "a flipped byte in a stored zstd chunk"
# Only the text and arrays: chunk 0 of container 0 is a zstd frame, stored
# first, at the data offset (one chunk size).
pack "$T/src/z" -o "$T/z.dlfs" --chunk-size 64K --compress zstd -q
expect_ok "pack of text and arrays"
inspect info "$T/z.dlfs"
[ "$(awk '$1 == "raw_chunks:" {print $2}' "$T/out")" = 0 ] || { _show; fail "text chunks stored raw"; }
"$PYTHON" - "$T/z.dlfs/000000.dlc" "$CS" <<'PY'
import sys
with open(sys.argv[1], "r+b") as f:
    f.seek(int(sys.argv[2]) + 7)
    b = f.read(1)
    f.seek(int(sys.argv[2]) + 7)
    f.write(bytes([b[0] ^ 0x40]))
PY
bad=0 good=0
while IFS= read -r -d '' p; do
	rel=${p#"$T/src/z/"}
	inspect stat --json "$T/z.dlfs" "$rel"
	expect_ok "stat $rel"
	off=$(json_get "$T/out" offset) size=$(json_get "$T/out" size) c=$(json_get "$T/out" container)
	inspect cat "$T/z.dlfs" "$rel"
	if [ "$c" = 0 ] && [ "$size" -gt 0 ] && [ "$off" -lt $((2 * CS)) ]; then
		# Its bytes begin in chunk 0 (the data starts at CS).
		expect_fail "cat $rel, in the damaged chunk"
		err_has "checksum mismatch" "cat $rel"
		err_has "chunk 0 at offset $CS" "cat $rel"
		bad=$((bad + 1))
	else
		expect_ok "cat $rel, outside the damaged chunk"
		cmp -s "$T/out" "$p" || fail "cat $rel: wrong bytes"
		good=$((good + 1))
	fi
done < <(find "$T/src/z" -type f -print0 | sort -z)
[ "$bad" -gt 0 ] && [ "$good" -gt 0 ] || fail "flip: $bad files failed, $good read: want both"
inspect verify "$T/z.dlfs"
expect_rc 1 "verify of the damaged dataset"
grep -qF "chunk 0 at offset $CS: checksum mismatch" "$T/out" "$T/err" ||
	{ _show; fail "verify does not name the damaged chunk"; }

note "a chunk record whose sum is wrong: caught after decompression"
# Stands for a decoder that returns wrong bytes: the stored bytes pass
# their xxh3, the decompressed ones fail the record's sum (bytes 32..39).
rm -rf "$T/s.dlfs"
pack "$T/src/z" -o "$T/s.dlfs" --chunk-size 64K --compress zstd -q
expect_ok "pack for the sum test"
rm -f "$T/s.dlfs/index.sum"
v=$("$IXEDIT" "$T/s.dlfs/index" get chunks 0000000000000000) || fail "ixedit get chunk 0"
[ ${#v} = 80 ] || fail "chunk record of ${#v} hex digits, expected 80 (40 bytes)"
"$IXEDIT" "$T/s.dlfs/index" put chunks 0000000000000000 "${v:0:64}0123456789abcdef" ||
	fail "ixedit put chunk 0"
inspect verify "$T/s.dlfs"
expect_rc 1 "verify with a wrong sum"
grep -qF "chunk 0 at offset $CS: checksum mismatch after decompression" "$T/out" "$T/err" ||
	{ _show; fail "verify does not name the chunk whose sum is wrong"; }

note "the default and --compress none: uncompressed"
for how in default none; do
	rm -rf "$T/u.dlfs"
	if [ $how = default ]; then
		pack "$T/src/z" -o "$T/u.dlfs" --chunk-size 64K -q
	else
		pack "$T/src/z" -o "$T/u.dlfs" --chunk-size 64K -q --compress none
	fi
	expect_ok "pack ($how)"
	inspect info "$T/u.dlfs"
	expect_ok "info ($how)"
	! grep -q "compressed\|^compress:" "$T/out" || { _show; fail "$how: a tree is packed uncompressed"; }
done

note "bad --compress values"
for v in lz4 zstd: zstd:0 zstd:23 zstd:3x ZSTD None none:3; do
	pack "$T/src/z" -o "$T/bad.dlfs" --compress "$v"
	expect_rc 2 "--compress $v"
	err_has "--compress '$v': expected zstd, zstd:LEVEL (LEVEL from 1 to 22) or none" "--compress $v"
	[ "$(wc -l <"$T/err")" = 1 ] || { _show; fail "--compress $v: not one line"; }
	assert_absent "$T/bad.dlfs" "--compress $v"
done

note "ok"
