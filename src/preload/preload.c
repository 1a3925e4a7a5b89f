/*
 * preload: the library's constructor and fork handlers, and its
 * configuration (state.h), read once from DLFS_PRELOAD
 * ("PREFIX=SOCKET") when the library is loaded. Unset or empty: the
 * library passes everything through; bad: one line on stderr, and the
 * same.
 */
#include "state.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "conn.h"
#include "cwd.h"
#include "direct.h"
#include "dirs.h"
#include "fdtab.h"
#include "icept.h"
#include "ns.h"
#include "real.h"
#include "wire.h"

/* Absolute, not "/", no trailing slash, no "", "." or ".." component. */
static int prefix_ok(const char *p, size_t len)
{
	if (len < 2 || p[0] != '/' || p[len - 1] == '/')
		return 0;
	for (size_t i = 1; i <= len; i++) {
		if (i < len && p[i] != '/')
			continue;
		/* A component ends at i; find where it began. */
		size_t b = i;
		while (b > 0 && p[b - 1] != '/')
			b--;
		size_t n = i - b;
		if (n == 0 || (n == 1 && p[b] == '.') ||
		    (n == 2 && p[b] == '.' && p[b + 1] == '.'))
			return 0;
	}
	return 1;
}

static void configure(void)
{
	const char *env = getenv(DLFS_WIRE_ENV);
	if (!env || !*env)
		return;
	const char *eq = strchr(env, '=');
	size_t plen = eq ? (size_t)(eq - env) : 0;
	if (!eq || !prefix_ok(env, plen) || plen >= sizeof(dlfs_pl.prefix)) {
		dlfs_pl_say("ignoring " DLFS_WIRE_ENV ", which is not "
			    "PREFIX=SOCKET with an absolute PREFIX: ", env);
		return;
	}
	if (eq[1] != '/' || strlen(eq + 1) >= sizeof(dlfs_pl.sock)) {
		dlfs_pl_say("ignoring " DLFS_WIRE_ENV ", whose SOCKET is not "
			    "an absolute path of at most 107 bytes: ", env);
		return;
	}
	memcpy(dlfs_pl.prefix, env, plen);
	dlfs_pl.prefix[plen] = '\0';
	strcpy(dlfs_pl.sock, eq + 1);
	dlfs_pl.root.prefix = dlfs_pl.prefix;
	dlfs_pl.root.prefix_len = plen;
	dlfs_pl.on = 1;
	dlfs_cwd_init();
}

/*
 * fork: the prepare handler takes the library's global locks in the order
 * state.h writes down, so that no other thread holds one while the
 * process is copied; the parent releases them. The child releases them
 * too, and makes every per-object lock (a description's pos_lock, a
 * stream's lock, an fd slot's spin lock) new: the threads that may have
 * held one, across a server round trip, are not in the child.
 */
static void fork_prepare(void)
{
	dlfs_cwd_fork_prepare();
	dlfs_dirs_fork_prepare();
	dlfs_ns_fork_prepare();
	dlfs_conn_fork_prepare();
}

static void fork_parent(void)
{
	dlfs_conn_fork_parent();
	dlfs_ns_fork_parent();
	dlfs_dirs_fork_parent();
	dlfs_cwd_fork_parent();
}

static void fork_child(void)
{
	atomic_store(&dlfs_pl.pid, (int)syscall(SYS_getpid));
	dlfs_fd_fork_child();
	dlfs_dirs_fork_child();
	dlfs_conn_fork_child();
	dlfs_direct_fork_child();
	dlfs_ns_fork_parent();
	dlfs_cwd_fork_parent();
}

__attribute__((constructor)) static void dlfs_preload_init(void)
{
	atomic_store(&dlfs_pl.pid, (int)syscall(SYS_getpid));
	dlfs_real();
	dlfs_ns_init();
	dlfs_conn_init();
	dlfs_fd_init(dlfs_own_memory);
	dlfs_direct_init();
	pthread_atfork(fork_prepare, fork_parent, fork_child);
	configure();
}
