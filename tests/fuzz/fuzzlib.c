/* The fuzz input format: see fuzzlib.h. */
#include "fuzzlib.h"

#include <errno.h>
#include <string.h>

#include "dlfs/format.h"

size_t fuzz_parse(const uint8_t *data, size_t size, struct fuzz_ent *out,
		  size_t max)
{
	size_t n = 0, at = 0;
	while (n < max && size - at >= FUZZ_HDR) {
		const uint8_t *h = data + at;
		size_t klen = (size_t)h[1] | (size_t)h[2] << 8;
		size_t vlen = dlfs_get_le32(h + 3);
		at += FUZZ_HDR;
		if (klen > size - at || vlen > size - at - klen)
			break;
		out[n] = (struct fuzz_ent){h[0], data + at, data + at + klen,
					   klen, vlen};
		at += klen + vlen;
		if (out[n].tag < FUZZ_NTAGS)
			n++;
	}
	return n;
}

const struct fuzz_ent *fuzz_find(const struct fuzz_ent *e, size_t n,
				 uint8_t tag, const void *key, size_t klen)
{
	for (size_t i = 0; i < n; i++)
		if (e[i].tag == tag &&
		    (!key || (e[i].klen == klen && !memcmp(e[i].key, key, klen))))
			return &e[i];
	return NULL;
}

unsigned fuzz_flags(const struct fuzz_ent *e, size_t n)
{
	const struct fuzz_ent *f = fuzz_find(e, n, FUZZ_FLAGS, NULL, 0);
	return f && f->vlen ? f->val[0] : 0;
}

int fuzz_put(struct fuzz_buf *b, uint8_t tag, const void *key, size_t klen,
	     const void *val, size_t vlen)
{
	if (klen > 0xffff || vlen > UINT32_MAX)
		return -E2BIG;
	size_t need = b->len + FUZZ_HDR + klen + vlen;
	if (need > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		while (cap < need)
			cap *= 2;
		uint8_t *p = realloc(b->p, cap);
		if (!p)
			return -ENOMEM;
		b->p = p;
		b->cap = cap;
	}
	uint8_t *h = b->p + b->len;
	h[0] = tag;
	h[1] = (uint8_t)klen;
	h[2] = (uint8_t)(klen >> 8);
	dlfs_put_le32(h + 3, (uint32_t)vlen);
	if (klen)
		memcpy(h + FUZZ_HDR, key, klen);
	if (vlen)
		memcpy(h + FUZZ_HDR + klen, val, vlen);
	b->len = need;
	return 0;
}

uint8_t *fuzz_dup(const void *p, size_t n)
{
	uint8_t *d = malloc(n ? n : 1);
	if (!d)
		abort();
	if (n)
		memcpy(d, p, n);
	return d;
}
