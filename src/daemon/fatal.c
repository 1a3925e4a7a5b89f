/* SIGBUS: one line, then exit. See fatal.h. */
#include "fatal.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <syslog.h>
#include <unistd.h>

#include "dlfs/dataset.h"
#include "guard.h" /* dlfs_index_fault_jump */

/* What the handler needs, prepared beforehand (see fatal.h). */
static struct {
	char head[64];   /* "<PRI>dlfs[PID]: " for syslog, "" for stderr */
	char msg[2048];  /* the line, without the address */
	int log_fd;      /* connected to /dev/log, or -1 */
} fatal = {.log_fd = -1};

/* Append the hex of v to buf at *at (async-signal-safe). */
static void put_hex(char *buf, size_t cap, size_t *at, unsigned long v)
{
	char d[2 * sizeof(v)];
	int n = 0;
	do {
		d[n++] = "0123456789abcdef"[v & 15];
		v >>= 4;
	} while (v && n < (int)sizeof(d));
	if (*at + 2 < cap) {
		buf[(*at)++] = '0';
		buf[(*at)++] = 'x';
	}
	while (n > 0 && *at < cap)
		buf[(*at)++] = d[--n];
}

static void put_str(char *buf, size_t cap, size_t *at, const char *s)
{
	while (*s && *at < cap)
		buf[(*at)++] = *s++;
}

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	/* Inside an index lookup: that lookup fails (EIO, logged by its
	 * caller) and the mount goes on. */
	dlfs_index_fault_jump(si->si_addr);
	char line[2400];
	size_t at = 0;
	put_str(line, sizeof(line), &at, fatal.head);
	put_str(line, sizeof(line), &at, "fatal: SIGBUS at address ");
	put_hex(line, sizeof(line), &at, (unsigned long)si->si_addr);
	put_str(line, sizeof(line), &at, fatal.msg);
	if (fatal.log_fd >= 0)
		send(fatal.log_fd, line, at, MSG_DONTWAIT | MSG_NOSIGNAL);
	if (at < sizeof(line))
		line[at++] = '\n';
	ssize_t w = write(STDERR_FILENO, line, at);
	(void)w;
	_exit(DLFS_EXIT_FATAL);
}

void dlfs_fatal_install(const char *dataset, const char *mountpoint,
			int foreground)
{
	snprintf(fatal.msg, sizeof(fatal.msg),
		 ": a page of the index %s/index could not be read (an I/O "
		 "error, or the file was truncated or replaced while "
		 "mounted); the daemon exits, and %s answers 'Transport "
		 "endpoint is not connected' until it is mounted again",
		 dataset, mountpoint);
	if (foreground) {
		snprintf(fatal.head, sizeof(fatal.head), "dlfs: ");
	} else {
		snprintf(fatal.head, sizeof(fatal.head), "<%d>dlfs[%d]: ",
			 LOG_DAEMON | LOG_CRIT, (int)getpid());
		struct sockaddr_un a = {.sun_family = AF_UNIX};
		snprintf(a.sun_path, sizeof(a.sun_path), "/dev/log");
		fatal.log_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		if (fatal.log_fd >= 0 &&
		    connect(fatal.log_fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
			close(fatal.log_fd);
			fatal.log_fd = -1;
		}
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigbus;
	/* SA_NODEFER: a lookup jumped out of the handler must not leave
	 * SIGBUS blocked in its thread (dlfs_index_fault_jump). */
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, NULL);
}
