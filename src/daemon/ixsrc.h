/*
 * Where a mount's index comes from (dlfs(1), THE INDEX ON EACH NODE).
 *
 * A sealed dataset (one with index.sum) is mapped from a node-local copy
 * checked against its seal (core/shared/ixcopy.h):
 *   - alone, with cache_dir: a copy already there, else one made from the
 *     PFS in large sequential reads while mounting; without cache_dir,
 *     the PFS's index, mapped as before;
 *   - under MPI: one rank reads the index (from its own local copy if it
 *     has one, else from the PFS) and the ranks that lack a copy receive
 *     it while joining, into cache_dir or, without one, memory.
 * An unsealed dataset (packed before seals) is mapped from the PFS. A
 * copy that cannot be made or fails its check costs a warning and a
 * mount from the PFS's index, never the mount.
 *
 * Ownership: struct dlfs_ixsrc owns its path (dlfs_ixsrc_free).
 * Thread-safety: used while mounting, from the main thread.
 */
#ifndef DLFS_DAEMON_IXSRC_H
#define DLFS_DAEMON_IXSRC_H

#include <stdint.h>

#include "dlfs/dataset.h"
#include "dlfs/err.h"
#include "peer.h"

struct dlfs_ixsrc {
	/* "pfs" (mapped from the PFS), "local" (a checked copy that was
	 * there), "copied" (from the PFS while mounting), "received" (from
	 * a peer while mounting). */
	const char *source;
	const char *where;  /* of the copy: "cache_dir", "memory"; or "pfs" */
	int sealed;
	uint64_t pfs_bytes; /* index bytes this node read from the PFS */
	uint64_t bytes;     /* the index's size */
	double seconds;     /* getting the index (and sharing it) */
	char *path;         /* the file mapped */
};

/* A share under way (dlfs_ixsrc_share_begin .. _end). */
struct dlfs_ixsrc_share;

/*
 * Alone: open dataset, its index from where the rules above say. Warnings
 * through log(arg). @return 0 with *ds and *ix, or -errno (the dataset
 * cannot be opened at all) with err set.
 */
int dlfs_ixsrc_open(const char *dataset, const char *cache_dir,
		    struct dlfs_ixsrc *ix, struct dlfs_ds **ds,
		    dlfs_log_fn log, void *arg, struct dlfs_err *err);

/*
 * Under MPI, sealed: look for a local copy and fill pc's share_* fields,
 * before dlfs_peer_open. Reads nothing from the PFS. @return 0 or -errno.
 */
int dlfs_ixsrc_share_begin(const char *dataset, const char *cache_dir,
			   const struct dlfs_seal *seal,
			   struct dlfs_peer_conf *pc,
			   struct dlfs_ixsrc_share **sh, dlfs_log_fn log,
			   void *arg, struct dlfs_err *err);

/*
 * After dlfs_peer_open (p joined, the index shared): finish this rank's
 * copy and open the dataset from it. Frees sh. @return as
 * dlfs_ixsrc_open.
 */
int dlfs_ixsrc_share_end(struct dlfs_ixsrc_share *sh, struct dlfs_peer *p,
			 struct dlfs_ixsrc *ix, struct dlfs_ds **ds,
			 struct dlfs_err *err);

/* Drop a share that will not end (the join failed). NULL is ok. */
void dlfs_ixsrc_share_abort(struct dlfs_ixsrc_share *sh);

void dlfs_ixsrc_free(struct dlfs_ixsrc *ix);

#endif
