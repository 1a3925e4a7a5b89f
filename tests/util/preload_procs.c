/*
 * preload_procs MODE SRC P FILE: processes, threads and signals against
 * libdlfs-preload.so. Run it with the library preloaded and SRC served at
 * the prefix P (FILE, a regular file of SRC, at least 64 KiB, relative to
 * both). Every byte read through P is compared with SRC's. A child that
 * does not finish in 20 s is killed and counts as hung. Exit 0 if all is
 * well, 1 with a line on stderr if not.
 *
 *   fork     threads read FILE through one shared fd, list P and stat
 *            paths, while the main thread forks 100 times; each child
 *            reads the inherited fd and stream and stats a path (a lock
 *            held by a parent thread at fork must not hang it);
 *   rawfork  the main thread has a connection, then _Fork (no fork
 *            handlers); parent and child read FILE at random offsets at
 *            the same time (their replies must not cross);
 *   cancel   a thread reading a shared fd is cancelled, 20 times; the
 *            main thread then reads the fd (it must not hang);
 *   vfork    a vfork child closes a dataset fd behind the library's back
 *            and fstats it; the parent's fd must still be its file;
 *   signals  a timer signal reads FILE from its handler while threads
 *            make their first connection, 200 times: each thread gets
 *            16 signals, the first 10 to 190 us after it is made, each
 *            next 100 us after the last handler returned; then a
 *            forked child must not hang. Prints how long the handlers
 *            took;
 *   leak     threads are made and end (each dials the server once) while
 *            the main thread forks 300 times; no child may hold a
 *            connection to the server (they are the parent's).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *src, *pfx, *rel;
static char ppath[4096], spath[4096];
static unsigned char *want; /* FILE's bytes, from SRC */
static size_t want_len;
static atomic_int stop, bad;

static void die(const char *what)
{
	fprintf(stderr, "preload_procs: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void load_want(void)
{
	int fd = open(spath, O_RDONLY);
	struct stat st;
	if (fd < 0 || fstat(fd, &st))
		die(spath);
	want_len = (size_t)st.st_size;
	want = malloc(want_len);
	if (!want || pread(fd, want, want_len, 0) != (ssize_t)want_len)
		die("read SRC's file");
	close(fd);
	if (want_len < 65536) {
		fprintf(stderr, "preload_procs: %s is under 64 KiB\n", spath);
		exit(1);
	}
}

/* Is buf FILE's n bytes at off? */
static int same(const void *buf, ssize_t n, size_t off)
{
	return n >= 0 && off + (size_t)n <= want_len &&
	       !memcmp(buf, want + off, (size_t)n);
}

/* A random read of FILE through fd. @return 0 if right. */
static int check_pread(int fd, unsigned *seed)
{
	char buf[4096];
	size_t off = (size_t)rand_r(seed) % (want_len - sizeof(buf));
	ssize_t n = pread(fd, buf, sizeof(buf), (off_t)off);
	return n == (ssize_t)sizeof(buf) && same(buf, n, off) ? 0 : -1;
}

/* Wait for a child, at most 20 s. @return its exit status, or -1 if it
 * hung (then it is killed) or died of a signal. */
static int wait_child(pid_t pid, const char *what)
{
	for (int i = 0; i < 20000; i++) {
		int st;
		pid_t r = waitpid(pid, &st, WNOHANG);
		if (r == pid) {
			if (WIFEXITED(st))
				return WEXITSTATUS(st);
			fprintf(stderr, "preload_procs: %s: child killed by "
					"signal %d\n", what, WTERMSIG(st));
			return -1;
		}
		if (r < 0 && errno != EINTR)
			die("waitpid");
		struct timespec ms = {0, 1000000};
		nanosleep(&ms, NULL);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	fprintf(stderr, "preload_procs: %s: the child hung\n", what);
	return -1;
}

/* ---- fork ---- */

static int shared_fd;
static DIR *shared_dir;

static void *reader(void *arg)
{
	unsigned seed = (unsigned)(long)arg;
	char buf[8192];
	while (!atomic_load(&stop)) {
		switch (rand_r(&seed) % 3) {
		case 0: /* read() holds the description's lock across a
			 * round trip */
			if (read(shared_fd, buf, sizeof(buf)) <= 0)
				lseek(shared_fd, 0, SEEK_SET);
			break;
		case 1: { /* a stream's lock, the same way */
			if (!readdir(shared_dir))
				rewinddir(shared_dir);
			break;
		}
		default: { /* the walk's cache */
			struct stat st;
			char p[4200];
			snprintf(p, sizeof(p), "%s/./%s", pfx, rel);
			if (stat(p, &st) || (size_t)st.st_size != want_len)
				atomic_store(&bad, 1);
		}
		}
	}
	return NULL;
}

static int child_of_fork(void)
{
	char buf[4096];
	struct stat st;
	if (read(shared_fd, buf, sizeof(buf)) < 0)
		return 2;
	if (pread(shared_fd, buf, sizeof(buf), 0) != (ssize_t)sizeof(buf) ||
	    !same(buf, sizeof(buf), 0))
		return 3;
	errno = 0;
	if (!readdir(shared_dir) && errno)
		return 4;
	if (stat(ppath, &st) || (size_t)st.st_size != want_len)
		return 5;
	return 0;
}

static int mode_fork(void)
{
	pthread_t t[4];
	shared_fd = open(ppath, O_RDONLY);
	shared_dir = opendir(pfx);
	if (shared_fd < 0 || !shared_dir)
		die("open the file or the prefix");
	for (long i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, reader, (void *)(i + 1));
	int fails = 0;
	for (int i = 0; i < 100 && !fails; i++) {
		pid_t pid = fork();
		if (pid < 0)
			die("fork");
		if (pid == 0)
			_exit(child_of_fork());
		int st = wait_child(pid, "fork");
		if (st) {
			fprintf(stderr, "preload_procs: fork: child %d of 100 "
					"failed (%d)\n", i + 1, st);
			fails++;
		}
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	return fails || atomic_load(&bad);
}

/* ---- rawfork ---- */

static int mode_rawfork(void)
{
	unsigned seed = 1;
	int fd = open(ppath, O_RDONLY);
	if (fd < 0 || check_pread(fd, &seed))
		die("the first read");
	pid_t pid = _Fork();
	if (pid < 0)
		die("_Fork");
	seed = pid ? 2 : 3;
	int errs = 0;
	for (int i = 0; i < 2000; i++)
		errs += check_pread(fd, &seed) != 0;
	if (pid == 0)
		_exit(errs ? 1 : 0);
	int st = wait_child(pid, "rawfork");
	if (errs || st) {
		fprintf(stderr, "preload_procs: rawfork: %d wrong reads in the "
				"parent, child status %d\n", errs, st);
		return 1;
	}
	return 0;
}

/* ---- cancel ---- */

static void *endless_reader(void *arg)
{
	char buf[65536];
	int fd = *(int *)arg;
	for (;;) {
		if (read(fd, buf, sizeof(buf)) <= 0)
			lseek(fd, 0, SEEK_SET);
		pthread_testcancel(); /* the library's requests are not
				       * cancellation points */
	}
	return NULL;
}

static void *read_once(void *arg)
{
	char buf[4096];
	int fd = *(int *)arg;
	return (void *)(long)(pread(fd, buf, sizeof(buf), 0) ==
				      (ssize_t)sizeof(buf) &&
			      same(buf, sizeof(buf), 0) &&
			      read(fd, buf, sizeof(buf)) >= 0);
}

static int mode_cancel(void)
{
	int fd = open(ppath, O_RDONLY);
	if (fd < 0)
		die("open");
	for (int i = 0; i < 20; i++) {
		pthread_t t, r;
		pthread_create(&t, NULL, endless_reader, &fd);
		struct timespec ms = {0, 2000000};
		nanosleep(&ms, NULL);
		pthread_cancel(t);
		pthread_join(t, NULL);
		/* A thread reads the fd: if the cancelled one left the
		 * description's lock held, it never comes back. */
		pthread_create(&r, NULL, read_once, &fd);
		struct timespec dl;
		clock_gettime(CLOCK_REALTIME, &dl);
		dl.tv_sec += 20;
		void *ok;
		if (pthread_timedjoin_np(r, &ok, &dl)) {
			fprintf(stderr, "preload_procs: cancel: a read after "
					"pthread_cancel hung (round %d)\n", i);
			return 1;
		}
		if (!ok) {
			fprintf(stderr, "preload_procs: cancel: a read after "
					"pthread_cancel failed\n");
			return 1;
		}
	}
	return 0;
}

/* ---- vfork ---- */

static int mode_vfork(void)
{
	int fd = open(ppath, O_RDONLY);
	int fd2 = open(ppath, O_RDONLY);
	char buf[4096];
	if (fd < 0 || fd2 < 0)
		die("open");
	pid_t pid = vfork();
	if (pid == 0) {
		struct stat st;
		/* As a raw close_range would: behind the library's back.
		 * Then the library sees the fd is not its socket any more. */
		syscall(SYS_close, fd);
		fstat(fd, &st);
		/* A request from the vfork child. */
		if (pread(fd2, buf, sizeof(buf), 0) != (ssize_t)sizeof(buf))
			_exit(2);
		_exit(0);
	}
	if (pid < 0)
		die("vfork");
	int st = wait_child(pid, "vfork");
	ssize_t n = pread(fd, buf, sizeof(buf), 4096);
	if (st || n != (ssize_t)sizeof(buf) || !same(buf, n, 4096)) {
		fprintf(stderr, "preload_procs: vfork: child status %d; the "
				"parent's fd then read %zd bytes%s\n", st, n,
			n > 0 && !same(buf, n, 4096) ? ", wrong ones" : "");
		return 1;
	}
	n = pread(fd2, buf, sizeof(buf), 8192);
	if (n != (ssize_t)sizeof(buf) || !same(buf, n, 8192)) {
		fprintf(stderr, "preload_procs: vfork: the parent's other fd "
				"reads wrong after the child's request\n");
		return 1;
	}
	return 0;
}

/* ---- signals ---- */

/*
 * The signals a thread gets, each a read in its handler: the test is
 * bound by events, not by time. A handler's read made while its thread
 * is in a request (its first connection) goes to the server on a
 * connection of its own, which takes a few hundred microseconds, more on
 * a loaded machine; a timer that fired every 100 us whatever the handler
 * took had the next signal pending when a handler returned, and the
 * thread spent its time in handlers: 200 threads took minutes. So each
 * signal is armed by the last handler, SIG_GAP_NS after it returns (the
 * thread runs in between), and a thread gets SIG_BUDGET of them.
 */
#define SIG_BUDGET 16
#define SIG_GAP_NS 100000L

static int sig_fd;
static timer_t sig_timer;
static atomic_int sig_reads, sig_bad, sig_left;
static atomic_llong sig_ns, sig_max_ns;

static long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* The timer's signal in ns (0: never). */
static void arm(long ns)
{
	struct itimerspec it = {.it_value = {ns / 1000000000L,
					     ns % 1000000000L}};
	timer_settime(sig_timer, 0, &it, NULL);
}

static void on_alarm(int sig)
{
	(void)sig;
	char buf[512];
	int saved = errno;
	long long t0 = now_ns();
	ssize_t n = pread(sig_fd, buf, sizeof(buf), 1024);
	if (!same(buf, n, 1024) || n != (ssize_t)sizeof(buf))
		atomic_store(&sig_bad, 1);
	atomic_fetch_add(&sig_reads, 1);
	long long d = now_ns() - t0, m = atomic_load(&sig_max_ns);
	atomic_fetch_add(&sig_ns, d);
	while (d > m && !atomic_compare_exchange_weak(&sig_max_ns, &m, d))
		;
	if (atomic_fetch_sub(&sig_left, 1) > 1)
		arm(SIG_GAP_NS);
	errno = saved;
}

static void *first_request(void *arg)
{
	char buf[4096];
	if (arg) { /* signals: this thread takes the timer's signal */
		sigset_t alrm;
		sigemptyset(&alrm);
		sigaddset(&alrm, SIGALRM);
		pthread_sigmask(SIG_UNBLOCK, &alrm, NULL);
	}
	int fd = open(ppath, O_RDONLY);
	long ok = fd >= 0 && pread(fd, buf, sizeof(buf), 0) ==
					  (ssize_t)sizeof(buf) &&
		  same(buf, sizeof(buf), 0);
	if (fd >= 0)
		close(fd);
	return (void *)ok;
}

/* 200 threads, each making its first connection under SIG_BUDGET
 * signals. @return the failed first requests. */
static int signalled_threads(void)
{
	int fails = 0;
	for (int i = 0; i < 200; i++) {
		pthread_t t;
		void *ok;
		atomic_store(&sig_left, SIG_BUDGET);
		if (pthread_create(&t, NULL, first_request, (void *)1))
			die("pthread_create");
		/* The first signal at another point of the first
		 * connection each time. */
		arm(10000L + (i % 10) * 20000L);
		pthread_join(t, &ok);
		arm(0);
		fails += !ok;
	}
	return fails;
}

static int mode_signals(void)
{
	sig_fd = open(ppath, O_RDONLY);
	if (sig_fd < 0)
		die("open");
	struct sigaction sa = {.sa_handler = on_alarm, .sa_flags = SA_RESTART};
	sigaction(SIGALRM, &sa, NULL);
	struct sigevent ev = {.sigev_notify = SIGEV_SIGNAL,
			      .sigev_signo = SIGALRM};
	if (timer_create(CLOCK_MONOTONIC, &ev, &sig_timer))
		die("timer_create");
	/* The main thread blocks the signal, so that it lands in the thread
	 * that is making its first connection. */
	sigset_t alrm;
	sigemptyset(&alrm);
	sigaddset(&alrm, SIGALRM);
	pthread_sigmask(SIG_BLOCK, &alrm, NULL);
	int fails = signalled_threads();
	timer_delete(sig_timer);
	/* The list of connections is whole: the child's fork handler walks
	 * it (a cycle would hang it). */
	pid_t pid = fork();
	if (pid == 0)
		_exit(0);
	int st = wait_child(pid, "signals");
	if (fails || st || atomic_load(&sig_bad)) {
		fprintf(stderr, "preload_procs: signals: %d failed first "
				"requests, a handler's read wrong: %d, child "
				"status %d\n", fails, atomic_load(&sig_bad), st);
		return 1;
	}
	int n = atomic_load(&sig_reads);
	printf("signals: %d reads in handlers, %lld us each on average, "
	       "%lld us at most\n",
	       n, n ? atomic_load(&sig_ns) / n / 1000 : 0,
	       atomic_load(&sig_max_ns) / 1000);
	return 0;
}

/* ---- leak ---- */

static char server[108];

/* Sockets of this process connected to the server. */
static int server_conns(void)
{
	int n = 0;
	for (int fd = 3; fd < 1024; fd++) {
		struct sockaddr_un sa;
		socklen_t len = sizeof(sa);
		memset(&sa, 0, sizeof(sa));
		if (!getpeername(fd, (struct sockaddr *)&sa, &len) &&
		    sa.sun_family == AF_UNIX && !strcmp(sa.sun_path, server))
			n++;
	}
	return n;
}

static void *dialler(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		pthread_t t;
		void *ok;
		pthread_create(&t, NULL, first_request, NULL);
		pthread_join(t, &ok);
		if (!ok)
			atomic_store(&bad, 1);
	}
	return NULL;
}

static int mode_leak(void)
{
	const char *env = getenv("DLFS_PRELOAD");
	const char *eq = env ? strchr(env, '=') : NULL;
	if (!eq || strlen(eq + 1) >= sizeof(server))
		die("DLFS_PRELOAD");
	strcpy(server, eq + 1);
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, dialler, NULL);
	int leaks = 0, fails = 0;
	for (int i = 0; i < 300; i++) {
		pid_t pid = fork();
		if (pid == 0)
			_exit(server_conns() > 100 ? 100 : server_conns());
		int st = wait_child(pid, "leak");
		if (st < 0)
			fails++;
		else if (st > 0)
			leaks++;
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	if (leaks || fails || atomic_load(&bad)) {
		fprintf(stderr, "preload_procs: leak: %d of 300 children held "
				"a connection of the parent's; %d hung or died\n",
			leaks, fails);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: preload_procs MODE SRC P FILE\n");
		return 2;
	}
	src = argv[2];
	pfx = argv[3];
	rel = argv[4];
	snprintf(spath, sizeof(spath), "%s/%s", src, rel);
	snprintf(ppath, sizeof(ppath), "%s/%s", pfx, rel);
	load_want();
	const char *m = argv[1];
	int ret = !strcmp(m, "fork")	  ? mode_fork()
		  : !strcmp(m, "rawfork") ? mode_rawfork()
		  : !strcmp(m, "cancel")  ? mode_cancel()
		  : !strcmp(m, "vfork")	  ? mode_vfork()
		  : !strcmp(m, "signals") ? mode_signals()
		  : !strcmp(m, "leak")	  ? mode_leak()
					  : 2;
	if (ret == 2)
		fprintf(stderr, "preload_procs: no mode %s\n", m);
	return ret;
}
