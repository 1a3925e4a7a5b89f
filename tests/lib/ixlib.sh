# ixlib.sh: damage a dataset's index record by record, for the tests of
# hostile indexes (sourced after lib.sh). Records are rewritten with
# tests/util/ixedit in the layouts of dlfs-format(5). The functions work
# on $DS (the dataset being damaged) and ask $DS0 (an intact copy) where
# things are.
: "${IXEDIT:=$SRC_ROOT/build/tests/ixedit}"
[ -x "$IXEDIT" ] || fail "ixedit not found: $IXEDIT (set IXEDIT)"

# ix CMD...: ixedit on the index of $DS.
ix() { "$IXEDIT" "$DS/index" "$@" || fail "ixedit $*"; }
hexname() { printf '%s' "$1" | od -An -v -tx1 | tr -d ' \n'; }
root_key() { printf '0000000000000001%s' "$(hexname "$1")"; }
# rename OLD NEW: the root's entry OLD is named NEW (same inode).
rename() {
	local v
	v=$("$IXEDIT" "$DS/index" get dirents "$(root_key "$1")") || fail "no entry $1"
	ix del dirents "$(root_key "$1")"
	ix put dirents "$(root_key "$2")" "$v"
}
ino_of() {
	inspect stat --json "$DS0" "$1"
	expect_ok "stat $1"
	cp "$T/out" "$T/st.json"
	json_get "$T/st.json" inode
}
offset_of() {
	inspect stat --json "$DS0" "$1"
	cp "$T/out" "$T/st.json"
	json_get "$T/st.json" offset
}
# features: the superblock's feature bits (0 for format 1.0), in decimal.
features() {
	local sb
	sb=$("$IXEDIT" "$DS/index" get meta "$(hexname super)") || fail "no superblock"
	"$PYTHON" -c '
import struct, sys
b = bytes.fromhex(sys.argv[1])
minor = struct.unpack_from("<I", b, 4)[0]
print(struct.unpack_from("<Q", b, 112)[0] if minor >= 1 and len(b) >= 120 else 0)' "$sb"
}
# inodes_db: the inodes database's name (dlfs-format(5): inodes.f once
# any feature is set); inode_rec_size: 48 bytes with path_bound, else 40.
inodes_db() { [ "$(features)" = 0 ] && echo inodes || echo inodes.f; }
inode_rec_size() { [ $(( $(features) & 1 )) = 1 ] && echo 48 || echo 40; }
# inode_set INO FIELD VALUE: rewrite one field of an inode record (mode,
# size, offset: the loc's low 48 bits, container: its high 16, xxh3,
# path_hash).
inode_set() {
	local blk key val db rs
	blk=$(( ($1 - 1) / 16 ))
	key=$(printf '%016x' "$blk")
	db=$(inodes_db)
	rs=$(inode_rec_size)
	val=$("$IXEDIT" "$DS/index" get "$db" "$key") || fail "no inode block $blk"
	val=$("$PYTHON" - "$val" "$1" "$2" "$3" "$rs" <<'EOF'
import struct, sys
b = bytearray(bytes.fromhex(sys.argv[1]))
ino, field, value, rs = int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
at = ((ino - 1) % 16) * rs
mode, nsec, sec, size, loc, xx = struct.unpack_from("<IIqQQQ", b, at)
low = (1 << 48) - 1
if field == "size": size = value
elif field == "offset": loc = (loc & ~low) | value
elif field == "container": loc = (loc & low) | (value << 48)
elif field == "mode": mode = value
elif field == "xxh3": xx = value
elif field == "path_hash" and rs == 48: struct.pack_into("<Q", b, at + 40, value)
else: sys.exit("inode_set: no field " + field)
struct.pack_into("<IIqQQQ", b, at, mode, nsec, sec, size, loc, xx)
print(b.hex())
EOF
)
	ix put "$db" "$key" "$val"
}
# container_set N FIELD VALUE: rewrite one field of container N's record
# (file_size, data_size, n_chunks, n_files, first_ino, footer_xxh3).
container_set() {
	local key val
	key=$(printf '%08x' "$1")
	val=$("$IXEDIT" "$DS/index" get containers "$key") || fail "no container $1"
	val=$("$PYTHON" - "$val" "$2" "$3" <<'EOF'
import struct, sys
b = bytearray(bytes.fromhex(sys.argv[1]))
names = ["file_size", "data_size", "n_chunks", "n_files", "first_ino", "footer_xxh3"]
v = list(struct.unpack_from("<6Q", b, 0))
v[names.index(sys.argv[2])] = int(sys.argv[3])
struct.pack_into("<6Q", b, 0, *v)
print(b.hex())
EOF
)
	ix put containers "$key" "$val"
}
