/* dlfs-inspect on a live mount: see live.h. */
#include "live.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "parts.h"

#define PROG "dlfs-inspect"

/* Where top --socket's second run sees the server's dataset, and the
 * variable that tells it which socket that is (for its messages). */
#define ATTACH_PREFIX "/dlfs-server"
#define ATTACH_ENV "DLFS_TOP_SOCKET"

/* A header every this many rows, as iostat does. */
#define HEADER_EVERY 20

FILE *dlfs_live_open(const char *mnt, const char *name, char *path,
		     size_t len)
{
	snprintf(path, len, "%s/.dlfs/%s", mnt, name);
	FILE *f = fopen(path, "r");
	if (!f && errno == ENOENT) {
		/* The control directory itself (mounted with -o ctl_dir). */
		char alt[4096];
		snprintf(alt, sizeof(alt), "%s/%s", mnt, name);
		f = fopen(alt, "r");
		if (!f)
			errno = ENOENT;
	}
	return f;
}

/* The series top reads, by their exact names and labels. */
enum {
	V_FILES,        /* files this process read */
	V_FILES_DIRECT, /* files dlfs-run's readers read themselves */
	V_SERVED,
	V_DIRECT_RAM,
	V_DIRECT_NVME,
	V_RAM,
	V_NVME,
	V_PEER,
	V_PFS,
	V_RAM_HITS,
	V_RAM_MISSES,
	V_NVME_HITS,
	V_NVME_MISSES,
	V_INFLIGHT,
	V_COUNT
};

static const char *const series[V_COUNT] = {
	"dlfs_files_read_total",
	"dlfs_direct_reads_followed_total",
	"dlfs_served_bytes_total",
	"dlfs_direct_read_bytes_total{tier=\"ram\"}",
	"dlfs_direct_read_bytes_total{tier=\"nvme\"}",
	"dlfs_tier_read_bytes_total{tier=\"ram\"}",
	"dlfs_tier_read_bytes_total{tier=\"nvme\"}",
	"dlfs_tier_read_bytes_total{tier=\"peer\"}",
	"dlfs_tier_read_bytes_total{tier=\"pfs\"}",
	"dlfs_tier_hits_total{tier=\"ram\"}",
	"dlfs_tier_misses_total{tier=\"ram\"}",
	"dlfs_tier_hits_total{tier=\"nvme\"}",
	"dlfs_tier_misses_total{tier=\"nvme\"}",
	"dlfs_pfs_reads_in_flight",
};

struct sample {
	double t; /* CLOCK_MONOTONIC seconds when read */
	double v[V_COUNT];
};

static double mono(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Take the mount label (every series has it first) out of a series
 * name, in place: dlfs_x{mount="M",a="b"} -> dlfs_x{a="b"}, and
 * dlfs_x{mount="M"} -> dlfs_x. */
static void unlabel(char *line)
{
	char *b = strstr(line, "{mount=\"");
	if (!b)
		return;
	char *q = b + 8;
	while (*q && *q != '"')
		q += *q == '\\' && q[1] ? 2 : 1;
	if (!*q)
		return;
	q++;
	if (*q == ',')
		memmove(b + 1, q + 1, strlen(q + 1) + 1);
	else if (*q == '}')
		memmove(b, q + 1, strlen(q + 1) + 1);
}

/* Pick the series out of the text. @return 0, or -1 when one is
 * missing (not dlfs's metrics). */
static int parse(char *text, struct sample *s)
{
	unsigned found = 0;
	char *save = NULL;
	for (char *line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		if (line[0] == '#' || line[0] == ' ')
			continue;
		char *sp = strrchr(line, ' ');
		if (!sp)
			continue;
		*sp = '\0';
		unlabel(line);
		for (int i = 0; i < V_COUNT; i++)
			if (!strcmp(line, series[i])) {
				s->v[i] = strtod(sp + 1, NULL);
				found |= 1u << i;
			}
	}
	return found == (1u << V_COUNT) - 1 ? 0 : -1;
}

/* Read the metrics once. @return 0, or -1 after saying why. */
static int take(const char *mnt, struct sample *s)
{
	char path[4096];
	FILE *f = dlfs_live_open(mnt, "metrics", path, sizeof(path));
	const char *sock = getenv(ATTACH_ENV);
	if (!f && sock && !strcmp(mnt, ATTACH_PREFIX)) {
		fprintf(stderr,
			PROG ": top: --socket %s: no dlfs-run server answers "
			     "there: %s\n",
			sock, strerror(errno));
		return -1;
	}
	if (!f) {
		fprintf(stderr,
			PROG ": top: %s: not a dlfs mount? cannot open %s: "
			     "%s\n",
			mnt, path, strerror(errno));
		return -1;
	}
	char *buf = NULL;
	size_t cap = 0;
	ssize_t n = getdelim(&buf, &cap, '\0', f);
	int rerr = ferror(f) ? errno : 0;
	fclose(f);
	s->t = mono();
	int ret = 0;
	if (n <= 0 || rerr) {
		fprintf(stderr, PROG ": top: %s: %s\n", path,
			rerr ? strerror(rerr) : "empty");
		ret = -1;
	} else if (parse(buf, s)) {
		fprintf(stderr,
			PROG ": top: %s: not the metrics of a dlfs mount (of "
			     "another version?)\n",
			path);
		ret = -1;
	}
	free(buf);
	return ret;
}

static void header(void)
{
	/* 75 columns: a row fits a terminal of 80. */
	printf("%8s %8s %7s %7s %7s %7s %7s %5s %5s %5s\n", "time", "files/s",
	       "MB/s", "ram", "nvme", "peer", "pfs", "ram%", "nvme%",
	       "pfs-q");
}

/* A hit ratio in percent, or "-" when there were no lookups. */
static void ratio(char *out, size_t len, double hits, double misses)
{
	if (hits + misses <= 0)
		snprintf(out, len, "-");
	else
		snprintf(out, len, "%.1f", 100.0 * hits / (hits + misses));
}

static void row(const struct sample *a, const struct sample *b)
{
	double dt = b->t - a->t, d[V_COUNT];
	char when[16], rh[16], nh[16];
	time_t now = time(NULL);
	struct tm tm;
	if (dt <= 0)
		dt = 1e-9;
	for (int i = 0; i < V_COUNT; i++)
		d[i] = b->v[i] - a->v[i];
	strftime(when, sizeof(when), "%H:%M:%S", localtime_r(&now, &tm));
	ratio(rh, sizeof(rh), d[V_RAM_HITS], d[V_RAM_MISSES]);
	ratio(nh, sizeof(nh), d[V_NVME_HITS], d[V_NVME_MISSES]);
	const double mb = 1e6 * dt;
	printf("%8s %8.0f %7.1f %7.1f %7.1f %7.1f %7.1f %5s %5s %5.0f\n", when,
	       (d[V_FILES] + d[V_FILES_DIRECT]) / dt,
	       (d[V_SERVED] + d[V_DIRECT_RAM] + d[V_DIRECT_NVME]) / mb,
	       (d[V_RAM] + d[V_DIRECT_RAM]) / mb,
	       (d[V_NVME] + d[V_DIRECT_NVME]) / mb, d[V_PEER] / mb,
	       d[V_PFS] / mb, rh, nh, b->v[V_INFLIGHT]);
}

static int top_usage(const char *why)
{
	fprintf(stderr,
		PROG ": top: %s\nusage: " PROG
		     " top MOUNTPOINT|--socket SOCKET [-i SECONDS] [-n "
		     "COUNT]\n",
		why);
	return 2;
}

/* Wait until deadline (CLOCK_MONOTONIC seconds) with SIGINT and SIGTERM
 * blocked in set. @return 1 if one of them came. */
static int wait_until(double deadline, const sigset_t *set)
{
	for (;;) {
		double left = deadline - mono();
		if (left <= 0)
			return 0;
		struct timespec ts = {(time_t)left,
				      (long)((left - (double)(time_t)left) *
					     1e9)};
		int sig = sigtimedwait(set, NULL, &ts);
		if (sig > 0)
			return 1;
		if (errno != EAGAIN && errno != EINTR)
			return 0;
	}
}

/* SOCK is a directory: name the server sockets in it. @return 2. */
static int list_sockets(const char *sock)
{
	DIR *d = opendir(sock);
	int n = 0;
	fprintf(stderr, PROG ": top: --socket %s: a directory; ", sock);
	for (struct dirent *e; d && (e = readdir(d));) {
		size_t len = strlen(e->d_name);
		if (len > 5 && !strcmp(e->d_name + len - 5, ".sock"))
			fprintf(stderr, "%s%s/%s", n++ ? ", " : "give one of: ",
				sock, e->d_name);
	}
	if (!n)
		fprintf(stderr, "no dlfs-run server's socket (KEY.sock) is in "
				"it");
	fputc('\n', stderr);
	if (d)
		closedir(d);
	return 2;
}

/*
 * top --socket SOCK: run this program again with libdlfs-preload.so
 * preloaded and told that SOCK's server is at ATTACH_PREFIX, as dlfs-run
 * does for its command, to read ATTACH_PREFIX/.dlfs/metrics. argv is
 * top's, whose --socket and SOCK (at i) become ATTACH_PREFIX. @return
 * only on failure: the exit status, after a message.
 */
static int attach(int argc, char **argv, int i)
{
	const char *sock = argv[i + 1];
	struct stat st;
	if (stat(sock, &st) < 0) {
		fprintf(stderr, PROG ": top: --socket %s: %s\n", sock,
			strerror(errno));
		return 1;
	}
	if (S_ISDIR(st.st_mode))
		return list_sockets(sock);
	if (!S_ISSOCK(st.st_mode) || sock[0] != '/') {
		fprintf(stderr,
			PROG ": top: --socket %s: not %s (a dlfs-run server's "
			     "is DIR/dlfs-run-UID/KEY.sock; see dlfs-run(1))\n",
			sock, sock[0] != '/' ? "an absolute path" : "a socket");
		return 2;
	}
	char lib[PATH_MAX], exe[PATH_MAX], conf[PATH_MAX + 64];
	if (dlfs_part_preload(lib, sizeof(lib))) {
		fprintf(stderr, PROG ": top: cannot find libdlfs-preload.so "
				     "(or set $DLFS_PRELOAD_LIB)\n");
		return 1;
	}
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n < 0) {
		fprintf(stderr, PROG ": top: /proc/self/exe: %s\n",
			strerror(errno));
		return 1;
	}
	exe[n] = '\0';
	snprintf(conf, sizeof(conf), "%s=%s", ATTACH_PREFIX, sock);
	char **av = calloc((size_t)argc + 2, sizeof(*av));
	if (!av) {
		fprintf(stderr, PROG ": top: out of memory\n");
		return 1;
	}
	int k = 0;
	av[k++] = PROG;
	for (int j = 0; j < argc; j++)
		if (j == i)
			av[k++] = ATTACH_PREFIX;
		else if (j != i + 1)
			av[k++] = argv[j];
	if (setenv("DLFS_PRELOAD", conf, 1) || setenv("LD_PRELOAD", lib, 1) ||
	    setenv(ATTACH_ENV, sock, 1)) {
		fprintf(stderr, PROG ": top: setenv: %s\n", strerror(errno));
		free(av);
		return 1;
	}
	execv(exe, av);
	fprintf(stderr, PROG ": top: %s: %s\n", exe, strerror(errno));
	free(av);
	return 1;
}

/* What top was asked for. */
struct top_args {
	const char *mnt;
	double interval;
	long count; /* -1: until interrupted */
};

#define TOP_GO_ON -1

/* -i SECONDS or -n COUNT, whose value is v. @return TOP_GO_ON or the
 * status to exit with, after the usage. */
static int top_value(const char *a, const char *v, struct top_args *t)
{
	char why[256], *end;
	errno = 0;
	if (a[1] == 'i') {
		t->interval = strtod(v, &end);
		if (errno || end == v || *end ||
		    !(t->interval >= 0.01 && t->interval <= 86400)) {
			snprintf(why, sizeof(why),
				 "-i '%s': the interval must be seconds from "
				 "0.01 to 86400",
				 v);
			return top_usage(why);
		}
		return TOP_GO_ON;
	}
	t->count = strtol(v, &end, 10);
	if (errno || end == v || *end || t->count < 1) {
		snprintf(why, sizeof(why),
			 "-n '%s': the count must be a whole number of rows, "
			 "1 or more",
			 v);
		return top_usage(why);
	}
	return TOP_GO_ON;
}

/* top's arguments into t; --socket runs top again (attach). @return
 * TOP_GO_ON, or the status to exit with. */
static int top_parse(int argc, char **argv, struct top_args *t)
{
	char why[256];
	*t = (struct top_args){.interval = 1, .count = -1};
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		int st = TOP_GO_ON;
		if (!strcmp(a, "-i") || !strcmp(a, "-n")) {
			if (i + 1 == argc) {
				snprintf(why, sizeof(why), "%s needs a value",
					 a);
				return top_usage(why);
			}
			st = top_value(a, argv[++i], t);
		} else if (!strcmp(a, "--socket")) {
			if (i + 1 == argc)
				return top_usage("--socket needs a value");
			if (t->mnt)
				return top_usage("a MOUNTPOINT or --socket, "
						 "not both");
			return attach(argc, argv, i);
		} else if (a[0] == '-' && a[1]) {
			snprintf(why, sizeof(why), "unknown option '%s'", a);
			return top_usage(why);
		} else if (!t->mnt) {
			t->mnt = a;
		} else {
			return top_usage("one MOUNTPOINT only");
		}
		if (st != TOP_GO_ON)
			return st;
	}
	return t->mnt ? TOP_GO_ON : top_usage("no MOUNTPOINT given");
}

int dlfs_live_top(int argc, char **argv)
{
	struct top_args t;
	int st = top_parse(argc, argv, &t);
	if (st != TOP_GO_ON)
		return st;
	const char *mnt = t.mnt;

	/* Signals are taken in the waits, so that ^C ends it cleanly. */
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigprocmask(SIG_BLOCK, &set, NULL);
	struct sample prev, cur;
	if (take(mnt, &prev))
		return 1;
	/* What the rates cannot show, said once where a person looks. */
	if (isatty(STDERR_FILENO))
		fprintf(stderr, "(reads the kernel serves from its page cache "
				"never reach dlfs, and are not counted here)\n");
	double next = prev.t;
	for (long n = 0; t.count < 0 || n < t.count; n++) {
		next += t.interval;
		if (wait_until(next, &set))
			break;
		if (take(mnt, &cur))
			return 1;
		if (n % HEADER_EVERY == 0)
			header();
		row(&prev, &cur);
		if (fflush(stdout))
			return 1;
		prev = cur;
	}
	return 0;
}
