/*
 * One read, end to end (dlfs_read, reader.h): the RAM tier, the NVMe
 * tier's file path, the unit of a miss (chunk or file), verification,
 * salvage and the counters. A failure is told as read_errors_priv.h says.
 */
#include "read_errors_priv.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define XXH_STATIC_LINKING_ONLY /* XXH3_state_t on the stack */
#include <xxhash.h>

/* Room for n bytes in the context's copy buffer. */
static int copy_room(struct dlfs_reader_ctx *x, size_t n)
{
	if (x->copy_cap >= n)
		return 0;
	uint8_t *b = realloc(x->copy, n);
	if (!b)
		return -ENOMEM;
	x->copy = b;
	x->copy_cap = n;
	return 0;
}

/* One piece of the reply. */
static void piece(struct dlfs_reader_ctx *x, struct dlfs_read_out *out,
		  const uint8_t *p, size_t n)
{
	x->iov[out->iovcnt].iov_base = (void *)p;
	x->iov[out->iovcnt].iov_len = n;
	out->iovcnt++;
	out->len += n;
}

/*
 * Check file in against its own checksum the first time all its bytes
 * are in hand in one pinned entry: the file's extent within chunk ref k
 * (a file that fits in one chunk). @return 0, or -EIO: the index record
 * or the data is wrong.
 */
static int check_once(struct dlfs_reader_ctx *x, const struct dlfs_inode *in,
		      const struct dlfs_chunk_ref *ref, uint64_t k,
		      struct dlfs_err *err)
{
	struct dlfs_reader *r = x->r;
	if (dlfs_fetch_file_known(&r->fetch, in->ino))
		return 0;
	uint64_t start = dlfs_chunk_start(r->chunk_size, k);
	if (in->offset + in->size - start > ref->len)
		return dlfs_err_set(err, -DLFS_ECORRUPT,
				    "file extends past its chunk");
	dlfs_stats_add(&r->stats.files_checked, 1);
	if (XXH3_64bits(ref->data + (in->offset - start), in->size) != in->xxh3)
		return dlfs_err_set(err, -EIO,
				    "file checksum mismatch, its chunk is "
				    "intact: the index record is damaged "
				    "(container %u, offset %llu)",
				    in->container,
				    (unsigned long long)in->offset);
	dlfs_fetch_file_set(&r->fetch, in->ino, 1);
	return 0;
}

/* A file over more chunks than this is checked by its chunks only on the
 * read path (dlfs(1)); up to it, its first read checks it whole. */
#define CHECK_SPAN_MAX 16

static int span(const struct dlfs_reader *r, const struct dlfs_inode *in,
		uint64_t off, uint64_t len, uint64_t done, uint64_t k,
		size_t clen, uint64_t *from, uint64_t *take,
		struct dlfs_err *err);

/*
 * The first read of a file over chunks kf..kl (more than one) during this
 * mount: check it against its own checksum, so that a damaged record (a
 * size one byte long, an offset moved) cannot serve bytes of its
 * neighbours that pass their chunks' checks. A read of the whole file has
 * every byte in hand (out); otherwise, up to CHECK_SPAN_MAX chunks, the
 * file's chunks are walked through the RAM tier (the reader of a file
 * reads them anyway). @return 0, or -EIO: the index record is damaged.
 */
static int check_span(struct dlfs_reader_ctx *x, const struct dlfs_inode *in,
		      uint64_t off, const struct dlfs_read_out *out,
		      uint64_t kf, uint64_t kl, struct dlfs_err *err)
{
	struct dlfs_reader *r = x->r;
	XXH3_state_t st;
	if (dlfs_fetch_file_known(&r->fetch, in->ino))
		return 0;
	if (XXH3_64bits_reset(&st) != XXH_OK)
		return 0;
	if (off == 0 && out->len == in->size) {
		for (int i = 0; i < out->iovcnt; i++)
			XXH3_64bits_update(&st, out->iov[i].iov_base,
					   out->iov[i].iov_len);
	} else if (kl - kf < CHECK_SPAN_MAX) {
		uint64_t done = 0, from = 0, take = 0;
		for (uint64_t k = kf; k <= kl; k++) {
			struct dlfs_chunk_ref ref;
			struct dlfs_err cerr = {0};
			uint64_t key = dlfs_cache_chunk_key(in->container, k);
			/* A chunk that fails its own check is salvaged, and
			 * the file checked, when a read needs it. */
			if (dlfs_cache_get(r->cache, key, NULL, x->txn, &ref,
					   &cerr))
				return 0;
			int ret = span(r, in, 0, in->size, done, k, ref.len,
				       &from, &take, err);
			if (!ret)
				XXH3_64bits_update(&st, ref.data + from,
						   (size_t)take);
			dlfs_cache_put(r->cache, &ref, 0);
			if (ret)
				return ret;
			done += take;
		}
	} else {
		return 0;
	}
	dlfs_stats_add(&r->stats.files_checked, 1);
	if (XXH3_64bits_digest(&st) != in->xxh3)
		return dlfs_err_set(err, -EIO,
				    "file checksum mismatch, its chunks are "
				    "intact: the index record is damaged "
				    "(container %u, offset %llu, size %llu)",
				    in->container,
				    (unsigned long long)in->offset,
				    (unsigned long long)in->size);
	dlfs_fetch_file_set(&r->fetch, in->ino, 1);
	return 0;
}

/* Length of chunk k of container c. */
static uint64_t chunk_len(const struct dlfs_reader *r, uint32_t c, uint64_t k)
{
	uint64_t left = dlfs_ds_container(r->ds, c)->data_size -
			k * r->chunk_size;
	return left < r->chunk_size ? left : r->chunk_size;
}

/* Where [off, off + len) of in lies in chunk k (clen bytes): *from and
 * *take, its part of the range from byte done on. */
static int span(const struct dlfs_reader *r, const struct dlfs_inode *in,
		uint64_t off, uint64_t len, uint64_t done, uint64_t k,
		size_t clen, uint64_t *from, uint64_t *take,
		struct dlfs_err *err)
{
	*from = in->offset + off + done - dlfs_chunk_start(r->chunk_size, k);
	if (*from >= clen)
		return dlfs_err_set(err, -DLFS_ECORRUPT,
				    "file extends past its chunk");
	*take = clen - *from < len - done ? clen - *from : len - done;
	return 0;
}

/*
 * The chunk path: [off, off + len) of in from chunks k0..k1, pinned in
 * the RAM tier (loading misses when load is set, else -ENOENT if one is
 * absent). Up to DLFS_READ_IOV chunks are served in place; more are
 * gathered into the context's copy buffer one at a time.
 */
static int from_chunks(struct dlfs_reader_ctx *x, const struct dlfs_inode *in,
		       uint64_t off, uint64_t len, uint64_t k0, uint64_t k1,
		       int load, struct dlfs_read_out *out,
		       struct dlfs_err *err)
{
	struct dlfs_reader *r = x->r;
	int gather = k1 - k0 + 1 > DLFS_READ_IOV;
	uint64_t done = 0, from = 0, take = 0;
	int ret;
	if (gather && copy_room(x, (size_t)len))
		return dlfs_err_set(err, -ENOMEM, "out of memory");
	for (uint64_t k = k0; k <= k1; k++) {
		struct dlfs_chunk_ref *ref = &x->refs[x->n_refs];
		uint64_t key = dlfs_cache_chunk_key(in->container, k);
		ret = load ? dlfs_cache_get(r->cache, key, NULL, x->txn, ref,
					    err)
			   : dlfs_cache_get_cached(r->cache, key, ref);
		if (ret)
			return ret;
		x->served[x->n_refs++] = 0;
		/* Hits count too, once a file: a stream whose read-ahead
		 * chunks were found unnoted would see its next miss as a
		 * jump, end, and read the next chunks' files alone. */
		if (load || off == 0)
			dlfs_prefetch_note(r->prefetch, in->container, k,
					   ref->prefetched);
		if ((ret = span(r, in, off, len, done, k, ref->len, &from,
				&take, err)))
			return ret;
		x->served[x->n_refs - 1] = (size_t)take;
		if (!gather) {
			piece(x, out, ref->data + from, (size_t)take);
		} else {
			memcpy(x->copy + done, ref->data + from, (size_t)take);
			dlfs_read_done(x);
		}
		done += take;
	}
	if (gather)
		piece(x, out, x->copy, (size_t)len);
	return 0;
}

/* The unit of a miss on file in (its chunk k0): 1 to read the file
 * alone. */
static int read_alone(struct dlfs_reader *r, const struct dlfs_inode *in,
		      uint64_t k0)
{
	if (!dlfs_grain_file_mode(r->grain, in))
		return 0;
	/* Another node's chunk: its home reads the PFS for the job (a file
	 * read alone here would be a second read of those bytes). */
	uint64_t g = dlfs_ds_container(r->ds, in->container)->first_chunk + k0;
	if (r->fetch.peer && (g < r->home_lo || g >= r->home_hi))
		return 0;
	/* A sequential reader, or a chunk the NVMe tier has free room for:
	 * the chunk's other files will be read from where it is kept. A
	 * full LRU tier would evict a chunk to take it: in file mode that
	 * trades one chunk whose files are still to come for another. */
	if (dlfs_prefetch_in_stream(r->prefetch, in->container, k0))
		return 0;
	if (r->nvme &&
	    dlfs_nvme_has_room(r->nvme, chunk_len(r, in->container, k0)))
		return 0;
	return 1;
}

/* Salvage of a chunk that failed its checksum: the file alone. */
static int salvage(struct dlfs_reader_ctx *x, const struct dlfs_inode *in,
		   uint64_t off, uint64_t len, struct dlfs_read_out *out,
		   struct dlfs_err *err)
{
	struct dlfs_err serr = {0};
	dlfs_read_done(x);
	out->iovcnt = 0;
	out->len = 0;
	int ret = dlfs_fetch_salvage(&x->r->fetch, in, &x->copy, &x->copy_cap,
				     &serr);
	if (ret) {
		dlfs_err_prefix(&serr, "%s", err->msg);
		*err = serr;
		return ret == -EIO ? -DLFS_ECHECKSUM : ret;
	}
	piece(x, out, x->copy + off, (size_t)len);
	return 0;
}

/* out gives nothing (its pieces, if any, were let go). */
static void unpinned(struct dlfs_read_out *out)
{
	out->iovcnt = 0;
	out->len = 0;
}

/* The first piece of file ino, whose chunks are global g0..g1: counted,
 * told to the observer (the epoch views), and its chunks marked used. */
static void first_read(struct dlfs_reader_ctx *x, uint64_t ino, uint64_t g0,
		       uint64_t g1)
{
	struct dlfs_reader *r = x->r;
	dlfs_stats_add(&r->stats.files_read, 1);
	if (r->observer)
		r->observer(r->observer_arg, x->txn, ino);
	for (uint64_t g = g0; r->fill && g <= g1; g++)
		dlfs_fill_used(r->fill, g);
}

/* The NVMe tier, for a file read alone from it (not in a stream of its
 * container's chunks). @return 0 with out set, or -ENOENT. */
static int nvme_alone(struct dlfs_reader_ctx *x, const struct dlfs_inode *in,
		      uint64_t off, uint64_t len, uint64_t k0,
		      struct dlfs_read_out *out)
{
	struct dlfs_reader *r = x->r;
	const uint8_t *data;
	if (!r->nvme || dlfs_prefetch_in_stream(r->prefetch, in->container, k0))
		return -ENOENT;
	if (dlfs_fetch_file_nvme(&r->fetch, in, off, (size_t)len, x->buf,
				 &data))
		return -ENOENT;
	dlfs_prefetch_note(r->prefetch, in->container, k0, 0);
	piece(x, out, data, (size_t)len);
	return 0;
}

/* A miss read as the file alone, into the RAM tier under its own key.
 * @return 0 with out set, or -errno with err. */
static int file_alone(struct dlfs_reader_ctx *x, const struct dlfs_inode *in,
		      uint64_t off, uint64_t len, uint64_t k0,
		      struct dlfs_read_out *out, struct dlfs_err *err)
{
	struct dlfs_reader *r = x->r;
	struct dlfs_chunk_ref *fref = &x->refs[0];
	int ret = dlfs_cache_get(r->cache, dlfs_cache_file_key(in->ino), in,
				 x->txn, fref, err);
	if (ret)
		return ret;
	x->served[x->n_refs++] = (size_t)len;
	dlfs_prefetch_note(r->prefetch, in->container, k0, 0);
	dlfs_grain_note_file(r->grain, in, k0, chunk_len(r, in->container, k0));
	piece(x, out, fref->data + off, (size_t)len);
	return 0;
}

/* The RAM tier's entry of file ino alone (a file in one chunk).
 * @return 0 with out set, or -ENOENT. */
static int file_cached(struct dlfs_reader_ctx *x, uint64_t ino, uint64_t off,
		       uint64_t len, struct dlfs_read_out *out)
{
	struct dlfs_chunk_ref *fref = &x->refs[0];
	if (dlfs_cache_get_cached(x->r->cache, dlfs_cache_file_key(ino), fref))
		return -ENOENT;
	x->served[x->n_refs++] = (size_t)len;
	piece(x, out, fref->data + off, (size_t)len);
	return 0;
}

/* The RAM tier's bag of file ino (bags.h), when the background reads put
 * it in one: checked there. @return 0 with out set, or -ENOENT. */
static int bag_cached(struct dlfs_reader_ctx *x, uint64_t ino, uint64_t off,
		      uint64_t len, struct dlfs_read_out *out)
{
	struct dlfs_bags *b = dlfs_fill_bags(x->r->fill);
	struct dlfs_chunk_ref *ref = &x->refs[0];
	size_t at;
	if (!b || dlfs_bags_get(b, ino, off == 0, ref, &at))
		return -ENOENT;
	x->served[x->n_refs++] = (size_t)len;
	piece(x, out, ref->data + at + off, (size_t)len);
	return 0;
}

/* The RAM tier did not hold it all: let go of what it held. */
static void ram_missed(struct dlfs_reader_ctx *x, struct dlfs_read_out *out)
{
	for (unsigned i = 0; i < x->n_refs; i++)
		x->served[i] = 0; /* served below, not from these */
	dlfs_read_done(x);
	unpinned(out);
}

/* A read served: its bytes, and from the RAM tier its time since t0. */
static void count_served(struct dlfs_reader *r, const struct dlfs_read_out *out,
			 int from_ram, uint64_t t0)
{
	dlfs_stats_add(&r->stats.bytes_served, out->len);
	if (from_ram) {
		dlfs_stats_add(&r->stats.ram_bytes, out->len);
		dlfs_stats_time(&r->stats, DLFS_TIER_RAM, t0);
	}
}

int dlfs_read(struct dlfs_reader_ctx *x, uint64_t ino, uint64_t off,
	      size_t size, struct dlfs_read_out *out)
{
	struct dlfs_reader *r = x->r;
	struct dlfs_err err = {0};
	struct dlfs_inode in;
	uint64_t k0, k1, kf, kl;
	int ret, from_ram = 0;
	/* Timed for the RAM tier's latency; a miss is timed in the tier
	 * that loads it (fetch.c). */
	const uint64_t t0 = dlfs_stats_clock();

	x->n_refs = 0;
	out->iov = x->iov;
	unpinned(out);
	dlfs_stats_add(&r->stats.ops[DLFS_OP_READ], 1);
	ret = dlfs_stat(x->txn, ino, &in, &err);
	if (ret)
		return ret == -ENOENT ? ret
				      : dlfs_read_failed(x, ino, ret, &err);
	if (!S_ISREG(in.mode))
		return S_ISDIR(in.mode) ? -EISDIR : -EINVAL;
	dlfs_reader_share_file(r, &in);
	if (off >= in.size || size == 0)
		return 0;
	uint64_t len = in.size - off < size ? in.size - off : size;
	const uint64_t g0 = dlfs_ds_container(r->ds, in.container)->first_chunk;
	dlfs_file_chunks(r->chunk_size, &in, off, len, &k0, &k1);
	dlfs_file_chunks(r->chunk_size, &in, 0, in.size, &kf, &kl);
	const int one_chunk = kf == kl; /* all its bytes in one chunk */
	if (off == 0)
		first_read(x, ino, g0 + kf, g0 + kl);
	if (r->fill)
		dlfs_fill_demand(r->fill);

	/* 1. The RAM tier: the file's own entry, or all its chunks. */
	if (one_chunk && (!file_cached(x, ino, off, len, out) ||
			  !bag_cached(x, ino, off, len, out))) {
		from_ram = 1;
		goto served;
	}
	ret = from_chunks(x, &in, off, len, k0, k1, 0, out, &err);
	if (ret == 0) {
		from_ram = 1;
		goto check;
	}
	ram_missed(x, out);
	if (ret != -ENOENT)
		goto fail;

	/* 2. The NVMe tier, for a file read alone from it. */
	if (!nvme_alone(x, &in, off, len, k0, out))
		goto served;

	/* 3. A miss: the file alone when whole chunks would be wasted. */
	if (one_chunk && read_alone(r, &in, k0)) {
		if ((ret = file_alone(x, &in, off, len, k0, out, &err)))
			goto fail;
		goto served;
	}

	/* 4. Whole chunks, through the RAM tier. */
	ret = from_chunks(x, &in, off, len, k0, k1, 1, out, &err);
	if (ret == -DLFS_ECHECKSUM) {
		if ((ret = salvage(x, &in, off, len, out, &err)))
			goto fail;
		goto served;
	}
	if (ret)
		goto fail;
check:
	if (one_chunk ? (ret = check_once(x, &in, &x->refs[0], k0, &err))
		      : (ret = check_span(x, &in, off, out, kf, kl, &err)))
		goto fail;
served:
	count_served(r, out, from_ram, t0);
	return 0;
fail:
	dlfs_read_done(x);
	unpinned(out);
	return dlfs_read_failed(x, ino, ret, &err);
}
