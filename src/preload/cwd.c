/*
 * cwd: the virtual cwd, and the real cwd's place (see cwd.h).
 *
 * vcwd_state is OFF, PENDING (inherited through DLFS_PRELOAD_CWD and not
 * yet resolved: resolving needs the server, so it waits for the first
 * call that needs the cwd) or ON.
 */
#include "cwd.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ns.h"
#include "state.h"
#include "real.h"

enum { OFF, PENDING, ON };

static pthread_mutex_t vcwd_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int vcwd_state;
static char vcwd_path[PATH_MAX];
static char vcwd_real[PATH_MAX]; /* the kernel's cwd when it was set */
static uint64_t vcwd_ino;
static struct stat vcwd_st;
static int vcwd_vol;

/* The kernel's cwd, through the real getcwd; errno as it was.
 * @return 0 or -1. */
static int real_cwd(char *buf, size_t size)
{
	int saved = errno;
	int ok = dlfs_real()->getcwd(buf, size) != NULL;
	errno = saved;
	return ok ? 0 : -1;
}

/* Is vpath the prefix or under it? */
static int under_prefix(const char *vpath, size_t len)
{
	size_t pl = dlfs_pl.root.prefix_len;
	return len >= pl && !memcmp(vpath, dlfs_pl.prefix, pl) &&
	       (len == pl || vpath[pl] == '/');
}

/* Parse "N:" VPATH REAL into vcwd_path and vcwd_real. @return 0 or -1. */
static int parse_env(const char *v)
{
	char *end;
	unsigned long n = strtoul(v, &end, 10);
	if (end == v || *end != ':' || n >= PATH_MAX || strnlen(end + 1, n) < n)
		return -1;
	const char *vpath = end + 1, *real = vpath + n;
	if (!under_prefix(vpath, n) || real[0] != '/' ||
	    strlen(real) >= sizeof(vcwd_real))
		return -1;
	memcpy(vcwd_path, vpath, n);
	vcwd_path[n] = '\0';
	strcpy(vcwd_real, real);
	return 0;
}

void dlfs_cwd_init(void)
{
	const char *v = getenv(DLFS_CWD_ENV);
	char here[PATH_MAX];
	if (!v)
		return;
	if (!parse_env(v) && !real_cwd(here, sizeof(here)) &&
	    !strcmp(here, vcwd_real)) {
		atomic_store(&vcwd_state, PENDING);
		return;
	}
	/* Stale: the kernel's cwd is not the one it was set in. */
	dlfs_real()->unsetenv(DLFS_CWD_ENV);
}

/* Write DLFS_PRELOAD_CWD's value for the current virtual cwd into buf
 * (caller holds vcwd_lock). @return 0, or -1 if it does not fit. */
static int env_value(char *buf, size_t size)
{
	size_t n = strlen(vcwd_path);
	int w = snprintf(buf, size, "%zu:%s%s", n, vcwd_path, vcwd_real);
	return w < 0 || (size_t)w >= size ? -1 : 0;
}

/* environ follows the virtual cwd (the caller owns the memory). */
static void env_update(void)
{
	char v[2 * PATH_MAX + 32];
	int on;
	pthread_mutex_lock(&vcwd_lock);
	on = atomic_load(&vcwd_state) != OFF && !env_value(v, sizeof(v));
	pthread_mutex_unlock(&vcwd_lock);
	if (on)
		dlfs_real()->setenv(DLFS_CWD_ENV, v, 1);
	else
		dlfs_real()->unsetenv(DLFS_CWD_ENV);
}

/* An inherited virtual cwd, resolved on first use. */
static pthread_once_t adopt_once = PTHREAD_ONCE_INIT;

static void adopt(void)
{
	struct dlfs_vp_res *res = malloc(sizeof(*res));
	int ok = res && !dlfs_ns_resolve(NULL, vcwd_path, 0, res) &&
		 res->kind == DLFS_VP_OURS && S_ISDIR(res->st.st_mode);
	pthread_mutex_lock(&vcwd_lock);
	if (atomic_load(&vcwd_state) == PENDING) {
		if (ok) {
			strcpy(vcwd_path, res->path);
			vcwd_ino = res->ino;
			vcwd_st = res->st;
			vcwd_vol = res->vol;
		}
		atomic_store(&vcwd_state, ok ? ON : OFF);
	}
	pthread_mutex_unlock(&vcwd_lock);
	free(res);
}

static void inherit(void)
{
	if (atomic_load(&vcwd_state) == PENDING)
		pthread_once(&adopt_once, adopt);
}

int dlfs_vcwd_set(const char *vpath, uint64_t ino, const struct stat *st,
		  int vol)
{
	char here[PATH_MAX];
	inherit();
	if (strlen(vpath) >= sizeof(vcwd_path))
		return -ENAMETOOLONG;
	if (real_cwd(here, sizeof(here)))
		here[0] = '\0'; /* no real cwd: no program will take it */
	pthread_mutex_lock(&vcwd_lock);
	strcpy(vcwd_path, vpath);
	strcpy(vcwd_real, here);
	vcwd_ino = ino;
	vcwd_st = *st;
	vcwd_vol = vol;
	atomic_store(&vcwd_state, ON);
	pthread_mutex_unlock(&vcwd_lock);
	env_update();
	return 0;
}

void dlfs_vcwd_clear(void)
{
	inherit();
	if (atomic_load(&vcwd_state) == OFF)
		return;
	pthread_mutex_lock(&vcwd_lock);
	atomic_store(&vcwd_state, OFF);
	pthread_mutex_unlock(&vcwd_lock);
	env_update();
}

int dlfs_vcwd_get(char *buf, size_t size, uint64_t *ino, struct stat *st,
		  int *vol)
{
	inherit();
	if (atomic_load(&vcwd_state) != ON)
		return 0;
	int on;
	pthread_mutex_lock(&vcwd_lock);
	on = atomic_load(&vcwd_state) == ON && strlen(vcwd_path) < size;
	if (on) {
		strcpy(buf, vcwd_path);
		if (ino)
			*ino = vcwd_ino;
		if (st)
			*st = vcwd_st;
		if (vol)
			*vol = vcwd_vol;
	}
	pthread_mutex_unlock(&vcwd_lock);
	return on;
}

void dlfs_cwd_env(char *buf, size_t size)
{
	static const char name[] = DLFS_CWD_ENV "=";
	buf[0] = '\0';
	if (atomic_load(&vcwd_state) == OFF || size <= sizeof(name))
		return;
	pthread_mutex_lock(&vcwd_lock);
	if (atomic_load(&vcwd_state) != OFF) {
		memcpy(buf, name, sizeof(name) - 1);
		if (env_value(buf + sizeof(name) - 1, size - sizeof(name) + 1))
			buf[0] = '\0';
	}
	pthread_mutex_unlock(&vcwd_lock);
}

/*
 * The real cwd's place. Asked of the kernel once, and again after each
 * chdir; rcwd_state is 0 (not known), 1 (above the prefix: rcwd holds it)
 * or 2 (not above).
 */
static pthread_mutex_t rcwd_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int rcwd_state;
static char rcwd[PATH_MAX];

void dlfs_rcwd_changed(void)
{
	atomic_store(&rcwd_state, 0);
}

/* Ask the kernel where the cwd is (caller holds rcwd_lock). */
static void rcwd_learn(void)
{
	size_t pl = dlfs_pl.root.prefix_len, cl;
	int above = !real_cwd(rcwd, sizeof(rcwd));
	if (above) {
		cl = strlen(rcwd);
		if (cl == 1) /* "/" */
			cl = 0;
		above = cl < pl && !strncmp(rcwd, dlfs_pl.prefix, cl) &&
			dlfs_pl.prefix[cl] == '/';
	}
	atomic_store(&rcwd_state, above ? 1 : 2);
}

int dlfs_rcwd_base(const char *path, char *base, size_t size)
{
	if (atomic_load(&rcwd_state) == 2)
		return 0;
	pthread_mutex_lock(&rcwd_lock);
	if (!atomic_load(&rcwd_state))
		rcwd_learn();
	int ok = atomic_load(&rcwd_state) == 1;
	if (ok) {
		/* The next component of the prefix below the cwd. */
		size_t cl = strlen(rcwd) == 1 ? 0 : strlen(rcwd);
		const char *next = dlfs_pl.prefix + cl + 1;
		size_t nl = strcspn(next, "/");
		while (path[0] == '.' && path[1] == '/')
			path += 2;
		ok = (!strncmp(path, next, nl) &&
		      (path[nl] == '/' || !path[nl])) ||
		     dlfs_vp_maybe_ours(&dlfs_pl.root, path);
		if (ok && strlen(rcwd) < size)
			strcpy(base, rcwd);
		else
			ok = 0;
	}
	pthread_mutex_unlock(&rcwd_lock);
	return ok;
}

void dlfs_cwd_fork_prepare(void)
{
	pthread_mutex_lock(&vcwd_lock);
	pthread_mutex_lock(&rcwd_lock);
}

void dlfs_cwd_fork_parent(void)
{
	pthread_mutex_unlock(&rcwd_lock);
	pthread_mutex_unlock(&vcwd_lock);
}
