/* Opening a dataset and its containers: see include/dlfs/dataset.h. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ds_priv.h"
#include "records.h"
#include "util.h"

#include <xxhash.h>


int dlfs_ds_open(const char *path, struct dlfs_ds **out, struct dlfs_err *err)
{
	return dlfs_ds_open_index(path, NULL, NULL, out, err);
}

int dlfs_ds_open_index(const char *path, const char *index_path,
		       const uint8_t *expect_id, struct dlfs_ds **out,
		       struct dlfs_err *err)
{
	int ret;
	struct stat st;
	struct dlfs_ds *ds = NULL;

	if (stat(path, &st) < 0)
		return dlfs_err_sys(err, -errno, "%s", path);
	if (!S_ISDIR(st.st_mode))
		return dlfs_err_set(err, -ENOTDIR,
				    "%s: not a dlfs dataset (not a directory)",
				    path);
	ds = calloc(1, sizeof(*ds));
	if (!ds || !(ds->path = strdup(path))) {
		free(ds);
		return dlfs_err_set(err, -ENOMEM, "%s: out of memory", path);
	}
	ret = dlfs_index_open(&ds->ix, ds->path, index_path, err);
	if (ret)
		goto fail;
	if (expect_id &&
	    memcmp(ds->ix.info.super.dataset_id, expect_id, DLFS_ID_SIZE)) {
		ret = dlfs_err_set(err, -DLFS_ECORRUPT,
				   "%s: the index names dataset %s, not the "
				   "one its seal names",
				   index_path ? index_path : path,
				   ds->ix.info.dataset_id_hex);
		goto fail;
	}
	ds->containers = calloc(ds->ix.info.super.n_containers + 1,
				sizeof(*ds->containers));
	if (!ds->containers) {
		ret = dlfs_err_set(err, -ENOMEM, "%s: out of memory", path);
		goto fail;
	}
	pthread_mutex_init(&ds->open_lock, NULL);
	*out = ds;
	return 0;
fail:
	dlfs_index_close(&ds->ix);
	free(ds->path);
	free(ds);
	return ret;
}

void dlfs_ds_close(struct dlfs_ds *ds)
{
	if (!ds)
		return;
	for (uint64_t i = 0; i < ds->ix.info.super.n_containers; i++) {
		struct dlfs_container_slot *s = &ds->containers[i];
		if (atomic_load(&s->state) == 1) {
			close(s->fd);
			if (s->dfd >= 0)
				close(s->dfd);
			if (s->rfd >= 0)
				close(s->rfd);
		}
		free(s->msg);
	}
	free(ds->containers);
	pthread_mutex_destroy(&ds->open_lock);
	dlfs_index_close(&ds->ix);
	free(ds->path);
	free(ds);
}

const struct dlfs_info *dlfs_ds_info(const struct dlfs_ds *ds)
{
	return &ds->ix.info;
}

int dlfs_txn_begin(struct dlfs_ds *ds, struct dlfs_txn **out,
		   struct dlfs_err *err)
{
	return dlfs_index_txn_begin(&ds->ix, out, err);
}

const struct dlfs_container *dlfs_ds_container(const struct dlfs_ds *ds,
					       uint32_t c)
{
	return c < ds->ix.info.super.n_containers ? &ds->ix.cont[c] : NULL;
}

uint64_t dlfs_ds_n_chunks(const struct dlfs_ds *ds)
{
	return ds->ix.n_chunks;
}

int dlfs_container_locate(const struct dlfs_container *t, uint32_t n,
			  uint64_t n_chunks, uint64_t g, uint32_t *c,
			  uint64_t *k)
{
	uint32_t lo = 0, hi = n;
	if (g >= n_chunks || !n)
		return -EINVAL;
	/* The last container whose first chunk is <= g ... */
	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (t[mid].first_chunk <= g)
			lo = mid;
		else
			hi = mid;
	}
	/* ... that has chunks: an empty one shares its successor's first
	 * chunk, so only empty ones at the very end can be met here. */
	while (lo > 0 && g - t[lo].first_chunk >= t[lo].n_chunks)
		lo--;
	*c = lo;
	*k = g - t[lo].first_chunk;
	return 0;
}

int dlfs_ds_chunk_locate(const struct dlfs_ds *ds, uint64_t g, uint32_t *c,
			 uint64_t *k)
{
	return dlfs_container_locate(ds->ix.cont,
				     (uint32_t)ds->ix.info.super.n_containers,
				     ds->ix.n_chunks, g, c, k);
}

const char *dlfs_ds_path(const struct dlfs_ds *ds)
{
	return ds->path;
}

const char *dlfs_ds_cpath(const struct dlfs_ds *ds, uint32_t c, char *buf,
			  size_t cap)
{
	const struct dlfs_archive *a = dlfs_ds_archive(ds, c);
	if (a && a->path) {
		snprintf(buf, cap, a->path[0] == '/' ? "%s%s" : "%s/%s",
			 a->path[0] == '/' ? "" : ds->path, a->path);
	} else {
		char name[DLFS_CONTAINER_NAME_MAX];
		dlfs_container_name(c, name);
		snprintf(buf, cap, "%s/%s", ds->path, name);
	}
	return buf;
}

/* Check container c's header and footer against the index; *size is
 * its size. A container shorter than the index says (a copy cut short)
 * passes with its header alone: its footer went with the cut, and its
 * chunks are checked against the cut as they are read (past_cut). */
static int container_validate(struct dlfs_ds *ds, uint32_t c, int fd,
			      const char *cpath, uint64_t *size,
			      struct dlfs_err *err)
{
	const struct dlfs_container *rec = &ds->ix.cont[c];
	if (rec->bad)
		return dlfs_err_set(err, -DLFS_ECORRUPT,
				    "%s: its record in the index is damaged",
				    cpath);
	if (ds->ix.arc) {
		/* An archive: no header or footer of ours, but it must be
		 * the one indexed. */
		*size = rec->file_size;
		return dlfs_archive_check_fd(ds, c, fd, cpath, err);
	}

	uint8_t hb[DLFS_CONTAINER_HEADER_REC_SIZE];
	ssize_t n = dlfs_pread_full(fd, hb, sizeof(hb), 0);
	if (n < 0)
		return dlfs_err_sys(err, (int)n, "%s: reading header", cpath);
	int ret = dlfs_header_check(hb, (size_t)n, &ds->ix.info, c, rec,
				    cpath, err);
	if (ret)
		return ret;

	/* Size after identity: a foreign container says so first. */
	struct stat st;
	if (fstat(fd, &st) < 0)
		return dlfs_err_sys(err, -errno, "%s", cpath);
	*size = (uint64_t)st.st_size;
	if (*size < rec->file_size)
		return 0;
	if (*size != rec->file_size)
		return dlfs_err_set(err, -DLFS_ECORRUPT,
				    "%s: container is the wrong size: %llu "
				    "bytes, the index says %llu",
				    cpath, (unsigned long long)*size,
				    (unsigned long long)rec->file_size);

	uint8_t fb[DLFS_FOOTER_SIZE];
	n = dlfs_pread_full(fd, fb, sizeof(fb), rec->file_size - sizeof(fb));
	if (n < 0)
		return dlfs_err_sys(err, (int)n, "%s: reading footer", cpath);
	return dlfs_footer_check(fb, (size_t)n, rec, cpath, err);
}

void dlfs_ds_set_chunk_io(struct dlfs_ds *ds, enum dlfs_chunk_io io)
{
	ds->chunk_io = io;
}

/* The fd chunk reads use, per dlfs_ds_set_chunk_io; -1 = the plain one. */
static void open_chunk_fd(struct dlfs_ds *ds, struct dlfs_container_slot *s,
			  const char *cpath)
{
	s->dfd = -1;
	s->rfd = -1;
	s->dfd_direct = 0;
	s->dio_align = 4096;
	if (ds->chunk_io == DLFS_CHUNK_IO_DIRECT) {
		s->dfd = open(cpath, O_RDONLY | O_CLOEXEC | O_DIRECT);
		s->dfd_direct = s->dfd >= 0;
	}
	/* Finer than a page only when the file system says so, for both
	 * the file offsets and the memory (buffers are page aligned). */
	struct statx sx;
	if (s->dfd_direct &&
	    !statx(s->dfd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &sx) &&
	    (sx.stx_mask & STATX_DIOALIGN) && sx.stx_dio_offset_align &&
	    sx.stx_dio_offset_align < 4096 &&
	    !(sx.stx_dio_offset_align & (sx.stx_dio_offset_align - 1)) &&
	    sx.stx_dio_mem_align && sx.stx_dio_mem_align <= 4096)
		s->dio_align = sx.stx_dio_offset_align;
	if (s->dfd_direct && ds->ix.arc) {
		s->rfd = open(cpath, O_RDONLY | O_CLOEXEC);
		if (s->rfd >= 0)
			posix_fadvise(s->rfd, 0, 0, POSIX_FADV_RANDOM);
	}
	if (s->dfd < 0 && ds->chunk_io != DLFS_CHUNK_IO_PLAIN) {
		/* No read-ahead past the chunk: it would be read for nothing
		 * and dropped. */
		s->dfd = open(cpath, O_RDONLY | O_CLOEXEC);
		if (s->dfd >= 0)
			posix_fadvise(s->dfd, 0, 0, POSIX_FADV_RANDOM);
	}
}

int dlfs_ds_container_fd(struct dlfs_ds *ds, uint32_t c, int *fd,
			 struct dlfs_err *err)
{
	char name[DLFS_CPATH_MAX];
	if (c >= ds->ix.info.super.n_containers)
		return dlfs_err_set(err, -DLFS_ECORRUPT,
				    "%s: container %u out of range", ds->path,
				    c);
	struct dlfs_container_slot *s = &ds->containers[c];
	int state = atomic_load_explicit(&s->state, memory_order_acquire);
	if (state == 1) {
		*fd = s->fd;
		return 0;
	}
	int ret = 0;
	pthread_mutex_lock(&ds->open_lock);
	state = atomic_load_explicit(&s->state, memory_order_relaxed);
	if (state == 0) {
		char *cpath = NULL;
		struct dlfs_err e = {0};
		dlfs_ds_cpath(ds, c, name, sizeof(name));
		if (!(cpath = strdup(name))) {
			ret = dlfs_err_set(err, -ENOMEM, "out of memory");
			goto unlock; /* not remembered: may work later */
		}
		int f = open(cpath, O_RDONLY | O_CLOEXEC);
		if (f < 0) {
			ret = dlfs_err_sys(&e, -errno, "%s", cpath);
		} else {
			ret = container_validate(ds, c, f, cpath, &s->size,
						 &e);
			if (ret) {
				close(f);
			} else {
				s->fd = f;
				dlfs_precache_extents(f);
				open_chunk_fd(ds, s, cpath);
			}
		}
		free(cpath);
		if (ret)
			s->msg = strdup(e.msg);
		atomic_store_explicit(&s->state, ret ? ret : 1,
				      memory_order_release);
		state = ret ? ret : 1;
	}
	if (state == 1)
		*fd = s->fd;
	else
		ret = dlfs_err_set(err, state, "%s",
				   s->msg ? s->msg : "container unusable");
unlock:
	pthread_mutex_unlock(&ds->open_lock);
	return ret;
}

int dlfs_ds_container_cut(struct dlfs_ds *ds, uint32_t c, uint64_t *size)
{
	if (c >= ds->ix.info.super.n_containers)
		return 0;
	const struct dlfs_container_slot *s = &ds->containers[c];
	if (atomic_load_explicit(&s->state, memory_order_acquire) != 1 ||
	    s->size >= ds->ix.cont[c].file_size)
		return 0;
	*size = s->size;
	return 1;
}

int dlfs_ds_past_cut(const struct dlfs_ds *ds, uint32_t c, uint64_t k,
		     uint64_t end, struct dlfs_err *err)
{
	const struct dlfs_container_slot *s = &ds->containers[c];
	if (end <= s->size)
		return 0;
	char name[DLFS_CPATH_MAX];
	dlfs_ds_cpath(ds, c, name, sizeof(name));
	return dlfs_err_set(err, -DLFS_ECORRUPT,
			    "%s: container is truncated: %llu bytes, the "
			    "index says %llu; chunk %llu ends at byte %llu, "
			    "past the cut",
			    name, (unsigned long long)s->size,
			    (unsigned long long)ds->ix.cont[c].file_size,
			    (unsigned long long)k, (unsigned long long)end);
}

/* Is [off, off + len) of container c (an uncompressed dataset's, whose
 * chunks lie at their logical place) readable: does the chunk of its
 * last byte end before a cut? A range outside the data region is
 * checked as it is. */
int dlfs_ds_raw_past_cut(const struct dlfs_ds *ds, uint32_t c, uint64_t off,
			 size_t len, struct dlfs_err *err)
{
	const uint64_t cs = ds->ix.info.super.chunk_size;
	const uint64_t d0 = DLFS_DATA_OFFSET(cs);
	const uint64_t dend = d0 + ds->ix.cont[c].data_size;
	uint64_t end = off + len, k = 0;
	if (len && end > d0 && end <= dend) {
		k = dlfs_chunk_at(cs, end - 1);
		end = dlfs_chunk_start(cs, k) + cs;
		if (end > dend)
			end = dend;
	}
	return dlfs_ds_past_cut(ds, c, k, end, err);
}

int dlfs_ds_pread(struct dlfs_ds *ds, uint32_t c, void *buf, size_t len,
		  uint64_t off, struct dlfs_err *err)
{
	int fd;
	int ret = dlfs_ds_container_fd(ds, c, &fd, err);
	if (!ret)
		ret = dlfs_ds_raw_past_cut(ds, c, off, len, err);
	if (ret)
		return ret;
	ssize_t n = dlfs_pread_full(fd, buf, len, off);
	if (n < 0) {
		char name[DLFS_CPATH_MAX];
		dlfs_ds_cpath(ds, c, name, sizeof(name));
		return dlfs_err_sys(err, (int)n, "%s: read at offset %llu",
				    name, (unsigned long long)off);
	}
	if ((size_t)n < len) {
		char name[DLFS_CPATH_MAX];
		dlfs_ds_cpath(ds, c, name, sizeof(name));
		return dlfs_err_set(err, -DLFS_ECORRUPT,
				    "%s: truncated: short read at offset "
				    "%llu",
				    name, (unsigned long long)off);
	}
	return 0;
}

int dlfs_ds_compressed(const struct dlfs_ds *ds)
{
	return dlfs_stored_apart(ds->ix.info.super.features);
}
