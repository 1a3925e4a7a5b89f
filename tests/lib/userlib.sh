# userlib.sh: a throwaway user for tests that need one besides root
# (sourced after lib.sh). make_user sets NU, NU_UID, NU_GID; the user and
# any process of it left running are removed at exit.

# passwd_retry CMD...: useradd and userdel fail with 1 or 10 while another
# one holds /etc/passwd's lock (tests run in parallel): try again.
passwd_retry() {
	local i st
	for ((i = 0; i < 150; i++)); do
		st=0
		"$@" 2>"$T/passwd.err" || st=$?
		case $st in 1 | 10) sleep 0.2 ;; *) return "$st" ;; esac
	done
	return "$st"
}

drop_user() {
	local p
	for p in $(pgrep -u "$NU_UID" || true); do
		echo "[$TEST_NAME] ending process $p of $NU, left running" >&2
		kill -KILL "$p" 2>/dev/null
	done
	passwd_retry userdel "$NU" || {
		cat "$T/passwd.err" >&2
		return 1
	}
	! getent group "$NU" >/dev/null || groupdel "$NU"
}

# make_user WHAT: a new user (no home, no login shell) and its group;
# skips the test without root or the commands it needs.
make_user() {
	local c st=0
	[ "$(id -u)" = 0 ] || skip "needs root: makes a user"
	for c in useradd userdel setpriv pgrep; do
		command -v "$c" >/dev/null || skip "$c not found (passwd, util-linux, procps)"
	done
	NU="dlfs-nr-$$-$RANDOM"
	passwd_retry useradd --no-create-home --user-group --shell /usr/sbin/nologin \
		--comment "dlfs test $1" "$NU" || st=$?
	[ "$st" = 0 ] || fail "useradd $NU: status $st: $(cat "$T/passwd.err")"
	NU_UID=$(id -u "$NU")
	NU_GID=$(id -g "$NU")
	at_exit drop_user
	note "user $NU ($NU_UID:$NU_GID)"
}
