/*
 * intercept_cwd: the cwd (chdir, fchdir, getcwd), and the exec calls that
 * carry a virtual cwd into the program they run (cwd.h): execve,
 * execveat, fexecve, execle, execvpe, posix_spawn and posix_spawnp get
 * the caller's envp with DLFS_PRELOAD_CWD as this process's cwd says (the
 * entry added, replaced or taken out). execv, execvp, execl, execlp,
 * system and popen pass environ, which cwd.c keeps current. These run in
 * vfork children too: no malloc, no lock but vcwd_lock, the new envp on
 * the stack.
 */
#undef _FORTIFY_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cwd.h"
#include "icept.h"
#include "state.h"
#include "real.h"

DLFS_EXPORT int chdir(const char *path)
{
	struct dlfs_vp_res res;
	int ret = dlfs_classify(AT_FDCWD, path, 0, &res);
	if (ret)
		return dlfs_fail(-ret);
	int own = dlfs_own_memory();
	if (res.kind == DLFS_VP_OURS) {
		if (!S_ISDIR(res.st.st_mode))
			return dlfs_fail(ENOTDIR);
		/* A vfork child about to exec cannot take a virtual cwd
		 * with it (subprocess's cwd=). */
		if (!own)
			return dlfs_fail(ENOTSUP);
		ret = dlfs_vcwd_set(res.path, res.ino, &res.st, res.vol);
		return ret ? dlfs_fail(-ret) : 0;
	}
	ret = dlfs_real()->chdir(res.kind == DLFS_VP_REAL ? res.path : path);
	if (!ret && own) {
		dlfs_vcwd_clear();
		dlfs_rcwd_changed();
	}
	return ret;
}

DLFS_EXPORT int fchdir(int fd)
{
	struct dlfs_file *f = dlfs_fd_get(fd);
	if (!f) {
		int ret = dlfs_real()->fchdir(fd);
		if (!ret && dlfs_own_memory()) {
			dlfs_vcwd_clear();
			dlfs_rcwd_changed();
		}
		return ret;
	}
	int ret;
	if (!S_ISDIR(f->st.st_mode))
		ret = -ENOTDIR;
	else if (!dlfs_own_memory())
		ret = -ENOTSUP; /* as chdir's */
	else
		ret = dlfs_vcwd_set(f->vpath, f->ino, &f->st, f->vol);
	dlfs_file_put(f);
	return ret ? dlfs_fail(-ret) : 0;
}

DLFS_EXPORT char *getcwd(char *buf, size_t size)
{
	char v[PATH_MAX];
	if (!dlfs_vcwd_get(v, sizeof(v), NULL, NULL, NULL))
		return dlfs_real()->getcwd(buf, size);
	size_t n = strlen(v) + 1;
	if (!buf) {
		if (size && size < n) {
			errno = ERANGE;
			return NULL;
		}
		buf = malloc(size > n ? size : n);
		if (!buf) {
			errno = ENOMEM;
			return NULL;
		}
	} else if (size < n) {
		errno = size ? ERANGE : EINVAL;
		return NULL;
	}
	memcpy(buf, v, n);
	return buf;
}

DLFS_EXPORT char *__getcwd_chk(char *buf, size_t size, size_t buflen)
{
	if (size > buflen)
		abort();
	return getcwd(buf, size);
}

DLFS_EXPORT char *get_current_dir_name(void)
{
	return getcwd(NULL, 0);
}

/* The exec calls. */

/* Room for "DLFS_PRELOAD_CWD=N:" VPATH REAL. */
#define ENTRY_MAX (2 * PATH_MAX + 64)

/* The slots with_cwd needs for envp. */
static size_t env_slots(char *const envp[])
{
	size_t n = 0;
	while (envp && envp[n])
		n++;
	return n + 2;
}

static int is_cwd_entry(const char *e)
{
	return !strncmp(e, DLFS_CWD_ENV "=", sizeof(DLFS_CWD_ENV));
}

/* envp with DLFS_PRELOAD_CWD as this process's cwd says: any the caller
 * had taken out, the current one (written into entry, ENTRY_MAX bytes)
 * put in. out has env_slots(envp) slots. @return out, or envp itself when
 * it needs no change. */
static char *const *with_cwd(char *const envp[], char **out, char *entry)
{
	size_t n = 0, had = 0;
	dlfs_cwd_env(entry, ENTRY_MAX);
	for (size_t i = 0; envp && envp[i]; i++) {
		if (is_cwd_entry(envp[i]))
			had = 1;
		else
			out[n++] = envp[i];
	}
	if (!had && !entry[0])
		return envp;
	if (entry[0])
		out[n++] = entry;
	out[n] = NULL;
	return out;
}

static int do_execve(const char *path, char *const argv[], char *const envp[])
{
	if (!dlfs_on())
		return dlfs_real()->execve(path, argv, envp);
	char entry[ENTRY_MAX], *slots[env_slots(envp)];
	char *const *nv = with_cwd(envp, slots, entry);
	return dlfs_real()->execve(path, argv, nv);
}

DLFS_EXPORT int execve(const char *path, char *const argv[],
		       char *const envp[])
{
	return do_execve(path, argv, envp);
}

DLFS_EXPORT int execveat(int dirfd, const char *path, char *const argv[],
			 char *const envp[], int flags)
{
	if (!dlfs_on())
		return dlfs_real()->execveat(dirfd, path, argv, envp, flags);
	char entry[ENTRY_MAX], *slots[env_slots(envp)];
	char *const *nv = with_cwd(envp, slots, entry);
	return dlfs_real()->execveat(dirfd, path, argv, nv, flags);
}

DLFS_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
	if (!dlfs_on())
		return dlfs_real()->fexecve(fd, argv, envp);
	char entry[ENTRY_MAX], *slots[env_slots(envp)];
	char *const *nv = with_cwd(envp, slots, entry);
	return dlfs_real()->fexecve(fd, argv, nv);
}

DLFS_EXPORT int execvpe(const char *file, char *const argv[],
			char *const envp[])
{
	if (!dlfs_on())
		return dlfs_real()->execvpe(file, argv, envp);
	char entry[ENTRY_MAX], *slots[env_slots(envp)];
	char *const *nv = with_cwd(envp, slots, entry);
	return dlfs_real()->execvpe(file, argv, nv);
}

/* execle(path, arg0, ..., NULL, envp): glibc's calls its internal
 * execve, which this library does not see. */
DLFS_EXPORT int execle(const char *path, const char *arg, ...)
{
	va_list ap;
	size_t argc = 1;
	va_start(ap, arg);
	while (va_arg(ap, const char *))
		argc++;
	va_end(ap);
	char *argv[argc + 1];
	argv[0] = (char *)arg;
	va_start(ap, arg);
	for (size_t i = 1; i <= argc; i++)
		argv[i] = va_arg(ap, char *); /* argv[argc] is the NULL */
	char *const *envp = va_arg(ap, char *const *);
	va_end(ap);
	return do_execve(path, argv, envp);
}

DLFS_EXPORT int posix_spawn(pid_t *pid, const char *path,
			    const posix_spawn_file_actions_t *fa,
			    const posix_spawnattr_t *attr, char *const argv[],
			    char *const envp[])
{
	if (!dlfs_on())
		return dlfs_real()->posix_spawn(pid, path, fa, attr, argv,
						envp);
	char entry[ENTRY_MAX], *slots[env_slots(envp)];
	char *const *nv = with_cwd(envp, slots, entry);
	return dlfs_real()->posix_spawn(pid, path, fa, attr, argv, nv);
}

DLFS_EXPORT int posix_spawnp(pid_t *pid, const char *file,
			     const posix_spawn_file_actions_t *fa,
			     const posix_spawnattr_t *attr, char *const argv[],
			     char *const envp[])
{
	if (!dlfs_on())
		return dlfs_real()->posix_spawnp(pid, file, fa, attr, argv,
						 envp);
	char entry[ENTRY_MAX], *slots[env_slots(envp)];
	char *const *nv = with_cwd(envp, slots, entry);
	return dlfs_real()->posix_spawnp(pid, file, fa, attr, argv, nv);
}
