/* The tiers below RAM: see fetch.h. */
#include "fetch.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <xxhash.h>

#include "dlfs/format.h"
#include "util.h"

int dlfs_fetch_init(struct dlfs_fetch *f, struct dlfs_ds *ds,
		    struct dlfs_stats *stats)
{
	memset(f, 0, sizeof(*f));
	f->ds = ds;
	f->stats = stats;
	f->compressed = dlfs_stored_apart(dlfs_ds_info(ds)->super.features);
	f->n_inodes = dlfs_ds_info(ds)->super.n_inodes + 1;
	f->file_ok = calloc(f->n_inodes / 64 + 1, sizeof(*f->file_ok));
	return f->file_ok ? 0 : -ENOMEM;
}

void dlfs_fetch_destroy(struct dlfs_fetch *f)
{
	if (!f->file_ok_placed)
		free((void *)f->file_ok);
	f->file_ok = NULL;
}

void dlfs_fetch_place_files(struct dlfs_fetch *f, uint64_t *bits)
{
	if (!f->file_ok_placed)
		free((void *)f->file_ok);
	f->file_ok = (_Atomic uint64_t *)bits;
	f->file_ok_placed = 1;
}

int dlfs_fetch_file_known(const struct dlfs_fetch *f, uint64_t ino)
{
	return ino < f->n_inodes &&
	       (atomic_load_explicit(&f->file_ok[ino / 64],
				     memory_order_relaxed) >>
		(ino % 64)) & 1;
}

void dlfs_fetch_file_set(struct dlfs_fetch *f, uint64_t ino, int ok)
{
	if (ino >= f->n_inodes)
		return;
	uint64_t bit = UINT64_C(1) << (ino % 64);
	if (ok)
		atomic_fetch_or_explicit(&f->file_ok[ino / 64], bit,
					 memory_order_relaxed);
	else
		atomic_fetch_and_explicit(&f->file_ok[ino / 64], ~bit,
					  memory_order_relaxed);
}

/* A container read: counted while in flight, and in the PFS stats with
 * its time. @return its start, for pfs_end. */
static uint64_t pfs_begin(struct dlfs_fetch *f)
{
	atomic_fetch_add_explicit(&f->pfs_inflight, 1, memory_order_relaxed);
	return dlfs_stats_clock();
}

static void pfs_end(struct dlfs_fetch *f, uint64_t t0, int ret,
		    uint64_t bytes, enum dlfs_pfs_why why)
{
	atomic_fetch_sub_explicit(&f->pfs_inflight, 1, memory_order_relaxed);
	if (!ret) {
		dlfs_stats_time(f->stats, DLFS_TIER_PFS, t0);
		dlfs_stats_pfs_read(f->stats, bytes);
		dlfs_stats_add(&f->stats->pfs_why[why], 1);
	}
}

/*
 * Ask the peers for chunk k of container c (global g): into l, checked,
 * and handed to the NVMe tier when tier. @return 0 when a peer served it;
 * else -1 with *why, the reason the PFS must read it.
 */
static int from_peer(struct dlfs_fetch *f, struct dlfs_txn *txn, uint32_t c,
		     uint64_t k, int tier, struct dlfs_load *l,
		     enum dlfs_pfs_why *why)
{
	const struct dlfs_fetch_peer *p = f->peer;
	uint64_t g = dlfs_ds_container(f->ds, c)->first_chunk + k;
	struct dlfs_chunk_rec cr;
	if (p->home(p->arg, g) == p->rank) {
		*why = DLFS_PFS_HOME;
		return -1;
	}
	*why = DLFS_PFS_ERROR;
	if (dlfs_chunk_get(txn, c, k, &cr, NULL))
		return -1;
	int ret = p->get(p->arg, g, l->buf, l->cap, &l->len);
	if (ret) {
		*why = ret == -EXDEV	   ? DLFS_PFS_SUBSTITUTE
		       : ret == -EHOSTDOWN ? DLFS_PFS_GONE
					   : DLFS_PFS_ERROR;
		return -1;
	}
	/* A peer's bytes are checked like the PFS's (the logical bytes'
	 * sum: a peer sends them decompressed). */
	if (l->len != cr.length || XXH3_64bits(l->buf, l->len) != cr.sum) {
		dlfs_stats_add(&f->stats->err_peer, 1);
		return -1;
	}
	l->kept = tier && dlfs_nvme_put(f->nvme, c, k, l->buf, l->len, 0);
	return 0;
}

/* An NVMe read that started at t0 ended with ret: timed when it served. */
static int nvme_timed(struct dlfs_fetch *f, uint64_t t0, int ret)
{
	if (!ret)
		dlfs_stats_time(f->stats, DLFS_TIER_NVME, t0);
	return ret;
}

static int load_chunk(struct dlfs_fetch *f, struct dlfs_txn *txn, uint32_t c,
		      uint64_t k, const struct dlfs_fetch_chunk_opts *o,
		      struct dlfs_load *l)
{
	struct dlfs_chunk_rec cr;
	int ret;
	int tier = f->nvme && !(o && o->defer_nvme);
	l->off = 0;
	if (f->nvme) {
		ret = dlfs_chunk_get(txn, c, k, &cr, l->err);
		if (ret)
			return ret;
		uint64_t t0 = dlfs_stats_clock();
		if (nvme_timed(f, t0,
			       dlfs_nvme_read_chunk(f->nvme, c, k, cr.length,
						    cr.sum, l->buf,
						    l->cap)) == 0) {
			l->len = cr.length;
			l->kept = 1;
			return 0;
		}
		/* Absent after all, damaged or unreadable: read it again. */
	}
	enum dlfs_pfs_why why = DLFS_PFS_MISS;
	if (f->peer && o && o->serve) {
		uint64_t g = dlfs_ds_container(f->ds, c)->first_chunk + k;
		why = f->peer->home(f->peer->arg, g) == f->peer->rank
			      ? DLFS_PFS_HOME
			      : DLFS_PFS_SUBSTITUTE;
	} else if (f->peer && !from_peer(f, txn, c, k, tier, l, &why)) {
		return 0;
	}
	if ((ret = dlfs_chunk_get(txn, c, k, &cr, l->err)))
		return ret;
	uint64_t t0 = pfs_begin(f);
	int unz = f->compressed &&
		  (cr.flags & (DLFS_CHUNK_ZSTD | DLFS_CHUNK_DEFLATE));
	enum dlfs_unz who = o && o->dec ? DLFS_UNZ_FILL
			    : f->decode ? DLFS_UNZ_DECODE
					: DLFS_UNZ_CALLER;
	if (unz && who == DLFS_UNZ_DECODE)
		ret = dlfs_decode_chunk(f->decode, c, k, &cr, l->buf, l->cap,
					&l->len, l->err);
	else
		ret = dlfs_chunk_read_rec(f->ds, c, k, &cr, o ? o->dec : NULL,
					  l->buf, l->cap, &l->len, l->err);
	/* The PFS served the stored bytes: fewer than the chunk's when it
	 * is compressed. */
	pfs_end(f, t0, ret, f->compressed ? cr.stored_length : l->len, why);
	if (ret)
		return ret;
	if (unz)
		dlfs_stats_add(&f->stats->unz[who], 1);
	l->kept = tier && dlfs_nvme_put(f->nvme, c, k, l->buf, l->len, 0);
	return 0;
}

/* Do all of in's chunks sit in the NVMe tier? */
static int nvme_has_file(struct dlfs_fetch *f, const struct dlfs_inode *in)
{
	uint64_t k0, k1;
	if (!f->nvme)
		return 0;
	dlfs_file_chunks(dlfs_ds_info(f->ds)->super.chunk_size, in, 0,
			 in->size, &k0, &k1);
	for (uint64_t k = k0; k <= k1; k++)
		if (!dlfs_nvme_has(f->nvme, in->container, k))
			return 0;
	return 1;
}

/* Does buf[off, off + in->size) hold file in? */
static int file_sum_ok(const struct dlfs_inode *in, const void *buf,
		       size_t off)
{
	return XXH3_64bits((const uint8_t *)buf + off, in->size) == in->xxh3;
}

static int load_file(struct dlfs_fetch *f, struct dlfs_txn *txn,
		     const struct dlfs_inode *in, struct dlfs_load *l)
{
	const uint8_t *data;
	int stable, ret;
	if (in->size + 8192 > l->cap)
		return dlfs_err_set(l->err, -EINVAL,
				    "inode %llu: %llu bytes is too large to "
				    "read alone",
				    (unsigned long long)in->ino,
				    (unsigned long long)in->size);
	l->len = (size_t)in->size;
	uint64_t t0 = dlfs_stats_clock();
	if (nvme_has_file(f, in) &&
	    nvme_timed(f, t0,
		       dlfs_nvme_pread(f->nvme, in->container, in->offset,
				       l->len, l->buf, &data, &stable)) == 0) {
		l->off = (size_t)(data - (const uint8_t *)l->buf);
		if (file_sum_ok(in, l->buf, l->off)) {
			l->kept = 1;
			dlfs_fetch_file_set(f, in->ino, 1);
			return 0;
		}
		/* Bad cached bytes, or a bad index record: the PFS says. */
		uint64_t k0, k1;
		dlfs_file_chunks(dlfs_ds_info(f->ds)->super.chunk_size, in, 0,
				 in->size, &k0, &k1);
		for (uint64_t k = k0; k <= k1; k++)
			dlfs_nvme_drop(f->nvme, in->container, k);
	}
	uint64_t pfs_bytes;
	t0 = pfs_begin(f);
	ret = dlfs_file_read_alone(f->ds, txn, in, l->buf, l->cap, &l->off,
				   &pfs_bytes, l->err);
	/* A file read alone: no peer asked. */
	pfs_end(f, t0, ret, pfs_bytes, DLFS_PFS_MISS);
	if (ret)
		return ret;
	if (!file_sum_ok(in, l->buf, l->off)) {
		dlfs_fetch_file_set(f, in->ino, 0);
		char name[DLFS_CONTAINER_NAME_MAX];
		dlfs_container_name(in->container, name);
		return dlfs_err_set(l->err, -DLFS_ECHECKSUM,
				    "file checksum mismatch (%s/%s at offset "
				    "%llu, %llu bytes)",
				    dlfs_ds_path(f->ds), name,
				    (unsigned long long)in->offset,
				    (unsigned long long)in->size);
	}
	dlfs_fetch_file_set(f, in->ino, 1);
	return 0;
}

int dlfs_fetch_pfs_range(struct dlfs_fetch *f, uint32_t c, uint64_t off,
			 size_t len, void *buf, size_t cap, size_t *head,
			 struct dlfs_err *err)
{
	uint64_t t0 = pfs_begin(f);
	int ret = dlfs_ds_read_range(f->ds, c, off, len, buf, cap, head, err);
	pfs_end(f, t0, ret,
		dlfs_roundup(off + len, 4096) - (off & ~UINT64_C(4095)),
		DLFS_PFS_MISS);
	return ret;
}

/* A bag: its own fill. */
static int load_bag(const struct dlfs_fetch_bag *b, struct dlfs_load *l)
{
	l->off = 0;
	return b->fill(b->arg, l->buf, l->cap, &l->len, l->err);
}

int dlfs_fetch_load(void *arg, void *ctx, uint64_t key, const void *what,
		    struct dlfs_load *l)
{
	struct dlfs_fetch *f = arg;
	if (dlfs_cache_key_is_file(key))
		return load_file(f, ctx, what, l);
	if (dlfs_cache_key_is_bag(key))
		return load_bag(what, l);
	uint32_t c = (uint32_t)(key >> 40);
	uint64_t k = key & ((UINT64_C(1) << 40) - 1);
	return load_chunk(f, ctx, c, k, what, l);
}

int dlfs_fetch_file_nvme(struct dlfs_fetch *f, const struct dlfs_inode *in,
			 uint64_t off, size_t len, void *buf,
			 const uint8_t **data)
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
	uint64_t t0 = dlfs_stats_clock();
	if (dlfs_fetch_file_known(f, in->ino)) {
		if (dlfs_nvme_pread(f->nvme, c, in->offset + off, len, buf,
				    data, &stable))
			return -ENOENT;
		if (stable)
			return nvme_timed(f, t0, 0);
		/* Chunks were evicted and rewritten meanwhile: check. */
		t0 = dlfs_stats_clock();
	}
	if (in->size > DLFS_FETCH_FILE_CHECK_MAX)
		return -ENOENT; /* the chunk path reads and verifies chunks */
	/* Read the whole file and check it against its own checksum. */
	if (nvme_timed(f, t0,
		       dlfs_nvme_pread(f->nvme, c, in->offset,
				       (size_t)in->size, buf, &got, &stable)))
		return -ENOENT;
	if (XXH3_64bits(got, in->size) != in->xxh3) {
		/* The cached bytes or the index record are wrong: drop the
		 * chunks; the chunk path reads and checks them again. */
		const uint64_t cs = dlfs_ds_info(f->ds)->super.chunk_size;
		uint64_t k0, k1;
		dlfs_fetch_file_set(f, in->ino, 0);
		dlfs_file_chunks(cs, in, 0, in->size, &k0, &k1);
		for (uint64_t k = k0; k <= k1; k++)
			dlfs_nvme_drop(f->nvme, c, k);
		return -ENOENT;
	}
	dlfs_fetch_file_set(f, in->ino, 1);
	*data = got + off;
	return 0;
}

int dlfs_fetch_salvage(struct dlfs_fetch *f, const struct dlfs_inode *in,
		       uint8_t **buf, size_t *cap, struct dlfs_err *err)
{
	size_t got;
	if (*cap < in->size || !*buf) {
		size_t want = in->size ? (size_t)in->size : 1;
		uint8_t *b = realloc(*buf, want);
		if (!b)
			return dlfs_err_set(err, -ENOMEM, "out of memory");
		*buf = b;
		*cap = want;
	}
	uint64_t t0 = pfs_begin(f);
	int ret = dlfs_file_pread(f->ds, in, *buf, (size_t)in->size, 0, &got,
				  err);
	pfs_end(f, t0, ret, got, DLFS_PFS_ERROR);
	if (ret)
		return ret;
	if (got != in->size || XXH3_64bits(*buf, got) != in->xxh3)
		return dlfs_err_set(err, -EIO,
				    "its chunk failed its checksum, and so "
				    "does the file read alone (container %u, "
				    "offset %llu)",
				    in->container,
				    (unsigned long long)in->offset);
	dlfs_fetch_file_set(f, in->ino, 1);
	return 0;
}
