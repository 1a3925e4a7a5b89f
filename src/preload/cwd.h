/*
 * cwd: the process's cwd as the library sees it.
 *
 * The virtual cwd: a chdir into the prefix is kept here, not in the
 * kernel (the prefix does not exist on disk), and relative paths and
 * getcwd follow it. It crosses exec in the environment variable
 * DLFS_PRELOAD_CWD = "N:" VPATH REAL, VPATH (N bytes) the virtual cwd and
 * REAL the kernel's cwd when it was set. A program takes it as its own
 * only if its kernel cwd is still REAL: a program whose parent left the
 * prefix with a chdir the library did not see, or that was given a stale
 * $PWD (Python's os.chdir does not change $PWD), keeps its real cwd. The
 * library keeps the variable in environ (for execv, execvp, system and
 * popen, which pass environ) and puts it in the envp of the exec calls
 * that take one (intercept_cwd.c), as dash and bash exec with their own.
 * Keeping environ current is a setenv at each chdir into or out of the
 * prefix: it races with getenv in other threads, as any setenv does.
 *
 * The real cwd's place: when it is above the prefix, a relative path with
 * no ".." can still name the prefix ("imagenet/x" in /data, for the
 * prefix /data/imagenet).
 *
 * Thread safety: the virtual cwd is copied in and out under vcwd_lock,
 * the real cwd's place under rcwd_lock (both leaves: no call is made
 * with them held); each has a state read without its lock, so a program
 * that never goes near the prefix never takes them. The changes (set,
 * clear, changed) are for the process that owns the memory, never for a
 * vfork child (the callers check).
 */
#ifndef DLFS_CWD_H
#define DLFS_CWD_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

/* The name of the variable. */
#define DLFS_CWD_ENV "DLFS_PRELOAD_CWD"

/* Read DLFS_PRELOAD_CWD (constructor, after DLFS_PRELOAD was read): keep
 * it for later if the kernel's cwd is the one it names, else drop it
 * from environ. */
void dlfs_cwd_init(void);

/* The program chdir()ed into the prefix, to vpath (ino, st; vol, what the
 * lookup that found it said: struct dlfs_vp_res's).
 * @return 0 or -ENAMETOOLONG. */
int dlfs_vcwd_set(const char *vpath, uint64_t ino, const struct stat *st,
		  int vol);
/* The program chdir()ed to a real directory. */
void dlfs_vcwd_clear(void);
/* Copy the virtual cwd into buf (ino, st, vol may be NULL); an inherited
 * one is resolved (from the server, which says whether it is volatile)
 * on the first call. @return 1 if there is one, else 0. */
int dlfs_vcwd_get(char *buf, size_t size, uint64_t *ino, struct stat *st,
		  int *vol);

/* The "DLFS_PRELOAD_CWD=..." entry for the environment of a program this
 * one execs, into buf, or "" when there is no virtual cwd. No server
 * call, no malloc, no environ (a vfork child may call it). */
void dlfs_cwd_env(char *buf, size_t size);

/* The kernel's cwd changed (chdir, fchdir). */
void dlfs_rcwd_changed(void);
/* Is the kernel's cwd above the prefix, and could path (relative) step
 * from there towards it? Then base is that cwd. @return 1 or 0. */
int dlfs_rcwd_base(const char *path, char *base, size_t size);

/* The fork handlers (preload.c calls them in the lock order): prepare
 * takes vcwd_lock and rcwd_lock, parent releases them, and so does the
 * child. */
void dlfs_cwd_fork_prepare(void);
void dlfs_cwd_fork_parent(void);

#endif
