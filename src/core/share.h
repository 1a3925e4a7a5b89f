/*
 * The memory a reader's tiers share with readers in other processes
 * (conf.share, reader.h): three memory files laid out as
 * src/node/shared/shm.h says, made and mapped once, handed to the RAM
 * tier, the NVMe tier and the fetch path to keep their state in, and
 * passed to clients as file descriptors. This module only places things;
 * the tiers write them.
 *
 * Thread-safety: nothing changes after dlfs_share_new; the memory is the
 * tiers' to guard.
 */
#ifndef DLFS_SHARE_H
#define DLFS_SHARE_H

#include <stddef.h>
#include <stdint.h>

#include "dlfs/err.h"
#include "shm.h"

struct dlfs_share;

struct dlfs_share_conf {
	uint32_t n_slots;        /* RAM tier slots */
	uint64_t slot_size;      /* bytes a slot's buffer takes */
	uint32_t table_size;     /* RAM tier hash table entries, a power of 2 */
	uint64_t chunk_size;
	uint64_t data_off;       /* dlfs_chunk_start(chunk_size, 0) */
	uint64_t n_chunks;       /* global chunks */
	uint64_t n_inodes;       /* inodes 0 .. n_inodes - 1 */
	uint32_t n_containers;
	const uint64_t *first;   /* each container's first global chunk */
};

/* Make the three files and map them. @return 0 or -errno with err. */
int dlfs_share_new(const struct dlfs_share_conf *conf,
		   struct dlfs_share **out, struct dlfs_err *err);
void dlfs_share_free(struct dlfs_share *sh);

/* The header (in meta) and the three mappings. */
struct dlfs_shm_head *dlfs_share_head(struct dlfs_share *sh);
uint8_t *dlfs_share_meta(struct dlfs_share *sh);
uint8_t *dlfs_share_data(struct dlfs_share *sh);
uint8_t *dlfs_share_rw(struct dlfs_share *sh);

/* The files, meta and data read-only and rw, for passing on to clients
 * (they stay the share's). Meta and data are sealed against writes
 * (F_SEAL_FUTURE_WRITE), so that no client can change what the others
 * read; rw is the clients' to write (shm.h). @return 0, or -EPERM where
 * the kernel could not seal them (before Linux 5.1): then clients must
 * not be given them, and are served by requests. */
int dlfs_share_fds(const struct dlfs_share *sh, int fds[3]);

/* Could meta and data be sealed (dlfs_share_fds)? */
int dlfs_share_sealed(const struct dlfs_share *sh);

/* File ino is size bytes at offset of container (xxh3 its checksum):
 * for the locations table. Any thread; a racing write of the same entry
 * wins and this one is dropped. */
void dlfs_share_put_loc(struct dlfs_share *sh, uint64_t ino,
			uint32_t container, uint64_t offset, uint64_t size,
			uint64_t xxh3);

/* (parent, name) -> ino with attributes st, for the names table: the
 * caller puts only names of the dataset whose attributes are the usual
 * ones (shm.h). Any thread; a racing write of the same entry wins. */
struct stat;
void dlfs_share_put_name(struct dlfs_share *sh, uint64_t parent,
			 const char *name, size_t len, uint64_t ino,
			 const struct stat *st);

/* The next read reported in the seen ring (shm.h), from number *next on
 * (start at 0; advanced past what was read or lost). @return 1 with *ino,
 * or 0 when there is none yet. One caller at a time. */
int dlfs_share_seen_next(struct dlfs_share *sh, uint64_t *next,
			 uint64_t *ino);

/* Give up on report *next, taken but never written (its reader died
 * between the two): @return 1 when there was one to skip. */
int dlfs_share_seen_skip(struct dlfs_share *sh, uint64_t *next);

/* The server serves (on), or stops serving (off): the calling thread
 * takes, or releases, the liveness mutex (shm.h), which readers see
 * released also when the thread dies. Off from the thread that said on,
 * before the tiers are closed. @return 0 or -errno. */
int dlfs_share_alive(struct dlfs_share *sh, int on);

/* The tier is there: readers may look at its chunk states. */
void dlfs_share_set_nvme(struct dlfs_share *sh, int on);

#endif
