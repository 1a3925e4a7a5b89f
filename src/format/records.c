/* Checks of decoded records: see records.h. */
#include <string.h>
#include <sys/stat.h>
#include <xxhash.h>

#include "bytes.h"
#include "records.h"
#include "util.h"

int dlfs_super_check(const struct dlfs_super_rec *s)
{
	/* The counts are compared by subtraction, and inode numbers fit in
	 * a directory entry's 60 bits, so that no sum can wrap around
	 * (n_dirs = 2^64 - 1 once passed, and verify then sized an array by
	 * n_dirs + 1 = 0). A chunk's length is a u32 in its
	 * record; a larger chunk size also overflows the container checks'
	 * offset sums. */
	int ok = s->n_inodes >= 1 && s->n_inodes <= DLFS_DIRENT_INO_MASK &&
		 s->n_dirs >= 1 &&
		 s->n_dirs <= s->n_inodes &&
		 s->n_symlinks <= s->n_inodes - s->n_dirs &&
		 s->n_files == s->n_inodes - s->n_dirs - s->n_symlinks &&
		 s->first_file_ino == 1 + s->n_dirs + s->n_symlinks &&
		 s->chunk_size >= 4096 && s->chunk_size % 4096 == 0 &&
		 s->chunk_size <= UINT32_MAX &&
		 s->n_containers <= DLFS_MAX_CONTAINERS;
	return ok ? 0 : -DLFS_ECORRUPT;
}

int dlfs_super_features_check(const struct dlfs_super_rec *s,
			      const char *ds_path, struct dlfs_err *err)
{
	uint64_t unknown = s->features & ~DLFS_FEATURES_KNOWN;
	if (!unknown)
		return 0;
	unsigned bit = (unsigned)__builtin_ctzll(unknown);
	return dlfs_err_set(err, -EPROTONOSUPPORT,
			    "%s: feature bit %u (0x%llx) is not known to this "
			    "dlfs: a newer dlfs-pack made it",
			    ds_path, bit, (unsigned long long)(UINT64_C(1) << bit));
}

int dlfs_container_entry(const struct dlfs_super_rec *s, const void *v,
			 size_t vlen, uint64_t first_chunk,
			 struct dlfs_container *out)
{
	const uint64_t cs = s->chunk_size;
	struct dlfs_container_rec r;

	memset(out, 0, sizeof(*out));
	out->first_chunk = first_chunk;
	out->bad = -DLFS_ECORRUPT;
	if (!v || vlen != DLFS_CONTAINER_REC_SIZE)
		return out->bad;
	dlfs_container_rec_decode(v, &r);
	/* The chunk count is checked against the data size, so that no
	 * reader can walk chunks that do not exist, or miss some. */
	/* Compressed chunks may take less room than the data region's
	 * logical size: then only the data offset and the footer must fit
	 * (each chunk record says where its bytes are). */
	/* An in-place dataset's container is an archive: no header, no
	 * footer, and its chunks anywhere in it (their records say where). */
	uint64_t need = s->features & DLFS_FEATURE(IN_PLACE) ? 0
			: s->features & DLFS_FEATURE(COMPRESSED)
				? DLFS_DATA_OFFSET(cs) + DLFS_FOOTER_SIZE
				: DLFS_DATA_OFFSET(cs) + r.data_size +
					  DLFS_FOOTER_SIZE;
	int ok = r.data_size <= (UINT64_C(1) << 48) &&
		 r.n_chunks == (r.data_size + cs - 1) / cs &&
		 r.n_chunks <= UINT32_MAX &&
		 r.file_size >= need &&
		 r.first_ino <= s->n_inodes + 1 &&
		 r.n_files <= s->n_inodes + 1 - r.first_ino;
	if (!ok)
		return out->bad;
	out->file_size = r.file_size;
	out->data_size = r.data_size;
	out->n_chunks = r.n_chunks;
	out->first_ino = r.first_ino;
	out->n_files = r.n_files;
	out->footer_xxh3 = r.footer_xxh3;
	out->bad = 0;
	return 0;
}

/* An in-place chunk (format.h): a run of members of length at most the
 * chunk size (exactly the rest for the last), its stored bytes inside
 * the archive, raw or one deflated member. */
static int in_place_check(const struct dlfs_container *cont,
			  const char *ds_path, uint32_t c, uint64_t k,
			  uint64_t last, const struct dlfs_chunk_rec *r,
			  struct dlfs_err *err)
{
	int deflate = r->flags & DLFS_CHUNK_DEFLATE;
	int is_last = k + 1 == cont->n_chunks;
	int ok = r->length > 0 && r->length <= last &&
		 (!is_last || r->length == last) &&
		 !(r->flags & ~DLFS_CHUNK_DEFLATE) &&
		 (deflate ? r->stored_length > 0
			  : r->stored_length == r->length && r->sum == r->xxh3) &&
		 r->stored_offset <= cont->file_size &&
		 r->stored_length <= cont->file_size - r->stored_offset;
	if (ok)
		return 0;
	return dlfs_err_set(err, -DLFS_ECORRUPT,
			    "%s/index: chunk %llu of archive %u: its length, "
			    "stored extent or flags are impossible: damaged",
			    ds_path, (unsigned long long)k, c);
}

int dlfs_chunk_rec_check(const struct dlfs_super_rec *s,
			 const struct dlfs_container *cont, const char *ds_path,
			 uint32_t c, uint64_t k, const void *v, size_t vlen,
			 struct dlfs_chunk_rec *out, struct dlfs_err *err)
{
	const uint64_t cs = s->chunk_size;
	const char *why = "damaged";
	memset(out, 0, sizeof(*out));
	if (vlen != dlfs_chunk_rec_size(s->features))
		goto bad;
	dlfs_chunk_decode(v, s->features, out);
	uint64_t left = cont->data_size - k * cs;
	uint64_t want = left < cs ? left : cs;
	if (s->features & DLFS_FEATURE(IN_PLACE))
		return in_place_check(cont, ds_path, c, k, want, out, err);
	if (out->length != want)
		return dlfs_err_set(err, -DLFS_ECORRUPT,
				    "%s/index: chunk %llu of container %u: "
				    "record says %u bytes, the container's "
				    "has %llu: damaged",
				    ds_path, (unsigned long long)k, c,
				    out->length, (unsigned long long)want);
	if (!(s->features & DLFS_FEATURE(COMPRESSED)))
		return 0;
	uint64_t d0 = DLFS_DATA_OFFSET(cs), end = cont->file_size -
						  DLFS_FOOTER_SIZE;
	int zstd = out->flags & DLFS_CHUNK_ZSTD;
	if ((out->flags & ~DLFS_CHUNK_ZSTD) || /* deflate: in place only */
	    (zstd ? out->stored_length >= out->length
		  : out->stored_length != out->length ||
			    out->sum != out->xxh3) ||
	    out->stored_offset % 4096 || out->stored_offset < d0 ||
	    out->stored_offset > end || out->stored_length > end -
							  out->stored_offset) {
		why = "its stored extent or flags are impossible: damaged";
		goto bad;
	}
	return 0;
bad:
	return dlfs_err_set(err, -DLFS_ECORRUPT,
			    "%s/index: chunk %llu of container %u: %s",
			    ds_path, (unsigned long long)k, c, why);
}

uint32_t dlfs_ino_type(const struct dlfs_super_rec *s, uint64_t ino)
{
	if (ino <= s->n_dirs)
		return S_IFDIR;
	return ino < s->first_file_ino ? S_IFLNK : S_IFREG;
}

int dlfs_inode_rec_check(const struct dlfs_super_rec *s,
			 const struct dlfs_container *cont, const char *ds_path,
			 uint64_t ino, const void *block, size_t block_len,
			 struct dlfs_inode *out, struct dlfs_err *err)
{
	struct dlfs_inode_rec r;
	uint64_t slot = (ino - 1) % DLFS_INODES_PER_BLOCK;
	const size_t rs = dlfs_inode_rec_size(s->features);

	if (block_len < (slot + 1) * rs)
		goto bad;
	dlfs_inode_decode((const uint8_t *)block + slot * rs, s->features, &r);
	out->ino = ino;
	out->mode = r.mode;
	out->mtime_sec = r.mtime_sec;
	out->mtime_nsec = r.mtime_nsec;
	out->size = r.size;
	out->container = (uint32_t)(r.loc >> DLFS_LOC_CONTAINER_SHIFT);
	out->offset = r.loc & DLFS_LOC_OFFSET_MASK;
	out->xxh3 = r.xxh3;
	out->path_hash = r.path_hash;
	out->target = NULL;
	/* Inode numbers are assigned by type (dlfs-format(5) INODES), so a
	 * damaged mode shows: a file served as a directory, or the reverse,
	 * gives ENOTDIR, EISDIR or ELOOP instead of an error. */
	if ((r.mode & S_IFMT) != dlfs_ino_type(s, ino))
		goto bad;
	if (S_ISREG(r.mode)) {
		/* The extent must lie in its container's data region, so
		 * that every reader can trust its chunk arithmetic (an empty
		 * file's too: verify walks a container's files by offset). */
		if (out->container >= s->n_containers)
			goto bad;
		const struct dlfs_container *c = &cont[out->container];
		uint64_t base = DLFS_DATA_OFFSET(s->chunk_size);
		/* An empty file has no bytes, but its checksum is known. */
		if (r.size == 0 && r.xxh3 != XXH3_64bits(NULL, 0))
			goto bad;
		if (r.size == 0 && c->bad)
			return 0; /* no bytes to find */
		if (c->bad)
			return dlfs_err_set(err, -DLFS_ECORRUPT,
					    "%s/index: inode %llu: the record "
					    "of its container %u is damaged",
					    ds_path, (unsigned long long)ino,
					    out->container);
		/* Its container holds inodes first_ino .. + n_files - 1. */
		if (ino < c->first_ino || ino - c->first_ino >= c->n_files ||
		    out->offset < base || out->size > c->data_size ||
		    out->offset - base > c->data_size - out->size)
			goto bad;
		/* A file that fits in a chunk lies in one (dlfs-format(5)).
		 * The read core checks such a file against its checksum
		 * when its chunk is in hand, so a record moved across a
		 * chunk boundary would serve other files' bytes unchecked. */
		uint64_t cs = s->chunk_size, at = out->offset - base;
		if (out->size && out->size <= cs &&
		    at / cs != (at + out->size - 1) / cs)
			goto bad;
	}
	return 0;
bad:
	return dlfs_err_set(err, -DLFS_ECORRUPT,
			    "%s/index: inode %llu is damaged", ds_path,
			    (unsigned long long)ino);
}

int dlfs_inode_bound_check(const struct dlfs_super_rec *s,
			   const char *ds_path, uint64_t parent,
			   const char *name, size_t len,
			   const struct dlfs_inode *in, struct dlfs_err *err)
{
	if (!(s->features & DLFS_FEATURE(PATH_BOUND)) ||
	    in->path_hash == dlfs_path_hash(parent, name, len))
		return 0;
	char q[4 * DLFS_NAME_MAX + 3];
	dlfs_quote(name, len, q, sizeof(q));
	return dlfs_err_set(err, -DLFS_ECORRUPT,
			    "%s/index: entry '%s' of directory inode %llu leads "
			    "to inode %llu, whose record is another name's: "
			    "damaged directory entry",
			    ds_path, q, (unsigned long long)parent,
			    (unsigned long long)in->ino);
}

int dlfs_dirent_val_decode(const struct dlfs_super_rec *s, const void *val,
			   size_t vlen, uint64_t *ino, uint32_t *type)
{
	if (vlen != 8)
		return -DLFS_ECORRUPT;
	uint64_t v = bytes_get_le64(val);
	*ino = v & DLFS_DIRENT_INO_MASK;
	*type = (uint32_t)(v >> DLFS_DIRENT_TYPE_SHIFT) << 12;
	/* The root is nobody's child; the type is the one of the number. */
	if (*ino < 2 || *ino > s->n_inodes || *type != dlfs_ino_type(s, *ino))
		return -DLFS_ECORRUPT;
	return 0;
}

/* A name dlfs-format(5) allows: 1 to 255 bytes, no '/' or NUL, neither
 * "." nor "..". Readers copy names into NAME_MAX buffers and use them as
 * path components (extract creates them with openat). */
static int name_ok(const char *n, size_t len)
{
	return len >= 1 && len <= DLFS_NAME_MAX && !memchr(n, '/', len) &&
	       !memchr(n, '\0', len) && !(len == 1 && n[0] == '.') &&
	       !(len == 2 && n[0] == '.' && n[1] == '.');
}

int dlfs_dirent_decode(const struct dlfs_super_rec *s, const void *key,
		       size_t klen, const void *val, size_t vlen,
		       struct dlfs_dirent *out)
{
	if (klen <= 8 || !name_ok((const char *)key + 8, klen - 8))
		return -DLFS_ECORRUPT;
	int ret = dlfs_dirent_val_decode(s, val, vlen, &out->ino, &out->type);
	if (ret)
		return ret;
	out->name = (const char *)key + 8;
	out->name_len = klen - 8;
	return 0;
}

int dlfs_header_check(const uint8_t *hb, size_t n,
		      const struct dlfs_info *info, uint32_t c,
		      const struct dlfs_container *rec, const char *cpath,
		      struct dlfs_err *err)
{
	if (n < DLFS_CONTAINER_HEADER_REC_SIZE)
		return dlfs_err_set(err, -DLFS_ECORRUPT,
				    "%s: truncated header", cpath);
	struct dlfs_container_header h;
	dlfs_header_decode(hb, &h);
	if (memcmp(h.magic, DLFS_CONTAINER_MAGIC, 8))
		return dlfs_err_set(err, -DLFS_ECORRUPT,
				    "%s: not a dlfs container (bad magic)",
				    cpath);
	if (h.format_major != DLFS_FORMAT_MAJOR)
		return dlfs_err_set(err, -EPROTONOSUPPORT,
				    "%s: unsupported format version %u.%u",
				    cpath, h.format_major, h.format_minor);
	uint8_t check[DLFS_CONTAINER_HEADER_REC_SIZE];
	struct dlfs_container_header h2 = h;
	dlfs_header_encode(&h2, check);
	if (h2.header_xxh3 != h.header_xxh3)
		return dlfs_err_set(err, -DLFS_ECORRUPT,
				    "%s: header checksum mismatch", cpath);
	if (memcmp(h.dataset_id, info->super.dataset_id, DLFS_ID_SIZE)) {
		char hex[2 * DLFS_ID_SIZE + 1];
		dlfs_hex(h.dataset_id, DLFS_ID_SIZE, hex);
		return dlfs_err_set(err, -DLFS_ECORRUPT,
				    "%s: dataset id %s does not match the "
				    "index's %s (container from another "
				    "dataset?)",
				    cpath, hex, info->dataset_id_hex);
	}
	if (h.container != c || h.chunk_size != info->super.chunk_size ||
	    h.data_offset != DLFS_DATA_OFFSET(h.chunk_size) ||
	    h.data_size != rec->data_size)
		return dlfs_err_set(err, -DLFS_ECORRUPT,
				    "%s: header disagrees with the index "
				    "(container %u, chunk size %llu)",
				    cpath, h.container,
				    (unsigned long long)h.chunk_size);
	return 0;
}

int dlfs_footer_check(const uint8_t *fb, size_t n,
		      const struct dlfs_container *rec, const char *cpath,
		      struct dlfs_err *err)
{
	struct dlfs_container_footer f;
	if (n < DLFS_FOOTER_SIZE)
		goto bad;
	dlfs_footer_decode(fb, &f);
	if (memcmp(f.magic, DLFS_FOOTER_MAGIC, 8) ||
	    f.footer_xxh3 != rec->footer_xxh3)
		goto bad;
	return 0;
bad:
	return dlfs_err_set(err, -DLFS_ECORRUPT, "%s: footer is damaged",
			    cpath);
}

int dlfs_trailer_next(const uint8_t *buf, size_t len, uint64_t chunk_size,
		      uint64_t data_size, struct dlfs_trailer_item *it)
{
	memset(it, 0, sizeof(*it));
	if (len < DLFS_TRAILER_REC_SIZE) {
		it->len = DLFS_TRAILER_REC_SIZE;
		return -EAGAIN;
	}
	struct dlfs_trailer_rec *r = &it->rec;
	dlfs_trailer_rec_decode(buf, r);
	uint64_t extra = S_ISLNK(r->mode) ? r->size : 0;
	if (extra > DLFS_TRAILER_REC_MAX ||
	    DLFS_TRAILER_REC_SIZE + (uint64_t)r->path_len + extra >
		    DLFS_TRAILER_REC_MAX)
		return -DLFS_ECORRUPT;
	if (S_ISREG(r->mode)) {
		uint64_t base = DLFS_DATA_OFFSET(chunk_size);
		if (r->size && (r->offset < base || r->size > data_size ||
				r->offset - base > data_size - r->size))
			return -DLFS_ECORRUPT;
	} else if (S_ISDIR(r->mode) || S_ISLNK(r->mode)) {
		if (r->offset)
			return -DLFS_ECORRUPT;
	} else {
		return -DLFS_ECORRUPT;
	}
	it->len = (size_t)(DLFS_TRAILER_REC_SIZE + r->path_len + extra);
	if (len < it->len)
		return -EAGAIN;
	it->path = buf + DLFS_TRAILER_REC_SIZE;
	it->target = S_ISLNK(r->mode) ? it->path + r->path_len : NULL;
	return 0;
}

size_t dlfs_trailer_walk(struct dlfs_trailer_walk *w, const uint8_t *buf,
			 size_t len)
{
	size_t used = 0;
	while (!w->bad && used < len) {
		struct dlfs_trailer_item it;
		int r = dlfs_trailer_next(buf + used, len - used, w->chunk_size,
					  w->data_size, &it);
		if (r == -EAGAIN)
			return used;
		if (r) {
			w->bad = r;
			break;
		}
		w->n_records++;
		used += it.len;
	}
	return len;
}

int dlfs_trailer_pos_check(const struct dlfs_container_footer *f,
			   uint64_t file_size)
{
	if (file_size < DLFS_FOOTER_SIZE ||
	    f->trailer_offset > file_size - DLFS_FOOTER_SIZE ||
	    f->trailer_size != file_size - DLFS_FOOTER_SIZE - f->trailer_offset)
		return -DLFS_ECORRUPT;
	return 0;
}
