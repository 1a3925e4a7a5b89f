/* /proc/self/mountinfo, entry by entry: see shared/mountinfo.h. */
#include "mountinfo.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int dlfs_mountinfo_open(struct dlfs_mountinfo *mi)
{
	memset(mi, 0, sizeof(*mi));
	mi->f = fopen("/proc/self/mountinfo", "re");
	return mi->f ? 0 : -errno;
}

void dlfs_mountinfo_close(struct dlfs_mountinfo *mi)
{
	if (mi->f)
		fclose(mi->f);
	free(mi->line);
	memset(mi, 0, sizeof(*mi));
}

void dlfs_mountinfo_unescape(char *s)
{
	char *o = s;
	for (; *s; s++, o++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' &&
		    s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			*o = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 +
				    (s[3] - '0'));
			s += 3;
		} else {
			*o = *s;
		}
	}
	*o = '\0';
}

/* One line: ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [TAGS...] - TYPE SOURCE
 * SUPER_OPTS. @return 1 when it parsed. */
static int parse(char *line, struct dlfs_mount_entry *e)
{
	char *save = NULL, *f[5];
	char *tok = strtok_r(line, " \n", &save);
	for (int i = 0; i < 5; i++, tok = strtok_r(NULL, " \n", &save)) {
		if (!tok)
			return 0;
		f[i] = tok;
	}
	while (tok && strcmp(tok, "-"))
		tok = strtok_r(NULL, " \n", &save);
	char *type = tok ? strtok_r(NULL, " \n", &save) : NULL;
	char *source = type ? strtok_r(NULL, " \n", &save) : NULL;
	char *end;
	unsigned long id = strtoul(f[0], &end, 10);
	if (!type || *end)
		return 0;
	unsigned long parent = strtoul(f[1], &end, 10);
	if (*end)
		return 0;
	dlfs_mountinfo_unescape(f[3]);
	dlfs_mountinfo_unescape(f[4]);
	*e = (struct dlfs_mount_entry){
		.id = (unsigned)id,
		.parent = (unsigned)parent,
		.dev = f[2],
		.root = f[3],
		.mountpoint = f[4],
		.fstype = type,
		.source = source ? source : "",
	};
	return 1;
}

int dlfs_mountinfo_next(struct dlfs_mountinfo *mi, struct dlfs_mount_entry *e)
{
	errno = 0;
	while (getline(&mi->line, &mi->cap, mi->f) > 0)
		if (parse(mi->line, e))
			return 1;
	return ferror(mi->f) ? -(errno ? errno : EIO) : 0;
}
