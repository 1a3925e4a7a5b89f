/* Finding the daemon and the preload library: see parts.h. */
#include "parts.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The directory this program is in. @return 0 or -1. */
static int self_dir(char *buf, size_t len)
{
	ssize_t n = readlink("/proc/self/exe", buf, len - 1);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	char *slash = strrchr(buf, '/');
	if (!slash)
		return -1;
	*slash = '\0';
	return 0;
}

/*
 * The first of env, then each of the candidates (relative to this
 * program's directory, or absolute), that is a file. @return 0 with buf
 * set, or -1.
 */
static int find_part(const char *env, const char *const *cands, char *buf,
		     size_t len)
{
	const char *e = getenv(env);
	if (e && *e) {
		snprintf(buf, len, "%s", e);
		return access(buf, R_OK) ? -1 : 0;
	}
	char dir[PATH_MAX];
	int have_dir = !self_dir(dir, sizeof(dir));
	for (int i = 0; cands[i]; i++) {
		int n;
		if (cands[i][0] == '/')
			n = snprintf(buf, len, "%s", cands[i]);
		else if (have_dir)
			n = snprintf(buf, len, "%s/%s", dir, cands[i]);
		else
			continue;
		if (n >= 0 && (size_t)n < len && !access(buf, R_OK))
			return 0;
	}
	return -1;
}

/* In a build tree (tools/, src/) first: an installed copy may be older.
 * Else installed side by side. */
int dlfs_part_daemon(char *buf, size_t len)
{
	static const char *const daemons[] = {
		"dlfs", "../src/daemon/dlfs", DLFS_BINDIR "/dlfs", NULL};
	return find_part("DLFS_DAEMON", daemons, buf, len);
}

int dlfs_part_preload(char *buf, size_t len)
{
	static const char *const libs[] = {
		"../src/preload/libdlfs-preload.so",
		DLFS_LIBDIR_FROM_BIN "/libdlfs-preload.so",
		DLFS_LIBDIR "/libdlfs-preload.so", NULL};
	return find_part("DLFS_PRELOAD_LIB", libs, buf, len);
}
