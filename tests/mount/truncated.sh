#!/bin/bash
# truncated: a dataset whose copy to another file system was interrupted
# (issue 38 item 4): one container cut in the middle of the stored bytes
# of one of its chunks, in a plain pack and in a --compress zstd pack of
# the same tree (300 files, 64K chunks, 512K containers).
#  - Which files must fail comes from the index, not from the code under
#    test: each file's container, offset and size (dlfs-inspect stat
#    --json), the chunks under those bytes, and where each chunk's bytes
#    are stored (its record, read with ixedit in the layout of
#    dlfs-format(5): in place, or stored_offset and stored_length in a
#    compressed dataset). A file fails when one of its chunks ends past
#    the cut; every other file must be served.
#  - A FUSE mount (read_unit=auto, then read_unit=file) and dlfs-run
#    (dlfs --serve) read every file with cat and cmp against the source:
#    exactly those files give EIO (again on a second read), every other
#    one is byte-identical. The daemon names the cut container once at
#    start, logs one line for each failed file naming the file, the
#    container and both sizes, logs nothing else that looks wrong, and
#    exits 0 at unmount.
#  - dlfs-inspect verify exits 1, names exactly those files, and the
#    container as truncated with both sizes.
# The counts (served / EIO / total) are printed for each pack.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"
mount_setup
: "${DLFS_RUN:=$SRC_ROOT/build/tools/dlfs-run}"
: "${IXEDIT:=$SRC_ROOT/build/tests/ixedit}"
[ -x "$DLFS_RUN" ] || fail "dlfs-run not found: $DLFS_RUN (set DLFS_RUN)"
[ -x "$IXEDIT" ] || fail "ixedit not found: $IXEDIT (set IXEDIT)"

SRC="$T/src"
mkdir -p "$SRC"
# Words from a small vocabulary compress (zstd chunks); sizes from empty
# to several chunks.
"$PYTHON" - "$SRC" <<'PY' || fail "cannot generate the source tree"
import os, random, sys
d, r = sys.argv[1], random.Random(38)
words = [b"%s%d" % (w, n) for w in (b"cat", b"dog", b"fish", b"owl") for n in range(40)]
for i in range(300):
    sub = os.path.join(d, "d%d" % (i // 100))
    os.makedirs(sub, exist_ok=True)
    n = 0 if i % 41 == 3 else 150 * 1024 + i if i % 29 == 11 else r.randrange(1, 20000)
    body = b" ".join(r.choice(words) for _ in range(n // 4 + 1))[:n]
    open(os.path.join(sub, "f%03d" % i), "wb").write(body)
PY

# fates DS OUT: choose the cut (the middle of the stored bytes of the
# middle chunk of the middle container) and write OUT as JSON:
# {"cno", "cname", "cut", "size", "bad": [rel...], "good": [rel...]}.
fates() {
	file_map "$SRC" "$1" "$T/map.json"
	inspect info --json "$1"
	expect_ok "info --json $1"
	cp "$T/out" "$T/info.json"
	"$PYTHON" - "$1" "$T/map.json" "$T/info.json" "$IXEDIT" >"$2" <<'PY' || fail "cannot work out which files the cut takes"
import json, struct, subprocess, sys
ds, m, info, ixedit = sys.argv[1], json.load(open(sys.argv[2])), json.load(open(sys.argv[3])), sys.argv[4]
cs = info["chunk_size"]
def get(db, key):
    return bytes.fromhex(subprocess.run([ixedit, ds + "/index", "get", db, key], check=True,
                                        stdout=subprocess.PIPE, text=True).stdout.strip())
def cont(c):  # file_size, data_size, n_chunks
    return struct.unpack_from("<QQQ", get("containers", "%08x" % c))
def stored(c, k):  # (start, end) of chunk k's stored bytes
    rec = get("chunks", "%08x%08x" % (c, k))
    length = struct.unpack_from("<I", rec, 8)[0]
    if len(rec) == 16:  # in place
        return cs + k * cs, cs + k * cs + length, 0
    slen, soff, flags = struct.unpack_from("<IQI", rec, 12)
    return soff, soff + slen, flags
conts = [cont(c) for c in range(info["containers"])]
# The middle container, or the one nearest it with chunks enough.
c = max(range(len(conts)), key=lambda i: (conts[i][2] >= 4, -abs(i - len(conts) // 2)))
size, _, nk = conts[c]
assert nk >= 4, "container %d has only %d chunks" % (c, nk)
kc = nk // 2
lo, hi, flags = stored(c, kc)
if info.get("compress"):
    assert flags & 1, "chunk %d of container %d is not a zstd frame" % (kc, c)
cut = lo + (hi - lo) // 2 + 777  # not on a page boundary
assert cut < hi
ends = [stored(c, k)[1] for k in range(nk)]
bad, good = [], []
for rel, f in sorted(m.items()):
    fails = False
    if f["container"] == c and f["size"]:
        k0 = (f["offset"] - cs) // cs
        k1 = (f["offset"] + f["size"] - 1 - cs) // cs
        fails = any(ends[k] > cut for k in range(k0, k1 + 1))
    (bad if fails else good).append(rel)
print(json.dumps({"cno": c, "cname": "%06d.dlc" % c, "cut": cut, "size": size,
                  "bad": bad, "good": good}))
PY
}
jf() { "$PYTHON" -c 'import json, sys; v = json.load(open(sys.argv[1]))[sys.argv[2]]; print("\n".join(v) if isinstance(v, list) else v)' "$@"; }

# The reader every front end runs: each file with cat, compared with cmp;
# a file that fails is read again. One verdict a line: ok, eio (twice),
# or what else happened.
cat >"$T/readall.sh" <<'SH'
root=$1 src=$2 list=$3 tmp=$4
while IFS= read -r rel; do
	if cat "$root/$rel" >"$tmp.data" 2>"$tmp.err"; then
		if cmp -s "$tmp.data" "$src/$rel"; then echo "ok $rel"; else echo "wrong-bytes $rel"; fi
	elif grep -q "Input/output error" "$tmp.err"; then
		if cat "$root/$rel" >/dev/null 2>"$tmp.err"; then echo "eio-then-ok $rel"
		elif grep -q "Input/output error" "$tmp.err"; then echo "eio $rel"
		else echo "eio-then-other $rel"; fi
	else
		echo "other-error $rel: $(tr '\n' ' ' <"$tmp.err")"
	fi
done <"$list"
SH

# judge WHAT VERDICTS FATES: exactly the bad files gave EIO, all others
# their bytes; prints the counts.
judge() {
	"$PYTHON" - "$1" "$2" "$3" <<'PY' || soft_fail "$1: reads not as the index says (see above)"
import json, sys
what, f = sys.argv[1], json.load(open(sys.argv[3]))
got = {}
for line in open(sys.argv[2]):
    v, rel = line.rstrip("\n").split(" ", 1)
    got[rel.split(": ", 1)[0] if v == "other-error" else rel] = line.strip()
bad, good = set(f["bad"]), set(f["good"])
wrong = [got.get(r, "nothing for " + r) for r in sorted(bad) if not got.get(r, "").startswith("eio ")]
wrong += [got.get(r, "nothing for " + r) for r in sorted(good) if not got.get(r, "").startswith("ok ")]
n_ok = sum(v.startswith("ok ") for v in got.values())
n_eio = sum(v.startswith("eio ") for v in got.values())
print("%s: %d files served, %d EIO, of %d (cut %s at %d of %d bytes)" %
      (what, n_ok, n_eio, len(got), f["cname"], f["cut"], f["size"]), file=sys.stderr)
for w in wrong[:20]:
    print("  unexpected: " + w, file=sys.stderr)
sys.exit(1 if wrong or len(got) != len(bad | good) else 0)
PY
}

# log_names WHAT LOG FATES: one line naming the container as truncated at
# start; for each bad file a line naming it, the container and both
# sizes; nothing else that looks like trouble.
log_names() {
	local what=$1 log=$2 fates=$3 cname cut size
	cname=$(jf "$fates" cname)
	cut=$(jf "$fates" cut)
	size=$(jf "$fates" size)
	grep -E "warning: .*$cname: container is truncated: $cut bytes, the index says $size" "$log" >/dev/null ||
		soft_fail "$what: no warning naming $cname as truncated at start: $(head -c 600 "$log")"
	"$PYTHON" - "$log" "$fates" <<'PY' || soft_fail "$what: the log does not name every failed file with its container and sizes"
import json, sys
lines, f = open(sys.argv[1], errors="replace").read().splitlines(), json.load(open(sys.argv[2]))
need = [f["cname"], "truncated", "%d bytes" % f["cut"], "says %d" % f["size"]]
missing = [r for r in f["bad"]
           if not any("'%s'" % r in l and all(n in l for n in need) for l in lines)]
for r in missing[:10]:
    print("  no log line for " + r, file=sys.stderr)
sys.exit(1 if missing else 0)
PY
	# Only what the cut explains: its warning and the failed reads.
	if grep -vE "container is truncated: $cut bytes, the index says $size" "$log" |
		grep -iE -- "$DLFS_LOG_BAD_RE" >"$T/badlog"; then
		head -n 10 "$T/badlog" >&2
		soft_fail "$what: the log has other error lines"
	fi
}

# verify_names DS FATES: dlfs-inspect verify exits 1, names exactly the
# bad files, and the container as truncated with both sizes.
verify_names() {
	inspect verify "$1"
	expect_rc 1 "verify of $1 with a container cut short"
	"$PYTHON" - "$T/err" "$T/out" "$2" <<'PY' || soft_fail "verify of $1 does not name exactly the files past the cut"
import json, sys
f = json.load(open(sys.argv[3]))
named, cont = set(), False
for line in open(sys.argv[1]):
    line = line.rstrip("\n")
    pre = "dlfs-inspect: verify: "
    if not line.startswith(pre) or ": " not in line[len(pre):]:
        continue
    path, msg = line[len(pre):].split(": ", 1)
    if path == f["cname"]:
        cont |= "truncated" in msg and "%d bytes" % f["cut"] in msg and "says %d" % f["size"] in msg
    else:
        named.add(path)
out = open(sys.argv[2]).read()
bad = set(f["bad"])
ok = named == bad and cont and ("%d damaged files" % len(bad)) in out
print("verify: %d files named (%d expected), container named: %s; %s" %
      (len(named), len(bad), cont, out.strip()), file=sys.stderr)
for r in sorted(named - bad)[:10]:
    print("  named, yet all inside the file: " + r, file=sys.stderr)
for r in sorted(bad - named)[:10]:
    print("  not named: " + r, file=sys.stderr)
sys.exit(0 if ok else 1)
PY
}

MNT="$T/mnt"
mkdir "$MNT"
find "$SRC" -type f -printf '%P\n' | sort >"$T/list"
for kind in plain zstd; do
	DS="$T/$kind.dlfs"
	opts=()
	[ "$kind" = plain ] || opts=(--compress zstd)
	pack "$SRC" -o "$DS" --chunk-size 64K --container-size 512K "${opts[@]}" -q
	expect_ok "pack ($kind)"
	fates "$DS" "$T/fates.$kind.json"
	F="$T/fates.$kind.json"
	note "$kind: cut $(jf "$F" cname) at $(jf "$F" cut) of $(jf "$F" size) bytes: $(jf "$F" bad | grep -c .) files to fail"
	[ "$(jf "$F" bad | grep -c .)" -gt 0 ] || fail "test setup: the cut takes no file"
	truncate -s "$(jf "$F" cut)" "$DS/$(jf "$F" cname)"

	for unit in auto file; do
		dlfs_mount "$DS" "$MNT" -o read_unit=$unit
		tmo bash "$T/readall.sh" "$MNT" "$SRC" "$T/list" "$T/rd" >"$T/verdicts" ||
			fail "$kind, FUSE: the reader failed"
		judge "$kind, FUSE, read_unit=$unit" "$T/verdicts" "$F"
		dlfs_umount "$MNT"
		log_names "$kind, FUSE, read_unit=$unit" "$DLFS_LOG" "$F"
	done

	st=0
	timeout -k 10 "$DLFS_CMD_TIMEOUT" "$DLFS_RUN" --private "$DS:$T/v/ds" -- \
		bash "$T/readall.sh" "$T/v/ds" "$SRC" "$T/list" "$T/rd" \
		>"$T/verdicts" 2>"$T/run.log" || st=$?
	[ "$st" = 0 ] || fail "$kind, dlfs-run: exited $st: $(tail -n 5 "$T/run.log")"
	judge "$kind, dlfs-run" "$T/verdicts" "$F"
	log_names "$kind, dlfs-run" "$T/run.log" "$F"

	verify_names "$DS" "$F"
done
finish
