/*
 * dlfs_verify: every container front to back, every chunk and file
 * checksum. The chunks and files are walked by cwalk.c, each chunk read
 * once; this file judges what the walk finds and names the damage.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "cwalk.h"
#include "ds_priv.h"
#include "dlfs/check.h"
#include "records.h"
#include "util.h"

/* Files named for one unusable container; the rest are counted. */
#define DLFS_VERIFY_NAME_MAX 1000

struct bad {
	uint64_t ino; /* 0: damage outside any file */
	uint32_t container;
	uint64_t offset;
	char *msg;
};

struct verify {
	struct dlfs_ds *ds;
	struct dlfs_txn *txn;
	dlfs_verify_cb cb;
	void *arg;
	struct dlfs_verify_report *rep;
	struct bad *bad;
	size_t n_bad, cap_bad;
	struct dlfs_cwalk *walk;
	uint32_t c;        /* the container being walked */
	uint64_t n_cut;    /* its chunks past the cut of a container cut short */
	int chunk_bad;     /* the chunk being walked failed a check */
	int file_bad_here; /* a file that ends in it failed, or it is named */
};

static int add_bad(struct verify *v, uint64_t ino, uint32_t c, uint64_t off,
		   const char *msg)
{
	if (v->n_bad == v->cap_bad) {
		size_t cap = v->cap_bad ? v->cap_bad * 2 : 16;
		struct bad *b = realloc(v->bad, cap * sizeof(*b));
		if (!b)
			return -ENOMEM;
		v->bad = b;
		v->cap_bad = cap;
	}
	v->bad[v->n_bad] = (struct bad){ino, c, off, strdup(msg)};
	if (!v->bad[v->n_bad].msg)
		return -ENOMEM;
	v->n_bad++;
	return 0;
}

static void report(struct verify *v, const char *path, const char *msg)
{
	if (v->cb)
		v->cb(v->arg, path, msg);
}

/*
 * Read the trailer, check it against the footer's checksum, and walk its
 * records: each must parse, and together they must fill the trailer
 * exactly and number n_records. It is read in pieces; a record cut by a
 * piece's end is carried over (less than DLFS_TRAILER_REC_MAX bytes).
 */
static int check_trailer(struct verify *v, int fd, const char *cname,
			 uint64_t file_size, uint64_t data_size)
{
	const size_t piece = 1 << 20;
	const uint64_t cs = v->ds->ix.info.super.chunk_size;
	uint8_t fb[DLFS_FOOTER_SIZE];
	struct dlfs_container_footer f;
	if (dlfs_pread_full(fd, fb, sizeof(fb), file_size - sizeof(fb)) !=
	    (ssize_t)sizeof(fb))
		return -EIO;
	dlfs_footer_decode(fb, &f);
	if (dlfs_trailer_pos_check(&f, file_size)) {
		report(v, cname, "trailer position is inconsistent");
		return 1;
	}
	/* Never more than the trailer: a small one needs a small buffer. */
	uint64_t cap = piece + DLFS_TRAILER_REC_MAX;
	if (cap > f.trailer_size)
		cap = f.trailer_size;
	XXH3_state_t *hs = XXH3_createState();
	uint8_t *buf = malloc(cap ? (size_t)cap : 1);
	size_t have = 0; /* bytes in buf not walked yet */
	struct dlfs_trailer_walk w = {.chunk_size = cs, .data_size = data_size};
	int ret = 0;
	if (!hs || !buf) {
		ret = -ENOMEM;
		goto out;
	}
	XXH3_64bits_reset(hs);
	for (uint64_t at = 0; at < f.trailer_size;) {
		size_t len = f.trailer_size - at < piece
				     ? (size_t)(f.trailer_size - at)
				     : piece;
		ssize_t n = dlfs_pread_full(fd, buf + have, len,
					    f.trailer_offset + at);
		if (n != (ssize_t)len) {
			ret = n < 0 ? (int)n : -EIO;
			goto out;
		}
		XXH3_64bits_update(hs, buf + have, len);
		at += len;
		have += len;
		size_t used = dlfs_trailer_walk(&w, buf, have);
		memmove(buf, buf + used, have - used);
		have -= used;
	}
	if (XXH3_64bits_digest(hs) != f.trailer_xxh3) {
		report(v, cname, "trailer checksum mismatch");
		ret = 1;
	} else if (w.bad || have || w.n_records != f.n_records) {
		char msg[160];
		snprintf(msg, sizeof(msg),
			 "trailer records are damaged (%llu read, the footer "
			 "says %llu)",
			 (unsigned long long)w.n_records,
			 (unsigned long long)f.n_records);
		report(v, cname, msg);
		ret = 1;
	}
out:
	XXH3_freeState(hs);
	free(buf);
	return ret;
}

/* A file's verdict: counted, and named if bad. @return 0 or -ENOMEM. */
static int file_done(struct verify *v, const struct dlfs_inode *in,
		     uint32_t c, const char *bad, struct dlfs_err *err)
{
	v->rep->files++;
	v->rep->bytes += bad ? 0 : in->size;
	if (!bad)
		return 0;
	v->rep->bad_files++;
	if (add_bad(v, in->ino, c, in->offset, bad))
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	return 0;
}

/*
 * The container walk's callbacks (cwalk.h). A chunk's damage is named
 * when it is read and says which chunk (its record, its stored bytes);
 * a chunk that only fails its checksum is named at its end, and only
 * when no file that ends in it failed its own. Chunks past the cut of a
 * container cut short are counted, not named: the container's message
 * says how many, and their files say why they fail.
 */
static int on_chunk(void *arg, uint64_t k, uint64_t start, int st,
		    const char *msg, struct dlfs_err *err)
{
	struct verify *v = arg;
	(void)k;
	v->rep->chunks++;
	v->chunk_bad = st != 0;
	v->file_bad_here = 0;
	if (st == -ENODATA) {
		v->n_cut++;
		v->file_bad_here = 1; /* its files say so */
	} else if (st && msg) {
		v->file_bad_here = 1; /* named already */
		if (add_bad(v, 0, v->c, start, msg))
			return dlfs_err_set(err, -ENOMEM, "out of memory");
	}
	return 0;
}

static int on_chunk_end(void *arg, uint64_t k, uint64_t start,
			struct dlfs_err *err)
{
	struct verify *v = arg;
	(void)k;
	if (!v->chunk_bad)
		return 0;
	v->rep->bad_chunks++;
	if (!v->file_bad_here &&
	    add_bad(v, 0, v->c, start,
		    "chunk checksum mismatch outside any file that ends in "
		    "this chunk"))
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	return 0;
}

static int on_file(void *arg, const struct dlfs_inode *in, const char *bad,
		   struct dlfs_err *err)
{
	struct verify *v = arg;
	if (bad && S_ISREG(in->mode))
		v->file_bad_here = 1;
	return file_done(v, in, v->c, bad, err);
}

static const struct dlfs_cwalk_ops verify_ops = {
	.chunk = on_chunk,
	.chunk_end = on_chunk_end,
	.file = on_file,
};

/* Container c could not be opened (why says why: missing, cut inside
 * its header, a bad header): it is named, and its files too, up to a
 * limit a terminal can take. @return 0 or -ENOMEM. */
static int container_unusable(struct verify *v, uint32_t c,
			      const char *cname, const char *why,
			      struct dlfs_err *err)
{
	const struct dlfs_container *rec = dlfs_ds_container(v->ds, c);
	char msg[DLFS_ERR_MSG_MAX + 64];
	snprintf(msg, sizeof(msg), "%s (%llu files in it unchecked)", why,
		 (unsigned long long)rec->n_files);
	report(v, cname, msg);
	v->rep->bad_containers++;
	v->rep->bad_files += rec->n_files;
	for (uint64_t i = 0; i < rec->n_files && i < DLFS_VERIFY_NAME_MAX; i++)
		if (add_bad(v, rec->first_ino + i, c, 0,
			    "in an unusable container"))
			return dlfs_err_set(err, -ENOMEM, "out of memory");
	if (rec->n_files > DLFS_VERIFY_NAME_MAX) {
		snprintf(msg, sizeof(msg),
			 "and %llu more files in this container",
			 (unsigned long long)(rec->n_files -
					      DLFS_VERIFY_NAME_MAX));
		report(v, cname, msg);
	}
	return 0;
}

/* Container c, cut short at size bytes: named, with both sizes and how
 * many of its chunks (counted by the walk) lie past the cut. */
static void container_cut(struct verify *v, const char *cname,
			  const struct dlfs_container *rec, uint64_t size)
{
	char msg[256];
	snprintf(msg, sizeof(msg),
		 "container is truncated: %llu bytes, the index says %llu "
		 "(its trailer is lost; %llu of its %llu chunks lie past the "
		 "cut)",
		 (unsigned long long)size, (unsigned long long)rec->file_size,
		 (unsigned long long)v->n_cut,
		 (unsigned long long)rec->n_chunks);
	report(v, cname, msg);
}

/* Container c: its trailer, then every chunk and file through the walk.
 * A container cut short lost its trailer: its chunks say the rest. */
static int verify_container(struct verify *v, uint32_t c,
			    struct dlfs_err *err)
{
	struct dlfs_ds *ds = v->ds;
	const struct dlfs_container *rec = dlfs_ds_container(ds, c);
	struct dlfs_err e = {0};
	char cname[DLFS_CPATH_MAX];
	uint64_t size = 0;
	int fd, ret;

	/* An in-place dataset's containers are archives: named by their
	 * paths, and without a trailer of ours. */
	int arc = dlfs_ds_archive(ds, c) != NULL;
	if (arc)
		dlfs_ds_cpath(ds, c, cname, sizeof(cname));
	else
		dlfs_container_name(c, cname);
	v->rep->containers++;
	v->c = c;
	v->n_cut = 0;
	ret = dlfs_ds_container_fd(ds, c, &fd, &e);
	if (ret)
		return container_unusable(v, c, cname, e.msg, err);
	int cut = dlfs_ds_container_cut(ds, c, &size);
	ret = cut || arc ? 0
			 : check_trailer(v, fd, cname, rec->file_size,
					 rec->data_size);
	if (ret < 0)
		return dlfs_err_sys(err, ret, "%s/%s: reading the trailer",
				    ds->path, cname);
	if (ret || cut)
		v->rep->bad_containers++;
	ret = dlfs_cwalk_container(v->walk, c, err);
	if (!ret && cut)
		container_cut(v, cname, rec, size);
	return ret;
}

/*
 * Name the damaged files. One scan of the directory entries records each
 * directory's parent and name, and those of the damaged inodes; paths are
 * then composed bottom up.
 */
struct name {
	uint64_t parent;
	const char *name;
	size_t len;
};

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* The path of entry nm, composed up through dirs (each directory's own
 * entry) in path (1 << 16 bytes of scratch), quoted for a message into
 * buf (len bytes). */
static void entry_path(const struct name *dirs, uint64_t nd, struct name nm,
		       char *path, char *buf, size_t len)
{
	size_t at = (1 << 16) - 1, depth = 0;
	path[at] = '\0';
	int first = 1;
	while (nm.name && at > nm.len + 1 && depth++ < 4096) {
		if (!first)
			path[--at] = '/';
		first = 0;
		at -= nm.len;
		memcpy(path + at, nm.name, nm.len);
		if (nm.parent == DLFS_ROOT_INO || nm.parent > nd)
			break;
		nm = dirs[nm.parent];
	}
	dlfs_quote(path + at, strlen(path + at), buf, len);
}

/* Where damage b is: its container's name, or an in-place dataset's
 * archive path and, for a file, the offset of its bytes in the archive
 * (through its chunk's record). */
static void where_of(struct verify *v, const struct bad *b,
		     char buf[DLFS_CPATH_MAX], size_t cap)
{
	const uint64_t cs = dlfs_ds_info(v->ds)->super.chunk_size;
	struct dlfs_chunk_rec cr;
	if (!dlfs_ds_archive(v->ds, b->container)) {
		dlfs_container_name(b->container, buf);
		return;
	}
	char p[DLFS_CPATH_MAX - 64]; /* room for the offset after it */
	dlfs_ds_cpath(v->ds, b->container, p, sizeof(p));
	uint64_t k = b->offset >= DLFS_DATA_OFFSET(cs)
			     ? dlfs_chunk_at(cs, b->offset)
			     : UINT64_MAX;
	if (k != UINT64_MAX && b->ino &&
	    !dlfs_chunk_get(v->txn, b->container, k, &cr, NULL) &&
	    !(cr.flags & DLFS_CHUNK_DEFLATE))
		snprintf(buf, cap, "%s, member bytes at offset %llu", p,
			 (unsigned long long)(cr.stored_offset + b->offset -
					      dlfs_chunk_start(cs, k)));
	else
		snprintf(buf, cap, "%s", p);
}

static int report_bad(struct verify *v, struct dlfs_err *err)
{
	if (!v->n_bad)
		return 0;
	uint64_t nd = v->ds->ix.info.super.n_dirs;
	struct name *dirs = calloc(nd + 1, sizeof(*dirs));
	uint64_t *inos = malloc(v->n_bad * sizeof(*inos));
	struct name *files = calloc(v->n_bad, sizeof(*files));
	char *path = malloc(1 << 16);
	int ret = 0;
	if (!dirs || !inos || !files || !path) {
		ret = dlfs_err_set(err, -ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < v->n_bad; i++)
		inos[i] = v->bad[i].ino;
	qsort(inos, v->n_bad, sizeof(*inos), cmp_u64);

	MDB_cursor *cur = v->txn->dirents;
	MDB_val k, val;
	int rc = mdb_cursor_get(cur, &k, &val, MDB_FIRST);
	for (; !rc; rc = mdb_cursor_get(cur, &k, &val, MDB_NEXT)) {
		if (k.mv_size <= 8 || val.mv_size != 8)
			continue;
		uint64_t child = dlfs_get_le64(val.mv_data) &
				 DLFS_DIRENT_INO_MASK;
		struct name nm = {dlfs_get_be64(k.mv_data),
				  (const char *)k.mv_data + 8, k.mv_size - 8};
		if (child <= nd) {
			dirs[child] = nm;
			continue;
		}
		uint64_t *hit = bsearch(&child, inos, v->n_bad, sizeof(*inos),
					cmp_u64);
		if (hit)
			files[hit - inos] = nm;
	}
	for (size_t i = 0; i < v->n_bad; i++) {
		struct bad *b = &v->bad[i];
		char msg[DLFS_CPATH_MAX + 512];
		char cname[DLFS_CPATH_MAX];
		where_of(v, b, cname, sizeof(cname));
		if (b->offset && !dlfs_ds_archive(v->ds, b->container))
			snprintf(msg, sizeof(msg), "%s (container %s, offset "
				 "%llu)", b->msg, cname,
				 (unsigned long long)b->offset);
		else
			snprintf(msg, sizeof(msg), "%s (%s %s)", b->msg,
				 dlfs_ds_archive(v->ds, b->container)
					 ? "archive"
					 : "container",
				 cname);
		if (!b->ino) {
			report(v, cname, msg);
			continue;
		}
		uint64_t *hit = bsearch(&b->ino, inos, v->n_bad, sizeof(*inos),
					cmp_u64);
		char quoted[1 << 12];
		entry_path(dirs, nd, files[hit - inos], path, quoted,
			   sizeof(quoted));
		report(v, quoted, msg);
	}
out:
	free(dirs);
	free(inos);
	free(files);
	free(path);
	return ret;
}

/*
 * Every directory entry against the inode record it leads to (format
 * 1.1, path_bound): one that leads to a sound record bound to another
 * name is damaged, and named by its path. Damaged records themselves are
 * the file walk's to report.
 */
static int verify_names(struct verify *v, struct dlfs_err *err)
{
	const struct dlfs_super_rec *s = &v->ds->ix.info.super;
	if (!(s->features & DLFS_FEATURE(PATH_BOUND)))
		return 0;
	uint64_t nd = s->n_dirs;
	struct name *dirs = calloc(nd + 1, sizeof(*dirs));
	char *scratch = malloc(1 << 16);
	struct bad_name {
		struct name nm;
		char msg[DLFS_ERR_MSG_MAX];
	} *bad = NULL;
	size_t n_bad = 0, cap_bad = 0;
	int ret = 0;
	if (!dirs || !scratch) {
		ret = dlfs_err_set(err, -ENOMEM, "out of memory");
		goto out;
	}
	MDB_cursor *cur = v->txn->dirents;
	MDB_val k, val;
	int rc = mdb_cursor_get(cur, &k, &val, MDB_FIRST);
	for (; !rc; rc = mdb_cursor_get(cur, &k, &val, MDB_NEXT)) {
		struct dlfs_dirent d;
		if (dlfs_dirent_decode(s, k.mv_data, k.mv_size, val.mv_data,
				       val.mv_size, &d))
			continue; /* damaged: readdir and lookup say so */
		struct name nm = {dlfs_get_be64(k.mv_data), d.name,
				  d.name_len};
		struct dlfs_inode in;
		struct dlfs_err e = {0};
		int r = dlfs_stat_entry(v->txn, nm.parent, d.name, d.name_len,
					d.ino, &in, &e);
		if (!r) {
			if (d.ino <= nd)
				dirs[d.ino] = nm;
			continue;
		}
		if (r != -DLFS_ECORRUPT || dlfs_stat(v->txn, d.ino, &in, NULL))
			continue; /* the record is damaged, not the entry */
		if (dlfs_grow((void **)&bad, &cap_bad, n_bad + 1,
			      sizeof(*bad))) {
			ret = dlfs_err_set(err, -ENOMEM, "out of memory");
			goto out;
		}
		bad[n_bad].nm = nm;
		snprintf(bad[n_bad].msg, sizeof(bad[n_bad].msg), "%s", e.msg);
		n_bad++;
	}
	if (rc != MDB_NOTFOUND) {
		ret = dlfs_err_set(err, dlfs_mdb_errno(rc), "%s/index: %s",
				   v->ds->path, mdb_strerror(rc));
		goto out;
	}
	for (size_t i = 0; i < n_bad; i++) {
		char path[1 << 12];
		entry_path(dirs, nd, bad[i].nm, scratch, path, sizeof(path));
		v->rep->bad_names++;
		report(v, path, bad[i].msg);
	}
out:
	free(dirs);
	free(scratch);
	free(bad);
	return ret;
}

/* The index against its seal: the bytes every node's copy is checked
 * against. Damage is reported, not returned. */
static int verify_seal(struct verify *v, struct dlfs_err *err)
{
	struct dlfs_seal s, now;
	struct dlfs_err e = {0};
	int ret = dlfs_seal_read(v->ds->path, &s, &e);
	if (ret == -ENOENT)
		return 0;
	if (ret) {
		v->rep->bad_index = 1;
		report(v, DLFS_SEAL_NAME, e.msg);
		return 0;
	}
	v->rep->sealed = 1;
	char *ip = NULL;
	if (asprintf(&ip, "%s/%s", v->ds->path, DLFS_INDEX_NAME) < 0)
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	ret = dlfs_seal_make(ip, v->ds->ix.info.super.dataset_id, &now, err);
	free(ip);
	if (ret)
		return ret;
	if (memcmp(s.id, now.id, DLFS_ID_SIZE) || s.size != now.size ||
	    memcmp(s.sum, now.sum, 16)) {
		v->rep->bad_index = 1;
		report(v, DLFS_INDEX_NAME,
		       s.size != now.size
			       ? "its size is not the one its seal (index.sum) "
				 "gives"
			       : memcmp(s.id, now.id, DLFS_ID_SIZE)
					 ? "its seal (index.sum) names another "
					   "dataset"
					 : "its checksum is not the one its seal "
					   "(index.sum) gives: damaged");
	}
	return 0;
}

int dlfs_verify(struct dlfs_ds *ds, dlfs_verify_cb cb, void *arg,
		struct dlfs_verify_report *rep, struct dlfs_err *err)
{
	struct verify v = {.ds = ds, .cb = cb, .arg = arg, .rep = rep};
	memset(rep, 0, sizeof(*rep));
	int ret = dlfs_txn_begin(ds, &v.txn, err);
	if (!ret)
		ret = dlfs_cwalk_new(ds, v.txn, &verify_ops, &v, &v.walk, err);
	if (!ret)
		ret = verify_seal(&v, err);
	for (uint32_t c = 0; c < ds->ix.info.super.n_containers && !ret; c++)
		ret = verify_container(&v, c, err);
	if (!ret)
		ret = report_bad(&v, err);
	if (!ret)
		ret = verify_names(&v, err);
	for (size_t i = 0; i < v.n_bad; i++)
		free(v.bad[i].msg);
	free(v.bad);
	dlfs_cwalk_free(v.walk);
	dlfs_txn_end(v.txn);
	return ret;
}
