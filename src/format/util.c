/* Private helpers: see util.h. dlfs_parse_* are public (pack.h). */
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "dlfs/err.h"
#include "dlfs/format.h"

void dlfs_precache_extents(int fd)
{
	/* No room for extents: only the side effect is wanted. */
	struct fiemap fm = {.fm_length = FIEMAP_MAX_OFFSET,
			    .fm_flags = FIEMAP_FLAG_CACHE};
	(void)ioctl(fd, FS_IOC_FIEMAP, &fm);
}

ssize_t dlfs_pread_full(int fd, void *buf, size_t len, uint64_t off)
{
	size_t done = 0;
	while (done < len) {
		ssize_t n = pread(fd, (char *)buf + done, len - done,
				  (off_t)(off + done));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

ssize_t dlfs_read_full(int fd, void *buf, size_t len)
{
	size_t done = 0;
	while (done < len) {
		ssize_t n = read(fd, (char *)buf + done, len - done);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

int dlfs_pwrite_full(int fd, const void *buf, size_t len, uint64_t off)
{
	size_t done = 0;
	while (done < len) {
		ssize_t n = pwrite(fd, (const char *)buf + done, len - done,
				   (off_t)(off + done));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		done += (size_t)n;
	}
	return 0;
}

int dlfs_write_full(int fd, const void *buf, size_t len)
{
	size_t done = 0;
	while (done < len) {
		ssize_t n = write(fd, (const char *)buf + done, len - done);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		done += (size_t)n;
	}
	return 0;
}

void dlfs_hex(const uint8_t *in, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[in[i] >> 4];
		out[2 * i + 1] = digits[in[i] & 15];
	}
	out[2 * n] = '\0';
}

void dlfs_quote(const char *in, size_t len, char *out, size_t outlen)
{
	size_t o = 0;
	for (size_t i = 0; i < len && o + 5 < outlen; i++) {
		unsigned char ch = (unsigned char)in[i];
		if (ch >= 0x20 && ch < 0x7f && ch != '\\') {
			out[o++] = (char)ch;
		} else {
			snprintf(out + o, outlen - o, "\\x%02x", ch);
			o += 4;
		}
	}
	if (outlen)
		out[o < outlen ? o : outlen - 1] = '\0';
}

size_t dlfs_utf8_seq(const unsigned char *p, size_t n)
{
	if (!n)
		return 0;
	if (p[0] < 0x80)
		return 1;
	size_t len;
	unsigned lo = 0x80, hi = 0xbf; /* the second byte's range */
	if (p[0] >= 0xc2 && p[0] <= 0xdf) {
		len = 2;
	} else if (p[0] >= 0xe0 && p[0] <= 0xef) {
		len = 3;
		if (p[0] == 0xe0)
			lo = 0xa0; /* overlong below */
		else if (p[0] == 0xed)
			hi = 0x9f; /* surrogates above */
	} else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
		len = 4;
		if (p[0] == 0xf0)
			lo = 0x90;
		else if (p[0] == 0xf4)
			hi = 0x8f; /* past U+10FFFF above */
	} else {
		return 0;
	}
	if (n < len || p[1] < lo || p[1] > hi)
		return 0;
	for (size_t i = 2; i < len; i++)
		if (p[i] < 0x80 || p[i] > 0xbf)
			return 0;
	return len;
}

/* Edits from a to b (optimal string alignment), or more than max: then
 * max + 1. Names of options are short: 64 bytes are enough. */
static size_t edits(const char *a, const char *b, size_t max)
{
	size_t la = strlen(a), lb = strlen(b);
	if (la > 63 || lb > 63 || (la > lb ? la - lb : lb - la) > max)
		return max + 1;
	size_t d[64][64];
	for (size_t i = 0; i <= la; i++)
		d[i][0] = i;
	for (size_t j = 0; j <= lb; j++)
		d[0][j] = j;
	for (size_t i = 1; i <= la; i++)
		for (size_t j = 1; j <= lb; j++) {
			size_t c = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
			if (d[i - 1][j] + 1 < c)
				c = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < c)
				c = d[i][j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] &&
			    a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < c)
				c = d[i - 2][j - 2] + 1;
			d[i][j] = c;
		}
	return d[la][lb] > max ? max + 1 : d[la][lb];
}

const char *dlfs_closest(const char *word, const char *const *cands,
			 size_t n)
{
	size_t max = strlen(word) / 3;
	max = max < 1 ? 1 : max > 3 ? 3 : max;
	const char *best = NULL;
	size_t best_d = max + 1;
	for (size_t i = 0; i < n; i++) {
		if (!cands[i])
			continue;
		size_t d = edits(word, cands[i], max);
		if (d < best_d) {
			best = cands[i];
			best_d = d;
		}
	}
	return best;
}

int dlfs_parse_size(const char *s, uint64_t *out)
{
	if (!s || !isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno)
		return -EINVAL;
	unsigned shift = 0;
	switch (toupper((unsigned char)*end)) {
	case '\0': break;
	case 'K': shift = 10; end++; break;
	case 'M': shift = 20; end++; break;
	case 'G': shift = 30; end++; break;
	case 'T': shift = 40; end++; break;
	default: return -EINVAL;
	}
	if (shift && (!strcasecmp(end, "iB") || !strcasecmp(end, "B")))
		end += strlen(end);
	if (*end)
		return -EINVAL;
	if (shift && v > (UINT64_MAX >> shift))
		return -EINVAL;
	*out = (uint64_t)v << shift;
	return 0;
}

int dlfs_open_long(const char *path, int flags, int mode)
{
	size_t len = strlen(path);
	if (len < PATH_MAX) {
		int fd = open(path, flags, mode);
		return fd < 0 ? -errno : fd;
	}
	char *buf = strdup(path);
	if (!buf)
		return -ENOMEM;
	int dir = AT_FDCWD, ret;
	char *p = buf;
	for (;;) {
		size_t left = strlen(p);
		if (left < PATH_MAX) {
			ret = openat(dir, p, flags, mode);
			if (ret < 0)
				ret = -errno;
			break;
		}
		/* The longest piece that fits and ends at a '/'. Names are
		 * at most NAME_MAX, so there is one. */
		char *cut = p + PATH_MAX - 1;
		while (cut > p && *cut != '/')
			cut--;
		if (cut == p) {
			ret = -ENAMETOOLONG;
			break;
		}
		*cut = '\0';
		int next = openat(dir, p, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (next < 0) {
			ret = -errno;
			break;
		}
		if (dir != AT_FDCWD)
			close(dir);
		dir = next;
		p = cut + 1;
		while (*p == '/')
			p++;
	}
	if (dir != AT_FDCWD)
		close(dir);
	free(buf);
	return ret;
}

int dlfs_mdb_errno(int rc)
{
	switch (rc) {
	case MDB_SUCCESS:
		return 0;
	case MDB_NOTFOUND:
		return -ENOENT;
	case MDB_MAP_FULL:
		return -ENOSPC;
	case MDB_CORRUPTED:
	case MDB_PAGE_NOTFOUND:
	case MDB_INVALID:
	case MDB_VERSION_MISMATCH:
	case MDB_BAD_VALSIZE:
	case MDB_INCOMPATIBLE:
		return -DLFS_ECORRUPT;
	default:
		return rc > 0 ? -rc : -EIO;
	}
}
