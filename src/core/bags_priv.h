/*
 * The insides of bags.h, shared by bags.c (the bags' state, the map of
 * files, loading and reading) and bags_plan.c (a window of the plan's
 * files merged into runs and packed into bags). Not for other modules.
 */
#ifndef DLFS_BAGS_PRIV_H
#define DLFS_BAGS_PRIV_H

#include <pthread.h>
#include <stdatomic.h>

#include "bags.h"

#define PAGE UINT64_C(4096)
#define PLAN_STEP 1024       /* files asked of the planner at a time */
#define WINDOW_MAX 65536     /* files in one window */
#define BAG_FILES_MAX 16384  /* files in one bag */
#define LAG_MIN 256          /* readers this far past a bag let it go */
#define RETRY_MS 100         /* longest a load waits for a free entry */

enum bag_state { BAG_FREE, BAG_PENDING, BAG_LOADING, BAG_LIVE };

struct bfile {
	uint64_t ino, xxh3, pos; /* pos: its share position */
	uint32_t off, size;      /* its bytes in the entry */
};

/* Run i: bytes [off, off + len) of container c, one PFS read; its files
 * are pieces f0 .. f0 + nf - 1. */
struct brun {
	uint32_t c;
	uint64_t off, len;
	size_t f0, nf;
};

/* A file's bytes: at src from its run's off, to dst in the entry. */
struct bpiece {
	uint64_t src;
	size_t len, dst;
};

struct bag {
	enum bag_state state;
	uint64_t id, gen, last_pos;
	struct bfile *files;
	struct bpiece *pieces; /* where each file goes */
	size_t n_files, left;  /* left: mapped files not read yet */
	uint8_t *used;         /* a bit a file */
	struct brun *runs;
	size_t n_runs, len;
	struct dlfs_chunk_ref hold;
	/* Loading: the entry's buffer while its runs are read, by its loader
	 * and any helper, each run into the helper's own scratch buffer. */
	uint8_t *buf;
	size_t next_run, runs_done;
	int err;
	struct dlfs_err err_msg;
};

/* The map: ino -> (bag, file), open addressing; bag UINT32_MAX: empty. */
struct ment {
	uint64_t ino;
	uint32_t bag, file;
};

struct dlfs_bags {
	struct dlfs_bags_conf conf;
	pthread_mutex_t mu; /* guards everything below */
	pthread_cond_t loaded; /* a bag left the loading state, or its last
				* run was read */
	dlfs_plan_files_fn plan;
	void *plan_arg;
	struct bag *bags;
	uint64_t next_id, gen;
	uint64_t epoch, cursor, lag;
	int dry, planning;
	struct ment *map;
	size_t map_cap;
	_Atomic size_t map_n; /* read without the lock: any mapped? */
	_Atomic uint64_t n_bags, n_files, n_runs, n_bytes, hits, unread, bad;
	_Atomic unsigned live; /* read without the lock */
};

static inline uint64_t page_down(uint64_t x)
{
	return x & ~(PAGE - 1);
}

static inline uint64_t page_up(uint64_t x)
{
	return (x + PAGE - 1) & ~(PAGE - 1);
}

/* Is file ino in a bag now (taking mu)? */
int dlfs_bags_mapped(struct dlfs_bags *b, uint64_t ino);

/*
 * Plan the window of the plan's files from share position from on (of
 * epoch) into at most n_free bags, made[] (zeroed; each made one owns
 * its arrays). Without mu. @return the bags made; *next is the position
 * after the last file looked at, *n the files taken, *end set when the
 * plan has no more.
 */
unsigned dlfs_bags_plan(struct dlfs_bags *b, struct dlfs_txn *txn,
			dlfs_plan_files_fn plan, void *arg, uint64_t epoch,
			uint64_t from, int n_free, struct bag *made,
			uint64_t *next, size_t *n, int *end);

#endif
