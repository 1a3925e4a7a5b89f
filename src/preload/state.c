/* The library's process-wide state: see state.h. */
#include "state.h"

#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

struct dlfs_pl dlfs_pl;

void dlfs_pl_say_parts(const char *const *parts, size_t n)
{
	char line[512];
	size_t len = 0;
	for (size_t i = 0; i <= n; i++) {
		const char *p = i == 0 ? "dlfs-preload: " : parts[i - 1];
		if (!p)
			continue;
		size_t l = strlen(p);
		if (l > sizeof(line) - 1 - len)
			l = sizeof(line) - 1 - len;
		memcpy(line + len, p, l);
		len += l;
	}
	line[len++] = '\n';
	syscall(SYS_write, 2, line, len);
}

void dlfs_pl_say(const char *msg, const char *arg)
{
	const char *parts[] = {msg, arg};
	dlfs_pl_say_parts(parts, 2);
}
