/*
 * The NVMe tier on its own: admission and eviction under cyclic epochs
 * (keep holds a fraction of every epoch, lru none), the capacity bound,
 * persistence across close/open, detection of damaged cache files,
 * verified state of ranged reads, and the per-dataset lock.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <xxhash.h>

#include "nvme.h"
#include "tutil.h"

#define CS 16384u
#define NC 2
#define CHUNKS 40 /* per container; the last chunk of each is short */

static const uint64_t data_size[NC] = {CHUNKS * CS - 1000,
				       CHUNKS * CS - 5000};
static const struct dlfs_container table[NC] = {
	{.data_size = CHUNKS * CS - 1000, .n_chunks = CHUNKS, .first_chunk = 0},
	{.data_size = CHUNKS * CS - 5000, .n_chunks = CHUNKS,
	 .first_chunk = CHUNKS},
};
static uint8_t *chunk_buf;

static size_t len_of(uint32_t c, uint64_t k)
{
	uint64_t left = data_size[c] - k * CS;
	return left < CS ? left : CS;
}

static void fill(uint32_t c, uint64_t k, uint8_t *buf)
{
	t_fill(buf, len_of(c, k), (uint32_t)(c * 1000 + k + 1));
}

static uint64_t sum_of(uint32_t c, uint64_t k)
{
	fill(c, k, chunk_buf);
	return XXH3_64bits(chunk_buf, len_of(c, k));
}

static struct dlfs_nvme *open_tier(const char *dir, uint64_t cap,
				   enum dlfs_nvme_policy p, int *ret)
{
	struct dlfs_nvme_conf conf = {
		.dir = dir, .capacity = cap, .policy = p,
		.dataset_id_hex = "00112233445566778899aabbccddeeff",
		.chunk_size = CS, .n_containers = NC, .containers = table,
	};
	struct dlfs_nvme *n = NULL;
	struct dlfs_err err = {0};
	*ret = dlfs_nvme_open(&conf, &n, &err);
	if (!*ret)
		*ret = dlfs_nvme_start(n, &err);
	if (*ret && *ret != -EBUSY)
		fprintf(stderr, "open: %s\n", err.msg);
	return n;
}

/* One epoch over every chunk in order: read from the tier, else "fetch"
 * and put. @return the hits. */
static unsigned epoch(struct dlfs_nvme *n, uint8_t *buf)
{
	unsigned hits = 0;
	for (uint32_t c = 0; c < NC; c++)
		for (uint64_t k = 0; k < CHUNKS; k++) {
			int r = dlfs_nvme_read_chunk(n, c, k, len_of(c, k),
						     sum_of(c, k), buf, CS);
			if (r == 0) {
				hits++;
				fill(c, k, chunk_buf);
				CHECK(!memcmp(buf, chunk_buf, len_of(c, k)));
				continue;
			}
			CHECK(r == -ENOENT);
			fill(c, k, chunk_buf);
			dlfs_nvme_put(n, c, k, chunk_buf, len_of(c, k), 0);
			dlfs_nvme_flush(n); /* the pool must not drop */
		}
	return hits;
}

static void test_policies(uint8_t *buf)
{
	char *dir = t_tmpdir();
	int ret;
	uint64_t cap = (uint64_t)CHUNKS * CS; /* half of the 2 * CHUNKS */
	struct dlfs_nvme_stats s;

	struct dlfs_nvme *n = open_tier(dir, cap, DLFS_NVME_KEEP, &ret);
	CHECK_EQ(ret, 0);
	if (ret)
		goto out;
	CHECK_EQ(epoch(n, buf), 0);
	for (int e = 0; e < 3; e++)
		CHECK_EQ(epoch(n, buf), CHUNKS); /* what fits, kept */
	dlfs_nvme_get_stats(n, &s);
	CHECK(s.used_bytes <= cap);
	CHECK_EQ(s.chunks, CHUNKS);
	CHECK_EQ(s.evicted, 0);
	dlfs_nvme_close(n);

	t_rmrf(dir);
	n = open_tier(dir, cap, DLFS_NVME_LRU, &ret);
	CHECK_EQ(ret, 0);
	if (ret)
		goto out;
	unsigned lru_hits = 0;
	for (int e = 0; e < 4; e++)
		lru_hits += epoch(n, buf);
	/* LRU under a cyclic scan larger than the cache: no hits at all. */
	CHECK_EQ(lru_hits, 0);
	dlfs_nvme_get_stats(n, &s);
	CHECK(s.used_bytes <= cap);
	CHECK(s.evicted > 0);
	dlfs_nvme_close(n);
out:
	t_rmrf(dir);
	free(dir);
}

static void test_persist_and_corrupt(uint8_t *buf)
{
	char *dir = t_tmpdir();
	char path[4096];
	int ret;
	struct dlfs_nvme_stats s;
	uint64_t cap = 4 * (uint64_t)CHUNKS * CS;
	struct dlfs_nvme *n = open_tier(dir, cap, DLFS_NVME_KEEP, &ret);
	CHECK_EQ(ret, 0);
	if (ret)
		goto out;
	CHECK_EQ(epoch(n, buf), 0);
	CHECK_EQ(epoch(n, buf), 2 * CHUNKS);

	/* A second user of the same tier is refused. */
	int r2;
	struct dlfs_nvme *n2 = open_tier(dir, cap, DLFS_NVME_KEEP, &r2);
	CHECK_EQ(r2, -EBUSY);
	dlfs_nvme_close(n2);

	/* Ranged reads of chunks written here are trusted. */
	const uint8_t *data;
	int stable = -1;
	CHECK(dlfs_nvme_range_verified(n, 1, CS + 3 * CS + 100, 5000));
	CHECK_EQ(dlfs_nvme_pread(n, 1, CS + 3 * CS + 100, 5000, buf, &data,
				 &stable),
		 0);
	CHECK_EQ(stable, 1);
	fill(1, 3, chunk_buf);
	CHECK(!memcmp(data, chunk_buf + 100, 5000));
	dlfs_nvme_close(n);

	/* Files and dirs are private. */
	struct stat st;
	snprintf(path, sizeof(path), "%s/00112233445566778899aabbccddeeff",
		 dir);
	CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0700);
	snprintf(path, sizeof(path),
		 "%s/00112233445566778899aabbccddeeff/000001.cache", dir);
	CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600);

	/* Damage chunk 5 of container 1, then reopen. */
	int fd = open(path, O_RDWR);
	CHECK(fd >= 0);
	uint8_t x = 0x5a;
	CHECK(pwrite(fd, &x, 1, CS + 5 * CS + 7) == 1);
	close(fd);

	n = open_tier(dir, cap, DLFS_NVME_KEEP, &ret);
	CHECK_EQ(ret, 0);
	if (ret)
		goto out;
	/* After reopening nothing is trusted unchecked. */
	CHECK(!dlfs_nvme_range_verified(n, 1, CS + 3 * CS + 100, 5000));
	CHECK_EQ(dlfs_nvme_pread(n, 1, CS + 3 * CS + 100, 5000, buf, &data,
				 &stable),
		 0);
	fill(1, 3, chunk_buf);
	CHECK(!memcmp(data, chunk_buf + 100, 5000));
	/* A chunk read whole (and checked) is trusted from then on. */
	CHECK_EQ(dlfs_nvme_read_chunk(n, 1, 3, len_of(1, 3), sum_of(1, 3), buf,
				      CS),
		 0);
	CHECK(dlfs_nvme_range_verified(n, 1, CS + 3 * CS + 100, 5000));
	CHECK(dlfs_nvme_has(n, 1, 5));
	CHECK_EQ(dlfs_nvme_read_chunk(n, 1, 5, len_of(1, 5), sum_of(1, 5), buf,
				      CS),
		 -EBADMSG);
	CHECK(!dlfs_nvme_has(n, 1, 5));
	CHECK_EQ(dlfs_nvme_read_chunk(n, 1, 6, len_of(1, 6), sum_of(1, 6), buf,
				      CS),
		 0);
	/* Everything but the damaged chunk survived the remount. */
	CHECK_EQ(epoch(n, buf), 2 * CHUNKS - 1);
	CHECK_EQ(epoch(n, buf), 2 * CHUNKS);
	dlfs_nvme_get_stats(n, &s);
	CHECK_EQ(s.corrupt, 1);
	dlfs_nvme_close(n);

	/* A smaller capacity at the next open shrinks the tier at once. */
	n = open_tier(dir, 10 * CS, DLFS_NVME_KEEP, &ret);
	CHECK_EQ(ret, 0);
	if (ret)
		goto out;
	dlfs_nvme_get_stats(n, &s);
	CHECK(s.used_bytes <= 10 * CS);
	CHECK(s.chunks <= 10 && s.chunks >= 8);
	dlfs_nvme_close(n);
out:
	t_rmrf(dir);
	free(dir);
}

#define ID "00112233445566778899aabbccddeeff"

static void write_victim(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK(fd >= 0 && write(fd, "precious", 8) == 8);
	if (fd >= 0)
		close(fd);
	chmod(path, 0644);
}

/* The victim a planted link pointed at is as it was. */
static void check_victim(const char *path)
{
	char b[16] = {0};
	struct stat st;
	int fd = open(path, O_RDONLY);
	CHECK(fd >= 0 && read(fd, b, sizeof(b)) == 8 && !memcmp(b, "precious", 8));
	if (fd >= 0)
		close(fd);
	CHECK(stat(path, &st) == 0 && (st.st_mode & 07777) == 0644);
}

static int open_err(const char *dir, struct dlfs_nvme **n, char *msg,
		    size_t len)
{
	struct dlfs_nvme_conf conf = {
		.dir = dir, .capacity = 4 * (uint64_t)CHUNKS * CS,
		.dataset_id_hex = ID, .chunk_size = CS, .n_containers = NC,
		.containers = table,
	};
	struct dlfs_err err = {0};
	*n = NULL;
	int ret = dlfs_nvme_open(&conf, n, &err);
	if (!ret)
		ret = dlfs_nvme_start(*n, &err);
	snprintf(msg, len, "%s", err.msg);
	return ret;
}

/*
 * A cache dir others can write in (issue 11, item 1): the tier dir of
 * another user, or a symlink, is refused; symlinks and hard links planted
 * for the files of the tier are never followed or written through, and
 * files others could write are not trusted.
 */
static void test_trust(uint8_t *buf)
{
	if (geteuid() != 0) {
		fprintf(stderr, "test_nvme: trust checks need root: skipped\n");
		return;
	}
	char *dir = t_tmpdir();
	char tier[2048], p[4096], v[3][2048], msg[DLFS_ERR_MSG_MAX];
	struct dlfs_nvme *n;
	snprintf(tier, sizeof(tier), "%s/%s", dir, ID);
	for (int i = 0; i < 3; i++) {
		snprintf(v[i], sizeof(v[i]), "%s/victim%d", dir, i);
		write_victim(v[i]);
	}

	/* Another user's tier dir. */
	CHECK(mkdir(tier, 0700) == 0 && chown(tier, 65534, 65534) == 0);
	CHECK_EQ(open_err(dir, &n, msg, sizeof(msg)), -EPERM);
	CHECK(strstr(msg, "owned by uid 65534") != NULL);
	dlfs_nvme_close(n);
	rmdir(tier);

	/* A symlink to a directory of ours. */
	snprintf(p, sizeof(p), "%s/elsewhere", dir);
	CHECK(mkdir(p, 0700) == 0 && symlink(p, tier) == 0);
	CHECK_EQ(open_err(dir, &n, msg, sizeof(msg)), -EPERM);
	CHECK(strstr(msg, "symbolic link") != NULL);
	dlfs_nvme_close(n);
	unlink(tier);
	rmdir(p);

	/* Ours but open to all, with symlinks planted for map, lock and a
	 * cache file. */
	const char *names[3] = {"map", "lock", "000000.cache"};
	CHECK(mkdir(tier, 0700) == 0 && chmod(tier, 0777) == 0);
	for (int i = 0; i < 3; i++) {
		snprintf(p, sizeof(p), "%s/%s", tier, names[i]);
		CHECK(symlink(v[i], p) == 0);
	}
	CHECK_EQ(open_err(dir, &n, msg, sizeof(msg)), 0);
	if (n) {
		fill(0, 2, chunk_buf);
		dlfs_nvme_put(n, 0, 2, chunk_buf, len_of(0, 2), 1);
		dlfs_nvme_flush(n);
		CHECK_EQ(dlfs_nvme_read_chunk(n, 0, 2, len_of(0, 2),
					      sum_of(0, 2), buf, CS + 8192),
			 0);
		dlfs_nvme_close(n);
	}
	struct stat st;
	CHECK(stat(tier, &st) == 0 && (st.st_mode & 07777) == 0700);
	for (int i = 0; i < 3; i++) {
		check_victim(v[i]);
		snprintf(p, sizeof(p), "%s/%s", tier, names[i]);
		CHECK(lstat(p, &st) == 0 && S_ISREG(st.st_mode));
	}

	/* A cache file others may write: its chunks are not trusted. */
	snprintf(p, sizeof(p), "%s/000000.cache", tier);
	CHECK(chmod(p, 0666) == 0);
	CHECK_EQ(open_err(dir, &n, msg, sizeof(msg)), 0);
	if (n) {
		CHECK(!dlfs_nvme_has(n, 0, 2));
		dlfs_nvme_close(n);
	}

	/* The map a hard link to a file elsewhere: replaced, not written. */
	snprintf(p, sizeof(p), "%s/map", tier);
	CHECK(unlink(p) == 0 && link(v[0], p) == 0);
	CHECK_EQ(open_err(dir, &n, msg, sizeof(msg)), 0);
	dlfs_nvme_close(n);
	check_victim(v[0]);
	CHECK(stat(v[0], &st) == 0 && st.st_nlink == 1);

	t_rmrf(dir);
	free(dir);
}

/* Only whole chunks enter the tier: a put of another length (an empty
 * reference a racing cache handed out, say) is refused, never recorded
 * as present, and nothing of it is served by the unchecked reads. */
static void test_whole_chunks(uint8_t *buf)
{
	char *dir = t_tmpdir();
	int ret;
	struct dlfs_nvme_stats s;
	struct dlfs_nvme *n = open_tier(dir, 0, DLFS_NVME_KEEP, &ret);
	CHECK_EQ(ret, 0);
	if (ret)
		goto out;
	fill(0, 3, chunk_buf);
	CHECK_EQ(dlfs_nvme_put(n, 0, 3, chunk_buf, 0, 1), 0);
	CHECK_EQ(dlfs_nvme_put(n, 0, 3, NULL, 0, 1), 0);
	CHECK_EQ(dlfs_nvme_put(n, 0, 3, chunk_buf, CS - 4096, 1), 0);
	/* The short last chunk of container 1, offered at full length. */
	fill(1, CHUNKS - 1, chunk_buf);
	CHECK_EQ(dlfs_nvme_put(n, 1, CHUNKS - 1, chunk_buf, CS, 1), 0);
	dlfs_nvme_flush(n);
	CHECK(!dlfs_nvme_has(n, 0, 3));
	CHECK(!dlfs_nvme_has(n, 1, CHUNKS - 1));
	const uint8_t *data;
	int stable;
	CHECK_EQ(dlfs_nvme_pread(n, 0, 3 * CS, 100, buf, &data, &stable),
		 -ENOENT);
	dlfs_nvme_get_stats(n, &s);
	CHECK_EQ(s.chunks, 0);
	CHECK_EQ(s.written_chunks, 0);
	CHECK_EQ(s.used_bytes, 0);
	CHECK_EQ(s.write_dropped, 4);
	/* The whole chunk is taken, and read back. */
	fill(0, 3, chunk_buf);
	CHECK_EQ(dlfs_nvme_put(n, 0, 3, chunk_buf, len_of(0, 3), 1), 1);
	dlfs_nvme_flush(n);
	CHECK_EQ(dlfs_nvme_read_chunk(n, 0, 3, len_of(0, 3), sum_of(0, 3), buf,
				      CS),
		 0);
	dlfs_nvme_close(n);
out:
	t_rmrf(dir);
	free(dir);
}

int main(void)
{
	uint8_t *buf = NULL;
	if (posix_memalign((void **)&buf, 4096, CS + 8192) ||
	    !(chunk_buf = malloc(CS)))
		return 1;
	test_policies(buf);
	test_persist_and_corrupt(buf);
	test_trust(buf);
	test_whole_chunks(buf);
	free(buf);
	free(chunk_buf);
	return t_done("test_nvme");
}
