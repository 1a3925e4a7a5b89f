/*
 * dlfs-pack's options (dlfs/pack.h): their defaults, their checks, and
 * the text forms a command line gives them. One home for each, so that
 * the tool and the library cannot disagree on what an option means.
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dlfs/pack.h"

void dlfs_pack_opts_init(struct dlfs_pack_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->chunk_size = 4u << 20;
	o->container_size = UINT64_C(4) << 30;
	o->align = 1;
	o->order = DLFS_ORDER_SORTED;
	o->threads = 8;
	o->compress = DLFS_COMPRESS_AUTO;
	o->compress_level = DLFS_ZSTD_LEVEL_DEFAULT;
	o->hdf5_split_min = 1024;
}

enum dlfs_compress dlfs_pack_compress(const struct dlfs_pack_opts *o)
{
	if (o->compress != DLFS_COMPRESS_AUTO)
		return o->compress;
	/* Samples split out of HDF5 files take about twice the files'
	 * bytes, which were often compressed (dlfs-pack(1), --compress). */
	return o->split_hdf5 ? DLFS_COMPRESS_ZSTD : DLFS_COMPRESS_NONE;
}

int dlfs_pack_opts_check(const struct dlfs_pack_opts *o, struct dlfs_err *err)
{
	if (o->chunk_size < 4096 || o->chunk_size % 4096 ||
	    o->chunk_size > (UINT64_C(1) << 30))
		return dlfs_err_set(err, -EINVAL,
				    "--chunk-size %llu: must be a multiple "
				    "of 4 KiB between 4K and 1G",
				    (unsigned long long)o->chunk_size);
	if (o->container_size < o->chunk_size ||
	    o->container_size > (UINT64_C(1) << 47))
		return dlfs_err_set(err, -EINVAL,
				    "--container-size %llu: must be at "
				    "least the chunk size and at most 128T",
				    (unsigned long long)o->container_size);
	if (!o->align || (o->align & (o->align - 1)) ||
	    o->align > o->chunk_size)
		return dlfs_err_set(err, -EINVAL,
				    "--align %llu: must be a power of two "
				    "no larger than the chunk size",
				    (unsigned long long)o->align);
	if (o->threads < 1 || o->threads > 1024)
		return dlfs_err_set(err, -EINVAL,
				    "--threads %u: must be 1 to 1024",
				    o->threads);
	if (o->procs > 256)
		return dlfs_err_set(err, -EINVAL,
				    "--procs %u: must be 1 to 256", o->procs);
	if (o->sample_format != DLFS_SAMPLE_NPY &&
	    o->sample_format != DLFS_SAMPLE_H5)
		return dlfs_err_set(err, -EINVAL,
				    "--sample-format: must be npy or h5");
	if (o->hdf5_datasets) {
		/* Non-empty names, separated by single commas. */
		const char *p = o->hdf5_datasets;
		int bad = !*p || *p == ',';
		for (; *p && !bad; p++)
			bad = *p == ',' && (p[1] == ',' || !p[1]);
		if (bad)
			return dlfs_err_set(err, -EINVAL,
					    "--split-hdf5=%s: expected dataset "
					    "names separated by commas",
					    o->hdf5_datasets);
	}
	if (o->compress != DLFS_COMPRESS_NONE &&
	    ((o->compress != DLFS_COMPRESS_ZSTD &&
	      o->compress != DLFS_COMPRESS_AUTO) ||
	     o->compress_level < 1 || o->compress_level > DLFS_ZSTD_LEVEL_MAX))
		return dlfs_err_set(err, -EINVAL,
				    "--compress: the codec must be zstd, its "
				    "level 1 to %d",
				    DLFS_ZSTD_LEVEL_MAX);
	if (o->in_place &&
	    (o->compress == DLFS_COMPRESS_ZSTD || o->split_hdf5 ||
	     o->split_lmdb || o->order == DLFS_ORDER_SIZE ||
	     o->order == DLFS_ORDER_SHUFFLE))
		return dlfs_err_set(err, -EINVAL,
				    "--in-place: the archives' bytes are "
				    "served as they are, in their order: "
				    "--compress zstd, --order size or shuffle "
				    "and --split-* do not apply");
	if (o->comm && (o->comm->size < 1 || o->comm->rank < 0 ||
			o->comm->rank >= o->comm->size || !o->comm->bcast ||
			!o->comm->gather || !o->comm->send || !o->comm->recv))
		return dlfs_err_set(err, -EINVAL,
				    "an incomplete dlfs_pack_comm");
	return 0;
}

int dlfs_parse_sample_format(const char *s, enum dlfs_sample_format *f)
{
	if (!strcmp(s, "npy"))
		*f = DLFS_SAMPLE_NPY;
	else if (!strcmp(s, "h5"))
		*f = DLFS_SAMPLE_H5;
	else
		return -EINVAL;
	return 0;
}

int dlfs_parse_compress(const char *s, enum dlfs_compress *c, int *level)
{
	if (!strcmp(s, "none")) {
		*c = DLFS_COMPRESS_NONE;
		*level = DLFS_ZSTD_LEVEL_DEFAULT;
		return 0;
	}
	if (strncmp(s, "zstd", 4) || (s[4] && s[4] != ':'))
		return -EINVAL;
	*c = DLFS_COMPRESS_ZSTD;
	*level = DLFS_ZSTD_LEVEL_DEFAULT;
	if (!s[4])
		return 0;
	char *end;
	errno = 0;
	if (!isdigit((unsigned char)s[5]))
		return -EINVAL;
	long v = strtol(s + 5, &end, 10);
	if (errno || *end || v < 1 || v > DLFS_ZSTD_LEVEL_MAX)
		return -EINVAL;
	*level = (int)v;
	return 0;
}

int dlfs_parse_order(const char *s, enum dlfs_order *order, uint64_t *seed)
{
	*seed = 0;
	if (!strcmp(s, "sorted"))
		*order = DLFS_ORDER_SORTED;
	else if (!strcmp(s, "input"))
		*order = DLFS_ORDER_INPUT;
	else if (!strcmp(s, "size"))
		*order = DLFS_ORDER_SIZE;
	else if (!strncmp(s, "shuffle", 7) && (s[7] == '\0' || s[7] == ':')) {
		*order = DLFS_ORDER_SHUFFLE;
		if (s[7] == ':') {
			char *end;
			errno = 0;
			if (!isdigit((unsigned char)s[8]))
				return -EINVAL;
			*seed = strtoull(s + 8, &end, 0);
			if (errno || *end)
				return -EINVAL;
		}
	} else
		return -EINVAL;
	return 0;
}
