/*
 * Container files (container.h): opening one, writing at an offset, and
 * the trailer, footer and header written once the data is in.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "dlfs/format.h"
#include "container.h"
#include "util.h"

int pk_container_open(const char *dir, uint32_t c, int flags, int *fd,
		      char *path, size_t plen, struct dlfs_err *err)
{
	char name[DLFS_CONTAINER_NAME_MAX];
	dlfs_container_name(c, name);
	snprintf(path, plen, "%s/%s", dir, name);
	*fd = open(path, flags | O_WRONLY | O_CLOEXEC, 0644);
	if (*fd < 0)
		return dlfs_err_sys(err, -errno, "%s", path);
	return 0;
}

int pk_write_at(int fd, const void *buf, size_t len, uint64_t off,
		const char *path, struct dlfs_err *err)
{
	int ret = dlfs_pwrite_full(fd, buf, len, off);
	if (ret)
		return dlfs_err_sys(err, ret, "%s: write at offset %llu", path,
				    (unsigned long long)off);
	return 0;
}

/*
 * A container's trailer as it is written: records gather in buf and go
 * out in large writes, hashed on the way; the footer follows them.
 */
#define TRAILER_BUF (1u << 20)
#define TRAILER_AB 1024 /* entries' attributes read at a time */

struct trailer {
	int fd;
	const char *path; /* the container's, for errors */
	uint64_t start;   /* the trailer's offset in the file */
	uint64_t at;      /* where buf goes */
	uint64_t nrec;    /* records so far */
	uint8_t *buf;
	size_t used;
	XXH3_state_t *hs;
	struct pk_attr *ab; /* a batch of TRAILER_AB entries' attributes */
	char *pb;           /* an entry's path */
	size_t pcap;
};

/* buf holds TRAILER_BUF bytes of records and, after the last, the footer:
 * records are flushed at TRAILER_BUF, so the footer may start at its end. */
static int trailer_init(struct trailer *tr, struct dlfs_err *err)
{
	tr->buf = malloc(TRAILER_BUF + DLFS_FOOTER_SIZE);
	tr->ab = malloc(TRAILER_AB * sizeof(*tr->ab));
	tr->hs = XXH3_createState();
	if (!tr->buf || !tr->hs || !tr->ab)
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	XXH3_64bits_reset(tr->hs);
	return 0;
}

static void trailer_free(struct trailer *tr)
{
	XXH3_freeState(tr->hs);
	free(tr->buf);
	free(tr->pb);
	free(tr->ab);
}

/* The records gathered so far, hashed and written. */
static int trailer_flush(struct trailer *tr, struct dlfs_err *err)
{
	XXH3_64bits_update(tr->hs, tr->buf, tr->used);
	int ret =
		pk_write_at(tr->fd, tr->buf, tr->used, tr->at, tr->path, err);
	if (ret)
		return ret;
	tr->at += tr->used;
	tr->used = 0;
	return 0;
}

/* Entry e's record (attributes a): the record, its path, and a symlink's
 * target. */
static int trailer_add(const struct pk_pipe *p, struct trailer *tr,
		       const struct pk_entry *e, const struct pk_attr *a,
		       struct dlfs_err *err)
{
	const struct pk_layout *l = p->l;
	uint64_t k = (uint64_t)(e - p->t->e);
	size_t plen;
	int ret;
	if (pk_entry_path(p->t, e, &tr->pb, &tr->pcap, &plen))
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	int lnk = S_ISLNK(e->mode), reg = S_ISREG(e->mode);
	size_t need = DLFS_TRAILER_REC_SIZE + plen + (lnk ? e->size : 0);
	if (tr->used + need > TRAILER_BUF && (ret = trailer_flush(tr, err)))
		return ret;
	if (need > TRAILER_BUF)
		return dlfs_err_set(err, -ENAMETOOLONG,
				    "%s: entry too large", tr->pb);
	struct dlfs_trailer_rec rec = {
		.mode = e->mode,
		.mtime_nsec = a->mtime_nsec,
		.mtime_sec = a->mtime_sec,
		.size = e->size,
		.offset = reg ? pk_loc_offset(l->loc[k]) : 0,
		.xxh3 = reg ? l->xxh3[k] : 0,
		.path_len = (uint32_t)plen,
	};
	dlfs_trailer_rec_encode(&rec, tr->buf + tr->used);
	tr->used += DLFS_TRAILER_REC_SIZE;
	memcpy(tr->buf + tr->used, tr->pb, plen);
	tr->used += plen;
	if (lnk) {
		memcpy(tr->buf + tr->used, pk_target(e), e->size);
		tr->used += e->size;
	}
	tr->nrec++;
	return 0;
}

/* The records of entries [i0, i1) in layout order. */
static int trailer_range(const struct pk_pipe *p, struct trailer *tr,
			 uint64_t i0, uint64_t i1, struct dlfs_err *err)
{
	int ret = 0;
	for (uint64_t i = i0; i < i1 && !ret; i++) {
		const struct pk_entry *e = pk_at(p->t, p->l, i);
		uint64_t bi = (i - i0) % TRAILER_AB, m = i1 - i;
		if (!bi &&
		    (ret = pk_attr_read(p->t, (uint64_t)(e - p->t->e),
					m < TRAILER_AB ? m : TRAILER_AB,
					tr->ab, err)))
			break;
		ret = trailer_add(p, tr, e, &tr->ab[bi], err);
	}
	return ret;
}

/* The footer after the last records, written with them; ct has the
 * container's size and the footer's checksum. */
static int trailer_end(struct trailer *tr, uint32_t c, const uint8_t *id,
		       struct pk_containers *ct, struct dlfs_err *err)
{
	XXH3_64bits_update(tr->hs, tr->buf, tr->used);
	struct dlfs_container_footer f = {
		.container = c,
		.trailer_offset = tr->start,
		.trailer_size = tr->at + tr->used - tr->start,
		.n_records = tr->nrec,
		.trailer_xxh3 = XXH3_64bits_digest(tr->hs),
	};
	memcpy(f.magic, DLFS_FOOTER_MAGIC, 8);
	memcpy(f.dataset_id, id, DLFS_ID_SIZE);
	dlfs_footer_encode(&f, tr->buf + tr->used);
	tr->used += DLFS_FOOTER_SIZE;
	int ret =
		pk_write_at(tr->fd, tr->buf, tr->used, tr->at, tr->path, err);
	if (ret)
		return ret;
	tr->at += tr->used;
	ct->file_size[c] = tr->at;
	ct->footer_xxh3[c] = f.footer_xxh3;
	return 0;
}

/* The header block: the record, then zeros to 4 KiB (buf: scratch). */
static int write_header(const struct pk_pipe *p, int fd, const char *path,
			uint32_t c, const uint8_t *id, uint8_t *buf,
			struct dlfs_err *err)
{
	struct dlfs_container_header h = {
		.format_major = DLFS_FORMAT_MAJOR,
		.format_minor = DLFS_FORMAT_MINOR,
		.header_size = DLFS_HEADER_SIZE,
		.container = c,
		.chunk_size = p->cs,
		.data_offset = DLFS_DATA_OFFSET(p->cs),
		.data_size = p->l->data_size[c],
	};
	memcpy(h.magic, DLFS_CONTAINER_MAGIC, 8);
	memcpy(h.dataset_id, id, DLFS_ID_SIZE);
	memset(buf, 0, DLFS_HEADER_SIZE);
	dlfs_header_encode(&h, buf);
	return pk_write_at(fd, buf, DLFS_HEADER_SIZE, 0, path, err);
}

int pk_container_finish(const struct pk_pipe *p, uint32_t c,
			const uint8_t *id, struct pk_containers *ct,
			struct dlfs_err *err)
{
	const struct pk_layout *l = p->l;
	char path[4096];
	struct trailer tr = {.path = path};
	int ret = pk_container_open(p->dir, c, O_CREAT, &tr.fd, path,
				    sizeof(path), err);
	if (ret)
		return ret;
	/* Compressed: right after the last stored chunk. */
	tr.start = tr.at =
		p->o->compress != DLFS_COMPRESS_NONE
			? (p->stored_end[c] ? p->stored_end[c]
					    : DLFS_DATA_OFFSET(p->cs))
			: DLFS_DATA_OFFSET(p->cs) +
				  dlfs_roundup(l->data_size[c], 4096);
	ret = trailer_init(&tr, err);
	/* Container 0 also carries the directories and symlinks. */
	if (!ret && c == 0)
		ret = trailer_range(p, &tr, 0, l->n_dirs + l->n_symlinks, err);
	if (!ret)
		ret = trailer_range(p, &tr, l->first_file[c],
				    l->first_file[c] + l->n_cfiles[c], err);
	if (!ret)
		ret = trailer_end(&tr, c, id, ct, err);
	if (!ret)
		ret = write_header(p, tr.fd, path, c, id, tr.buf, err);
	if (!ret && fsync(tr.fd) < 0)
		ret = dlfs_err_sys(err, -errno, "%s: fsync", path);
	trailer_free(&tr);
	if (close(tr.fd) < 0 && !ret)
		ret = dlfs_err_sys(err, -errno, "%s: close", path);
	return ret;
}
