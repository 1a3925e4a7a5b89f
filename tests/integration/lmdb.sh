#!/bin/bash
# lmdb: LMDB environments (made with mdb_load from lmdb-utils, from dumps
# written here) packed with --split-lmdb, as a directory with data.mdb and
# as a single file (MDB_NOSUBDIR): every key becomes ENV/NAME holding its
# value byte for byte (empty values and values over a page included); NAME
# is the key when it is a good file name, '%' + hex otherwise (binary
# keys, '/', a leading '.' or '%', invalid UTF-8, more than 255 bytes),
# '%%' + 32 hex digits past 127 bytes; ENV/.keys lists NAME and the key in
# hex in key order. The environment is read without its lock file (none is
# created) and left unchanged; --dry-run lists the same files and sizes;
# packing twice gives the same bytes. Refused, with a message naming the
# environment and nothing left: duplicate keys, named databases, a
# data.mdb or .mdb file that is not LMDB, an LMDB file without
# --split-lmdb.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"
command -v mdb_load >/dev/null || skip "mdb_load not found (package lmdb-utils)"

O="$T/o"
mkdir "$O" "$T/env" "$T/ds"
"$PYTHON" - "$T" <<'PY' || fail "could not write the dumps"
import json, os, random, struct, sys
t = sys.argv[1]
r = random.Random(7)
keys = [b"img_%05d.jpg" % i for i in range(200)]
keys += [struct.pack(">Q", i * 7919) for i in range(40)]           # binary
keys += [b"train/n01440764/x.JPEG", b".hidden", b"%41", b"tab\there",
         "ünïcödé".encode(), b"\xc3(", b"k" * 255, b"l" * 256, b"m" * 127 + b"/",
         b"n" * 300 + b"/", b"e" * 3]
vals = {}
for k in keys:
    n = r.choice([0, 1, 100, 3000, 5000, 20000])
    vals[k] = r.randbytes(n)
def dump(path, items, extra=""):
    with open(path, "w") as f:
        f.write("VERSION=3\nformat=bytevalue\ntype=btree\nmapsize=67108864\n%sHEADER=END\n" % extra)
        for k, v in items:
            f.write(" %s\n %s\n" % (k.hex(), v.hex()))
        f.write("DATA=END\n")
dump(os.path.join(t, "main.dump"), sorted(vals.items()))
dump(os.path.join(t, "dup.dump"), [(b"a", b"1"), (b"a", b"2"), (b"b", b"3")], "dupsort=1\n")
json.dump({k.hex(): v.hex() for k, v in vals.items()}, open(os.path.join(t, "want.json"), "w"))
PY
mdb_load -f "$T/main.dump" "$T/env" || fail "mdb_load (directory)"
mdb_load -n -f "$T/main.dump" "$T/shard.mdb" || fail "mdb_load (file)"
rm -f "$T/env/lock.mdb" "$T/shard.mdb-lock"
touch -d '2020-01-02 03:04:05' "$T/env/data.mdb" "$T/shard.mdb"
sum0=$(md5sum "$T/env/data.mdb" "$T/shard.mdb")

pack --split-lmdb "$T/env" "$T/shard.mdb" -o "$T/ds/a.dlfs" -q --chunk-size 64K
expect_ok "pack --split-lmdb"
assert_absent "$T/env/lock.mdb" "a lock file (the environment is read MDB_NOLOCK)"
assert_absent "$T/shard.mdb-lock" "a lock file beside the single-file environment"
[ "$(md5sum "$T/env/data.mdb" "$T/shard.mdb")" = "$sum0" ] || fail "packing changed an environment"
[ "$(stat -c %Y "$T/env/data.mdb")" = "$(date -d '2020-01-02 03:04:05' +%s)" ] || fail "data.mdb's mtime changed"
inspect verify "$T/ds/a.dlfs"
expect_ok "verify"
inspect extract "$T/ds/a.dlfs" "$T/x"
expect_ok "extract"
"$PYTHON" - "$T/x" "$T/want.json" <<'PY' || fail "the packed keys and values are not the environment's"
import json, os, sys
x, want = sys.argv[1], {bytes.fromhex(k): bytes.fromhex(v) for k, v in json.load(open(sys.argv[2])).items()}
def good(k):
    try:
        k.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return (1 <= len(k) <= 255 and k[:1] not in (b".", b"%") and b"/" not in k
            and not any(c < 0x20 or c == 0x7f for c in k))
errs = []
for top in ("env", "shard"):
    lines = open(os.path.join(x, top, ".keys"), "rb").read().decode("utf-8").splitlines()
    pairs = [l.split("\t") for l in lines]
    keys = [bytes.fromhex(h) for _, h in pairs]
    if keys != sorted(want):
        errs.append("%s/.keys: not every key once, in key order" % top)
    names = set()
    for (name, h), k in zip(pairs, keys):
        if good(k):
            exp = k.decode()
        elif len(k) <= 127:
            exp = "%" + k.hex()
        else:
            exp = None
            if not (name.startswith("%%") and len(name) == 34):
                errs.append("%s: key of %d bytes named %r" % (top, len(k), name))
        if exp is not None and name != exp:
            errs.append("%s: key %r named %r, expected %r" % (top, k, name, exp))
        names.add(name)
        v = open(os.path.join(x, top, name), "rb").read()
        if v != want[k]:
            errs.append("%s/%s: %d bytes, expected %d" % (top, name, len(v), len(want[k])))
    files = set(os.listdir(os.path.join(x, top))) - {".keys"}
    if files != names:
        errs.append("%s: files %d, names in .keys %d" % (top, len(files), len(names)))
for e in errs[:20]:
    print("  " + e, file=sys.stderr)
print("lmdb: %d keys checked twice, %d differences" % (len(want), len(errs)), file=sys.stderr)
sys.exit(1 if errs else 0)
PY
inspect cat "$T/ds/a.dlfs" "env/%2e68696464656e"
expect_ok "cat of an escaped name"
cmp "$T/out" "$T/x/shard/%2e68696464656e" || fail "cat env/%2e68696464656e differs"
inspect stat --json "$T/ds/a.dlfs" env/img_00007.jpg
expect_ok "stat"
[ "$(json_get "$T/out" mtime)" = "$(date -d '2020-01-02 03:04:05' +%s).000000000" ] || fail "values take data.mdb's mtime"

pack --dry-run --split-lmdb "$T/env" "$T/shard.mdb"
expect_ok "dry run"
grep -v '^#' "$T/out" | awk '{print $2, $1}' | sort >"$T/plan"
(cd "$T/x" && find . -type f -printf '%P %s\n' | sort) >"$T/real"
diff "$T/plan" "$T/real" >&2 || fail "--dry-run does not list what the pack wrote"

pack --split-lmdb "$T/shard.mdb" "$T/env" -o "$T/ds/b.dlfs" -q --chunk-size 64K --threads 1
expect_ok "pack again"
for f in $(ls "$T/ds/a.dlfs"); do cmp "$T/ds/a.dlfs/$f" "$T/ds/b.dlfs/$f" || fail "a second pack differs: $f"; done

note "refused"
must_fail() {
	local label=$1 msg=$2
	shift 2
	pack "$@"
	expect_rc 1 "$label"
	err_has "$msg" "$label"
	assert_empty_dir "$O" "$label: output parent"
}
mkdir "$T/dup"
mdb_load -f "$T/dup.dump" "$T/dup" || fail "mdb_load (duplicates)"
must_fail "duplicate keys" "dup: has duplicate keys" --split-lmdb "$T/dup" -o "$O/x.dlfs"
mkdir "$T/named"
mdb_load -s things -f "$T/main.dump" "$T/named" || fail "mdb_load -s"
must_fail "named databases" "named: holds named databases ('things')" --split-lmdb "$T/named" -o "$O/x.dlfs"
mkdir "$T/bad"
head -c 20000 /dev/urandom >"$T/bad/data.mdb"
must_fail "not LMDB (directory)" "bad: not an LMDB environment" --split-lmdb "$T/bad" -o "$O/x.dlfs"
cp "$T/bad/data.mdb" "$T/bad.mdb"
must_fail "not LMDB (file)" "bad.mdb: not an LMDB environment" --split-lmdb "$T/bad.mdb" -o "$O/x.dlfs"
# A truncated data file: LMDB would fault (SIGBUS) on the first page past
# the end; dlfs-pack must say so instead, in-process and in its workers.
mkdir "$T/cut"
cp "$T/env/data.mdb" "$T/cut/data.mdb"
truncate -s 12K "$T/cut/data.mdb"
must_fail "truncated (in-process)" "cut: the data file is 12288 bytes, shorter than" --split-lmdb "$T/cut" -o "$O/x.dlfs" --procs 1
must_fail "truncated (workers)" "cut: the data file is 12288 bytes, shorter than" --split-lmdb "$T/cut" "$T/env" -o "$O/x.dlfs" --procs 2
must_fail "an LMDB file without --split-lmdb" "shard.mdb: an LMDB file; give --split-lmdb" "$T/shard.mdb" -o "$O/x.dlfs"
# Without --split-lmdb a directory is a directory, data.mdb and all.
pack "$T/env" -o "$T/ds/plain.dlfs" -q
expect_ok "the environment packed as a plain directory"
inspect cat "$T/ds/plain.dlfs" data.mdb
cmp "$T/out" "$T/env/data.mdb" || fail "data.mdb packed as a plain file differs"
exit 0
