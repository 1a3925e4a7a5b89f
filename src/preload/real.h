/*
 * real: libc's own functions behind the ones this library interposes,
 * found once with dlsym(RTLD_NEXT). dlfs_real() is cheap after the first
 * call (one acquire load) and safe from any thread.
 */
#ifndef DLFS_REAL_H
#define DLFS_REAL_H

#include <dirent.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/xattr.h>
#include <unistd.h>
#include <utime.h>

/* Every libc function the library passes calls on to. The 64-bit aliases
 * (open64, stat64, ...) are the same functions on x86-64 and pass on to
 * these. */
#define DLFS_REAL_LIST(X)                                                     \
	X(open) X(openat) X(creat) X(close) X(read) X(pread) X(readv)         \
	X(preadv) X(lseek) X(write) X(pwrite) X(writev) X(pwritev)            \
	X(stat) X(lstat) X(fstat) X(fstatat) X(statx) X(access)               \
	X(faccessat) X(opendir) X(fdopendir) X(readdir) X(readdir_r)          \
	X(closedir) X(dirfd) X(rewinddir) X(telldir) X(seekdir) X(dup)        \
	X(dup2) X(dup3) X(fcntl) X(fopen) X(fdopen) X(mmap) X(realpath)       \
	X(canonicalize_file_name) X(readlink) X(readlinkat) X(getxattr)       \
	X(lgetxattr) X(fgetxattr) X(listxattr) X(llistxattr) X(flistxattr)    \
	X(setxattr) X(lsetxattr) X(fsetxattr) X(removexattr)                  \
	X(lremovexattr) X(fremovexattr) X(posix_fadvise) X(mkdir)             \
	X(mkdirat) X(unlink) X(unlinkat) X(rmdir) X(rename) X(renameat)       \
	X(renameat2) X(link) X(linkat) X(symlink) X(symlinkat) X(truncate)    \
	X(ftruncate) X(chmod) X(fchmod) X(fchmodat) X(chown) X(lchown)        \
	X(fchown) X(fchownat) X(utimensat) X(futimens) X(utimes) X(utime)     \
	X(mknod) X(mknodat) X(chdir) X(fchdir) X(getcwd) X(statfs)            \
	X(fstatfs) X(statvfs) X(fstatvfs) X(fsync) X(fdatasync) X(scandir)   \
	X(scandirat) X(setenv) X(unsetenv) X(execve) X(execveat)              \
	X(fexecve) X(execvpe) X(posix_spawn) X(posix_spawnp) X(preadv2)      \
	X(pwritev2) X(ioctl) X(remove) X(mkfifoat) X(mkstemp) X(mkostemp)     \
	X(mkstemps) X(mkostemps) X(mkdtemp) X(futimes) X(lutimes)             \
	X(futimesat) X(pathconf) X(fpathconf) X(freopen) X(close_range)       \
	X(closefrom)

#define DLFS_REAL_FIELD(name) __typeof__(name) *name;
struct dlfs_real {
	DLFS_REAL_LIST(DLFS_REAL_FIELD)
};
#undef DLFS_REAL_FIELD

/* The table, resolved on the first call. */
const struct dlfs_real *dlfs_real(void);

#endif
