/*
 * One archive indexed into a part, and a part read back (inplace_part.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "inplace_part.h"
#include "scan_kind.h"

/* ---- writing ---- */

static void put_u32(struct dlfs_str *b, uint32_t v)
{
	dlfs_str_add(b, &v, sizeof(v));
}

static void put_u64(struct dlfs_str *b, uint64_t v)
{
	dlfs_str_add(b, &v, sizeof(v));
}

/* A string with its NUL, its length (NUL included) first; 0 for NULL. */
static void put_s(struct dlfs_str *b, const char *s)
{
	uint32_t n = s ? (uint32_t)strlen(s) + 1 : 0;
	put_u32(b, n);
	if (n)
		dlfs_str_add(b, s, n);
}

static void put_type(struct dlfs_str *b, char t)
{
	dlfs_str_add(b, &t, 1);
}

/* A worker's archive: its part, where it goes, and the counters. */
struct pw {
	struct dlfs_str *part;
	const struct pk_ip_sink *sink; /* NULL: the part is kept whole */
	struct pk_ip_counters *c;
};

/* The part to the sink once it holds a piece's worth. */
static int hand_over(struct pw *w, struct dlfs_err *err)
{
	if (w->part->oom)
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	if (!w->sink || w->part->n < PK_IP_PIECE)
		return 0;
	return w->sink->give(w->sink->arg, w->part)
		       ? dlfs_err_set(err, -ENOMEM, "out of memory")
		       : 0;
}

/* A member, recorded (ip_put_fn). */
static int rec_member(void *arg, const struct ip_member *m,
		      struct dlfs_err *err)
{
	struct pw *w = arg;
	struct dlfs_str *b = w->part;
	put_type(b, 'M');
	put_u32(b, m->mode);
	put_u32(b, m->mtime_nsec);
	put_u64(b, (uint64_t)m->mtime_sec);
	put_u64(b, m->size);
	put_u64(b, m->loc);
	put_u64(b, m->xxh3);
	put_u64(b, m->offset);
	put_u32(b, (uint32_t)m->hard);
	put_s(b, m->name);
	put_s(b, m->link);
	if (S_ISREG(m->mode) && !m->hard)
		atomic_fetch_add_explicit(&w->c->files, 1,
					  memory_order_relaxed);
	return hand_over(w, err);
}

/* A warning, recorded in its place (dlfs_warn_cb). */
static void rec_warn(void *arg, const char *msg)
{
	struct pw *w = arg;
	put_type(w->part, 'W');
	put_s(w->part, msg);
}

static void rec_fail(struct dlfs_str *b, int early, const struct dlfs_err *e)
{
	put_type(b, 'F');
	put_u32(b, (uint32_t)early);
	put_u32(b, (uint32_t)e->code);
	put_s(b, e->msg);
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

/* The chunks the run closed, then the end record. */
static void rec_end(struct dlfs_str *b, const struct pk_inplace *ch,
		    uint32_t kind, uint64_t data_size, uint64_t n_chunks)
{
	for (uint64_t g = 0; g < ch->n_ch; g++) {
		put_type(b, 'C');
		put_u64(b, ch->ch.xxh3[g]);
		put_u64(b, ch->ch.sum[g]);
		put_u64(b, ch->ch.stored_offset[g]);
		put_u32(b, ch->ch.stored_length[g]);
		put_u32(b, ch->ch.length[g]);
		put_u32(b, ch->ch.flags[g]);
	}
	put_type(b, 'E');
	put_u32(b, kind);
	put_u64(b, data_size);
	put_u64(b, n_chunks);
}

/* The archive open as fd (st), walked through a run into w's part. */
static int read_archive(struct pw *w, const char *path, int fd,
			const struct stat *st, const struct dlfs_pack_opts *o,
			struct dlfs_err *err)
{
	struct dlfs_pack_opts wo = *o;
	struct pk_inplace ch = {0}; /* the archive's chunks, from 0 */
	struct ip_run r;
	uint64_t size = (uint64_t)st->st_size, data_size = 0, n_chunks = 0;
	uint32_t kind = 0;
	wo.warn = rec_warn;
	wo.cb_arg = w;
	int ret = detect(fd, path, size, &kind, err);
	if (!ret)
		ret = ip_run_open(&r, path, fd, size, o->chunk_size, &ch, err);
	if (ret)
		return ret;
	r.progress = &w->c->bytes;
	posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	ret = kind == DLFS_ARCHIVE_ZIP
		      ? ip_zip_walk(&r, rec_member, w, &wo, err)
		      : ip_tar_walk(&r, rec_member, w, &wo, err);
	if (!ret)
		ret = ip_run_end(&r, &data_size, &n_chunks, err);
	ip_run_close(&r);
	if (!ret)
		rec_end(w->part, &ch, kind, data_size, n_chunks);
	pk_ip_chunks_free(&ch);
	return ret;
}

int pk_ip_part_make(const char *path, const struct dlfs_pack_opts *o,
		    struct pk_ip_counters *c, const struct pk_ip_sink *sink,
		    struct dlfs_str *part)
{
	struct pw w = {.part = part, .sink = sink, .c = c};
	struct dlfs_err err = {0};
	struct stat st;
	int early = 1, ret = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		ret = dlfs_err_sys(&err, -errno, "%s", path);
	else if (fstat(fd, &st) < 0)
		ret = dlfs_err_sys(&err, -errno, "%s", path);
	else if (!S_ISREG(st.st_mode))
		ret = dlfs_err_set(&err, -EINVAL,
				   "%s: not a file: --in-place takes tar and "
				   "zip archives",
				   path);
	if (!ret) {
		early = 0;
		put_type(part, 'S');
		put_u64(part, (uint64_t)st.st_size);
		put_u64(part, (uint64_t)st.st_mtim.tv_sec);
		put_u32(part, (uint32_t)st.st_mtim.tv_nsec);
		ret = read_archive(&w, path, fd, &st, o, &err);
	}
	if (fd >= 0)
		close(fd);
	if (ret)
		rec_fail(part, early, &err);
	if (part->oom)
		return -ENOMEM;
	if (sink && sink->give(sink->arg, part))
		return -ENOMEM;
	return ret != 0;
}

/* ---- reading ---- */

static int get(struct pk_ip_part_rd *rd, void *out, size_t n)
{
	if ((size_t)(rd->end - rd->p) < n)
		return -EPROTO;
	memcpy(out, rd->p, n);
	rd->p += n;
	return 0;
}

/* The next n bytes into out, unless *ret already failed. */
static void take(struct pk_ip_part_rd *rd, void *out, size_t n, int *ret)
{
	if (!*ret)
		*ret = get(rd, out, n);
}

/* A string put_s wrote: NULL for none, else NUL-terminated in place. */
static int get_s(struct pk_ip_part_rd *rd, const char **s)
{
	uint32_t n;
	int ret = get(rd, &n, sizeof(n));
	*s = NULL;
	if (ret || !n)
		return ret;
	if ((size_t)(rd->end - rd->p) < n || rd->p[n - 1] != '\0')
		return -EPROTO;
	*s = rd->p;
	rd->p += n;
	return 0;
}

static int get_member(struct pk_ip_part_rd *rd, struct ip_member *m)
{
	uint64_t sec = 0;
	uint32_t hard = 0;
	int ret = 0;
	take(rd, &m->mode, sizeof(m->mode), &ret);
	take(rd, &m->mtime_nsec, sizeof(m->mtime_nsec), &ret);
	take(rd, &sec, sizeof(sec), &ret);
	take(rd, &m->size, sizeof(m->size), &ret);
	take(rd, &m->loc, sizeof(m->loc), &ret);
	take(rd, &m->xxh3, sizeof(m->xxh3), &ret);
	take(rd, &m->offset, sizeof(m->offset), &ret);
	take(rd, &hard, sizeof(hard), &ret);
	m->mtime_sec = (int64_t)sec;
	m->hard = hard != 0;
	if (!ret)
		ret = get_s(rd, &m->name);
	if (!ret)
		ret = get_s(rd, &m->link);
	return !ret && !m->name ? -EPROTO : ret;
}

static int get_fail(struct pk_ip_part_rd *rd, struct pk_ip_rec *r)
{
	uint32_t early = 0, code = 0;
	const char *msg = NULL;
	int ret = 0;
	take(rd, &early, sizeof(early), &ret);
	take(rd, &code, sizeof(code), &ret);
	if (!ret)
		ret = get_s(rd, &msg);
	if (ret || !msg || !(int)code)
		return ret ? ret : -EPROTO;
	r->early = early != 0;
	dlfs_err_set(&r->fail, (int)code, "%s", msg);
	return 0;
}

/* The fields of a record of type r->type. */
static int get_fields(struct pk_ip_part_rd *rd, struct pk_ip_rec *r)
{
	uint64_t sec = 0;
	int ret = 0;
	switch (r->type) {
	case 'F':
		return get_fail(rd, r);
	case 'S':
		take(rd, &r->size, sizeof(r->size), &ret);
		take(rd, &sec, sizeof(sec), &ret);
		take(rd, &r->mtime_nsec, sizeof(r->mtime_nsec), &ret);
		r->mtime_sec = (int64_t)sec;
		return ret;
	case 'M':
		return get_member(rd, &r->m);
	case 'W':
		ret = get_s(rd, &r->msg);
		return !ret && !r->msg ? -EPROTO : ret;
	case 'C':
		take(rd, &r->xxh3, sizeof(r->xxh3), &ret);
		take(rd, &r->sum, sizeof(r->sum), &ret);
		take(rd, &r->stored_offset, sizeof(r->stored_offset), &ret);
		take(rd, &r->stored_length, sizeof(r->stored_length), &ret);
		take(rd, &r->length, sizeof(r->length), &ret);
		take(rd, &r->flags, sizeof(r->flags), &ret);
		return ret;
	case 'E':
		take(rd, &r->kind, sizeof(r->kind), &ret);
		take(rd, &r->data_size, sizeof(r->data_size), &ret);
		take(rd, &r->n_chunks, sizeof(r->n_chunks), &ret);
		return ret;
	}
	return -EPROTO;
}

int pk_ip_part_next(struct pk_ip_part_rd *rd, struct pk_ip_rec *rec)
{
	if (rd->p == rd->end)
		return 0;
	memset(rec, 0, sizeof(*rec));
	int ret = get(rd, &rec->type, 1);
	if (!ret)
		ret = get_fields(rd, rec);
	return ret ? ret : 1;
}
