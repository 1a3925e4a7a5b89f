/*
 * The /.dlfs namespace without a mount (src/epochs/ctl.c), over a small
 * packed dataset: the control directory is reached only by its name at
 * the root; its listing resumes at any offset and has no epochs/ without
 * views; epoch names are decimal without a leading 0; stats and metrics
 * are snapshots padded to whole pages, never cached (timeout 0), and the
 * read after a getattr serves the bytes the getattr sized; an epoch's
 * files list and its samples/ agree, and a sample's read names the file
 * it stands for; directories are not read, files not listed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "tutil.h"

#define N_FILES 30
#define TIMEOUT 86400.0

static struct dlfs_ds *ds;
static struct dlfs_txn *txn;
static int renders; /* calls of the stats callback */

/* The counters, as the daemon's callback would render them. */
static int stats_fn(void *arg, enum dlfs_ctl_fmt fmt, char **out, size_t *len)
{
	(void)arg;
	renders++;
	char *s = NULL;
	int n = fmt == DLFS_CTL_JSON
			? asprintf(&s, "{\"renders\": %d}\n", renders)
			: asprintf(&s, "dlfs_renders %d\n", renders);
	if (n < 0)
		return -ENOMEM;
	*out = s;
	*len = (size_t)n;
	return 0;
}

/* A listing, as names joined by '/', and the offsets given. */
struct listing {
	char names[4096];
	uint64_t next[64];
	int n, room; /* entries taken, and how many may be */
};

static int list_cb(void *arg, const char *name, const struct stat *st,
		   uint64_t next)
{
	struct listing *l = arg;
	(void)st;
	if (l->n >= l->room)
		return 1;
	size_t o = strlen(l->names);
	snprintf(l->names + o, sizeof(l->names) - o, "%s%s", o ? "/" : "",
		 name);
	l->next[l->n++] = next;
	return 0;
}

static void list(struct dlfs_ctl *c, uint64_t ino, uint64_t off, int room,
		 struct listing *l)
{
	memset(l, 0, sizeof(*l));
	l->room = room;
	CHECK_EQ(dlfs_ctl_readdir(c, txn, ino, off, list_cb, l), 0);
}

static uint64_t lookup(struct dlfs_ctl *c, uint64_t parent, const char *name)
{
	uint64_t ino = 0;
	struct stat st;
	double tmo;
	CHECK_EQ(dlfs_ctl_lookup(c, txn, parent, name, &ino, &st, &tmo), 0);
	CHECK_EQ(st.st_ino, ino);
	return ino;
}

static int lookup_err(struct dlfs_ctl *c, uint64_t parent, const char *name)
{
	uint64_t ino = 0;
	struct stat st;
	double tmo;
	return dlfs_ctl_lookup(c, txn, parent, name, &ino, &st, &tmo);
}

static void test_names(struct dlfs_ctl *c, struct dlfs_ctl *bare)
{
	CHECK_EQ(lookup(c, DLFS_ROOT_INO, ".dlfs"), DLFS_CTL_DIR);
	CHECK_EQ(lookup_err(c, DLFS_ROOT_INO, "info"), -ENOENT);
	CHECK_EQ(lookup_err(c, 2, ".dlfs"), -ENOENT); /* not the root */
	CHECK_EQ(lookup(c, DLFS_CTL_DIR, "info"), DLFS_CTL_INFO);
	CHECK_EQ(lookup(c, DLFS_CTL_DIR, "stats"), DLFS_CTL_STATS);
	CHECK_EQ(lookup(c, DLFS_CTL_DIR, "metrics"), DLFS_CTL_METRICS);
	CHECK_EQ(lookup(c, DLFS_CTL_DIR, "epochs"), DLFS_CTL_EPOCHS);
	CHECK_EQ(lookup_err(c, DLFS_CTL_DIR, "nothing"), -ENOENT);
	CHECK_EQ(lookup_err(bare, DLFS_CTL_DIR, "epochs"), -ENOENT);
	CHECK_EQ(lookup_err(c, DLFS_CTL_INFO, "x"), -ENOTDIR);
	/* Epochs: decimal, no leading 0, at most DLFS_VIEWS_MAX_EPOCH. */
	CHECK(lookup(c, DLFS_CTL_EPOCHS, "0") != 0);
	CHECK(lookup(c, DLFS_CTL_EPOCHS, "65535") !=
	      lookup(c, DLFS_CTL_EPOCHS, "7"));
	static const char *const bad[] = {"",  "00", "07",    "1x",
					  "x", "-1", "65536", "1000000"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		CHECK_EQ(lookup_err(c, DLFS_CTL_EPOCHS, bad[i]), -ENOENT);
	uint64_t e3 = lookup(c, DLFS_CTL_EPOCHS, "3");
	CHECK_EQ(lookup_err(c, e3, "nothing"), -ENOENT);
}

static void test_listings(struct dlfs_ctl *c, struct dlfs_ctl *bare)
{
	struct listing l;
	list(c, DLFS_CTL_DIR, 0, 64, &l);
	CHECK(!strcmp(l.names, "./../info/stats/metrics/epochs"));
	for (int i = 0; i < l.n; i++)
		CHECK_EQ(l.next[i], i + 1);
	/* Resumed where a full reply stopped. */
	list(c, DLFS_CTL_DIR, 0, 3, &l);
	CHECK(!strcmp(l.names, "./../info"));
	list(c, DLFS_CTL_DIR, l.next[l.n - 1], 64, &l);
	CHECK(!strcmp(l.names, "stats/metrics/epochs"));
	list(bare, DLFS_CTL_DIR, 0, 64, &l);
	CHECK(!strcmp(l.names, "./../info/stats/metrics"));
	/* Before any epoch is read: 0 and 1. */
	list(c, DLFS_CTL_EPOCHS, 2, 64, &l);
	CHECK(!strcmp(l.names, "0/1"));
	uint64_t e0 = lookup(c, DLFS_CTL_EPOCHS, "0");
	list(c, e0, 2, 64, &l);
	CHECK(!strcmp(l.names, "files/samples/tree"));
	/* Files are not listed, directories not read. */
	CHECK_EQ(dlfs_ctl_readdir(c, txn, DLFS_CTL_INFO, 0, list_cb, &l),
		 -ENOTDIR);
	char buf[16];
	size_t got;
	uint64_t fino;
	CHECK_EQ(dlfs_ctl_read(c, txn, DLFS_CTL_EPOCHS, 0, sizeof(buf), buf,
			       &got, &fino),
		 -EISDIR);
	CHECK_EQ(dlfs_ctl_read(c, txn, e0, 0, sizeof(buf), buf, &got, &fino),
		 -EISDIR);
}

/* stats and metrics: padded snapshots, sized by getattr, never cached. */
static void test_live(struct dlfs_ctl *c)
{
	static const uint64_t inos[] = {DLFS_CTL_STATS, DLFS_CTL_METRICS};
	for (int k = 0; k < 2; k++) {
		struct stat st;
		double tmo = -1;
		CHECK_EQ(dlfs_ctl_getattr(c, txn, inos[k], &st, &tmo), 0);
		CHECK(tmo == 0);
		CHECK(S_ISREG(st.st_mode) && (st.st_mode & 0777) == 0444);
		CHECK_EQ(st.st_size % 4096, 0);
		CHECK(st.st_size > 0);
		int seen = renders;
		char *buf = malloc((size_t)st.st_size + 10);
		size_t got = 0;
		uint64_t fino = 1;
		CHECK_EQ(dlfs_ctl_read(c, txn, inos[k], 0,
				       (size_t)st.st_size + 10, buf, &got,
				       &fino),
			 0);
		CHECK_EQ(renders, seen); /* the getattr's snapshot */
		CHECK_EQ(fino, 0);
		CHECK_EQ(got, st.st_size);
		char want[64];
		int n = snprintf(want, sizeof(want),
				 k ? "dlfs_renders %d\n#"
				   : "{\"renders\": %d}\n ",
				 seen);
		CHECK(!memcmp(buf, want, (size_t)n));
		CHECK_EQ(buf[got - 1], '\n');
		CHECK_EQ(buf[got - 2], ' ');
		free(buf);
	}
	struct stat st;
	double tmo = -1;
	CHECK_EQ(dlfs_ctl_getattr(c, txn, DLFS_CTL_INFO, &st, &tmo), 0);
	CHECK(tmo == TIMEOUT);
	CHECK_EQ(st.st_size, c->info_len);
}

/* Epoch 2: its files list is its samples/, in order. */
static void test_epoch(struct dlfs_ctl *c)
{
	uint64_t e = lookup(c, DLFS_CTL_EPOCHS, "2");
	uint64_t files = lookup(c, e, "files");
	uint64_t samples = lookup(c, e, "samples");
	struct stat st;
	double tmo;
	CHECK_EQ(dlfs_ctl_getattr(c, txn, files, &st, &tmo), 0);
	char *text = calloc(1, (size_t)st.st_size + 1);
	size_t got = 0;
	uint64_t fino;
	CHECK_EQ(dlfs_ctl_read(c, txn, files, 0, (size_t)st.st_size, text, &got,
			       &fino),
		 0);
	CHECK_EQ(got, st.st_size);
	struct listing l;
	list(c, samples, 2, 64, &l);
	CHECK_EQ(l.n, N_FILES);
	char *line = text, *name = l.names;
	for (int j = 0; j < l.n && line && name; j++) {
		char *nl = strchr(line, '\n'), *sl = strchr(name, '/');
		if (nl)
			*nl = '\0';
		if (sl)
			*sl = '\0';
		/* The sample stands for the file of that line. */
		uint64_t s = lookup(c, samples, name), want;
		struct dlfs_err err = {0};
		CHECK_EQ(dlfs_resolve(txn, line, &want, &err), 0);
		CHECK_EQ(dlfs_ctl_read(c, txn, s, 0, 1, text, &got, &fino), 0);
		CHECK_EQ(fino, want);
		struct dlfs_inode in;
		CHECK_EQ(dlfs_stat(txn, want, &in, NULL), 0);
		CHECK_EQ(dlfs_ctl_getattr(c, txn, s, &st, &tmo), 0);
		CHECK_EQ(st.st_size, in.size);
		CHECK(S_ISREG(st.st_mode));
		line = nl ? nl + 1 : NULL;
		name = sl ? sl + 1 : NULL;
	}
	free(text);
}

int main(void)
{
	char *dir = t_tmpdir();
	char *src = t_path(dir, "src"), *out = t_path(dir, "ds.dlfs");
	for (int i = 0; i < N_FILES; i++) {
		char n[32];
		snprintf(n, sizeof(n), "d%d/f%02d.bin", i % 3, i);
		t_write(src, n, 100 + (size_t)i * 37, (uint32_t)i + 1);
	}
	struct dlfs_err err = {0};
	struct dlfs_views *v = NULL;
	struct dlfs_ctl c, bare;
	if (t_pack(src, out, 65536, 1 << 20, 0) ||
	    dlfs_ds_open(out, &ds, &err) || dlfs_txn_begin(ds, &txn, &err)) {
		fprintf(stderr, "setup: %s\n", err.msg);
		return 1;
	}
	struct dlfs_views_conf conf = {.ds = ds,
				       .mode = DLFS_SHUFFLE_GLOBAL,
				       .seed = 9,
				       .rank = 0,
				       .size = 1,
				       .window = 4};
	CHECK_EQ(dlfs_views_new(&conf, &v, &err), 0);
	CHECK_EQ(dlfs_ctl_init(&c, ds, v, "/mnt", 0, 0, TIMEOUT, stats_fn,
			       NULL),
		 0);
	CHECK_EQ(dlfs_ctl_init(&bare, ds, NULL, "/mnt", 0, 0, TIMEOUT, stats_fn,
			       NULL),
		 0);
	test_names(&c, &bare);
	test_listings(&c, &bare);
	test_live(&c);
	test_epoch(&c);
	dlfs_ctl_destroy(&bare);
	dlfs_ctl_destroy(&c);
	dlfs_views_free(v);
	dlfs_txn_end(txn);
	dlfs_ds_close(ds);
	t_rmrf(dir);
	free(src);
	free(out);
	free(dir);
	return t_done("test_ctl");
}
