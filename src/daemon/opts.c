/* The daemon's options, one table: see opts.h. */
#include "opts.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "dlfs/format.h"
#include "util.h"

enum kind { K_SIZE, K_UINT, K_STR, K_FLAG, K_ENUM, K_SEED };

struct row {
	const char *name;
	enum kind kind;
	size_t off, width;          /* the field in struct dlfs_opts */
	uint64_t min, max;          /* K_UINT, K_SIZE */
	const char *const *values;  /* K_ENUM: the names, by value */
	const char *need;           /* it needs this other option too */
	const char *arg, *help;     /* for the usage */
	const char *bad;            /* what a bad value is told */
};

static const char *const policies[] = {"keep", "lru", NULL};
static const char *const pfs_ios[] = {"buffered", "direct", NULL};
static const char *const units[] = {"auto", "chunk", "file", NULL};
static const char *const shuffles[] = {"global", "chunked", "local", NULL};
static const char *const fills[] = {"none", "auto", "home", "all", NULL};

#define F(field) offsetof(struct dlfs_opts, field), sizeof(((struct dlfs_opts *)0)->field)

static const struct row rows[] = {
	{"ram_cache", K_SIZE, F(rd.ram_cache), 1, UINT64_MAX, NULL, NULL,
	 "SIZE", "RAM chunk cache (default 1G)", "not a size (e.g. 512M, 4G)"},
	{"max_threads", K_UINT, F(max_threads), 1, 1024, NULL, NULL, "N",
	 "FUSE worker threads (default: 2 per CPU, 4 to 64)",
	 "a number from 1 to 1024"},
	{"cache_dir", K_STR, F(cache_dir), 0, 0, NULL, NULL, "DIR",
	 "node-local NVMe cache tier in DIR", "empty path"},
	{"cache_size", K_SIZE, F(rd.cache_size), 1, UINT64_MAX, NULL,
	 "cache_dir", "SIZE",
	 "its bound (default: the dataset, within 90% of DIR's free space)",
	 "not a size (e.g. 100G)"},
	{"cache_policy", K_ENUM, F(rd.cache_policy), 0, 0, policies,
	 "cache_dir", "keep|lru", "once the tier is full (default keep)",
	 "unknown policy (keep or lru)"},
	{"readahead", K_SIZE, F(rd.readahead), 0, UINT64_MAX, NULL, NULL,
	 "SIZE", "sequential read-ahead window, 0 = off (default 64M)",
	 "not a size (e.g. 64M, or 0 for none)"},
	{"kernel_readahead", K_SIZE, F(kernel_readahead), 0, UINT64_C(1) << 30,
	 NULL, NULL, "SIZE",
	 "the kernel's read-ahead on the mount, 0 = its own (default 1M)",
	 "not a size up to 1G (e.g. 1M, or 0)"},
	{"pfs_depth", K_UINT, F(rd.pfs_depth), 0, 64, NULL, NULL, "N",
	 "background PFS reads in flight, 0 = none (default 8)",
	 "not a number from 0 to 64"},
	{"prefetch_threads", K_UINT, F(rd.pfs_depth), 0, 64, NULL, NULL, "N",
	 "the old name of pfs_depth", "not a number from 0 to 64"},
	{"pfs_io", K_ENUM, F(rd.pfs_direct), 0, 0, pfs_ios, NULL,
	 "direct|buffered", "container reads (default direct)",
	 "buffered or direct"},
	{"read_unit", K_ENUM, F(rd.read_unit), 0, 0, units, NULL,
	 "auto|chunk|file",
	 "unit of a PFS read on a miss (default auto)",
	 "auto, chunk or file"},
	{"shuffle", K_ENUM, F(shuffle), 0, 0, shuffles, NULL,
	 "global|chunked|local", "epoch views' order (default global)",
	 "global, chunked or local"},
	{"shuffle_window", K_UINT, F(shuffle_window), 1, 1u << 20, NULL, NULL,
	 "N", "chunks per window, chunked (default 16)",
	 "a number of chunks from 1 to 1048576"},
	{"seed", K_SEED, F(seed), 0, UINT64_MAX, NULL, NULL, "N|random",
	 "epoch order seed (default: from the dataset id)",
	 "a number from 0 to 18446744073709551615, or random"},
	{"stage", K_ENUM, F(rd.fill), 0, 0, fills, NULL,
	 "none|auto|home|all",
	 "fill the tiers in the background (default auto)",
	 "none, auto, home or all"},
	{"peer_timeout", K_UINT, F(peer_timeout_ms), 1, 3600000, NULL, NULL,
	 "MS", "silence after which a peer is gone (default 60000)",
	 "milliseconds from 1 to 3600000"},
	{"join_timeout", K_UINT, F(join_timeout_s), 1, 86400, NULL, NULL, "S",
	 "wait for every MPI rank to join, then exit 1 (default 120)",
	 "seconds from 1 to 86400"},
	{"ctl_dir", K_STR, F(ctl_dir), 0, 0, NULL, NULL, "NAME",
	 "name of the control directory at the root (default .dlfs)",
	 "empty name"},
	{"mpi", K_FLAG, F(mpi), 0, 0, NULL, NULL, NULL,
	 "join an MPI job even without a launcher", NULL},
	{"nonempty", K_FLAG, F(nonempty), 0, 0, NULL, NULL, NULL,
	 "mount over a directory that is not empty, or another mount", NULL},
};
#define N_ROWS (sizeof(rows) / sizeof(rows[0]))

/* The -o options libfuse and mount(8)'s helpers take, which dlfs passes
 * on: any other that is not dlfs's own is refused here, by name, with
 * the closest known one, before libfuse would refuse it unnamed. */
static const char *const fuse_known[] = {
	"allow_other", "allow_root", "auto_unmount", "default_permissions",
	"fsname", "subtype", "max_read", "blkdev", "blksize", "debug",
	"clone_fd", "max_idle_threads", "max_threads", "rw", "ro", "suid",
	"nosuid", "dev", "nodev", "exec", "noexec", "async", "sync", "atime",
	"noatime", "diratime", "nodiratime", "lazytime", "nolazytime",
	"relatime", "norelatime", "strictatime", "nostrictatime", "dirsync",
	"symfollow", "nosymfollow", "context", "fscontext", "defcontext",
	"rootcontext", "user", "users", "nofail", "_netdev", "auto", "noauto",
	"defaults", "comment", "setuid", "drop_privileges",
};
#define N_FUSE_KNOWN (sizeof(fuse_known) / sizeof(fuse_known[0]))

/* -o arg is neither dlfs's nor libfuse's: say so, and what was meant.
 * @return 0 when it is libfuse's (to pass on), -1 when refused. */
static int unknown_opt(const char *arg)
{
	char name[64];
	snprintf(name, sizeof(name), "%.*s", (int)strcspn(arg, "="), arg);
	for (unsigned i = 0; i < N_FUSE_KNOWN; i++)
		if (!strcmp(name, fuse_known[i]))
			return 0;
	if (!strncmp(name, "x-", 2)) /* fstab's, for other programs */
		return 0;
	const char *cands[N_ROWS + N_FUSE_KNOWN];
	for (unsigned i = 0; i < N_ROWS; i++)
		cands[i] = rows[i].name;
	for (unsigned i = 0; i < N_FUSE_KNOWN; i++)
		cands[N_ROWS + i] = fuse_known[i];
	const char *near = dlfs_closest(name, cands, N_ROWS + N_FUSE_KNOWN);
	if (near)
		fprintf(stderr,
			"dlfs: unknown option -o %s: did you mean %s? (dlfs "
			"--help lists them)\n",
			name, near);
	else
		fprintf(stderr,
			"dlfs: unknown option -o %s (dlfs --help lists them)\n",
			name);
	return -1;
}
#define KEY_BASE 100

struct parse {
	struct dlfs_opts *o;
	unsigned given[N_ROWS];
	char value[N_ROWS][256]; /* as given, for messages */
	int bad;
};

/* A whole decimal number. @return 0 or -EINVAL. */
static int parse_u64(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (!*s || *end || errno || *s == '-')
		return -EINVAL;
	*out = v;
	return 0;
}

static void store(void *field, size_t width, uint64_t v)
{
	if (width == sizeof(uint64_t)) {
		uint64_t x = v;
		memcpy(field, &x, sizeof(x));
	} else {
		unsigned x = (unsigned)v;
		memcpy(field, &x, sizeof(x));
	}
}

/* Parse value into the row's field. @return 0 or -EINVAL. */
static int set(const struct row *r, struct dlfs_opts *o, const char *value)
{
	void *field = (char *)o + r->off;
	uint64_t v;
	switch (r->kind) {
	case K_SIZE:
		if (dlfs_parse_size(value, &v) || v < r->min || v > r->max)
			return -EINVAL;
		store(field, r->width, v);
		return 0;
	case K_UINT:
		if (parse_u64(value, &v) || v < r->min || v > r->max)
			return -EINVAL;
		store(field, r->width, v);
		return 0;
	case K_ENUM:
		for (unsigned i = 0; r->values[i]; i++)
			if (!strcmp(value, r->values[i])) {
				store(field, r->width, i);
				return 0;
			}
		return -EINVAL;
	case K_STR: {
		char **s = field;
		if (!*value)
			return -EINVAL;
		free(*s);
		*s = strdup(value);
		return *s ? 0 : -ENOMEM;
	}
	case K_FLAG:
		store(field, r->width, 1);
		return 0;
	case K_SEED:
		if (!strcmp(value, "random")) {
			o->seed_from = DLFS_SEED_RANDOM;
			return 0;
		}
		if (parse_u64(value, &v))
			return -EINVAL;
		o->seed = v;
		o->seed_from = DLFS_SEED_GIVEN;
		return 0;
	}
	return -EINVAL;
}

static int opt_proc(void *data, const char *arg, int key,
		    struct fuse_args *outargs)
{
	struct parse *p = data;
	struct dlfs_opts *o = p->o;
	(void)outargs;
	if (key >= KEY_BASE && key < KEY_BASE + (int)N_ROWS) {
		const struct row *r = &rows[key - KEY_BASE];
		const char *value = r->kind == K_FLAG
					    ? ""
					    : arg + strlen(r->name) + 1;
		p->given[key - KEY_BASE]++;
		snprintf(p->value[key - KEY_BASE], sizeof(p->value[0]), "%s",
			 value);
		if (set(r, o, value)) {
			fprintf(stderr, "dlfs: -o %s=%s: %s\n", r->name, value,
				r->bad);
			p->bad = 1;
		}
		return 0;
	}
	if (key == FUSE_OPT_KEY_NONOPT && !o->dataset) {
		o->dataset = strdup(arg);
		return o->dataset ? 0 : -1;
	}
	if (key == FUSE_OPT_KEY_NONOPT && !o->mountpoint)
		o->mountpoint = strdup(arg);
	if (key == FUSE_OPT_KEY_OPT &&
	    (!strcmp(arg, "-h") || !strcmp(arg, "--help")))
		o->show_help = 1;
	if (key == FUSE_OPT_KEY_OPT && arg[0] != '-' && unknown_opt(arg)) {
		p->bad = 1;
		return 0;
	}
	if (key == FUSE_OPT_KEY_OPT && !strcmp(arg, "allow_other"))
		o->allow_other = "allow_other";
	if (key == FUSE_OPT_KEY_OPT && !strcmp(arg, "allow_root"))
		o->allow_other = "allow_root";
	return 1;
}

static int given(const struct parse *p, const char *name)
{
	for (unsigned i = 0; i < N_ROWS; i++)
		if (!strcmp(rows[i].name, name) && p->given[i])
			return 1;
	return 0;
}

/* A relative path made absolute against the working directory, as typed
 * otherwise (no link resolved, a leading ./ dropped): .dlfs/info and the
 * metrics' dataset label name it for programs that run elsewhere.
 * @return 0 or -ENOMEM (-errno: no working directory). */
static int absolute(char **path)
{
	if (!*path || (*path)[0] == '/')
		return 0;
	char *cwd = getcwd(NULL, 0), *a = NULL;
	if (!cwd)
		return -errno;
	const char *p = *path;
	while (p[0] == '.' && (p[1] == '/' || !p[1])) {
		p += p[1] ? 2 : 1;
		while (*p == '/')
			p++;
	}
	int n = asprintf(&a, "%s%s%s", cwd,
			 *p && strcmp(cwd, "/") ? "/" : "", p);
	free(cwd);
	if (n < 0)
		return -ENOMEM;
	free(*path);
	*path = a;
	return 0;
}

int dlfs_opts_parse(struct fuse_args *args, struct dlfs_opts *o)
{
	struct parse p = {.o = o};
	struct fuse_opt fo[N_ROWS + 1];
	char templ[N_ROWS][64];
	memset(o, 0, sizeof(*o));
	o->rd.ram_cache = UINT64_C(1) << 30;
	o->rd.cache_policy = DLFS_POLICY_KEEP;
	o->rd.readahead = UINT64_C(64) << 20;
	o->kernel_readahead = UINT64_C(1) << 20;
	o->rd.pfs_depth = 8;
	o->rd.pfs_direct = 1; /* measured faster: tools/bench/epoch */
	o->rd.fill = DLFS_FILL_AUTO;
	o->rd.read_unit = DLFS_UNIT_AUTO;
	o->shuffle = DLFS_SHUFFLE_GLOBAL;
	o->shuffle_window = 16;
	o->peer_timeout_ms = 60000; /* peer.h: DLFS_PEER_TIMEOUT_DEFAULT_MS */
	o->join_timeout_s = 120;
	for (unsigned i = 0; i < N_ROWS; i++) {
		snprintf(templ[i], sizeof(templ[i]), "%s%s", rows[i].name,
			 rows[i].kind == K_FLAG ? "" : "=");
		fo[i] = (struct fuse_opt)FUSE_OPT_KEY(templ[i],
						      KEY_BASE + (int)i);
	}
	fo[N_ROWS] = (struct fuse_opt)FUSE_OPT_END;
	if (fuse_opt_parse(args, &p, fo, opt_proc) < 0 || p.bad)
		return 2;
	if (o->show_help)
		return 1;
	int e = absolute(&o->dataset);
	if (e) {
		fprintf(stderr, "dlfs: %s: cannot make it absolute: %s\n",
			o->dataset, strerror(-e));
		return 2;
	}
	for (unsigned i = 0; i < N_ROWS; i++)
		if (p.given[i] && rows[i].need && !given(&p, rows[i].need)) {
			fprintf(stderr, "dlfs: -o %s=%s: needs -o %s=DIR\n",
				rows[i].name, p.value[i], rows[i].need);
			return 2;
		}
	if ((o->rd.fill == DLFS_FILL_HOME || o->rd.fill == DLFS_FILL_ALL) &&
	    !o->cache_dir) {
		fprintf(stderr,
			"dlfs: -o stage=%s: needs -o cache_dir=DIR (it fills "
			"the NVMe tier)\n",
			dlfs_fill_mode_name(o->rd.fill));
		return 2;
	}
	if (o->ctl_dir && (strchr(o->ctl_dir, '/') || !strcmp(o->ctl_dir, ".") ||
			   !strcmp(o->ctl_dir, "..") ||
			   strlen(o->ctl_dir) > DLFS_NAME_MAX)) {
		fprintf(stderr,
			"dlfs: -o ctl_dir=%s: a name of 1 to %d bytes, without "
			"'/', not . or ..\n",
			o->ctl_dir, DLFS_NAME_MAX);
		return 2;
	}
	o->kernel_readahead_given = given(&p, "kernel_readahead");
	if (o->seed_from == DLFS_SEED_RANDOM &&
	    getrandom(&o->seed, sizeof(o->seed), 0) != sizeof(o->seed))
		o->seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
	o->rd.cache_dir = o->cache_dir;
	return 0;
}

const char *dlfs_seed_from_name(enum dlfs_seed_from f)
{
	static const char *const names[] = {"dataset", "option", "random"};
	return (unsigned)f < 3 ? names[f] : "?";
}

void dlfs_opts_usage(void)
{
	printf("dlfs options:\n");
	for (unsigned i = 0; i < N_ROWS; i++) {
		char left[64];
		snprintf(left, sizeof(left), "-o %s%s%s", rows[i].name,
			 rows[i].arg ? "=" : "", rows[i].arg ? rows[i].arg : "");
		printf("    %-28s %s\n", left, rows[i].help);
	}
}

void dlfs_opts_free(struct dlfs_opts *o)
{
	free(o->dataset);
	free(o->mountpoint);
	free(o->cache_dir);
	free(o->ctl_dir);
}

const char *dlfs_fill_mode_name(enum dlfs_fill_mode m)
{
	return fills[m];
}
