/*
 * Zip, read in place (inplace_fmt.h): the central directory, read from
 * the end of the archive, lists the members with their sizes and the
 * offsets of their local headers; the members are then walked in offset
 * order through the run, so the archive is still read front to back
 * once. Stored members join runs like a tar's; deflated ones are chunks
 * of their own (inflated when read). Zip64 sizes and offsets are read;
 * encrypted members, other methods and multi-disk archives are refused.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "inplace_fmt.h"
#include "util.h"

static uint16_t le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static uint64_t le64(const uint8_t *p)
{
	return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

/* One central directory entry, decoded. */
struct zent {
	uint64_t off, csize, usize;
	uint32_t mode;
	int64_t mtime;
	uint16_t method, flags;
	char *name;
};

/* Where the central directory is and how many entries it has. */
struct zdir {
	uint64_t off, size, n;
};

/* The end records: the classic one, and zip64's when it says so. */
static int find_dir(struct ip_run *r, struct zdir *d, struct dlfs_err *err)
{
	uint8_t tail[65536 + 22 + 20];
	uint64_t n = r->size < sizeof(tail) ? r->size : sizeof(tail);
	ssize_t got = dlfs_pread_full(r->fd, tail, (size_t)n, r->size - n);
	if (got != (ssize_t)n)
		return dlfs_err_sys(err, got < 0 ? (int)got : -EIO,
				    "%s: reading its end", r->path);
	int64_t e = (int64_t)n - 22;
	while (e >= 0 && memcmp(tail + e, "PK\5\6", 4))
		e--;
	if (e < 0)
		return dlfs_err_set(err, -DLFS_ECORRUPT,
				    "%s: no end of central directory: not a "
				    "whole zip",
				    r->path);
	const uint8_t *p = tail + e;
	d->n = le16(p + 10);
	d->size = le32(p + 12);
	d->off = le32(p + 16);
	if (le16(p + 4) || le16(p + 6))
		return dlfs_err_set(err, -ENOTSUP,
				    "%s: a multi-disk zip: not served in place",
				    r->path);
	if (e >= 20 && !memcmp(p - 20, "PK\6\7", 4)) {
		uint8_t z[56];
		uint64_t zo = le64(p - 20 + 8);
		if (dlfs_pread_full(r->fd, z, sizeof(z), zo) != sizeof(z) ||
		    memcmp(z, "PK\6\6", 4))
			return dlfs_err_set(err, -DLFS_ECORRUPT,
					    "%s: a damaged zip64 end record",
					    r->path);
		d->n = le64(z + 32);
		d->size = le64(z + 40);
		d->off = le64(z + 48);
	}
	if (d->off > r->size || d->size > r->size - d->off)
		return dlfs_err_set(err, -DLFS_ECORRUPT,
				    "%s: its central directory lies outside "
				    "it",
				    r->path);
	return 0;
}

/* Zip64's extra field: the sizes and offset that the entry gives as
 * 0xffffffff, in that order. */
static void zip64_extra(const uint8_t *x, size_t n, struct zent *z)
{
	while (n >= 4) {
		uint16_t id = le16(x), len = le16(x + 2);
		if (len > n - 4)
			return;
		const uint8_t *v = x + 4, *end = v + len;
		if (id == 0x0001) {
			if (z->usize == 0xffffffffu && v + 8 <= end)
				z->usize = le64(v), v += 8;
			if (z->csize == 0xffffffffu && v + 8 <= end)
				z->csize = le64(v), v += 8;
			if (z->off == 0xffffffffu && v + 8 <= end)
				z->off = le64(v);
		} else if (id == 0x5455 && len >= 5 && (v[0] & 1)) {
			z->mtime = (int32_t)le32(v + 1); /* Unix time */
		}
		x += 4 + len;
		n -= 4 + (size_t)len;
	}
}

/* MS-DOS date and time as a Unix time. They are the zipping machine's
 * local time, whose zone the zip does not say: taken as UTC, so that
 * the index is the same wherever it is made (an extended timestamp
 * field, when there, gives the true time). */
static int64_t dos_time(uint16_t t, uint16_t d)
{
	struct tm tm = {.tm_year = (d >> 9) + 80, .tm_mon = ((d >> 5) & 15) - 1,
			.tm_mday = d & 31, .tm_hour = t >> 11,
			.tm_min = (t >> 5) & 63, .tm_sec = (t & 31) * 2};
	return (int64_t)timegm(&tm);
}

/* The entry at p (left bytes of the directory). @return its length, or
 * 0 if damaged. */
static size_t entry(const uint8_t *p, size_t left, struct zent *z)
{
	if (left < 46 || memcmp(p, "PK\1\2", 4))
		return 0;
	size_t nl = le16(p + 28), xl = le16(p + 30), cl = le16(p + 32);
	if (46 + nl + xl + cl > left || !nl)
		return 0;
	z->flags = le16(p + 8);
	z->method = le16(p + 10);
	z->mtime = dos_time(le16(p + 12), le16(p + 14));
	z->csize = le32(p + 20);
	z->usize = le32(p + 24);
	z->off = le32(p + 42);
	/* Unix modes when the zip was made on Unix; a name ending in '/'
	 * is a directory whatever they say. */
	uint32_t um = p[5] == 3 ? le32(p + 38) >> 16 : 0;
	uint32_t perm = um & 07777;
	if (p[46 + nl - 1] == '/')
		z->mode = S_IFDIR | (perm ? perm : 0755);
	else if (S_ISLNK(um))
		z->mode = S_IFLNK | (perm ? perm : 0777);
	else
		z->mode = S_IFREG | (perm ? perm : 0644);
	zip64_extra(p + 46 + nl, xl, z);
	z->name = strndup((const char *)p + 46, nl);
	return z->name ? 46 + nl + xl + cl : 0;
}

static int by_off(const void *a, const void *b)
{
	const struct zent *x = a, *y = b;
	return x->off < y->off ? -1 : x->off > y->off;
}

/* The whole central directory, decoded into *out (n entries), in the
 * order of the members' offsets. */
static int read_dir(struct ip_run *r, const struct zdir *d, struct zent **out,
		    struct dlfs_err *err)
{
	uint8_t *buf = malloc(d->size ? d->size : 1);
	struct zent *z = calloc(d->n ? d->n : 1, sizeof(*z));
	int ret = 0;
	if (!buf || !z || d->n > d->size / 46 + 1) {
		ret = !buf || !z ? dlfs_err_set(err, -ENOMEM, "out of memory")
				 : dlfs_err_set(err, -DLFS_ECORRUPT,
						"%s: a damaged central "
						"directory",
						r->path);
		goto out;
	}
	if (dlfs_pread_full(r->fd, buf, d->size, d->off) != (ssize_t)d->size) {
		ret = dlfs_err_sys(err, -EIO, "%s: reading its central directory",
				   r->path);
		goto out;
	}
	for (uint64_t i = 0, at = 0; i < d->n; i++) {
		size_t len = entry(buf + at, d->size - at, &z[i]);
		if (!len) {
			ret = dlfs_err_set(err, -DLFS_ECORRUPT,
					   "%s: central directory entry %llu "
					   "is damaged",
					   r->path, (unsigned long long)i);
			goto out;
		}
		at += len;
	}
	qsort(z, d->n, sizeof(*z), by_off);
out:
	free(buf);
	if (ret && z)
		for (uint64_t i = 0; i < d->n; i++)
			free(z[i].name);
	if (ret) {
		free(z);
		z = NULL;
	}
	*out = z;
	return ret;
}

/* Member z: its local header read for where its data starts, then its
 * data placed. */
static int zmember(struct ip_run *r, const struct zent *z, ip_put_fn put,
		   void *arg, struct dlfs_err *err)
{
	const uint8_t *h;
	char tg[4096];
	struct ip_member m = {.name = z->name, .mode = z->mode,
			      .mtime_sec = z->mtime, .offset = z->off};
	int ret = ip_peek(r, z->off, 30, &h, err);
	if (ret)
		return ret;
	uint64_t data = z->off + 30 + le16(h + 26) + le16(h + 28);
	if (memcmp(h, "PK\3\4", 4) || data > r->size ||
	    z->csize > r->size - data)
		return dlfs_err_set(err, -DLFS_ECORRUPT,
				    "%s: member '%s' at offset %llu: a damaged "
				    "local header",
				    r->path, z->name,
				    (unsigned long long)z->off);
	if (z->flags & 1 || (z->method != 0 && z->method != 8))
		return dlfs_err_set(err, -ENOTSUP,
				    "%s: member '%s': %s: not served in place "
				    "(pack the archive without --in-place)",
				    r->path, z->name,
				    z->flags & 1 ? "encrypted"
						 : "compressed with a method "
						   "other than deflate");
	if (S_ISDIR(z->mode))
		return put(arg, &m, err);
	if (S_ISLNK(z->mode)) {
		if (z->method || z->csize >= sizeof(tg) ||
		    (ret = ip_peek(r, data, (size_t)z->csize, &h, err)))
			return ret ? ret : dlfs_err_set(err, -ENOTSUP,
					"%s: member '%s': a symlink stored "
					"compressed or too long",
					r->path, z->name);
		memcpy(tg, h, (size_t)z->csize);
		tg[z->csize] = '\0';
		m.link = tg;
		return put(arg, &m, err);
	}
	m.mode = S_IFREG | (z->mode & 07777);
	m.size = z->usize;
	if (!z->method && z->usize != z->csize)
		return dlfs_err_set(err, -DLFS_ECORRUPT,
				    "%s: member '%s': stored, but %llu bytes "
				    "that would be %llu: damaged",
				    r->path, z->name,
				    (unsigned long long)z->csize,
				    (unsigned long long)z->usize);
	ret = z->method ? ip_deflated(r, data, z->csize, z->usize, &m.loc,
				      &m.xxh3, err)
			: ip_stored(r, data, z->usize, &m.loc, &m.xxh3, err);
	return ret ? ret : put(arg, &m, err);
}

int ip_zip_walk(struct ip_run *r, ip_put_fn put, void *arg,
		const struct dlfs_pack_opts *o, struct dlfs_err *err)
{
	struct zdir d;
	struct zent *z = NULL;
	int ret = find_dir(r, &d, err);
	if (!ret)
		ret = read_dir(r, &d, &z, err);
	for (uint64_t i = 0; !ret && i < d.n; i++) {
		if (o->cancel && *o->cancel)
			ret = dlfs_err_set(err, -ECANCELED, "cancelled");
		else if (i && z[i].off < z[i - 1].off + 30)
			ret = dlfs_err_set(err, -DLFS_ECORRUPT,
					   "%s: members '%s' and '%s' overlap",
					   r->path, z[i - 1].name, z[i].name);
		else
			ret = zmember(r, &z[i], put, arg, err);
	}
	if (z)
		for (uint64_t i = 0; i < d.n; i++)
			free(z[i].name);
	free(z);
	return ret;
}
