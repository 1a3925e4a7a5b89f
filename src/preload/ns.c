/*
 * ns: wire calls and the LOOKUP cache (see ns.h; the cache is nscache.c).
 * Whether a name is volatile is the server's word alone
 * (DLFS_WIRE_VOLATILE on its LOOKUP answer): the walk carries it from
 * the lookup that found a directory to the lookups in it, so those
 * bypass the cache, and to what the walk resolved.
 */
#include "ns.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "conn.h"
#include "direct.h"
#include "nscache.h"
#include "state.h"
#include "real.h"

/*
 * The LOOKUP cache's budget. An entry takes about 64 bytes, its name and
 * 16 bytes of table (the dlfs server's attributes are all the usual
 * ones): about 100 bytes for a 20-byte name, so 64 MiB holds some 650,000
 * names. A walk of a larger dataset empties shards as it goes, and asks
 * the server again for names it had seen (one round trip each).
 */
#define NS_MAX_BYTES ((size_t)64 << 20)

void dlfs_ns_init(void)
{
	dlfs_nscache_init(NS_MAX_BYTES);
}

void dlfs_ns_fork_prepare(void)
{
	dlfs_nscache_fork_prepare();
}

void dlfs_ns_fork_parent(void)
{
	dlfs_nscache_fork_parent();
}

int dlfs_ns_lookup(uint64_t parent, int vol, const char *name, size_t len,
		   uint64_t *ino, struct stat *st, int *ent_vol)
{
	/* The dataset's names are at most NAME_MAX bytes (the mount's
	 * f_namemax): no need to ask. */
	if (len > NAME_MAX)
		return -ENAMETOOLONG;
	*ent_vol = 0;
	int ret;
	if (!vol && (ret = dlfs_nscache_get(parent, name, len, &dlfs_pl.root_st,
					     ino, st)) <= 0)
		return ret;
	/* Another process of the job may have asked already. */
	if (!vol && dlfs_direct_lookup(parent, name, len, ino, st) == 0)
		return 0;

	struct dlfs_wire_req req = {.op = DLFS_WIRE_LOOKUP,
				    .name_len = (uint32_t)len,
				    .ino = parent};
	struct dlfs_wire_entry ent;
	uint64_t got = 0;
	ret = dlfs_conn_call(&req, name, &ent, sizeof(ent), &got, NULL);
	if (!ret && got != sizeof(ent))
		ret = -EIO;
	if (ret && ret != -ENOENT)
		return ret;
	if (!ret) {
		*ino = ent.ino;
		*st = ent.st;
	}
	/* The server's rule: what answers differently as the run goes on. */
	*ent_vol = !ret && (ent.flags & DLFS_WIRE_VOLATILE);
	if (!vol && !*ent_vol)
		dlfs_nscache_put(parent, name, len, &dlfs_pl.root_st, ent.ino,
				 ret ? NULL : &ent.st);
	return ret;
}

int dlfs_ns_getattr(uint64_t ino, struct stat *st)
{
	struct dlfs_wire_req req = {.op = DLFS_WIRE_GETATTR, .ino = ino};
	uint64_t got = 0;
	int ret = dlfs_conn_call(&req, NULL, st, sizeof(*st), &got, NULL);
	if (!ret && got != sizeof(*st))
		ret = -EIO;
	return ret;
}

long dlfs_ns_readlink(uint64_t ino, char *buf, size_t size)
{
	struct dlfs_wire_req req = {.op = DLFS_WIRE_READLINK, .ino = ino};
	uint64_t got = 0;
	int ret = dlfs_conn_call(&req, NULL, buf, size, &got, NULL);
	return ret ? ret : (long)got;
}

ssize_t dlfs_ns_read(uint64_t ino, void *buf, size_t size, uint64_t off)
{
	/* The tiers in shared memory first: no request at all. */
	ssize_t d = dlfs_direct_read(ino, buf, size, off);
	if (d >= 0)
		return d;
	size_t done = 0;
	while (done < size) {
		size_t n = size - done;
		if (n > dlfs_pl.max_io)
			n = dlfs_pl.max_io;
		struct dlfs_wire_req req = {.op = DLFS_WIRE_READ, .ino = ino,
					    .off = off + done, .size = n};
		uint64_t got = 0;
		int ret = dlfs_conn_call(&req, NULL, (char *)buf + done, n, &got,
					 NULL);
		if (ret)
			return done ? (ssize_t)done : ret;
		if (!got)
			break; /* the end; a short reply is not */
		done += got;
	}
	return (ssize_t)done;
}

int dlfs_ns_readdir(uint64_t ino, uint64_t cookie, void *buf, size_t cap,
		    uint32_t *count, uint64_t *len)
{
	if (cap > dlfs_pl.max_io)
		cap = dlfs_pl.max_io;
	struct dlfs_wire_req req = {.op = DLFS_WIRE_READDIR, .ino = ino,
				    .off = cookie, .size = cap};
	return dlfs_conn_call(&req, NULL, buf, cap, len, count);
}

int dlfs_ns_statfs(struct statvfs *sv)
{
	struct dlfs_wire_req req = {.op = DLFS_WIRE_STATFS};
	uint64_t got = 0;
	int ret = dlfs_conn_call(&req, NULL, sv, sizeof(*sv), &got, NULL);
	if (!ret && got != sizeof(*sv))
		ret = -EIO;
	return ret;
}

long dlfs_ns_getxattr(uint64_t ino, const char *name, void *buf, size_t size)
{
	size_t nl = strlen(name);
	if (nl > DLFS_WIRE_MAX_NAME)
		return -ERANGE;
	if (size > DLFS_WIRE_MAX_IO)
		size = DLFS_WIRE_MAX_IO;
	struct dlfs_wire_req req = {.op = DLFS_WIRE_GETXATTR,
				    .name_len = (uint32_t)nl,
				    .ino = ino,
				    .size = size};
	uint32_t count = 0;
	int ret = dlfs_conn_call(&req, name, buf, size, NULL, &count);
	return ret ? ret : (long)count;
}

long dlfs_ns_listxattr(uint64_t ino, char *buf, size_t size)
{
	if (size > DLFS_WIRE_MAX_IO)
		size = DLFS_WIRE_MAX_IO;
	struct dlfs_wire_req req = {.op = DLFS_WIRE_LISTXATTR, .ino = ino,
				    .size = size};
	uint32_t count = 0;
	int ret = dlfs_conn_call(&req, NULL, buf, size, NULL, &count);
	return ret ? ret : (long)count;
}

static int ops_lookup(void *ctx, uint64_t parent, int parent_vol,
		      const char *name, size_t len, uint64_t *ino,
		      struct stat *st, int *vol)
{
	(void)ctx;
	return dlfs_ns_lookup(parent, parent_vol, name, len, ino, st, vol);
}

static long ops_readlink(void *ctx, uint64_t ino, char *buf, size_t size)
{
	(void)ctx;
	return dlfs_ns_readlink(ino, buf, size);
}

static int ops_root(void *ctx, uint64_t *ino, struct stat *st)
{
	(void)ctx;
	int ret = dlfs_conn_ready();
	if (ret)
		return ret;
	*ino = dlfs_pl.root_ino;
	*st = dlfs_pl.root_st;
	return 0;
}

/* A real path, for ".." after the walk left the dataset: the real calls,
 * not the wrappers, and errno as it was. */
static long ops_real_link(void *ctx, const char *path, char *buf, size_t size)
{
	(void)ctx;
	struct stat st;
	int saved = errno;
	long ret = 0;
	if (dlfs_real()->fstatat(AT_FDCWD, path, &st, AT_SYMLINK_NOFOLLOW)) {
		ret = -errno;
	} else if (S_ISLNK(st.st_mode)) {
		ssize_t n = dlfs_real()->readlink(path, buf, size);
		ret = n < 0 ? -errno : (long)n;
	} else if (!S_ISDIR(st.st_mode)) {
		ret = -ENOTDIR;
	}
	errno = saved;
	return ret;
}

const struct dlfs_vp_ops dlfs_ns_ops = {
	.root = ops_root,
	.lookup = ops_lookup,
	.readlink = ops_readlink,
	.real_link = ops_real_link,
};

int dlfs_ns_resolve(const struct dlfs_vp_base *base, const char *path,
		    int flags, struct dlfs_vp_res *res)
{
	/* No HELLO first: a path that never reaches the prefix needs no
	 * server (the walk asks for the root when it gets there). */
	int ret = dlfs_vp_resolve(&dlfs_pl.root, &dlfs_ns_ops, base, path,
				  flags, res);
	/* The volatile ones' attributes are asked again (the walk may have
	 * stopped at its base, whose attributes are old). */
	if (!ret && res->kind == DLFS_VP_OURS && res->vol)
		ret = dlfs_ns_getattr(res->ino, &res->st);
	dlfs_conn_report(base ? base->path : NULL, path, ret);
	return ret;
}
