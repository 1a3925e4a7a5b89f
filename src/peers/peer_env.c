/* Which chunks a rank is home to. Shared by both peer implementations:
 * peer.h. */
#include "peer.h"

void dlfs_peer_home_range(unsigned rank, unsigned size, uint64_t n,
			  uint64_t *lo, uint64_t *hi)
{
	/* home(g) = floor(g * size / n) = rank  <=>  rank * n / size <= g <
	 * (rank + 1) * n / size. */
	if (!size)
		size = 1;
	*lo = (uint64_t)(((unsigned __int128)rank * n + size - 1) / size);
	*hi = (uint64_t)(((unsigned __int128)(rank + 1) * n + size - 1) / size);
}
