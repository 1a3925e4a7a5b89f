/* The library's process-wide state: see state.h. */
#include "state.h"

#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

struct dlfs_pl dlfs_pl;

void dlfs_pl_say(const char *msg, const char *arg)
{
	char line[512];
	size_t n = 0;
	const char *parts[] = {"dlfs-preload: ", msg, arg ? arg : "", "\n"};
	for (size_t i = 0; i < 4; i++) {
		size_t l = strlen(parts[i]);
		if (l > sizeof(line) - n - 1)
			l = sizeof(line) - n - 1;
		memcpy(line + n, parts[i], l);
		n += l;
	}
	if (line[n - 1] != '\n')
		line[n - 1] = '\n';
	syscall(SYS_write, 2, line, n);
}
