/* The tiers below RAM: see fetch.h. */
#include "fetch.h"

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
	ret = dlfs_chunk_read(f->ds, txn, c, k, buf, cap, len, err);
	if (ret)
		return ret;
	dlfs_stats_pfs_read(f->stats, *len);
	if (f->nvme)
		dlfs_nvme_put(f->nvme, c, k, buf, *len);
	return 0;
}

int dlfs_fetch_file(struct dlfs_fetch *f, const struct dlfs_inode *in,
		    uint64_t off, size_t len, void *buf, const uint8_t **data)
{
	if (!f->nvme || !in->size || off >= in->size)
		return -ENOENT;
	const uint64_t cs = dlfs_ds_info(f->ds)->super.chunk_size;
	const uint64_t base = DLFS_DATA_OFFSET(cs);
	uint64_t k0 = (in->offset - base) / cs;
	uint64_t k1 = (in->offset + in->size - 1 - base) / cs;
	if (len > in->size - off)
		len = (size_t)(in->size - off);
	if (len + 8192 > DLFS_FETCH_BUF_SIZE)
		return -ENOENT;
	/* A small file is read whole, so that it can be checked alone when
	 * its chunks were not verified since the tier opened. */
	int small = in->size <= DLFS_FETCH_FILE_CHECK_MAX;
	uint64_t from = small ? 0 : off;
	size_t n = small ? (size_t)in->size : len;
	const uint8_t *got;
	int checked;
	if (dlfs_nvme_pread(f->nvme, in->container, in->offset + from, n, buf,
			    &got, &checked))
		return -ENOENT;
	if (!checked && !small)
		return -ENOENT; /* the chunk path reads and verifies chunks */
	if (!checked && XXH3_64bits(got, in->size) != in->xxh3) {
		for (uint64_t k = k0; k <= k1; k++)
			dlfs_nvme_drop(f->nvme, in->container, k);
		return -ENOENT;
	}
	*data = got + (off - from);
	return 0;
}
