/*
 * SIGBUS. The index is the one file dlfs maps (LMDB maps it read-only); a
 * page of it that cannot be read (damaged bytes that send a lookup past
 * the end of the file, an I/O error, or the file truncated or replaced
 * while mounted) raises SIGBUS in whichever thread touched it.
 *
 * Inside an index lookup (nearly always), the handler hands the fault to
 * libdlfs (dlfs_index_fault_jump, src/format/guard.h): that lookup fails
 * with EIO and a log line, like any damaged record, and the mount goes
 * on. Anywhere else no request can recover from it, and dying silently
 * would leave users with
 * "Transport endpoint is not connected" and no reason anywhere: the
 * handler says, in one line to stderr (foreground) or syslog, what
 * happened and where, and the daemon exits with status 3.
 *
 * The handler's message and log socket are prepared when it is installed:
 * a signal handler may only do async-signal-safe work (write, send,
 * _exit), and it has no context but process-wide state, the one place
 * the daemon keeps any.
 */
#ifndef DLFS_FATAL_H
#define DLFS_FATAL_H

/* The exit status after a SIGBUS. */
#define DLFS_EXIT_FATAL 3

/*
 * Install the handler: index_path is the dataset's index (named in the
 * message), mountpoint the mount; foreground picks stderr, else syslog.
 * Call after daemonizing. Best effort: without it a SIGBUS kills the
 * daemon as before.
 */
void dlfs_fatal_install(const char *dataset, const char *mountpoint,
			int foreground);

#endif
