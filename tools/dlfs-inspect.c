/* dlfs-inspect: look into a dataset without mounting it. */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "dlfs/check.h"
#include "dlfs/dataset.h"
#include "holders.h"
#include "live.h"
#include "progress.h"
#include "reader.h"

#define PROG "dlfs-inspect"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: " PROG " COMMAND DATASET [ARGS]\n"
		"  info [--json]          dataset metadata\n"
		"  ls [-l] [PATH]         list a directory\n"
		"  stat [--json] PATH     one entry's metadata\n"
		"  cat PATH...            files' content, checked\n"
		"  verify                 check every container, chunk and "
		"file\n"
		"  extract [-q] DIR       recreate the tree in DIR\n"
		"  stats MOUNTPOINT [--json]  live counters of a dlfs mount\n"
		"  top MOUNTPOINT [-i SECONDS] [-n COUNT]  its rates, live\n"
		"  top --socket SOCKET [...]  those of a dlfs-run server\n"
		"  holders MOUNTPOINT     processes that keep it busy\n"
		"See dlfs-inspect(1).\n");
}

/* JSON string: bytes that are not printable ASCII become \\u00XX. */
static void json_str(FILE *f, const char *s, size_t n)
{
	fputc('"', f);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20 || c >= 0x7f)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

/* The names of the feature flags set (all known: the dataset opened),
 * as a JSON list's items or space-separated ("none" when there are
 * none). */
static void print_features(uint64_t f, int json)
{
	const char *sep = json ? "" : " ";
	int n = 0;
	for (unsigned bit = 0; bit < 64; bit++) {
		if (!(f & (UINT64_C(1) << bit)))
			continue;
		const char *name = dlfs_feature_name(bit);
		printf(json ? "%s\"%s\"" : "%s%s", sep, name ? name : "?");
		sep = json ? ", " : " ";
		n++;
	}
	if (!n && !json)
		printf(" none");
}

/* A compressed dataset's chunks: logical and stored bytes, and how many
 * are stored raw. @return 0 or a negative errno with err set. */
struct stored {
	unsigned long long data, stored, chunks, raw;
};
static int stored_bytes(struct dlfs_ds *ds, struct dlfs_txn *txn,
			struct stored *st, struct dlfs_err *err)
{
	const struct dlfs_super_rec *s = &dlfs_ds_info(ds)->super;
	memset(st, 0, sizeof(*st));
	for (uint32_t c = 0; c < s->n_containers; c++) {
		const struct dlfs_container *x = dlfs_ds_container(ds, c);
		for (uint64_t k = 0; k < x->n_chunks; k++) {
			struct dlfs_chunk_rec cr;
			int ret = dlfs_chunk_get(txn, c, k, &cr, err);
			if (ret)
				return ret;
			st->data += cr.length;
			st->stored += cr.stored_length;
			st->chunks++;
			st->raw += !(cr.flags & DLFS_CHUNK_ZSTD);
		}
	}
	return 0;
}

/* An in-place dataset's archives, as the index names them: a JSON
 * array member, or a line each. */
static void print_archives(struct dlfs_ds *ds, int json)
{
	uint32_t n = (uint32_t)dlfs_ds_info(ds)->super.n_containers;
	if (!dlfs_ds_archive(ds, 0))
		return;
	printf(json ? ", \"archives\": [" : "archives:\n");
	for (uint32_t c = 0; c < n; c++) {
		const struct dlfs_archive *a = dlfs_ds_archive(ds, c);
		const char *p = a->path ? a->path : "(damaged record)";
		const char *kind = a->kind == DLFS_ARCHIVE_ZIP ? "zip" : "tar";
		if (!json) {
			printf("  %s (%s, %llu bytes)\n", p, kind,
			       (unsigned long long)a->size);
			continue;
		}
		printf("%s{\"path\": ", c ? ", " : "");
		json_str(stdout, p, strlen(p));
		printf(", \"kind\": \"%s\", \"size\": %llu}", kind,
		       (unsigned long long)a->size);
	}
	if (json)
		printf("]");
}

static int cmd_info(struct dlfs_ds *ds, struct dlfs_txn *txn, int json,
		    struct dlfs_err *err)
{
	const struct dlfs_info *in = dlfs_ds_info(ds);
	const struct dlfs_super_rec *s = &in->super;
	struct {
		const char *k;
		unsigned long long v;
	} nums[] = {
		{"chunk_size", s->chunk_size},
		{"container_size", s->container_size},
		{"align", s->align},
		{"inodes", s->n_inodes},
		{"files", s->n_files},
		{"dirs", s->n_dirs},
		{"symlinks", s->n_symlinks},
		{"containers", s->n_containers},
		{"file_bytes", s->total_file_bytes},
		{"index_bytes", in->index_bytes},
	};
	size_t nn = sizeof(nums) / sizeof(nums[0]);
	struct stored st;
	int comp = !!(s->features & DLFS_FEATURE(COMPRESSED));
	if (comp) {
		int ret = stored_bytes(ds, txn, &st, err);
		if (ret)
			return ret;
	}
	/* logical data bytes over the bytes their chunks take stored */
	double ratio = comp && st.stored ? (double)st.data / st.stored : 1.0;
	if (json) {
		printf("{\"path\": ");
		json_str(stdout, dlfs_ds_path(ds), strlen(dlfs_ds_path(ds)));
		printf(", \"format_version\": \"%u.%u\", \"features\": [",
		       s->format_major, s->format_minor);
		print_features(s->features, 1);
		printf("], \"dataset_id\": \"%s\", \"order\": ",
		       in->dataset_id_hex);
		json_str(stdout, in->order, strlen(in->order));
		printf(", \"creator\": ");
		json_str(stdout, in->creator, strlen(in->creator));
		for (size_t i = 0; i < nn; i++)
			printf(", \"%s\": %llu", nums[i].k, nums[i].v);
		if (comp) {
			printf(", \"compress\": ");
			json_str(stdout, in->compress, strlen(in->compress));
			printf(", \"data_bytes\": %llu, \"stored_bytes\": "
			       "%llu, \"chunks\": %llu, \"raw_chunks\": %llu, "
			       "\"ratio\": %.3f",
			       st.data, st.stored, st.chunks, st.raw, ratio);
		}
		print_archives(ds, 1);
		printf("}\n");
	} else {
		printf("path: %s\nformat_version: %u.%u\nfeatures:",
		       dlfs_ds_path(ds), s->format_major, s->format_minor);
		print_features(s->features, 0);
		printf("\ndataset_id: %s\norder: %s\ncreator: %s\n",
		       in->dataset_id_hex, in->order, in->creator);
		for (size_t i = 0; i < nn; i++)
			printf("%s: %llu\n", nums[i].k, nums[i].v);
		if (comp)
			printf("compress: %s\ndata_bytes: %llu\nstored_bytes: "
			       "%llu\nchunks: %llu\nraw_chunks: %llu\n"
			       "ratio: %.2f\n",
			       in->compress, st.data, st.stored, st.chunks,
			       st.raw, ratio);
		print_archives(ds, 0);
	}
	return 0;
}

static const char *type_name(uint32_t mode)
{
	return S_ISDIR(mode) ? "dir" : S_ISLNK(mode) ? "symlink" : "file";
}

static void mode_string(uint32_t m, char *b)
{
	const char *rwx = "rwxrwxrwx";
	b[0] = S_ISDIR(m) ? 'd' : S_ISLNK(m) ? 'l' : '-';
	for (int i = 0; i < 9; i++)
		b[1 + i] = (m & (0400 >> i)) ? rwx[i] : '-';
	if (m & S_ISUID)
		b[3] = (m & 0100) ? 's' : 'S';
	if (m & S_ISGID)
		b[6] = (m & 0010) ? 's' : 'S';
	if (m & S_ISVTX)
		b[9] = (m & 0001) ? 't' : 'T';
	b[10] = '\0';
}

static void print_entry(const struct dlfs_inode *in, const char *name,
			size_t len, int lng)
{
	if (lng) {
		char m[11], t[32];
		time_t tt = (time_t)in->mtime_sec;
		struct tm tm;
		mode_string(in->mode, m);
		gmtime_r(&tt, &tm);
		strftime(t, sizeof(t), "%Y-%m-%d %H:%M:%S", &tm);
		printf("%s %llu %s ", m, (unsigned long long)in->size, t);
	}
	fwrite(name, 1, len, stdout);
	if (lng && S_ISLNK(in->mode)) {
		fputs(" -> ", stdout);
		fwrite(in->target, 1, in->size, stdout);
	}
	putchar('\n');
}

struct ls_ctx {
	struct dlfs_txn *txn;
	int lng;
	struct dlfs_err *err;
	uint64_t dir;
};

static int ls_one(void *arg, const struct dlfs_dirent *d)
{
	struct ls_ctx *c = arg;
	struct dlfs_inode in;
	if (c->lng) {
		int ret = dlfs_stat_entry(c->txn, c->dir, d->name, d->name_len,
					  d->ino, &in, c->err);
		if (ret)
			return ret;
	}
	print_entry(&in, d->name, d->name_len, c->lng);
	return 0;
}

static const char *base_name(const char *p)
{
	size_t n = strlen(p);
	while (n > 1 && p[n - 1] == '/')
		n--;
	const char *s = p + n;
	while (s > p && s[-1] != '/')
		s--;
	return s;
}

/* Resolve path and read its inode. */
static int resolve_stat(struct dlfs_txn *txn, const char *path, uint64_t *ino,
			struct dlfs_inode *in, struct dlfs_err *err)
{
	int ret = dlfs_resolve(txn, path, ino, err);
	return ret ? ret : dlfs_stat(txn, *ino, in, err);
}

static int cmd_ls(struct dlfs_txn *txn, const char *path, int lng,
		  struct dlfs_err *err)
{
	uint64_t ino;
	struct dlfs_inode in;
	int ret = resolve_stat(txn, path, &ino, &in, err);
	if (ret)
		return ret;
	if (!S_ISDIR(in.mode)) {
		const char *b = base_name(path);
		size_t n = strcspn(b, "/");
		print_entry(&in, b, n, lng);
		return 0;
	}
	struct ls_ctx c = {txn, lng, err, ino};
	return dlfs_readdir(txn, ino, 0, ls_one, &c, err);
}

static int cmd_stat(struct dlfs_txn *txn, const char *path, int json,
		    struct dlfs_err *err)
{
	uint64_t ino;
	struct dlfs_inode in;
	int ret = resolve_stat(txn, path, &ino, &in, err);
	if (ret)
		return ret;
	while (*path == '/')
		path++;
	if (json) {
		printf("{\"path\": ");
		json_str(stdout, path, strlen(path));
		printf(", \"inode\": %llu, \"type\": \"%s\", \"mode\": "
		       "\"%04o\", \"size\": %llu, \"mtime\": \"%lld.%09u\"",
		       (unsigned long long)ino, type_name(in.mode),
		       in.mode & 07777, (unsigned long long)in.size,
		       (long long)in.mtime_sec, in.mtime_nsec);
		if (S_ISREG(in.mode))
			printf(", \"container\": %u, \"offset\": %llu, "
			       "\"xxh3\": \"%016llx\"",
			       in.container, (unsigned long long)in.offset,
			       (unsigned long long)in.xxh3);
		if (S_ISLNK(in.mode)) {
			printf(", \"target\": ");
			json_str(stdout, in.target, in.size);
		}
		printf("}\n");
		return 0;
	}
	printf("path: %s\ninode: %llu\ntype: %s\nmode: %04o\nsize: %llu\n"
	       "mtime: %lld.%09u\n",
	       path, (unsigned long long)ino, type_name(in.mode),
	       in.mode & 07777, (unsigned long long)in.size,
	       (long long)in.mtime_sec, in.mtime_nsec);
	if (S_ISREG(in.mode))
		printf("container: %u\noffset: %llu\nxxh3: %016llx\n",
		       in.container, (unsigned long long)in.offset,
		       (unsigned long long)in.xxh3);
	if (S_ISLNK(in.mode)) {
		fputs("target: ", stdout);
		fwrite(in.target, 1, in.size, stdout);
		putchar('\n');
	}
	return 0;
}

static void cat_log(void *arg, int prio, const char *msg)
{
	(void)arg;
	(void)prio;
	fprintf(stderr, PROG ": cat: %s\n", msg);
}

/*
 * A file's bytes through the read core, as a mount serves them: chunks
 * checked against their checksums, a damaged chunk salvaged file by file.
 * Check first, then write: the first pass also checks the file against
 * its own checksum, so a damaged file prints nothing.
 */
static int cat_one(struct dlfs_reader_ctx *x, struct dlfs_txn *txn,
		   const char *path, XXH3_state_t *hs, struct dlfs_err *err)
{
	uint64_t ino;
	struct dlfs_inode in;
	int ret = resolve_stat(txn, path, &ino, &in, err);
	if (ret)
		return ret;
	if (!S_ISREG(in.mode))
		return dlfs_err_sys(err, S_ISDIR(in.mode) ? -EISDIR : -EINVAL,
				    "%s", path);
	XXH3_64bits_reset(hs);
	for (int pass = 0; pass < 2 && !ret; pass++) {
		for (uint64_t off = 0; off < in.size;) {
			struct dlfs_read_out o;
			ret = dlfs_read(x, ino, off, 1 << 20, &o);
			for (int i = 0; !ret && i < o.iovcnt; i++) {
				if (pass == 0)
					XXH3_64bits_update(hs, o.iov[i].iov_base,
							   o.iov[i].iov_len);
				else if (fwrite(o.iov[i].iov_base, 1,
						o.iov[i].iov_len,
						stdout) != o.iov[i].iov_len)
					ret = dlfs_err_sys(err, -EIO, "stdout");
			}
			dlfs_read_done(x);
			if (!ret && !o.len)
				ret = -EIO; /* the file ended early */
			if (ret) {
				if (!err->code)
					dlfs_err_sys(err, ret, "%s", path);
				break;
			}
			off += o.len;
		}
		if (!ret && pass == 0 && XXH3_64bits_digest(hs) != in.xxh3)
			ret = dlfs_err_sys(err, -EIO,
					   "%s: checksum mismatch, the "
					   "dataset is damaged (container %u, "
					   "offset %llu)",
					   path, in.container,
					   (unsigned long long)in.offset);
	}
	return ret;
}

/*
 * The files one after the other through one reader, whose RAM tier keeps
 * the last 64 chunks: files given in the order they lie in the
 * containers (a sorted pack's name order) have each chunk read and
 * decompressed once. A file that fails is named and skipped.
 * @return 0, 1 when a file failed, or a negative errno with err set.
 */
static int cmd_cat(struct dlfs_ds *ds, struct dlfs_txn *txn,
		   const char **paths, int n, struct dlfs_err *err)
{
	struct dlfs_reader *r = NULL;
	struct dlfs_reader_ctx *x = NULL;
	XXH3_state_t *hs = NULL;
	int ret, failed = 0;
	/* Several files: whole chunks, which serve their neighbours. */
	struct dlfs_reader_conf rc = {
		.ram_cache = 64 * dlfs_ds_info(ds)->super.chunk_size,
		.pfs_direct = 0,
		.fill = DLFS_FILL_NONE,
		.read_unit = n > 1 ? DLFS_UNIT_CHUNK : DLFS_UNIT_AUTO,
		.log = cat_log,
	};
	if ((ret = dlfs_reader_open(ds, &rc, &r, err)) ||
	    (ret = dlfs_reader_ctx_new(r, &x, err)))
		goto out;
	if (!(hs = XXH3_createState())) {
		ret = dlfs_err_set(err, -ENOMEM, "out of memory");
		goto out;
	}
	for (int i = 0; i < n; i++) {
		struct dlfs_err e = {0};
		if (cat_one(x, txn, paths[i], hs, &e)) {
			fprintf(stderr, PROG ": cat: %s\n", e.msg);
			failed = 1;
		}
	}
	if (fflush(stdout) == EOF)
		ret = dlfs_err_sys(err, -errno, "stdout");
out:
	XXH3_freeState(hs);
	dlfs_reader_ctx_free(x);
	dlfs_reader_close(r);
	return ret ? ret : failed;
}

static void on_bad(void *arg, const char *path, const char *msg)
{
	(void)arg;
	fprintf(stderr, PROG ": verify: %s: %s\n", path, msg);
}

static int cmd_verify(struct dlfs_ds *ds, struct dlfs_err *err)
{
	struct dlfs_verify_report r;
	int ret = dlfs_verify(ds, on_bad, NULL, &r, err);
	if (ret)
		return ret;
	int bad = r.bad_files || r.bad_chunks || r.bad_containers ||
		  r.bad_index || r.bad_names;
	printf("verified: %llu files, %llu chunks, %llu containers, %llu "
	       "bytes: ",
	       (unsigned long long)r.files, (unsigned long long)r.chunks,
	       (unsigned long long)r.containers, (unsigned long long)r.bytes);
	if (!bad)
		printf("OK%s\n", r.sealed ? "" : " (no index seal: packed "
						  "before index.sum)");
	else
		printf("%llu damaged files%s%s\n",
		       (unsigned long long)r.bad_files,
		       r.bad_names ? "; damaged directory entries" : "",
		       r.bad_index ? "; the index is damaged" : "");
	if (r.bad_chunks || r.bad_containers)
		fprintf(stderr,
			PROG ": verify: %llu damaged chunks, %llu damaged "
			"containers\n",
			(unsigned long long)r.bad_chunks,
			(unsigned long long)r.bad_containers);
	return bad ? 1 : 0;
}

/* extract's progress line: on a terminal, at most 4 times a second. */
struct xprog {
	int tty;
	double start, last;
	int drew;
};

static void on_extract_progress(void *arg,
				const struct dlfs_extract_progress *p)
{
	struct xprog *u = arg;
	double t = dlfs_progress_now();
	if (u->drew && t - u->last < 0.25)
		return;
	u->last = t;
	u->drew = 1;
	if (p->listing) {
		fprintf(stderr,
			"\r\033[K" PROG ": extract: listing: %llu files",
			(unsigned long long)p->files_total);
		return;
	}
	char done[32], total[32], rate[32], eta[32] = "?";
	double el = t - u->start;
	double r = el > 0 ? (double)p->bytes / el : 0;
	dlfs_progress_size((double)p->bytes, done, sizeof(done));
	dlfs_progress_size((double)p->bytes_total, total, sizeof(total));
	dlfs_progress_size(r, rate, sizeof(rate));
	if (r > 0 && p->bytes_total >= p->bytes) {
		double left = (double)(p->bytes_total - p->bytes) / r;
		snprintf(eta, sizeof(eta), "%d:%02d", (int)left / 60,
			 (int)left % 60);
	}
	fprintf(stderr,
		"\r\033[K" PROG ": extract: %llu/%llu files, %s/%s, %s/s, "
		"ETA %s",
		(unsigned long long)p->files,
		(unsigned long long)p->files_total, done, total, rate, eta);
}

/* The tree into dir; a progress line on a terminal unless quiet. The
 * line is cleared at the end, before any error is printed. */
static int cmd_extract(struct dlfs_ds *ds, const char *dir, int quiet,
		       struct dlfs_err *err)
{
	struct xprog u = {.tty = !quiet && isatty(2),
			  .start = dlfs_progress_now()};
	int ret = dlfs_extract_watch(ds, dir,
				     u.tty ? on_extract_progress : NULL, &u,
				     err);
	if (u.drew)
		fputs("\r\033[K", stderr);
	return ret;
}

/*
 * Print our own stats JSON flattened, one "a.b.c: value" line per scalar.
 * It reads only what the daemon writes: objects, numbers, plain strings,
 * and lists of numbers (one line each).
 */
static int print_flat(const char *j)
{
	char path[16][64];
	int depth = 0;
	char key[64] = "";
	for (const char *p = j; *p;) {
		if (*p == '{') {
			if (depth > 0 && depth < 16)
				snprintf(path[depth - 1], sizeof(path[0]), "%s",
					 key);
			depth++;
			p++;
		} else if (*p == '}') {
			depth--;
			p++;
		} else if (*p == '"') {
			const char *e = strchr(p + 1, '"');
			if (!e)
				return -1;
			snprintf(key, sizeof(key), "%.*s", (int)(e - p - 1),
				 p + 1);
			p = e + 1;
			while (*p == ' ' || *p == ':')
				p++;
			if (*p == '{' || !*p)
				continue;
			const char *v = p;
			if (*v == '"') {
				const char *ve = strchr(v + 1, '"');
				if (!ve)
					return -1;
				p = ve + 1;
			} else if (*v == '[') {
				/* A list of numbers: one line, as written. */
				const char *ve = strchr(v, ']');
				if (!ve)
					return -1;
				p = ve + 1;
			} else {
				p += strcspn(p, ",}\n");
			}
			for (int i = 0; i + 1 < depth && i < 16; i++)
				printf("%s.", path[i]);
			printf("%s: %.*s\n", key, (int)(p - v), v);
		} else {
			p++;
		}
	}
	return 0;
}

static int cmd_stats(const char *mnt, int json, struct dlfs_err *err)
{
	char path[4096];
	FILE *f = dlfs_live_open(mnt, "stats", path, sizeof(path));
	if (!f)
		return dlfs_err_sys(err, -errno,
				    "%s: not a dlfs mount? cannot open %s", mnt,
				    path);
	char *buf = NULL;
	size_t cap = 0;
	ssize_t n = getdelim(&buf, &cap, '\0', f);
	fclose(f);
	if (n <= 0) {
		free(buf);
		return dlfs_err_set(err, -EIO, "%s: empty", path);
	}
	/* Drop the padding that keeps the file's size steady. */
	while (n > 0 && (buf[n - 1] == ' ' || buf[n - 1] == '\n'))
		buf[--n] = '\0';
	int ret = 0;
	if (json)
		printf("%s\n", buf);
	else if (print_flat(buf))
		ret = dlfs_err_set(err, -EINVAL, "%s: unexpected content",
				   path);
	free(buf);
	return ret;
}

/* A command line past its command word. */
struct invocation {
	const char *cmd, *dspath;
	const char **args; /* operands after DATASET */
	int na, json, lng, quiet;
};

/*
 * Options and operands after the command word into inv. Operands after
 * DATASET (cat takes any number) are gathered in place at the front of
 * argv + 2: never past the argument being read. @return -1 to go on, or
 * the exit status after saying what is wrong.
 */
static int parse_operands(int argc, char **argv, struct invocation *inv)
{
	int dashdash = 0;
	inv->cmd = argv[1];
	inv->args = (const char **)argv + 2;
	for (int i = 2; i < argc; i++) {
		if (!dashdash && !strcmp(argv[i], "--"))
			dashdash = 1;
		else if (!dashdash && !strcmp(argv[i], "--json"))
			inv->json = 1;
		else if (!dashdash && !strcmp(argv[i], "-l"))
			inv->lng = 1;
		else if (!dashdash && (!strcmp(argv[i], "-q") ||
				       !strcmp(argv[i], "--quiet")))
			inv->quiet = 1;
		else if (!dashdash && argv[i][0] == '-' && argv[i][1]) {
			fprintf(stderr, PROG ": %s: unknown option '%s'\n",
				inv->cmd, argv[i]);
			return 2;
		} else if (!inv->dspath)
			inv->dspath = argv[i];
		else
			inv->args[inv->na++] = argv[i];
	}
	if (!inv->dspath) {
		fprintf(stderr, PROG ": %s: no DATASET given\n", inv->cmd);
		usage(stderr);
		return 2;
	}
	return -1;
}

/* stats of a live mount. @return the exit status. */
static int main_stats(const struct invocation *inv)
{
	struct dlfs_err e = {0};
	if (inv->na || inv->lng || inv->quiet) {
		fprintf(stderr, PROG ": stats: wrong arguments\n");
		return 2;
	}
	if (cmd_stats(inv->dspath, inv->json, &e)) {
		fprintf(stderr, PROG ": stats: %s\n", e.msg);
		return 1;
	}
	return 0;
}

enum { C_INFO, C_LS, C_STAT, C_CAT, C_VERIFY, C_EXTRACT };

/* The command on a dataset that inv names, with what it allows checked.
 * @return its C_* number, or -1 after saying what is wrong. */
static int command_of(const struct invocation *inv)
{
	static const struct {
		const char *name;
		int min, max, json, lng, quiet;
	} cmds[] = {
		[C_INFO] = {"info", 0, 0, 1, 0, 0},
		[C_LS] = {"ls", 0, 1, 0, 1, 0},
		[C_STAT] = {"stat", 1, 1, 1, 0, 0},
		[C_CAT] = {"cat", 1, INT_MAX, 0, 0, 0},
		[C_VERIFY] = {"verify", 0, 0, 0, 0, 0},
		[C_EXTRACT] = {"extract", 1, 1, 0, 0, 1},
	};
	int ci = -1;
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (!strcmp(inv->cmd, cmds[i].name))
			ci = (int)i;
	if (ci < 0) {
		fprintf(stderr, PROG ": unknown command '%s'\n", inv->cmd);
		usage(stderr);
		return -1;
	}
	if (inv->na < cmds[ci].min || inv->na > cmds[ci].max ||
	    (inv->json && !cmds[ci].json) || (inv->lng && !cmds[ci].lng) ||
	    (inv->quiet && !cmds[ci].quiet)) {
		fprintf(stderr, PROG ": %s: wrong arguments\n", inv->cmd);
		usage(stderr);
		return -1;
	}
	return ci;
}

/* Run command ci on the dataset. @return the exit status. */
static int run_command(int ci, const struct invocation *inv)
{
	struct dlfs_err err = {0};
	struct dlfs_ds *ds = NULL;
	struct dlfs_txn *txn = NULL;
	const char **args = inv->args;
	int rc = 0, ret = dlfs_ds_open(inv->dspath, &ds, &err);
	if (!ret)
		ret = dlfs_txn_begin(ds, &txn, &err);
	if (ret) {
		fprintf(stderr, PROG ": %s\n", err.msg);
		dlfs_ds_close(ds);
		return 1;
	}
	switch (ci) {
	case C_INFO: ret = cmd_info(ds, txn, inv->json, &err); break;
	case C_LS: ret = cmd_ls(txn, inv->na ? args[0] : "", inv->lng, &err); break;
	case C_STAT: ret = cmd_stat(txn, args[0], inv->json, &err); break;
	case C_CAT: ret = cmd_cat(ds, txn, args, inv->na, &err); break;
	case C_VERIFY: ret = cmd_verify(ds, &err); break;
	case C_EXTRACT: ret = cmd_extract(ds, args[0], inv->quiet, &err); break;
	}
	if (ret == 1) { /* cat or verify: what failed is named already */
		rc = 1;
		ret = 0;
	}
	if (ret) {
		fprintf(stderr, PROG ": %s: %s\n", inv->cmd, err.msg);
		rc = 1;
	}
	dlfs_txn_end(txn);
	dlfs_ds_close(ds);
	return rc;
}

int main(int argc, char **argv)
{
	struct invocation inv = {0};
	int ret;
	if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		usage(stdout);
		return 0;
	}
	if (argc >= 2 && (!strcmp(argv[1], "-V") || !strcmp(argv[1], "--version"))) {
		printf(PROG " %s\n", DLFS_VERSION);
		return 0;
	}
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "top"))
		return dlfs_live_top(argc - 1, argv + 1);
	if (!strcmp(argv[1], "holders"))
		return dlfs_live_holders(argc - 1, argv + 1);
	if ((ret = parse_operands(argc, argv, &inv)) >= 0)
		return ret;
	if (!strcmp(inv.cmd, "stats"))
		return main_stats(&inv);
	int ci = command_of(&inv);
	return ci < 0 ? 2 : run_command(ci, &inv);
}
