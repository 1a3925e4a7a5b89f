/*
 * ns: the preload's namespace calls (src/preload/ns.c) against a server
 * of the wire in a thread (tests/lib/wiresrv.c), over a real socket,
 * with the library's own conn.c under them. The fake dataset:
 *
 *   /ds (root, ino 1)   f (2, FSIZE bytes)   bad (5: EIO past BAD_AT)
 *   .dlfs/ (3, volatile)   .dlfs/stats (4, volatile, grows)
 *   .dlfs/dN/ (1000 + N, volatile, N < N_VOL)
 *   .dlfs/dN/x (5000 + N, volatile): there only once `appeared` is set
 *
 * READ answers at most SHORT bytes, so the read loop must ask again.
 *
 * What it checks, and a mutation of ns.c that each check catches:
 * - a LOOKUP answer is cached, found or not (one request for two walks):
 *   caught by never putting into the cache (`if (!vol && !*ent_vol)` made
 *   `if (0)`);
 * - nothing the server flags volatile is cached, and a volatile file's
 *   attributes are asked again (stats grows between two walks): caught
 *   by caching regardless of the flag (the put's condition made
 *   `if (!vol)`); what a walk resolves carries the server's flag, and a
 *   walk that stays at a volatile base asks for its attributes again:
 *   caught by dlfs_ns_resolve's `res->vol` made 0;
 * - a "no such name" in a volatile directory is never cached, however
 *   many volatile directories the process has seen: caught by the old
 *   set of NS_VOL_DIRS (256) volatile directories, past which the 300th
 *   directory's names were cached as stable; and dlfs_ns_lookup told
 *   its parent is volatile neither puts nor gets: caught by dropping
 *   `!vol &&` from the cache's put, or from its get;
 * - a virtual cwd inherited across exec in a volatile directory keeps
 *   the server's flag (its names are asked each time), as does one set
 *   by chdir: caught by adopt() in cwd.c not taking res->vol;
 * - the read loop asks again after a short reply, stops at the end, cuts
 *   requests at the server's max_io, and returns what it has when a
 *   later request fails: caught by `if (!got)` made `if (got < n)`, by
 *   dropping the max_io cut, and by returning the error alone
 *   (`return ret;`).
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tutil.h"

int t_failures;

#include "conn.h"
#include "cwd.h"
#include "ns.h"
#include "state.h"
#include "wiresrv.h"

#define FSIZE 100000u
#define SHORT 3000u
#define MAX_IO 8192u
#define BAD_AT 4000u
#define N_VOL 300
#define CTL 3
#define STATS 4
#define VDIR 1000
#define VFILE 5000

static atomic_int n_f, n_nope, n_ctl, n_stats, n_x0, n_x_last, n_served;
static atomic_int n_reads, big_read, appeared, late;

static uint8_t byte_at(uint64_t i)
{
	return (uint8_t)(i * 7 + 3);
}

static void attr(uint64_t ino, mode_t mode, off_t size, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_mode = mode;
	st->st_nlink = S_ISDIR(mode) ? 2 : 1;
	st->st_size = size;
}

/* The answer to LOOKUP (parent, name): 0 and the entry, or -ENOENT. */
static int find(uint64_t parent, const char *name, struct dlfs_wire_entry *e)
{
	memset(e, 0, sizeof(*e));
	if (parent == 1 && !strcmp(name, "f")) {
		atomic_fetch_add(&n_f, 1);
		e->ino = 2;
		attr(2, S_IFREG | 0444, FSIZE, &e->st);
		return 0;
	}
	if (parent == 1 && !strcmp(name, "bad")) {
		e->ino = 5;
		attr(5, S_IFREG | 0444, 10000, &e->st);
		return 0;
	}
	if (parent == 1 && !strcmp(name, ".dlfs")) {
		atomic_fetch_add(&n_ctl, 1);
		e->ino = CTL;
		e->flags = DLFS_WIRE_VOLATILE;
		attr(CTL, S_IFDIR | 0555, 0, &e->st);
		return 0;
	}
	if (parent == CTL && !strcmp(name, "stats")) {
		atomic_fetch_add(&n_stats, 1);
		e->ino = STATS;
		e->flags = DLFS_WIRE_VOLATILE;
		attr(STATS, S_IFREG | 0444, atomic_load(&n_served), &e->st);
		return 0;
	}
	int n = -1, k = 0;
	if (parent == CTL && sscanf(name, "d%d%n", &n, &k) == 1 && !name[k] &&
	    n >= 0 && n < N_VOL) {
		e->ino = VDIR + (uint64_t)n;
		e->flags = DLFS_WIRE_VOLATILE;
		attr(e->ino, S_IFDIR | 0555, 0, &e->st);
		return 0;
	}
	if (parent >= VDIR && parent < VDIR + N_VOL && !strcmp(name, "x")) {
		atomic_fetch_add(parent == VDIR ? &n_x0 : &n_x_last,
				 parent == VDIR || parent == VDIR + N_VOL - 1);
		if (!atomic_load(&appeared))
			return -ENOENT;
		e->ino = VFILE + parent - VDIR;
		e->flags = DLFS_WIRE_VOLATILE;
		attr(e->ino, S_IFREG | 0444, 1, &e->st);
		return 0;
	}
	if (parent == VDIR + 7 && !strcmp(name, "late") && atomic_load(&late)) {
		e->ino = 9000;
		e->flags = DLFS_WIRE_VOLATILE;
		attr(e->ino, S_IFREG | 0444, 1, &e->st);
		return 0;
	}
	if (parent == 1 && !strcmp(name, "nope"))
		atomic_fetch_add(&n_nope, 1);
	return -ENOENT;
}

static int do_read(int fd, const struct dlfs_wire_req *q)
{
	static uint8_t buf[SHORT];
	uint64_t size = q->ino == 2 ? FSIZE : 10000;
	atomic_fetch_add(&n_reads, 1);
	if (q->size > MAX_IO)
		atomic_store(&big_read, 1);
	if (q->ino == 5 && q->off >= BAD_AT)
		return ws_reply(fd, -EIO, 0, NULL, 0);
	uint64_t n = q->off < size ? size - q->off : 0;
	if (n > q->size)
		n = q->size;
	if (n > SHORT)
		n = SHORT;
	if (q->ino == 5 && q->off + n > BAD_AT)
		n = BAD_AT - q->off;
	for (uint64_t i = 0; i < n; i++)
		buf[i] = byte_at(q->off + i);
	return ws_reply(fd, 0, 0, buf, n);
}

static int handle(void *ctx, int fd, const struct dlfs_wire_req *q,
		  const char *name)
{
	(void)ctx;
	struct dlfs_wire_entry e;
	struct stat st;
	atomic_fetch_add(&n_served, 1);
	switch (q->op) {
	case DLFS_WIRE_HELLO:
		return ws_hello(fd, MAX_IO, 0);
	case DLFS_WIRE_LOOKUP: {
		int ret = find(q->ino, name, &e);
		return ws_reply(fd, ret, 0, ret ? NULL : &e,
				ret ? 0 : sizeof(e));
	}
	case DLFS_WIRE_GETATTR:
		if (q->ino == STATS || q->ino == CTL)
			attr(q->ino,
			     q->ino == CTL ? S_IFDIR | 0555 : S_IFREG | 0444,
			     atomic_load(&n_served), &st);
		else if (q->ino >= VDIR && q->ino < VDIR + N_VOL)
			attr(q->ino, S_IFDIR | 0555, 0, &st);
		else if (q->ino >= VFILE && q->ino < VFILE + N_VOL)
			attr(q->ino, S_IFREG | 0444, 1, &st);
		else
			return ws_reply(fd, -ENOENT, 0, NULL, 0);
		return ws_reply(fd, 0, 0, &st, sizeof(st));
	case DLFS_WIRE_READ:
		return do_read(fd, q);
	default:
		return ws_reply(fd, -ENOSYS, 0, NULL, 0);
	}
}

static struct dlfs_vp_res res;

static int resolve(const char *path)
{
	return dlfs_ns_resolve(NULL, path, 0, &res);
}

static void cache_use(void)
{
	CHECK_EQ(resolve("/ds/f"), 0);
	CHECK(res.kind == DLFS_VP_OURS && res.ino == 2 &&
	      res.st.st_size == FSIZE && !res.vol);
	CHECK_EQ(resolve("/ds/f"), 0);
	CHECK(res.kind == DLFS_VP_OURS && res.ino == 2 &&
	      res.st.st_size == FSIZE);
	CHECK_EQ(atomic_load(&n_f), 1);
	/* "No such name" is an answer too. */
	CHECK_EQ(resolve("/ds/nope"), -ENOENT);
	CHECK_EQ(resolve("/ds/nope"), -ENOENT);
	CHECK_EQ(atomic_load(&n_nope), 1);
}

static void volatile_bypass(void)
{
	CHECK_EQ(resolve("/ds/.dlfs/stats"), 0);
	off_t first = res.st.st_size;
	CHECK(res.kind == DLFS_VP_OURS && res.ino == STATS && res.vol);
	CHECK_EQ(resolve("/ds/.dlfs/stats"), 0);
	CHECK(res.kind == DLFS_VP_OURS && res.ino == STATS && res.vol);
	CHECK(res.st.st_size > first);
	CHECK_EQ(atomic_load(&n_ctl), 2);
	CHECK_EQ(atomic_load(&n_stats), 2);
	/* A walk that stays at a volatile base (a dir fd, the cwd) asks
	 * for its attributes again: the base's are old. */
	struct dlfs_vp_base b = {.path = "/ds/.dlfs", .ino = CTL, .vol = 1};
	b.st.st_mode = S_IFDIR | 0555;
	CHECK_EQ(dlfs_ns_resolve(&b, ".", 0, &res), 0);
	CHECK(res.kind == DLFS_VP_OURS && res.ino == CTL && res.vol &&
	      res.st.st_size > 0);
	/* A stable base's are not asked for. */
	int before = atomic_load(&n_served);
	struct dlfs_vp_base sb = {.path = "/ds", .ino = 1};
	sb.st.st_mode = S_IFDIR | 0555;
	CHECK_EQ(dlfs_ns_resolve(&sb, "f", 0, &res), 0);
	CHECK(res.ino == 2 && !res.vol);
	CHECK_EQ(atomic_load(&n_served), before);
}

/* Many volatile directories: a name missing in any of them is asked
 * again, and found once it is there. */
static void many_volatile(void)
{
	char p[64];
	for (int i = 0; i < N_VOL; i++) {
		snprintf(p, sizeof(p), "/ds/.dlfs/d%d/x", i);
		CHECK_EQ(resolve(p), -ENOENT);
	}
	atomic_store(&appeared, 1);
	snprintf(p, sizeof(p), "/ds/.dlfs/d%d/x", N_VOL - 1);
	CHECK_EQ(resolve(p), 0);
	CHECK(res.ino == VFILE + N_VOL - 1);
	CHECK_EQ(resolve("/ds/.dlfs/d0/x"), 0);
	CHECK(res.ino == VFILE);
	CHECK_EQ(atomic_load(&n_x0), 2);
	CHECK_EQ(atomic_load(&n_x_last), 2);
}

/* dlfs_ns_lookup's own word: told the parent is volatile, it neither
 * takes an answer from the cache nor puts one there. */
static void lookup_contract(void)
{
	uint64_t ino;
	struct stat st;
	int vol = -1;
	CHECK_EQ(dlfs_ns_lookup(VDIR + 7, 1, "late", 4, &ino, &st, &vol),
		 -ENOENT);
	CHECK_EQ(vol, 0);
	atomic_store(&late, 1);
	/* Nothing was put: a caller that (wrongly) calls it stable asks. */
	CHECK_EQ(dlfs_ns_lookup(VDIR + 7, 0, "late", 4, &ino, &st, &vol), 0);
	CHECK(ino == 9000 && vol == 1);
	atomic_store(&late, 0);
	/* A stable answer in the cache is not taken for a volatile parent. */
	CHECK_EQ(dlfs_ns_lookup(1, 0, "f", 1, &ino, &st, &vol), 0);
	int asked = atomic_load(&n_f);
	CHECK_EQ(dlfs_ns_lookup(1, 1, "f", 1, &ino, &st, &vol), 0);
	CHECK_EQ(atomic_load(&n_f), asked + 1);
}

/* A virtual cwd inherited across exec (DLFS_PRELOAD_CWD) in the control
 * directory: resolved by the server, which says it is volatile, so the
 * names under it are asked each time. */
static void inherited_cwd(void)
{
	char here[PATH_MAX], v[2 * PATH_MAX];
	if (!getcwd(here, sizeof(here)))
		return;
	snprintf(v, sizeof(v), "%zu:%s%s", strlen("/ds/.dlfs"), "/ds/.dlfs",
		 here);
	setenv(DLFS_CWD_ENV, v, 1);
	dlfs_cwd_init();
	char path[PATH_MAX];
	struct dlfs_vp_base b = {.path = path};
	CHECK_EQ(dlfs_vcwd_get(path, sizeof(path), &b.ino, &b.st, &b.vol), 1);
	CHECK(!strcmp(path, "/ds/.dlfs") && b.ino == CTL && b.vol);
	int asked = atomic_load(&n_stats);
	CHECK_EQ(dlfs_ns_resolve(&b, "stats", 0, &res), 0);
	CHECK_EQ(dlfs_ns_resolve(&b, "stats", 0, &res), 0);
	CHECK(res.ino == STATS && res.vol);
	CHECK_EQ(atomic_load(&n_stats), asked + 2);
	/* A chdir to what a walk resolved keeps its flag too. */
	CHECK_EQ(dlfs_ns_resolve(NULL, "/ds/.dlfs/d3", 0, &res), 0);
	CHECK_EQ(dlfs_vcwd_set(res.path, res.ino, &res.st, res.vol), 0);
	CHECK_EQ(dlfs_vcwd_get(path, sizeof(path), &b.ino, &b.st, &b.vol), 1);
	CHECK(b.ino == VDIR + 3 && b.vol);
	dlfs_vcwd_clear();
}

static void read_loop(void)
{
	uint8_t *buf = malloc(FSIZE + 100);
	CHECK_EQ(dlfs_ns_read(2, buf, FSIZE + 100, 0), FSIZE);
	int same = 1;
	for (uint64_t i = 0; i < FSIZE && same; i++)
		same = buf[i] == byte_at(i);
	CHECK(same);
	CHECK(atomic_load(&n_reads) >= (int)(FSIZE / SHORT));
	CHECK(!atomic_load(&big_read));
	CHECK_EQ(dlfs_ns_read(2, buf, 100, FSIZE - 10), 10);
	CHECK(buf[0] == byte_at(FSIZE - 10) && buf[9] == byte_at(FSIZE - 1));
	CHECK_EQ(dlfs_ns_read(2, buf, 100, FSIZE), 0);
	/* An error after some bytes: those bytes; before any: the error. */
	CHECK_EQ(dlfs_ns_read(5, buf, 10000, 0), BAD_AT);
	CHECK_EQ(dlfs_ns_read(5, buf, 100, BAD_AT + 10), -EIO);
	free(buf);
}

int main(void)
{
	dlfs_ns_init();
	dlfs_conn_init();
	ws_start_preload("/ds", handle, NULL);

	cache_use();
	volatile_bypass();
	many_volatile();
	lookup_contract();
	inherited_cwd();
	read_loop();

	ws_stop();
	return t_failures ? 1 : 0;
}
