#!/bin/bash
# padding: dlfs-pack's summary says when much of the containers is zeros
# that a file not straddling a chunk left behind (dlfs-pack(1), LAYOUT).
#  - 24 files of 64 KiB + 128 bytes in 256K chunks fit 3 to a chunk: the
#    note names the padding and its share of the file bytes (29%, by the
#    documented rule), and the options that leave less;
#  - the same files in 1M chunks (15 to a chunk, padding under a chunk),
#    files that fill chunks well, --compress zstd, and -q: no note.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"

mkfiles() { # DIR N SIZE: N files of SIZE random bytes
	"$PYTHON" - "$@" <<'PY'
import os, random, sys
d, n, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
os.makedirs(d)
r = random.Random(7)
for i in range(n):
    with open(os.path.join(d, "f%03d.bin" % i), "wb") as f:
        f.write(r.randbytes(size))
PY
}
# The padding, by the rule dlfs-pack(1) documents (a file no larger than
# a chunk that would cross a boundary starts at it): 3 files of 64 KiB +
# 128 B a 256 KiB chunk, 8 chunks, the last ending at its third file.
FILE=$((65536 + 128))
DATA=$((7 * 262144 + 3 * FILE))
FILES=$((24 * FILE))
SHARE=$(( (100 * (DATA - FILES) + FILES / 2) / FILES )) # 29

mkfiles "$T/odd" 24 "$FILE"
pack "$T/odd" -o "$T/a.dlfs" --chunk-size 256K
expect_ok "pack of files just over a quarter chunk"
err_has "note:" "a dataset a third padding"
err_has "is padding" "a dataset a third padding"
err_has "--chunk-size" "the note names what leaves less"
err_has "--compress zstd" "the note names what leaves less"
err_has "($SHARE% of the file bytes)" "the note's share is what the containers hold beyond the files"
[ "$(grep -c 'note:' "$T/err")" = 1 ] || fail "the note was printed $(grep -c 'note:' "$T/err") times"

pack "$T/odd" -o "$T/b.dlfs" --chunk-size 1M
expect_ok "pack in 1M chunks"
! grep -q "note:" "$T/err" || fail "1M chunks (padding under a chunk): unexpected note: $(cat "$T/err")"

pack "$T/odd" -o "$T/c.dlfs" --chunk-size 256K --compress zstd
expect_ok "pack --compress zstd"
! grep -q "note:" "$T/err" || fail "--compress zstd: unexpected note: $(cat "$T/err")"

pack "$T/odd" -o "$T/d.dlfs" --chunk-size 256K -q
expect_ok "pack -q"
[ ! -s "$T/err" ] || fail "-q: expected nothing on stderr, got: $(cat "$T/err")"

mkfiles "$T/even" 24 65536
pack "$T/even" -o "$T/e.dlfs" --chunk-size 256K
expect_ok "pack of files that fill chunks"
! grep -q "note:" "$T/err" || fail "files that fill their chunks: unexpected note: $(cat "$T/err")"
exit 0
