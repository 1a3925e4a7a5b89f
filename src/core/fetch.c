/* The tiers below RAM: see fetch.h. */
#include "fetch.h"

#include <stdlib.h>

#include <xxhash.h>

#include "dlfs/format.h"

int dlfs_fetch_chunk(void *arg, void *ctx, uint32_t c, uint64_t k, void *buf,
		     size_t cap, size_t *len, struct dlfs_err *err)
{
	struct dlfs_fetch *f = arg;
	struct dlfs_txn *txn = ctx;
	int ret;
	if (f->nvme) {
		struct dlfs_chunk_rec cr;
		ret = dlfs_chunk_get(txn, c, k, &cr, err);
		if (ret)
			return ret;
		if (dlfs_nvme_read_chunk(f->nvme, c, k, cr.length, cr.xxh3, buf,
					 cap) == 0) {
			*len = cr.length;
			return 0;
		}
		/* Absent after all, damaged or unreadable: the PFS has it. */
	}
	if (f->peer) {
		uint64_t g = dlfs_ds_container(f->ds, c)->first_chunk + k;
		struct dlfs_chunk_rec cr;
		if (dlfs_peer_home(f->peer, g) != dlfs_peer_rank(f->peer) &&
		    dlfs_chunk_get(txn, c, k, &cr, NULL) == 0 &&
		    dlfs_peer_get(f->peer, g, buf, cap, len) == 0) {
			/* A peer's bytes are checked like the PFS's. */
			if (*len == cr.length && XXH3_64bits(buf, *len) == cr.xxh3) {
				if (f->nvme)
					dlfs_nvme_put(f->nvme, c, k, buf, *len);
				return 0;
			}
			dlfs_stats_add(&f->stats->err_peer, 1);
		}
	}
	ret = dlfs_chunk_read(f->ds, txn, c, k, buf, cap, len, err);
	if (ret)
		return ret;
	dlfs_stats_pfs_read(f->stats, *len);
	if (f->nvme)
		dlfs_nvme_put(f->nvme, c, k, buf, *len);
	return 0;
}

int dlfs_fetch_init(struct dlfs_fetch *f, uint64_t n_inodes)
{
	f->n_inodes = n_inodes;
	f->file_ok = calloc(n_inodes / 64 + 1, sizeof(*f->file_ok));
	return f->file_ok ? 0 : -ENOMEM;
}

void dlfs_fetch_destroy(struct dlfs_fetch *f)
{
	free((void *)f->file_ok);
	f->file_ok = NULL;
}

static int file_known(const struct dlfs_fetch *f, uint64_t ino)
{
	return f->file_ok && ino < f->n_inodes &&
	       (atomic_load_explicit(&f->file_ok[ino / 64],
				     memory_order_relaxed) >>
		(ino % 64)) & 1;
}

static void file_set(struct dlfs_fetch *f, uint64_t ino, int ok)
{
	if (!f->file_ok || ino >= f->n_inodes)
		return;
	uint64_t bit = UINT64_C(1) << (ino % 64);
	if (ok)
		atomic_fetch_or_explicit(&f->file_ok[ino / 64], bit,
					 memory_order_relaxed);
	else
		atomic_fetch_and_explicit(&f->file_ok[ino / 64], ~bit,
					  memory_order_relaxed);
}

int dlfs_fetch_file(struct dlfs_fetch *f, const struct dlfs_inode *in,
		    uint64_t off, size_t len, void *buf, const uint8_t **data)
{
	const uint8_t *got;
	int stable;
	if (!f->nvme || !in->size || off >= in->size)
		return -ENOENT;
	if (len > in->size - off)
		len = (size_t)(in->size - off);
	if (len + 8192 > DLFS_FETCH_BUF_SIZE)
		return -ENOENT;
	uint32_t c = in->container;
	if (file_known(f, in->ino) ||
	    dlfs_nvme_range_verified(f->nvme, c, in->offset + off, len)) {
		if (dlfs_nvme_pread(f->nvme, c, in->offset + off, len, buf,
				    data, &stable))
			return -ENOENT;
		if (stable)
			return 0;
		/* Chunks were evicted meanwhile: check, as below. */
	}
	if (in->size > DLFS_FETCH_FILE_CHECK_MAX)
		return -ENOENT; /* the chunk path reads and verifies chunks */
	/* Read the whole file and check it against its own checksum. */
	if (dlfs_nvme_pread(f->nvme, c, in->offset, (size_t)in->size, buf,
			    &got, &stable))
		return -ENOENT;
	if (XXH3_64bits(got, in->size) != in->xxh3) {
		const uint64_t cs = dlfs_ds_info(f->ds)->super.chunk_size;
		uint64_t k0, k1;
		file_set(f, in->ino, 0);
		dlfs_file_chunks(cs, in, 0, in->size, &k0, &k1);
		for (uint64_t k = k0; k <= k1; k++)
			dlfs_nvme_drop(f->nvme, c, k);
		return -ENOENT;
	}
	file_set(f, in->ino, 1);
	*data = got + off;
	return 0;
}
