/*
 * Faults in the index's map become errors. LMDB maps the index read-only,
 * and its lookups follow page numbers and node offsets read from the file:
 * bytes damaged on disk (or a file truncated or replaced while mounted)
 * can send an access past the end of the file, and the kernel answers with
 * SIGBUS. Validation at open cannot see every page; this catches the
 * rest where it happens.
 *
 * Every index call that touches the map runs inside a guard: a jump buffer
 * the calling thread registers (thread-local, nested calls stack). A
 * SIGBUS handler calls dlfs_index_fault_jump (below): in
 * a guarded call, it jumps back to the guard, which makes that call fail
 * with -DLFS_ECORRUPT and a message naming the index; anywhere else it
 * returns, and the handler does what it did before (the daemon: one line,
 * exit 3).
 *
 * The handler must be installed with SA_NODEFER: the guard saves no signal
 * mask (that would be a system call per lookup), so SIGBUS must not be
 * blocked while the handler runs and jumps out. Code run inside a guard
 * takes no lock across map accesses and owns nothing the jump would leak.
 *
 * Use: dlfs_guard_run(path, err, fn, ctx) runs fn(ctx) in a guard. The
 * daemon's SIGBUS handler (src/daemon/fatal.c) is the one user outside
 * the format: this header is one of the two the format shares with
 * dlfs's own libraries (util.h is the other), not installed.
 */
#ifndef DLFS_GUARD_H
#define DLFS_GUARD_H

#include "dlfs/err.h"

/*
 * fn(ctx) inside a guard: its result, or -DLFS_ECORRUPT with err set (the
 * index of dataset path had a page that could not be read) when a fault
 * in it was handed to dlfs_index_fault_jump. Nests.
 */
int dlfs_guard_run(const char *path, struct dlfs_err *err, int (*fn)(void *),
		   void *ctx);

/*
 * For a SIGBUS handler (installed with SA_SIGINFO | SA_NODEFER): when the
 * calling thread is inside a libdlfs call that reads the index, that call
 * fails with -DLFS_ECORRUPT (a page of the index at addr could not be
 * read: damaged, or the file was truncated or replaced while in use) and
 * this does not return. Otherwise it returns 0, and the fault is the
 * handler's. Async-signal-safe.
 */
int dlfs_index_fault_jump(const void *addr);

/* How many faults dlfs_index_fault_jump has turned into errors. */
unsigned long dlfs_index_faults(void);

#endif
