/*
 * The byte orders of the on-disk records, inline: the exported
 * dlfs_get_* and dlfs_put_* (dlfs/format.h) are these, and the format's
 * own decoders call these directly: a 10M-file index is decoded a field
 * at a time, and a call and a byte loop per field were a third of the
 * planner's pass over the inodes.
 * Thread-safety: pure functions.
 */
#ifndef DLFS_FORMAT_BYTES_H
#define DLFS_FORMAT_BYTES_H

#include <endian.h>
#include <stdint.h>
#include <string.h>

static inline uint32_t bytes_get_le32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, sizeof(v));
	return le32toh(v);
}

static inline uint64_t bytes_get_le64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, sizeof(v));
	return le64toh(v);
}

static inline uint32_t bytes_get_be32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, sizeof(v));
	return be32toh(v);
}

static inline uint64_t bytes_get_be64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, sizeof(v));
	return be64toh(v);
}

static inline void bytes_put_le32(uint8_t *p, uint32_t v)
{
	v = htole32(v);
	memcpy(p, &v, sizeof(v));
}

static inline void bytes_put_le64(uint8_t *p, uint64_t v)
{
	v = htole64(v);
	memcpy(p, &v, sizeof(v));
}

static inline void bytes_put_be32(uint8_t *p, uint32_t v)
{
	v = htobe32(v);
	memcpy(p, &v, sizeof(v));
}

static inline void bytes_put_be64(uint8_t *p, uint64_t v)
{
	v = htobe64(v);
	memcpy(p, &v, sizeof(v));
}

#endif
