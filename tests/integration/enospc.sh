#!/bin/bash
# enospc: packing onto a full file system (a 2 MiB tmpfs as OUT's parent)
# fails with exit 1 and "No space left on device", is not killed by a signal
# (e.g. SIGBUS from a mapped write), and leaves nothing behind: no OUT and
# no temp dir. Covers running out while writing containers (8 MiB of data)
# and while writing the index (60,000 tiny files). Needs root (mount).
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"

[ "$(id -u)" = 0 ] || skip "needs root to mount a tmpfs"
mkdir "$T/mnt"
mount -t tmpfs -o size=2m,mode=0755 dlfs-test-enospc "$T/mnt" 2>"$T/mount.err" ||
	skip "cannot mount a tmpfs: $(cat "$T/mount.err")"
add_mount "$T/mnt"

gentree big "$T/bigsrc" --size 8M --count 1 --seed 3
gentree many "$T/manysrc" --count 60000 --per-dir 1000 --max-size 32 --seed 4

full() { # LABEL SRC [options]
	local label=$1 src=$2
	shift 2
	for order in sorted input; do
		pack "$src" -o "$T/mnt/full.dlfs" --order $order "$@"
		expect_fail "$label (--order $order)"
		err_has_re "no space left on device" "$label (--order $order)"
		grep -q '^dlfs-pack: ' "$T/err" || { _show; fail "$label: message should start with 'dlfs-pack: '"; }
		assert_empty_dir "$T/mnt" "$label (--order $order): the full file system after the failed pack"
		[ "$(df --output=used -k "$T/mnt" | tail -n 1 | tr -d ' ')" -le 64 ] ||
			fail "$label: space on the tmpfs was not given back: $(df -k "$T/mnt" | tail -n 1)"
	done
}

full "8 MiB file onto a 2 MiB file system" "$T/bigsrc"
full "60,000 tiny files (index does not fit)" "$T/manysrc" --chunk-size 4K
tar -C "$T/bigsrc" -cf "$T/big.tar" .
full "8 MiB tar member (spool does not fit)" "$T/big.tar"

# Control: the same mount takes a small dataset, so the failures above come
# from the size and not from the tmpfs.
mkdir "$T/small"
head -c 100000 /dev/urandom >"$T/small/f"
pack "$T/small" -o "$T/mnt/ok.dlfs" -q
expect_ok "small pack onto the tmpfs"
inspect verify "$T/mnt/ok.dlfs"
expect_ok "verify small pack on the tmpfs"
rm -rf "$T/mnt/ok.dlfs"
exit 0
