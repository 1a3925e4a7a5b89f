/*
 * In-place datasets: the archives read, their members into the tree
 * (inplace.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "inplace_fmt.h"
#include "scan_kind.h"
#include "util.h"

/* One archive being read into the tree. */
struct ipc {
	struct pk_tree *t;
	uint32_t src;
	const char *path;
	struct pk_inplace *ip;
};

/* A hard link: the earlier member hl's bytes, under a name of its own. */
static int hard_link(struct ipc *x, const struct ip_member *m,
		     struct pk_entry *e, struct pk_attr *at, const char *where,
		     struct dlfs_err *err)
{
	char hn[8192];
	struct pk_attr ka;
	ssize_t hl = pk_scan_normalise(m->link, hn, sizeof(hn));
	int64_t k = hl < 0 ? -1 : pk_tree_find(x->t, hn, (size_t)hl);
	if (k < 0 || !S_ISREG(x->t->e[k].mode))
		return dlfs_err_set(err, -EINVAL,
				    "%s: hard link to a missing or hostile "
				    "member",
				    where);
	uint64_t size = x->t->e[k].size;
	int ret = pk_attr_get(x->t, (uint64_t)k, &ka, err);
	if (ret)
		return ret;
	e->size = size;
	at->spool_off = ka.spool_off;
	at->sum = ka.sum;
	return 0;
}

/* The member "./": the root's mode and mtime, once. */
static int root_attrs(struct pk_tree *t, const struct ip_member *m,
		      struct dlfs_err *err)
{
	struct pk_attr ra;
	if (!S_ISDIR(m->mode) || t->root_set)
		return 0;
	int ret = pk_attr_get(t, 0, &ra, err);
	if (ret)
		return ret;
	t->e[0].mode = m->mode;
	ra.mtime_sec = m->mtime_sec;
	ra.mtime_nsec = m->mtime_nsec;
	if ((ret = pk_attr_set(t, 0, &ra, err)))
		return ret;
	t->root_set = 1;
	return 0;
}

/* One member into the tree (ip_put_fn). */
static int put_member(void *arg, const struct ip_member *m,
		      struct dlfs_err *err)
{
	struct ipc *x = arg;
	char norm[8192], where[8192 + 512], q[1024];
	ssize_t n = pk_scan_normalise(m->name, norm, sizeof(norm));
	dlfs_quote(m->name, strlen(m->name), q, sizeof(q));
	snprintf(where, sizeof(where), "%s: member '%s' at offset %llu",
		 x->path, q, (unsigned long long)m->offset);
	if (n == -EPERM)
		return dlfs_err_set(err, -EINVAL,
				    "%s: refusing a hostile path (absolute "
				    "or with '..')",
				    where);
	if (n < 0)
		return dlfs_err_set(err, (int)n, "%s: path too long", where);
	if (n == 0)
		return root_attrs(x->t, m, err);
	int ret = pk_scan_check_names(norm, (size_t)n, where, err);
	if (!ret)
		ret = pk_scan_parents(x->t, norm, (size_t)n, x->src,
				      m->mtime_sec, err, where);
	struct pk_entry *e = NULL;
	struct pk_attr *at = NULL;
	if (!ret)
		ret = pk_tree_put(x->t, norm, (size_t)n, m->mode, x->src,
				  where, &e, &at, err);
	if (ret || !e)
		return ret; /* or a directory merged into one put before */
	at->mtime_sec = m->mtime_sec;
	at->mtime_nsec = m->mtime_nsec;
	if (m->hard)
		return hard_link(x, m, e, at, where, err);
	if (S_ISLNK(m->mode))
		return pk_tree_set_target(x->t, e, m->link, strlen(m->link),
					  err);
	if (S_ISREG(m->mode)) {
		e->size = m->size;
		at->spool_off = m->loc;
		at->sum = m->xxh3;
		x->ip->files++;
		x->ip->bytes += m->size;
	}
	return 0;
}

/* What the archive open as fd is, from its first bytes. @return 0 with
 * *kind, or -EINVAL with err saying what it is and what to do. */
static int detect(int fd, const char *path, uint64_t size, uint32_t *kind,
		  struct dlfs_err *err)
{
	uint8_t h[512] = {0};
	ssize_t n = dlfs_pread_full(fd, h, sizeof(h), 0);
	static const struct {
		const char *magic, *name;
		size_t len;
	} comp[] = {
		{"\x1f\x8b", "gzip", 2},	{"BZh", "bzip2", 3},
		{"\xfd" "7zXZ\0", "xz", 6},	{"\x28\xb5\x2f\xfd", "zstd", 4},
		{"\x04\x22\x4d\x18", "lz4", 4},
	};
	if (n < 0)
		return dlfs_err_sys(err, (int)n, "%s: reading", path);
	for (size_t i = 0; i < sizeof(comp) / sizeof(comp[0]); i++)
		if ((size_t)n >= comp[i].len &&
		    !memcmp(h, comp[i].magic, comp[i].len))
			return dlfs_err_set(err, -EINVAL,
					    "%s: a %s-compressed file: "
					    "--in-place serves uncompressed "
					    "tar and zip archives only (pack "
					    "it without --in-place, or "
					    "decompress it first)",
					    path, comp[i].name);
	if (n >= 4 && (!memcmp(h, "PK\3\4", 4) || !memcmp(h, "PK\5\6", 4))) {
		*kind = DLFS_ARCHIVE_ZIP;
		return 0;
	}
	int empty = n == 512 && size >= 1024 && !memcmp(h, h + 1, 511) && !h[0];
	if (n == 512 && (empty || ip_tar_header_ok(h))) {
		*kind = DLFS_ARCHIVE_TAR;
		return 0;
	}
	return dlfs_err_set(err, -EINVAL,
			    "%s: not an uncompressed tar or a zip archive: "
			    "--in-place serves those only",
			    path);
}

/* Split p (absolute, canonical) into its components, in place. */
static int components(char *p, char **c, int max)
{
	int n = 0;
	for (char *s = strtok(p, "/"); s; s = strtok(NULL, "/"))
		if (n < max)
			c[n++] = s;
		else
			return -1;
	return n;
}

/*
 * The archive's path as the index records it: relative to the dataset
 * directory OUT will be, so that a dataset and its archives moved or
 * copied together (another mount point of the PFS, a stage to scratch)
 * still find each other. @return 0 or a negative errno.
 */
static int record_path(const char *archive, const char *out, char **rec)
{
	char a[PATH_MAX], d[PATH_MAX], *ac[512], *dc[512];
	char *od = strdup(out), *slash = od ? strrchr(od, '/') : NULL;
	const char *base = slash ? slash + 1 : out;
	const char *parent = !od ? NULL : slash == od ? "/" : slash ? od : ".";
	if (slash && slash != od)
		*slash = '\0';
	if (!od || !realpath(archive, a) || !realpath(parent, d)) {
		int e = od ? -errno : -ENOMEM;
		free(od);
		return e;
	}
	size_t dl = strlen(d);
	snprintf(d + dl, sizeof(d) - dl, "%s%s", dl > 1 ? "/" : "", base);
	free(od);
	int na = components(a, ac, 512), nd = components(d, dc, 512), i = 0;
	if (na < 0 || nd < 0)
		return -ENAMETOOLONG;
	while (i < na && i < nd && !strcmp(ac[i], dc[i]))
		i++;
	size_t cap = 4 * (size_t)nd + strlen(archive) + PATH_MAX, len = 0;
	char *r = malloc(cap);
	if (!r)
		return -ENOMEM;
	r[0] = '\0';
	for (int j = i; j < nd; j++)
		len += (size_t)snprintf(r + len, cap - len, "../");
	for (int j = i; j < na; j++)
		len += (size_t)snprintf(r + len, cap - len, "%s%s", ac[j],
					j + 1 < na ? "/" : "");
	*rec = r;
	return 0;
}

/* Archive i: read whole through a run, its members into t. */
static int scan_one(struct pk_tree *t, const struct pk_source *s, uint32_t i,
		    int fd, const struct stat *st,
		    const struct dlfs_pack_opts *o, struct pk_inplace *ip,
		    struct dlfs_err *err)
{
	struct pk_ip_archive *a = &ip->arc[i];
	struct ipc x = {.t = t, .src = i, .path = s->path, .ip = ip};
	struct ip_run r;
	a->size = (uint64_t)st->st_size;
	a->mtime_sec = st->st_mtim.tv_sec;
	a->mtime_nsec = (uint32_t)st->st_mtim.tv_nsec;
	a->first_chunk = ip->n_ch;
	int ret = detect(fd, s->path, a->size, &a->kind, err);
	if (!ret)
		ret = ip_run_open(&r, s->path, fd, a->size, o->chunk_size, ip,
				  err);
	if (ret)
		return ret;
	posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	ret = a->kind == DLFS_ARCHIVE_ZIP
		      ? ip_zip_walk(&r, put_member, &x, o, err)
		      : ip_tar_walk(&r, put_member, &x, o, err);
	if (!ret)
		ret = ip_run_end(&r, &a->data_size, &a->n_chunks, err);
	ip_run_close(&r);
	return ret;
}

int pk_inplace_scan(struct pk_tree *t, const struct pk_source *src,
		    unsigned n, const char *out, const struct dlfs_pack_opts *o,
		    struct pk_inplace *ip, struct dlfs_err *err)
{
	int ret = 0;
	memset(ip, 0, sizeof(*ip));
	if (n > DLFS_MAX_CONTAINERS)
		return dlfs_err_set(err, -EFBIG,
				    "%u archives: an in-place dataset holds "
				    "at most %d",
				    n, DLFS_MAX_CONTAINERS);
	if (!(ip->arc = calloc(n ? n : 1, sizeof(*ip->arc))))
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	ip->n = n;
	struct pk_entry *root;
	struct pk_attr *ra;
	if ((ret = pk_tree_root(t, &root, &ra, err)))
		return ret;
	for (uint32_t i = 0; i < n && !ret; i++) {
		struct stat st;
		const char *p = src[i].path;
		int fd = open(p, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return dlfs_err_sys(err, -errno, "%s", p);
		if (fstat(fd, &st) < 0)
			ret = dlfs_err_sys(err, -errno, "%s", p);
		else if (!S_ISREG(st.st_mode))
			ret = dlfs_err_set(err, -EINVAL,
					   "%s: not a file: --in-place takes "
					   "tar and zip archives",
					   p);
		else if ((ret = record_path(p, out, &ip->arc[i].path)))
			dlfs_err_sys(err, ret, "%s: its path from %s", p, out);
		else
			ret = scan_one(t, &src[i], i, fd, &st, o, ip, err);
		close(fd);
	}
	return ret;
}

void pk_inplace_free(struct pk_inplace *ip)
{
	if (ip->arc)
		for (uint32_t i = 0; i < ip->n; i++)
			free(ip->arc[i].path);
	free(ip->arc);
	free(ip->ch.xxh3);
	free(ip->ch.sum);
	free(ip->ch.length);
	free(ip->ch.stored_length);
	free(ip->ch.stored_offset);
	free(ip->ch.flags);
	memset(ip, 0, sizeof(*ip));
}
