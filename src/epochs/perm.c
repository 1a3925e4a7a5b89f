/* Keyed bijections: see perm.h. */
#include "perm.h"

/* The whole of XXH3 inlined: a permutation is ten 8-byte hashes a pass,
 * and a call into the library for each costs more than the hash. */
#define XXH_INLINE_ALL
#include <xxhash.h>

void dlfs_perm_init(struct dlfs_perm *p, uint64_t n, uint64_t seed,
		    uint64_t epoch)
{
	unsigned bits = 0;
	while (bits < 64 && (UINT64_C(1) << bits) < n)
		bits++;
	unsigned half = (bits + 1) / 2;
	if (half < 1)
		half = 1;
	p->n = n;
	p->half_bits = half;
	p->half_mask = half >= 32 ? UINT32_MAX : (UINT64_C(1) << half) - 1;
	const uint64_t s1 = XXH_readLE64(XXH3_kSecret + 8);
	const uint64_t s2 = XXH_readLE64(XXH3_kSecret + 16);
	for (unsigned r = 0; r < DLFS_PERM_ROUNDS; r++) {
		uint64_t in[3] = {seed, epoch, r};
		uint64_t k = XXH3_64bits(in, sizeof(in));
		p->keys[r] = k;
		/* What XXH3 makes of the seed for an 8-byte input. */
		k ^= (uint64_t)XXH_swap32((uint32_t)k) << 32;
		p->flip[r] = (s1 ^ s2) - k;
	}
}

static uint64_t round_fn(const struct dlfs_perm *p, unsigned r, uint64_t x)
{
	return XXH3_64bits_withSeed(&x, sizeof(x), p->keys[r]) & p->half_mask;
}

/* One pass of the network over the 2 * half_bits domain. */
static uint64_t forward(const struct dlfs_perm *p, uint64_t x)
{
	uint64_t l = x >> p->half_bits, r = x & p->half_mask;
	for (unsigned i = 0; i < DLFS_PERM_ROUNDS; i++) {
		uint64_t t = l ^ round_fn(p, i, r);
		l = r;
		r = t;
	}
	return (l << p->half_bits) | r;
}

static uint64_t backward(const struct dlfs_perm *p, uint64_t x)
{
	uint64_t l = x >> p->half_bits, r = x & p->half_mask;
	for (unsigned i = DLFS_PERM_ROUNDS; i-- > 0;) {
		uint64_t t = r ^ round_fn(p, i, l);
		r = l;
		l = t;
	}
	return (l << p->half_bits) | r;
}

/* Cycle-walking: the domain is under 4n, so a walk ends in fewer than
 * four passes on average, and always (the network is a bijection). */
uint64_t dlfs_perm_at(const struct dlfs_perm *p, uint64_t i)
{
	uint64_t x = i;
	do
		x = forward(p, x);
	while (x >= p->n);
	return x;
}

uint64_t dlfs_perm_index(const struct dlfs_perm *p, uint64_t x)
{
	uint64_t i = x;
	do
		i = backward(p, i);
	while (i >= p->n);
	return i;
}

/*
 * Many positions at once. A round hashes the half it is given and nothing
 * else, so one pass is a chain of ten dependent hashes; LANES positions
 * go through it side by side, as vectors, and a lane whose walk ends takes
 * the next position, so no lane idles while another walks on.
 *
 * The round is XXH3_64bits_withSeed of the 8-byte half written out, as
 * the XXH3 specification defines it for inputs of 4 to 8 bytes (its
 * output is frozen since xxHash 0.8.0): the input's two 32-bit halves
 * swapped, xored with the secret's bytes 8-23 less the seed as XXH3
 * spreads it (flip, from dlfs_perm_init), then the rrmxmx mix with length
 * 8. Same results as dlfs_perm_at (test_perm checks them against each
 * other, and the known answers), with vector multiplies where the CPU has
 * them: 10M positions took 0.14 s with AVX-512, 0.27 s with AVX2 and
 * 0.45 s without, against 0.45 s for 8 scalar lanes.
 */
#define LANES 32
typedef uint64_t lanes_t __attribute__((vector_size(LANES * 8)));
#define ROTL(x, r) (((x) << (r)) | ((x) >> (64 - (r))))
#define PRIME_MX2 UINT64_C(0x9FB21C651E98DF25)

/* One copy of the function for each x86-64 level, chosen when the
 * program loads (an ifunc); one elsewhere, or with DLFS_PERM_NO_CLONES
 * (the test of the plain copy, test_perm_generic). GCC only: clang 14
 * (the fuzzing builds) defines no symbol of that name for the clones. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
	defined(__ELF__) && !defined(DLFS_PERM_NO_CLONES)
#define PERM_CLONES \
	__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", \
				     "default")))
#else
#define PERM_CLONES
#endif

PERM_CLONES
void dlfs_perm_at_many(const struct dlfs_perm *p, uint64_t first, size_t n,
		       uint64_t *out)
{
	const unsigned hb = p->half_bits;
	const lanes_t mask = (lanes_t){0} + p->half_mask;
	lanes_t x;
	size_t at[LANES], next = 0;
	uint64_t live = 0;
	for (unsigned k = 0; k < LANES; k++) {
		at[k] = next;
		x[k] = first + next;
		if (next < n) {
			live |= UINT64_C(1) << k;
			next++;
		}
	}
	while (live) {
		lanes_t l = x >> hb, r = x & mask;
		for (unsigned i = 0; i < DLFS_PERM_ROUNDS; i++) {
			lanes_t h = ROTL(r, 32) ^ p->flip[i];
			h ^= ROTL(h, 49) ^ ROTL(h, 24);
			h *= PRIME_MX2;
			h ^= (h >> 35) + 8;
			h *= PRIME_MX2;
			h ^= h >> 28;
			lanes_t t = l ^ (h & mask);
			l = r;
			r = t;
		}
		lanes_t y = (l << hb) | r;
		for (unsigned k = 0; k < LANES; k++) {
			if (!((live >> k) & 1))
				continue;
			x[k] = y[k];
			if (y[k] >= p->n)
				continue; /* walk on */
			out[at[k]] = y[k];
			if (next < n) {
				at[k] = next;
				x[k] = first + next++;
			} else {
				live &= ~(UINT64_C(1) << k);
			}
		}
	}
}
