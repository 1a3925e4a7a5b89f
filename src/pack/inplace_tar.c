/*
 * Uncompressed tar, read in place (inplace_fmt.h): ustar, GNU (long
 * names and links 'L'/'K', base-256 numbers) and pax ('x' records for
 * path, linkpath, size and mtime; 'g' for mtime). libarchive, which the
 * packer uses to copy archives, does not say where a member's bytes lie
 * in the archive, and that is all this needs, so the headers are read
 * here: a 512-byte header, its extension records before it, its data
 * after it, padded to 512.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "inplace_fmt.h"
#include "scan_kind.h"
#include "util.h"

#define BLK 512
/* How deep tars nest in tars. */
#define NEST_MAX 8
/* The largest pax or GNU long-name record read. */
#define EXT_MAX ((uint64_t)1 << 20)

/* What extension headers say of the next member (or, global, of all). */
struct ext {
	char *path, *link;
	uint64_t size;
	int has_size;
	int64_t mt_sec;
	uint32_t mt_nsec;
	int has_mt;
};

static void ext_clear(struct ext *x)
{
	free(x->path);
	free(x->link);
	memset(x, 0, sizeof(*x));
}

/* One tar (the archive, or one nested in it) being walked. */
struct walk {
	struct ip_run *r;
	ip_put_fn put;
	void *arg;
	const struct dlfs_pack_opts *o;
	struct dlfs_err *err;
	struct ext global;
};

/* A numeric field: octal digits (after spaces), or GNU's base-256 when
 * the first byte's top bit is set. @return 0, or -1 if malformed. */
static int num(const uint8_t *f, size_t n, uint64_t *v)
{
	uint64_t x = 0;
	if (f[0] & 0x80) {
		if (f[0] & 0x40)
			return -1; /* negative */
		x = f[0] & 0x3f;
		for (size_t i = 1; i < n; i++) {
			if (x >> 56)
				return -1;
			x = x << 8 | f[i];
		}
		*v = x;
		return 0;
	}
	size_t i = 0;
	while (i < n && f[i] == ' ')
		i++;
	for (; i < n && f[i] >= '0' && f[i] <= '7'; i++) {
		if (x >> 61)
			return -1;
		x = x << 3 | (uint64_t)(f[i] - '0');
	}
	if (i < n && f[i] != ' ' && f[i] != '\0')
		return -1;
	*v = x;
	return 0;
}

/* The sum of a block's bytes, eight at a time: a word's bytes go to four
 * 16-bit lanes, two each, which the 64 words of a block cannot overflow
 * (128 * 255 < 65536). A byte at a time, this was a third of indexing a
 * tar of small members. */
static uint64_t block_sum(const uint8_t *h)
{
	const uint64_t m = 0x00ff00ff00ff00ffULL;
	uint64_t lanes = 0;
	for (int i = 0; i < BLK; i += 8) {
		uint64_t w;
		memcpy(&w, h + i, 8);
		lanes += (w & m) + ((w >> 8) & m);
	}
	lanes = (lanes & 0x0000ffff0000ffffULL) +
		((lanes >> 16) & 0x0000ffff0000ffffULL);
	return (lanes & 0xffffffffULL) + (lanes >> 32);
}

int ip_tar_header_ok(const uint8_t h[BLK])
{
	uint64_t want, sum = block_sum(h) + 8 * ' ';
	if (num(h + 148, 8, &want))
		return 0;
	for (int i = 148; i < 156; i++) /* the field counts as spaces */
		sum -= h[i];
	if (sum == want)
		return 1;
	/* Old tars summed signed bytes: each byte >= 128 counts 256 less. */
	for (int i = 0; i < BLK; i++)
		if ((i < 148 || i >= 156) && h[i] >= 0x80)
			sum -= 256;
	return sum == want;
}

static int zero_block(const uint8_t *h)
{
	for (int i = 0; i < BLK; i++)
		if (h[i])
			return 0;
	return 1;
}

/* A decimal mtime with an optional fraction ("1700000000.123"). */
static void pax_time(const char *v, int64_t *sec, uint32_t *nsec)
{
	char *end;
	*sec = strtoll(v, &end, 10);
	*nsec = 0;
	if (*end == '.') {
		uint32_t ns = 0, scale = 100000000;
		for (const char *p = end + 1; *p >= '0' && *p <= '9' && scale;
		     p++, scale /= 10)
			ns += (uint32_t)(*p - '0') * scale;
		*nsec = *sec < 0 && ns ? 1000000000u - ns : ns;
		if (*sec < 0 && ns)
			(*sec)--;
	}
}

/* One "KEY=VALUE" record of a pax header into x. */
static int pax_record(struct walk *w, struct ext *x, const char *k,
		      size_t kl, const char *v, size_t vl, uint64_t at)
{
	char **slot = kl == 4 && !memcmp(k, "path", 4)	   ? &x->path
		      : kl == 8 && !memcmp(k, "linkpath", 8) ? &x->link
							     : NULL;
	char tmp[32];
	if (slot) {
		free(*slot);
		if (!(*slot = strndup(v, vl)))
			return dlfs_err_set(w->err, -ENOMEM, "out of memory");
	} else if (kl == 4 && !memcmp(k, "size", 4) && vl < sizeof(tmp)) {
		memcpy(tmp, v, vl);
		tmp[vl] = '\0';
		x->size = strtoull(tmp, NULL, 10);
		x->has_size = 1;
	} else if (kl == 5 && !memcmp(k, "mtime", 5) && vl < sizeof(tmp)) {
		memcpy(tmp, v, vl);
		tmp[vl] = '\0';
		pax_time(tmp, &x->mt_sec, &x->mt_nsec);
		x->has_mt = 1;
	} else if (kl > 11 && !memcmp(k, "GNU.sparse.", 11)) {
		return dlfs_err_set(w->err, -ENOTSUP,
				    "%s: offset %llu: a sparse member: not "
				    "served in place (pack the archive "
				    "without --in-place)",
				    w->r->path, (unsigned long long)at);
	}
	return 0;
}

/* The records "LEN KEY=VALUE\n" of a pax header's n bytes at p. */
static int pax_parse(struct walk *w, struct ext *x, const char *p, size_t n,
		     uint64_t at)
{
	size_t i = 0;
	while (i < n && p[i]) {
		char *end;
		unsigned long len = strtoul(p + i, &end, 10);
		const char *sp = end, *rec = p + i;
		if (*sp != ' ' || len < 5 || len > n - i || rec[len - 1] != '\n')
			return dlfs_err_set(w->err, -DLFS_ECORRUPT,
					    "%s: offset %llu: a damaged pax "
					    "header",
					    w->r->path, (unsigned long long)at);
		const char *k = sp + 1, *eq = memchr(k, '=', len - (size_t)(k - rec));
		if (!eq)
			return dlfs_err_set(w->err, -DLFS_ECORRUPT,
					    "%s: offset %llu: a damaged pax "
					    "record",
					    w->r->path, (unsigned long long)at);
		int ret = pax_record(w, x, k, (size_t)(eq - k), eq + 1,
				     (size_t)(rec + len - 1 - (eq + 1)), at);
		if (ret)
			return ret;
		i += len;
	}
	return 0;
}

/* An extension header's data ('x', 'g', 'L', 'K') at data, size bytes. */
static int extension(struct walk *w, struct ext *next, char type,
		     uint64_t data, uint64_t size, uint64_t at)
{
	const uint8_t *p;
	if (size > EXT_MAX)
		return dlfs_err_set(w->err, -EFBIG,
				    "%s: offset %llu: an extension header of "
				    "%llu bytes",
				    w->r->path, (unsigned long long)at,
				    (unsigned long long)size);
	int ret = ip_peek(w->r, data, (size_t)size, &p, w->err);
	if (ret)
		return ret;
	if (type == 'x' || type == 'g')
		return pax_parse(w, type == 'x' ? next : &w->global,
				 (const char *)p, (size_t)size, at);
	char **slot = type == 'L' ? &next->path : &next->link;
	free(*slot);
	*slot = strndup((const char *)p, (size_t)size);
	return *slot ? 0 : dlfs_err_set(w->err, -ENOMEM, "out of memory");
}

/* A header field of up to n bytes, NUL-terminated if shorter. */
static void append_field(char *out, size_t cap, size_t *len,
			 const uint8_t *f, size_t n)
{
	ip_append(out, cap, len, (const char *)f, strnlen((const char *)f, n));
}

/* A header's own name (ustar's prefix/name), or the long one, after
 * prefix and a slash (none for the archive's root). */
static void header_name(const uint8_t *h, const struct ext *next,
			const char *prefix, char *out, size_t cap)
{
	size_t len = 0;
	out[0] = '\0';
	ip_append(out, cap, &len, prefix, strlen(prefix));
	if (*prefix)
		ip_append(out, cap, &len, "/", 1);
	if (next->path) {
		ip_append(out, cap, &len, next->path, strlen(next->path));
		return;
	}
	if (!memcmp(h + 257, "ustar\0", 6) && h[345]) {
		append_field(out, cap, &len, h + 345, 155);
		ip_append(out, cap, &len, "/", 1);
	}
	append_field(out, cap, &len, h, 100);
}

/* A link's target: the long one, or the header's. */
static void link_name(const uint8_t *h, const struct ext *next, char *out,
		      size_t cap)
{
	size_t len = 0;
	out[0] = '\0';
	if (next->link)
		ip_append(out, cap, &len, next->link, strlen(next->link));
	else
		append_field(out, cap, &len, h + 157, 100);
}

static int walk_tar(struct walk *w, uint64_t off, uint64_t limit,
		    const char *prefix, int depth);

/* A member named *.tar whose data starts with a tar header: walked as a
 * directory of its own. @return 1 if it is one, 0 if not, or < 0. */
static int nested(struct walk *w, const char *name, uint64_t data,
		  uint64_t size, int depth)
{
	size_t n = strlen(name);
	const uint8_t *p;
	if (n <= 4 || strcasecmp(name + n - 4, ".tar") || size < 2 * BLK ||
	    depth >= NEST_MAX)
		return 0;
	int ret = ip_peek(w->r, data, BLK, &p, w->err);
	if (ret)
		return ret;
	if (zero_block(p) || !ip_tar_header_ok(p))
		return 0;
	char *dir = strndup(name, n - 4);
	if (!dir)
		return dlfs_err_set(w->err, -ENOMEM, "out of memory");
	ret = walk_tar(w, data, data + size, dir, depth + 1);
	free(dir);
	return ret ? ret : 1;
}

/* The member whose header h is at off (type t), its data at data. */
static int member(struct walk *w, const uint8_t *h, char t, uint64_t off,
		  uint64_t data, uint64_t size, const struct ext *next,
		  const char *prefix, int depth)
{
	char name[8192], full[8192 + 1024], link[8192];
	uint64_t mode = 0, mt = 0;
	header_name(h, next, prefix, full, sizeof(full));
	if (t == '1' || t == '2')
		link_name(h, next, link, sizeof(link));
	num(h + 100, 8, &mode);
	num(h + 136, 12, &mt);
	struct ip_member m = {.name = full, .mode = (uint32_t)(mode & 07777),
			      .mtime_sec = (int64_t)mt, .offset = off};
	if (next->has_mt || w->global.has_mt) {
		const struct ext *x = next->has_mt ? next : &w->global;
		m.mtime_sec = x->mt_sec;
		m.mtime_nsec = x->mt_nsec;
	}
	switch (t) {
	case '1':
		m.mode |= S_IFREG;
		m.hard = 1;
		if ((size_t)snprintf(name, sizeof(name), "%s%s%s", prefix,
				     *prefix ? "/" : "", link) >= sizeof(name))
			return dlfs_err_set(w->err, -ENAMETOOLONG,
					    "%s: offset %llu: a hard link's "
					    "target is too long",
					    w->r->path,
					    (unsigned long long)off);
		m.link = name;
		return w->put(w->arg, &m, w->err);
	case '2':
		m.mode |= S_IFLNK;
		m.link = link;
		return w->put(w->arg, &m, w->err);
	case '5':
	case 'D':
		m.mode |= S_IFDIR;
		return w->put(w->arg, &m, w->err);
	case '3':
	case '4':
	case '6':
		pk_scan_warn(w->o, "warning: skipping %s: member '%s': %s",
			     w->r->path, full,
			     pk_scan_special_kind(t == '3'   ? S_IFCHR
						  : t == '4' ? S_IFBLK
							     : S_IFIFO));
		return 0;
	}
	int ret = nested(w, full, data, size, depth);
	if (ret > 0) { /* the directory the nested tar becomes */
		m.mode |= S_IFDIR;
		full[strlen(full) - 4] = '\0';
		return w->put(w->arg, &m, w->err);
	}
	if (ret < 0)
		return ret;
	m.mode |= S_IFREG;
	m.size = size;
	ret = ip_stored(w->r, data, size, &m.loc, &m.xxh3, w->err);
	return ret ? ret : w->put(w->arg, &m, w->err);
}

/* Types that are refused, with why; NULL for the others. */
static const char *refused(char t)
{
	return t == 'S'	  ? "a sparse member"
	       : t == 'M' ? "a multi-volume continuation"
	       : t == 'N' ? "an old GNU long-name record"
			  : NULL;
}

/* One header at off (not the end); *next_off past its data. */
static int header(struct walk *w, uint64_t off, uint64_t limit,
		  const uint8_t *h, struct ext *next, const char *prefix,
		  int depth, uint64_t *next_off)
{
	uint64_t size;
	char t = (char)h[156];
	if (!ip_tar_header_ok(h) || num(h + 124, 12, &size))
		return dlfs_err_set(w->err, -DLFS_ECORRUPT,
				    "%s: offset %llu: not a tar header "
				    "(damaged, or not an uncompressed tar)",
				    w->r->path, (unsigned long long)off);
	if (next->has_size && t != 'x' && t != 'g')
		size = next->size;
	uint64_t data = off + BLK;
	if (size > limit - data)
		return dlfs_err_set(w->err, -DLFS_ECORRUPT,
				    "%s: offset %llu: a member of %llu bytes "
				    "runs past the end of its tar",
				    w->r->path, (unsigned long long)off,
				    (unsigned long long)size);
	*next_off = data + dlfs_roundup(size, BLK);
	if (refused(t))
		return dlfs_err_set(w->err, -ENOTSUP,
				    "%s: offset %llu: %s: not served in place "
				    "(pack the archive without --in-place)",
				    w->r->path, (unsigned long long)off,
				    refused(t));
	if (t == 'x' || t == 'g' || t == 'L' || t == 'K')
		return extension(w, next, t, data, size, off);
	int ret = t == 'V' ? 0 /* a volume label */
			   : member(w, h, t, off, data, size, next, prefix,
				    depth);
	ext_clear(next);
	return ret;
}

static int walk_tar(struct walk *w, uint64_t off, uint64_t limit,
		    const char *prefix, int depth)
{
	struct ext next = {0};
	int ret = 0;
	while (!ret && off + BLK <= limit) {
		const uint8_t *h;
		if (w->o->cancel && *w->o->cancel) {
			ret = dlfs_err_set(w->err, -ECANCELED, "cancelled");
			break;
		}
		if ((ret = ip_peek(w->r, off, BLK, &h, w->err)))
			break;
		if (zero_block(h))
			break; /* the end */
		ret = header(w, off, limit, h, &next, prefix, depth, &off);
	}
	ext_clear(&next);
	return ret;
}

int ip_tar_walk(struct ip_run *r, ip_put_fn put, void *arg,
		const struct dlfs_pack_opts *o, struct dlfs_err *err)
{
	struct walk w = {.r = r, .put = put, .arg = arg, .o = o, .err = err};
	int ret = walk_tar(&w, 0, r->size, "", 0);
	ext_clear(&w.global);
	return ret;
}
