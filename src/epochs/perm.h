/*
 * Keyed bijections over [0, n): the epoch permutations.
 *
 * P(seed, epoch) is a balanced Feistel network on the smallest even
 * number of bits that covers n, with cycle-walking to stay inside [0, n):
 * dlfs_perm_at(p, i) is computed alone, in O(1) expected time (fewer than
 * four network passes on average) and O(1) memory, so every rank of a job
 * computes the same order from the seed alone, at any position, without
 * materialising it. The round keys come from XXH3 of (seed, epoch,
 * round), so different epochs give unrelated orders.
 *
 * Thread-safety: a struct dlfs_perm is immutable after dlfs_perm_init;
 * share it freely.
 */
#ifndef DLFS_PERM_H
#define DLFS_PERM_H

#include <stddef.h>
#include <stdint.h>

#define DLFS_PERM_ROUNDS 10

struct dlfs_perm {
	uint64_t n;
	unsigned half_bits;
	uint64_t half_mask;
	uint64_t keys[DLFS_PERM_ROUNDS];
	uint64_t flip[DLFS_PERM_ROUNDS]; /* keys[r] as XXH3 applies them to
					  * an 8-byte input (perm.c) */
};

/* The permutation of [0, n) for (seed, epoch). n may be 0 (nothing). */
void dlfs_perm_init(struct dlfs_perm *p, uint64_t n, uint64_t seed,
		    uint64_t epoch);

/* P(i) for i < n. */
uint64_t dlfs_perm_at(const struct dlfs_perm *p, uint64_t i);

/* P(first), P(first + 1), ... P(first + n - 1) into out (all < p->n):
 * the same as dlfs_perm_at, several times faster a position. */
void dlfs_perm_at_many(const struct dlfs_perm *p, uint64_t first, size_t n,
		       uint64_t *out);

/* The inverse: the i with P(i) == x, for x < n. */
uint64_t dlfs_perm_index(const struct dlfs_perm *p, uint64_t x);

#endif
