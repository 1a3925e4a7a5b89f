/* The index seal (index.sum): see include/dlfs/dataset.h and format.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <xxhash.h>

#include "dlfs/dataset.h"
#include "util.h"

/* Sequential reads of the index: large, so that a PFS sees few. */
#define READ_PIECE (8u << 20)

struct dlfs_seal_hash {
	XXH3_state_t *st;
	uint64_t n;
};

int dlfs_seal_hash_new(struct dlfs_seal_hash **out)
{
	struct dlfs_seal_hash *h = calloc(1, sizeof(*h));
	if (!h || !(h->st = XXH3_createState())) {
		free(h);
		return -ENOMEM;
	}
	XXH3_128bits_reset(h->st);
	*out = h;
	return 0;
}

void dlfs_seal_hash_add(struct dlfs_seal_hash *h, const void *p, size_t n)
{
	XXH3_128bits_update(h->st, p, n);
	h->n += n;
}

static void hash_digest(struct dlfs_seal_hash *h, uint8_t out[16])
{
	XXH128_canonical_t c;
	XXH128_canonicalFromHash(&c, XXH3_128bits_digest(h->st));
	memcpy(out, c.digest, 16);
}

int dlfs_seal_hash_end(struct dlfs_seal_hash *h, const struct dlfs_seal *s)
{
	uint8_t d[16];
	hash_digest(h, d);
	int ok = h->n == s->size && !memcmp(d, s->sum, 16);
	XXH3_freeState(h->st);
	free(h);
	return ok;
}

uint64_t dlfs_seal_fold(const struct dlfs_seal *s)
{
	uint8_t b[DLFS_ID_SIZE + 8 + 16];
	memcpy(b, s->id, DLFS_ID_SIZE);
	dlfs_put_le64(b + DLFS_ID_SIZE, s->size);
	memcpy(b + DLFS_ID_SIZE + 8, s->sum, 16);
	return XXH3_64bits(b, sizeof(b));
}

int dlfs_seal_read(const char *path, struct dlfs_seal *s,
		   struct dlfs_err *err)
{
	char *sp = NULL;
	uint8_t b[DLFS_SEAL_REC_SIZE + 1];
	int ret = 0;
	if (asprintf(&sp, "%s/%s", path, DLFS_SEAL_NAME) < 0)
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	int fd = open(sp, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = dlfs_err_sys(err, -errno, "%s", sp);
		goto out;
	}
	ssize_t n = dlfs_read_full(fd, b, sizeof(b));
	close(fd);
	if (n < 0) {
		ret = dlfs_err_sys(err, (int)n, "%s", sp);
		goto out;
	}
	struct dlfs_seal_rec r;
	if (n != DLFS_SEAL_REC_SIZE) {
		ret = dlfs_err_set(err, -DLFS_ECORRUPT,
				   "%s: %zd bytes, a seal has %d: damaged", sp,
				   n, DLFS_SEAL_REC_SIZE);
		goto out;
	}
	dlfs_seal_decode(b, &r);
	if (memcmp(r.magic, DLFS_SEAL_MAGIC, 8) ||
	    r.seal_xxh3 != XXH3_64bits(b, DLFS_SEAL_REC_SIZE - 8)) {
		ret = dlfs_err_set(err, -DLFS_ECORRUPT,
				   "%s: not a dlfs index seal, or damaged", sp);
		goto out;
	}
	if (r.format_major != DLFS_FORMAT_MAJOR) {
		ret = dlfs_err_set(err, -EPROTONOSUPPORT,
				   "%s: format %u.%u, this dlfs reads %u.x", sp,
				   r.format_major, r.format_minor,
				   DLFS_FORMAT_MAJOR);
		goto out;
	}
	memcpy(s->id, r.dataset_id, DLFS_ID_SIZE);
	dlfs_hex(s->id, DLFS_ID_SIZE, s->id_hex);
	s->size = r.index_size;
	memcpy(s->sum, r.index_xxh128, 16);
out:
	free(sp);
	return ret;
}

int dlfs_seal_of_fd(int fd, const uint8_t *id, struct dlfs_seal *s)
{
	struct dlfs_seal_hash *h = NULL;
	uint8_t *buf = malloc(READ_PIECE);
	int ret = 0;
	if (!buf || dlfs_seal_hash_new(&h)) {
		ret = -ENOMEM;
		goto out;
	}
	for (uint64_t off = 0;;) {
		ssize_t n = dlfs_pread_full(fd, buf, READ_PIECE, off);
		if (n < 0) {
			ret = (int)n;
			goto out;
		}
		dlfs_seal_hash_add(h, buf, (size_t)n);
		off += (uint64_t)n;
		if ((size_t)n < READ_PIECE)
			break;
	}
	memcpy(s->id, id, DLFS_ID_SIZE);
	dlfs_hex(s->id, DLFS_ID_SIZE, s->id_hex);
	s->size = h->n;
	hash_digest(h, s->sum);
out:
	if (h) {
		XXH3_freeState(h->st);
		free(h);
	}
	free(buf);
	return ret;
}

int dlfs_seal_make(const char *index_path, const uint8_t *id,
		   struct dlfs_seal *s, struct dlfs_err *err)
{
	int fd = open(index_path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return dlfs_err_sys(err, -errno, "%s", index_path);
	int ret = dlfs_seal_of_fd(fd, id, s);
	close(fd);
	if (ret)
		dlfs_err_sys(err, ret, "%s", index_path);
	return ret;
}

int dlfs_seal_write(const char *dir, const struct dlfs_seal *s,
		    struct dlfs_err *err)
{
	struct dlfs_seal_rec r = {
		.format_major = DLFS_FORMAT_MAJOR,
		.format_minor = DLFS_FORMAT_MINOR,
		.index_size = s->size,
	};
	memcpy(r.magic, DLFS_SEAL_MAGIC, 8);
	memcpy(r.dataset_id, s->id, DLFS_ID_SIZE);
	memcpy(r.index_xxh128, s->sum, 16);
	uint8_t b[DLFS_SEAL_REC_SIZE];
	dlfs_seal_encode(&r, b);
	char *sp = NULL;
	if (asprintf(&sp, "%s/%s", dir, DLFS_SEAL_NAME) < 0)
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	int ret = 0;
	int fd = open(sp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		ret = dlfs_err_sys(err, -errno, "%s", sp);
		goto out;
	}
	ret = dlfs_write_full(fd, b, sizeof(b));
	if (!ret && fsync(fd) < 0)
		ret = -errno;
	if (close(fd) < 0 && !ret)
		ret = -errno;
	if (ret)
		dlfs_err_sys(err, ret, "%s", sp);
out:
	free(sp);
	return ret;
}
