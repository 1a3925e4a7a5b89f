/*
 * dlfs-run: run a command with a dataset at a path prefix, without FUSE.
 *
 *   dlfs-run [-o opt,...]... DATASET:PREFIX -- COMMAND [ARG...]
 *
 * It finds or starts the dlfs server for DATASET (dlfs DATASET --serve
 * SOCKET, with the -o options a mount takes), runs COMMAND with
 * libdlfs-preload.so preloaded and told where the server is, and exits
 * with COMMAND's status (128 + the signal that killed it). See
 * dlfs-run(1).
 *
 * By default the server is the node's (dlfs-run.d/node.h): every
 * dlfs-run of this user, dataset and options (and Slurm job step) on the
 * node shares one, in a session of its own; the last to end stops it.
 * With --private each dlfs-run starts its own in a private directory, in
 * its own process group, and stops it at the end; if dlfs-run dies, it
 * gets SIGTERM (PR_SET_PDEATHSIG). Either way a ^C at the terminal
 * reaches COMMAND (which decides what to do) and not the server; the
 * signals that end a job (SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGUSR2) sent
 * to dlfs-run itself are passed to COMMAND.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "launch_vars.h"
#include "node.h"
#include "parts.h"

#define ME "dlfs-run"

struct run {
	const char *dataset;
	const char *prefix;  /* absolute, no trailing '/' */
	char opts[8192];     /* the -o options, joined with ',' */
	char **cmd;
	char daemon[PATH_MAX];
	char lib[PATH_MAX];
	char dir[PATH_MAX];  /* --private: holds the socket */
	char sock[PATH_MAX];
	pid_t server, child;
	int private;         /* --private: a server of its own */
	struct node node;    /* else the node's */
};

static void usage(FILE *f)
{
	fprintf(f, "usage: " ME " [--private] [-o opt,...]... DATASET:PREFIX "
		   "-- COMMAND [ARG...]\n"
		   "  Runs COMMAND with DATASET at PREFIX (an absolute path), "
		   "without FUSE.\n"
		   "  -o: the options of a dlfs mount (see dlfs(1)).\n"
		   "  --private: a server of its own, not the node's shared "
		   "one.\n"
		   "  -h, --help  -V, --version\n"
		   "See dlfs-run(1).\n");
}

/* ---- the command line ---- */

/* DATASET:PREFIX at the last ':' that a '/' follows. @return 0, or 2
 * after a message. */
static int split_spec(struct run *r, char *spec)
{
	char *colon = NULL;
	for (char *p = spec; (p = strchr(p, ':')); p++)
		if (p[1] == '/')
			colon = p;
	if (!colon || colon == spec) {
		fprintf(stderr, ME ": %s: expected DATASET:PREFIX, PREFIX an "
				   "absolute path\n", spec);
		return 2;
	}
	*colon = '\0';
	char *prefix = colon + 1;
	size_t n = strlen(prefix);
	while (n > 1 && prefix[n - 1] == '/')
		prefix[--n] = '\0';
	if (n < 2) {
		fprintf(stderr, ME ": PREFIX / would hide every file: give a "
				   "directory such as /dlfs/%s\n", "data");
		return 2;
	}
	if (strstr(prefix, "//") || strstr(prefix, "/./") ||
	    strstr(prefix, "/../") || !strcmp(prefix + n - 2, "/.") ||
	    (n >= 3 && !strcmp(prefix + n - 3, "/.."))) {
		fprintf(stderr, ME ": PREFIX %s: give it without '.', '..' or "
				   "'//'\n", prefix);
		return 2;
	}
	r->dataset = spec;
	r->prefix = prefix;
	return 0;
}

static int add_opts(struct run *r, const char *o)
{
	size_t have = strlen(r->opts), add = strlen(o);
	if (have + add + 2 > sizeof(r->opts)) {
		fprintf(stderr, ME ": -o: the options are too long\n");
		return 2;
	}
	if (have)
		r->opts[have++] = ',';
	memcpy(r->opts + have, o, add + 1);
	return 0;
}

/* @return 0, 1 when done (help, version), or 2 after a message. */
static int parse(struct run *r, int argc, char **argv)
{
	int i = 1;
	for (; i < argc && strcmp(argv[i], "--"); i++) {
		const char *a = argv[i];
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 1;
		}
		if (!strcmp(a, "-V") || !strcmp(a, "--version")) {
			printf(ME " %s\n", DLFS_VERSION);
			return 1;
		}
		if (!strcmp(a, "--private")) {
			r->private = 1;
		} else if (!strcmp(a, "-o")) {
			if (++i >= argc) {
				fprintf(stderr, ME ": -o needs a value\n");
				return 2;
			}
			if (add_opts(r, argv[i]))
				return 2;
		} else if (!strncmp(a, "-o", 2)) {
			if (add_opts(r, a + 2))
				return 2;
		} else if (a[0] == '-') {
			fprintf(stderr, ME ": unknown option %s\n", a);
			return 2;
		} else if (r->dataset) {
			fprintf(stderr, ME ": one DATASET:PREFIX only (%s); "
					   "put COMMAND after --\n", a);
			return 2;
		} else if (split_spec(r, argv[i])) {
			return 2;
		}
	}
	if (!r->dataset || i + 1 >= argc) {
		usage(stderr);
		return 2;
	}
	r->cmd = argv + i + 1;
	return 0;
}

/* ---- finding the parts ---- */

static int find_parts(struct run *r)
{
	if (dlfs_part_daemon(r->daemon, sizeof(r->daemon))) {
		fprintf(stderr, ME ": cannot find the dlfs daemon (next to "
				   ME ", in " DLFS_BINDIR ", or $DLFS_DAEMON)\n");
		return 1;
	}
	if (dlfs_part_preload(r->lib, sizeof(r->lib))) {
		fprintf(stderr, ME ": cannot find libdlfs-preload.so (in "
				   DLFS_LIBDIR ", or $DLFS_PRELOAD_LIB)\n");
		return 1;
	}
	return 0;
}

/*
 * A static program would never load the library, and would see nothing
 * at PREFIX: refuse it. A script (#!) or a program with an interpreter
 * (PT_INTERP) is fine. @return 0, or 1 after a message.
 */
static int check_dynamic(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0; /* execvp will say why */
	Elf64_Ehdr eh;
	int ok = 1;
	if (read(fd, &eh, sizeof(eh)) == (ssize_t)sizeof(eh) &&
	    !memcmp(eh.e_ident, ELFMAG, SELFMAG) &&
	    eh.e_ident[EI_CLASS] == ELFCLASS64 &&
	    (eh.e_type == ET_EXEC || eh.e_type == ET_DYN)) {
		ok = 0;
		for (int i = 0; i < eh.e_phnum && !ok; i++) {
			Elf64_Phdr ph;
			off_t at = (off_t)eh.e_phoff + (off_t)i * eh.e_phentsize;
			if (pread(fd, &ph, sizeof(ph), at) != (ssize_t)sizeof(ph))
				ok = 1; /* unreadable: let it run */
			else if (ph.p_type == PT_INTERP)
				ok = 1;
		}
	}
	close(fd);
	if (!ok)
		fprintf(stderr, ME ": %s is linked statically: the preload "
				   "library cannot reach it, and it would not see "
				   "the dataset (use a FUSE mount)\n", path);
	return !ok;
}

/* COMMAND's path as execvp would find it, into buf. @return 0 or -1. */
static int which(const char *cmd, char *buf, size_t len)
{
	if (strchr(cmd, '/')) {
		snprintf(buf, len, "%s", cmd);
		return 0;
	}
	const char *path = getenv("PATH");
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path) {
		size_t n = strcspn(path, ":");
		snprintf(buf, len, "%.*s/%s", (int)n, n ? path : ".", cmd);
		if (!access(buf, X_OK))
			return 0;
		path += n + (path[n] == ':');
	}
	return -1;
}

/* ---- the server ---- */

/* A directory that can hold our socket: writable, and short enough for a
 * socket path (108 bytes with "/dlfs-run-UID/0123456789abcdef.sock", or
 * "/dlfs-run.XXXXXX/socket"). */
static int usable(const char *base)
{
	struct sockaddr_un a;
	return base && *base && strlen(base) + 43 < sizeof(a.sun_path) &&
	       !access(base, W_OK | X_OK);
}

/* Where the sockets go: $XDG_RUNTIME_DIR, $TMPDIR or /tmp. */
static const char *run_base(void)
{
	const char *base = getenv("XDG_RUNTIME_DIR");
	if (!usable(base))
		base = getenv("TMPDIR");
	if (!usable(base))
		base = "/tmp";
	return base;
}

static int make_dir(struct run *r)
{
	const char *base = run_base();
	snprintf(r->dir, sizeof(r->dir), "%s/dlfs-run.XXXXXX", base);
	if (!mkdtemp(r->dir)) {
		fprintf(stderr, ME ": mkdtemp %s: %s\n", r->dir,
			strerror(errno));
		return 1;
	}
	int n = snprintf(r->sock, sizeof(r->sock), "%s/socket", r->dir);
	if (n < 0 || (size_t)n >= sizeof(r->sock)) {
		rmdir(r->dir);
		fprintf(stderr, ME ": %s: too long a path\n", r->dir);
		return 1;
	}
	return 0;
}

/* In the server's child: its own group, SIGTERM when dlfs-run dies, no MPI
 * launch seen (the command, not the server, is the job's rank), no
 * preload of its own; then exec. */
static void exec_server(struct run *r, int ready, pid_t parent)
{
	static const char *const launch[] = {
		DLFS_LAUNCH_SIZE_VARS, "LD_PRELOAD", "DLFS_PRELOAD", NULL};
	char fd[16];
	if (r->private) {
		setpgid(0, 0);
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() != parent)
			_exit(1); /* dlfs-run died before the line above */
	}
	for (int i = 0; launch[i]; i++)
		unsetenv(launch[i]);
	snprintf(fd, sizeof(fd), "%d", ready);
	const char *argv[12];
	int n = 0;
	argv[n++] = r->daemon;
	argv[n++] = r->dataset;
	argv[n++] = "--serve";
	argv[n++] = r->sock;
	argv[n++] = "--ready-fd";
	argv[n++] = fd;
	if (!r->private) {
		argv[n++] = "--users";
		argv[n++] = r->node.key;
	}
	if (r->opts[0]) {
		argv[n++] = "-o";
		argv[n++] = r->opts;
	}
	argv[n] = NULL;
	execv(r->daemon, (char **)argv);
	fprintf(stderr, ME ": %s: %s\n", r->daemon, strerror(errno));
	_exit(127);
}

/* Start the server and wait until it says ready. @return 0, or 1 (it
 * said why on stderr, which it shares). */
static int start_server(struct run *r)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC)) {
		fprintf(stderr, ME ": pipe: %s\n", strerror(errno));
		return 1;
	}
	pid_t me = getpid();
	r->server = fork();
	if (r->server < 0) {
		fprintf(stderr, ME ": fork: %s\n", strerror(errno));
		return 1;
	}
	if (r->server == 0) {
		close(p[0]);
		int fd = fcntl(p[1], F_DUPFD, 3); /* without O_CLOEXEC */
		/* The node's server outlives this dlfs-run: in a session of
		 * its own, a child of init (its parent exits at once). */
		if (!r->private && (setsid() < 0 || fork() != 0))
			_exit(0);
		exec_server(r, fd < 0 ? p[1] : fd, me);
	}
	close(p[1]);
	char buf[8] = "";
	ssize_t n;
	while ((n = read(p[0], buf, sizeof(buf) - 1)) < 0 && errno == EINTR)
		;
	close(p[0]);
	int st;
	if (!r->private) {
		waitpid(r->server, &st, 0); /* the child that forked it */
		r->server = 0;
		if (n > 0 && !strncmp(buf, "ready", 5))
			return 0;
		fprintf(stderr, ME ": the dlfs server for %s did not start\n",
			r->dataset);
		return 1;
	}
	if (n > 0 && !strncmp(buf, "ready", 5))
		return 0;
	waitpid(r->server, &st, 0);
	r->server = 0;
	fprintf(stderr, ME ": the dlfs server for %s did not start (%s %d)\n",
		r->dataset, WIFSIGNALED(st) ? "signal" : "status",
		WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
	return 1;
}

static void stop_server(struct run *r)
{
	int st;
	if (r->server > 0 && waitpid(r->server, &st, WNOHANG) == r->server) {
		/* It ended under the command, whose reads then failed. */
		fprintf(stderr, ME ": the dlfs server for %s ended while the "
				   "command ran (%s %d)\n", r->dataset,
			WIFSIGNALED(st) ? "signal" : "status",
			WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
		r->server = 0;
	}
	if (r->server > 0) {
		kill(r->server, SIGTERM);
		int i;
		/* 30 s for in-flight NVMe writes; then it is stuck. */
		for (i = 0; i < 300 && !waitpid(r->server, &st, WNOHANG); i++)
			usleep(100000);
		if (i == 300) {
			fprintf(stderr, ME ": the dlfs server did not stop "
					   "within 30 s: killed\n");
			kill(r->server, SIGKILL);
			waitpid(r->server, &st, 0);
		}
	}
	unlink(r->sock); /* a server that was killed left it */
	rmdir(r->dir);
}

/* ---- the command ---- */

static int set_env(struct run *r)
{
	char conf[2 * PATH_MAX + 2], pre[PATH_MAX + 4096];
	const char *old = getenv("LD_PRELOAD");
	snprintf(conf, sizeof(conf), "%s=%s", r->prefix, r->sock);
	if (old && *old)
		snprintf(pre, sizeof(pre), "%s:%s", r->lib, old);
	else
		snprintf(pre, sizeof(pre), "%s", r->lib);
	if (setenv("DLFS_PRELOAD", conf, 1) || setenv("LD_PRELOAD", pre, 1)) {
		fprintf(stderr, ME ": setenv: %s\n", strerror(errno));
		return 1;
	}
	return 0;
}

static volatile sig_atomic_t child_pid;

static const int fwd_sigs[] = {SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGUSR2,
			       SIGQUIT};

/* A signal sent to dlfs-run goes to COMMAND too. One from the terminal
 * (SI_KERNEL: ^C, ^\, a hangup) reached COMMAND already, which shares
 * our process group: passing it on would make one ^C two. */
static void forward(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	if (child_pid > 0 && si->si_code != SI_KERNEL)
		kill((pid_t)child_pid, sig);
}

static void forward_signals(sigset_t *set)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = forward;
	sa.sa_flags = SA_RESTART | SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	sigemptyset(set);
	for (size_t i = 0; i < sizeof(fwd_sigs) / sizeof(fwd_sigs[0]); i++) {
		sigaction(fwd_sigs[i], &sa, NULL);
		sigaddset(set, fwd_sigs[i]);
	}
}

/* Run COMMAND and wait for it. @return its exit status as a shell has
 * it. */
static int run_command(struct run *r)
{
	sigset_t set, old;
	forward_signals(&set);
	/* Held until child_pid is known, so that none is lost. */
	sigprocmask(SIG_BLOCK, &set, &old);
	r->child = fork();
	if (r->child < 0) {
		sigprocmask(SIG_SETMASK, &old, NULL);
		fprintf(stderr, ME ": fork: %s\n", strerror(errno));
		return 1;
	}
	if (r->child == 0) {
		for (size_t i = 0; i < sizeof(fwd_sigs) / sizeof(fwd_sigs[0]);
		     i++)
			signal(fwd_sigs[i], SIG_DFL);
		sigprocmask(SIG_SETMASK, &old, NULL);
		execvp(r->cmd[0], r->cmd);
		fprintf(stderr, ME ": %s: %s\n", r->cmd[0], strerror(errno));
		_exit(errno == ENOENT ? 127 : 126);
	}
	child_pid = r->child;
	sigprocmask(SIG_SETMASK, &old, NULL);
	int st;
	while (waitpid(r->child, &st, 0) < 0)
		if (errno != EINTR)
			return 1;
	child_pid = 0;
	return WIFSIGNALED(st) ? 128 + WTERMSIG(st) : WEXITSTATUS(st);
}

static int start_node_server(void *arg)
{
	return start_server(arg);
}

/* What names the node's server: the dataset, the options, the daemon and
 * the Slurm job step (a server must not outlive the step whose cgroup it
 * is in). @return 0, or 1 after a message. */
static int node_of(struct run *r, const char *base)
{
	char what[PATH_MAX * 3 + 8192 + 64], real[PATH_MAX];
	const char *job = getenv("SLURM_JOB_ID"), *step = getenv("SLURM_STEP_ID");
	snprintf(what, sizeof(what), "%s\n%s\n%s\n%s.%s",
		 realpath(r->dataset, real) ? real : r->dataset, r->opts,
		 r->daemon, job ? job : "", step ? step : "");
	if (node_init(&r->node, base, what))
		return 1;
	snprintf(r->sock, sizeof(r->sock), "%s", r->node.sock);
	return 0;
}

int main(int argc, char **argv)
{
	struct run r;
	memset(&r, 0, sizeof(r));
	int ret = parse(&r, argc, argv);
	if (ret)
		return ret == 1 ? 0 : 2;
	char path[PATH_MAX];
	if (which(r.cmd[0], path, sizeof(path))) {
		fprintf(stderr, ME ": %s: command not found\n", r.cmd[0]);
		return 127;
	}
	if (check_dynamic(path) || find_parts(&r))
		return 1;
	if (!r.private) {
		if (node_of(&r, run_base()) || set_env(&r) ||
		    node_attach(&r.node, start_node_server, &r))
			return 1;
		ret = run_command(&r);
		node_detach(&r.node);
		return ret;
	}
	if (make_dir(&r))
		return 1;
	if (set_env(&r)) {
		rmdir(r.dir);
		return 1;
	}
	if (start_server(&r)) {
		stop_server(&r);
		return 1;
	}
	ret = run_command(&r);
	stop_server(&r);
	return ret;
}
