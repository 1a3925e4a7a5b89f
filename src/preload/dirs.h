/*
 * dirs: DIR streams over READDIR for directories of the dataset. A stream
 * is a struct dlfs_dir that the caller sees as a DIR *; streams live in one
 * region of the address space, so dlfs_dir_is() tells ours from glibc's
 * by address, with no lock. Each stream reads the fd it was opened on (a
 * dataset fd, which closedir closes), and gives "." and ".." first, then
 * the server's entries in their order. telldir is the number of entries
 * given so far; seekdir rewinds and reads forward when it cannot stay in
 * the batch at hand.
 *
 * Ownership: a stream holds a reference to its fd's description, given at
 * dlfs_dir_open and put by dlfs_dir_close; the entry readdir returns is
 * the stream's, valid until the next call on it (as glibc's).
 *
 * Thread safety: each stream has its own lock (as glibc's have), held
 * across the READDIR round trip (a stream's lock comes before the
 * library's global locks: state.h); pool_lock guards only taking and
 * giving back streams. Calls on different streams never wait for each
 * other. After fork the child's streams get new locks (the fork
 * handlers).
 */
#ifndef DLFS_DIRS_H
#define DLFS_DIRS_H

#include <dirent.h>

#include "fdtab.h"

int dlfs_dir_is(DIR *d);

/* A stream on fd (ours, a directory; f its description, whose reference
 * the stream takes). @return the stream, or NULL and errno (EMFILE when
 * all streams are in use, ENOMEM). */
DIR *dlfs_dir_open(int fd, struct dlfs_file *f);

/* @return the next entry, or NULL at the end (errno unchanged) or on an
 * error (errno set). */
struct dirent *dlfs_dir_read(DIR *d);
int dlfs_dir_read_r(DIR *d, struct dirent *ent, struct dirent **res);

/* Free the stream. @return its fd, for the caller to close. */
int dlfs_dir_close(DIR *d);
int dlfs_dir_fd(DIR *d);
void dlfs_dir_rewind(DIR *d);
long dlfs_dir_tell(DIR *d);
void dlfs_dir_seek(DIR *d, long pos);

/* The fork handlers (preload.c calls them in the lock order): prepare
 * takes pool_lock, parent releases it; child releases it and makes every
 * stream's lock new. */
void dlfs_dirs_fork_prepare(void);
void dlfs_dirs_fork_parent(void);
void dlfs_dirs_fork_child(void);

#endif
