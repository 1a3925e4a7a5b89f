/*
 * nullfs: the FUSE floor for tools/bench/epoch (not part of dlfs).
 *
 *   nullfs TREE.tsv MNT [BACKING]
 *
 * Mounts, read-only at MNT, a tree described by TREE.tsv: one
 * "relative/path<TAB>size" line per regular file (find -printf
 * '%P\t%s\n'); directories are implied by the paths. Every file reads as
 * bytes of one static buffer: no storage, no index, no cache, no locks.
 * What a reader measures on it is the cost of the FUSE round trips
 * themselves, which any FUSE file system pays, dlfs included.
 *
 * It is configured as dlfs is by default: open and opendir answered
 * ENOSYS (so the kernel sends neither again and keeps file pages), no
 * ioctl, attributes and entries cached for a day, mounted "ro,
 * default_permissions", libfuse's multi-threaded loop with dlfs's default
 * worker count (2 per CPU, 4 to 64). The caller sets the mount's kernel
 * read-ahead (dlfs sets 1 MiB itself).
 *
 * With BACKING (a path on local disk), every file also costs what a FUSE
 * server that caches data on local disk must at least pay: each read is
 * one O_DIRECT pread of the file's bytes from BACKING, where the files lie
 * one after another, each at a 4 KiB boundary, in TREE.tsv order. BACKING
 * is written (from the static buffer) when it is missing or of another
 * size.
 */
#define _GNU_SOURCE
#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_FILE (64u << 20)
#define ALIGN 4096u

struct node {
	uint64_t parent;
	char *name;
	uint64_t size;
	uint64_t at; /* the file's offset in BACKING */
	int dir;
};

static struct node *nodes; /* index = inode number; 1 is the root */
static uint64_t n_nodes, cap_nodes;
static uint64_t *slots; /* hash of (parent, name) -> inode, 0 = empty */
static uint64_t n_slots;
static char *data; /* MAX_FILE bytes every file is read from */
static int backing = -1;   /* BACKING, O_DIRECT; -1: none */
static uint64_t backing_size;
/* Each worker's read buffer, MAX_FILE + 2 * ALIGN bytes, aligned: made on
 * its first read, never freed (a bench tool; libfuse keeps few workers). */
static _Thread_local char *iobuf;

static uint64_t hash(uint64_t parent, const char *name)
{
	uint64_t h = 1469598103934665603ull ^ parent;
	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		h = (h ^ *p) * 1099511628211ull;
	return h;
}

static uint64_t find(uint64_t parent, const char *name)
{
	for (uint64_t i = hash(parent, name) & (n_slots - 1);; i = (i + 1) & (n_slots - 1)) {
		uint64_t ino = slots[i];
		if (!ino || (nodes[ino].parent == parent && !strcmp(nodes[ino].name, name)))
			return ino;
	}
}

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static uint64_t add(uint64_t parent, const char *name, int dir, uint64_t size)
{
	uint64_t ino = find(parent, name);
	if (ino)
		return ino;
	if (2 * n_nodes >= n_slots) {
		fprintf(stderr, "nullfs: more directories than the table holds\n");
		exit(1);
	}
	if (n_nodes == cap_nodes) {
		cap_nodes *= 2;
		nodes = realloc(nodes, cap_nodes * sizeof(*nodes));
		if (!nodes)
			die("nullfs: realloc");
	}
	ino = n_nodes++;
	nodes[ino] = (struct node){ parent, strdup(name), size, backing_size, dir };
	if (!dir)
		backing_size += (size + ALIGN - 1) / ALIGN * ALIGN;
	if (!nodes[ino].name)
		die("nullfs: strdup");
	uint64_t i = hash(parent, name) & (n_slots - 1);
	while (slots[i])
		i = (i + 1) & (n_slots - 1);
	slots[i] = ino;
	return ino;
}

static void load(const char *tsv)
{
	FILE *f = fopen(tsv, "r");
	if (!f)
		die(tsv);
	uint64_t lines = 0;
	for (int c; (c = getc(f)) != EOF;)
		lines += c == '\n';
	rewind(f);
	/* Room for every file and as many directories, at most half full. */
	for (n_slots = 1024; n_slots < 4 * (lines + 2); n_slots *= 2)
		;
	slots = calloc(n_slots, sizeof(*slots));
	cap_nodes = 2 * lines + 2;
	nodes = calloc(cap_nodes, sizeof(*nodes));
	if (!slots || !nodes)
		die("nullfs: calloc");
	nodes[1] = (struct node){ 1, strdup(""), 0, 0, 1 };
	n_nodes = 2;
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	while ((len = getline(&line, &cap, f)) > 0) {
		char *tab = strrchr(line, '\t');
		if (!tab) {
			fprintf(stderr, "nullfs: %s: a line without a tab: %s", tsv, line);
			exit(1);
		}
		*tab = '\0';
		uint64_t size = strtoull(tab + 1, NULL, 10);
		if (size > MAX_FILE) {
			fprintf(stderr, "nullfs: %s: %s is over %u bytes\n", tsv, line, MAX_FILE);
			exit(1);
		}
		uint64_t parent = 1;
		char *p = line;
		for (char *slash; (slash = strchr(p, '/')); p = slash + 1) {
			*slash = '\0';
			parent = add(parent, p, 1, 0);
		}
		add(parent, p, 0, size);
	}
	free(line);
	fclose(f);
}

static void attr(uint64_t ino, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_mode = nodes[ino].dir ? S_IFDIR | 0555 : S_IFREG | 0444;
	st->st_nlink = nodes[ino].dir ? 2 : 1;
	st->st_size = (off_t)nodes[ino].size;
	st->st_blksize = 4096;
	st->st_blocks = (blkcnt_t)((nodes[ino].size + 511) / 512);
}

static void ll_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fuse_entry_param e = { .attr_timeout = 86400, .entry_timeout = 86400 };
	e.ino = find(parent, name);
	if (e.ino) {
		e.generation = 1;
		attr(e.ino, &e.attr);
	}
	fuse_reply_entry(req, &e); /* ino 0: a cached negative entry */
}

static void ll_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)fi;
	struct stat st;
	if (ino >= n_nodes || !nodes[ino].name) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	attr(ino, &st);
	fuse_reply_attr(req, &st, 86400);
}

static void ll_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	(void)fi;
	fuse_reply_err(req, ENOSYS);
}

static void ll_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	(void)fi;
	uint64_t fsize = ino < n_nodes ? nodes[ino].size : 0;
	if ((uint64_t)off >= fsize) {
		fuse_reply_buf(req, NULL, 0);
		return;
	}
	if (size > fsize - (uint64_t)off)
		size = (size_t)(fsize - (uint64_t)off);
	if (backing < 0) {
		fuse_reply_buf(req, data + off, size);
		return;
	}
	if (!iobuf && posix_memalign((void **)&iobuf, ALIGN, MAX_FILE + 2 * ALIGN)) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	uint64_t at = nodes[ino].at + (uint64_t)off;
	uint64_t a0 = at / ALIGN * ALIGN;
	uint64_t a1 = (at + size + ALIGN - 1) / ALIGN * ALIGN;
	ssize_t got = pread(backing, iobuf, (size_t)(a1 - a0), (off_t)a0);
	if (got < (ssize_t)(at - a0 + size)) {
		fuse_reply_err(req, got < 0 ? errno : EIO);
		return;
	}
	fuse_reply_buf(req, iobuf + (at - a0), size);
}

/* Open BACKING with O_DIRECT, writing it first unless it has the size the
 * tree needs. */
static void open_backing(const char *path)
{
	struct stat st;
	if (stat(path, &st) || (uint64_t)st.st_size != backing_size) {
		FILE *f = fopen(path, "w");
		if (!f)
			die(path);
		for (uint64_t left = backing_size; left;) {
			size_t n = left < MAX_FILE ? (size_t)left : MAX_FILE;
			if (fwrite(data, 1, n, f) != n)
				die(path);
			left -= n;
		}
		if (fflush(f) || fsync(fileno(f)) || fclose(f))
			die(path);
	}
	backing = open(path, O_RDONLY | O_DIRECT | O_CLOEXEC);
	if (backing < 0)
		die(path);
}

static const struct fuse_lowlevel_ops ops = {
	.lookup = ll_lookup,
	.getattr = ll_getattr,
	.open = ll_open,
	.opendir = ll_open,
	.read = ll_read,
};

int main(int argc, char **argv)
{
	if (argc != 3 && argc != 4) {
		fprintf(stderr, "usage: nullfs TREE.tsv MNT [BACKING]\n");
		return 2;
	}
	load(argv[1]);
	data = malloc(MAX_FILE);
	if (!data)
		die("nullfs: malloc");
	for (size_t i = 0; i < MAX_FILE; i++)
		data[i] = (char)(i * 131 + (i >> 12));
	if (argc == 4)
		open_backing(argv[3]);

	char *fa[] = { argv[0], "-oro,default_permissions,fsname=nullfs,subtype=nullfs", NULL };
	struct fuse_args args = FUSE_ARGS_INIT(2, fa);
	struct fuse_session *se = fuse_session_new(&args, &ops, sizeof(ops), NULL);
	if (!se)
		return 1;
	if (fuse_session_mount(se, argv[2])) {
		fuse_session_destroy(se);
		return 1;
	}
	if (fuse_daemonize(0)) {
		fuse_session_unmount(se);
		fuse_session_destroy(se);
		return 1;
	}
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned threads = cpus > 0 ? 2 * (unsigned)cpus : 4;
	threads = threads < 4 ? 4 : threads > 64 ? 64 : threads;
	struct fuse_loop_config *lc = fuse_loop_cfg_create();
	if (!lc)
		return 1;
	fuse_loop_cfg_set_max_threads(lc, threads);
	int ret = fuse_session_loop_mt(se, lc);
	fuse_loop_cfg_destroy(lc);
	fuse_session_unmount(se);
	fuse_session_destroy(se);
	return ret ? 1 : 0;
}
