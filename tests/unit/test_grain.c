/*
 * The read unit of a miss (grain.c): forced modes are kept; files over
 * half a chunk always read their chunks; AUTO starts from whether the
 * dataset fits the tiers; in file mode the ghost of a chunk tier turns
 * the mode to chunks when files of a chunk are read together, and keeps
 * files when each chunk gives one small file.
 */
#include <stdlib.h>

#include "grain.h"
#include "tutil.h"

#define CS 65536u
#define SLOTS 16u

static int no_load(void *arg, void *ctx, uint64_t key, const void *what,
		   struct dlfs_load *l)
{
	(void)arg, (void)ctx, (void)key, (void)what, (void)l;
	return -EIO; /* grain never loads */
}

static struct dlfs_cache *cache;

static struct dlfs_grain *grain(enum dlfs_read_unit unit, uint64_t data)
{
	struct dlfs_grain_conf conf = {.unit = unit, .chunk_size = CS,
				       .data_bytes = data, .cache = cache};
	struct dlfs_grain *g = NULL;
	CHECK_EQ(dlfs_grain_new(&conf, &g), 0);
	return g;
}

static struct dlfs_inode file(uint64_t size, uint32_t container)
{
	return (struct dlfs_inode){.ino = 2, .size = size,
				   .container = container};
}

/* Read n files of size each alone, k per chunk over fresh chunks, asking
 * for the mode before each (as the read core does). @return the mode
 * after. */
static int read_files(struct dlfs_grain *g, unsigned n, uint64_t size,
		      unsigned k, uint64_t *chunk)
{
	int mode = 0;
	for (unsigned i = 0; i < n; i++) {
		struct dlfs_inode in = file(size, 0);
		mode = dlfs_grain_file_mode(g, &in);
		if (i % k == 0)
			(*chunk)++;
		if (mode)
			dlfs_grain_note_file(g, &in, *chunk, CS);
	}
	return mode;
}

int main(void)
{
	struct dlfs_err err = {0};
	CHECK_EQ(dlfs_cache_new(CS, (uint64_t)SLOTS * CS, no_load, NULL,
				&cache, &err),
		 0);
	struct dlfs_inode small = file(1000, 0), big = file(CS / 2 + 1, 0);
	struct dlfs_grain_stats st;

	/* Forced modes; big files read their chunks in every mode. */
	struct dlfs_grain *g = grain(DLFS_UNIT_CHUNK, UINT64_C(1) << 40);
	CHECK_EQ(dlfs_grain_file_mode(g, &small), 0);
	dlfs_grain_free(g);
	g = grain(DLFS_UNIT_FILE, 1);
	CHECK_EQ(dlfs_grain_file_mode(g, &small), 1);
	CHECK_EQ(dlfs_grain_file_mode(g, &big), 0);
	dlfs_grain_free(g);

	/* AUTO's prior: chunks when the dataset fits the RAM tier. */
	g = grain(DLFS_UNIT_AUTO, (uint64_t)SLOTS * CS);
	CHECK_EQ(dlfs_grain_file_mode(g, &small), 0);
	dlfs_grain_free(g);
	g = grain(DLFS_UNIT_AUTO, (uint64_t)SLOTS * CS + 1);
	CHECK_EQ(dlfs_grain_file_mode(g, &small), 1);
	CHECK_EQ(dlfs_grain_file_mode(g, &big), 0);

	/* One small file a chunk: chunk mode would waste nearly all it
	 * loads, so files stay. */
	uint64_t chunk = 0;
	CHECK_EQ(read_files(g, 4000, 1000, 1, &chunk), 1);
	dlfs_grain_get_stats(g, &st);
	CHECK_EQ(st.switches, 0);
	CHECK(st.file_reads >= 3999);
	CHECK(st.ghost_loaded > 0 && st.ghost_unused * 10 > st.ghost_loaded * 9);

	/* Every file of each chunk read together: the ghost says chunks
	 * would waste nothing, and the mode turns to chunks. */
	int mode = read_files(g, 4000, CS / 8, 8, &chunk);
	dlfs_grain_get_stats(g, &st);
	CHECK_EQ(mode, 0);
	CHECK_EQ(st.file_mode, 0);
	CHECK_EQ(st.switches, 1);
	dlfs_grain_free(g);

	dlfs_cache_free(cache);
	return t_done("test_grain");
}
