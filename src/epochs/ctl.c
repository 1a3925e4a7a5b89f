/* The /.dlfs control namespace: see ctl.h. */
#include "ctl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "dlfs/format.h"
#include "util.h"

/* Epoch view inodes: kind, epoch and position packed under the base. */
#define V_KIND_SHIFT 56
#define V_EPOCH_SHIFT 40
#define V_POS_MASK ((UINT64_C(1) << V_EPOCH_SHIFT) - 1)
enum { V_EPOCH = 1, V_FILES = 2, V_SAMPLES = 3, V_SAMPLE = 4, V_TREE = 5 };
/* A V_TREE inode's position is its dataset directory's inode. */

static uint64_t vino(unsigned kind, uint64_t e, uint64_t j)
{
	return DLFS_CTL_BASE | ((uint64_t)kind << V_KIND_SHIFT) |
	       (e << V_EPOCH_SHIFT) | j;
}

static unsigned vkind(uint64_t ino)
{
	return (unsigned)((ino & ~DLFS_CTL_BASE) >> V_KIND_SHIFT);
}

static uint64_t vepoch(uint64_t ino)
{
	return ((ino & ~DLFS_CTL_BASE) >> V_EPOCH_SHIFT) &
	       ((UINT64_C(1) << (V_KIND_SHIFT - V_EPOCH_SHIFT)) - 1);
}

void dlfs_ctl_fill_attr(uid_t uid, gid_t gid, const struct dlfs_inode *in,
			struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = in->ino;
	st->st_mode = in->mode;
	st->st_nlink = 1;
	st->st_uid = uid;
	st->st_gid = gid;
	st->st_size = (off_t)in->size;
	st->st_blksize = 4096;
	st->st_blocks = (blkcnt_t)((in->size + 511) / 512);
	st->st_mtim.tv_sec = in->mtime_sec;
	st->st_mtim.tv_nsec = in->mtime_nsec;
	st->st_atim = st->st_mtim;
	st->st_ctim = st->st_mtim;
}

/* JSON string contents: quote and backslash escaped, controls as \u,
 * and each byte that is not UTF-8 as \udcXX, the lone surrogate that
 * Python's surrogateescape decodes it to: JSON must be UTF-8, and a path
 * read back with os.fsencode gives its bytes again. */
static void json_str(const char *in, char *out, size_t len)
{
	const unsigned char *p = (const unsigned char *)in;
	size_t n = strlen(in), o = 0;
	while (n && o + 7 < len) {
		size_t k = dlfs_utf8_seq(p, n);
		if (!k) {
			o += (size_t)snprintf(out + o, len - o, "\\udc%02x", *p);
			k = 1;
		} else if (*p == '"' || *p == '\\') {
			out[o++] = '\\';
			out[o++] = (char)*p;
		} else if (*p < 0x20) {
			o += (size_t)snprintf(out + o, len - o, "\\u%04x", *p);
		} else if (o + k < len) {
			memcpy(out + o, p, k);
			o += k;
		} else {
			break;
		}
		p += k;
		n -= k;
	}
	out[o] = '\0';
}

static int render_info(struct dlfs_ctl *c, const char *mountpoint)
{
	const struct dlfs_info *in = dlfs_ds_info(c->ds);
	const struct dlfs_super_rec *s = &in->super;
	char q1[8192], q2[8192], q3[512], q4[512], sh[512] = "";
	if (c->views) {
		sh[0] = ',';
		sh[1] = ' ';
		dlfs_views_describe(c->views, sh + 2, sizeof(sh) - 2);
	}
	json_str(dlfs_ds_path(c->ds), q1, sizeof(q1));
	json_str(mountpoint, q2, sizeof(q2));
	/* From the index, which a hostile dataset may fill with anything. */
	json_str(in->order, q3, sizeof(q3));
	json_str(in->creator, q4, sizeof(q4));
	/* The feature flags by name (all known: the dataset opened). */
	char feat[512] = "";
	size_t fl = 0;
	for (unsigned bit = 0; bit < 64 && fl < sizeof(feat) - 80; bit++) {
		const char *name = dlfs_feature_name(bit);
		if ((s->features >> bit) & 1)
			fl += (size_t)snprintf(feat + fl, sizeof(feat) - fl,
					       "%s\"%s\"", fl ? ", " : "",
					       name ? name : "?");
	}
	int n = asprintf(
		&c->info_json,
		"{\"path\": \"%s\", \"mountpoint\": \"%s\", "
		"\"format_version\": \"%u.%u\", \"features\": [%s], "
		"\"dataset_id\": \"%s\", "
		"\"order\": \"%s\", \"creator\": \"%s\", \"chunk_size\": %llu, "
		"\"container_size\": %llu, \"align\": %llu, \"inodes\": %llu, "
		"\"files\": %llu, \"dirs\": %llu, \"symlinks\": %llu, "
		"\"containers\": %llu, \"file_bytes\": %llu, "
		"\"index_bytes\": %llu, \"first_file_ino\": %llu, "
		"\"pid\": %ld%s}\n",
		q1, q2, s->format_major, s->format_minor, feat,
		in->dataset_id_hex,
		q3, q4, (unsigned long long)s->chunk_size,
		(unsigned long long)s->container_size,
		(unsigned long long)s->align, (unsigned long long)s->n_inodes,
		(unsigned long long)s->n_files, (unsigned long long)s->n_dirs,
		(unsigned long long)s->n_symlinks,
		(unsigned long long)s->n_containers,
		(unsigned long long)s->total_file_bytes,
		(unsigned long long)in->index_bytes,
		(unsigned long long)s->first_file_ino, (long)getpid(), sh);
	if (n < 0) {
		c->info_json = NULL;
		return -ENOMEM;
	}
	c->info_len = (size_t)n;
	return 0;
}

int dlfs_ctl_init(struct dlfs_ctl *c, struct dlfs_ds *ds,
		  struct dlfs_views *views, const char *mountpoint, uid_t uid,
		  gid_t gid, double timeout, dlfs_ctl_stats_fn stats,
		  void *stats_arg)
{
	memset(c, 0, sizeof(*c));
	c->name = DLFS_CTL_NAME;
	c->ds = ds;
	c->views = views;
	c->uid = uid;
	c->gid = gid;
	c->timeout = timeout;
	c->stats = stats;
	c->stats_arg = stats_arg;
	pthread_mutex_init(&c->lock, NULL);
	if (views && dlfs_tree_new(views, &c->tree))
		return -ENOMEM;
	return render_info(c, mountpoint);
}

void dlfs_ctl_set_name(struct dlfs_ctl *c, const char *name)
{
	if (name)
		c->name = name;
}

int dlfs_ctl_name_check(struct dlfs_ds *ds, const char *name,
			struct dlfs_err *err)
{
	struct dlfs_txn *t;
	uint64_t ino;
	if (!name)
		name = DLFS_CTL_NAME;
	int ret = dlfs_txn_begin(ds, &t, err);
	if (ret)
		return ret;
	ret = dlfs_lookup(t, DLFS_ROOT_INO, name, strlen(name), &ino, err);
	dlfs_txn_end(t);
	if (ret == -ENOENT)
		return 0;
	if (ret)
		return ret;
	return dlfs_err_set(err, -EEXIST,
			    "%s: the dataset has an entry named '%s' at its "
			    "root, which the mount's control directory would "
			    "hide: mount it with -o ctl_dir=NAME to give the "
			    "control directory another name",
			    dlfs_ds_path(ds), name);
}

void dlfs_ctl_destroy(struct dlfs_ctl *c)
{
	free(c->info_json);
	for (int f = 0; f < DLFS_CTL_FMTS; f++)
		free(c->snap[f].buf);
	dlfs_tree_free(c->tree);
	pthread_mutex_destroy(&c->lock);
}

/* The rendering a control file serves, or -1. */
static int fmt_of(uint64_t ino)
{
	return ino == DLFS_CTL_STATS	 ? DLFS_CTL_JSON
	       : ino == DLFS_CTL_METRICS ? DLFS_CTL_METRICS_TEXT
					 : -1;
}

/* Render the counters into the snapshot of fmt, padded to whole 4 KiB
 * pages so its size rarely changes between a getattr and the read after
 * it: JSON with spaces, the metrics with one comment line of them. */
static int stats_snapshot(struct dlfs_ctl *c, int fmt)
{
	char *text;
	size_t n;
	int ret = c->stats(c->stats_arg, (enum dlfs_ctl_fmt)fmt, &text, &n);
	if (ret)
		return ret;
	size_t size = dlfs_roundup(n + 1, 4096);
	char *b = realloc(text, size);
	if (!b) {
		free(text);
		return -ENOMEM;
	}
	memset(b + n, ' ', size - n);
	if (fmt == DLFS_CTL_METRICS_TEXT && size - n > 1)
		b[n] = '#';
	b[size - 1] = '\n';
	struct dlfs_ctl_snap *s = &c->snap[fmt];
	pthread_mutex_lock(&c->lock);
	free(s->buf);
	s->buf = b;
	s->len = size;
	clock_gettime(CLOCK_REALTIME, &s->time);
	pthread_mutex_unlock(&c->lock);
	return 0;
}

static void base_attr(const struct dlfs_ctl *c, uint64_t ino, struct stat *st,
		      int dir)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_uid = c->uid;
	st->st_gid = c->gid;
	st->st_nlink = dir ? 2 : 1;
	st->st_blksize = 4096;
	st->st_mode = dir ? S_IFDIR | 0555 : S_IFREG | 0444;
	st->st_mtim.tv_sec = dlfs_ds_info(c->ds)->super.max_mtime_sec;
	st->st_atim = st->st_mtim;
	st->st_ctim = st->st_mtim;
}

void dlfs_ctl_set_log(struct dlfs_ctl *c, dlfs_log_fn log, void *arg)
{
	c->log = log;
	c->log_arg = arg;
}

/* ret, after logging err when the index was found damaged: then EIO. */
static int logged(struct dlfs_ctl *c, int ret, const struct dlfs_err *err)
{
	if (ret != -EIO && ret != -EUCLEAN)
		return ret;
	if (c->log)
		dlfs_logf(c->log, c->log_arg, LOG_ERR, "%s", err->msg);
	return -EIO;
}

/* A tree view's directory: dataset directory d's own mode and mtime,
 * never writable: whoever may not search it there may not here. */
static int tree_attr(struct dlfs_ctl *c, struct dlfs_txn *txn, uint64_t ino,
		     uint64_t d, struct stat *st)
{
	struct dlfs_inode in;
	int ret = dlfs_stat(txn, d, &in, NULL);
	if (ret)
		return ret;
	if (!S_ISDIR(in.mode))
		return -ENOENT;
	dlfs_ctl_fill_attr(c->uid, c->gid, &in, st);
	st->st_ino = ino;
	st->st_mode = S_IFDIR | (in.mode & 0555);
	st->st_nlink = 2;
	st->st_size = 0;
	st->st_blocks = 0;
	return 0;
}

/* Epoch e's files list: its size, readable as the dataset allows. */
static int files_attr(struct dlfs_ctl *c, struct dlfs_txn *txn, uint64_t ino,
		      uint64_t e, struct stat *st)
{
	uint64_t size;
	uint32_t rd;
	struct dlfs_err err = {0};
	int ret = dlfs_views_files_size(c->views, txn, e, &size, &err);
	if (ret)
		return logged(c, ret, &err);
	ret = dlfs_views_read_mode(c->views, txn, 0, 0444, &rd, NULL);
	base_attr(c, ino, st, 0);
	st->st_size = (off_t)size;
	if (ret)
		return ret;
	st->st_mode = S_IFREG | rd;
	return 0;
}

/* Sample j of epoch e: the attributes of the file it stands for. */
static int sample_attr(struct dlfs_ctl *c, struct dlfs_txn *txn, uint64_t ino,
		       uint64_t e, uint64_t j, struct stat *st)
{
	uint64_t fino;
	uint32_t rd;
	struct dlfs_inode in;
	int ret = dlfs_views_sample(c->views, txn, e, j, 0, &fino, NULL);
	if (!ret)
		ret = dlfs_stat(txn, fino, &in, NULL);
	if (!ret)
		ret = dlfs_views_read_mode(c->views, txn, fino, in.mode, &rd,
					   NULL);
	if (ret)
		return ret;
	dlfs_ctl_fill_attr(c->uid, c->gid, &in, st);
	st->st_ino = ino;
	st->st_mode = S_IFREG | rd;
	return 0;
}

int dlfs_ctl_getattr(struct dlfs_ctl *c, struct dlfs_txn *txn, uint64_t ino,
		     struct stat *st, double *attr_timeout)
{
	int ret;
	*attr_timeout = c->timeout;
	if (!dlfs_ctl_is(ino))
		return -ENOENT;
	switch (ino) {
	case DLFS_CTL_DIR:
	case DLFS_CTL_EPOCHS:
		if (ino == DLFS_CTL_EPOCHS && !c->views)
			return -ENOENT;
		base_attr(c, ino, st, 1);
		return 0;
	case DLFS_CTL_INFO:
		base_attr(c, ino, st, 0);
		st->st_size = (off_t)c->info_len;
		return 0;
	case DLFS_CTL_STATS:
	case DLFS_CTL_METRICS: {
		const struct dlfs_ctl_snap *s = &c->snap[fmt_of(ino)];
		if ((ret = stats_snapshot(c, fmt_of(ino))))
			return ret;
		base_attr(c, ino, st, 0);
		pthread_mutex_lock(&c->lock);
		st->st_size = (off_t)s->len;
		/* A new mtime makes the kernel drop its cached pages. */
		st->st_mtim = s->time;
		pthread_mutex_unlock(&c->lock);
		*attr_timeout = 0;
		return 0;
	}
	}
	if (!c->views)
		return -ENOENT;
	uint64_t e = vepoch(ino), j = ino & V_POS_MASK;
	switch (vkind(ino)) {
	case V_EPOCH:
	case V_SAMPLES:
		base_attr(c, ino, st, 1);
		return 0;
	case V_TREE:
		return tree_attr(c, txn, ino, j, st);
	case V_FILES:
		return files_attr(c, txn, ino, e, st);
	case V_SAMPLE:
		return sample_attr(c, txn, ino, e, j, st);
	}
	return -ENOENT;
}

/* An epoch number as the directory spells it: decimal, no leading 0. */
static int parse_epoch(const char *name, uint64_t *e)
{
	uint64_t v = 0;
	size_t i = 0;
	for (; name[i] >= '0' && name[i] <= '9' && i < 6; i++)
		v = v * 10 + (uint64_t)(name[i] - '0');
	if (!i || name[i] || (name[0] == '0' && i > 1) ||
	    v > DLFS_VIEWS_MAX_EPOCH)
		return -ENOENT;
	*e = v;
	return 0;
}

/* name in a tree view's directory: a sample of the share that lies in
 * that directory, or a subdirectory. */
static int tree_lookup(struct dlfs_ctl *c, struct dlfs_txn *txn,
		       uint64_t parent, const char *name, uint64_t *ino)
{
	uint64_t e = vepoch(parent), d = parent & V_POS_MASK, j, child;
	struct dlfs_inode in;
	if (!dlfs_views_parse_name(c->views, txn, e, name, &j, NULL) &&
	    j <= V_POS_MASK &&
	    !dlfs_tree_holds(c->tree, txn, e, d, j, NULL)) {
		*ino = vino(V_SAMPLE, e, j);
		return 0;
	}
	int ret = dlfs_lookup_stat(txn, d, name, strlen(name), &in, NULL);
	if (ret)
		return ret;
	child = in.ino;
	if (!S_ISDIR(in.mode) || child > V_POS_MASK)
		return -ENOENT;
	*ino = vino(V_TREE, e, child);
	return 0;
}

int dlfs_ctl_lookup(struct dlfs_ctl *c, struct dlfs_txn *txn, uint64_t parent,
		    const char *name, uint64_t *ino, struct stat *st,
		    double *attr_timeout)
{
	uint64_t e, j;
	int ret;
	if (!dlfs_ctl_is(parent)) {
		if (parent != DLFS_ROOT_INO || strcmp(name, c->name))
			return -ENOENT;
		*ino = DLFS_CTL_DIR;
	} else if (parent == DLFS_CTL_DIR) {
		if (!strcmp(name, "info"))
			*ino = DLFS_CTL_INFO;
		else if (!strcmp(name, "stats"))
			*ino = DLFS_CTL_STATS;
		else if (!strcmp(name, "metrics"))
			*ino = DLFS_CTL_METRICS;
		else if (!strcmp(name, "epochs") && c->views)
			*ino = DLFS_CTL_EPOCHS;
		else
			return -ENOENT;
	} else if (parent == DLFS_CTL_EPOCHS) {
		if (parse_epoch(name, &e))
			return -ENOENT;
		*ino = vino(V_EPOCH, e, 0);
	} else if (vkind(parent) == V_EPOCH) {
		e = vepoch(parent);
		if (!strcmp(name, "files"))
			*ino = vino(V_FILES, e, 0);
		else if (!strcmp(name, "samples"))
			*ino = vino(V_SAMPLES, e, 0);
		else if (!strcmp(name, "tree"))
			*ino = vino(V_TREE, e, DLFS_ROOT_INO);
		else
			return -ENOENT;
	} else if (vkind(parent) == V_SAMPLES) {
		e = vepoch(parent);
		ret = dlfs_views_parse_name(c->views, txn, e, name, &j, NULL);
		if (ret)
			return ret;
		if (j > V_POS_MASK)
			return -ENOENT;
		*ino = vino(V_SAMPLE, e, j);
	} else if (vkind(parent) == V_TREE) {
		if ((ret = tree_lookup(c, txn, parent, name, ino)))
			return ret;
	} else {
		return -ENOTDIR;
	}
	return dlfs_ctl_getattr(c, txn, *ino, st, attr_timeout);
}

/* The ".." of control directory ino (its epoch is e, its dataset
 * directory d for a tree view). @return 0 or a negative errno. */
static int parent_of(struct dlfs_ctl *c, struct dlfs_txn *txn, uint64_t ino,
		     uint64_t e, uint64_t d, uint64_t *parent)
{
	struct dlfs_err err = {0};
	*parent = ino == DLFS_CTL_DIR ? DLFS_ROOT_INO
		  : ino == DLFS_CTL_EPOCHS ? DLFS_CTL_DIR
		  : vkind(ino) == V_EPOCH ? DLFS_CTL_EPOCHS
					  : vino(V_EPOCH, e, 0);
	if (vkind(ino) != V_TREE || d == DLFS_ROOT_INO)
		return 0;
	int ret = dlfs_tree_parent(c->tree, txn, d, parent, &err);
	if (ret)
		return logged(c, ret, &err);
	*parent = vino(V_TREE, e, *parent);
	return 0;
}

/* Entry i of a fixed directory: /.dlfs, /.dlfs/epochs or an epoch's.
 * @return 0 with *n and *child, or 1 past the end. */
static int fixed_child(struct dlfs_ctl *c, uint64_t ino, uint64_t i,
		       char *name, size_t cap, const char **n, uint64_t *child)
{
	uint64_t e = vepoch(ino);
	if (ino == DLFS_CTL_DIR) {
		static const char *const names[] = {"info", "stats", "metrics",
						    "epochs"};
		static const uint64_t inos[] = {DLFS_CTL_INFO, DLFS_CTL_STATS,
						DLFS_CTL_METRICS,
						DLFS_CTL_EPOCHS};
		if (i >= (c->views ? 4u : 3u))
			return 1;
		*n = names[i];
		*child = inos[i];
	} else if (ino == DLFS_CTL_EPOCHS) {
		/* Every epoch is reachable; the current one and the next
		 * are listed (0 and 1 before any is read). */
		uint64_t cur = dlfs_views_current(c->views);
		uint64_t first = cur == UINT64_MAX ? 0 : cur;
		if (i >= 2 || first + i > DLFS_VIEWS_MAX_EPOCH)
			return 1;
		snprintf(name, cap, "%llu", (unsigned long long)(first + i));
		*child = vino(V_EPOCH, first + i, 0);
	} else {
		static const char *const names[] = {"files", "samples",
						    "tree"};
		if (i >= 3)
			return 1;
		*n = names[i];
		*child = i == 2	  ? vino(V_TREE, e, DLFS_ROOT_INO)
			 : i == 1 ? vino(V_SAMPLES, e, 0)
				  : vino(V_FILES, e, 0);
	}
	return 0;
}

/* Entry i of a tree view's directory: a subdirectory, or a sample of the
 * share that lies in it. @return 0 with name and *child, 1 past the end,
 * 2 for an entry to skip, or a negative errno. */
static int tree_child(struct dlfs_ctl *c, struct dlfs_txn *txn, uint64_t ino,
		      uint64_t i, char *name, size_t cap, uint64_t *child)
{
	uint64_t e = vepoch(ino), d = ino & V_POS_MASK;
	struct dlfs_err err = {0};
	struct dlfs_tree_ent ent;
	int ret = dlfs_tree_entry(c->tree, txn, e, d, i, &ent, &err);
	if (ret == 1)
		return 1;
	if (ret)
		return logged(c, ret, &err);
	if (ent.dir) {
		if (ent.ino > V_POS_MASK)
			return 2;
		memcpy(name, ent.name, cap);
		*child = vino(V_TREE, e, ent.ino);
		return 0;
	}
	ret = dlfs_views_sample_name(c->views, txn, e, ent.j, name, cap, NULL);
	if (ret < 0)
		return ret;
	*child = vino(V_SAMPLE, e, ent.j);
	return 0;
}

/* Entry i of an epoch's samples/: share position i. @return 0 with name
 * and *child, 1 past the end, or a negative errno. */
static int sample_child(struct dlfs_ctl *c, struct dlfs_txn *txn,
			uint64_t ino, uint64_t i, char *name, size_t cap,
			uint64_t *child)
{
	uint64_t e = vepoch(ino), len;
	int ret = dlfs_views_share_len(c->views, txn, e, &len, NULL);
	if (ret)
		return ret;
	if (i >= len || i > V_POS_MASK)
		return 1;
	ret = dlfs_views_sample_name(c->views, txn, e, i, name, cap, NULL);
	if (ret < 0)
		return ret;
	*child = vino(V_SAMPLE, e, i);
	return 0;
}

/* "." and ".." from *off (self: ino's attributes). @return 1 when cb
 * had no room. */
static int ctl_dots(struct dlfs_ctl *c, struct dlfs_txn *txn, uint64_t parent,
		    struct stat *st, uint64_t *off, dlfs_ctl_dir_cb cb,
		    void *arg)
{
	double tmo;
	if (*off < 1) {
		if (cb(arg, ".", st, 1))
			return 1;
		*off = 1;
	}
	if (*off < 2) {
		if (vkind(parent) != V_TREE ||
		    dlfs_ctl_getattr(c, txn, parent, st, &tmo))
			base_attr(c, parent, st, 1);
		if (cb(arg, "..", st, 2))
			return 1;
		*off = 2;
	}
	return 0;
}

int dlfs_ctl_readdir(struct dlfs_ctl *c, struct dlfs_txn *txn, uint64_t ino,
		     uint64_t off, dlfs_ctl_dir_cb cb, void *arg)
{
	struct stat st;
	double tmo;
	char name[DLFS_NAME_MAX + 1];
	uint64_t parent;
	int ret = dlfs_ctl_getattr(c, txn, ino, &st, &tmo);
	if (ret)
		return ret;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	ret = parent_of(c, txn, ino, vepoch(ino), ino & V_POS_MASK, &parent);
	if (ret)
		return ret;
	/* Offsets: 1 after ".", 2 after "..", then 3 + i after entry i. */
	if (ctl_dots(c, txn, parent, &st, &off, cb, arg))
		return 0;
	for (uint64_t i = off - 2;; i++) {
		uint64_t child;
		const char *n = name;
		if (vkind(ino) == V_TREE)
			ret = tree_child(c, txn, ino, i, name, sizeof(name),
					 &child);
		else if (vkind(ino) == V_SAMPLES)
			ret = sample_child(c, txn, ino, i, name, sizeof(name),
					   &child);
		else
			ret = fixed_child(c, ino, i, name, sizeof(name), &n,
					  &child);
		if (ret == 2)
			continue;
		if (ret)
			return ret < 0 ? ret : 0;
		ret = dlfs_ctl_getattr(c, txn, child, &st, &tmo);
		if (ret)
			return ret;
		if (cb(arg, n, &st, i + 3))
			return 0;
	}
}

static size_t copy_range(const char *src, size_t len, uint64_t off,
			 size_t size, char *buf)
{
	if (off >= len)
		return 0;
	size_t n = len - (size_t)off < size ? len - (size_t)off : size;
	memcpy(buf, src + off, n);
	return n;
}

int dlfs_ctl_read(struct dlfs_ctl *c, struct dlfs_txn *txn, uint64_t ino,
		  uint64_t off, size_t size, char *buf, size_t *got,
		  uint64_t *file_ino)
{
	int ret = 0;
	*file_ino = 0;
	*got = 0;
	if (ino == DLFS_CTL_INFO) {
		*got = copy_range(c->info_json, c->info_len, off, size, buf);
		return 0;
	}
	int fmt = fmt_of(ino);
	if (fmt >= 0) {
		const struct dlfs_ctl_snap *s = &c->snap[fmt];
		pthread_mutex_lock(&c->lock);
		if (!s->buf) {
			pthread_mutex_unlock(&c->lock);
			if ((ret = stats_snapshot(c, fmt)))
				return ret;
			pthread_mutex_lock(&c->lock);
		}
		*got = copy_range(s->buf, s->len, off, size, buf);
		pthread_mutex_unlock(&c->lock);
		return 0;
	}
	if (ino == DLFS_CTL_DIR || ino == DLFS_CTL_EPOCHS || !c->views)
		return ino == DLFS_CTL_DIR || ino == DLFS_CTL_EPOCHS ? -EISDIR
								      : -ENOENT;
	uint64_t e = vepoch(ino);
	switch (vkind(ino)) {
	case V_FILES: {
		struct dlfs_err err = {0};
		return logged(c, dlfs_views_files_read(c->views, txn, e, off, buf,
						       size, got, &err),
			      &err);
	}
	case V_SAMPLE:
		/* The first piece of a sample moves the reader on. */
		return dlfs_views_sample(c->views, txn, e, ino & V_POS_MASK,
					 off == 0, file_ino, NULL);
	case V_EPOCH:
	case V_SAMPLES:
	case V_TREE:
		return -EISDIR;
	}
	return -ENOENT;
}
