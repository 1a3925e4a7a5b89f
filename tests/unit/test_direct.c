/*
 * direct: the preload's reads from the server's RAM tier in shared
 * memory (src/preload/direct.c), against memory files this test lays
 * out by the rules of src/node/shared/shm.h and passes over MAP from a
 * server of the wire in a thread (tests/lib/wiresrv.c). The test is the
 * core: it fills slots, locations and names with shm.h's writer helpers.
 *
 * Container 0 holds byte_at(pos) at every offset pos; chunk k starts at
 * DATA_OFF + k * CS, and RAM slot k holds chunk k (slot 2 holds file D's
 * own entry instead). The files:
 *   A (5): 1000 bytes in chunk 0      B (6): across chunks 0 and 1
 *   C (7): in chunk 2, in no slot     D (8): its own entry (slot 2)
 *   E (9): in chunk 0, a wrong xxh3   F (11): all of chunk 3
 *   ino 10: no location
 *
 * What it checks, and a mutation of direct.c that each check catches:
 * - a file not yet known good is served only whole, and only when its
 *   bytes pass its checksum (then known: a part of it is served next),
 *   even when the caller's buffer holds the rest of it: caught by
 *   dropping `if (!good && !whole) return -1;`, and by ignoring
 *   check()'s answer;
 * - present bytes are served exact (one slot, two slots, a file's own
 *   entry), cut at the file's end: caught by `pos - start` made
 *   `pos - start + 1` in from_ram, and by cutting one byte past the end
 *   (`(size_t)(l.size - off)` made `(size_t)(l.size - off) + 1`);
 * - absent bytes (no slot, a slot changing hands, no location) are the
 *   server's: caught by serving what from_ram did not find
 *   (`if (from_ram(...))` made `if (from_ram(...) || 1)`);
 * - a slot rewritten during the read (at a moment the test picks: the
 *   copy faults, and the fault handler rewrites the slot) is not served:
 *   caught by dropping from_ram's dlfs_shm_slot_same check;
 * - a read from a file's start is reported in the seen ring, and the
 *   counters count it: caught by `off == 0` made `off == 1` in served;
 * - a name from the names table comes with the usual attributes.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "tutil.h"

int t_failures;

#include "conn.h"
#include "direct.h"
#include "shm.h"
#include "state.h"
#include "wiresrv.h"

#define CS 4096u
#define DATA_OFF 4096u
#define N_SLOTS 4u
#define META_SIZE 8192u
#define DATA_SIZE (N_SLOTS * CS)
#define RW_SIZE (72u * 1024)

static int fd[3];
static uint8_t *meta, *data, *rw;
static struct dlfs_shm_head *h;

static uint8_t byte_at(uint64_t pos)
{
	return (uint8_t)(pos * 13 + 5);
}

static uint64_t key_of(uint64_t k)
{
	return k; /* container 0 << 40 | chunk k */
}

static struct dlfs_shm_slot *slot(unsigned s)
{
	return (struct dlfs_shm_slot *)(meta + h->slots_off) + s;
}

/* Slot s holds chunk k (its bytes are copied in under the seq lock). */
static void hold_chunk(unsigned s, uint64_t k)
{
	dlfs_shm_slot_begin(slot(s));
	for (unsigned i = 0; i < CS; i++)
		data[s * CS + i] = byte_at(DATA_OFF + k * CS + i);
	dlfs_shm_slot_end(slot(s), key_of(k), 0, CS);
}

/* The RAM tier's table: key's slot, found by linear probing. */
static void table_put(uint64_t key, unsigned s)
{
	uint32_t *table = (uint32_t *)(meta + h->table_off);
	uint32_t i = dlfs_shm_hash(key) & h->table_mask;
	while (table[i])
		i = (i + 1) & h->table_mask;
	table[i] = s + 1;
}

static uint64_t file_sum(uint64_t offset, uint64_t size)
{
	uint8_t *b = malloc(size);
	for (uint64_t i = 0; i < size; i++)
		b[i] = byte_at(offset + i);
	uint64_t x = XXH3_64bits(b, size);
	free(b);
	return x;
}

static void loc(uint64_t ino, uint64_t offset, uint64_t size, int bad)
{
	dlfs_shm_loc_put(h, meta, ino, 0, offset, size,
			 file_sum(offset, size) ^ (bad ? 1 : 0));
}

static int new_file(const char *name, size_t size, uint8_t **map)
{
	int f = memfd_create(name, MFD_CLOEXEC);
	if (f < 0 || ftruncate(f, (off_t)size))
		abort();
	*map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, f, 0);
	if (*map == MAP_FAILED)
		abort();
	return f;
}

static void lay_out(void)
{
	fd[0] = new_file("meta", META_SIZE, &meta);
	fd[1] = new_file("data", DATA_SIZE, &data);
	fd[2] = new_file("rw", RW_SIZE, &rw);
	h = (struct dlfs_shm_head *)meta;
	*h = (struct dlfs_shm_head){.magic = DLFS_SHM_MAGIC,
				    .version = DLFS_SHM_VERSION,
				    .n_slots = N_SLOTS,
				    .slot_size = CS,
				    .chunk_size = CS,
				    .data_off = DATA_OFF,
				    .n_chunks = 8,
				    .n_inodes = 64,
				    .table_mask = 7,
				    .n_containers = 1,
				    .nvme = 0,
				    .table_off = 256,
				    .slots_off = 512,
				    .first_off = 1024,
				    .nv_st_off = 1088,
				    .nv_seq_off = 1152,
				    .alive_off = 1216,
				    .loc_off = 1280,
				    .loc_mask = 63,
				    .name_off = 4352,
				    .name_sets = 4,
				    .file_ok_off = 0,
				    .use_off = 64,
				    .count_off = 320,
				    .seen_off = 384,
				    .meta_size = META_SIZE,
				    .data_size = DATA_SIZE,
				    .rw_size = RW_SIZE};
	for (unsigned s = 0; s < N_SLOTS; s++)
		if (s != 2) {
			hold_chunk(s, s);
			table_put(key_of(s), s);
		}
	/* D's own entry in slot 2: its bytes alone, read from the PFS. */
	uint64_t d_off = DATA_OFF + 2 * CS + 50, d_size = 300;
	dlfs_shm_slot_begin(slot(2));
	for (unsigned i = 0; i < d_size; i++)
		data[2 * CS + i] = byte_at(d_off + i);
	dlfs_shm_slot_end(slot(2), (UINT64_C(1) << 63) | 8, 0, d_size);
	table_put((UINT64_C(1) << 63) | 8, 2);

	loc(5, DATA_OFF + 100, 1000, 0);
	loc(6, DATA_OFF + 4000, 500, 0);
	loc(7, DATA_OFF + 2 * CS + 10, 100, 0);
	loc(8, d_off, d_size, 0);
	loc(9, DATA_OFF + 1500, 200, 1);
	loc(11, DATA_OFF + 3 * CS, CS, 0);
}

static int handle(void *ctx, int cfd, const struct dlfs_wire_req *q,
		  const char *name)
{
	(void)ctx;
	(void)name;
	if (q->op == DLFS_WIRE_HELLO)
		return ws_hello(cfd, DLFS_WIRE_MAX_IO, 1);
	if (q->op == DLFS_WIRE_MAP) {
		struct dlfs_wire_map wm = {{META_SIZE, DATA_SIZE, RW_SIZE}};
		return ws_reply_fds(cfd, 0, &wm, sizeof(wm), fd, 3);
	}
	return ws_reply(cfd, -ENOENT, 0, NULL, 0);
}

/* Read ino at off: want bytes (-1: not here), each the container's. */
static void expect(uint64_t ino, uint64_t file_off, uint64_t off, size_t size,
		   ssize_t want)
{
	static uint8_t buf[2 * CS];
	ssize_t got = dlfs_direct_read(ino, buf, size, off);
	if (got != want) {
		fprintf(stderr, "ino %llu at %llu, %zu bytes: %zd, not %zd\n",
			(unsigned long long)ino, (unsigned long long)off, size,
			got, want);
		t_failures++;
		return;
	}
	for (ssize_t i = 0; i < got; i++)
		if (buf[i] != byte_at(file_off + off + (uint64_t)i)) {
			fprintf(stderr, "ino %llu: byte %zd wrong\n",
				(unsigned long long)ino, i);
			t_failures++;
			return;
		}
}

static int known(uint64_t ino)
{
	return (((uint64_t *)(rw + h->file_ok_off))[ino / 64] >> (ino % 64)) &
	       1;
}

static void known_good_first(void)
{
	const uint64_t a = DATA_OFF + 100;
	expect(5, a, 10, 100, -1); /* its first check is the server's */
	CHECK(!known(5));
	/* Not whole, though the buffer holds the whole file's bytes. */
	uint8_t whole[1000];
	for (unsigned i = 0; i < sizeof(whole); i++)
		whole[i] = byte_at(a + i);
	CHECK_EQ(dlfs_direct_read(5, whole, 999, 0), -1);
	CHECK(!known(5));
	expect(5, a, 0, 1000, 1000);
	CHECK(known(5));
	expect(5, a, 10, 100, 100);
	expect(5, a, 990, 100, 10);
	expect(5, a, 1000, 100, 0);
	expect(9, DATA_OFF + 1500, 0, 200, -1); /* fails its checksum */
	CHECK(!known(9));
	struct dlfs_shm_count *n = (struct dlfs_shm_count *)(rw + h->count_off);
	CHECK_EQ(n->reads, 3); /* the one at the end was no read */
	CHECK_EQ(n->checked, 1);
	CHECK_EQ(n->ram, 3);
	CHECK_EQ(n->bytes, 1110);
	struct dlfs_shm_seen_ring *r =
		(struct dlfs_shm_seen_ring *)(rw + h->seen_off);
	CHECK_EQ(r->head, 1); /* the read from the start, once */
	CHECK(r->e[0].seq == 1 && r->e[0].ino == 5);
}

static void present_absent(void)
{
	expect(6, DATA_OFF + 4000, 0, 600, 500); /* two slots, cut */
	expect(6, DATA_OFF + 4000, 90, 20, 20);  /* across the boundary */
	expect(8, DATA_OFF + 2 * CS + 50, 0, 300, 300); /* its own entry */
	expect(8, DATA_OFF + 2 * CS + 50, 7, 30, 30);
	expect(7, DATA_OFF + 2 * CS + 10, 0, 100, -1); /* in no slot */
	expect(10, 0, 0, 100, -1);                     /* no location */
	/* Slot 1 changing hands: B's second half is not there now. */
	dlfs_shm_slot_begin(slot(1));
	expect(6, DATA_OFF + 4000, 50, 100, -1);
	expect(6, DATA_OFF + 4000, 0, 50, 50); /* its first half is */
	hold_chunk(1, 1);
	expect(6, DATA_OFF + 4000, 50, 100, 100);
}

/*
 * A slot rewritten during the read, made to happen at one known moment:
 * the library's own mapping of slot 3's page is made inaccessible, so its
 * copy faults; the handler then rewrites the slot as the core would (seq
 * odd, other bytes, another key), opens the page again and returns, and
 * the copy goes on over the new bytes. The read must not serve them.
 */
static uint8_t *lib_page; /* the library's mapping of slot 3's bytes */
static volatile sig_atomic_t armed, faulted;

static void on_fault(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	uint8_t *a = si->si_addr;
	if (!armed || a < lib_page || a >= lib_page + CS) {
		signal(sig, SIG_DFL); /* a real fault: die of it */
		return;
	}
	armed = 0;
	faulted = 1;
	dlfs_shm_slot_begin(slot(3));
	memset(data + 3 * CS, 0xee, CS);
	dlfs_shm_slot_end(slot(3), key_of(6), 0, CS);
	mprotect(lib_page, CS, PROT_READ);
}

/* The library's mapping of the data file: the other one named so. */
static uint8_t *lib_data(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	uint8_t *found = NULL;
	while (f && fgets(line, sizeof(line), f)) {
		unsigned long lo;
		if (!strstr(line, "/memfd:data") ||
		    sscanf(line, "%lx-", &lo) != 1)
			continue;
		if ((uint8_t *)lo != data)
			found = (uint8_t *)lo;
	}
	if (f)
		fclose(f);
	return found;
}

static void rewritten_meanwhile(void)
{
	const uint64_t f = DATA_OFF + 3 * CS;
	expect(11, f, 0, CS, CS); /* known now, and the data mapped */
	uint8_t *base = lib_data();
	CHECK(base != NULL);
	if (!base)
		return;
	lib_page = base + 3 * CS;
	struct sigaction sa = {.sa_sigaction = on_fault,
			       .sa_flags = SA_SIGINFO};
	sigaction(SIGSEGV, &sa, NULL);
	armed = 1;
	CHECK_EQ(mprotect(lib_page, CS, PROT_NONE), 0);
	expect(11, f, 0, CS, -1);
	CHECK(faulted);
	signal(SIGSEGV, SIG_DFL);
	hold_chunk(3, 3); /* chunk 3 again: served again */
	expect(11, f, 100, 200, 200);
}

static void names(void)
{
	struct dlfs_shm_attr a = {.size = 1000,
				  .mtime = 1700000000,
				  .mtime_ns = 5,
				  .mode = S_IFREG | 0444,
				  .nlink = 1};
	dlfs_shm_name_put(h, meta, 1, "a.jpg", 5, 5, &a);
	uint64_t ino = 0;
	struct stat st;
	CHECK_EQ(dlfs_direct_lookup(1, "a.jpg", 5, &ino, &st), 0);
	CHECK(ino == 5 && st.st_ino == 5 && st.st_size == 1000 &&
	      st.st_mode == (S_IFREG | 0444) &&
	      st.st_dev == dlfs_pl.root_st.st_dev && st.st_blocks == 2 &&
	      st.st_ctim.tv_sec == 1700000000);
	CHECK_EQ(dlfs_direct_lookup(1, "b.jpg", 5, &ino, &st), -1);
	CHECK_EQ(dlfs_direct_lookup(2, "a.jpg", 5, &ino, &st), -1);
}

int main(void)
{
	dlfs_conn_init();
	lay_out();
	ws_start_preload("/ds", handle, NULL);
	CHECK_EQ(dlfs_conn_ready(), 0);
	CHECK_EQ(dlfs_pl.shm, 1);

	known_good_first();
	present_absent();
	names();
	rewritten_meanwhile();

	ws_stop();
	return t_failures ? 1 : 0;
}
